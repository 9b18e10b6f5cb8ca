package repair

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/text"
	"github.com/nodecheck/nodecheck/drain"
)

// StepSkipped is Apply's outcome when it could not decide: the node's state, the record or
// the lock could not be had. Nothing was changed.
const StepSkipped Step = "skipped"

// Slurm is what a repair asks of Slurm: drain's node state, listing and updates, the jobs on
// the node and a reboot through Slurm's own flow. drain.Client is the real one.
type Slurm interface {
	drain.Slurm
	Jobs(ctx context.Context, node string) ([]drain.Job, error)
	JobsArgv(node string) []string
	Reboot(ctx context.Context, node, reason string) error
	RebootArgv(node, reason string) []string
}

var _ Slurm = (*drain.Client)(nil)

// Request is one health run as a repair reads it, after drain acted on it.
type Request struct {
	Node      string
	Faults    []Fault
	GPUs      []GPU
	GPUsKnown bool
	Fabric    Fabric // the NVSwitches and Fabric Manager's state: which GPUs reset together
	BootID    string
	// Passes and PassesKnown are drain's Outcome: the clean runs in a row, this one included.
	Passes      int
	PassesKnown bool
	// State is the run's state directory ([state] dir), opened once by the run: the record
	// (RecordFile) and the runs' lock (drain.LockFile).
	State    *files.State
	LockWait time.Duration // 0: drain.DefaultLockWait
	DryRun   bool
	// DrainReason is the reason drain set, or in a dry run would set: what a dry run takes
	// the node to carry when the controller cannot be read, to show the repair plan offline.
	DrainReason string
}

