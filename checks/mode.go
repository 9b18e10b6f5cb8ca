package checks

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// Mode is the context nodecheck runs in; it picks the checks and the time budget.
type Mode string

// The modes. See DESIGN.md section 2 for how Slurm starts each.
const (
	ModeProlog Mode = "prolog"
	ModeEpilog Mode = "epilog"
	ModeHealth Mode = "health"
	ModeManual Mode = "manual"
)

// Modes lists every mode in a stable order.
var Modes = []Mode{ModeProlog, ModeEpilog, ModeHealth, ModeManual}

// ParseMode accepts a mode name as typed on the command line.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: use prolog, epilog, health or manual", s)
}

// DetectMode tells the mode from how slurmd started the process when no --mode was given.
// slurmd sets SLURM_SCRIPT_CONTEXT for prolog and epilog scripts (Slurm 21.08 and later).
// A HealthCheckProgram gets only SLURMD_NODENAME, so it is told by the program's name
// (a `nodecheck-health` link) or by SLURMD_NODENAME with no job; anything else is manual.
func DetectMode(getenv func(string) string, argv0 string) Mode {
	switch getenv("SLURM_SCRIPT_CONTEXT") {
	case "prolog_slurmd":
		return ModeProlog
	case "epilog_slurmd":
		return ModeEpilog
	}
	if filepath.Base(argv0) == "nodecheck-health" {
		return ModeHealth
	}
	if getenv("SLURMD_NODENAME") != "" && getenv("SLURM_JOB_ID") == "" && getenv("SLURM_SCRIPT_CONTEXT") == "" {
		return ModeHealth
	}
	return ModeManual
}

// BudgetFor is the whole run's wall-clock limit in mode m; zero means none.
func BudgetFor(cfg *config.Config, m Mode) time.Duration {
	switch m {
	case ModeProlog:
		return cfg.Budget.Prolog
	case ModeEpilog:
		return cfg.Budget.Epilog
	case ModeHealth:
		return cfg.Budget.Health
	}
	return cfg.Budget.Manual
}
