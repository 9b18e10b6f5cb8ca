package config

import (
	"fmt"
	"slices"
	"time"
)

// JobLeftoversConfig configures the job_leftovers check: in the epilog no compute process is
// left on the job's GPUs and their memory is released; in the prolog the job's GPUs carry no
// stray process and no held memory.
type JobLeftoversConfig struct {
	CheckCommon
	// MemoryUsedMaxMiB is the most framebuffer memory, in MiB, a GPU of the job may show as
	// used (NVML nvmlDeviceGetMemoryInfo) once no process runs on it. The default leaves room
	// for the older NVML call, whose "used" includes the driver's reserve (about 550 MiB on an
	// idle H100), while the newer one reads 0 to 4 MiB on an idle GPU.
	MemoryUsedMaxMiB int `toml:"memory_used_max_mib"`
}

// DefaultMemoryUsedMaxMiB is memory_used_max_mib's default. Idle GPUs in the captures under
// shared/corpus/nvsmi report, with nvmlDeviceGetMemoryInfo_v2 (nvidia-smi -q "FB Memory
// Usage", which leaves the reserve out): H100 80GB Used 0 MiB with Reserved 551 MiB (drivers
// 535.161.08 and 535.183.01), A10 Used 4 MiB with Reserved 512 MiB, and the 550.90.07 table
// shows 1MiB on each of 8 idle H100s. The v1 call adds the reserve to Used, so an idle H100
// reads about 551 MiB there. 1024 MiB passes an idle GPU under either call, and still fails
// a GPU that holds a CUDA context's worth of memory or more (several hundred MiB on H100
// under v2, and any real allocation).
const DefaultMemoryUsedMaxMiB = 1024

// maxMemoryUsedMaxMiB bounds memory_used_max_mib: no GPU has more than a few hundred GiB, so
// a larger value is a unit mistake (bytes, or KiB) that would turn the memory test off.
const maxMemoryUsedMaxMiB = 1 << 20

// defaultJobLeftovers runs in prolog and epilog only: outside a job nodecheck cannot tell
// which GPUs belong to whom.
func defaultJobLeftovers() JobLeftoversConfig {
	return JobLeftoversConfig{
		CheckCommon:      CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"prolog", "epilog"}},
		MemoryUsedMaxMiB: DefaultMemoryUsedMaxMiB,
	}
}

func (jl *JobLeftoversConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	if jl.MemoryUsedMaxMiB < 0 || jl.MemoryUsedMaxMiB > maxMemoryUsedMaxMiB {
		add("memory_used_max_mib", " = %d: give MiB from 0 to %d, such as %d (not bytes)", jl.MemoryUsedMaxMiB, maxMemoryUsedMaxMiB, DefaultMemoryUsedMaxMiB)
	}
	return errs
}
