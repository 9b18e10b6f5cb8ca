package checks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idGPUThermal = "gpu_thermal"

// The ways gpu_thermal fails: its rows of the remedy table (Faults).
const (
	faultThermalHot fault = "gpu_thermal/hot"
)

// gpuThermal judges each GPU's temperature against the GPU's own limits, as NVML reports them
// (nvml.h nvmlTemperatureThresholds_t), never against a number of ours:
//
//   - At or over its shutdown temperature (NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, "Temperature
//     at which the GPU will shut down for HW protection"): fail.
//   - At or over its slowdown temperature (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, "Temperature
//     at which the GPU will begin HW slowdown"): fail by default (slowdown = "warn" to warn).
//     HW slowdown is what gpu_clocks fails as HW thermal slowdown: nvml.h, "reducing the
//     core clocks by a factor of 2 or more". A GPU there runs jobs at half speed or less, and
//     the cooling does not keep up with it; the two checks agree.
//   - At or over its max operating temperature (NVML_TEMPERATURE_THRESHOLD_GPU_MAX, "GPU
//     Temperature at which the GPU can be throttled below base clock"): warn.
//   - HBM at or over its max operating temperature (NVML_FI_DEV_MEMORY_TEMP against
//     NVML_TEMPERATURE_THRESHOLD_MEM_MAX, "Memory Temperature at which the GPU will begin SW
//     slowdown"): warn, as gpu_clocks warns on SW thermal slowdown.
//
// Ada, Hopper and later GPUs state the limits relative to the GPU's T.Limit (nvml.h: the
// NVML_FI_DEV_TEMPERATURE_*_TLIMIT fields "supersede nvmlDeviceGetTemperatureThreshold"
// there, and nvidia-smi 535 and later prints only them: "GPU T.Limit Temp : 57 C", "GPU
// Slowdown T.Limit Temp : -2 C"): the GPU is that many C below T.Limit now, and slows down
// when the margin falls to the slowdown value. The same rules apply to margins, where the
// absolute thresholds are not given.
type gpuThermal struct{}

func (gpuThermal) ID() string { return idGPUThermal }

func (gpuThermal) Description() string {
	return "each GPU under its own slowdown and shutdown temperatures; at its max operating temperature (GPU or HBM) warns"
}

// GPUFields implements gpuFactsUser: each GPU's temperatures, model (traits) and bus id.
func (gpuThermal) GPUFields() node.GPUFields {
	return node.GPUThermal | node.GPUName | node.GPUPCIBusID
}

// gpuThermalConfig is [checks.gpu_thermal].
type gpuThermalConfig struct {
	config.CheckCommon
	// Slowdown is what a GPU at or over its slowdown temperature gives: "fail" or "warn".
	Slowdown string `toml:"slowdown"`
}

func (gpuThermal) Section() config.Section {
	return &gpuThermalConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"epilog", "health", "manual"}},
		Slowdown:    verdictFail,
	}
}

// ValidateSection implements config.SectionValidator.
func (gt *gpuThermalConfig) ValidateSection() []config.Problem {
	if gt.Slowdown != verdictFail && gt.Slowdown != verdictWarn {
		return []config.Problem{config.Problemf("slowdown", " = %q: give \"fail\" or \"warn\": what a GPU at or over its slowdown temperature gives", gt.Slowdown)}
	}
	return nil
}

func (gpuThermal) Run(ctx context.Context, env *Env) Result {
	return runGPUSignal(ctx, env, thermalSignal(settings[*gpuThermalConfig](env.Config, idGPUThermal)))
}

// thermalSignal is gpu_thermal's judge under cfg.
func thermalSignal(cfg *gpuThermalConfig) gpuSignal {
	atSlowdown := StatusFail
	if cfg.Slowdown == verdictWarn {
		atSlowdown = StatusWarn
	}
	return gpuSignal{fact: node.GPUThermal, what: "temperatures",
		judge: func(g node.GPU) Detail { return judgeGPUThermalOne(g, atSlowdown) },
		ok: func(n int) string {
			return fmt.Sprintf("%s under their slowdown and max operating temperatures", countNoun(n, "GPU", "GPUs"))
		},
	}
}

