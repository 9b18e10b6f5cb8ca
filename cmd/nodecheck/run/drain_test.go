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
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// TestDrainResults: every check's status reaches drain, in run order, with its words.
func TestDrainResults(t *testing.T) {
	rep := checks.Report{Results: []checks.Result{
		{Check: "gres_devices", Status: checks.StatusOK},
		{Check: "gpu_count", Status: checks.StatusError, Summary: "cannot parse"},
		{Check: "ib_ports", Status: checks.StatusFail, Summary: "mlx5_5/1 down", Remedy: checks.RemedyService},
		{Check: "pcie_link", Status: checks.StatusWarn, Summary: "slow"},
		{Check: "job_leftovers", Status: checks.StatusSkip, Summary: "no job"},
	}}
	want := []drain.CheckResult{
		{Check: "gres_devices", Status: drain.StatusOK},
		{Check: "gpu_count", Status: drain.StatusError, Summary: "cannot parse"},
		{Check: "ib_ports", Status: drain.StatusFail, Summary: "mlx5_5/1 down", Remedy: "service"},
		{Check: "pcie_link", Status: drain.StatusWarn, Summary: "slow"},
		{Check: "job_leftovers", Status: drain.StatusSkip, Summary: "no job"},
	}
	if diff := cmp.Diff(want, drainResults(rep)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The words are the same on both sides: a new checks.Status must get a drain.Status.
	for _, s := range []checks.Status{checks.StatusOK, checks.StatusWarn, checks.StatusFail, checks.StatusError, checks.StatusSkip} {
		switch drain.Status(s) {
		case drain.StatusOK, drain.StatusWarn, drain.StatusFail, drain.StatusError, drain.StatusSkip:
		default:
			t.Errorf("checks.Status %q has no drain.Status", s)
		}
	}
}

// TestArchitectureWords: every architecture the GPU model table gives is one repair.ResetSet
// knows (checks and drain/repair never import each other; the CLI hands the words over).
func TestArchitectureWords(t *testing.T) {
	for _, a := range checks.GPUArchitectures() {
		if !slices.Contains(repair.Architectures(), a) {
			t.Errorf("checks gives architecture %q, which repair.Architectures does not list", a)
		}
	}
}

// TestRepairFacts: the facts the repair step hands ResetSet, from the bundled snapshots' own
// readings: architecture, NVLinks (GPU 6 of a100-nvlink-all-inactive has all 12 inactive),
// NVSwitches and Fabric Manager's state as fabric_manager read it.
func TestRepairFacts(t *testing.T) {
	for _, tc := range []struct {
		snap          string
		gpu           int
		arch          string
		links, active int
		switches      int
		fm            string
	}{
		{"h100-healthy", 0, repair.ArchHopper, 18, 18, 4, "active"},
		{"a100-healthy", 0, repair.ArchAmpere, 12, 12, 6, "active"},
		{"a100-nvlink-all-inactive", 6, repair.ArchAmpere, 12, 0, 6, "active"},
		{"h100-fm-down", 0, repair.ArchHopper, 18, 18, 4, "inactive"},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			snap, err := node.OpenSnapshot(filepath.Join(snapshotsDir, tc.snap))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			gpus, ok := repairGPUs(ctx, snap)
			if !ok || len(gpus) != 8 {
				t.Fatalf("%d GPUs, known %v", len(gpus), ok)
			}
			if g := gpus[tc.gpu]; g.Arch != tc.arch || g.Links != tc.links || g.ActiveLinks != tc.active {
				t.Errorf("GPU %s: arch %q, %d links, %d active; want %q, %d, %d", g.Bus, g.Arch, g.Links, g.ActiveLinks, tc.arch, tc.links, tc.active)
			}
			fm := checks.All()
			i := slices.IndexFunc(fm, func(c checks.Check) bool { return c.ID() == "fabric_manager" })
			env := &checks.Env{Facts: snap, Config: config.Default(checks.Schema()), Mode: config.ModeHealth}
			res := fm[i].Run(ctx, env)
			res.Check = "fabric_manager"
			f := repairFabric(ctx, snap, checks.Report{Results: []checks.Result{res}})
			if f.NVSwitches != tc.switches || f.FabricManager != tc.fm {
				t.Errorf("fabric %+v, want %d NVSwitches, Fabric Manager %q", f, tc.switches, tc.fm)
			}
		})
	}
}
