//go:build cgo

package nvml

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// mask builds a health mask from (shift, value) pairs, as nvml.h's NVML_GPU_FABRIC_HEALTH_GET
// reads it back.
func mask(fields ...[2]uint32) uint32 {
	var m uint32
	for _, f := range fields {
		m |= f[1] << f[0]
	}
	return m
}

func TestFabricHealthOf(t *testing.T) {
	var (
		bw  = uint32(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW)
		rr  = uint32(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY)
		ru  = uint32(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY)
		atr = uint32(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY)
		cfg = uint32(nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION)
	)
	allFalse := node.FabricHealth{DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "FALSE", AccessTimeoutRecovery: "FALSE"}
	with := func(change func(h *node.FabricHealth)) node.FabricHealth {
		h := allFalse
		change(&h)
		return h
	}
	for _, tc := range []struct {
		name    string
		mask    uint32
		summary uint8
		want    node.FabricHealth
	}{
		{"no health (v1, or nothing supported)", 0, 0, node.FabricHealth{}},
		// The mask a healthy GB200 NVL72 reported in NVIDIA/nccl#2186.
		{"0xaa: every condition false, no summary (v2)", 0xaa, 0, allFalse},
		{"healthy summary", 0xaa, nvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY, with(func(h *node.FabricHealth) { h.Summary = "HEALTHY" })},
		{"route unhealthy", mask([2]uint32{bw, nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE},
			[2]uint32{rr, nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_FALSE}, [2]uint32{ru, nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_TRUE},
			[2]uint32{atr, nvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_FALSE}),
			nvml.GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY, with(func(h *node.FabricHealth) { h.Summary, h.RouteUnhealthy = "UNHEALTHY", "TRUE" })},
		{"degraded bandwidth alone", 0xaa&^0x3 | nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE, nvml.GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY,
			with(func(h *node.FabricHealth) { h.Summary, h.DegradedBandwidth = "LIMITED_CAPACITY", "TRUE" })},
		{"route recovery and access timeout recovery in progress", mask([2]uint32{rr, nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_TRUE},
			[2]uint32{atr, nvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_TRUE}), 0,
			node.FabricHealth{RouteRecovery: "TRUE", AccessTimeoutRecovery: "TRUE"}},
		{"correct configuration", mask([2]uint32{cfg, nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NONE}), 0,
			node.FabricHealth{IncorrectConfiguration: "NONE"}},
		{"no partition", mask([2]uint32{cfg, nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NO_PARTITION}), 0,
			node.FabricHealth{IncorrectConfiguration: "NO_PARTITION"}},
		{"incompatible firmware", mask([2]uint32{cfg, nvml.GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCOMPATIBLE_GPU_FW}), 0,
			node.FabricHealth{IncorrectConfiguration: "INCOMPATIBLE_GPU_FW"}},
		{"values newer than the tables", mask([2]uint32{bw, 3}, [2]uint32{cfg, 12}), 9,
			node.FabricHealth{Summary: "VALUE_9", DegradedBandwidth: "VALUE_3", IncorrectConfiguration: "VALUE_12"}},
		// The partition and global Fabric Manager fields are not decoded: a mask with only
		// them set reads as no health.
		{"partition and GFM fields only", mask([2]uint32{nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_PARTITION_ASSIGNED, 1},
			[2]uint32{nvml.GPU_FABRIC_HEALTH_MASK_SHIFT_GFM_STATE, 1}), 0, node.FabricHealth{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fabricHealthOf(tc.mask, tc.summary)); diff != "" {
				t.Errorf("fabricHealthOf(%#x, %d) (-want +got):\n%s", tc.mask, tc.summary, diff)
			}
		})
	}
}

// TestFabricHealthFlagValues holds the claim fabricHealthOf's flag decoding rests on: every
// boolean condition of the mask has the values of DEGRADED_BW.
func TestFabricHealthFlagValues(t *testing.T) {
	want := [3]int{nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_NOT_SUPPORTED, nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE, nvml.GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE}
	for name, got := range map[string][3]int{
		"ROUTE_RECOVERY": {nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_NOT_SUPPORTED, nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_TRUE,
			nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_FALSE},
		"ROUTE_UNHEALTHY": {nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_NOT_SUPPORTED, nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_TRUE,
			nvml.GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_FALSE},
		"ACCESS_TIMEOUT_RECOVERY": {nvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_NOT_SUPPORTED,
			nvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_TRUE, nvml.GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_FALSE},
	} {
		if got != want {
			t.Errorf("%s values %v, DEGRADED_BW's %v", name, got, want)
		}
	}
}
