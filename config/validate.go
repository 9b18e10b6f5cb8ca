package config

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ValidateConfig is the [validate] section: the tools `nodecheck validate` runs, the time each
// level may take, how long a passing validation counts, and the site's own floors
// (docs/validation.md). A floor of 0 keeps the built-in per-model floor.
type ValidateConfig struct {
	// Expiry is how long a passing validation counts: health runs warn "not validated since"
	// once the last one is older. 0: validations never expire, and health runs do not look.
	Expiry time.Duration `toml:"expiry"`
	// The tools, by absolute path: validation runs them without a shell or PATH.
	DCGMI         string `toml:"dcgmi"`
	DCGMHost      string `toml:"dcgm_host"` // dcgmi's --host
	NVBandwidth   string `toml:"nvbandwidth"`
	AllReducePerf string `toml:"all_reduce_perf"`
	IBWriteBW     string `toml:"ib_write_bw"`
	GPUBurn       string `toml:"gpu_burn"`
	NvidiaSMI     string `toml:"nvidia_smi"` // lists the GPUs' compute processes: a busy node is not validated
	// HCAs are the InfiniBand devices ib_write_bw tests; empty: every one under
	// /sys/class/infiniband.
	HCAs []string `toml:"hcas"`
	// BurnIn is how long gpu_burn loads the GPUs in the burn-in level.
	BurnIn time.Duration `toml:"burn_in"`
	// NCCLRepeats is how many times the burn-in level repeats the NCCL test.
	NCCLRepeats int `toml:"nccl_repeats"`
	// Budget is each level's wall-clock limit.
	Budget ValidateBudget `toml:"budget"`
	Floors ValidateFloors `toml:"floors"`
}

// ValidateBudget is [validate.budget]: each level's wall-clock limit on the node.
type ValidateBudget struct {
	Quick  time.Duration `toml:"quick"`
	Full   time.Duration `toml:"full"`
	BurnIn time.Duration `toml:"burn_in"`
}

// ValidateFloors is [validate.floors]: the site's floors, which replace the built-in
// per-model ones; 0 keeps the built-in floor.
type ValidateFloors struct {
	NCCLBusBW    float64 `toml:"nccl_busbw_gbps"`     // all_reduce_perf busbw at large sizes, GB/s
	NCCLNetBusBW float64 `toml:"nccl_net_busbw_gbps"` // the same with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
	H2D          float64 `toml:"h2d_gbps"`            // nvbandwidth host to device per GPU, GB/s
	D2H          float64 `toml:"d2h_gbps"`            // nvbandwidth device to host per GPU, GB/s
	D2D          float64 `toml:"d2d_gbps"`            // nvbandwidth device to device (read), per pair, GB/s
	IBWrite      float64 `toml:"ib_write_gbps"`       // ib_write_bw loopback per HCA, Gb/s
	// MemBW is the GPU memory bandwidth floor DCGM's level 3 and 4 test against, MB/s; 0
	// leaves DCGM's own per-SKU table in charge.
	MemBW float64 `toml:"mem_bw_mbps"`
	// GEMMSpread is how far below the median of the node's GPUs a GPU's gpu_burn Gflop/s
	// may fall, as a fraction: 0.10 is SuperBench's 10% rule.
	GEMMSpread float64 `toml:"gemm_spread"`
}

func defaultValidate() ValidateConfig {
	return ValidateConfig{
		DCGMI:         "/usr/bin/dcgmi",
		DCGMHost:      "localhost",
		NVBandwidth:   "/usr/local/bin/nvbandwidth",
		AllReducePerf: "/usr/bin/all_reduce_perf",
		IBWriteBW:     "/usr/bin/ib_write_bw",
		GPUBurn:       "/usr/local/bin/gpu_burn",
		NvidiaSMI:     "/usr/bin/nvidia-smi",
		BurnIn:        time.Hour,
		NCCLRepeats:   5,
		Budget:        ValidateBudget{Quick: 10 * time.Minute, Full: 45 * time.Minute, BurnIn: 4 * time.Hour},
		Floors:        ValidateFloors{GEMMSpread: 0.10},
	}
}

