package checks

// The node's history in a run. When a check that judges over time (xid_errors, gpu_error_rates,
// ib_flaps) runs in the run's mode, Run reads the node's history file once, before the checks,
// folds in what this run sees (boot id, uptime, the kernel log, NVML's GPUs and counters, the
// IB ports: history_obs.go), saves it, and the checks judge from it. A run none of whose
// checks judges over time (the prolog, by default) never opens the file.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/files"
)

// HistorySetup says where a run keeps the node's history; the run fills it.
type HistorySetup struct {
	// Open opens the store the history files live in (the state directory's history/); nil
	// keeps no history, and Off says why.
	Open func() (HistoryStore, error)
	// Where names the store for messages: "/var/lib/nodecheck (from [state] dir)".
	Where string
	Off   string
	// Now is the run's time for the history: the clock at the run's start, or the snapshot's
	// taken_at in a replay, so that a sequence of snapshots replays the same on any day.
	Now time.Time
	// ReadOnly reads and judges but saves nothing (a dry run).
	ReadOnly bool
}

// HistoryStore is where the node's history files are kept between runs: the state
// directory's history/ (cmd/nodecheck/run opens it under the state directory's rule).
type HistoryStore interface {
	// Path is node's history file, for messages; an error for a name no file may have.
	Path(node string) (string, error)
	// Lock takes node's history lock, waiting at most wait and never past ctx: an error
	// wrapping files.ErrLocked when another run holds it. A read-only store locks nothing.
	Lock(ctx context.Context, node string, wait time.Duration) (unlock func(), err error)
	// Load reads node's history: a new one when there is none, and a *history.BadFileError
	// (with a new one) when the file was unusable and has been set aside.
	Load(node string, now time.Time) (*history.History, error)
	// Save writes h back atomically; an error for a read-only store.
	Save(h *history.History, now time.Time) error
	// ReadOnly reports whether Save refuses (a dry run).
	ReadOnly() bool
}

// overTime is a check that judges over time, from the node's history: Run loads the history
// before the checks when one of them runs in the run's mode.
type overTime interface {
	Check
	// observes says what the history step gathers for the check (history_obs.go).
	observes() observed
	// judgementRemedy is the remedy of one of the check's failing judgements.
	judgementRemedy(j history.Judgement) Remedy
}

// observed is what a check that judges over time needs the run to tell its history.
type observed struct {
	kernelLog bool // the kernel log (dmesg): XIDs, link lines, driver loads
	gpus      bool // NVML's GPUs: identity and error counters
	ports     bool // the InfiniBand ports' states
}

// observing is what the checks of users need gathered, together.
func observing(users []overTime) observed {
	var o observed
	for _, c := range users {
		n := c.observes()
		o.kernelLog, o.gpus, o.ports = o.kernelLog || n.kernelLog, o.gpus || n.gpus, o.ports || n.ports
	}
	return o
}

// historyTimeout bounds the history file's part of the history step: the lock and the file.
// The facts it gathers have the timeouts of the checks that judge them.
const historyTimeout = 5 * time.Second

// historyLockWait is the longest a run waits for another run of the same node to save its
// history; past it the run judges on what it read and saves nothing.
const historyLockWait = 2 * time.Second

// RunHistory is what a run did with the node's history, for the log.
type RunHistory struct {
	// File is the history file; "" when none was used.
	File string
	// Saved says the run's observation was written back.
	Saved bool
	// Off says why no history was kept; Err why a configured one could not be used.
	Off string
	Err error
	// Notes are things worth a line in the log: a bad file set aside, a lock that was not
	// had, events the merge left out.
	Notes []string
}

// runHistory is the history as the checks of a run see it.
type runHistory struct {
	RunHistory
	h   *history.History // nil when Off or Err is set, or the run had no boot id
	now time.Time
	// kernel is the kernel log as read for the run; xid_errors judges it too, so that
	// dmesg runs once.
	kernel *kernelLog
	// noBoot says why this run's observation could not be merged (no boot id).
	noBoot string
	// ports is how many IB ports the run saw, portsErr why it could not list them.
	ports    int
	portsErr error
	// bad is Load's report of a history file it set aside: the run started a fresh history,
	// which the checks say (at least a warning), since earlier events no longer count.
	bad string
}

