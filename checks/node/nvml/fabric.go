//go:build cgo

package nvml

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/nodecheck/nodecheck/checks/node"
)

// fabricHealthOf decodes the health of nvmlGpuFabricInfo_v2/v3 into node.FabricHealth. The
// mask packs one field per condition, each read as nvml.h's NVML_GPU_FABRIC_HEALTH_GET(mask,
// type) does: (mask >> NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_type) &
// NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_type. Every field's 0 is its NOT_SUPPORTED, which leaves
// that part "", so a driver without health (v1, or a zero mask and summary) gives the zero
// FabricHealth. Only the conditions the judges read are decoded: the partition and global
// Fabric Manager fields of the mask are left out.
//
// A healthy GB200 NVL72 reads healthMask 0xaa (NVIDIA/nccl#2186): every flag FALSE (2),
// configuration NOT_SUPPORTED.
func fabricHealthOf(mask uint32, summary uint8) node.FabricHealth {
	field := func(shift, width uint32) uint32 { return (mask >> shift) & width }
	// The boolean conditions share their values (nvml.h defines NOT_SUPPORTED 0, TRUE 1 and
	// FALSE 2 for each of DEGRADED_BW, ROUTE_RECOVERY, ROUTE_UNHEALTHY and
	// ACCESS_TIMEOUT_RECOVERY); TestFabricHealthOf holds each to its own constants.
	flag := func(shift, width uint32) string {
		switch v := field(shift, width); v {
		case nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_NOT_SUPPORTED:
			return ""
		case nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE:
			return node.FabricTrue
		case nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE:
			return node.FabricFalse
		default:
			return valueName(v)
		}
	}
	return node.FabricHealth{
		Summary:                fabricSummaryName(summary),
		DegradedBandwidth:      flag(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW, nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW),
		RouteRecovery:          flag(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY, nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_RECOVERY),
		RouteUnhealthy:         flag(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY, nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_UNHEALTHY),
		AccessTimeoutRecovery:  flag(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY, nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_ACCESS_TIMEOUT_RECOVERY),
		IncorrectConfiguration: incorrectConfigName(field(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION, nvml.GPU_FABRIC_HEALTH_MASK_WIDTH_INCORRECT_CONFIGURATION)),
	}
}

// fabricSummaryName names an NVML_GPU_FABRIC_HEALTH_SUMMARY_* value; "" for NOT_SUPPORTED.
func fabricSummaryName(v uint8) string {
	switch v {
	case nvml.GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED:
		return ""
	case nvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY:
		return node.FabricHealthy
	case nvml.GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY:
		return node.FabricUnhealthy
	case nvml.GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY:
		return node.FabricLimitedCapacity
	}
	return valueName(uint32(v))
}

// incorrectConfigNames are NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_* by value,
// without the prefix; 0 (NOT_SUPPORTED) is "".
var incorrectConfigNames = map[uint32]string{
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NOT_SUPPORTED:        "",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NONE:                 node.FabricConfigOK,
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_SYSGUID:    "INCORRECT_SYSGUID",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_CHASSIS_SN: "INCORRECT_CHASSIS_SN",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NO_PARTITION:         "NO_PARTITION",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INSUFFICIENT_NVLINKS: "INSUFFICIENT_NVLINKS",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCOMPATIBLE_GPU_FW:  "INCOMPATIBLE_GPU_FW",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INVALID_LOCATION:     "INVALID_LOCATION",
	nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_GPU_STATE_INVALID:    "GPU_STATE_INVALID",
}

func incorrectConfigName(v uint32) string {
	if n, ok := incorrectConfigNames[v]; ok {
		return n
	}
	return valueName(v)
}

// valueName is a health value newer than nodecheck's tables.
func valueName(v uint32) string { return fmt.Sprintf("VALUE_%d", v) }
