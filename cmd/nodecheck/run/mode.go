package run

import (
	"path/filepath"

	"github.com/nodecheck/nodecheck/config"
)

// DetectMode tells the mode from how slurmd started the process when no --mode was given.
// slurmd sets SLURM_SCRIPT_CONTEXT for prolog and epilog scripts (Slurm 21.08 and later).
// A HealthCheckProgram gets only SLURMD_NODENAME, so it is told by the program's name
// (a `nodecheck-health` link) or by SLURMD_NODENAME with no job; anything else is manual.
func DetectMode(getenv func(string) string, argv0 string) config.Mode {
	switch getenv("SLURM_SCRIPT_CONTEXT") {
	case "prolog_slurmd":
		return config.ModeProlog
	case "epilog_slurmd":
		return config.ModeEpilog
	}
	if filepath.Base(argv0) == "nodecheck-health" {
		return config.ModeHealth
	}
	if getenv("SLURMD_NODENAME") != "" && getenv("SLURM_JOB_ID") == "" && getenv("SLURM_SCRIPT_CONTEXT") == "" {
		return config.ModeHealth
	}
	return config.ModeManual
}
