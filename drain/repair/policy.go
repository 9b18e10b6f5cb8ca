package repair

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
)

// Policy is how repairs act: the [repair] settings and drain's reason prefix (PolicyFrom).
type Policy struct {
	Prefix         string        // [drain] reason_prefix: nodecheck's reasons
	GPUReset       []string      // the reset command; config.GPUResetPlaceholder becomes the bus ids
	ResetTimeout   time.Duration // the reset command's own deadline
	Reboot         bool          // may ask Slurm for a reboot
	MaxRepairing   drain.Limit
	PassesToResume int
	GPURepairs     int // at this many repairs of one GPU within GPUWindow, escalate
	GPUWindow      time.Duration
	NodeRepairs    int // at this many repairs of the node within NodeWindow, escalate
	NodeWindow     time.Duration
	// Settle is the wait after tagging the node before counting again (drain.Guard); 0 means
	// drain.DefaultSettle.
	Settle time.Duration
	Now    func() time.Time // nil: time.Now
}

// PolicyFrom reads a Policy from a node's effective nodecheck.toml. It fails only on settings
// config validation would have refused (a config built in code may not have been validated).
func PolicyFrom(cfg *config.Config) (Policy, error) {
	r := cfg.Repair
	n, percent, err := config.ParseMaxRepairing(r.MaxRepairing)
	if err != nil {
		return Policy{}, fmt.Errorf("max_repairing: %w", err)
	}
	p := Policy{
		Prefix: cfg.Drain.ReasonPrefix, GPUReset: slices.Clone(r.GPUReset), ResetTimeout: r.ResetTimeout, Reboot: r.Reboot,
		MaxRepairing: drain.Limit{N: n, Percent: percent}, PassesToResume: r.PassesToResume,
		GPURepairs: r.GPURepairs, GPUWindow: r.GPUWindow, NodeRepairs: r.NodeRepairs, NodeWindow: r.NodeWindow,
	}
	switch {
	case len(p.GPUReset) == 0 || p.ResetTimeout <= 0:
		return Policy{}, fmt.Errorf("[repair] gpu_reset and reset_timeout must be set")
	case p.PassesToResume < 1 || p.GPURepairs < 1 || p.NodeRepairs < 1 || p.GPUWindow <= 0 || p.NodeWindow <= 0:
		return Policy{}, fmt.Errorf("[repair] passes_to_resume, gpu_repairs, node_repairs, gpu_window and node_window must be positive")
	}
	return p, nil
}

// Permitted says whether a run repairs at all, and why not: repairs on ([repair] enabled), a
// health run (slurmd's HealthCheckProgram, or --mode health), and, for a snapshot replay,
// --repair and --node (a replay describes another node: it repairs the live node only when
// told to, as it drains only when told to).
func Permitted(cfg *config.Config, mode config.Mode, replay, flag, nodeNamed bool) (bool, string) {
	switch {
	case !cfg.Repair.Enabled:
		return false, "[repair] enabled = false"
	case !mode.Repairs():
		return false, fmt.Sprintf("repairs run in health runs only, this is a %s run", mode)
	case replay && !(flag && nodeNamed):
		return false, "a snapshot replay repairs the live node only with --repair and --node"
	}
	return true, ""
}

