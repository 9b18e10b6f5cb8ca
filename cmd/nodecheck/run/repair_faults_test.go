package run

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// TestRepairFaultsFromSubjects: the GPU of a repair fault is the subject the judge set, never
// the text: a detail whose Device names another bus, or none, gives its subject's bus; a
// subject that is no GPU gives none; a result without a failing detail gives its own
// subject's (an error counted as a failure).
func TestRepairFaultsFromSubjects(t *testing.T) {
	gpu := func(bus string) checks.Subject { return checks.Subject{GPU: checks.GPURef{Bus: bus}} }
	fail := func(device string, s checks.Subject) checks.Detail {
		return checks.Detail{Device: device, Status: checks.StatusFail, Message: "broken", Remedy: checks.RemedyResetGPU, Subject: s}
	}
	for _, tc := range []struct {
		name           string
		res            checks.Result
		errorIsFailure bool
		want           []string // the faults' buses
	}{
		{"the subject's bus, whatever the text says",
			checks.Result{Check: "nvlink", Status: checks.StatusFail, Details: []checks.Detail{fail("gpu 3 (0000:19:00.0)", gpu("0000:9b:00.0"))}},
			false, []string{"0000:9b:00.0"}},
		{"a device text without a bus id",
			checks.Result{Check: "nvlink", Status: checks.StatusFail, Details: []checks.Detail{fail("the third GPU", gpu("0000:9b:00.0"))}},
			false, []string{"0000:9b:00.0"}},
		{"a bus id in the text and no GPU subject: none",
			checks.Result{Check: "pcie_link", Status: checks.StatusFail, Details: []checks.Detail{fail("nvswitch 0000:85:00.0", checks.Subject{PCI: "0000:85:00.0"})}},
			false, []string{""}},
		{"each failing detail, not the others",
			checks.Result{Check: "gpu_memory_errors", Status: checks.StatusFail, Details: []checks.Detail{
				fail("gpu 1", gpu("0000:3b:00.0")),
				{Device: "gpu 2 (0000:5d:00.0)", Status: checks.StatusOK, Subject: gpu("0000:5d:00.0")},
				fail("gpu 6", gpu("0000:cb:00.0"))}},
			false, []string{"0000:3b:00.0", "0000:cb:00.0"}},
		{"an error counted as a failure: the result's subject, not its summary",
			checks.Result{Check: "nvlink", Status: checks.StatusError, Summary: "gpu 4 (0000:19:00.0): ERROR_GPU_IS_LOST", Subject: gpu("0000:9b:00.0"),
				Details: []checks.Detail{{Device: "gpu 4", Status: checks.StatusError, Subject: gpu("0000:9b:00.0")}}},
			true, []string{"0000:9b:00.0"}},
		{"a failing result about the node",
			checks.Result{Check: "gpu_count", Status: checks.StatusFail, Summary: "slurm.conf expects 8 GPUs, 0000:19:00.0 shows 7", Remedy: checks.RemedyAdmin},
			false, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range repairFaults(checks.Report{Results: []checks.Result{tc.res}}, tc.errorIsFailure) {
				got = append(got, f.Bus)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("buses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepairFaultsIgnoreWording replays the bundled snapshots whose failure names one GPU, then
// rewords every detail's device and message and every summary to text without a bus id: the
// repair's faults name the same GPUs, which are the ones the reports name.
func TestRepairFaultsIgnoreWording(t *testing.T) {
	for _, tc := range []struct{ snap, check, bus string }{
		{"h100-ecc-uncorrectable", "gpu_memory_errors", "0000:cb:00.0"},
		{"h100-remap-pending", "gpu_memory_errors", "0000:3b:00.0"},
		{"a100-nvlink-all-inactive", "nvlink", "000d:00:00.0"},
		{"h100-nvlink-down", "nvlink", "0000:bb:00.0"},
		{"h100-recovery-reset", "gpu_recovery_action", "0000:5d:00.0"},
		{"h100-fabric-in-progress", "fabric_manager", "0000:bb:00.0"},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			snap, err := node.OpenSnapshot(filepath.Join(snapshotsDir, tc.snap))
			if err != nil {
				t.Fatal(err)
			}
			all := checks.All()
			c := all[slices.IndexFunc(all, func(c checks.Check) bool { return c.ID() == tc.check })]
			env := &checks.Env{Facts: snap, Config: config.Default(checks.Schema()), Mode: config.ModeHealth}
			res := c.Run(context.Background(), env)
			res.Check = tc.check
			rep := checks.Report{Results: []checks.Result{res}}
			before := repairFaults(rep, false)
			if !slices.ContainsFunc(before, func(f repair.Fault) bool { return f.Bus == tc.bus }) {
				t.Fatalf("no fault on GPU %s: %+v (%s: %s)", tc.bus, before, res.Status, res.Summary)
			}
			reworded := res
			reworded.Summary = "reworded"
			reworded.Details = slices.Clone(res.Details)
			for i := range reworded.Details {
				reworded.Details[i].Device, reworded.Details[i].Message = "a device", "reworded"
			}
			after := repairFaults(checks.Report{Results: []checks.Result{reworded}}, false)
			if len(after) != len(before) {
				t.Fatalf("%d faults after rewording, %d before", len(after), len(before))
			}
			for i := range before {
				if after[i].Bus != before[i].Bus || after[i].Remedy != before[i].Remedy {
					t.Errorf("fault %d: %s %q after rewording, %s %q before", i, after[i].Remedy, after[i].Bus, before[i].Remedy, before[i].Bus)
				}
			}
		})
	}
}
