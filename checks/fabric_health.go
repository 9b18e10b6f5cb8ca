package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
)

// The fabric health fabric_manager judges once a GPU's registration is COMPLETED/SUCCESS:
// what nvmlGpuFabricInfo_v2/v3 add to the state and status (nvml.h
// NVML_GPU_FABRIC_HEALTH_MASK_*, NVML_GPU_FABRIC_HEALTH_SUMMARY_*; nvidia-smi -q
// "Fabric/Health"). A registration can complete and the fabric still be unhealthy: a node of
// kubernetes-sigs/dra-driver-nvidia-gpu#626 printed State Completed, Status Success and
// Health Summary Unhealthy.
//
// What fails, and why:
//   - Every condition of the mask DCGM's health watch fails (NVIDIA/DCGM
//     modules/health/DcgmHealthWatch.cpp @ 72fa3fe, MonitorFabricFields, DCGM_HEALTH_RESULT_FAIL):
//     a route unhealthy, a route recovery or an access timeout recovery in progress, an
//     incorrect configuration, and degraded bandwidth. Degraded bandwidth alone is what NVML
//     summarises as LIMITED_CAPACITY rather than UNHEALTHY; it fails here too, as in DCGM: a
//     multi-node job over the NVLink domain runs at the pace of its slowest GPU, and a node
//     that keeps taking jobs at a fraction of its bandwidth is what a health check is for.
//     (gpud, NVIDIA's node agent, also reports both as unhealthy.)
//   - A summary other than HEALTHY (UNHEALTHY, LIMITED_CAPACITY), whichever bit is set: the
//     driver's own verdict.
//   - A condition that is TRUE fails even under a HEALTHY summary: the bits are what DCGM
//     judges, and a summary that contradicts them is not a state to trust.
//
// The remedy: DCGM reports these conditions as DCGM_FR_FIELD_VIOLATION, whose next step
// (dcgm_errors.h DCGM_FR_FIELD_VIOLATION_NEXT, SYSTEM_TRIAGE_MSG) begins with resetting the
// GPU: reset_gpu, which the repair flow escalates to a reboot when the reset does not help.
// An incorrect configuration that is a setting of the rack (its system GUID, chassis serial
// number or location, the NVLink partition, the GPU firmware) is for a person to fix: no
// reset or reboot of this node changes it (admin). INSUFFICIENT_NVLINKS and
// GPU_STATE_INVALID are not settings: they take the reset.
//
// Values nodecheck does not know (a newer driver's) leave the GPU not judged: an error.

// fabricConfigSettings are the incorrect configurations a person fixes (faultFMFabricConfig).
var fabricConfigSettings = []string{"INCORRECT_SYSGUID", "INCORRECT_CHASSIS_SN", "NO_PARTITION", "INCOMPATIBLE_GPU_FW", "INVALID_LOCATION"}

// fabricHealthVerdict is the judgement of one GPU's fabric health.
type fabricHealthVerdict struct {
	reported bool     // the driver reported some part of the health
	problems []string // what fails, in words: "health summary UNHEALTHY", "route unhealthy"
	unknown  []string // parts whose values nodecheck does not know: "summary VALUE_9"
	fault    fault    // for problems: faultFMFabricHealth or faultFMFabricConfig
}

// judgeFabricHealth judges h (see the comment above).
func judgeFabricHealth(h node.FabricHealth) fabricHealthVerdict {
	v := fabricHealthVerdict{reported: h != node.FabricHealth{}, fault: faultFMFabricHealth}
	switch h.Summary {
	case "", node.FabricHealthy:
	case node.FabricUnhealthy, node.FabricLimitedCapacity:
		v.problems = append(v.problems, "health summary "+h.Summary)
	default:
		v.unknown = append(v.unknown, "summary "+h.Summary)
	}
	for _, c := range []struct{ key, value, what string }{
		{"degraded_bandwidth", h.DegradedBandwidth, "bandwidth degraded"},
		{"route_recovery", h.RouteRecovery, "route recovery in progress"},
		{"route_unhealthy", h.RouteUnhealthy, "route unhealthy"},
		{"access_timeout_recovery", h.AccessTimeoutRecovery, "access timeout recovery in progress"},
	} {
		switch c.value {
		case "", node.FabricFalse:
		case node.FabricTrue:
			v.problems = append(v.problems, c.what)
		default:
			v.unknown = append(v.unknown, c.key+" "+c.value)
		}
	}
	if c := h.IncorrectConfiguration; c != "" && c != node.FabricConfigOK {
		v.problems = append(v.problems, "incorrect configuration "+c)
		if slices.Contains(fabricConfigSettings, c) {
			// The most drastic of the GPU's needs: a reset leaves the setting wrong.
			v.fault = faultFMFabricConfig
		}
	}
	return v
}

// fabricHealthDetail judges the health of a GPU registered as reg ("COMPLETED/SUCCESS")
// into its detail d, ok so far: a failure or an error where the health says so, and the
// health added to its Observed. It returns what fails (for the node's summary; "" when
// nothing does) and what was not understood ("" when all was).
func fabricHealthDetail(d *Detail, reg string, h node.FabricHealth) (problem, unknown string) {
	v := judgeFabricHealth(h)
	if !v.reported {
		return "", "" // a driver without health: the registration alone, as before
	}
	d.Expected += ", healthy"
	switch {
	case len(v.problems) > 0:
		problem = strings.Join(v.problems, ", ")
		failDetail(d, v.fault)
		d.Observed += ", " + problem
		d.Message = "fabric " + reg + " but unhealthy: " + problem
	case len(v.unknown) > 0:
		unknown = strings.Join(v.unknown, ", ")
		d.Status, d.Observed = StatusError, d.Observed+", "+unknown
		d.Message = "fabric health not understood (values newer than nodecheck): " + unknown + ": not judged"
	default:
		d.Observed += ", healthy"
		d.Message += ", healthy"
	}
	return problem, unknown
}

// fabricHealthGood counts the GPUs registered COMPLETED/SUCCESS whose driver reports a
// fabric health with nothing wrong in it.
func fabricHealthGood(gpus []node.GPU) int {
	n := 0
	for _, g := range gpus {
		if g.Error != "" || g.Fabric == nil || g.Fabric.State != fabricCompleted || g.Fabric.Status != node.InitSuccess {
			continue
		}
		if v := judgeFabricHealth(g.Fabric.Health); v.reported && len(v.problems) == 0 && len(v.unknown) == 0 {
			n++
		}
	}
	return n
}

// fabricHealthSuffix is what the ok summary adds about the health: nothing where no GPU
// reports one.
func fabricHealthSuffix(gpus []node.GPU) string {
	if n := fabricHealthGood(gpus); n > 0 {
		return fmt.Sprintf(" (health good on %d)", n)
	}
	return ""
}
