package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// DefaultLockWait is how long a run waits for another run's lock when its own budget allows.
// A prolog's whole run takes 5 s at most, so a health check that starts during one gets the
// lock in time; two admins typing at once wait for each other.
const DefaultLockWait = 10 * time.Second

// DefaultSettle is how long a run waits after its own drain before it counts the cluster's
// drains again (stepBack): slurmctld stamps a reason's time in whole seconds, so after a
// second and a little every drain stamped in the same second as this one has been made.
const DefaultSettle = 1100 * time.Millisecond

// Policy is how drain acts: the [drain] and [state] settings (PolicyFrom reads them).
type Policy struct {
	Prefix            string // reason_prefix: marks nodecheck's reasons
	ResumeAfterPasses int    // resume_after_passes: consecutive clean runs before resuming
	// RepairPasses, when set ([repair] enabled), replaces ResumeAfterPasses for a node whose
	// reason carries a repair's tag (RepairOf): [repair] passes_to_resume.
	RepairPasses   int
	MaxDrained     Limit // max_drained
	ErrorIsFailure bool  // error_is_failure: a check that could not decide drains too
	// State is the run's state directory ([state] dir), opened once by the run and shared with
	// the repair step and the history: drain.json and the lock. Not configured: no state is
	// kept, and nodecheck never resumes.
	State    *files.State
	LockWait time.Duration // longest wait for another run's lock; 0 means DefaultLockWait
	Settle   time.Duration // wait after a drain before counting again; 0 means DefaultSettle
	Now      func() time.Time
}

// Request is one run's verdict and what that run may do.
type Request struct {
	Node    string
	Mode    config.Mode
	Results []CheckResult // every check the run ran, in run order, whatever it said
	// Known is every check id this nodecheck has (checks.IDs()): a drain reason naming
	// another id ("fleet") was not set by the node's own checks, which cannot resume it.
	Known   []string
	Drain   bool // may drain the node when unhealthy
	Resume  bool // may resume the node when healthy (health and manual runs only)
	Partial bool // only some checks ran (--check): never counts as a clean run
	DryRun  bool // decide and report the scontrol commands, but change nothing
}

// Outcome is what Apply did, for the report ("drain" in the JSON output) and the log.
type Outcome struct {
	Action     Action   `json:"action"`
	Message    string   `json:"message"`               // one line: what and why
	Node       string   `json:"node"`                  // the Slurm node acted on
	NodeState  string   `json:"node_state,omitempty"`  // as read before acting: "IDLE+DRAIN"
	NodeReason string   `json:"node_reason,omitempty"` // the reason as read before acting
	Reason     string   `json:"reason,omitempty"`      // the reason nodecheck set (or would set)
	Passes     int      `json:"consecutive_passes"`    // clean runs in a row, this one included
	DrainedBy  []string `json:"drained_by,omitempty"`  // the checks a resume waits on: each must find the fault gone
	Commands   []string `json:"commands,omitempty"`    // scontrol update commands run, or only printed in a dry run
	DryRun     bool     `json:"dry_run,omitempty"`
	Warnings   []string `json:"warnings,omitempty"` // problems that did not stop the action: the state directory, say
	// Current is nodecheck's drain of the node as the run leaves it, for the metrics; nil when
	// the run did not read the node's state (it took no action, or Slurm did not answer).
	Current *Current `json:"-"`
}

// Apply decides and acts on the node under the state lock: read the state, read the node's
// state, judge the run (judgeRun), decide (decide), check max_drained around a drain
// (drainWithinLimit), run the update, write the state. Every Slurm call runs under ctx (the
// run's remaining budget) and the client's own timeout; a Slurm command that fails or times
// out changes nothing and is reported as unreachable, never as a node failure. Apply never
// returns an error: everything is in the Outcome.
//
// Overlapping runs (a health check during a prolog, two admins) are serialized by an
// exclusive lock on the state directory's lock. A run that cannot get it within min(LockWait, ctx's time
// left) takes no action (Locked). A state directory that cannot be created, locked or trusted
// is a warning: the run still drains, but does not count clean runs and never resumes.
func Apply(ctx context.Context, s Slurm, p Policy, r Request) Outcome {
	a := &applier{ctx: ctx, s: s, p: p, r: r, failures: Failures(r.Results, p.ErrorIsFailure)}
	if a.p.Now == nil {
		a.p.Now = time.Now
	}
	a.out = Outcome{Node: r.Node, DryRun: r.DryRun}
	a.run()
	return a.out
}

