package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// NCCLAllReduceConfig configures the nccl_allreduce check.
type NCCLAllReduceConfig struct {
	CheckCommon
	// Binary is nccl-tests' all_reduce_perf, or a wrapper script that sets LD_LIBRARY_PATH
	// or NCCL_* variables first: commands run with PATH and LANG only.
	Binary string `toml:"binary"`
	// Args are passed to Binary; "-g N" is added with the node's GPU count when absent.
	Args []string `toml:"args"`
	// MinBusBWGBps is the least bus bandwidth at the largest message sizes; 0: the built-in
	// table by GPU model and count.
	MinBusBWGBps float64 `toml:"min_busbw_gbps"`
	// Required makes a missing binary a fail instead of a skip.
	Required bool `toml:"required"`
	// NvidiaSMI lists the compute processes on the GPUs before a run: a node whose GPUs are
	// in use is not tested.
	NvidiaSMI string `toml:"nvidia_smi"`
	// Pgrep looks for slurmstepd before a health or epilog run: a node where a Slurm job or
	// step runs is not tested, even before the job has started on the GPUs.
	Pgrep string `toml:"pgrep"`
}

func defaultNCCLAllReduce() NCCLAllReduceConfig {
	return NCCLAllReduceConfig{
		CheckCommon: CheckCommon{Enabled: true, Timeout: 120 * time.Second, Modes: []string{"manual"}},
		Binary:      "/usr/bin/all_reduce_perf",
		Args:        []string{"-b", "8", "-e", "4G", "-f", "2"},
		NvidiaSMI:   "/usr/bin/nvidia-smi",
		Pgrep:       "/usr/bin/pgrep",
	}
}

func (n *NCCLAllReduceConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	// all_reduce_perf occupies every GPU for tens of seconds: in a prolog that is time the
	// job waits for, on GPUs it is about to use. The check skips in prolog mode anyway; this
	// says so where the admin made the choice.
	if n.Enabled && slices.Contains(n.Modes, "prolog") {
		add("modes", ": \"prolog\" is not allowed for nccl_allreduce: it occupies every GPU for tens of seconds before the job; use \"health\" (it then runs only on idle nodes) or \"manual\"")
	}
	for _, k := range []struct{ key, val string }{{"binary", n.Binary}, {"nvidia_smi", n.NvidiaSMI}, {"pgrep", n.Pgrep}} {
		if !strings.HasPrefix(k.val, "/") {
			add(k.key, " = %q: give an absolute path: Slurm hooks run without PATH", k.val)
		}
	}
	if b := n.MinBusBWGBps; b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
		add("min_busbw_gbps", " = %v: give a bus bandwidth in GB/s of 0 (the built-in table) or more, such as 390 for 8 H100 SXM", b)
	}
	return errs
}
