package drain

import (
	"fmt"

	"github.com/nodecheck/nodecheck/config"
)

// Action is what a run did (or, in a dry run, would do) to the node.
type Action string

// The actions, as the JSON report's "drain.action" spells them.
const (
	ActionNone        Action = "none"        // nothing to do: healthy and not drained by nodecheck, say
	ActionDrained     Action = "drained"     // drained with nodecheck's reason
	ActionResumed     Action = "resumed"     // resumed a node nodecheck had drained
	ActionWaiting     Action = "waiting"     // drained by nodecheck, healthy, not yet enough clean runs
	ActionKept        Action = "kept"        // already drained or down: state and reason left as they were
	ActionHeld        Action = "held"        // max_drained held the drain back
	ActionUnreachable Action = "unreachable" // scontrol or sinfo failed or timed out: state unknown, nothing changed
	ActionLocked      Action = "locked"      // another nodecheck run held the lock past the wait
	ActionSkipped     Action = "skipped"     // the run's budget was used up before drain could start
)

// Actions lists every Action, in the order above: the values of the metrics'
// nodecheck_drain_action label (checks/report). A new action goes here too.
func Actions() []Action {
	return []Action{ActionNone, ActionDrained, ActionResumed, ActionWaiting, ActionKept, ActionHeld, ActionUnreachable, ActionLocked, ActionSkipped}
}

// situation is what the decision rests on. Passes counts consecutive clean runs including this
// one; PassesKnown is false when the state directory cannot be read or written, and then
// nothing is resumed.
type situation struct {
	Mode        config.Mode
	Unhealthy   bool
	MayDrain    bool
	MayResume   bool
	Node        NodeState
	Prefix      string
	Passes      int
	PassesKnown bool
	Need        int // resume_after_passes
}

// plan is a decision: the action and, for drained and resumed, the update to run.
type plan struct {
	Action  Action
	Message string
	Update  *Update
}

// decide is the decision table of README "Draining", without side effects:
//
//	unhealthy, may drain:  node has a reason that is not nodecheck's -> kept (never overwritten)
//	                       node drained with nodecheck's reason      -> kept (first reason stays)
//	                       otherwise                                 -> drained (subject to max_drained)
//	healthy, may resume:   node not drained                          -> none
//	                       drained, reason not nodecheck's           -> kept (never resumed)
//	                       drained by nodecheck, passes < need       -> waiting
//	                       drained by nodecheck, passes >= need      -> resumed
//	otherwise                                                        -> none
//
// Prolog and epilog never resume, whatever they are allowed.
func decide(s situation, failures []Failure) plan {
	owned := Owned(s.Node.Reason, s.Prefix)
	foreign := s.Node.Reason != "" && !owned
	if s.Unhealthy {
		switch {
		case !s.MayDrain:
			return plan{Action: ActionNone, Message: "unhealthy, but this run does not drain (manual run without --drain, or [drain] enabled = false)"}
		case foreign:
			return plan{Action: ActionKept, Message: fmt.Sprintf("node is %s with a reason nodecheck did not set (%q): left as it is", s.Node, s.Node.Reason)}
		case owned && s.Node.Drained():
			return plan{Action: ActionKept, Message: fmt.Sprintf("node is already %s by nodecheck (%q): reason kept", s.Node, s.Node.Reason)}
		}
		reason := FormatReason(s.Prefix, failures)
		return plan{Action: ActionDrained, Message: "drain: " + reason, Update: &Update{Node: s.Node.Name, State: "DRAIN", Reason: reason}}
	}
	if !s.MayResume || (s.Mode != config.ModeHealth && s.Mode != config.ModeManual) {
		return plan{Action: ActionNone, Message: "healthy"}
	}
	switch {
	case !s.Node.Drained():
		return plan{Action: ActionNone, Message: fmt.Sprintf("healthy; node is %s", s.Node)}
	case !owned:
		return plan{Action: ActionKept, Message: fmt.Sprintf("healthy, but node is %s with a reason nodecheck did not set (%q): never resumed by nodecheck", s.Node, s.Node.Reason)}
	case !s.PassesKnown:
		return plan{Action: ActionWaiting, Message: "healthy, but clean runs cannot be counted (state directory unusable): resume the node by hand"}
	case s.Passes < s.Need:
		return plan{Action: ActionWaiting, Message: fmt.Sprintf("healthy: %d of %d consecutive clean runs before resuming", s.Passes, s.Need)}
	}
	return plan{Action: ActionResumed, Message: fmt.Sprintf("resume: healthy for %d consecutive runs (reason was %q)", s.Passes, s.Node.Reason), Update: &Update{Node: s.Node.Name, State: "RESUME"}}
}
