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
	ActionKept        Action = "kept"        // state and reason left as they were: someone else's, nodecheck's own, or a state nodecheck leaves alone or does not know
	ActionHeld        Action = "held"        // max_drained held the drain back, or stepped it back
	ActionUnreachable Action = "unreachable" // scontrol or sinfo failed or timed out: state unknown, nothing changed
	ActionLocked      Action = "locked"      // another nodecheck run held the lock past the wait
	ActionSkipped     Action = "skipped"     // the run's budget was used up before drain could start
)

// Actions lists every Action, in the order above: the values of the metrics'
// nodecheck_drain_action label (cmd/nodecheck/report). A new action goes here too.
func Actions() []Action {
	return []Action{ActionNone, ActionDrained, ActionResumed, ActionWaiting, ActionKept, ActionHeld, ActionUnreachable, ActionLocked, ActionSkipped}
}

// situation is what the decision rests on. Passes counts consecutive clean runs including this
// one (judgeRun; Evidence says what this run showed); PassesKnown is false when the state
// directory cannot be used, and then nothing is resumed. ByHand, when set, says why no run of
// the node's checks can resume it.
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
	Evidence    string
	Counted     bool // this run counted toward the resume (judgeRun): only such a run resumes
	ByHand      string
	Undecided   bool // no check failed, but one could not decide (error)
}

// plan is a decision: the action and, for drained and resumed, the update to run.
type plan struct {
	Action  Action
	Message string
	Update  *Update
}

// decide is the decision table of docs/draining.md, without side effects:
//
//	the run may not act (no --drain for a failure, no resume for a clean run)  -> none
//	node's state is unknown by the state table                                 -> kept (nothing done)
//	node's state is one nodecheck leaves alone (DOWN, REBOOT_*, MAINTENANCE...)-> kept
//	unhealthy:  drained with a reason that is not nodecheck's                  -> kept (never overwritten)
//	            drained with nodecheck's reason                                -> kept (first reason stays)
//	            otherwise (a leftover reason on a node in service is ignored)  -> drained (subject to max_drained)
//	healthy:    node not drained                                               -> none
//	            drained, reason not nodecheck's                                -> kept (never resumed)
//	            drained by nodecheck for a check not among the node's own      -> kept (resume by hand)
//	            drained by nodecheck, passes < need, or this run did not count -> waiting
//	            drained by nodecheck, passes >= need                           -> resumed
//
// Prolog and epilog never resume, whatever they are allowed.
func decide(s situation, failures []Failure) plan {
	if s.Unhealthy && !s.MayDrain {
		return plan{Action: ActionNone, Message: "unhealthy, but this run does not drain (manual run without --drain, or [drain] enabled = false)"}
	}
	clean := "healthy"
	if s.Undecided {
		clean = "no check failed, but the run is undecided"
	}
	if !s.Unhealthy && (!s.MayResume || !s.Mode.CountsCleanRuns()) {
		return plan{Action: ActionNone, Message: clean}
	}
	switch stance, why := s.Node.Stance(); stance {
	case StanceUnknown:
		return plan{Action: ActionKept, Message: fmt.Sprintf("node state %s is not one nodecheck knows (%s): nothing done; see /usr/share/doc/nodecheck/docs/draining.md for the states it acts on", s.Node, why)}
	case StanceLeave:
		return plan{Action: ActionKept, Message: fmt.Sprintf("node is %s (%s): nodecheck leaves it as it is", s.Node, why)}
	}
	owned := Owned(s.Node.Reason, s.Prefix)
	drained := s.Node.Drained()
	if s.Unhealthy {
		switch {
		case drained && !owned:
			return plan{Action: ActionKept, Message: fmt.Sprintf("node is %s with a reason nodecheck did not set (%q): left as it is", s.Node, s.Node.Reason)}
		case drained:
			return plan{Action: ActionKept, Message: fmt.Sprintf("node is already %s by nodecheck (%q): reason kept", s.Node, s.Node.Reason)}
		}
		reason := FormatReason(s.Prefix, failures)
		return plan{Action: ActionDrained, Message: "drain: " + reason, Update: &Update{Node: s.Node.Name, State: "DRAIN", Reason: reason}}
	}
	switch {
	case !drained:
		return plan{Action: ActionNone, Message: fmt.Sprintf("%s; node is %s", clean, s.Node)}
	case !owned:
		return plan{Action: ActionKept, Message: fmt.Sprintf("%s, but node is %s with a reason nodecheck did not set (%q): never resumed by nodecheck", clean, s.Node, s.Node.Reason)}
	case s.ByHand != "":
		return plan{Action: ActionKept, Message: fmt.Sprintf("%s, but node is %s by nodecheck and %s: resume it by hand (scontrol update NodeName=%s State=RESUME), or let whoever drained it resume it", clean, s.Node, s.ByHand, s.Node.Name)}
	case !s.PassesKnown:
		return plan{Action: ActionWaiting, Message: clean + ", but clean runs cannot be counted (state directory unusable): resume the node by hand"}
	case s.Passes < s.Need || !s.Counted:
		return plan{Action: ActionWaiting, Message: fmt.Sprintf("%d of %d consecutive clean runs before resuming: %s", s.Passes, s.Need, s.Evidence)}
	}
	return plan{Action: ActionResumed, Message: fmt.Sprintf("resume: %d consecutive clean runs, the last: %s (reason was %q)", s.Passes, s.Evidence, s.Node.Reason), Update: &Update{Node: s.Node.Name, State: "RESUME"}}
}
