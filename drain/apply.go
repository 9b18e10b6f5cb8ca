package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// DefaultLockWait is how long a run waits for another run's lock when its own budget allows.
// A prolog's whole run takes 5 s at most, so a health check that starts during one gets the
// lock in time; two admins typing at once wait for each other.
const DefaultLockWait = 10 * time.Second

// Policy is how drain acts: the [drain] and [state] settings.
type Policy struct {
	Prefix            string        // reason_prefix: marks nodecheck's reasons
	ResumeAfterPasses int           // resume_after_passes: consecutive clean runs before resuming
	MaxDrained        Limit         // max_drained
	StateDir          string        // [state] dir: drain.json and the lock; "" keeps no state (never resumes)
	LockWait          time.Duration // longest wait for another run's lock; 0 means DefaultLockWait
	Now               func() time.Time
}

// Request is one run's verdict and what that run may do.
type Request struct {
	Node     string
	Mode     config.Mode
	Failures []Failure // why the node is unhealthy, in run order; none: healthy
	Drain    bool      // may drain the node when unhealthy
	Resume   bool      // may resume the node when healthy (health and manual runs only)
	Partial  bool      // only some checks ran (--check): a clean partial run is no clean run
	DryRun   bool      // decide and report the scontrol commands, but change nothing
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
	Commands   []string `json:"commands,omitempty"`    // scontrol update commands run, or only printed in a dry run
	DryRun     bool     `json:"dry_run,omitempty"`
	Warnings   []string `json:"warnings,omitempty"` // problems that did not stop the action: the state directory, say
}