// kernelLog is one reading of the kernel log: the output, or the result to return when it
// could not be read.
type kernelLog struct {
	out node.CmdResult
	res Result
	ok  bool
}

// usable returns the history a check judges over, or the result it gives without one: a
// skip where no history is kept (the reason named), an error where one is configured but
// could not be used ("never healthy by not looking").
func (r *runHistory) usable(what string) (*history.History, Result, bool) {
	switch {
	case r == nil:
		return nil, Result{Status: StatusSkip, Summary: what + ": no history loaded in this run"}, false
	case r.Err != nil:
		return nil, Result{Status: StatusError, Summary: what + ": the node's history cannot be used: " + r.Err.Error(), Err: r.Err}, false
	case r.Off != "":
		return nil, Result{Status: StatusSkip, Summary: what + ": no history kept: " + r.Off}, false
	case r.noBoot != "":
		return nil, Result{Status: StatusSkip, Summary: what + ": " + r.noBoot}, false
	}
	return r.h, Result{}, true
}

// needsHistory lists the checks of list that judge over time and run in env's mode.
func needsHistory(env *Env, list []Check) []overTime {
	var out []overTime
	for _, c := range list {
		ot, ok := c.(overTime)
		if !ok {
			continue
		}
		set := Settings(env.Config, c)
		if set.Enabled && slices.Contains(set.Modes, string(env.Mode)) {
			out = append(out, ot)
		}
	}
	return out
}

// loadRunHistory is the history step of a run: nil when no check of list judges over time in
// this mode. It never fails the run: what went wrong is in the result, for the checks and the
// log.
func loadRunHistory(ctx context.Context, env *Env, list []Check) *runHistory {
	users := needsHistory(env, list)
	if len(users) == 0 {
		return nil
	}
	now := cmp.Or(env.History.Now, time.Now())
	r := &runHistory{now: now}
	if observing(users).kernelLog {
		// The kernel log is read as xid_errors reads it, under its settings, once for the run.
		xcfg := settings[*xidErrorsConfig](env.Config, idXIDErrors)
		kctx, cancel := context.WithTimeout(ctx, xcfg.Timeout)
		out, res, ok := readKernelLog(kctx, env, xcfg.Dmesg)
		cancel()
		r.kernel = &kernelLog{out: out, res: res, ok: ok}
	}
	if env.History.Open == nil {
		r.Off = cmp.Or(env.History.Off, "no state directory ([state] dir is empty)")
		return r
	}
	obs := gatherObservation(ctx, env, r, observing(users))
	if obs.BootID == "" {
		r.noBoot = "no boot id in this run (" + bootIDPath + "): its events and counters cannot be placed in the node's history"
	}
	hctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	r.mergeAndSave(hctx, env, obs)
	return r
}

// mergeAndSave opens the history store, takes the node's history lock, loads the file,
// merges obs and saves it, as env.History allows.
func (r *runHistory) mergeAndSave(ctx context.Context, env *Env, obs history.Observation) {
	set := env.History
	st, err := set.Open()
	if err != nil {
		r.Err = fmt.Errorf("%s: %w", set.Where, err)
		return
	}
	if r.File, err = st.Path(env.Node); err != nil {
		r.Err = err
		return
	}
	save := !st.ReadOnly()
	if set.ReadOnly {
		r.Notes = append(r.Notes, "dry run: the history is read, not saved")
	}
	if save {
		unlock, err := st.Lock(ctx, env.Node, historyLockWait)
		switch {
		case errors.Is(err, files.ErrLocked):
			// The other run saves its own observation; this one judges on what the file
			// holds now and its own, and the next run merges again what the kernel log
			// still shows.
			save = false
			r.Notes = append(r.Notes, fmt.Sprintf("%v: this run's observation is judged, not saved", err))
		case err != nil:
			r.Err = err
			return
		default:
			defer unlock()
		}
	}
	h, err := st.Load(env.Node, r.now)
	var bad *history.BadFileError
	switch {
	case errors.As(err, &bad):
		r.bad = bad.Error()
		r.Notes = append(r.Notes, r.bad)
	case err != nil:
		r.Err = err
		return
	}
	if r.noBoot != "" {
		return // nothing to merge, and nothing to judge this run's boot by
	}
	rep := h.Merge(r.now, obs, history.DefaultLimits())
	if rep.Clock != "" {
		r.Notes = append(r.Notes, rep.Clock)
	}
	r.Notes = append(r.Notes, rep.Notes...)
	r.h = h
	if !save {
		return
	}
	if err := st.Save(h, r.now); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%v: judged on this run's observation, which is not kept", err))
		return
	}
	r.Saved = true
}

