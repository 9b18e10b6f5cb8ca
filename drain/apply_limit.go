package drain

import (
	"fmt"
	"time"
)

// drainWithinLimit drains the node and keeps max_drained when nodes fail together, with no
// shared file system: count, drain, count again, step back.
//
//  1. Count nodecheck's drains (countDrained); at or above the limit, hold the drain back.
//  2. Drain.
//  3. Wait until slurmctld's one-second reason clock has passed this drain (Settle), list the
//     cluster again and keep the drain only if fewer than Allowed drains come before it in
//     drain order (stepBack); else resume the node at once: held, "stepped back".
//
// A count that cannot be made holds the drain back (a limit that cannot be checked must not
// be ignored); after the drain, it leaves the drain standing with a warning.
func (a *applier) drainWithinLimit(rec *nodeRecord, u Update) {
	a.out.Reason = u.Reason
	limit := a.p.MaxDrained
	if limit.N > 0 {
		nodes, err := a.s.Nodes(a.ctx)
		if err != nil {
			a.out.Action = ActionUnreachable
			a.out.Message = fmt.Sprintf("cannot count the nodes nodecheck drained, for max_drained (%v): no drain action taken", err)
			return
		}
		var others []string
		for _, n := range countDrained(nodes, a.p.Prefix) {
			if n.Name != u.Node {
				others = append(others, n.Name)
			}
		}
		if limit.Reached(len(others), len(nodes)) {
			a.out.Action = ActionHeld
			a.out.Message = fmt.Sprintf("safety limit reached: %d of %d nodes already carry nodecheck's drain (%s), at or above %s: this node is NOT drained; check for a cluster-wide cause, then raise max_drained or drain by hand",
				len(others), len(nodes), nameList(others), limit.describe(len(nodes)))
			return
		}
	}
	if !a.update(u) {
		return
	}
	done := a.p.Now()
	rec.DrainedBy, rec.Reason = failedIDs(a.failures), u.Reason
	if limit.N > 0 {
		a.recount(rec, u, done)
	}
}

// recount is step 3 of drainWithinLimit.
func (a *applier) recount(rec *nodeRecord, u Update, done time.Time) {
	settle := a.p.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	wait := settle - a.p.Now().Sub(done)
	// Room for the listing and a resume after the wait; with less, count now and say so.
	const reserve = 500 * time.Millisecond
	short := false
	if d, ok := a.ctx.Deadline(); ok && time.Until(d) < wait+reserve {
		wait, short = 0, true
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-a.ctx.Done():
		}
	}
	nodes, err := a.s.Nodes(a.ctx)
	if err != nil {
		a.out.Warnings = append(a.out.Warnings, fmt.Sprintf("drained, but the drains could not be counted again for max_drained (%v): nodes that failed at the same moment may exceed the limit", err))
		return
	}
	keep, ahead, drained := stepBack(nodes, u.Node, a.p.Prefix, a.p.MaxDrained)
	if short {
		a.out.Warnings = append(a.out.Warnings, fmt.Sprintf("the drains were counted again without waiting %s for drains made in the same second (the run's budget is nearly spent): one of those may exceed max_drained", settle))
	}
	if keep {
		return
	}
	a.out.Action = ActionHeld
	a.out.Message = fmt.Sprintf("safety limit: %d nodes carry nodecheck's drain after nodes failed together, more than %s allows, and %s drained before this one, so this node's drain is stepped back (resumed): it is NOT drained; check for a cluster-wide cause, then raise max_drained or drain by hand",
		drained, a.p.MaxDrained.describe(len(nodes)), nameList(ahead))
	rec.DrainedBy, rec.Reason = nil, ""
	resume := Update{Node: u.Node, State: "RESUME"}
	if !a.update(resume) {
		a.out.Action = ActionDrained
		a.out.Warnings = append(a.out.Warnings, "this node's drain exceeds max_drained and could not be stepped back: "+a.out.Message)
		a.out.Message = "drain: " + u.Reason
	}
}
