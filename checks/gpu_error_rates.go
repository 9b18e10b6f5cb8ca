package checks

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idGPUErrorRates = "gpu_error_rates"

// The ways gpu_error_rates fails: its rows of the remedy table (Faults).
const (
	faultRateECC    fault = "gpu_error_rates/ecc_corrected"
	faultRateNVLink fault = "gpu_error_rates/nvlink"
	faultRatePCIe   fault = "gpu_error_rates/pcie_replay"
)

// gpuErrorRates judges how fast a GPU's error counters climb, from the counters each run
// samples into the node's history: correctable ECC errors (volatile), NVLink CRC, replay and
// recovery errors, PCIe replays. One run sees a count, which says little (a GPU corrects
// errors all its life); two readings and their times give a rate, and a rate far above the
// fleet's is a GPU going bad (NVSentinel #1748: 4,647/s rising to 17,657/s under load, never
// surfaced). A rate is never taken across a restart of the counters (driver reload, GPU
// reset, reboot).
type gpuErrorRates struct{}

func (gpuErrorRates) ID() string { return idGPUErrorRates }

func (gpuErrorRates) Description() string {
	return "GPU error counters (correctable ECC, NVLink CRC/replay/recovery, PCIe replay) climb below their warn and fail rates per hour (from the node's history)"
}

// observes: NVML's GPUs, with their error counters.
func (gpuErrorRates) observes() observed { return observed{gpus: true} }

// judgementRemedy is the remedy of a counter's rate, by the counter's row.
func (gpuErrorRates) judgementRemedy(j history.Judgement) Remedy {
	switch {
	case j.Rule == "rate_"+history.ECCCorrected.ID():
		return remedyOf(faultRateECC)
	case j.Rule == "rate_"+history.PCIeReplay.ID():
		return remedyOf(faultRatePCIe)
	case strings.HasPrefix(j.Rule, "rate_nvlink"):
		return remedyOf(faultRateNVLink)
	}
	return ""
}

// GPUFields implements gpuFactsUser: what the history step records of each GPU for the rates,
// its identity and its counters (historyGPUFields).
func (gpuErrorRates) GPUFields() node.GPUFields {
	return historyGPUIdentity | historyGPUCounters
}

// gpuErrorRatesConfig is [checks.gpu_error_rates]: a warn and a fail rate per hour for each
// counter (0 turns a level off), the least time between the two readings of a rate, and how
// far back the worst rate is looked for. The defaults and their sources are history's
// DefaultRules.
type gpuErrorRatesConfig struct {
	config.CheckCommon
	ECCCorrectedWarn   float64       `toml:"ecc_corrected_warn_per_hour"`
	ECCCorrectedFail   float64       `toml:"ecc_corrected_fail_per_hour"`
	NVLinkCRCWarn      float64       `toml:"nvlink_crc_warn_per_hour"`
	NVLinkCRCFail      float64       `toml:"nvlink_crc_fail_per_hour"`
	NVLinkReplayWarn   float64       `toml:"nvlink_replay_warn_per_hour"`
	NVLinkReplayFail   float64       `toml:"nvlink_replay_fail_per_hour"`
	NVLinkRecoveryWarn float64       `toml:"nvlink_recovery_warn_per_hour"`
	NVLinkRecoveryFail float64       `toml:"nvlink_recovery_fail_per_hour"`
	PCIeReplayWarn     float64       `toml:"pcie_replay_warn_per_hour"`
	PCIeReplayFail     float64       `toml:"pcie_replay_fail_per_hour"`
	MinSpan            time.Duration `toml:"min_span"`
	Window             time.Duration `toml:"window"`
}

// Section runs the check in health and manual modes: a prolog does not read the history.
func (gpuErrorRates) Section() config.Section {
	r := history.DefaultRules()
	c := &gpuErrorRatesConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		MinSpan:     r.MinSpan, Window: r.RateWindow,
	}
	for i, lv := range c.levels() {
		*lv.warn, *lv.fail = r.Rates[i].Warn, r.Rates[i].Fail
	}
	return c
}

// rateLevel is one counter's pair of keys.
type rateLevel struct {
	counter    history.Counter
	warn, fail *float64
}

// levels lists the counters' keys in history.Counter order.
func (c *gpuErrorRatesConfig) levels() [history.NumCounters]rateLevel {
	return [history.NumCounters]rateLevel{
		{history.ECCCorrected, &c.ECCCorrectedWarn, &c.ECCCorrectedFail},
		{history.NVLinkCRC, &c.NVLinkCRCWarn, &c.NVLinkCRCFail},
		{history.NVLinkReplay, &c.NVLinkReplayWarn, &c.NVLinkReplayFail},
		{history.NVLinkRecovery, &c.NVLinkRecoveryWarn, &c.NVLinkRecoveryFail},
		{history.PCIeReplay, &c.PCIeReplayWarn, &c.PCIeReplayFail},
	}
}

