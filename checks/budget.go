package checks

import (
	"fmt"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// Budget is how long a whole run may take, and where that number comes from: the mode's
// budget in nodecheck.toml, kept safely below the limit after which slurmd kills the hook.
type Budget struct {
	// Run is the budget the run uses (checks, drain and all); zero means none.
	Run time.Duration
	// Configured is budget.<mode> from nodecheck.toml or its built-in default, and Key and
	// File say which ("budget.prolog", the file; File is "" for the built-in default).
	Configured time.Duration
	Key        string
	File       string
	// Slurm is the limit slurmd puts on the hook that runs in this mode (none for manual).
	Slurm slurm.HookLimit
	// Deadline is when the run must be done: the run's start plus Run; zero when no budget.
	Deadline time.Time
}

// slurmLimitFor returns the limit slurmd puts on the hook of mode m.
func slurmLimitFor(m config.Mode, h slurm.Hooks) slurm.HookLimit {
	switch m {
	case config.ModeProlog:
		return h.PrologLimit()
	case config.ModeEpilog:
		return h.EpilogLimit()
	case config.ModeHealth:
		return h.HealthCheckLimit()
	}
	return slurm.HookLimit{}
}

// underLimit is the most a run may use of Slurm's limit: the limit less a tenth, and at
// least a second less, so that the process starts, acts on the node and exits before slurmd
// kills it (a killed prolog drains the node as "Prolog error" whatever nodecheck found).
// A limit of a second or less leaves half of it.
func underLimit(limit time.Duration) time.Duration {
	margin := max(limit/10, time.Second)
	if limit <= margin {
		return limit / 2
	}
	return limit - margin
}

// BudgetFor is the budget of a run in mode m: the configured one (budget.<mode>; from file,
// "" for the built-in defaults), capped below Slurm's limit for the hook where slurm.conf (or
// Slurm's fixed health check limit) sets one. A configured budget of none gets the cap too:
// no hook may outlive slurmd's patience.
func BudgetFor(m config.Mode, b config.Budget, file string, hooks slurm.Hooks) Budget {
	out := Budget{Configured: b.For(m), Key: "budget." + string(m), File: file, Slurm: slurmLimitFor(m, hooks)}
	out.Run = out.Configured
	if out.Slurm.Limit > 0 {
		if c := underLimit(out.Slurm.Limit); out.Run == 0 || c < out.Run {
			out.Run = c
		}
	}
	return out
}

// Capped reports whether Slurm's limit cut the configured budget.
func (b Budget) Capped() bool { return b.Run != b.Configured }

// From says where the configured budget comes from: the key and the config file in force,
// "budget.prolog, /etc/nodecheck/nodecheck.toml", or "budget.prolog, built-in default" when
// no file was read.
func (b Budget) From() string {
	if b.File != "" {
		return b.Key + ", " + b.File
	}
	return b.Key + ", built-in default"
}

// String says the budget and both sources, for --details: "budget 5s (budget.prolog,
// /etc/nodecheck/nodecheck.toml; Slurm PrologEpilogTimeout 1m0s (slurm.conf:12))", or when
// Slurm's limit cut it: "budget 2s (budget.prolog, built-in default: 5s; Slurm
// PrologEpilogTimeout 3s (slurm.conf:2), less a margin)".
func (b Budget) String() string {
	run := "none"
	if b.Run > 0 {
		run = b.Run.String()
	}
	from := b.From()
	if b.Capped() {
		from += ": " + orNone(b.Configured)
	}
	lim := b.Slurm.String()
	if b.Slurm.Key != "" {
		lim = "Slurm " + lim
	}
	if b.Capped() {
		lim += ", less a margin"
	}
	return fmt.Sprintf("budget %s (%s; %s)", run, from, lim)
}

func orNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
