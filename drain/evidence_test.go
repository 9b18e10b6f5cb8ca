package drain

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJudgeRun is the resume-on-evidence rule, row by row (judgeRun's table).
func TestJudgeRun(t *testing.T) {
	ok := func(id string) CheckResult { return CheckResult{Check: id, Status: StatusOK, Summary: "fine"} }
	tests := []struct {
		name      string
		drainedBy []string
		results   []CheckResult
		failures  []Failure
		partial   bool
		want      effect
		why       string
	}{
		{"a failure resets", []string{"ib_ports"}, []CheckResult{ok("ib_ports")}, []Failure{{Check: "gpu_count", Summary: "x"}}, false, effectReset, "gpu_count failed"},
		{"ok counts", []string{"ib_ports"}, []CheckResult{ok("gres_devices"), ok("ib_ports")}, nil, false, effectCount, "ib_ports found the fault gone"},
		{"warn counts", []string{"ib_ports"}, []CheckResult{{Check: "ib_ports", Status: StatusWarn, Summary: "slow link"}}, nil, false, effectCount, ""},
		{"every check that drained it must look", []string{"ib_ports", "gpu_count"}, []CheckResult{ok("gpu_count"), ok("ib_ports")}, nil, false, effectCount, "ib_ports, gpu_count found the fault gone"},
		{"error resets", []string{"ib_ports"}, []CheckResult{{Check: "ib_ports", Status: StatusError, Summary: "no sysfs"}}, nil, false, effectReset, "ib_ports, which drained the node, could not look (error: no sysfs)"},
		{"skip resets", []string{"job_leftovers"}, []CheckResult{{Check: "job_leftovers", Status: StatusSkip, Summary: "runs in prolog and epilog only"}}, nil, false, effectReset, "did not look (skip: runs in prolog and epilog only)"},
		{"not run resets", []string{"ib_ports"}, []CheckResult{ok("gpu_count")}, nil, false, effectReset, "ib_ports, which drained the node, did not run"},
		{"a status drain does not know resets", []string{"ib_ports"}, []CheckResult{{Check: "ib_ports", Status: "maybe"}}, nil, false, effectReset, `said "maybe"`},
		{"partial without the check does not count", []string{"ib_ports"}, []CheckResult{ok("gpu_count")}, nil, true, effectKeep, "partial"},
		{"partial with the check ok does not count", []string{"ib_ports"}, []CheckResult{ok("ib_ports")}, nil, true, effectKeep, "partial"},
		{"partial with the check in error resets", []string{"ib_ports"}, []CheckResult{{Check: "ib_ports", Status: StatusError, Summary: "x"}}, nil, true, effectReset, "could not look"},
		{"another check in error: undecided, does not count", []string{"ib_ports"}, []CheckResult{ok("ib_ports"), {Check: "gpu_count", Status: StatusError, Summary: "NVML"}}, nil, false, effectKeep, "gpu_count could not decide"},
		{"nothing drained it: a clean run counts", nil, []CheckResult{ok("ib_ports")}, nil, false, effectCount, "clean run"},
		{"nothing drained it: an undecided run does not", nil, []CheckResult{{Check: "ib_ports", Status: StatusError, Summary: "x"}}, nil, false, effectKeep, "undecided"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeRun(tc.drainedBy, tc.results, tc.failures, tc.partial)
			if got.Effect != tc.want || !strings.Contains(got.Why, tc.why) {
				t.Errorf("got %d %q, want %d with %q", got.Effect, got.Why, tc.want, tc.why)
			}
		})
	}
}

