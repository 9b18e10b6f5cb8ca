package drain

import (
	"fmt"
	"strings"
)

// Stance is what nodecheck may do to a node in a given Slurm state.
type Stance string

// The stances, as the state table says them.
const (
	// StanceAct: nodecheck drains and resumes as its rules say (the reason's owner decides).
	StanceAct Stance = "act"
	// StanceLeave: someone or something else owns the node's state now (an admin, a
	// reboot, power saving, a maintenance window, Slurm itself): nodecheck changes nothing.
	StanceLeave Stance = "leave it"
	// StanceUnknown: a state word nodecheck does not know; it changes nothing and says so,
	// never guessing.
	StanceUnknown Stance = "unknown"
)

// StateWord is one row of the state table: a base state or state flag as Slurm spells it
// (node_states and node_state_flags in src/common/slurm_protocol_defs.c; scontrol prints them
// joined by "+", `scontrol --json` and sinfo's StateComplete as a list or in lower case), what
// nodecheck does about it and why.
type StateWord struct {
	Word   string
	Base   bool // a base state (IDLE, ...) rather than a flag (DRAIN, ...)
	Stance Stance
	Why    string
}

// StateTable is every state word nodecheck acts on or leaves alone. A word not in it is
// unknown. A node's stance is its words' worst: unknown over leave it over act.
var StateTable = []StateWord{
	{"IDLE", true, StanceAct, "in service, no job"},
	{"ALLOCATED", true, StanceAct, "in service, every CPU in use"},
	{"MIXED", true, StanceAct, "in service, some CPUs in use"},
	{"DOWN", true, StanceLeave, "Slurm or an admin took the node down; bringing it back is theirs (ReturnToService, scontrol)"},
	{"FUTURE", true, StanceLeave, "configured but not yet in service"},
	{"UNKNOWN", true, StanceUnknown, "slurmctld does not know the node's state yet (slurmd has not registered)"},
	{"COMPLETING", false, StanceAct, "jobs are ending (the epilog runs now); a drain waits for them"},
	{"DRAIN", false, StanceAct, "drained or draining: the reason's owner decides"},
	{"DRAINED", false, StanceAct, "sinfo's name for IDLE+DRAIN: the reason's owner decides"},
	{"DRAINING", false, StanceAct, "sinfo's name for a drain with jobs still running: the reason's owner decides"},
	{"NOT_RESPONDING", false, StanceAct, "slurmctld missed slurmd's last ping; nodecheck runs on the node and its verdict is current, and a drain or resume is recorded by slurmctld either way"},
	{"RESERVED", false, StanceAct, "in an advance reservation: jobs run there as anywhere"},
	{"PLANNED", false, StanceAct, "the backfill scheduler plans a job there: an ordinary in-service node"},
	{"CLOUD", false, StanceAct, "how the node is provisioned, not what it is doing"},
	{"DYNAMIC_NORM", false, StanceAct, "a dynamic node registered as an ordinary one"},
	{"MAINTENANCE", false, StanceLeave, "in a maintenance reservation: admins are working on it; nodecheck reports but changes nothing until it ends"},
	{"REBOOT_REQUESTED", false, StanceLeave, "a reboot is pending (scontrol reboot); its reason and next state belong to the reboot"},
	{"REBOOT_ISSUED", false, StanceLeave, "the node is rebooting; its reason and next state belong to the reboot"},
	{"POWER_DOWN", false, StanceLeave, "power saving will power the node down"},
	{"POWERING_DOWN", false, StanceLeave, "power saving is powering the node down"},
	{"POWERED_DOWN", false, StanceLeave, "powered down by power saving"},
	{"POWER_UP", false, StanceLeave, "power saving will power the node up"},
	{"POWERING_UP", false, StanceLeave, "power saving is powering the node up"},
	{"INVALID_REG", false, StanceLeave, "slurmd registered a configuration slurm.conf does not match; an admin fixes the configuration (see nodecheck lint)"},
	{"FAIL", false, StanceLeave, "an admin set FAIL: the node is leaving service by hand"},
	{"DYNAMIC_FUTURE", false, StanceLeave, "a dynamic node not yet in service"},
	{"RESUME", false, StanceLeave, "a resume is in progress; nodecheck looks again on its next run"},
}

// stateWords indexes StateTable by word.
var stateWords = func() map[string]StateWord {
	m := make(map[string]StateWord, len(StateTable))
	for _, w := range StateTable {
		m[w.Word] = w
	}
	return m
}()

// LookupState returns the row for word (any case) and whether the table has it.
func LookupState(word string) (StateWord, bool) {
	w, ok := stateWords[strings.ToUpper(word)]
	return w, ok
}

// Stance is the node's stance by the state table, and why: the first unknown word if any,
// else every word to leave alone, else act. A node without a state is unknown.
func (n NodeState) Stance() (Stance, string) {
	words := append([]string{n.State}, n.Flags...)
	if n.State == "" {
		return StanceUnknown, "slurmctld gave no state"
	}
	var leave []string
	for _, w := range words {
		row, ok := LookupState(w)
		if !ok {
			return StanceUnknown, fmt.Sprintf("%s is a state nodecheck does not know", w)
		}
		if row.Stance == StanceUnknown {
			return StanceUnknown, fmt.Sprintf("%s: %s", row.Word, row.Why)
		}
		if row.Stance == StanceLeave {
			leave = append(leave, row.Word+": "+row.Why)
		}
	}
	if len(leave) > 0 {
		return StanceLeave, strings.Join(leave, "; ")
	}
	return StanceAct, ""
}
