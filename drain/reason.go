package drain

import (
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// MaxReasonLen bounds a drain reason. Slurm stores longer ones, but `sinfo -R` shows 20
// characters and `scontrol show node` one line: past this a reason only hides the next field.
const MaxReasonLen = 200

// Failure is one failed check as a drain reason names it.
type Failure struct {
	Check   string // the check id: "ib_ports"
	Summary string // its one-line summary: "mlx5_5/1: state 1: DOWN, want 4: ACTIVE"
	// Remedy is the check's remedy as plain text ("reset_gpu", "service"; checks.Remedy's
	// words, passed as a string since drain never imports checks); empty for none.
	Remedy string
}

// FormatReason builds the reason nodecheck drains with: "<prefix> <check>: <summary>
// [<remedy>]" for the first failure, then " (+N more)" for the others, as printable ASCII on
// one line of at most MaxReasonLen bytes: "nodecheck: gpu_memory_errors: gpu 3
// (0000:9b:00.0): row remapping pending: reset the GPU [reset_gpu]". The prefix and check id
// come first because `sinfo -R` shows only the first 20 characters. A summary too long is cut
// with "..."; the prefix, check id, remedy and count are kept. It returns "" for no failures.
func FormatReason(prefix string, failures []Failure) string {
	if len(failures) == 0 {
		return ""
	}
	head := Sanitize(prefix)
	if c := Sanitize(failures[0].Check); c != "" {
		head = joinSpace(head, c)
	}
	more := ""
	if n := len(failures) - 1; n > 0 {
		more = " (+" + strconv.Itoa(n) + " more)"
	}
	if r := Sanitize(failures[0].Remedy); r != "" {
		more = " [" + r + "]" + more
	}
	summary := Sanitize(failures[0].Summary)
	if summary != "" {
		head += ":"
	}
	if len(head)+len(more) > MaxReasonLen {
		// Only a config with an absurd prefix gets here: keep the remedy and count, which say
		// what to do and that the reason is incomplete, and cut the rest.
		return strings.TrimSpace(cut(head, MaxReasonLen-len(more))) + more
	}
	if summary == "" {
		return head + more
	}
	room := MaxReasonLen - len(head) - 1 - len(more)
	if len(summary) > room {
		const ellipsis = "..."
		if room <= len(ellipsis) {
			return head + more
		}
		summary = strings.TrimSpace(cut(summary, room-len(ellipsis))) + ellipsis
	}
	return head + " " + summary + more
}

// Sanitize makes s safe for a drain reason and a log line: one line of printable ASCII
// (text.OneLine: white space collapses to one blank, the ends are trimmed, control characters
// and anything else outside printable ASCII become '?'), and a double quote becomes a single one,
// since scontrol strips a pair of quotes around the value (Reason="x" is stored as x).
func Sanitize(s string) string {
	return strings.ReplaceAll(text.OneLine(s, 0), `"`, "'")
}

// Owned reports whether a reason is one nodecheck set: it starts with the prefix (sanitized,
// as FormatReason writes it). An empty prefix owns nothing, so a misconfiguration can never
// claim every drain.
func Owned(reason, prefix string) bool {
	prefix = Sanitize(prefix)
	return prefix != "" && strings.HasPrefix(reason, prefix)
}

// cut returns at most n bytes of the ASCII string s.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func joinSpace(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// The reason nodecheck's repairs (drain/repair) keep a node under. A repair never replaces the
// reason nodecheck drained the node with: it appends RepairTag, so that the prefix and check id
// still come first (`sinfo -R`), the checks a resume waits on are still the drain's
// (ReasonBase), and every node in repair shows in one `sinfo` listing (InRepair). slurmctld
// appends words of its own while it reboots a node (set_node_reason in
// src/slurmctld/node_mgr.c: " : reboot issued", then " : reboot complete" or " : reboot timed
// out"), after the tag.

// repairTagStart opens the tag: " [repair: reset_gpu]".
const repairTagStart = " [repair: "

// RepairTag is the tag a repair appends to nodecheck's reason: " [repair: ACTION]", ACTION
// being the remedy it took ("reset_gpu", "reboot"), sanitized.
func RepairTag(action string) string { return repairTagStart + Sanitize(action) + "]" }

// rebootSuffixes are what slurmctld appends to a node's reason during `scontrol reboot`.
var rebootSuffixes = []string{" : reboot issued", " : reboot complete", " : reboot timed out"}

// ReasonBase is reason without what was appended to the reason nodecheck drained with:
// slurmctld's reboot words and a repair's tag. Two reasons with the same base are the same
// drain.
func ReasonBase(reason string) string {
	base, _, _ := cutRepairTag(reason)
	return base
}

// RepairOf returns the action of the repair tag reason carries, and whether it carries one.
func RepairOf(reason string) (action string, ok bool) {
	_, action, ok = cutRepairTag(reason)
	return action, ok
}

// cutRepairTag splits reason into the drain's own reason and the repair tag's action.
func cutRepairTag(reason string) (base, action string, ok bool) {
	for trimmed := true; trimmed; {
		trimmed = false
		for _, s := range rebootSuffixes {
			if r, found := strings.CutSuffix(reason, s); found {
				reason, trimmed = r, true
			}
		}
	}
	if !strings.HasSuffix(reason, "]") {
		return reason, "", false
	}
	i := strings.LastIndex(reason, repairTagStart)
	if i < 0 {
		return reason, "", false
	}
	action = reason[i+len(repairTagStart) : len(reason)-1]
	if action == "" || strings.ContainsAny(action, " []") {
		return reason, "", false
	}
	return reason[:i], action, true
}

// InRepair reports whether n counts as a node in repair, against max_repairing: out of
// service (OutOfService) with nodecheck's reason, and either carrying a repair's tag or in a
// reboot Slurm was asked for (REBOOT_REQUESTED, REBOOT_ISSUED).
func InRepair(n NodeState, prefix string) bool {
	if !n.OutOfService() || !Owned(n.Reason, prefix) {
		return false
	}
	if _, ok := RepairOf(n.Reason); ok {
		return true
	}
	return n.Rebooting()
}

// TagReason is the reason a repair keeps the node under: reason's base (ReasonBase) with
// RepairTag(action) after it, the base cut so that the whole stays within MaxReasonLen.
func TagReason(reason, action string) string {
	tag := RepairTag(action)
	return cut(ReasonBase(reason), MaxReasonLen-len(tag)) + tag
}
