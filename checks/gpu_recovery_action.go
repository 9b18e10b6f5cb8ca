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

const idGPURecoveryAction = "gpu_recovery_action"

// The ways gpu_recovery_action fails: its rows of the remedy table (Faults).
const (
	faultRecoveryReset  fault = "gpu_recovery_action/reset"
	faultRecoveryReboot fault = "gpu_recovery_action/reboot"
	faultRecoveryIMEX   fault = "gpu_recovery_action/recover_imex"
)

// gpuRecoveryAction reads what the driver (550 and later) says a GPU needs before it can be
// used again: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, nvmlDeviceGpuRecoveryAction_t. NVIDIA's
// memory error management guide
// (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html)
// says what each asks:
//
//   - NONE: "No recovery action is needed. The GPU can be immediately used again": ok.
//   - GPU_RESET: "a fault that requires a reset to recover. Terminate all GPU processes,
//     reset the GPU": fail, reset the GPU.
//   - NODE_REBOOT: "a fault [that] may have left the OS in an inconsistent state. Reboot":
//     fail, reboot.
//   - DRAIN_P2P: "a fault that requires all peer-to-peer traffic to be quiesced. Terminate
//     all GPU processes that conduct peer-to-peer traffic and disable UVM persistence mode.
//     Once all peer-to-peer traffic are drained, query ... again, which will return one of
//     the other actions": fail. The GPU must take no new job, which would start peer-to-peer
//     traffic again; a Slurm drain does exactly that while the running jobs end, after which
//     the driver names the real action.
//   - DRAIN_AND_RESET: drain peer-to-peer traffic and reset the GPU: fail.
//   - RECOVER_IMEX_DOMAIN, BUS_RESET, SYSTEM_REBOOT (nvml.h, newer drivers): fail, naming
//     the action; so does a value newer than nodecheck's table (ACTION_n): the driver asks
//     for something other than NONE.
//
// Where the driver gives no action, its older reset status stands in for it (NVML fields
// NVML_FI_DEV_RESET_STATUS and NVML_FI_DEV_DRAIN_AND_RESET_STATUS, which nvml.h deprecates
// for the action; nvidia-smi -q "GPU Reset Status", which drivers 535 to 555 print instead of
// "GPU Recovery Action"): "Drain and Reset Recommended: Yes" is DRAIN_AND_RESET ("Drain P2P
// and Reset Gpu", nvml.h), "Reset Required: Yes" GPU_RESET, both No is NONE.
//
// It runs in every mode: one field value per GPU, and a GPU in this state must not start a
// job.
type gpuRecoveryAction struct{}

func (gpuRecoveryAction) ID() string { return idGPURecoveryAction }

func (gpuRecoveryAction) Description() string {
	return "each GPU: the driver's recovery action (driver 550 and later) is NONE; a reset, reboot or drain it asks for fails"
}

// GPUFields implements gpuFactsUser: each GPU's recovery action and bus id, and the driver's
// version (from 550 every GPU reports an action).
func (gpuRecoveryAction) GPUFields() node.GPUFields {
	return node.GPURecoveryAction | node.GPUPCIBusID | node.GPUDriverVersion
}

// gpuRecoveryActionConfig is [checks.gpu_recovery_action]: the common keys only.
type gpuRecoveryActionConfig struct {
	config.CheckCommon
}