// Decide is the repair's decision table (docs/repairs.md), without side effects:
//
//	node not out of service with nodecheck's reason        -> none; an open entry closes (ok when
//	                                                           the node is back in service)
//	drained "nodecheck: service: ..."                       -> none: escalated, a person takes over
//	a reboot under way (REBOOT_REQUESTED, REBOOT_ISSUED)    -> waiting: never asked twice
//	a reboot asked, the boot id unchanged and none pending  -> escalate: it never happened
//	a repair done, a failure again                          -> the next rung: reset -> reboot ->
//	                                                           escalate (a reboot is the last rung)
//	a repair done, passes_to_resume clean runs              -> resume (drain's rule for a clean run)
//	a repair done, fewer                                    -> waiting
//	failures with no repair under way:
//	  a remedy a person must carry out (service, admin, none) -> none
//	  reset_gpu on named GPUs, none held by a process       -> reset those GPUs, with the GPUs
//	                                                           the driver resets only together
//	                                                           with them (ResetSet)
//	  reboot, or a reset that cannot be done (a process on  -> reboot (none when reboot = false)
//	  a GPU of the set, NVLinks unread)
//	  the GPU or the node at its repair limit in the window -> escalate
//	  a job on the node, or its jobs unknown                -> busy
//	  max_repairing reached                                 -> held
func (p Policy) Decide(in Input) Decision {
	owned := in.Node.OutOfService() && drain.Owned(in.Node.Reason, p.Prefix)
	last, hasLast := in.Record.Last()
	open := hasLast && (last.Outcome == OutcomePending || last.Outcome == OutcomeFailed && last.Action == RemedyReset)
	if !owned {
		d := Decision{Step: StepNone, Message: fmt.Sprintf("node is %s, not out of service under nodecheck's reason: nothing to repair", in.Node)}
		if open {
			d.Close, d.CloseDetail = OutcomeOK, "node back in service"
			if in.Node.OutOfService() {
				d.Close, d.CloseDetail = OutcomeFailed, fmt.Sprintf("node is %s with a reason nodecheck did not set (%q)", in.Node, in.Node.Reason)
			}
		}
		return d
	}
	if check, _ := drain.ReasonCheck(in.Node.Reason, p.Prefix); check == ServiceCheck {
		return Decision{Step: StepNone, Message: fmt.Sprintf("node is marked for service (%q): repairs stopped, a person takes over", in.Node.Reason)}
	}
	tag, tagged := drain.RepairOf(in.Node.Reason)
	if ok, why := stateAllows(in.Node, tagged); !ok {
		return Decision{Step: StepNone, Message: fmt.Sprintf("node is %s (%s): nodecheck repairs nothing in this state", in.Node, why)}
	}
	if tagged && !open {
		// The record was lost (or never written): the tag says what was done; the boot
		// before it is unknown.
		last, open = Entry{Action: tag, Outcome: OutcomePending, Started: in.Now}, true
	}
	if open && tagged {
		return p.underWay(in, last)
	}
	d := p.start(in, RemedyReset)
	if open && d.Close == "" {
		// Drained again under a reason without the tag: the earlier repair's node went back
		// into service between two runs and failed anew.
		d.Close, d.CloseDetail = OutcomeFailed, fmt.Sprintf("drained again (%q)", in.Node.Reason)
	}
	return d
}

// underWay decides for a node whose repair last is under way.
func (p Policy) underWay(in Input, last Entry) Decision {
	if last.Action == RemedyReboot {
		switch {
		case in.Node.Rebooting():
			return Decision{Step: StepWait, Message: fmt.Sprintf("reboot asked at %s, not yet done (node is %s)", stamp(last.Started), in.Node)}
		case last.BootID != "" && last.BootID == in.BootID:
			why := fmt.Sprintf("the reboot asked at %s never happened (boot id unchanged, node is %s, reason %q)", stamp(last.Started), in.Node, in.Node.Reason)
			d := p.escalate(in, gpusOf(in.Faults, in.GPUs, last.GPUs), "reboot never happened")
			d.Close, d.CloseDetail = OutcomeFailed, why
			d.Message = why + ": " + d.Message
			return d
		}
	}
	if len(in.Faults) > 0 {
		why := fmt.Sprintf("%s still failing after the %s", in.Faults[0].Check, actionWords(last.Action))
		if last.Outcome == OutcomeFailed {
			why = fmt.Sprintf("the reset of %s failed (%s)", busList(last.ResetGPUs()), last.Detail)
		}
		if last.Action == RemedyReboot {
			d := p.escalate(in, gpusOf(in.Faults, in.GPUs, last.GPUs), in.Faults[0].Check+" after a reboot")
			d.Close, d.CloseDetail, d.Message = OutcomeFailed, why, why+": "+d.Message
			return d
		}
		d := p.start(in, RemedyReboot)
		d.Close, d.CloseDetail, d.Message = OutcomeFailed, why, why+"; "+d.Message
		return d
	}
	switch {
	case !in.PassesKnown:
		return Decision{Step: StepWait, Message: fmt.Sprintf("repaired (%s), but clean runs cannot be counted (state directory unusable): resume the node by hand", actionWords(last.Action))}
	case in.Passes < p.PassesToResume:
		return Decision{Step: StepWait, Message: fmt.Sprintf("repaired (%s): %d of %d clean health runs before the node returns to service", actionWords(last.Action), in.Passes, p.PassesToResume)}
	}
	return Decision{Step: StepResume, Close: OutcomeOK, CloseDetail: fmt.Sprintf("%d clean health runs after the %s", in.Passes, actionWords(last.Action)),
		Message: fmt.Sprintf("resume: %d clean health runs after the %s (reason was %q)", in.Passes, actionWords(last.Action), in.Node.Reason)}
}