// applier is one Apply: its inputs, the state it read and the outcome it builds.
type applier struct {
	ctx      context.Context
	s        Slurm
	p        Policy
	r        Request
	failures []Failure
	out      Outcome

	dir   *stateDir // nil: no usable state directory
	st    passState
	known bool // the state was read (and, unless a dry run, will be written)
}

func (a *applier) run() {
	r, out := a.r, &a.out
	unhealthy := len(a.failures) > 0
	if unhealthy && !r.Drain || !unhealthy && !a.counts() {
		// Nothing this run may do: a healthy prolog's fast path takes no lock and calls no
		// Slurm command.
		out.Action, out.Message = ActionNone, "healthy"
		switch {
		case unhealthy:
			out.Message = "unhealthy, but this run does not drain"
		case undecided(r.Results):
			// Never "healthy" when the verdict is not: a check could not look.
			out.Message = "no check failed, but the run is undecided (a check could not look): no drain action"
		}
		return
	}
	if err := a.ctx.Err(); err != nil {
		out.Action, out.Message = ActionSkipped, "no time left in the run's budget: no drain action taken"
		return
	}
	if !a.openState() {
		return
	}
	defer a.dir.close()
	rec := a.st.Nodes[r.Node]
	node, err := a.s.Node(a.ctx, r.Node)
	if err != nil {
		// The count is about the node's health, which this run measured whether or not the
		// controller answers; the checks a resume waits on are the record's.
		a.count(&rec, judgeRun(rec.DrainedBy, r.Results, a.failures, r.Partial))
		a.save(rec)
		out.Action = ActionUnreachable
		out.Message = fmt.Sprintf("cannot read the state of node %s (%v): no drain action taken", r.Node, err)
		return
	}
	out.NodeState, out.NodeReason = node.String(), node.Reason
	a.drainStart(&rec, node)
	pl := a.judge(&rec, node)
	out.Action, out.Message = pl.Action, pl.Message
	switch {
	case pl.Update == nil:
	case pl.Action == ActionDrained:
		a.drainWithinLimit(&rec, *pl.Update)
	default:
		a.update(*pl.Update)
		if out.Action == ActionResumed {
			rec.DrainedBy, rec.Reason, rec.DrainedAt = nil, "", time.Time{}
		}
	}
	out.Current = a.current(rec, node)
	a.save(rec)
}

// undecided reports whether a check of results could not decide (error): such a run is
// never called healthy.
func undecided(results []CheckResult) bool {
	return slices.ContainsFunc(results, func(c CheckResult) bool { return c.Status == StatusError })
}

// counts reports whether the run counts clean runs: health checks, and manual runs allowed
// to resume.
func (a *applier) counts() bool {
	return a.r.Mode == config.ModeHealth || a.r.Mode == config.ModeManual && a.r.Resume
}

// openState opens the state directory, takes the lock (unless a dry run) and reads the state.
// It returns false when the run must stop (locked); an unusable directory is a warning.
func (a *applier) openState() bool {
	a.st = emptyState()
	if !a.p.State.Configured() {
		return true
	}
	sd, err := a.p.State.Open()
	d := &stateDir{dir: sd}
	if err == nil {
		wait := a.p.LockWait
		if wait <= 0 {
			wait = DefaultLockWait
		}
		if err = d.lock(a.ctx, wait); errors.Is(err, errLocked) {
			a.out.Action, a.out.Message = ActionLocked, err.Error()+": no drain action taken"
			return false
		}
	}
	if err != nil {
		a.out.Warnings = append(a.out.Warnings, fmt.Sprintf("%v: clean runs are not counted and nodecheck will not resume this node", err))
		return true
	}
	a.dir = d
	a.st, err = d.read()
	if err != nil {
		a.out.Warnings = append(a.out.Warnings, err.Error())
	}
	a.known = true
	return true
}