// report returns what the run did with the node's history; nil when it loaded none.
func (r *runHistory) report() *RunHistory {
	if r == nil {
		return nil
	}
	out := r.RunHistory
	return &out
}

// kernelLogRead returns the run's reading of the kernel log, nil when the history step did
// not read it.
func (r *runHistory) kernelLogRead() *kernelLog {
	if r == nil {
		return nil
	}
	return r.kernel
}

// overTimeResult is a check's result from its judgements over time: the worst status, a
// detail per judgement that is not ok, the worst one's summary first, each failing one with
// its remedy (remedy: the check's judgementRemedy). okSummary is the summary when every
// judgement is ok (or there is none).
func (r *runHistory) overTimeResult(js []history.Judgement, remedy func(history.Judgement) Remedy, okSummary, expected string) Result {
	res := Result{Status: StatusOK, Summary: okSummary, Expected: expected}
	var bad []history.Judgement
	for _, j := range js {
		if overTimeStatus(j.Status) != StatusOK {
			bad = append(bad, j)
		}
	}
	slices.SortStableFunc(bad, func(a, b history.Judgement) int {
		return overTimeStatus(b.Status).rank() - overTimeStatus(a.Status).rank()
	})
	for _, j := range bad {
		// The summary names the device first; the detail's device says it already.
		msg := strings.TrimPrefix(j.Summary, j.Device+": ")
		d := Detail{Device: j.Device, Status: overTimeStatus(j.Status), Message: msg, Observed: j.Observed, Expected: j.Expected, Subject: judgementSubject(j)}
		if d.Status == StatusFail {
			d.Remedy = remedy(j)
		}
		res.Details = append(res.Details, d)
	}
	if len(bad) > 0 {
		res.Status, res.Summary = overTimeStatus(bad[0].Status), bad[0].Summary+moreSuffix(len(bad)-1)
		res.Subject = judgementSubject(bad[0])
		res.Observed = bad[0].Observed
	}
	if r.h != nil {
		// The clock went back (or was ahead): the judgements stand on times moved back and
		// may lack a rate. Say so, at least as a warning.
		for _, j := range r.h.JudgeClock(r.now) {
			res.Details = append(res.Details, Detail{Device: j.Device, Status: StatusWarn, Message: j.Summary, Observed: j.Observed, Expected: j.Expected})
			if StatusWarn.Worse(res.Status) {
				res.Status, res.Summary = StatusWarn, j.Summary
			}
		}
	}
	if r.bad != "" {
		// Earlier events are not counted any more: say so, at least as a warning.
		res.Details = append(res.Details, Detail{Device: "history", Status: StatusWarn, Message: r.bad})
		if StatusWarn.Worse(res.Status) {
			res.Status, res.Subject = StatusWarn, Subject{}
			res.Summary = "history file unusable, a fresh one started: " + r.bad
		}
	}
	return res
}

// overTimeStatus maps a judgement's status onto a check's.
func overTimeStatus(s history.Status) Status {
	switch s {
	case history.StatusFail:
		return StatusFail
	case history.StatusWarn:
		return StatusWarn
	case history.StatusSkip:
		return StatusSkip
	}
	return StatusOK
}

// judgementSubject is the device of a judgement as a detail's subject: the GPU's identity or
// the port, from the judgement's fields.
func judgementSubject(j history.Judgement) Subject {
	switch j.Target {
	case "gpu":
		g := busSubject(j.GPU.Bus).GPU
		if j.GPU.Index >= 0 {
			g.Index, g.HasIndex = j.GPU.Index, true
		}
		g.UUID, g.Serial = j.GPU.UUID, j.GPU.Serial
		return Subject{GPU: g}
	case "port":
		ib := IBPortRef{Device: j.Port.Device, Port: j.Port.Port}
		if ib.Device == "" {
			ib.Netdev = j.Port.Netdev
		}
		return Subject{IB: ib}
	}
	return Subject{}
}