// ValidateSection implements config.SectionValidator.
func (c *gpuErrorRatesConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	for _, lv := range c.levels() {
		w, f := *lv.warn, *lv.fail
		for _, k := range []struct {
			key string
			v   float64
		}{{lv.counter.ID() + "_warn_per_hour", w}, {lv.counter.ID() + "_fail_per_hour", f}} {
			if k.v < 0 || math.IsNaN(k.v) || math.IsInf(k.v, 0) {
				errs = append(errs, config.Problemf(k.key, " = %v: give a rate per hour of 0 (off) or more", k.v))
			}
		}
		if w > 0 && f > 0 && w > f {
			errs = append(errs, config.Problemf(lv.counter.ID()+"_warn_per_hour", " = %v is above %s_fail_per_hour = %v: the GPU would fail before it warns", w, lv.counter.ID(), f))
		}
	}
	if c.MinSpan <= 0 {
		errs = append(errs, config.Problemf("min_span", ` = "%s": give the least time between two readings of a rate, such as "5m"`, c.MinSpan))
	}
	if c.Window < c.MinSpan {
		errs = append(errs, config.Problemf("window", ` = "%s" is shorter than min_span = "%s": no rate would fit in it`, c.Window, c.MinSpan))
	}
	return errs
}

// rules puts the section onto the history's defaults (keeping their sources).
func (c *gpuErrorRatesConfig) rules(r history.Rules) history.Rules {
	for i, lv := range c.levels() {
		r.Rates[i].Warn, r.Rates[i].Fail = *lv.warn, *lv.fail
	}
	r.MinSpan, r.RateWindow = c.MinSpan, c.Window
	return r
}

func (gpuErrorRates) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*gpuErrorRatesConfig](env.Config, idGPUErrorRates)
	inv, invErr := env.Facts.GPUs(ctx)
	if invErr == nil && inv.Init == nvmlNoLibrary {
		return Result{Status: StatusSkip, Summary: "no NVIDIA driver here (NVML " + nvmlNoLibrary + "): no GPU counters"}
	}
	h, res, ok := env.history.usable("counter rates")
	if !ok {
		return res
	}
	js := h.JudgeRates(env.history.now, cfg.rules(history.DefaultRules()))
	if len(js) == 0 {
		return Result{Status: StatusSkip, Summary: "no GPU counter sampled in this boot (NVML read no correctable ECC, NVLink error or PCIe replay counter)"}
	}
	return judgeRates(env.history, js, cfg)
}

// judgeRates gives the result of the rate judgements js: a failing or warning counter first;
// all ok says the rates; none rated yet (a first reading) is a skip that says when a rate
// can be had.
func judgeRates(r *runHistory, js []history.Judgement, cfg *gpuErrorRatesConfig) Result {
	rated, waiting := 0, ""
	for _, j := range js {
		switch j.Status {
		case history.StatusOK:
			rated++
		case history.StatusSkip:
			waiting = j.Summary
		}
	}
	okSummary := fmt.Sprintf("%s: every counter below its warn rate (worst over %s)", countNoun(rated, "GPU", "GPUs"), history.Human(cfg.Window))
	res := r.overTimeResult(js, gpuErrorRates{}.judgementRemedy, okSummary, "each counter below its warn and fail rate per hour")
	if res.Status == StatusSkip && rated > 0 {
		// Some GPUs have a rate and are fine, others only a first reading: the node is judged.
		res.Status, res.Summary = StatusOK, okSummary+fmt.Sprintf("; %d without a rate yet", len(res.Details))
	}
	if res.Status == StatusSkip && rated == 0 && waiting != "" {
		res.Summary = fmt.Sprintf("no rate yet on %s: one reading of the counters so far; a rate needs two at least %s apart", countNoun(len(js), "GPU", "GPUs"), history.Human(cfg.MinSpan))
	}
	return res
}