// judge works out the checks a resume waits on, applies the run's evidence to the count and
// decides.
func (a *applier) judge(rec *nodeRecord, node NodeState) plan {
	owned := Owned(node.Reason, a.p.Prefix) && node.OutOfService()
	var ids []string
	byHand := ""
	if owned {
		ids, byHand = drainedBy(*rec, node.Reason, a.p.Prefix, a.r.Known)
	} else {
		rec.DrainedBy, rec.Reason = nil, "" // the drain it recorded is over
	}
	ev := judgeRun(ids, a.r.Results, a.failures, a.r.Partial)
	a.count(rec, ev)
	if owned && len(a.failures) > 0 && byHand == "" {
		// Still drained by nodecheck and failing: whatever fails now must also look again
		// before a resume.
		rec.DrainedBy, rec.Reason = union(ids, failedIDs(a.failures)), node.Reason
	}
	a.out.DrainedBy = ids
	return decide(situation{
		Mode: a.r.Mode, Unhealthy: len(a.failures) > 0, MayDrain: a.r.Drain,
		MayResume: a.r.Resume && a.r.Mode.CountsCleanRuns(),
		Node:      node, Prefix: a.p.Prefix, Passes: rec.Passes, PassesKnown: a.known,
		Need: max(a.need(node.Reason), 1), Evidence: ev.Why, Counted: ev.Effect == effectCount, ByHand: byHand,
		Undecided: undecided(a.r.Results),
	}, a.failures)
}

// need is the clean runs a node drained with reason needs before a resume: RepairPasses
// after a repair, else ResumeAfterPasses.
func (a *applier) need(reason string) int {
	if _, ok := RepairOf(reason); ok && a.p.RepairPasses > 0 {
		return a.p.RepairPasses
	}
	return a.p.ResumeAfterPasses
}

// count applies a run's evidence to the record: a failure resets it in every mode; clean
// runs count only where the run counts them (health, manual with --resume).
func (a *applier) count(rec *nodeRecord, ev evidence) {
	switch {
	case ev.Effect == effectReset && (len(a.failures) > 0 || a.counts()):
		rec.Passes = 0
	case ev.Effect == effectCount && a.counts():
		rec.Passes++
	}
	if a.known {
		a.out.Passes = rec.Passes
	}
}

// save writes the record back, unless the state is unknown or the run is dry.
func (a *applier) save(rec nodeRecord) {
	if !a.known || a.r.DryRun || a.dir == nil {
		return
	}
	rec.UpdatedAt = a.p.Now().UTC()
	a.st.Nodes[a.r.Node] = rec
	if err := a.dir.write(a.st); err != nil {
		a.out.Warnings = append(a.out.Warnings, err.Error()+": clean runs are not counted")
	}
}

// update runs u (or, in a dry run, only reports it). A failure makes the outcome unreachable.
func (a *applier) update(u Update) bool {
	a.out.Commands = append(a.out.Commands, QuoteArgv(a.s.Argv(u)))
	if a.r.DryRun {
		a.out.Message = "dry run, would " + a.out.Message
		return false
	}
	if err := a.s.Update(a.ctx, u); err != nil {
		a.out.Action = ActionUnreachable
		a.out.Message = fmt.Sprintf("%s of node %s not done (%v)", strings.ToLower(u.State), u.Node, err)
		return false
	}
	return true
}

func failedIDs(failures []Failure) []string {
	ids := make([]string, len(failures))
	for i, f := range failures {
		ids[i] = f.Check
	}
	return ids
}

// union is a, then the elements of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// QuoteArgv renders argv as a command line a person can paste into a shell, for reports and
// logs (nodecheck itself runs no shell).
func QuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = files.ShellQuote(a)
	}
	return strings.Join(q, " ")
}