// underWayStates are the states a repair of nodecheck's own puts a node in: while one is under
// way (the reason carries its tag) they are the repair's to follow, not a reason to stop.
var underWayStates = map[string]bool{"DOWN": true, "REBOOT_REQUESTED": true, "REBOOT_ISSUED": true}

// stateAllows says whether a repair may act on a node in its Slurm state: in a state drain
// acts on (drain.StanceAct), or, with a repair under way, one whose other words are only those
// that repair brings (a reboot's). Any other state (MAINTENANCE, FAIL, INVALID_REG, power
// saving, a reboot nodecheck did not ask for, a word nodecheck does not know) belongs to
// Slurm or a person, as it does for drain: nothing is reset, rebooted or resumed.
func stateAllows(n drain.NodeState, underWay bool) (bool, string) {
	stance, why := n.Stance()
	if stance == drain.StanceAct {
		return true, ""
	}
	if stance != drain.StanceLeave || !underWay {
		return false, why
	}
	for _, w := range append([]string{n.State}, n.Flags...) {
		row, _ := drain.LookupState(w)
		if row.Stance == drain.StanceLeave && !underWayStates[row.Word] {
			return false, why
		}
	}
	return true, ""
}

// start decides the first repair for the run's failures, no cheaper than rung (reset_gpu, or
// reboot after a reset that did not help).
func (p Policy) start(in Input, rung string) Decision {
	if len(in.Faults) == 0 {
		return Decision{Step: StepNone, Message: "no failure to repair: drain resumes the node after its clean runs"}
	}
	if in.Node.State == "DOWN" {
		return Decision{Step: StepNone, Message: fmt.Sprintf("node is %s with no repair of nodecheck's under way: nodecheck leaves a DOWN node to Slurm and to a person", in.Node)}
	}
	for _, f := range in.Faults {
		if f.Remedy != RemedyReset && f.Remedy != RemedyReboot {
			return Decision{Step: StepNone, Message: fmt.Sprintf("%s needs %s, which a person carries out: no repair", f.Check, remedyWords(f.Remedy))}
		}
	}
	action, gpus, why := p.rung(in, rung)
	if action == "" {
		return Decision{Step: StepNone, Message: why}
	}
	var peers []GPU
	together := ""
	if action == RemedyReset {
		// The driver's rule for NVLink: the GPUs it resets only together.
		set, tw, refused := ResetSet(gpus, in.GPUs, in.Fabric)
		if refused != "" {
			if action, gpus, why = p.reboot(in, refused); action == "" {
				return Decision{Step: StepNone, Message: why}
			}
		} else {
			peers, together = set[len(gpus):], tw
		}
	}
	if d, ok := p.limitReached(in, action, gpus); ok {
		return d
	}
	if b := in.Node.Busy(); b != "" {
		return Decision{Step: StepBusy, Message: "no repair: " + b}
	}
	switch {
	case in.Jobs < 0:
		return Decision{Step: StepBusy, Message: fmt.Sprintf("no repair: the jobs on the node could not be listed (%s)", in.JobsErr)}
	case in.Jobs > 0:
		return Decision{Step: StepBusy, Message: fmt.Sprintf("no repair: %d job(s) on the node", in.Jobs)}
	case p.MaxRepairing.N > 0 && in.Total == 0:
		return Decision{Step: StepHeld, Message: fmt.Sprintf("no repair: the nodes in repair could not be counted for max_repairing (%s)", cmp.Or(in.CountErr, "sinfo listed no node"))}
	case p.MaxRepairing.N > 0 && p.MaxRepairing.Reached(in.Repairing, in.Total):
		return Decision{Step: StepHeld, Message: fmt.Sprintf("safety limit: %d of %d nodes already in repair, at or above max_repairing = %q: this node waits for its turn", in.Repairing, in.Total, p.MaxRepairing.String())}
	}
	e := &Entry{Action: action, GPUs: gpus, Peers: peers, Fault: faultsOf(in.Faults), Started: in.Now, BootID: in.BootID, Outcome: OutcomePending}
	d := Decision{Step: StepReboot, Reason: drain.TagReason(in.Node.Reason, action), Entry: e, GPUs: gpus, Peers: peers, Together: together}
	if action == RemedyReset {
		d.Step = StepReset
		d.Message = fmt.Sprintf("reset %s for %s", busList(gpus), e.Fault)
		if len(peers) > 0 {
			d.Message = fmt.Sprintf("reset %s together with its NVLink peers %s for %s; together because %s", busList(gpus), strings.TrimPrefix(busList(peers), "GPU "), e.Fault, together)
		}
	} else {
		d.Message = fmt.Sprintf("reboot for %s: %s", e.Fault, why)
	}
	return d
}

