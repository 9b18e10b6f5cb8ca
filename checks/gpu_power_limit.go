package checks

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idGPUPowerLimit = "gpu_power_limit"

// gpuPowerLimit warns where a GPU's enforced power limit is below its default limit
// (nvmlDeviceGetEnforcedPowerLimit against nvmlDeviceGetPowerManagementDefaultLimit): someone
// or something capped it (nvidia-smi -pl, a power management policy), and under load the
// GPU then lowers its clocks to stay under the cap (gpu_clocks' SW power cap, which is
// normal at the default limit). It is a warn, not a fail: a cap may be the site's choice,
// and the GPU is not faulty; the warn names both limits so that a forgotten one is found.
// A limit raised above the default (within the GPU's maximum) is not judged.
type gpuPowerLimit struct{}

func (gpuPowerLimit) ID() string { return idGPUPowerLimit }

func (gpuPowerLimit) Description() string {
	return "each GPU's enforced power limit is not below its default limit (a capped GPU warns)"
}

// GPUFields implements gpuFactsUser: each GPU's power readings, model (traits) and bus id.
func (gpuPowerLimit) GPUFields() node.GPUFields {
	return node.GPUPower | node.GPUName | node.GPUPCIBusID
}

// gpuPowerLimitConfig is [checks.gpu_power_limit]: the common keys only.
type gpuPowerLimitConfig struct {
	config.CheckCommon
}

func (gpuPowerLimit) Section() config.Section {
	return &gpuPowerLimitConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

func (gpuPowerLimit) Run(ctx context.Context, env *Env) Result {
	return runGPUSignal(ctx, env, powerSignal)
}

// powerSignal is gpu_power_limit's judge.
var powerSignal = gpuSignal{fact: node.GPUPower, what: "power limits",
	judge: judgeGPUPowerOne,
	ok: func(n int) string {
		return fmt.Sprintf("%s at or above their default power limit", countNoun(n, "GPU", "GPUs"))
	},
}

// judgeGPUPower judges every GPU's power limits.
func judgeGPUPower(gpus []node.GPU) Result { return judgeGPUSignal(gpus, powerSignal) }

// powerLimitSlackW is how far under the default an enforced limit may be and still count as
// the default: NVML gives mW, so anything above a milliwatt is a real difference.
const powerLimitSlackW = 0.001

// judgeGPUPowerOne judges one GPU's limits.
func judgeGPUPowerOne(g node.GPU) Detail {
	p := g.Power
	if p == nil || p.EnforcedLimitW == 0 || p.DefaultLimitW == 0 {
		return missingFact(g, "power limits")
	}
	d := Detail{Status: StatusOK, Observed: watts(p.EnforcedLimitW) + " limit", Expected: "at least " + watts(p.DefaultLimitW) + " (default)"}
	draw := ""
	if p.DrawW > 0 {
		draw = ", drawing " + watts(p.DrawW)
	}
	if p.EnforcedLimitW < p.DefaultLimitW-powerLimitSlackW {
		d.Status = StatusWarn
		d.Message = fmt.Sprintf("power limit %s, below its default %s: someone capped it (nvidia-smi -pl)%s", watts(p.EnforcedLimitW), watts(p.DefaultLimitW), draw)
		return d
	}
	d.Message = fmt.Sprintf("power limit %s (default %s)%s", watts(p.EnforcedLimitW), watts(p.DefaultLimitW), draw)
	return d
}

// watts writes a power: "700 W", "100.89 W".
func watts(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) + " W" }

// Faults: gpu_power_limit never fails (it warns), so it has no row of the remedy table.
func (gpuPowerLimit) Faults() Faults { return Faults{} }

// Explain is what `nodecheck explain gpu_power_limit` says.
func (gpuPowerLimit) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: its enforced power limit (nvmlDeviceGetEnforcedPowerLimit), default limit (nvmlDeviceGetPowerManagementDefaultLimit) and draw (nvmlDeviceGetPowerUsage); its name and bus id.",
			"The PCI bus, only when NVML is unavailable or lists no GPU.",
		},
		Passes: "Every GPU's enforced power limit is at least its default limit.",
		Warns:  "A GPU's enforced limit is below its default: someone capped it (nvidia-smi -pl, a management policy), and under load it lowers its clocks to stay under the cap. The warning names both limits.",
		Fails:  "Never: a power cap may be the site's choice.",
		Skips:  "NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus; a GPU that is not a data-centre model reports no limits; a snapshot recorded before nodecheck read them.",
		Errors: "NVML is unavailable on a node with NVIDIA GPUs; NVML lost a GPU; or a data-centre GPU (they always report them) reported no limits.",
		Fix: []string{
			"nvidia-smi -q -d POWER -i N shows the limits (Current, Requested, Default, Min, Max).",
			"Restore the default with nvidia-smi -pl DEFAULT_W -i N (as root; it lasts until the driver reloads), and find what set the cap: a boot script, a DCGM or management policy, or a BMC power capping setting.",
		},
	}
}
