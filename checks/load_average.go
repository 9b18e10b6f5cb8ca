package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

const idLoadAverage = "load_average"

// faultLoadHigh is load_average's row of the remedy table.
const faultLoadHigh fault = "load_average/high"

// loadAverage compares the 1, 5 and 15 minute load averages of /proc/loadavg with limits,
// as NHC's check_ps_loadavg does: each truncated to a whole number, at or over its limit
// fails. A GPU node's load follows its job, so no limit is set by default.
type loadAverage struct{}

func (loadAverage) ID() string { return idLoadAverage }

func (loadAverage) Description() string {
	return "the 1, 5 and 15 minute load averages are under their limits (/proc/loadavg; none by default)"
}

// loadAverageConfig is [checks.load_average]; 0 is no limit.
type loadAverageConfig struct {
	config.CheckCommon
	Max1m  int `toml:"max_1m"`
	Max5m  int `toml:"max_5m"`
	Max15m int `toml:"max_15m"`
}

func (loadAverage) Section() config.Section {
	return &loadAverageConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: []string{"health", "manual"}}}
}

// ValidateSection implements config.SectionValidator.
func (c *loadAverageConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for _, k := range []struct {
		key string
		v   int
	}{{"max_1m", c.Max1m}, {"max_5m", c.Max5m}, {"max_15m", c.Max15m}} {
		if k.v < 0 {
			out = append(out, config.Problemf(k.key, " = %d: give 0 (no limit) or more", k.v))
		}
	}
	return out
}

// parseLoadavg reads the three load averages of /proc/loadavg ("0.02 0.04 0.05 1/497 11947").
func parseLoadavg(b []byte) ([3]float64, error) {
	var out [3]float64
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("loadavg: %q: want three load averages first", strings.TrimSpace(string(b)))
	}
	for i := range 3 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return out, fmt.Errorf("loadavg: %q is not a load average", f[i])
		}
		out[i] = v
	}
	return out, nil
}

func (loadAverage) Run(ctx context.Context, env *Env) Result {
	set := settings[*loadAverageConfig](env.Config, idLoadAverage)
	limits := [3]int{set.Max1m, set.Max5m, set.Max15m}
	if limits == [3]int{} {
		return Result{Status: StatusSkip, Summary: "no load limit set in [checks.load_average]"}
	}
	b, err := env.Facts.ReadFile(ctx, "/proc/loadavg")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "no /proc/loadavg: not recorded in this snapshot, or /proc is not mounted"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read /proc/loadavg", Err: err}
	}
	load, err := parseLoadavg(b)
	if err != nil {
		return Result{Status: StatusError, Summary: "could not parse /proc/loadavg", Err: err}
	}
	return judgeLoadAverage(load, limits)
}

// judgeLoadAverage judges each load average with a limit (0: none) by NHC's rule.
func judgeLoadAverage(load [3]float64, limits [3]int) Result {
	var res Result
	for i, minutes := range []int{1, 5, 15} {
		if limits[i] == 0 {
			continue
		}
		whole := int(load[i]) // NHC drops the fraction: ${LOADAVG[$i]//.*}
		d := Detail{Device: fmt.Sprintf("load %dm", minutes), Observed: strconv.FormatFloat(load[i], 'f', 2, 64), Expected: fmt.Sprintf("under %d", limits[i])}
		if whole >= limits[i] {
			d.Message = fmt.Sprintf("%d-minute load average too high: %d >= %d", minutes, whole, limits[i])
			failDetail(&d, faultLoadHigh)
		} else {
			d.Status, d.Message = StatusOK, fmt.Sprintf("%d-minute load average %s, under %d", minutes, d.Observed, limits[i])
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, "load averages under their limits")
}

func (loadAverage) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultLoadHigh, "a load average at or over its limit", RemedyAdmin,
			"NHC check_ps_loadavg: runaway processes or tasks stuck in the kernel (state D, counted in the load) that a person looks at (top, ps -eo stat)"},
	}}
}

// Explain is what `nodecheck explain load_average` says.
func (loadAverage) Explain() Explanation {
	return Explanation{
		Reads:  []string{"/proc/loadavg: the 1, 5 and 15 minute load averages."},
		Passes: "Each load average with a limit is under it (NHC's rule: the whole part at or over the limit fails).",
		Fails:  "A load average is at or over its limit.",
		Skips:  "No limit is set (the default: a GPU node's load follows its job); a snapshot without /proc/loadavg.",
		Errors: "/proc/loadavg cannot be read or parsed.",
		Keys: map[string]string{
			"max_1m":  "Limit of the 1-minute load average; 0 is none.",
			"max_5m":  "Limit of the 5-minute load average; 0 is none.",
			"max_15m": "Limit of the 15-minute load average; 0 is none.",
		},
		Fix: []string{"top and ps -eo pid,stat,comm | awk '$2 ~ /D/' show what loads the node; tasks stuck in state D need a reboot."},
	}
}
