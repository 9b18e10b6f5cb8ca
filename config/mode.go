package config

import (
	"fmt"
	"strings"
	"time"
)

// Mode is the context nodecheck runs in (docs/slurm.md); it picks the checks, the time
// budget and what a run may do to the node. checks, drain and config all use this one type.
type Mode string

// The modes.
const (
	ModeProlog Mode = "prolog" // slurmd's Prolog=, before a job
	ModeEpilog Mode = "epilog" // slurmd's Epilog=, after a job
	ModeHealth Mode = "health" // slurmd's HealthCheckProgram=
	ModeManual Mode = "manual" // an admin at a shell
)

// Modes returns every mode, in the order the docs list them.
func Modes() []Mode { return []Mode{ModeProlog, ModeEpilog, ModeHealth, ModeManual} }

// ModeNames returns every mode's name, as nodecheck.toml's modes lists spell them, in a new
// slice each time (a section's default Modes must not share one: decoding reuses it).
func ModeNames() []string {
	var out []string
	for _, m := range Modes() {
		out = append(out, string(m))
	}
	return out
}

// ParseMode accepts a mode name as typed on the command line, in any case.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: use prolog, epilog, health or manual", s)
}

// For returns the wall-clock limit of a whole run in mode m; zero means none. A mode that is
// none of Modes (only a bug makes one: ParseMode refuses them) gets the shortest limit any
// mode has, so that a bug can never leave a run, perhaps a prolog, without one.
func (b Budget) For(m Mode) time.Duration {
	switch m {
	case ModeProlog:
		return b.Prolog
	case ModeEpilog:
		return b.Epilog
	case ModeHealth:
		return b.Health
	case ModeManual:
		return b.Manual
	}
	var tightest time.Duration
	for _, d := range []time.Duration{b.Prolog, b.Epilog, b.Health, b.Manual} {
		if d > 0 && (tightest == 0 || d < tightest) {
			tightest = d
		}
	}
	return tightest
}

// JobHook reports whether m runs around a job (Prolog=, Epilog=): slurmctld drains the node
// when such a run exits non-zero ("Prolog error", "Epilog error") and requeues the job, so
// these runs must never exit non-zero for a fault nobody saw.
func (m Mode) JobHook() bool { return m == ModeProlog || m == ModeEpilog }

// Unattended reports whether slurmd, not a person, started the run: prolog, epilog and the
// health check act on the node as [drain] says and log what they do; a manual run reports
// and acts only when told to.
func (m Mode) Unattended() bool { return m.JobHook() || m == ModeHealth }

// CountsCleanRuns reports whether a run in m can count towards a resume: the health check,
// and a manual run an admin allows to resume (--resume). A prolog or epilog never resumes:
// it sees only the job's GPUs, and slurmd must not see a node come back mid-allocation.
func (m Mode) CountsCleanRuns() bool { return m == ModeHealth || m == ModeManual }

// Repairs reports whether a run in m may repair the node: only the health check, which
// slurmd runs on idle nodes too and whose exit status it only logs.
func (m Mode) Repairs() bool { return m == ModeHealth }
