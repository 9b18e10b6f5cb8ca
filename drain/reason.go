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
