package drain

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

// TestDecide is the decision table: mode x node state x reason owner x passes -> action.
func TestDecide(t *testing.T) {
	idle := NodeState{Name: "n1", State: "IDLE"}
	mixed := NodeState{Name: "n1", State: "MIXED"}
	ours := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: down", ReasonUser: "root"}
	oursDraining := NodeState{Name: "n1", State: "MIXED", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: down"}
	admin := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance", ReasonUser: "root"}
	// LBNL NHC's own drain, as its node-mark-offline helper writes it: foreign to nodecheck.
	nhcDrain := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "NHC: check_fs_mount:  /scratch not mounted", ReasonUser: "root"}
	prologError := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "Prolog error", ReasonUser: "slurm"}
	downForeign := NodeState{Name: "n1", State: "DOWN", Reason: "Not responding"}
	downOurs := NodeState{Name: "n1", State: "DOWN", Reason: "nodecheck: old"}
	// Slurm 24.11 keeps a reason after RESUME: on a node in service it means nothing.
	staleAdmin := NodeState{Name: "n1", State: "IDLE", Reason: "maintenance"}
	staleOurs := NodeState{Name: "n1", State: "IDLE", Reason: "nodecheck: ib_ports: down"}
	rebooting := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN", "REBOOT_REQUESTED"}, Reason: "nodecheck: ib_ports: down"}
	strange := NodeState{Name: "n1", State: "IDLE", Flags: []string{"BLOCKED"}}
	fail := []Failure{{Check: "ib_ports", Summary: "mlx5_5/1: down"}}
	drain := &Update{Node: "n1", State: "DRAIN", Reason: "nodecheck: ib_ports: mlx5_5/1: down"}
	resume := &Update{Node: "n1", State: "RESUME"}

	type row struct {
		name      string
		mode      config.Mode
		unhealthy bool
		mayDrain  bool
		mayResume bool
		node      NodeState
		passes    int
		known     bool
		want      Action
		update    *Update
		message   string // a substring
	}
	var tests []row
	// Failing runs: every mode drains the same way when allowed to.
	for _, m := range config.Modes() {
		p := string(m) + ", failing, "
		tests = append(tests,
			row{p + "idle node", m, true, true, false, idle, 0, true, ActionDrained, drain, "drain: nodecheck: ib_ports"},
			row{p + "node with a job", m, true, true, false, mixed, 0, true, ActionDrained, drain, ""},
			row{p + "already drained by nodecheck", m, true, true, false, ours, 0, true, ActionKept, nil, "already IDLE+DRAIN by nodecheck"},
			row{p + "draining by nodecheck", m, true, true, false, oursDraining, 0, true, ActionKept, nil, "reason kept"},
			row{p + "drained by an admin", m, true, true, false, admin, 0, true, ActionKept, nil, `reason nodecheck did not set ("maintenance")`},
			row{p + "drained by LBNL NHC", m, true, true, false, nhcDrain, 0, true, ActionKept, nil, `reason nodecheck did not set ("NHC: check_fs_mount:`},
			row{p + "drained by slurm's prolog error", m, true, true, false, prologError, 0, true, ActionKept, nil, "Prolog error"},
			row{p + "down with slurm's reason: left to Slurm", m, true, true, false, downForeign, 0, true, ActionKept, nil, "node is DOWN (DOWN: Slurm or an admin took the node down"},
			row{p + "down with nodecheck's old reason: left to Slurm", m, true, true, false, downOurs, 0, true, ActionKept, nil, "nodecheck leaves it as it is"},
			row{p + "in service with an admin's leftover reason", m, true, true, false, staleAdmin, 0, true, ActionDrained, drain, ""},
			row{p + "in service with nodecheck's leftover reason", m, true, true, false, staleOurs, 0, true, ActionDrained, drain, ""},
			row{p + "reboot requested", m, true, true, false, rebooting, 0, true, ActionKept, nil, "REBOOT_REQUESTED: a reboot is pending"},
			row{p + "a state nodecheck does not know", m, true, true, false, strange, 0, true, ActionKept, nil, "not one nodecheck knows (BLOCKED is a state nodecheck does not know): nothing done"},
			row{p + "not allowed to drain", m, true, false, true, idle, 0, true, ActionNone, nil, "does not drain"},
		)
	}
	// Clean runs.
	tests = append(tests,
		row{"health, clean, idle", config.ModeHealth, false, true, true, idle, 5, true, ActionNone, nil, "healthy; node is IDLE"},
		row{"health, clean, leftover reason in service", config.ModeHealth, false, true, true, staleOurs, 5, true, ActionNone, nil, "healthy; node is IDLE"},
		row{"health, clean, ours, 1 of 2", config.ModeHealth, false, true, true, ours, 1, true, ActionWaiting, nil, "1 of 2 consecutive clean runs before resuming: ib_ports found the fault gone"},
		row{"health, clean, ours, 2 of 2", config.ModeHealth, false, true, true, ours, 2, true, ActionResumed, resume, "resume: 2 consecutive clean runs, the last: ib_ports found the fault gone"},
		row{"health, clean, ours draining, 3 of 2", config.ModeHealth, false, true, true, oursDraining, 3, true, ActionResumed, resume, ""},
		row{"health, clean, ours draining, 3 of 2, but this run did not count", config.ModeHealth, false, true, true, oursDraining, 3, true, ActionWaiting, nil, "3 of 2"},
		row{"health, clean, ours, passes unknown", config.ModeHealth, false, true, true, ours, 7, false, ActionWaiting, nil, "resume the node by hand"},
		row{"health, clean, ours, rebooting", config.ModeHealth, false, true, true, rebooting, 7, true, ActionKept, nil, "nodecheck leaves it as it is"},
		row{"health, clean, admin's drain", config.ModeHealth, false, true, true, admin, 9, true, ActionKept, nil, "never resumed by nodecheck"},
		row{"health, clean, NHC's drain", config.ModeHealth, false, true, true, nhcDrain, 9, true, ActionKept, nil, "never resumed by nodecheck"},
		row{"health, clean, prolog error", config.ModeHealth, false, true, true, prologError, 9, true, ActionKept, nil, "never resumed"},
		row{"health, clean, resume off", config.ModeHealth, false, true, false, ours, 9, true, ActionNone, nil, "healthy"},
		row{"manual --resume, clean, ours, 2 of 2", config.ModeManual, false, false, true, ours, 2, true, ActionResumed, resume, ""},
		row{"manual, clean, no --resume", config.ModeManual, false, true, false, ours, 2, true, ActionNone, nil, ""},
		row{"prolog, clean, ours: prologs never resume", config.ModeProlog, false, true, true, ours, 9, true, ActionNone, nil, "healthy"},
		row{"epilog, clean, ours: epilogs never resume", config.ModeEpilog, false, true, true, ours, 9, true, ActionNone, nil, "healthy"},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var failures []Failure
			if tc.unhealthy {
				failures = fail
			}
			got := decide(situation{
				Mode: tc.mode, Unhealthy: tc.unhealthy, MayDrain: tc.mayDrain, MayResume: tc.mayResume,
				Node: tc.node, Prefix: "nodecheck:", Passes: tc.passes, PassesKnown: tc.known, Need: 2,
				Evidence: "ib_ports found the fault gone", Counted: !strings.Contains(tc.name, "did not count"),
			}, failures)
			if got.Action != tc.want {
				t.Errorf("action %q, want %q (%s)", got.Action, tc.want, got.Message)
			}
			if diff := cmp.Diff(tc.update, got.Update); diff != "" {
				t.Errorf("update (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Message, tc.message) {
				t.Errorf("message %q lacks %q", got.Message, tc.message)
			}
		})
	}
}

// TestDecideByHandAndUndecided: a drain no run of the node's checks can lift says how to lift
// it; a run that could not decide never calls itself healthy.
func TestDecideByHandAndUndecided(t *testing.T) {
	fleet := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: fleet: slow: x"}
	got := decide(situation{Mode: config.ModeHealth, MayResume: true, Node: fleet, Prefix: "nodecheck:", Passes: 9, PassesKnown: true, Need: 2,
		ByHand: `it was drained for "fleet"`}, nil)
	if got.Action != ActionKept || got.Update != nil || !strings.Contains(got.Message, "scontrol update NodeName=n1 State=RESUME") {
		t.Errorf("by hand: %+v", got)
	}
	got = decide(situation{Mode: config.ModeHealth, MayResume: true, Node: NodeState{Name: "n1", State: "IDLE"}, Prefix: "nodecheck:", Undecided: true}, nil)
	if got.Action != ActionNone || strings.Contains(got.Message, "healthy") || !strings.Contains(got.Message, "undecided") {
		t.Errorf("undecided: %+v", got)
	}
}
