package config

import "time"

// NCCLAllReduceConfig configures the nccl_allreduce check.
type NCCLAllReduceConfig struct {
	CheckCommon
	// Binary is nccl-tests' all_reduce_perf.
	Binary string `toml:"binary"`
	// Args are passed to Binary; "-g N" is added with the node's GPU count when absent.
	Args []string `toml:"args"`
	// MinBusBWGBps is the least bus bandwidth at the largest message sizes; 0: the built-in
	// table by GPU model and count.
	MinBusBWGBps float64 `toml:"min_busbw_gbps"`
	// Required makes a missing binary a fail instead of a skip.
	Required bool `toml:"required"`
}

func defaultNCCLAllReduce() NCCLAllReduceConfig {
	return NCCLAllReduceConfig{
		CheckCommon: CheckCommon{Enabled: true, Timeout: 120 * time.Second, Modes: []string{"manual"}},
		Binary:      "/usr/bin/all_reduce_perf",
		Args:        []string{"-b", "8", "-e", "4G", "-f", "2"},
	}
}
