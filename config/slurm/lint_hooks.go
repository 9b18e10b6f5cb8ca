package slurm

// Lint's checks of how slurmd runs nodecheck: the limits slurm.conf puts on Prolog=, Epilog=
// and HealthCheckProgram= against nodecheck's budgets (given by the caller: this package does
// not read nodecheck.toml), the node states the health check runs in, and PrologFlags.

import (
	"fmt"
	"strings"
	"time"
)

// HookBudgets are nodecheck's own limits, for lint to hold slurm.conf's against. A zero
// budget is not checked.
type HookBudgets struct {
	Prolog, Epilog, Health time.Duration
	// Margin is the least a run keeps between its end and the limit slurmd puts on the hook
	// (to start, finish a drain, write its state and exit); it keeps a tenth of the limit when
	// that is more. This is the rule nodecheck run follows when it cuts its budget to fit
	// Slurm's limit (checks.BudgetFor: a second, or a tenth).
	Margin time.Duration
}

// usable is what a run may use of Slurm's limit: the limit less max(a tenth, margin); half
// the limit when that leaves nothing.
func (b HookBudgets) usable(limit time.Duration) time.Duration {
	m := max(limit/10, b.Margin)
	if limit <= m {
		return limit / 2
	}
	return limit - m
}

// limitFor returns the smallest whole number of seconds whose usable part holds budget.
func (b HookBudgets) limitFor(budget time.Duration) int {
	for s := int((budget + b.Margin).Seconds()); ; s++ {
		if b.usable(time.Duration(s)*time.Second) >= budget {
			return s
		}
	}
}

// LintOption changes what Lint checks beyond the files' own rules.
type LintOption func(*lintOptions)

type lintOptions struct {
	budgets    HookBudgets
	checkpoint time.Duration
	repairs    bool // [repair] is on: checkHealthRuns
	reboots    bool // and may reboot: checkRepairs
	// noPitfalls leaves the scheduling pitfalls out: tests of the other rules use it, and
	// test the pitfalls on the same files on their own.
	noPitfalls bool
	// isolation, cgroup and cgroupPath are WithCgroupConf's: checkIsolation runs only when
	// the caller has looked for cgroup.conf.
	isolation  bool
	cgroup     *CgroupConf
	cgroupPath string
}

// withoutPitfalls is the test-only option that sets noPitfalls.
func withoutPitfalls() LintOption { return func(o *lintOptions) { o.noPitfalls = true } }

// WithHookBudgets has Lint check slurm.conf's hook limits against nodecheck's budgets.
func WithHookBudgets(b HookBudgets) LintOption {
	return func(o *lintOptions) { o.budgets = b }
}

// WithCheckpointWindow sets the time a preempted job needs to checkpoint, against which Lint
// holds GraceTime; DefaultCheckpointWindow unless given.
func WithCheckpointWindow(d time.Duration) LintOption {
	return func(o *lintOptions) {
		if d > 0 {
			o.checkpoint = d
		}
	}
}

// checkHooks reports limits that leave nodecheck less time than its budget, health checks
// that never reach drained nodes, and a prolog that runs too late for GPU jobs. Each applies
// only where slurm.conf names the program (Prolog=, Epilog=, HealthCheckProgram=).
func (l *linter) checkHooks() {
	h := l.sc.Hooks
	b := l.opts.budgets
	if prolog, ok := l.sc.Setting("Prolog"); ok {
		l.checkLimit("Prolog", "prolog", prolog, h.PrologLimit(), b.Prolog)
		l.checkPrologFlags(prolog)
	}
	if epilog, ok := l.sc.Setting("Epilog"); ok {
		l.checkLimit("Epilog", "epilog", epilog, h.EpilogLimit(), b.Epilog)
	}
	if hc, ok := l.sc.Setting("HealthCheckProgram"); ok {
		l.checkLimit("HealthCheckProgram", "health", hc, h.HealthCheckLimit(), b.Health)
		l.checkHealth(hc, b)
	}
}