// validateValidate checks the [validate] section, also where no validation runs, so that the
// first validation never meets a setting that was wrong all along.
func (c *Config) validateValidate() []tomlKeyError {
	var errs []tomlKeyError
	add := func(path []string, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append([]string{"validate"}, path...), msg: fmt.Sprintf(format, args...)})
	}
	v := c.Validation
	for _, k := range []struct{ key, val string }{
		{"dcgmi", v.DCGMI}, {"nvbandwidth", v.NVBandwidth}, {"all_reduce_perf", v.AllReducePerf},
		{"ib_write_bw", v.IBWriteBW}, {"gpu_burn", v.GPUBurn}, {"nvidia_smi", v.NvidiaSMI},
	} {
		if !strings.HasPrefix(k.val, "/") {
			add([]string{k.key}, " = %q: give an absolute path: validation runs tools without a shell or PATH", k.val)
		}
	}
	if h := strings.TrimSpace(v.DCGMHost); h == "" || strings.ContainsAny(h, " \t\n") {
		add([]string{"dcgm_host"}, " = %q: give the host engine's address as dcgmi --host takes it, such as \"localhost\"", v.DCGMHost)
	}
	for i, h := range v.HCAs {
		if h == "" || strings.ContainsAny(h, "/ \t\n") || strings.HasPrefix(h, ".") {
			add([]string{"hcas"}, "[%d] = %q: give an InfiniBand device name as /sys/class/infiniband lists it, such as \"mlx5_0\"", i, h)
		}
	}
	if v.Expiry < 0 {
		add([]string{"expiry"}, " = %q: must not be negative; \"0s\" means validations never expire", v.Expiry)
	}
	if v.BurnIn <= 0 {
		add([]string{"burn_in"}, " = %q: must be positive: how long gpu_burn loads the GPUs, such as \"1h\"", v.BurnIn)
	}
	if v.NCCLRepeats < 1 || v.NCCLRepeats > 100 {
		add([]string{"nccl_repeats"}, " = %d: give 1 to 100", v.NCCLRepeats)
	}
	for _, b := range []struct {
		key string
		d   time.Duration
	}{{"quick", v.Budget.Quick}, {"full", v.Budget.Full}, {"burn_in", v.Budget.BurnIn}} {
		if b.d <= 0 {
			add([]string{"budget", b.key}, " = %q: must be positive: the level's wall-clock limit", b.d)
		}
	}
	if v.Budget.BurnIn > 0 && v.BurnIn > 0 && v.Budget.BurnIn <= v.BurnIn {
		add([]string{"budget", "burn_in"}, " = %q: must be longer than burn_in (%s): the level also runs DCGM's level 4 and NCCL", v.Budget.BurnIn, v.BurnIn)
	}
	f := v.Floors
	for _, k := range []struct {
		key string
		val float64
	}{{"nccl_busbw_gbps", f.NCCLBusBW}, {"nccl_net_busbw_gbps", f.NCCLNetBusBW}, {"h2d_gbps", f.H2D}, {"d2h_gbps", f.D2H},
		{"d2d_gbps", f.D2D}, {"ib_write_gbps", f.IBWrite}, {"mem_bw_mbps", f.MemBW}} {
		if k.val < 0 || math.IsNaN(k.val) || math.IsInf(k.val, 0) {
			add([]string{"floors", k.key}, " = %v: give 0 (the built-in floor for the GPU model) or a positive figure", k.val)
		}
	}
	if g := f.GEMMSpread; !(g > 0 && g < 1) {
		add([]string{"floors", "gemm_spread"}, " = %v: give a fraction between 0 and 1, such as 0.1 (a GPU 10%% below the node's median fails)", g)
	}
	return errs
}

// For returns level's wall-clock limit: "quick", "full" or "burn-in"; 0 for another name.
func (b ValidateBudget) For(level string) time.Duration {
	switch level {
	case "quick":
		return b.Quick
	case "full":
		return b.Full
	case "burn-in":
		return b.BurnIn
	}
	return 0
}
