package config

// DrainConfig is the [drain] section: how nodecheck acts on Slurm.
type DrainConfig struct {
	Enabled           bool   `toml:"enabled"`             // drain on failure (prolog, epilog, health)
	ReasonPrefix      string `toml:"reason_prefix"`       // marks nodecheck's own drains
	Scontrol          string `toml:"scontrol"`            // absolute path: hooks get no PATH
	Sinfo             string `toml:"sinfo"`               // absolute path
	Resume            bool   `toml:"resume"`              // resume nodes nodecheck drained, once healthy
	ResumeAfterPasses int    `toml:"resume_after_passes"` // consecutive clean health runs before resuming
	MaxDrained        string `toml:"max_drained"`         // "10" nodes or "5%" of the cluster; "" no limit
}

// StateConfig is the [state] section.
type StateConfig struct {
	Dir string `toml:"dir"` // pass counters, last NCCL result, lock
}

func defaultDrain() DrainConfig {
	return DrainConfig{
		Enabled:           true,
		ReasonPrefix:      "nodecheck:",
		Scontrol:          "/usr/bin/scontrol",
		Sinfo:             "/usr/bin/sinfo",
		Resume:            true,
		ResumeAfterPasses: 2,
		MaxDrained:        "10%",
	}
}

func defaultState() StateConfig { return StateConfig{Dir: "/var/lib/nodecheck"} }
