package checks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idGPUClocks = "gpu_clocks"

// The ways gpu_clocks fails: its rows of the remedy table (Faults).
const (
	faultClocksThermal    fault = "gpu_clocks/thermal"
	faultClocksPowerBrake fault = "gpu_clocks/power_brake"
	faultClocksConfigured fault = "gpu_clocks/configured"
)

// gpuClocks judges why each GPU's clocks are below their maximum now: the clocks event reasons
// NVML reports (nvmlDeviceGetCurrentClocksEventReasons; "Clocks Event Reasons", before driver
// 535 "Clocks Throttle Reasons", in nvidia-smi -q). What each reason gives, from nvml.h's
// nvmlClocksEventReasons (go-nvml v0.13.4-1, pkg/nvml/nvml.h) and its docs
// (https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html):
//
//   - HW slowdown (0x8): fail. "HW Slowdown (reducing the core clocks by a factor of 2 or
//     more) is engaged", an "indicator of: temperature being too high; External Power Brake
//     Assertion is triggered (e.g. by the system power supply); Power draw is too high and
//     Fast Trigger protection is reducing the clocks". A job on that GPU runs at half speed
//     or less, and in a synchronous job every rank waits for it.
//   - HW thermal slowdown (0x40): fail, the same cut, "an indicator of temperature being too
//     high": the cooling does not keep the GPU under its slowdown threshold.
//   - HW power brake slowdown (0x80): fail, the same cut, "External Power Brake Assertion
//     being triggered (e.g. by the system power supply)": a power supply or the board asks
//     the GPU to slow down.
//   - SW thermal slowdown (0x20): warn. The clocks are "optimized to ensure ... Current GPU
//     temperature does not exceed GPU Max Operating Temperature; Current memory temperature
//     does not exceed Memory Max Operating Temperature": the GPU runs hot, below its slowdown.
//   - SW power cap (0x4), idle (0x1), applications clocks setting (0x2), sync boost (0x10),
//     display clock setting (0x100), board limit (0x200) and reliability (0x400) policies:
//     ok. They are the GPU's normal power management: staying under the power limit
//     ("optimized to ensure not to exceed currently set power limits"), idling ("nothing is
//     running on the GPU"), clocks an admin set, a sync boost group, and NVIDIA's own board
//     and reliability policies.
//   - A bit nvml.h does not define: warn, naming the bit.
//
// nvml.h also says HW slowdown "May be also reported during PState or clock change. This
// behavior may be removed in a later release": fail and warn take reason names, so a site
// that sees it can move hw_slowdown to warn. A reading shows the reasons at that moment: the
// check runs in the epilog (the GPU just worked), health and manual modes by default, not in
// the prolog, where every GPU idles.
type gpuClocks struct{}

func (gpuClocks) ID() string { return idGPUClocks }

func (gpuClocks) Description() string {
	return "each GPU: no HW slowdown (thermal or power brake) holding its clocks down; SW thermal slowdown warns"
}

// GPUFields implements gpuFactsUser: each GPU's clocks event reasons, model (traits) and bus id.
func (gpuClocks) GPUFields() node.GPUFields {
	return node.GPUClockEvents | node.GPUName | node.GPUPCIBusID
}

// gpuClocksConfig is [checks.gpu_clocks].
type gpuClocksConfig struct {
	config.CheckCommon
	// Fail lists the clocks event reasons that fail a GPU, by name (node.ClockEventReasonNames).
	Fail []string `toml:"fail"`
	// Warn lists those that warn. Any other reason is normal power management: ok.
	Warn []string `toml:"warn"`
}

func (gpuClocks) Section() config.Section {
	return &gpuClocksConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"epilog", "health", "manual"}},
		Fail:        []string{"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"},
		Warn:        []string{"sw_thermal_slowdown"},
	}
}

// ValidateSection implements config.SectionValidator.
func (gc *gpuClocksConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	seen := map[string]string{}
	for _, l := range []struct {
		key   string
		names []string
	}{{"fail", gc.Fail}, {"warn", gc.Warn}} {
		for _, n := range l.names {
			if _, err := node.ClockEventReasonBit(n); err != nil {
				errs = append(errs, config.Problemf(l.key, ": %v", err))
				continue
			}
			if other, ok := seen[n]; ok && other != l.key {
				errs = append(errs, config.Problemf(l.key, ": %q is in %s too: give each reason in one list", n, other))
			}
			seen[n] = l.key
		}
	}
	return errs
}