// judgeGPUThermal judges every GPU's temperatures under cfg.
func judgeGPUThermal(gpus []node.GPU, cfg *gpuThermalConfig) Result {
	return judgeGPUSignal(gpus, thermalSignal(cfg))
}

// thermalLimits is one GPU's temperature and limits in one form: absolute C, or margins
// below T.Limit (where a lower value is hotter).
type thermalLimits struct {
	now, slowdown, shutdown, max int
	hasShutdown, hasMax          bool
	margin                       bool // the values are T.Limit margins
}

// reached says whether the GPU is at or past limit.
func (l thermalLimits) reached(limit int) bool {
	if l.margin {
		return l.now <= limit
	}
	return l.now >= limit
}

// describe writes a value: "95 C", or "-2 C of T.Limit margin".
func (l thermalLimits) describe(v int) string {
	if l.margin {
		return strconv.Itoa(v) + " C below T.Limit"
	}
	return strconv.Itoa(v) + " C"
}

// gpuLimits finds th's limits, absolute first; ok is false where neither form is complete.
func gpuLimits(th *node.Thermal) (thermalLimits, bool) {
	switch {
	case th.GPUC > 0 && th.SlowdownC > 0:
		return thermalLimits{now: th.GPUC, slowdown: th.SlowdownC, shutdown: th.ShutdownC, hasShutdown: th.ShutdownC > 0,
			max: th.GPUMaxC, hasMax: th.GPUMaxC > 0}, true
	case th.MarginC != nil && th.SlowdownMarginC != nil:
		l := thermalLimits{now: *th.MarginC, slowdown: *th.SlowdownMarginC, margin: true}
		if th.ShutdownMarginC != nil {
			l.shutdown, l.hasShutdown = *th.ShutdownMarginC, true
		}
		if th.GPUMaxMarginC != nil {
			l.max, l.hasMax = *th.GPUMaxMarginC, true
		}
		return l, true
	}
	return thermalLimits{}, false
}

// judgeGPUThermalOne judges one GPU: the worst of its core and HBM findings.
func judgeGPUThermalOne(g node.GPU, atSlowdown Status) Detail {
	th := g.Thermal
	if th == nil || (th.GPUC == 0 && th.MarginC == nil) {
		return missingFact(g, "temperatures")
	}
	d := Detail{Status: StatusOK, Observed: thermalObserved(th), Expected: "under its slowdown and max operating temperatures"}
	l, ok := gpuLimits(th)
	var findings []string
	worst := StatusOK
	note := func(st Status, msg string) {
		findings = append(findings, msg)
		if st.Worse(worst) {
			worst = st
		}
	}
	switch {
	case !ok:
		m := missingFact(g, "slowdown temperature")
		if m.Status == StatusSkip {
			m.Message = fmt.Sprintf("%s; no slowdown temperature reported to judge it by (%s)", d.Observed, orUnknownName(g.Name))
			m.Observed = d.Observed
			return m
		}
		note(m.Status, m.Message)
	case l.hasShutdown && l.reached(l.shutdown):
		note(StatusFail, fmt.Sprintf("%s, at its shutdown temperature (%s): the GPU shuts down to protect itself", l.describe(l.now), l.describe(l.shutdown)))
	case l.reached(l.slowdown):
		note(atSlowdown, fmt.Sprintf("%s, at its slowdown temperature (%s): HW slowdown cuts its clocks by half or more", l.describe(l.now), l.describe(l.slowdown)))
	case l.hasMax && l.reached(l.max):
		note(StatusWarn, fmt.Sprintf("%s, at its max operating temperature (%s): its clocks may drop below base", l.describe(l.now), l.describe(l.max)))
	}
	if th.MemoryC > 0 && th.MemoryMaxC > 0 && th.MemoryC >= th.MemoryMaxC {
		note(StatusWarn, fmt.Sprintf("HBM %d C, at its max operating temperature (%d C): SW slowdown", th.MemoryC, th.MemoryMaxC))
	}
	if len(findings) == 0 {
		d.Message = d.Observed
		return d
	}
	d.Status, d.Message = worst, strings.Join(findings, "; ")
	if worst == StatusFail {
		failDetail(&d, faultThermalHot)
	}
	return d
}