func (gpuRecoveryAction) Section() config.Section {
	return &gpuRecoveryActionConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

func (gpuRecoveryAction) Run(ctx context.Context, env *Env) Result {
	sig := recoverySignal
	if inv, err := env.Facts.GPUs(ctx); err == nil && driverMajor(inv.DriverVersion) >= 550 {
		// Drivers from 550 report the action for every GPU (or, where it is not supported, the
		// reset status): neither read is not "no action".
		sig.judge = func(g node.GPU) Detail {
			if g.RecoveryAction == "" && g.ResetStatus == nil {
				return Detail{Status: StatusError, Message: fmt.Sprintf("driver %s reports recovery actions, but NVML gave none for this GPU: not looked at; see `nvidia-smi -q -i %s`, GPU Recovery Action", inv.DriverVersion, g.PCIBusID)}
			}
			return judgeGPURecoveryOne(g)
		}
	}
	return runGPUSignal(ctx, env, sig)
}

// driverMajor is the major number of a driver version ("550.54.15" -> 550), 0 when unknown.
func driverMajor(v string) int {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// recoverySignal is gpu_recovery_action's judge.
var recoverySignal = gpuSignal{fact: node.GPURecoveryAction, what: "recovery action",
	judge: judgeGPURecoveryOne,
	ok: func(n int) string {
		return fmt.Sprintf("no recovery action needed on %s", countNoun(n, "GPU", "GPUs"))
	},
}

// judgeGPURecovery judges every GPU's recovery action.
func judgeGPURecovery(gpus []node.GPU) Result { return judgeGPUSignal(gpus, recoverySignal) }

// recoveryWhat says what each action asks of the admin.
var recoveryWhat = map[string]string{
	"GPU_RESET":           "reset the GPU (nvidia-smi -r)",
	"NODE_REBOOT":         "reboot the node",
	"DRAIN_P2P":           "end the jobs using peer-to-peer traffic on it, then read the action again",
	"DRAIN_AND_RESET":     "drain peer-to-peer traffic, then reset the GPU",
	"RECOVER_IMEX_DOMAIN": "recover the IMEX domain",
	"BUS_RESET":           "reset the GPU's PCIe bus",
	"SYSTEM_REBOOT":       "reboot the system",
}

func judgeGPURecoveryOne(g node.GPU) Detail {
	switch a := g.RecoveryAction; a {
	case "":
		if g.ResetStatus != nil {
			return judgeGPUResetStatus(*g.ResetStatus)
		}
		return Detail{Status: StatusSkip, Message: "the driver reports neither a recovery action (550 and later) nor a GPU reset status"}
	case "NONE":
		return Detail{Status: StatusOK, Observed: a, Expected: "NONE", Message: "no recovery action needed"}
	default:
		what, ok := recoveryWhat[a]
		if !ok {
			what = "an action nodecheck does not know: see the driver's documentation"
		}
		d := Detail{Observed: a, Expected: "NONE", Message: fmt.Sprintf("driver asks for recovery action %s: %s", a, what)}
		failDetail(&d, recoveryFault(a))
		return d
	}
}

// judgeGPUResetStatus judges the older reset status as the recovery action it stands for.
func judgeGPUResetStatus(s node.ResetStatus) Detail {
	a := s.Action()
	if a == "NONE" {
		return Detail{Status: StatusOK, Observed: "reset status NONE", Expected: "NONE", Message: "no reset required (GPU Reset Status)"}
	}
	line := "Reset Required: Yes"
	if s.DrainAndReset {
		line = "Drain and Reset Recommended: Yes"
	}
	d := Detail{Observed: "reset status " + a, Expected: "NONE",
		Message: fmt.Sprintf("driver's GPU Reset Status asks for %s (%s): %s", a, line, recoveryWhat[a])}
	failDetail(&d, recoveryFault(a))
	return d
}

// recoveryFault is the fault of a recovery action other than NONE.
func recoveryFault(action string) fault {
	switch action {
	case "GPU_RESET", "DRAIN_AND_RESET", "DRAIN_P2P":
		return faultRecoveryReset
	case "RECOVER_IMEX_DOMAIN":
		return faultRecoveryIMEX
	}
	return faultRecoveryReboot
}

// Faults declares the check's own rows of the remedy table.
func (gpuRecoveryAction) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultRecoveryReset, "the driver's recovery action is GPU_RESET, DRAIN_AND_RESET or DRAIN_P2P (or, from a driver that gives no action, its GPU Reset Status asks for a reset)", RemedyResetGPU,
				"NVIDIA's recovery action flag (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html): GPU_RESET \"requires a reset to recover\"; DRAIN_P2P asks to quiesce peer-to-peer traffic, then names another action, and a drained GPU's reset is what the repair flow takes first; as XID 154 of the same actions"},
			{faultRecoveryReboot, "the driver's recovery action is NODE_REBOOT, SYSTEM_REBOOT, BUS_RESET, or one nodecheck does not know", RemedyReboot,
				"NVIDIA's recovery action flag: NODE_REBOOT, a fault that \"may have left the OS in an inconsistent state\"; nvml.h (NVML 615) SYSTEM_REBOOT \"Reboot the system\" and BUS_RESET \"Reset the GPU's PCIe bus\", more than the GPU reset reset_gpu names, which a reboot does; a reboot also clears an action nodecheck cannot read"},
			{faultRecoveryIMEX, "the driver's recovery action is RECOVER_IMEX_DOMAIN", RemedyAdmin,
				"nvml.h NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN: the IMEX domain, a service across the NVLink domain's nodes, is recovered by a person (nvidia-imex on every node of the domain), not by this node's reset or reboot"},
		},
	}
}

// Explain is what `nodecheck explain gpu_recovery_action` says.
func (gpuRecoveryAction) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: the driver's recovery action (field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, driver 550 and later) and bus id; where it gives none, the older reset status (fields NVML_FI_DEV_RESET_STATUS and NVML_FI_DEV_DRAIN_AND_RESET_STATUS, nvidia-smi's \"GPU Reset Status\").",
			"The PCI bus, only when NVML is unavailable or lists no GPU.",
		},
		Passes: "Every GPU's recovery action is NONE: \"the GPU can be immediately used again\" (NVIDIA); where the driver gives none, its reset status says no reset is required.",
		Fails:  "A GPU's recovery action is GPU_RESET, NODE_REBOOT, DRAIN_P2P, DRAIN_AND_RESET, RECOVER_IMEX_DOMAIN, BUS_RESET, SYSTEM_REBOOT or a newer one: the driver says the GPU needs it before it can be used again (DRAIN_P2P: no new job may start peer-to-peer traffic there; once the running ones end, the driver names the real action). Where the driver gives no action, a reset status of \"Reset Required: Yes\" fails as GPU_RESET, \"Drain and Reset Recommended: Yes\" as DRAIN_AND_RESET.",
		Skips:  "NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus; the driver reports neither a recovery action nor a reset status; a snapshot recorded before nodecheck read it.",
		Errors: "NVML is unavailable on a node with NVIDIA GPUs, or NVML lost a GPU.",
		Fix: []string{
			"nvidia-smi --query-gpu=index,pci.bus_id,gpu_recovery_action --format=csv (or nvidia-smi -q, \"GPU Recovery Action\"; \"GPU Reset Status\" on drivers before it) shows the action per GPU; dmesg | grep -i xid shows the fault behind it.",
			"GPU_RESET, DRAIN_AND_RESET: once no job uses the GPU, nvidia-smi -r -i N (stop nvidia-persistenced, DCGM and Fabric Manager first where they hold it). NODE_REBOOT, SYSTEM_REBOOT: scontrol reboot ASAP nextstate=RESUME NODE. DRAIN_P2P: let the running jobs end, run nodecheck again and follow the action it then names.",
			"If the action comes back after the reset or reboot, run dcgmi diag -r 3 and open a case with the vendor (RMA, with nvidia-bug-report.sh).",
		},
	}
}
