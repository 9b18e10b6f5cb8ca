package checks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// Report is the outcome of one run.
type Report struct {
	// Node is the Slurm node the run is about: the one it acts on (Env.Target in a replay
	// for another node, else Env.Node).
	Node string      `json:"node"`
	Mode config.Mode `json:"mode"`
	// Verdict is healthy, unhealthy or undecided (verdict.go); Healthy is Verdict ==
	// VerdictHealthy, kept for the callers and the JSON key that predate the third verdict.
	Verdict   Verdict   `json:"verdict"`
	Healthy   bool      `json:"healthy"`
	StartedAt time.Time `json:"started_at"`
	Duration  time.Duration
	Results   []Result `json:"results"`
	// Interrupted is set when nodecheck was told to stop (SIGTERM, SIGINT) before the checks
	// were done: such a run is never healthy.
	Interrupted bool `json:"interrupted,omitempty"`
	// ConfigError is set when nodecheck.toml (or a Slurm file it names) could not be used:
	// no check ran, and the run is undecided.
	ConfigError string `json:"config_error,omitempty"`
	// Budget is the run's time budget and where it comes from; SlurmConf the slurm.conf the
	// run read and why that one (empty when none was found).
	Budget    Budget `json:"-"`
	SlurmConf string `json:"-"`
	// History is what the run did with the node's history, for the log; nil when no check
	// that judges over time ran.
	History *RunHistory `json:"-"`
}

// Failed returns the results whose status makes the node unhealthy, in run order.
func (r *Report) Failed() []Result { return r.withStatus(StatusFail) }

// Undecided returns the results of checks that could not decide (error), in run order.
func (r *Report) Undecided() []Result { return r.withStatus(StatusError) }

func (r *Report) withStatus(st Status) []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == st {
			out = append(out, res)
		}
	}
	return out
}

// RunOptions tunes one run.
type RunOptions struct {
	// Budget bounds the whole run from its start; zero means none.
	Budget time.Duration
	// Deadline, when set, ends the run at that time whatever Budget says (NewEnv's
	// Env.Budget.Deadline, which counts the setup before the checks too).
	Deadline time.Time
	// StopOnFirstFailure skips the checks after the first fail.
	StopOnFirstFailure bool
	// ErrorIsFailure makes an error status count against the node's health.
	ErrorIsFailure bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// RunOptions are the runner's options for env: its config's policies and its deadline.
func (e *Env) RunOptions() RunOptions {
	return RunOptions{
		Deadline:           e.Budget.Deadline,
		StopOnFirstFailure: e.Config.StopOnFirstFailure,
		ErrorIsFailure:     e.Config.ErrorIsFailure,
	}
}

// Run runs the checks in the order given, each under its own timeout and all within the
// budget, and returns every result. A check that overruns is abandoned: its goroutine may
// stay blocked in a system call or NVML, but Run returns and the process can exit.
func Run(ctx context.Context, env *Env, list []Check, o RunOptions) Report {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	rep := Report{Node: cmp.Or(env.Target, env.Node), Mode: env.Mode, StartedAt: start, Budget: env.Budget}
	if env.Slurm != nil {
		rep.SlurmConf = env.Slurm.Describe()
	}
	runCtx := ctx
	if o.Budget > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, o.Budget)
		defer cancel()
	}
	if !o.Deadline.IsZero() {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(runCtx, o.Deadline)
		defer cancel()
	}
	// Checks that judge over time share one reading of the node's history, merged with
	// what this run sees, before any of them runs (history_run.go).
	env.history = loadRunHistory(runCtx, env, list)
	rep.History = env.history.report()
	stopped := ""
	for _, c := range list {
		var res Result
		switch {
		case stopped != "":
			res = Result{Check: c.ID(), Status: StatusSkip, Summary: "not run: stop_on_first_failure after " + stopped + " failed"}
		case runCtx.Err() != nil:
			res = Result{Check: c.ID(), Status: StatusError, Summary: notRunSummary(ctx, cmp.Or(o.Budget, env.Budget.Run))}
		default:
			res = runOne(runCtx, env, c, now)
		}
		rep.Results = append(rep.Results, res)
		if res.Status == StatusFail || (o.ErrorIsFailure && res.Status == StatusError) {
			if o.StopOnFirstFailure && stopped == "" {
				stopped = c.ID()
			}
		}
	}
	rep.Duration = now().Sub(start)
	rep.Interrupted = interrupted(ctx)
	rep.Verdict = judgeRun(rep.Results, o.ErrorIsFailure, rep.Interrupted)
	rep.Healthy = rep.Verdict == VerdictHealthy
	return rep
}

func notRunSummary(parent context.Context, budget time.Duration) string {
	if interrupted(parent) {
		return "not run: nodecheck was interrupted"
	}
	if budget > 0 {
		return fmt.Sprintf("not run: the run's budget of %s was used up by earlier checks", budget)
	}
	return "not run: the run's budget was used up by earlier checks"
}

// lastResultReporter is a check that keeps its last result (nccl_allreduce, too slow to run
// in every mode) and reports it, as a skip, in the modes it does not run in.
type lastResultReporter interface {
	notRun(ctx context.Context, env *Env, why string) Result
}

// lastResultTimeout bounds reading a kept result: it is a small local file.
const lastResultTimeout = time.Second

// runOne applies the check's settings and runs it under its deadline.
func runOne(runCtx context.Context, env *Env, c Check, now func() time.Time) Result {
	set := Settings(env.Config, c)
	if !set.Enabled {
		return Result{Check: c.ID(), Status: StatusSkip, Summary: "disabled in config"}
	}
	if !slices.Contains(set.Modes, string(env.Mode)) {
		why := fmt.Sprintf("does not run in %s mode (modes = %v)", env.Mode, set.Modes)
		if r, ok := c.(lastResultReporter); ok {
			// The skip can still tell when the check last ran and what it found there.
			ctx, cancel := context.WithTimeout(runCtx, lastResultTimeout)
			defer cancel()
			res := r.notRun(ctx, env, why)
			res.Check = c.ID()
			return res
		}
		return Result{Check: c.ID(), Status: StatusSkip, Summary: why}
	}
	timeout := set.Timeout
	ctx, cancel := context.WithTimeout(runCtx, timeout)
	defer cancel()

	start := now()
	done := make(chan Result, 1) // buffered: an abandoned check must be able to finish and exit
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{Status: StatusError, Summary: fmt.Sprintf("internal error: %v", p), Err: fmt.Errorf("panic: %v", p)}
			}
		}()
		done <- c.Run(ctx, env)
	}()
	var res Result
	select {
	case res = <-done:
		// A check that gave up because its context ended is judged as timed out, whatever
		// it said: the deadline is the result.
		if ctx.Err() != nil && res.Status != StatusFail {
			res = timedOut(runCtx, ctx, timeout)
		}
	case <-ctx.Done():
		res = timedOut(runCtx, ctx, timeout)
	}
	res.Check = c.ID()
	res.Duration = now().Sub(start)
	settleRemedy(&res)
	return res
}

func timedOut(runCtx, ctx context.Context, timeout time.Duration) Result {
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return Result{Status: StatusFail, Summary: "timed out: the run's budget ran out", Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
	}
	if runCtx.Err() != nil {
		return Result{Status: StatusError, Summary: "interrupted", Err: ctx.Err()}
	}
	return Result{Status: StatusFail, Summary: fmt.Sprintf("timed out after %s", timeout), Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
}