// rung picks the remedy for faults that all have reset_gpu or reboot: a reset of their GPUs
// when rung allows it and it can be done, else a reboot when allowed. why says why a reset
// gave way to a reboot, or, with action "", why nothing is done.
func (p Policy) rung(in Input, rung string) (action string, gpus []GPU, why string) {
	why = "its remedy is a reboot"
	if rung == RemedyReset {
		gpus, why = resettable(in)
		if why == "" {
			return RemedyReset, gpus, ""
		}
	} else {
		why = "the reset did not help"
	}
	return p.reboot(in, why)
}

// reboot is a reboot for why, or, with action "", why nothing is done ([repair] reboot = false).
func (p Policy) reboot(in Input, why string) (action string, gpus []GPU, _ string) {
	if !p.Reboot {
		return "", nil, fmt.Sprintf("the node needs a reboot (%s), and [repair] reboot = false: reboot it by hand", why)
	}
	return RemedyReboot, gpusOf(in.Faults, in.GPUs, nil), why
}

// resettable returns the GPUs a reset takes for the run's faults, or why they cannot be
// reset: a fault that wants a reboot or names no GPU, GPUs NVML did not list, or a GPU a
// process holds (a reset would kill it, and nvidia-smi refuses).
func resettable(in Input) ([]GPU, string) {
	var gpus []GPU
	for _, f := range in.Faults {
		switch {
		case f.Remedy == RemedyReboot:
			return nil, fmt.Sprintf("%s's remedy is a reboot", f.Check)
		case f.Bus == "":
			return nil, fmt.Sprintf("%s's reset names no GPU", f.Check)
		case !in.GPUsKnown:
			return nil, "NVML could not list the GPUs to reset"
		}
		i := slices.IndexFunc(in.GPUs, func(g GPU) bool { return g.Bus == f.Bus })
		if i < 0 {
			return nil, fmt.Sprintf("NVML does not list GPU %s", f.Bus)
		}
		g := in.GPUs[i]
		switch {
		case g.Processes < 0:
			return nil, fmt.Sprintf("NVML could not list the processes on GPU %s", g.Bus)
		case g.Processes > 0:
			return nil, fmt.Sprintf("%d process(es) hold GPU %s on a node with no job", g.Processes, g.Bus)
		}
		if !slices.ContainsFunc(gpus, func(x GPU) bool { return x.Bus == g.Bus }) {
			gpus = append(gpus, g)
		}
	}
	return gpus, ""
}

// gpusOf returns the GPUs the faults name (with NVML's UUID and serial where it lists them),
// else fallback.
func gpusOf(faults []Fault, known []GPU, fallback []GPU) []GPU {
	var out []GPU
	for _, f := range faults {
		if f.Bus == "" || slices.ContainsFunc(out, func(g GPU) bool { return g.Bus == f.Bus }) {
			continue
		}
		g := GPU{Bus: f.Bus, Processes: -1}
		if i := slices.IndexFunc(known, func(k GPU) bool { return k.Bus == f.Bus }); i >= 0 {
			g = known[i]
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return fallback
	}
	return out
}

// faultsOf lists the failures, each once: "xid_errors@0000:9b:00.0,nvlink".
func faultsOf(fs []Fault) string {
	var ids []string
	for _, f := range fs {
		id := f.Check
		if f.Bus != "" {
			id += "@" + f.Bus
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, ",")
}

func busList(gpus []GPU) string {
	var s []string
	for _, g := range gpus {
		s = append(s, g.Bus)
	}
	if len(s) == 0 {
		return "no GPU"
	}
	return "GPU " + strings.Join(s, ",")
}

func actionWords(action string) string {
	if action == RemedyReset {
		return "GPU reset"
	}
	return action
}

func remedyWords(r string) string {
	switch r {
	case RemedyService:
		return "service (hardware to replace, or a vendor case)"
	case RemedyAdmin:
		return "an admin (configuration or software to change)"
	case "":
		return "no known remedy"
	}
	return r
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