// clockMasks turns the config's lists into bit masks (names validated by ValidateSection).
func clockMasks(cfg *gpuClocksConfig) (fail, warn uint64) {
	for _, l := range []struct {
		names []string
		dst   *uint64
	}{{cfg.Fail, &fail}, {cfg.Warn, &warn}} {
		for _, n := range l.names {
			if b, err := node.ClockEventReasonBit(n); err == nil {
				*l.dst |= b
			}
		}
	}
	return fail, warn
}

// knownClockReasons are the bits nvml.h defines (go-nvml v0.13.4-1: nvmlClocksEventReasonAll).
const knownClockReasons uint64 = 0x7ff

// clockReasonText says what a reason means, for messages.
var clockReasonText = map[string]string{
	"hw_slowdown":             "HW slowdown: clocks cut by half or more",
	"hw_thermal_slowdown":     "HW thermal slowdown: too hot",
	"hw_power_brake_slowdown": "HW power brake: asserted from outside the GPU, such as by the power supply",
	"sw_thermal_slowdown":     "SW thermal slowdown: at its max operating temperature",
	"sw_power_cap":            "SW power cap",
	"gpu_idle":                "idle",
}

func (gpuClocks) Run(ctx context.Context, env *Env) Result {
	return runGPUSignal(ctx, env, clocksSignal(settings[*gpuClocksConfig](env.Config, idGPUClocks)))
}

// clocksSignal is gpu_clocks' judge under cfg.
func clocksSignal(cfg *gpuClocksConfig) gpuSignal {
	fail, warn := clockMasks(cfg)
	return gpuSignal{fact: node.GPUClockEvents, what: "clock event reasons",
		judge: func(g node.GPU) Detail { return judgeGPUClocksOne(g, fail, warn) },
		ok: func(n int) string {
			return fmt.Sprintf("no GPU slowed down by hardware or heat (%s)", countNoun(n, "GPU", "GPUs"))
		},
	}
}

// judgeGPUClocks judges every GPU's clocks event reasons under cfg.
func judgeGPUClocks(gpus []node.GPU, cfg *gpuClocksConfig) Result {
	return judgeGPUSignal(gpus, clocksSignal(cfg))
}

// judgeGPUClocksOne judges one GPU's reasons: those in fail fail it, those in warn and bits
// nvml.h does not define warn, the rest are normal.
func judgeGPUClocksOne(g node.GPU, fail, warn uint64) Detail {
	if g.ClockEvents == nil {
		return missingFact(g, "clock event reasons")
	}
	mask := g.ClockEvents.Mask
	names := node.ClockEventReasonNames(mask)
	d := Detail{Status: StatusOK, Observed: clockObserved(mask), Expected: "no " + strings.Join(node.ClockEventReasonNames(fail), ", ")}
	describe := func(m uint64) string {
		var out []string
		for _, n := range node.ClockEventReasonNames(m) {
			if t, ok := clockReasonText[n]; ok {
				out = append(out, t)
			} else {
				out = append(out, n)
			}
		}
		return strings.Join(out, "; ")
	}
	switch {
	case mask&fail != 0:
		failDetail(&d, clocksFault(mask&fail))
		d.Message = describe(mask&fail) + " (clocks event reasons 0x" + fmt.Sprintf("%x", mask) + ")"
	case mask&warn != 0:
		d.Status = StatusWarn
		d.Message = describe(mask & warn)
	case mask&^knownClockReasons != 0:
		d.Status = StatusWarn
		d.Message = "clocks event reason nvml.h does not define: " + strings.Join(node.ClockEventReasonNames(mask&^knownClockReasons), ", ")
	case len(names) == 0:
		d.Message = "clocks not held back"
	default:
		d.Message = "normal: " + describe(mask)
	}
	return d
}

