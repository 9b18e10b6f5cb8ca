package drain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Guard keeps a limit on how many nodes of the cluster may be in some condition at once when
// many nodes enter it at the same moment, with Slurm as the only shared record (nodes share no
// file system): count, act, wait, count again, step back (docs/draining.md, "Safety limit when
// nodes fail together"). max_drained guards nodecheck's drains with it (drainWithinLimit); drain/repair's
// max_repairing guards repairs with the same Guard.
type Guard struct {
	Limit Limit
	// Counts says whether a node of the listing counts against the limit. Once act has run,
	// Slurm must show the acting node as counted, with the reason time act gave it.
	Counts func(NodeState) bool
	// Settle is the wait after act before counting again; 0 means DefaultSettle.
	Settle time.Duration
	Now    func() time.Time // nil: time.Now
	Words  GuardWords
}

// GuardWords are what a Guard's messages call the limit and the condition it bounds.
type GuardWords struct {
	Key      string // the setting: "max_drained"
	Counting string // what is counted, for "cannot count ...": "the nodes nodecheck drained"
	Carry    string // what counted nodes do: "carry nodecheck's drain" ("N nodes carry ...")
	Entries  string // the entries, plural: "drains"
	Entered  string // what act did: "drained" ("n1 drained before this one")
	Entry    string // this node's entry: "drain" ("this node's drain is stepped back")
	Undone   string // what undo does: "resumed"
	Not      string // the node's state when held: "NOT drained"
	Fix      string // what a person does: "check for a cluster-wide cause, then raise max_drained or drain by hand"
	Nothing  string // what a run that cannot count does: "no drain action taken"
}

// GuardResult is what Guard.Enter did.
type GuardResult struct {
	// Entered: act ran and stands. When false, Message says why (held back before acting,
	// stepped back after it, or the cluster could not be counted), unless act itself did not
	// run the update (a dry run, a failed update), which act reports.
	Entered bool
	// Held: the limit kept the node out (before acting, or by stepping back).
	Held bool
	// Unreachable: the cluster could not be counted before acting; nothing was done.
	Unreachable bool
	// StuckIn: undo failed after the limit said to step back: the node is in, over the limit
	// (Message says why it had to step back; undo reports its own failure).
	StuckIn  bool
	Message  string
	Warnings []string
}

// Enter counts the nodes g.Counts picks (s.Nodes) and holds the node back at or above the
// limit; else runs act (the update that puts node into the counted set; it reports false when
// it did not run it), waits until slurmctld's one-second reason clock has passed it (Settle),
// lists the cluster again and keeps the node in only if fewer than Allowed counted nodes come
// before it in order (reason time, then name: stepBack); else runs undo, the update that takes
// it out again. A count that cannot be made before acting holds the node back (a limit that
// cannot be checked must not be ignored); after acting, it leaves the node in with a warning.
// No limit (Limit.N 0) is act alone.
func (g Guard) Enter(ctx context.Context, s Slurm, node string, act, undo func() bool) GuardResult {
	w := g.Words
	if g.Limit.N <= 0 {
		return GuardResult{Entered: act()}
	}
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return GuardResult{Unreachable: true, Message: fmt.Sprintf("cannot count %s, for %s (%v): %s", w.Counting, w.Key, err, w.Nothing)}
	}
	var others []string
	for _, n := range g.counted(nodes) {
		if n.Name != node {
			others = append(others, n.Name)
		}
	}
	if g.Limit.Reached(len(others), len(nodes)) {
		return GuardResult{Held: true, Message: fmt.Sprintf("safety limit reached: %d of %d nodes already %s (%s), at or above %s: this node is %s; %s",
			len(others), len(nodes), w.Carry, nameList(others), g.Limit.describe(w.Key, len(nodes)), w.Not, w.Fix)}
	}
	if !act() {
		return GuardResult{}
	}
	now := g.Now
	if now == nil {
		now = time.Now
	}
	return g.recount(ctx, s, node, now(), now, undo)
}

// recount is Enter's wait, second count and step back.
func (g Guard) recount(ctx context.Context, s Slurm, node string, done time.Time, now func() time.Time, undo func() bool) GuardResult {
	w := g.Words
	res := GuardResult{Entered: true}
	settle := g.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	wait := settle - now().Sub(done)
	// Room for the listing and an undo after the wait; with less, count now and say so.
	const reserve = 500 * time.Millisecond
	short := false
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait+reserve {
		wait, short = 0, true
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	nodes, err := s.Nodes(ctx)
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s, but the %s could not be counted again for %s (%v): nodes that entered at the same moment may exceed the limit", w.Entered, w.Entries, w.Key, err))
		return res
	}
	keep, ahead, counted := stepBack(g.counted(nodes), node, g.Limit, len(nodes))
	if short {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s were counted again without waiting %s for %s made in the same second (the run's budget is nearly spent): one of those may exceed %s", w.Entries, settle, w.Entries, w.Key))
	}
	if keep {
		return res
	}
	res.Entered, res.Held = false, true
	res.Message = fmt.Sprintf("safety limit: %d nodes %s after nodes failed together, more than %s allows, and %s %s before this one, so this node's %s is stepped back (%s): it is %s; %s",
		counted, w.Carry, g.Limit.describe(w.Key, len(nodes)), nameList(ahead), w.Entered, w.Entry, w.Undone, w.Not, w.Fix)
	if !undo() {
		res.Entered, res.Held, res.StuckIn = true, false, true
	}
	return res
}

// counted returns the nodes of the listing g counts, in order: the reason's time
// (slurmctld's clock, one second steps), then the name, the same for every run that reads the
// same listing.
func (g Guard) counted(nodes []NodeState) []NodeState {
	var out []NodeState
	for _, n := range nodes {
		if g.Counts(n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b NodeState) int {
		return cmp.Or(a.ReasonTime.Compare(b.ReasonTime), strings.Compare(a.Name, b.Name))
	})
	return out
}