// Outcome is what Apply did (or, in a dry run, would do), for the report ("repair" in the
// JSON output) and the log.
type Outcome struct {
	Action  Step   `json:"action"`
	Message string `json:"message"` // one line: what and why
	Node    string `json:"node"`
	Reason  string `json:"reason,omitempty"` // the reason the repair set (or would set)
	// Commands are the commands run in order, or only printed in a dry run.
	Commands []string `json:"commands,omitempty"`
	DryRun   bool     `json:"dry_run,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Started is the repair this run started (failed when its reset failed), Closed the
	// earlier one it closed: what the node's history records.
	Started *Entry `json:"started,omitempty"`
	Closed  *Entry `json:"closed,omitempty"`
	// Counts are the record's repair counts after the run, for the metrics; nil when the
	// record could not be read.
	Counts *Counts `json:"-"`
}

// Apply gathers what Decide needs (the node's state, the record, and when a repair may start
// the jobs on the node and the nodes in repair), decides and acts, under the runs' lock: it
// tags the node's reason within max_repairing (drain.Guard: count, tag, count again, step
// back), then resets the GPUs (run, within ResetTimeout and ctx) or asks Slurm to reboot;
// escalates; resumes. It never returns an error: everything is in the Outcome.
func Apply(ctx context.Context, s Slurm, run Runner, p Policy, r Request) Outcome {
	if p.Now == nil {
		p.Now = time.Now
	}
	a := &applier{ctx: ctx, s: s, run: run, p: p, r: r, out: Outcome{Node: r.Node, DryRun: r.DryRun}}
	if !r.State.Configured() {
		a.out.Action, a.out.Message = StepSkipped, "no state directory ([state] dir): repairs need their record, so none is made"
		return a.out
	}
	if err := a.openRecord(); err != nil {
		a.out.Action = StepSkipped
		a.out.Message = fmt.Sprintf("state directory: %v: no repair", err)
		if errors.Is(err, files.ErrLocked) {
			a.out.Message = fmt.Sprintf("%v: no repair in this run", err)
		}
		return a.out
	}
	defer a.unlock()
	rec := a.recs[r.Node]
	if a.decideAndAct(&rec) {
		a.save(rec, "")
	}
	a.out.Counts = p.countsOf(rec, r.GPUs, p.Now())
	return a.out
}

// openRecord opens the state directory, takes the runs' lock (waiting at most LockWait and
// never past ctx) and reads the record; a damaged record is a warning and starts afresh.
func (a *applier) openRecord() error {
	dir, err := a.r.State.Open()
	if err != nil {
		return err
	}
	wait := a.r.LockWait
	if wait <= 0 {
		wait = drain.DefaultLockWait
	}
	if a.unlock, err = dir.Lock(a.ctx, drain.LockFile, wait); err != nil {
		return err
	}
	data, err := dir.ReadFile(RecordFile, maxRecordSize)
	if err != nil {
		a.unlock()
		return err
	}
	a.dir = dir
	if a.recs, err = decodeRecords(data); err != nil {
		a.warn(fmt.Sprintf("%v: the repair record starts again, and earlier repairs are not counted toward escalation", err))
	}
	return nil
}

// save writes rec as the node's record (pruned to the escalation windows); why, when set,
// says what a failure to save loses. A dry run saves nothing.
func (a *applier) save(rec Record, why string) {
	if a.r.DryRun {
		return
	}
	a.recs[a.r.Node] = prune(rec, a.p.Now().Add(-max(a.p.GPUWindow, a.p.NodeWindow)))
	data, err := encodeRecords(a.recs)
	if err == nil {
		err = a.dir.WriteFile(RecordFile, data)
	}
	if err != nil {
		a.warn(fmt.Sprintf("the repair record was not saved (%v): %s", err, cmp.Or(why, "the next run may not know this repair")))
	}
}

// applier is one Apply.
type applier struct {
	ctx context.Context
	s   Slurm
	run Runner
	p   Policy
	r   Request
	out Outcome

	dir    *files.StateDir
	unlock func()
	recs   map[string]Record // the record file's nodes
}

func (a *applier) warn(w string) { a.out.Warnings = append(a.out.Warnings, w) }

// decideAndAct reads the node, decides and acts; it reports whether rec changed.
func (a *applier) decideAndAct(rec *Record) bool {
	node, err := a.s.Node(a.ctx, a.r.Node)
	plan := ""
	switch {
	case err != nil && a.r.DryRun && a.r.DrainReason != "":
		// Offline: the plan for the node as drain leaves it, idle, with no job. Only a dry run
		// assumes; a real repair acts on nothing it has not read.
		plan = fmt.Sprintf("plan, the controller not reached (%v): for the node drained as %q, idle, no job, ", err, a.r.DrainReason)
		node = drain.NodeState{Name: a.r.Node, State: "IDLE", Flags: []string{"DRAIN"}, Reason: a.r.DrainReason}
	case err != nil:
		a.out.Action, a.out.Message = StepSkipped, fmt.Sprintf("cannot read the state of node %s (%v): no repair", a.r.Node, err)
		return false
	}
	defer func() {
		if plan != "" {
			a.out.Message = plan + a.out.Message
		}
	}()
	in := Input{Node: node, Passes: a.r.Passes, PassesKnown: a.r.PassesKnown, Faults: a.r.Faults, GPUs: a.r.GPUs, GPUsKnown: a.r.GPUsKnown,
		Fabric: a.r.Fabric, BootID: a.r.BootID, Record: *rec, Now: a.p.Now()}
	switch {
	case plan != "":
		in.Total = 1 // max_repairing is not counted offline: the plan says so
		plan += "max_repairing not counted; "
	case node.OutOfService() && drain.Owned(node.Reason, a.p.Prefix) && len(a.r.Faults) > 0:
		a.gather(&in)
	}
	d := a.p.Decide(in)
	a.out.Action, a.out.Message = d.Step, d.Message
	changed := false
	if d.Close != "" && len(rec.Entries) > 0 && !a.r.DryRun {
		e := &rec.Entries[len(rec.Entries)-1]
		e.Outcome, e.Finished, e.Detail = d.Close, in.Now, joinDetail(e.Detail, d.CloseDetail)
		closed := *e
		a.out.Closed, changed = &closed, true
	}
	switch d.Step {
	case StepReset, StepReboot:
		if e := a.start(node, d, rec); e != nil {
			a.out.Started, changed = e, true
		}
	case StepEscalate:
		a.out.Reason = d.Reason
		a.act(drain.Update{Node: node.Name, State: "DRAIN", Reason: d.Reason})
	case StepResume:
		a.act(drain.Update{Node: node.Name, State: "RESUME"})
	}
	return changed
}

// gather adds the jobs on the node and the cluster's nodes in repair to in.
func (a *applier) gather(in *Input) {
	if jobs, err := a.s.Jobs(a.ctx, a.r.Node); err != nil {
		in.Jobs, in.JobsErr = -1, err.Error()
	} else {
		in.Jobs = len(jobs)
	}
	if a.p.MaxRepairing.N == 0 {
		return // no limit: nothing to count
	}
	nodes, err := a.s.Nodes(a.ctx)
	if err != nil {
		in.CountErr = err.Error()
		return
	}
	in.Total = len(nodes)
	for _, n := range nodes {
		if n.Name != a.r.Node && drain.InRepair(n, a.p.Prefix) {
			in.Repairing++
		}
	}
}

// repairWords are max_repairing's words for drain.Guard's messages.
var repairWords = drain.GuardWords{
	Key:      "max_repairing",
	Counting: "the nodes in repair",
	Carry:    "are in repair",
	Entries:  "repairs",
	Entered:  "started a repair",
	Entry:    "repair",
	Undone:   "its repair tag taken off",
	Not:      "NOT repaired, and stays drained",
	Fix:      "it waits for its turn at the next health check",
	Nothing:  "no repair",
}

// resetMargin is the time a reset needs beyond reset_timeout before it starts: the tag, the
// recount after drain.DefaultSettle, the record.
const resetMargin = 5 * time.Second

// start tags the node's reason within max_repairing, then resets the GPUs or asks for the
// reboot. It adds the entry to rec and returns it, or nil when nothing was done. A reset is
// in the record before its command runs: a run killed during it (SIGTERM at slurmd's
// HealthCheckTimeout, SIGKILL) leaves a repair that counts toward escalation, as the tag on
// the reason says one was under way.
func (a *applier) start(node drain.NodeState, d Decision, rec *Record) *Entry {
	a.out.Reason = d.Reason
	tag := drain.Update{Node: node.Name, State: "DRAIN", Reason: d.Reason}
	untag := drain.Update{Node: node.Name, State: "DRAIN", Reason: node.Reason}
	if dl, ok := a.ctx.Deadline(); ok && d.Step == StepReset && !a.r.DryRun && time.Until(dl) < a.p.ResetTimeout+resetMargin {
		// A reset cut short by the run's deadline would count as failed and the next run would
		// reboot (about 30 minutes) for a fault the reset may have cleared.
		a.out.Action, a.out.Message = StepSkipped, fmt.Sprintf("%s left of the run's budget, under reset_timeout (%s) and %s for tagging the node: no reset now, the next health check tries again",
			time.Until(dl).Round(time.Millisecond), a.p.ResetTimeout, resetMargin)
		return nil
	}
	if a.r.DryRun {
		a.update(tag)
		a.commands(d)
		a.out.Message = "dry run, would " + d.Message
		return nil
	}
	g := drain.Guard{Limit: a.p.MaxRepairing, Counts: func(n drain.NodeState) bool { return drain.InRepair(n, a.p.Prefix) },
		Settle: a.p.Settle, Now: a.p.Now, Words: repairWords}
	res := g.Enter(a.ctx, a.s, node.Name, func() bool { return a.update(tag) }, func() bool { return a.update(untag) })
	for _, w := range res.Warnings {
		a.warn(w)
	}
	if !res.Entered {
		if res.Message != "" {
			a.out.Action, a.out.Message = StepHeld, res.Message
		}
		return nil
	}
	e := *d.Entry
	if d.Step == StepReset {
		started := e
		started.Detail = resetStarted
		rec.Entries = append(rec.Entries, started)
		a.save(*rec, "a reset interrupted now would not count toward escalation")
		a.reset(&e)
		rec.Entries[len(rec.Entries)-1] = e
		return &e
	}
	a.out.Commands = append(a.out.Commands, drain.QuoteArgv(a.s.RebootArgv(node.Name, d.Reason)))
	if err := a.s.Reboot(a.ctx, node.Name, d.Reason); err != nil {
		// No reboot was asked: take the tag off so that the next run may ask again.
		a.update(untag)
		a.out.Action, a.out.Message = StepSkipped, fmt.Sprintf("the reboot request failed (%v): the node stays drained, and the next health check tries again", err)
		return nil
	}
	rec.Entries = append(rec.Entries, e)
	return &e
}

// resetStarted is the detail of a reset entry recorded before its command ran: what the
// record says when the run did not live to see the command end.
const resetStarted = "reset started; the run ended before the command did"

// reset runs the reset command for e's GPUs within ResetTimeout and the run's deadline, and
// sets e's outcome: pending when it succeeded (the next runs judge whether it helped),
// failed otherwise (the next run reboots).
func (a *applier) reset(e *Entry) {
	argv := a.p.ResetArgv(e.ResetGPUs())
	a.out.Commands = append(a.out.Commands, drain.QuoteArgv(argv))
	ctx, cancel := context.WithTimeout(a.ctx, a.p.ResetTimeout)
	defer cancel()
	code, output, err := a.run(ctx, argv)
	line := text.OneLine(strings.TrimSpace(output), 160)
	switch {
	case err != nil:
		e.Outcome, e.Detail = OutcomeFailed, fmt.Sprintf("%v: %s", err, line)
	case code != 0:
		e.Outcome, e.Detail = OutcomeFailed, fmt.Sprintf("exit %d: %s", code, line)
	default:
		e.Detail = line
		return
	}
	a.out.Action = StepReset
	a.out.Message = fmt.Sprintf("the reset of %s failed (%s): the node stays drained, and the next health check asks for a reboot", busList(e.ResetGPUs()), e.Detail)
}

// commands lists, in a dry run, the reset or reboot command a repair would run after the tag.
func (a *applier) commands(d Decision) {
	if d.Step == StepReset {
		a.out.Commands = append(a.out.Commands, drain.QuoteArgv(a.p.ResetArgv(append(slices.Clone(d.GPUs), d.Peers...))))
		return
	}
	a.out.Commands = append(a.out.Commands, drain.QuoteArgv(a.s.RebootArgv(a.r.Node, d.Reason)))
}

// update runs u (or, in a dry run, only lists it) and reports whether it ran.
func (a *applier) update(u drain.Update) bool {
	a.out.Commands = append(a.out.Commands, drain.QuoteArgv(a.s.Argv(u)))
	if a.r.DryRun {
		if !strings.HasPrefix(a.out.Message, "dry run") {
			a.out.Message = "dry run, would " + a.out.Message
		}
		return false
	}
	if err := a.s.Update(a.ctx, u); err != nil {
		a.warn(fmt.Sprintf("%s of node %s not done (%v)", strings.ToLower(u.State), u.Node, err))
		return false
	}
	return true
}

// act runs an escalation's or a resume's update; one that fails leaves the node as it was.
func (a *applier) act(u drain.Update) {
	if !a.update(u) && !a.r.DryRun {
		a.out.Action, a.out.Message = StepSkipped, fmt.Sprintf("not done, the next health check tries again: %s", a.out.Message)
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