// clocksFault is the fault of the failing reasons: a power brake is the power supply's, HW
// slowdown and the thermal reasons the cooling's, any other a reason the site chose to fail.
func clocksFault(failing uint64) fault {
	switch {
	case failing&node.ClockHWPowerBrakeSlowdown != 0:
		return faultClocksPowerBrake
	case failing&(node.ClockHWSlowdown|node.ClockHWThermalSlowdown|node.ClockSWThermalSlowdown) != 0:
		return faultClocksThermal
	}
	return faultClocksConfigured
}

// clockObserved is the reasons of mask as a detail shows them: "hw_slowdown, hw_power_brake_slowdown".
func clockObserved(mask uint64) string {
	names := node.ClockEventReasonNames(mask)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Faults declares the check's own rows of the remedy table.
func (gpuClocks) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultClocksThermal, "a GPU in HW slowdown or HW thermal slowdown (or a thermal reason the site fails)", RemedyService,
				"DCGM_FR_CLOCK_THROTTLE_THERMAL_NEXT (DEBUG_COOLING_MSG): verify the cooling, including fans, thermal interface material and airflow; nvml.h lists temperature first among HW slowdown's causes"},
			{faultClocksPowerBrake, "a GPU in HW power brake slowdown", RemedyService,
				"nvml.h: \"External Power Brake Assertion being triggered (e.g. by the system power supply)\": a power supply or the board's power delivery to check and replace"},
			{faultClocksConfigured, "a GPU with a clocks event reason the site put in fail (a software or policy reason)", RemedyAdmin,
				"a reason that is the GPU's own power management (power cap, application clocks, sync boost) fails only by the site's choice, and a setting changes it"},
		},
	}
}

// Explain is what `nodecheck explain gpu_clocks` says.
func (gpuClocks) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: its clocks event reasons (nvmlDeviceGetCurrentClocksEventReasons; nvmlDeviceGetCurrentClocksThrottleReasons on drivers before 535), its name and bus id.",
			"The PCI bus, only when NVML is unavailable or lists no GPU: the NVIDIA GPUs on it, to tell a CPU node from a broken one.",
		},
		Passes: "No GPU's clocks are held down by a reason in fail or warn: idle, SW power cap (staying under the power limit), applications clocks, sync boost, display clock, board limit and reliability policies are the GPU's normal power management.",
		Warns:  "A GPU reports a reason in warn (by default SW thermal slowdown: it runs at its max operating temperature, below its slowdown threshold), or a reason bit nvml.h does not define.",
		Fails:  "A GPU reports a reason in fail (by default HW slowdown, HW thermal slowdown, HW power brake slowdown): its clocks are cut by a factor of 2 or more (nvml.h), because it is too hot, its power draw tripped the fast trigger, or a power brake is asserted from outside, such as by the power supply. Jobs on it run at half speed or less.",
		Skips:  "NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus; no GPU reports clock event reasons and the model is not one that always does (consumer boards); a snapshot recorded before nodecheck read them.",
		Errors: "NVML is unavailable on a node with NVIDIA GPUs; NVML lost a GPU; or a data-centre GPU (they always report the reasons) reported none.",
		Keys: map[string]string{
			"fail": `Clocks event reasons that fail a GPU, by name: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting, board_limit, reliability (or bit_0xN). nvml.h notes that HW slowdown "may be also reported during PState or clock change": move hw_slowdown to warn where that is seen.`,
			"warn": "Clocks event reasons that warn. A reason in neither list is ok; a name may be in one list only.",
		},
		Fix: []string{
			"nvidia-smi -q -d PERFORMANCE -i N shows the reasons; nvidia-smi -q -d TEMPERATURE,POWER the temperatures and power readings behind them.",
			"HW power brake on one or all GPUs of a node: the power supplies (a failed or missing PSU, a power capping BMC policy); ipmitool sdr and the BMC's event log.",
			"HW thermal slowdown or SW thermal slowdown: the cooling (fans, liquid loop, blocked airflow, dust); compare the GPU with its neighbours (nodecheck explain gpu_thermal).",
			"If it persists with cool GPUs and good power, run dcgmi diag -r 3 and open a case with the vendor (RMA, with nvidia-bug-report.sh).",
		},
	}
}
