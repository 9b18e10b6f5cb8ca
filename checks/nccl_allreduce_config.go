package checks

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// nccl_allreduce's settings: its [checks.nccl_allreduce] section and the built-in table of
// minimum bus bandwidths that applies where min_busbw_gbps is 0.

// ncclAllReduceConfig is [checks.nccl_allreduce].
type ncclAllReduceConfig struct {
	config.CheckCommon
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

// Section runs the check in manual mode only: it occupies every GPU for tens of seconds.
func (ncclAllReduce) Section() config.Section {
	return &ncclAllReduceConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 120 * time.Second, Modes: []string{"manual"}},
		Binary:      "/usr/bin/all_reduce_perf",
		Args:        []string{"-b", "8", "-e", "4G", "-f", "2"},
		NvidiaSMI:   "/usr/bin/nvidia-smi",
		Pgrep:       "/usr/bin/pgrep",
	}
}

// ValidateSection implements config.SectionValidator.
func (n *ncclAllReduceConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	add := func(key, format string, args ...any) { errs = append(errs, config.Problemf(key, format, args...)) }
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

// ncclThreshold is one built-in minimum bus bandwidth.
type ncclThreshold struct {
	models []string // words of the CUDA/NVML device names, matched as gpu_models rules are
	gpus   int      // ranks (GPUs) in the run
	ref    float64  // a healthy node's busbw at large sizes, GB/s, from the source
	min    float64  // the threshold: 85% of ref, rounded to 5 GB/s
	label  string   // how a summary names the entry
}

// ncclThresholds is the built-in table: busbw of all_reduce_perf at large sizes on one
// node, single process, all GPUs. Only configurations with a public reference are listed; for
// any other the check reports the figure with a warning and asks for min_busbw_gbps.
//
//   - 8x H100 80GB HBM3 (HGX/DGX H100, SXM5, NVSwitch): reference 460 GB/s. Azure's node
//     health checks accept an ND H100 v5 node at 460 GB/s at 16 GiB (Azure/azurehpc-health-checks
//     conf/nd96isr_h100_v5.conf @ 06114325: "check_nccl_allreduce 460.0 1 ... 16G");
//     NVIDIA (sjeaugey in NVIDIA/nccl-tests#212) expects a peak of
//     about 480 GB/s with NVLink SHARP (NVLS); the real 8x H100 log in testdata/nccl shows
//     465-477 GB/s at 1-4 GiB.
//   - 8x A100-SXM4 (40 and 80 GB, HGX A100, NVSwitch): reference 228 GB/s, Azure's threshold
//     for ND A100 v4 at 8 GiB and ND A100 v4 80GB at 4 GiB (conf/nd96asr_v4.conf @ 12009524,
//     conf/nd96amsr_a100_v4.conf @ 00f42e35: "check_nccl_allreduce 228.0 10 ...").
//
// The threshold is 85% of the reference: the default sweep stops at 4 GiB where Azure
// measures at 8-16 GiB (a few % lower: 465 at 1 GiB against 477 at 4 GiB in the H100 log),
// and runs vary by a few %; 15% below the reference still catches what drains are for: a
// GPU fallen back to PCIe (tens of GB/s), NVLinks or an NVSwitch lost, throttled clocks.
// On H100 it also fails a run without NVLS, which NCCL 2.17 and later use by default on
// NVSwitch nodes: about 370 GB/s (NVIDIA/nccl#2140: "busbw 370 -> 480" NVLS off/on;
// NVIDIA/nccl-tests#309: 368.76 with NVLS disabled), which means Fabric Manager's multicast
// is not working or NCCL is too old, and jobs get a fifth less than on a healthy node. A
// fleet that runs without NVLS on purpose sets min_busbw_gbps (about 315 = 85% of 370).
var ncclThresholds = []ncclThreshold{
	{models: []string{"h100 80gb hbm3"}, gpus: 8, ref: 460, min: 390, label: "8x H100 80GB HBM3"},
	{models: []string{"a100 sxm4 80gb", "a100 sxm4 40gb"}, gpus: 8, ref: 228, min: 195, label: "8x A100-SXM4"},
}

// ncclPickThreshold returns the minimum busbw and where it comes from: the config, or the
// built-in table for the GPUs of the run (their names in the "# Rank" lines, else NVML's)
// and their number (the ranks, else the -g added). 0: no threshold applies.
func ncclPickThreshold(configured float64, run NCCLRun, inv node.GPUInventory, nGPUs int) (float64, string) {
	if configured > 0 {
		return configured, "min_busbw_gbps"
	}
	models := run.Models()
	if len(models) == 0 {
		for _, g := range inv.Devices {
			if g.Name != "" && !slices.Contains(models, g.Name) {
				models = append(models, g.Name)
			}
		}
	}
	n := len(run.Ranks)
	if n == 0 {
		n = nGPUs
	}
	if t, ok := ncclLookup(models, n); ok {
		return t.min, "built-in for " + t.label
	}
	return 0, ncclNoThresholdFor(models, n)
}

// ncclLookup finds the built-in threshold for n GPUs of one model, whose NVML name has the
// words of one of the entry's models (as gpu_models rules match: containsWords).
func ncclLookup(models []string, n int) (ncclThreshold, bool) {
	if len(models) != 1 {
		return ncclThreshold{}, false
	}
	words := modelWords(models[0])
	for _, t := range ncclThresholds {
		if t.gpus != n {
			continue
		}
		for _, m := range t.models {
			if containsWords(words, modelWords(m)) {
				return t, true
			}
		}
	}
	return ncclThreshold{}, false
}

func ncclNoThresholdFor(models []string, n int) string {
	what := "these GPUs"
	switch len(models) {
	case 0:
	case 1:
		what = models[0]
	default:
		what = "mixed GPUs " + strings.Join(models, " + ")
	}
	if n > 0 {
		what += fmt.Sprintf(" x%d", n)
	}
	return "no threshold for " + what + ": set min_busbw_gbps"
}