// thermalObserved is th as a detail shows it: "35 C (slowdown 89, shutdown 92, max 87); HBM
// 44 C (max 95)", or with margins "57 C below T.Limit (slowdown at -2, shutdown at -8)".
func thermalObserved(th *node.Thermal) string {
	var parts []string
	limits := func(pairs ...any) string {
		var l []string
		for i := 0; i+1 < len(pairs); i += 2 {
			switch v := pairs[i+1].(type) {
			case int:
				if v != 0 {
					l = append(l, fmt.Sprintf("%s %d", pairs[i], v))
				}
			case *int:
				if v != nil {
					l = append(l, fmt.Sprintf("%s %d", pairs[i], *v))
				}
			}
		}
		if len(l) == 0 {
			return ""
		}
		return " (" + strings.Join(l, ", ") + ")"
	}
	if th.GPUC > 0 {
		parts = append(parts, fmt.Sprintf("%d C", th.GPUC)+limits("slowdown", th.SlowdownC, "shutdown", th.ShutdownC, "max", th.GPUMaxC))
	}
	if th.MarginC != nil && th.SlowdownC == 0 {
		parts = append(parts, fmt.Sprintf("%d C below T.Limit", *th.MarginC)+
			limits("slowdown at", th.SlowdownMarginC, "shutdown at", th.ShutdownMarginC, "max at", th.GPUMaxMarginC))
	}
	if th.MemoryC > 0 {
		parts = append(parts, fmt.Sprintf("HBM %d C", th.MemoryC)+limits("max", th.MemoryMaxC))
	}
	return strings.Join(parts, "; ")
}

// Faults declares the check's own rows of the remedy table.
func (gpuThermal) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultThermalHot, "a GPU at or over its slowdown or shutdown temperature", RemedyService,
				"DCGM_FR_CLOCK_THROTTLE_THERMAL_NEXT (DEBUG_COOLING_MSG): verify the cooling; a GPU over its own slowdown threshold is its heatsink, fans, coolant or airflow"},
		},
	}
}

// Explain is what `nodecheck explain gpu_thermal` says.
func (gpuThermal) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: its temperature (nvmlDeviceGetTemperature), its own shutdown, slowdown, max operating and memory max operating temperatures (nvmlDeviceGetTemperatureThreshold), its HBM temperature (field NVML_FI_DEV_MEMORY_TEMP) and, where the GPU states its limits relative to T.Limit only, the T.Limit fields and its margin (nvmlDeviceGetMarginTemperature); its name and bus id.",
			"The PCI bus, only when NVML is unavailable or lists no GPU.",
		},
		Passes: "Every GPU is under its own max operating temperature (and so under its slowdown and shutdown temperatures), and its HBM under its memory max operating temperature.",
		Warns:  "A GPU is at or over its max operating temperature (its clocks may drop below base), or its HBM at or over its memory max operating temperature (SW slowdown); or at its slowdown temperature with slowdown = \"warn\".",
		Fails:  "A GPU is at or over its slowdown temperature (HW slowdown cuts its clocks by half or more: the cooling does not keep up), or at or over its shutdown temperature.",
		Skips:  "NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus; a GPU that is not a data-centre model reports no temperature or thresholds; a snapshot recorded before nodecheck read them.",
		Errors: "NVML is unavailable on a node with NVIDIA GPUs; NVML lost a GPU; or a data-centre GPU (they always report them) reported no temperature or no slowdown temperature.",
		Keys: map[string]string{
			"slowdown": `What a GPU at or over its slowdown temperature gives: "fail" or "warn". The shutdown temperature always fails.`,
		},
		Fix: []string{
			"nvidia-smi -q -d TEMPERATURE -i N shows the temperatures and limits (\"GPU T.Limit Temp\" is the margin below T.Limit on newer GPUs and drivers).",
			"Compare with the node's other GPUs and its neighbours: one hot GPU is its heatsink, thermal interface or (liquid-cooled) cold plate; a hot node is its fans, airflow or coolant loop; ipmitool sdr for the fans and inlet temperature.",
			"After the cooling is fixed, the next run judges the new temperature; if a GPU stays hot with good cooling, open a case with the vendor.",
		},
	}
}
