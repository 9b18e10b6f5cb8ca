package config

import (
	"fmt"
	"strings"
	"time"
)

// RepairConfig is the [repair] section: whether and how health runs repair a node nodecheck
// drained (docs/repairs.md). Off by default: with repairs off nodecheck only drains.
type RepairConfig struct {
	Enabled bool `toml:"enabled"`
	// GPUReset is the command that resets GPUs, as an argument list run without a shell; the
	// argument "{gpus}" becomes the PCI bus ids of the GPUs to reset, comma-separated, as
	// nvidia-smi -i takes them.
	GPUReset     []string      `toml:"gpu_reset"`
	ResetTimeout time.Duration `toml:"reset_timeout"` // how long the reset command may take
	// Reboot lets a repair ask Slurm to reboot the node (scontrol reboot, which runs
	// RebootProgram) when the remedy is a reboot or a reset did not help.
	Reboot bool   `toml:"reboot"`
	Squeue string `toml:"squeue"` // absolute path: the jobs on the node are listed before any repair
	// MaxRepairing caps the nodes in repair across the cluster: "N" nodes or "N%".
	MaxRepairing string `toml:"max_repairing"`
	// PassesToResume is how many health runs in a row must find the repaired fault gone before
	// nodecheck returns the node to service (drain's rule for a clean run: a check that failed
	// and then only errored or skipped has not passed).
	PassesToResume int `toml:"passes_to_resume"`
	// Escalation: at GPURepairs repairs of one GPU within GPUWindow, or NodeRepairs repairs of
	// the node within NodeWindow, nodecheck stops repairing and marks the node for service.
	GPURepairs  int           `toml:"gpu_repairs"`
	GPUWindow   time.Duration `toml:"gpu_window"`
	NodeRepairs int           `toml:"node_repairs"`
	NodeWindow  time.Duration `toml:"node_window"`
}

// GPUResetPlaceholder is the argument of [repair] gpu_reset that becomes the bus ids.
const GPUResetPlaceholder = "{gpus}"

// HealthCheckLimit is how long slurmd lets HealthCheckProgram run before it kills it (max_wait
// 60 s in run_script_health_check, src/slurmd/slurmd/slurmd.c; not configurable). Repairs run
// in health runs, so a reset must end within it.
const HealthCheckLimit = 60 * time.Second

func defaultRepair() RepairConfig {
	return RepairConfig{
		Enabled:      false,
		GPUReset:     []string{"/usr/bin/nvidia-smi", "--gpu-reset", "-i", GPUResetPlaceholder},
		ResetTimeout: 30 * time.Second,
		Reboot:       true,
		Squeue:       "/usr/bin/squeue",
		MaxRepairing: "5%",
		// NHC's development branch and PR #174 keep a rebooted node drained until the checks
		// pass again; two passes in a row, as [drain] resume_after_passes.
		PassesToResume: 2,
		// NVIDIA's NVSentinel escalates a node after 5 repairs in 7 days (its analyzer's
		// repeated-repair rule, PR #1240); a GPU gets fewer: its GPU-reset design alerts after
		// 3 failed resets of one GPU (docs/designs/019-janitor-gpu-reset.md).
		GPURepairs:  3,
		GPUWindow:   7 * 24 * time.Hour,
		NodeRepairs: 5,
		NodeWindow:  7 * 24 * time.Hour,
	}
}

// ParseMaxRepairing reads max_repairing as ParseMaxDrained reads max_drained: "" no limit, "N"
// nodes, "N%" of the cluster's nodes.
func ParseMaxRepairing(s string) (n int, percent bool, err error) {
	n, percent, err = parseNodeLimit(s)
	if err == nil && n == 0 && strings.TrimSpace(s) != "" {
		return 0, false, fmt.Errorf("%q would hold back every repair: to never repair set enabled = false; for no limit use \"\"", s)
	}
	return n, percent, err
}

// validateRepair checks the [repair] section, also when it is off, so that turning it on
// never meets a setting that was wrong all along.
func (c *Config) validateRepair() []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: []string{"repair", key}, msg: fmt.Sprintf(format, args...)})
	}
	r := c.Repair
	if msg := gpuResetProblem(r.GPUReset); msg != "" {
		add("gpu_reset", ": %s", msg)
	}
	switch {
	case r.ResetTimeout <= 0:
		add("reset_timeout", " = %q: must be positive", r.ResetTimeout)
	case r.ResetTimeout >= HealthCheckLimit:
		add("reset_timeout", " = %q: repairs run in the health check, which slurmd kills after %s: give less", r.ResetTimeout, HealthCheckLimit)
	}
	if !strings.HasPrefix(r.Squeue, "/") {
		add("squeue", " = %q: give an absolute path: Slurm starts hooks without PATH", r.Squeue)
	}
	if _, _, err := ParseMaxRepairing(r.MaxRepairing); err != nil {
		add("max_repairing", ": %v", err)
	}
	for _, k := range []struct {
		key string
		n   int
		why string
	}{{"gpu_repairs", r.GPURepairs, "the repairs after which nodecheck stops repairing and marks the node for service"},
		{"node_repairs", r.NodeRepairs, "the repairs after which nodecheck stops repairing and marks the node for service"},
		{"passes_to_resume", r.PassesToResume, "the clean health runs after a repair before the node returns to service"}} {
		if k.n < 1 {
			add(k.key, " = %d: must be at least 1 (%s)", k.n, k.why)
		}
	}
	for _, k := range []struct {
		key string
		d   time.Duration
	}{{"gpu_window", r.GPUWindow}, {"node_window", r.NodeWindow}} {
		if k.d <= 0 {
			add(k.key, " = %q: must be positive (the time over which repairs are counted)", k.d)
		}
	}
	return errs
}

// gpuResetProblem says what is wrong with a gpu_reset command, or "": it is run without a
// shell, so its program must be an absolute path, and it must name the GPUs through exactly
// one "{gpus}" argument.
func gpuResetProblem(argv []string) string {
	if len(argv) == 0 {
		return `empty: give the command as a list, such as ["/usr/bin/nvidia-smi", "--gpu-reset", "-i", "{gpus}"]`
	}
	if !strings.HasPrefix(argv[0], "/") {
		return fmt.Sprintf("the program %q is not an absolute path: Slurm starts hooks without PATH, and nodecheck runs no shell", argv[0])
	}
	n := 0
	for _, a := range argv[1:] {
		n += strings.Count(a, GPUResetPlaceholder)
	}
	if n != 1 {
		return fmt.Sprintf("has %d %q arguments, want exactly one: it becomes the bus ids of the GPUs to reset (nvidia-smi -i takes them comma-separated)", n, GPUResetPlaceholder)
	}
	return ""
}
