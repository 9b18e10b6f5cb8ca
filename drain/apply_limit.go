package drain

import "time"

// drainWords are max_drained's words for Guard's messages.
var drainWords = GuardWords{
	Key:      "max_drained",
	Counting: "the nodes nodecheck drained",
	Carry:    "carry nodecheck's drain",
	Entries:  "drains",
	Entered:  "drained",
	Entry:    "drain",
	Undone:   "resumed",
	Not:      "NOT drained",
	Fix:      "check for a cluster-wide cause, then raise max_drained or drain by hand",
	Nothing:  "no drain action taken",
}

// drainWithinLimit drains the node and keeps max_drained when nodes fail together, with no
// shared file system: Guard.Enter counts nodecheck's drains (countDrained) and holds the drain
// back at or above the limit, drains, waits until slurmctld's one-second reason clock has
// passed this drain (Settle), lists the cluster again and keeps the drain only if fewer than
// Allowed drains come before it in drain order (stepBack); else resumes the node at once:
// held, "stepped back".
func (a *applier) drainWithinLimit(rec *nodeRecord, u Update) {
	a.out.Reason = u.Reason
	g := Guard{Limit: a.p.MaxDrained, Counts: drainCounts(a.p.Prefix), Settle: a.p.Settle, Now: a.p.Now, Words: drainWords}
	drained := false
	res := g.Enter(a.ctx, a.s, u.Node,
		func() bool {
			if drained = a.update(u); drained {
				rec.DrainedBy, rec.Reason, rec.DrainedAt = failedIDs(a.failures), u.Reason, a.p.Now().UTC()
			}
			return drained
		},
		func() bool { return a.update(Update{Node: u.Node, State: "RESUME"}) })
	a.out.Warnings = append(a.out.Warnings, res.Warnings...)
	switch {
	case res.Unreachable:
		a.out.Action, a.out.Message = ActionUnreachable, res.Message
	case res.StuckIn:
		// The step back's resume failed (update said why): the node stays drained, over the
		// limit.
		a.out.Warnings = append(a.out.Warnings, "this node's drain exceeds max_drained and could not be stepped back: "+a.out.Message)
		a.out.Action, a.out.Message = ActionDrained, "drain: "+u.Reason
	case res.Held:
		a.out.Action, a.out.Message = ActionHeld, res.Message
		if drained {
			rec.DrainedBy, rec.Reason, rec.DrainedAt = nil, "", time.Time{}
		}
	}
}
