package slurm

// Lint's checks of how slurmd runs nodecheck: the limits slurm.conf puts on Prolog=, Epilog=
// and HealthCheckProgram= against nodecheck's budgets (given by the caller: this package does
// not read nodecheck.toml), the node states the health check runs in, and PrologFlags.

import (
	"strings"
	"time"
)

// HookBudgets are nodecheck's own limits, for lint to hold slurm.conf's against. A zero
// budget is not checked.
type HookBudgets struct {
	Prolog, Epilog, Health time.Duration
	// Margin is what a run may need past its budget: starting, finishing a drain through
	// scontrol, writing its state and exiting.
	Margin time.Duration
}

// LintOption changes what Lint checks beyond the files' own rules.
type LintOption func(*lintOptions)

type lintOptions struct {
	budgets    HookBudgets
	checkpoint time.Duration
	// noPitfalls leaves the scheduling pitfalls out: tests of the other rules use it, and
	// test the pitfalls on the same files on their own.
	noPitfalls bool
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
		l.checkJobLimit("Prolog", prolog, h.PrologLimit(), b.Prolog, b.Margin, "drains the node with \"Prolog error\" and requeues the job")
		l.checkPrologFlags(prolog)
	}
	if epilog, ok := l.sc.Setting("Epilog"); ok {
		l.checkJobLimit("Epilog", epilog, h.EpilogLimit(), b.Epilog, b.Margin, "drains the node with \"Epilog error\"")
	}
	if hc, ok := l.sc.Setting("HealthCheckProgram"); ok {
		l.checkHealth(hc, b)
	}
}

// checkJobLimit warns when slurmd kills a prolog or epilog before nodecheck's budget and
// margin are up.
func (l *linter) checkJobLimit(hook string, prog Setting, lim HookLimit, budget, margin time.Duration, then string) {
	if budget <= 0 || lim.Limit <= 0 || lim.Limit >= budget+margin {
		return
	}
	need := budget + margin
	l.emit(SeverityWarning, lim.Pos, "%s=%d gives %s=%s %s, less than nodecheck's %s budget (%s) plus %s to finish a drain and exit: slurmd kills it mid-check or mid-drain, %s: set %s=%d or more (the README suggests 120)",
		lim.Key, int(lim.Limit.Seconds()), hook, prog.Value, lim.Limit, strings.ToLower(hook), budget, margin, then, lim.Key, int(need.Seconds()))
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
	l.emit(SeverityWarning, pos, "Prolog=%s with %s: slurmd runs the prolog when a job's first step starts, not when the job is given its nodes, so salloc sessions never run it and a GPU job starts on a node before nodecheck has looked at it: set PrologFlags=Alloc (or Contain, which implies it)",
		prolog.Value, what)
}

// healthStates are the HealthCheckNodeState words that choose node states
// (read_config.c _health_node_state); with none of them Slurm runs the check in ANY state.
// START_ONLY and REBOOT_ONLY are Slurm 25.11's.
var healthStates = []string{"ANY", "ALLOC", "IDLE", "MIXED", "NONDRAINED_IDLE", "START_ONLY", "REBOOT_ONLY"}

// checkHealth warns about health checks that cannot do nodecheck's work: none after slurmd
// starts, runs closer together than nodecheck's budget, a budget past slurmd's kill, and node
// states that leave drained nodes out (then nodecheck never resumes them).
func (l *linter) checkHealth(prog Setting, b HookBudgets) {
	h := l.sc.Hooks
	interval := h.HealthCheckInterval
	ipos, intervalSet := h.Set["HealthCheckInterval"]
	switch {
	case interval == 0:
		at := prog.Pos
		if intervalSet {
			at = ipos
		}
		l.emit(SeverityWarning, at, "HealthCheckProgram=%s with no HealthCheckInterval: slurmd runs it only when slurmd starts, so nodes nodecheck drained are not checked again and never resumed: set HealthCheckInterval=300",
			prog.Value)
	case b.Health > 0 && interval < b.Health+b.Margin:
		l.emit(SeverityWarning, ipos, "HealthCheckInterval=%d is shorter than nodecheck's health budget (%s) plus %s: a run can still hold nodecheck's lock when the next starts, and that one then does nothing: set HealthCheckInterval=%d or more",
			int(interval.Seconds()), b.Health, b.Margin, int((b.Health + b.Margin).Seconds()))
	}
	if lim := h.HealthCheckLimit(); b.Health > 0 && lim.Limit > 0 && b.Health+b.Margin > lim.Limit {
		pos := prog.Pos
		if !lim.Pos.IsZero() {
			pos = lim.Pos
		}
		l.emit(SeverityWarning, pos, "nodecheck's health budget (%s) plus %s is more than %s, after which slurmd kills HealthCheckProgram=%s: a slow run is killed before it drains or resumes: lower budget.health in nodecheck.toml to %s or less",
			b.Health, b.Margin, lim, prog.Value, lim.Limit-b.Margin)
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
