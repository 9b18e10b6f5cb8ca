package checks

import (
	"context"
	"fmt"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idGPUPersistence = "gpu_persistence"

// gpuPersistence warns where a GPU's persistence mode is off (nvmlDeviceGetPersistenceMode).
// Without it the driver tears its state down when the last client exits and initialises it
// again for the next one: NVIDIA's driver persistence guide
// (https://docs.nvidia.com/deploy/driver-persistence/index.html) says the GPU's state is then
// "initialized" at each client's start, which costs each nodecheck run, each prolog and each
// job's CUDA start that time (seconds on an 8-GPU node), and loses settings such as
// application clocks between clients. NVIDIA recommends nvidia-persistenced. It warns:
// jobs still run.
type gpuPersistence struct{}

func (gpuPersistence) ID() string { return idGPUPersistence }

func (gpuPersistence) Description() string {
	return "each GPU has persistence mode on (off warns: every NVML and CUDA start pays the driver's initialisation)"
}

// GPUFields implements gpuFactsUser: each GPU's persistence mode, model (traits) and bus id.
func (gpuPersistence) GPUFields() node.GPUFields {
	return node.GPUPersistence | node.GPUName | node.GPUPCIBusID
}

// gpuPersistenceConfig is [checks.gpu_persistence]: the common keys only.
type gpuPersistenceConfig struct {
	config.CheckCommon
}

func (gpuPersistence) Section() config.Section {
	return &gpuPersistenceConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

func (gpuPersistence) Run(ctx context.Context, env *Env) Result {
	return runGPUSignal(ctx, env, persistenceSignal)
}

// persistenceSignal is gpu_persistence's judge.
var persistenceSignal = gpuSignal{fact: node.GPUPersistence, what: "persistence mode",
	judge: judgeGPUPersistenceOne,
	ok: func(n int) string {
		return fmt.Sprintf("persistence mode on on %s", countNoun(n, "GPU", "GPUs"))
	},
}

// judgeGPUPersistence judges every GPU's persistence mode.
func judgeGPUPersistence(gpus []node.GPU) Result { return judgeGPUSignal(gpus, persistenceSignal) }

func judgeGPUPersistenceOne(g node.GPU) Detail {
	if g.Persistence == nil {
		return missingFact(g, "persistence mode")
	}
	if !*g.Persistence {
		return Detail{Status: StatusWarn, Observed: "off", Expected: "on",
			Message: "persistence mode off: every NVML and CUDA start pays the driver's initialisation (run nvidia-persistenced)"}
	}
	return Detail{Status: StatusOK, Observed: "on", Expected: "on", Message: "persistence mode on"}
}

// Faults: gpu_persistence never fails (it warns), so it has no row of the remedy table.
func (gpuPersistence) Faults() Faults { return Faults{} }

// Explain is what `nodecheck explain gpu_persistence` says.
func (gpuPersistence) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: its persistence mode (nvmlDeviceGetPersistenceMode), name and bus id.",
			"The PCI bus, only when NVML is unavailable or lists no GPU.",
		},
		Passes: "Every GPU has persistence mode on.",
		Warns:  "A GPU has persistence mode off: the driver tears its state down when the last client exits and initialises it again for the next, so each nodecheck run, prolog and job start pays that (seconds on an 8-GPU node).",
		Fails:  "Never.",
		Skips:  "NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus; a GPU that is not a data-centre model reports no mode; a snapshot recorded before nodecheck read it.",
		Errors: "NVML is unavailable on a node with NVIDIA GPUs; NVML lost a GPU; or a data-centre GPU reported no persistence mode.",
		Fix: []string{
			"Enable and start nvidia-persistenced (systemctl enable --now nvidia-persistenced), NVIDIA's recommended way; nvidia-smi -pm 1 also works until the next reboot.",
			"nvidia-smi -q -d PERFORMANCE,POWER -i N | grep -i persistence, or nvidia-smi --query-gpu=index,persistence_mode --format=csv, shows the mode.",
		},
	}
}