// checkLimit warns when the limit slurmd puts on a hook, less nodecheck's margin, is below
// nodecheck's budget for that mode: nodecheck then runs with the smaller budget (it never
// outlives the limit), and the checks that do not fit in it time out or do not run.
func (l *linter) checkLimit(key, mode string, prog Setting, lim HookLimit, budget time.Duration) {
	b := l.opts.budgets
	if budget <= 0 || lim.Limit <= 0 || b.usable(lim.Limit) >= budget {
		return
	}
	pos, fix := lim.Pos, fmt.Sprintf("set %s=%d or more", lim.Key, b.limitFor(budget))
	if lim.Key == "" {
		// Slurm's fixed health check limit: only nodecheck's budget can give.
		pos, fix = prog.Pos, fmt.Sprintf("lower budget.%s in nodecheck.toml to %s or less", mode, b.usable(lim.Limit))
	}
	l.emit(SeverityWarning, pos, "%s=%s gets %s, so nodecheck cuts its %s budget (%s) to %s, keeping a margin to finish a drain and exit before slurmd kills it: checks that do not fit time out or do not run: %s",
		key, prog.Value, lim, mode, budget, b.usable(lim.Limit), fix)
}

// checkPrologFlags warns when the prolog of GPU nodes runs at the first step rather than at
// allocation (PrologFlags without Alloc or Contain, which implies Alloc).
func (l *linter) checkPrologFlags(prolog Setting) {
	gpus := false
	for _, n := range l.sc.Nodes {
		if n.GPUCount() > 0 {
			gpus = true
			break
		}
	}
	if !gpus {
		return
	}
	for _, f := range l.sc.Hooks.PrologFlags {
		if strings.EqualFold(f, "Alloc") || strings.EqualFold(f, "Contain") {
			return
		}
	}
	pos, what := prolog.Pos, "no PrologFlags"
	if p, ok := l.sc.Hooks.Set["PrologFlags"]; ok {
		pos, what = p, "PrologFlags="+strings.Join(l.sc.Hooks.PrologFlags, ",")
	}
	// Word it by what the prolog is: the site's own prolog is not nodecheck.
	before := "nodecheck has looked at it"
	if !isNodecheck(prolog.Value) {
		before = "its prolog has run"
	}
	l.emit(SeverityWarning, pos, "Prolog=%s with %s: slurmd runs the prolog when a job's first step starts, not when the job is given its nodes, so salloc sessions never run it and a GPU job starts on a node before %s: set PrologFlags=Alloc (or Contain, which implies it)",
		prolog.Value, what, before)
}

// healthStates are the HealthCheckNodeState words that choose node states
// (read_config.c _health_node_state); with none of them Slurm runs the check in ANY state.
// START_ONLY and REBOOT_ONLY are Slurm 25.11's.
var healthStates = []string{"ANY", "ALLOC", "IDLE", "MIXED", "NONDRAINED_IDLE", "START_ONLY", "REBOOT_ONLY"}

// checkHealth warns about health checks that cannot do nodecheck's work: none after slurmd
// starts, runs closer together than a run may take, and node states that leave drained nodes
// out (then nodecheck never resumes them).
func (l *linter) checkHealth(prog Setting, b HookBudgets) {
	h := l.sc.Hooks
	interval := h.HealthCheckInterval
	ipos, intervalSet := h.Set["HealthCheckInterval"]
	run := b.Health
	if lim := h.HealthCheckLimit().Limit; lim > 0 && (run == 0 || b.usable(lim) < run) {
		run = b.usable(lim)
	}
	switch {
	case interval == 0:
		at := prog.Pos
		if intervalSet {
			at = ipos
		}
		l.emit(SeverityWarning, at, "HealthCheckProgram=%s with no HealthCheckInterval: slurmd runs it only when slurmd starts, so nodes nodecheck drained are not checked again and never resumed: set HealthCheckInterval=300",
			prog.Value)
	case b.Health > 0 && interval <= run:
		l.emit(SeverityWarning, ipos, "HealthCheckInterval=%d is not longer than a health run may take (%s): a run can still hold nodecheck's lock when the next starts, and that one then does nothing: set HealthCheckInterval=%d or more",
			int(interval.Seconds()), run, int(run.Seconds())+max(int(b.Margin.Seconds()), 1))
	}
	states := h.HealthCheckNodeState
	if len(states) == 0 {
		return // Slurm's default is ANY
	}
	for _, s := range states {
		if strings.EqualFold(s, "ANY") || strings.EqualFold(s, "IDLE") {
			return
		}
	}
	known := false
	for _, s := range states {
		known = known || confContainsFold(healthStates, s)
	}
	if !known {
		return // CYCLE alone or unknown words: Slurm takes ANY
	}
	l.emit(SeverityWarning, h.Set["HealthCheckNodeState"], "HealthCheckNodeState=%s runs the health check on no drained node (a drained node without jobs is IDLE; NONDRAINED_IDLE leaves it out), so nodes nodecheck drained are never checked again and never resumed: set HealthCheckNodeState=ANY (or add IDLE)",
		strings.Join(states, ","))
}