func TestReasonCheck(t *testing.T) {
	tests := []struct {
		reason, prefix, want string
		ok                   bool
	}{
		{"nodecheck: ib_ports: mlx5_5/1: down", "nodecheck:", "ib_ports", true},
		{"nodecheck: gpu_count: 7 of 8 (+2 more)", "nodecheck:", "gpu_count", true},
		{"nodecheck: ib_ports (+1 more)", "nodecheck:", "ib_ports", true},
		{"nodecheck: ib_ports", "nodecheck:", "ib_ports", true},
		{"nodecheck: fleet: slow: busbw 405.1 GB/s", "nodecheck:", "fleet", true},
		{"[nhc] gres_devices: x", "[nhc]", "gres_devices", true},
		{"nodecheck:", "nodecheck:", "", false},
		{"nodecheck: (+2 more)", "nodecheck:", "", false},
		{"nodecheck: : x", "nodecheck:", "", false},
		{"maintenance", "nodecheck:", "", false},
		{"Prolog error", "nodecheck:", "", false},
		{"nodecheck: ib_ports: x : reboot issued : reboot complete", "nodecheck:", "ib_ports", true},
	}
	for _, tc := range tests {
		got, ok := ReasonCheck(tc.reason, tc.prefix)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ReasonCheck(%q, %q) = %q, %v; want %q, %v", tc.reason, tc.prefix, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDrainedBy(t *testing.T) {
	known := []string{"gpu_count", "ib_ports", "xid_errors"}
	reason := "nodecheck: ib_ports: down (+1 more)"
	tests := []struct {
		name   string
		rec    nodeRecord
		reason string
		want   []string
		byHand string
	}{
		{"the record of this drain", nodeRecord{DrainedBy: []string{"ib_ports", "gpu_count"}, Reason: reason}, reason, []string{"ib_ports", "gpu_count"}, ""},
		{"the record of another drain: the reason's check", nodeRecord{DrainedBy: []string{"xid_errors"}, Reason: "nodecheck: xid_errors: 79"}, reason, []string{"ib_ports"}, ""},
		{"no record (drained before the record existed)", nodeRecord{}, reason, []string{"ib_ports"}, ""},
		{"the reason's check comes first even if the record lost it", nodeRecord{DrainedBy: []string{"gpu_count"}, Reason: reason}, reason, []string{"ib_ports", "gpu_count"}, ""},
		{"the same drain under a repair's tag and slurmctld's reboot words", nodeRecord{DrainedBy: []string{"ib_ports", "gpu_count"}, Reason: reason},
			reason + " [repair: reboot] : reboot issued : reboot complete", []string{"ib_ports", "gpu_count"}, ""},
		{"a fleet sweep's drain", nodeRecord{DrainedBy: []string{"ib_ports"}, Reason: "nodecheck: fleet: slow: x"}, "nodecheck: fleet: slow: x", nil, `drained for "fleet", which is not one of this node's checks`},
		{"a reason naming no check", nodeRecord{}, "nodecheck: (+3 more)", nil, "names no check"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, byHand := drainedBy(tc.rec, tc.reason, "nodecheck:", known)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.byHand == "" && byHand != "" || !strings.Contains(byHand, tc.byHand) {
				t.Errorf("byHand %q, want %q", byHand, tc.byHand)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	rs := []CheckResult{
		{Check: "gres_devices", Status: StatusOK, Summary: ""},
		{Check: "gpu_count", Status: StatusError, Summary: "cannot parse"},
		{Check: "ib_ports", Status: StatusFail, Summary: "mlx5_5/1 down"},
		{Check: "pcie_link", Status: StatusWarn, Summary: "slow"},
		{Check: "job_leftovers", Status: StatusSkip, Summary: "no job"},
	}
	if diff := cmp.Diff([]Failure{{Check: "ib_ports", Summary: "mlx5_5/1 down"}}, Failures(rs, false)); diff != "" {
		t.Errorf("error_is_failure = false (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Failure{{Check: "gpu_count", Summary: "cannot parse"}, {Check: "ib_ports", Summary: "mlx5_5/1 down"}}, Failures(rs, true)); diff != "" {
		t.Errorf("error_is_failure = true (-want +got):\n%s", diff)
	}
}
