package drain

import (
	"slices"
	"strings"
	"testing"
)

// The reboot words are slurmctld's as the test bed's 22.05 and 24.11 printed them
// (scripts/testbed TestReboot).
func TestRepairTag(t *testing.T) {
	const base = "nodecheck: gpu_count: gpu 3 (0000:9b:00.0) ERROR_GPU_IS_LOST [reboot]"
	tests := []struct {
		reason, base, action string
		ok                   bool
	}{
		{base, base, "", false},
		{base + " [repair: reboot]", base, "reboot", true},
		{base + " [repair: reboot] : reboot issued", base, "reboot", true},
		{base + " [repair: reboot] : reboot issued : reboot complete", base, "reboot", true},
		{base + " [repair: reboot] : reboot issued : reboot timed out", base, "reboot", true},
		{base + " [repair: reset_gpu]", base, "reset_gpu", true},
		{base + " : reboot issued", base, "", false},
		{"nodecheck: x: y [repair: two words]", "nodecheck: x: y [repair: two words]", "", false},
		{"nodecheck: x: y [repair: ]", "nodecheck: x: y [repair: ]", "", false},
	}
	for _, tc := range tests {
		action, ok := RepairOf(tc.reason)
		if got := ReasonBase(tc.reason); got != tc.base || action != tc.action || ok != tc.ok {
			t.Errorf("%q: base %q, action %q %v; want %q, %q %v", tc.reason, got, action, ok, tc.base, tc.action, tc.ok)
		}
	}
	long := "nodecheck: xid_errors: " + strings.Repeat("x", 300)
	if got := TagReason(long, "reset_gpu"); len(got) != MaxReasonLen || !strings.HasSuffix(got, " [repair: reset_gpu]") {
		t.Errorf("TagReason of a long reason: %d bytes %q", len(got), got)
	}
	if got := TagReason(base+" [repair: reset_gpu]", "reboot"); got != base+" [repair: reboot]" {
		t.Errorf("retag: %q", got)
	}
}

func TestInRepair(t *testing.T) {
	const r = "nodecheck: xid_errors: XID 48"
	tests := []struct {
		n    NodeState
		want bool
	}{
		{NodeState{State: "IDLE", Flags: []string{"DRAIN"}, Reason: r + " [repair: reset_gpu]"}, true},
		{NodeState{State: "IDLE", Flags: []string{"DRAIN"}, Reason: r}, false}, // drained, no repair
		{NodeState{State: "IDLE", Flags: []string{"DRAIN", "REBOOT_REQUESTED"}, Reason: r}, true},
		{NodeState{State: "DOWN", Flags: []string{"DRAIN", "REBOOT_ISSUED"}, Reason: r + " [repair: reboot] : reboot issued"}, true},
		{NodeState{State: "DOWN", Reason: r + " [repair: reboot] : reboot issued : reboot complete"}, true},
		{NodeState{State: "IDLE", Reason: r + " [repair: reboot] : reboot issued"}, false},               // back in service (24.11 keeps the reason)
		{NodeState{State: "IDLE", Flags: []string{"DRAIN", "REBOOT_REQUESTED"}, Reason: "admin"}, false}, // someone else's reboot
		{NodeState{State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: service: node 5 repairs in 7d: x"}, false},
	}
	for _, tc := range tests {
		if got := InRepair(tc.n, "nodecheck:"); got != tc.want {
			t.Errorf("InRepair(%s %q) = %v, want %v", tc.n, tc.n.Reason, got, tc.want)
		}
	}
}

func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		n    NodeState
		busy bool
	}{
		{NodeState{State: "IDLE", Flags: []string{"DRAIN"}}, false},
		{NodeState{State: "DOWN", Flags: []string{"DRAIN"}}, false},
		{NodeState{State: "MIXED", Flags: []string{"DRAIN"}}, true},
		{NodeState{State: "ALLOCATED", Flags: []string{"DRAIN"}}, true},
		{NodeState{State: "IDLE", Flags: []string{"COMPLETING", "DRAIN"}}, true},
	} {
		if got := tc.n.Busy() != ""; got != tc.busy {
			t.Errorf("%s: busy %v (%q), want %v", tc.n, got, tc.n.Busy(), tc.busy)
		}
	}
}

func TestParseJobs(t *testing.T) {
	jobs, err := ParseJobs(strings.NewReader("1234|RUNNING\n\n1240_7|COMPLETING\n"))
	if err != nil || !slices.Equal(jobs, []Job{{"1234", "RUNNING"}, {"1240_7", "COMPLETING"}}) {
		t.Errorf("ParseJobs = %v, %v", jobs, err)
	}
	if jobs, err := ParseJobs(strings.NewReader("")); err != nil || len(jobs) != 0 {
		t.Errorf("empty: %v, %v", jobs, err)
	}
	if _, err := ParseJobs(strings.NewReader("1234 RUNNING\n")); err == nil || !strings.Contains(err.Error(), "squeue line 1") {
		t.Errorf("bad line: %v", err)
	}
}

func TestRepairArgv(t *testing.T) {
	c := New("/usr/bin/scontrol", "/usr/bin/sinfo", WithSqueue("/usr/bin/squeue"))
	if got := c.RebootArgv("gpu01", "nodecheck: x [repair: reboot]"); !slices.Equal(got, []string{"/usr/bin/scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason=nodecheck: x [repair: reboot]", "gpu01"}) {
		t.Errorf("RebootArgv = %q", got)
	}
	if got := c.JobsArgv("gpu01"); got[0] != "/usr/bin/squeue" || !slices.Contains(got, "--nodelist=gpu01") || !slices.Contains(got, "--states="+ActiveJobStates) {
		t.Errorf("JobsArgv = %q", got)
	}
	if _, err := New("/usr/bin/scontrol", "/usr/bin/sinfo").Jobs(t.Context(), "gpu01"); err == nil {
		t.Error("Jobs without squeue: no error")
	}
}

// FuzzParseJobs: squeue's output never panics the parser, and what it accepts has an id and a
// state without blanks in the id.
func FuzzParseJobs(f *testing.F) {
	for _, s := range []string{"1234|RUNNING\n", "1240_7|COMPLETING\n\n", "", "x", "|", "1 2|R"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := ParseJobs(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" || j.State == "" || strings.ContainsAny(j.ID, " \t") {
				t.Errorf("accepted %+v from %q", j, s)
			}
		}
	})
}
