package drain

import (
	"regexp"
	"strings"
	"sync"
	"time"
)

// Current is nodecheck's drain of a node as a run leaves it, for the metrics and the alerts
// built on them (docs/metrics.md): whether nodecheck's reason keeps the node out of service,
// that reason, and since when.
type Current struct {
	// Drained is true while the node is out of service (drained, draining or down) under
	// nodecheck's reason; in a dry run, also when the run would have drained it.
	Drained bool
	Reason  string // that reason, as Slurm shows it; "" when not drained
	// Since is when that drain began: drain.json's record (drained_at), kept while each run
	// that reads the node finds it out of service under nodecheck's reason, through the
	// reason changes of a repair (its tag, slurmctld's reboot words, an escalation); zero when
	// not drained, or when not known (no state directory, and a Slurm that does not say when
	// it set the reason).
	Since time.Time
}

// current is the drain the run leaves: the action it took on node (read before acting), and
// rec, the record after the run.
func (a *applier) current(rec nodeRecord, node NodeState) *Current {
	switch a.out.Action {
	case ActionDrained:
		since := rec.DrainedAt
		if since.IsZero() && a.r.DryRun {
			since = a.p.Now() // would drain now
		}
		return &Current{Drained: true, Reason: a.out.Reason, Since: since}
	case ActionResumed:
		return &Current{}
	}
	if !node.OutOfService() || !Owned(node.Reason, a.p.Prefix) {
		return &Current{}
	}
	return &Current{Drained: true, Reason: node.Reason, Since: rec.DrainedAt}
}

// drainStart keeps rec's record of when nodecheck's drain of node began: while the node is out
// of service under nodecheck's reason the record's time stands; a drain the record does not
// know (drained by another host's nodecheck, such as the fleet sweep, or before nodecheck kept
// the time) began when Slurm set its reason where Slurm says so (scontrol --json, 23.02 and
// later), else when this run first saw it (a lower bound, so an alert on a long drain fires
// late rather than early), which only a kept record can remember; a node in service has no
// drain. Slurm's own reason time is not used for a drain nodecheck recorded: it restarts at
// every reason change, a repair's tag included.
func (a *applier) drainStart(rec *nodeRecord, node NodeState) {
	if !node.OutOfService() || !Owned(node.Reason, a.p.Prefix) {
		rec.DrainedAt = time.Time{}
		return
	}
	if !rec.DrainedAt.IsZero() {
		return
	}
	switch {
	case !node.ReasonTime.IsZero():
		rec.DrainedAt = node.ReasonTime.UTC()
	case a.known:
		rec.DrainedAt = a.p.Now().UTC()
	}
}

// reasonMore is what FormatReason appends for further failures: " (+2 more)".
var reasonMore = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` \(\+[0-9]+ more\)$`) })

// ReasonRemedy returns the remedy in a reason nodecheck wrote: the word in brackets that
// FormatReason puts after the summary ("... [reset_gpu]", before any " (+N more)"), read from
// the reason's base (ReasonBase: without a repair's tag and slurmctld's reboot words). ok is
// false when the reason carries none (a reason from before nodecheck wrote remedies, the
// fleet sweep's, an escalation's "service: ..." reason).
func ReasonRemedy(reason string) (remedy string, ok bool) {
	base := reasonMore().ReplaceAllString(ReasonBase(reason), "")
	if !strings.HasSuffix(base, "]") {
		return "", false
	}
	i := strings.LastIndex(base, " [")
	if i < 0 {
		return "", false
	}
	word := base[i+2 : len(base)-1]
	if word == "" || strings.Trim(word, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return "", false
	}
	return word, true
}