// Apply decides and acts on the node under the state lock: read the pass count, read the
// node's state, decide (see decide), check max_drained before a drain, run the update, write
// the pass count. Every Slurm call runs under ctx (the run's remaining budget) and the
// client's own timeout; a Slurm command that fails or times out changes nothing and is
// reported as unreachable, never as a node failure. Apply never returns an error: everything
// is in the Outcome.
//
// Overlapping runs (a health check during a prolog, two admins) are serialized by an
// exclusive lock on StateDir/lock. A run that cannot get it within min(LockWait, ctx's time
// left) takes no action (Locked). A state directory that cannot be created or locked is a
// warning: the run still drains, but does not count clean runs and never resumes.
func Apply(ctx context.Context, s Slurm, p Policy, r Request) (out Outcome) {
	now := p.Now
	if now == nil {
		now = time.Now
	}
	out = Outcome{Node: r.Node, DryRun: r.DryRun}
	unhealthy := len(r.Failures) > 0
	// Only health checks (and manual runs allowed to resume) count clean runs; any acting run
	// that fails resets the count.
	counts := r.Mode == config.ModeHealth || r.Mode == config.ModeManual && r.Resume
	mayResume := r.Resume && (r.Mode == config.ModeHealth || r.Mode == config.ModeManual)
	if unhealthy && !r.Drain || !unhealthy && !counts {
		// Nothing this run may do: a healthy prolog's fast path takes no lock and calls no
		// Slurm command.
		out.Action, out.Message = ActionNone, "healthy"
		if unhealthy {
			out.Message = "unhealthy, but this run does not drain"
		}
		return out
	}
	if err := ctx.Err(); err != nil {
		out.Action, out.Message = ActionSkipped, "no time left in the run's budget: no drain action taken"
		return out
	}

	// The pass count, under the lock.
	known := false
	var st passState
	if p.StateDir != "" {
		wait := p.LockWait
		if wait <= 0 {
			wait = DefaultLockWait
		}
		var release func()
		if !r.DryRun {
			lk, err := lockState(ctx, p.StateDir, wait)
			switch {
			case errors.Is(err, errLocked):
				out.Action, out.Message = ActionLocked, err.Error()+": no drain action taken"
				return out
			case err != nil:
				out.Warnings = append(out.Warnings, fmt.Sprintf("state directory %s unusable (%v): clean runs are not counted and nodecheck will not resume this node", p.StateDir, err))
			default:
				release = func() { _ = lk.Unlock() }
			}
		}
		if release != nil || r.DryRun {
			var err error
			st, err = readState(p.StateDir)
			if err != nil {
				out.Warnings = append(out.Warnings, err.Error())
			}
			known = release != nil || r.DryRun && err == nil
		}
		if release != nil {
			defer release()
		}
	}
	prev := st.Nodes[r.Node].Passes
	passes := prev
	switch {
	case unhealthy:
		passes = 0
	case counts && !r.Partial:
		passes = prev + 1
	}
	if known {
		out.Passes = passes
	}
	if known && !r.DryRun {
		st.Nodes[r.Node] = nodePasses{Passes: passes, UpdatedAt: now().UTC()}
		// Written whatever Slurm says below: the count is about the node's health, which
		// this run measured whether or not the controller answers. out is the named result,
		// so a warning added here reaches the caller.
		defer func() {
			if err := writeState(p.StateDir, st); err != nil {
				out.Warnings = append(out.Warnings, err.Error()+": clean runs are not counted")
			}
		}()
	}

	node, err := s.Node(ctx, r.Node)
	if err != nil {
		out.Action = ActionUnreachable
		out.Message = fmt.Sprintf("cannot read the state of node %s (%v): no drain action taken", r.Node, err)
		return out
	}
	out.NodeState, out.NodeReason = node.String(), node.Reason

	pl := decide(situation{
		Mode: r.Mode, Unhealthy: unhealthy, MayDrain: r.Drain, MayResume: mayResume, Node: node,
		Prefix: p.Prefix, Passes: passes, PassesKnown: known, Need: max(p.ResumeAfterPasses, 1),
	}, r.Failures)
	out.Action, out.Message = pl.Action, pl.Message
	if pl.Update == nil {
		return out
	}
	if pl.Action == ActionDrained {
		out.Reason = pl.Update.Reason
		if p.MaxDrained.N > 0 {
			if held, msg := checkLimit(ctx, s, p, r.Node); held {
				out.Action, out.Message = ActionHeld, msg
				return out
			} else if msg != "" {
				out.Action, out.Message = ActionUnreachable, msg
				return out
			}
		}
	}
	out.Commands = []string{shellQuote(s.Argv(*pl.Update))}
	if r.DryRun {
		out.Message = "dry run, would " + pl.Message
		return out
	}
	if err := s.Update(ctx, *pl.Update); err != nil {
		out.Action = ActionUnreachable
		out.Message = fmt.Sprintf("%s of node %s not done (%v)", strings.ToLower(pl.Update.State), r.Node, err)
	}
	return out
}

// checkLimit counts the nodes that carry nodecheck's reason (this one excluded: it is about to
// be drained) against max_drained. held is true when the limit holds the drain back; a
// non-empty msg with held false means the count could not be made, and the drain is not done
// either: a limit that cannot be checked must not be ignored.
func checkLimit(ctx context.Context, s Slurm, p Policy, self string) (held bool, msg string) {
	nodes, err := s.Reasons(ctx)
	if err != nil {
		return false, fmt.Sprintf("cannot count the nodes nodecheck drained, for max_drained (%v): no drain action taken", err)
	}
	drained := 0
	var names []string
	for _, n := range nodes {
		if n.Name != self && Owned(n.Reason, p.Prefix) {
			drained++
			if len(names) < 5 {
				names = append(names, n.Name)
			}
		}
	}
	if !p.MaxDrained.Reached(drained, len(nodes)) {
		return false, ""
	}
	list := strings.Join(names, ", ")
	if drained > len(names) {
		list += ", ..."
	}
	return true, fmt.Sprintf("safety limit reached: %d of %d nodes already carry nodecheck's reason (%s), at or above %s: this node is NOT drained; check for a cluster-wide cause, then raise max_drained or drain by hand",
		drained, len(nodes), list, p.MaxDrained.describe(len(nodes)))
}

// shellQuote renders argv as a command line a person can paste into a shell.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