// Faults declares the check's own rows of the remedy table.
func (gpuErrorRates) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultRateECC, "correctable ECC errors climbing at the fail rate (history)", RemedyService,
				"the XID catalog's XID 92, high single-bit ECC error rate: investigatory action CONTACT_SUPPORT; DCGM's DCGM_FR_SBE_VIOLATION: run a field diagnostic (dcgmi diag -r 3) and replace the GPU when it persists"},
			{faultRateNVLink, "NVLink CRC, replay or recovery errors climbing at the fail rate (history)", RemedyResetGPU,
				"the XID catalog's XID 74 (NVLink error): \"A GPU reset or node reboot is needed to clear this error\"; DCGM_FR_NVLINK_ERROR_THRESHOLD: a reset retrains the links, a vendor case if they keep erring"},
			{faultRatePCIe, "PCIe replays climbing at the fail rate (history)", RemedyService,
				"DCGM_FR_PCI_REPLAY_RATE: \"Reconnect PCIe card. Run system side PCIE diagnostic utilities to verify hops off the GPU board. If issue is on the board, run the field diagnostic.\""},
		},
	}
}

// Explain is what `nodecheck explain gpu_error_rates` says.
func (gpuErrorRates) Explain() Explanation {
	r := history.DefaultRules()
	return Explanation{
		Reads: []string{
			"The node's history (<state dir>/history/<node>.json), with this run's NVML counters added: the volatile correctable ECC count, NVLink CRC (flit + data), replay and recovery errors summed over links, and the PCIe replay counter, each with its time.",
		},
		Passes: "Every counter of every GPU climbs below its warn rate: the worst rate over window, between readings at least min_span apart, taken backwards from the newest reading.",
		Warns:  "A counter climbs at its warn rate or more. Sources: correctable ECC " + r.Rates[history.ECCCorrected].Source + "; NVLink CRC " + r.Rates[history.NVLinkCRC].Source + "; PCIe " + r.Rates[history.PCIeReplay].Source + ". Also, for a day, when the history held times after the run's (the node's clock went back, or was ahead when they were written): they were moved back, and the readings that could not be placed left out; the warning names the times.",
		Fails:  "A counter climbs at its fail rate or more: the summary names the GPU (bus id, UUID, serial), the counter, the increase, the readings' times and the rate. NVLink replays and recoveries: " + r.Rates[history.NVLinkReplay].Source + ". The same increase over a longer time is a lower rate: 100,000 correctable errors between readings an hour apart is 100,000/h, a week apart 595/h. A rate is never taken across a driver reload, GPU reset or reboot (the counters restart at 0).",
		Skips:  "No history is kept in this run (a snapshot replay without --state-dir, [state] dir empty), the run had no boot id, no NVIDIA driver, NVML read none of the counters, or only one reading so far (a rate needs two at least min_span apart).",
		Errors: "A state directory is configured but cannot be used (not root-owned, writable by others, a symlink, cannot be created): the summary names it and the fix.",
		Keys: map[string]string{
			"ecc_corrected_warn_per_hour":   "Correctable ECC errors (volatile) per hour that warn; 0 never warns.",
			"ecc_corrected_fail_per_hour":   "Correctable ECC errors per hour that fail; 0 never fails.",
			"nvlink_crc_warn_per_hour":      "NVLink CRC errors (flit and data, all links) per hour that warn.",
			"nvlink_crc_fail_per_hour":      "NVLink CRC errors per hour that fail.",
			"nvlink_replay_warn_per_hour":   "NVLink replay errors per hour that warn.",
			"nvlink_replay_fail_per_hour":   "NVLink replay errors per hour that fail.",
			"nvlink_recovery_warn_per_hour": "NVLink recovery errors per hour that warn.",
			"nvlink_recovery_fail_per_hour": "NVLink recovery errors per hour that fail.",
			"pcie_replay_warn_per_hour":     "PCIe replays per hour that warn.",
			"pcie_replay_fail_per_hour":     "PCIe replays per hour that fail.",
			"min_span":                      "The least time between the two readings of a rate: readings seconds apart make a noisy rate of a handful of errors.",
			"window":                        "How far back the worst rate is looked for: a GPU that climbs fast under load still fails, idle, for this long.",
		},
		Fix: []string{
			"nodecheck history --gpu BUS: the readings, their times, and when the counters restarted.",
			"Correctable ECC climbing fast: drain the node and run field diagnostics (dcgmi diag -r 3); a GPU whose rows keep being remapped goes to the vendor.",
			"NVLink or PCIe errors climbing: reseat the GPU or its baseboard connection; look at nvidia-smi nvlink -e and the PCIe link (pcie_link).",
			"nodecheck history clear --gpu BUS --reason \"...\" after a repair (a GPU reset, driver reload or reboot restarts the counters anyway).",
			fmt.Sprintf(afterFix, idGPUErrorRates),
		},
	}
}
