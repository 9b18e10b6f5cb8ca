package checks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// TestFabricHealth: a GPU whose registration is COMPLETED/SUCCESS is judged by the health
// its driver reports with it (nvmlGpuFabricInfo_v2/v3, nvidia-smi -q Fabric/Health); a GPU
// whose driver reports none is judged as before.
func TestFabricHealth(t *testing.T) {
	// gb200Tray is a GB200 compute tray's 4 GPUs (bus ids as NVIDIA/dcgm-exporter#581 printed
	// them), registered, with health h on GPU 0 and the others healthy.
	healthy := node.FabricHealth{Summary: "HEALTHY", DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "FALSE",
		AccessTimeoutRecovery: "FALSE", IncorrectConfiguration: "NONE"}
	with := func(change func(h *node.FabricHealth)) node.FabricHealth {
		h := healthy
		change(&h)
		return h
	}
	gb200Tray := func(h0, others node.FabricHealth) node.GPUInventory {
		inv := node.GPUInventory{Init: node.InitSuccess, DriverVersion: "580.173.02", DeviceCount: 4}
		for i, bus := range []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"} {
			h := others
			if i == 0 {
				h = h0
			}
			inv.Devices = append(inv.Devices, node.GPU{Index: i, MinorNumber: i, Name: "NVIDIA GB200", PCIBusID: bus,
				Fabric: &node.Fabric{State: "COMPLETED", Status: "SUCCESS", Health: h}})
		}
		return inv
	}
	var noSwitch []node.PCIDevice
	for _, d := range h100PCI() {
		if !isNVSwitch(d) {
			noSwitch = append(noSwitch, d)
		}
	}
	fmOff := map[string]node.CmdResult{fmActiveCmd: {Stdout: "inactive\n", ExitCode: 3}}
	h100With := func(h node.FabricHealth) node.GPUInventory {
		return changeGPU(h100NVML(), 2, func(g *node.GPU) { g.Fabric.Health = h })
	}
	// The block of kubernetes-sigs/dra-driver-nvidia-gpu#626 as import-nvidia-smi records it:
	// State Completed, Status Success, Summary Unhealthy, Bandwidth Full.
	dra626 := node.FabricHealth{Summary: "UNHEALTHY", DegradedBandwidth: "FALSE"}

	tests := []struct {
		name        string
		pci         []node.PCIDevice
		gpus        node.GPUInventory
		cmds        map[string]node.CmdResult
		wantStatus  Status
		wantSummary string
		wantRemedy  Remedy
	}{
		{"GB200 tray, every GPU healthy", noSwitch, gb200Tray(healthy, healthy), fmOff, StatusOK,
			"NVLink fabric without NVSwitch on this node: fabric COMPLETED on 4 GPUs (health good on 4), Fabric Manager not running here (it runs where the NVSwitches are)", ""},
		{"GB200 tray, no health reported (driver before the mask): judged as before", noSwitch, gb200Tray(node.FabricHealth{}, node.FabricHealth{}), fmOff, StatusOK,
			"NVLink fabric without NVSwitch on this node: fabric COMPLETED on 4 GPUs, Fabric Manager not running here (it runs where the NVSwitches are)", ""},
		{"GB200 tray, completed but summary unhealthy on every GPU (dra-driver-nvidia-gpu#626)", noSwitch, gb200Tray(dra626, dra626), fmOff, StatusFail,
			"fabric unhealthy on 4 of 4 GPUs: gpu 0 (0008:01:00.0) health summary UNHEALTHY, gpu 1 (0009:01:00.0) health summary UNHEALTHY (+2 more)", RemedyResetGPU},
		{"route unhealthy on one GPU, without a summary (v2 struct)", noSwitch,
			gb200Tray(node.FabricHealth{DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "TRUE", AccessTimeoutRecovery: "FALSE"}, healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) route unhealthy", RemedyResetGPU},
		{"route unhealthy with a healthy summary: the bit decides", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.RouteUnhealthy = "TRUE" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) route unhealthy", RemedyResetGPU},
		{"route recovery in progress", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.Summary, h.RouteRecovery = "UNHEALTHY", "TRUE" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) health summary UNHEALTHY, route recovery in progress", RemedyResetGPU},
		{"access timeout recovery in progress", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.Summary, h.AccessTimeoutRecovery = "UNHEALTHY", "TRUE" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) health summary UNHEALTHY, access timeout recovery in progress", RemedyResetGPU},
		// Degraded bandwidth fails, as DCGM's health watch fails it (see fabric_health.go).
		{"degraded bandwidth: limited capacity", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.Summary, h.DegradedBandwidth = "LIMITED_CAPACITY", "TRUE" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) health summary LIMITED_CAPACITY, bandwidth degraded", RemedyResetGPU},
		{"no partition: a configuration for a person to fix", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.Summary, h.IncorrectConfiguration = "UNHEALTHY", "NO_PARTITION" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) health summary UNHEALTHY, incorrect configuration NO_PARTITION", RemedyAdmin},
		{"insufficient NVLinks: not a setting", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.Summary, h.IncorrectConfiguration = "UNHEALTHY", "INSUFFICIENT_NVLINKS" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) health summary UNHEALTHY, incorrect configuration INSUFFICIENT_NVLINKS", RemedyResetGPU},
		{"a configuration fault beside a route fault: a person is needed, as the most drastic", noSwitch,
			gb200Tray(with(func(h *node.FabricHealth) { h.IncorrectConfiguration, h.RouteUnhealthy = "INVALID_LOCATION", "TRUE" }), healthy), fmOff, StatusFail,
			"fabric unhealthy on 1 of 4 GPUs: gpu 0 (0008:01:00.0) route unhealthy, incorrect configuration INVALID_LOCATION", RemedyAdmin},
		{"a summary nodecheck does not know: not judged", noSwitch, gb200Tray(with(func(h *node.FabricHealth) { h.Summary = "VALUE_9" }), healthy), fmOff, StatusError,
			"fabric health not understood on 1 GPU: gpu 0 (0008:01:00.0) summary VALUE_9", ""},
		{"a flag nodecheck does not know: not judged", noSwitch, gb200Tray(with(func(h *node.FabricHealth) { h.DegradedBandwidth = "VALUE_3" }), healthy), fmOff, StatusError,
			"fabric health not understood on 1 GPU: gpu 0 (0008:01:00.0) degraded_bandwidth VALUE_3", ""},
		{"registration failed and unhealthy: the registration is named", noSwitch,
			changeGPU(gb200Tray(dra626, healthy), 0, func(g *node.GPU) { g.Fabric.Status = "Insufficient Resources" }), fmOff, StatusFail,
			"fabric registration failed or not completed on 1 of 4 GPUs: gpu 0 (0008:01:00.0) COMPLETED with Insufficient Resources", RemedyReboot},
		{"HGX H100 with NVSwitches: an unhealthy GPU fails too", h100PCI(), h100With(dra626), h100Commands(), StatusFail,
			"fabric unhealthy on 1 of 8 GPUs: gpu 2 (0000:4c:00.0) health summary UNHEALTHY", RemedyResetGPU},
		{"HGX H100 reporting the Bandwidth part alone (565): fine", h100PCI(), h100With(node.FabricHealth{DegradedBandwidth: "FALSE"}), h100Commands(), StatusOK,
			"driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (health good on 1) (4 NVSwitches)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &execFacts{fakeFacts: &fakeFacts{pci: tc.pci, gpus: tc.gpus}, cmds: tc.cmds}
			got := fabricManager{}.Run(context.Background(), gpuEnv(f, "gpu-gb200-01", config.Default(Schema())))
			assertRemedies(t, got)
			settleRemedy(&got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
			if got.Remedy != tc.wantRemedy {
				t.Errorf("remedy %q, want %q", got.Remedy, tc.wantRemedy)
			}
		})
	}
}

// TestFabricHealthCapture: the real Fabric block of kubernetes-sigs/dra-driver-nvidia-gpu#626
// (State Completed, Status Success, Health Summary Unhealthy), imported as
// `nodecheck import-nvidia-smi` does, fails on a tray without NVSwitches; it was ok before
// the health was read.
func TestFabricHealthCapture(t *testing.T) {
	inv := captureInv(t, "k8sdra-626-fabric-completed-health-unhealthy-framed.txt")
	got := judgeFabricWithoutNVSwitch(inv, Detail{Device: "service nvidia-fabricmanager", Status: StatusOK})
	assertRemedies(t, got)
	want := brief{"", "fail", "fabric unhealthy on 1 of 1 GPU: gpu 0 (0008:01:00.0) health summary UNHEALTHY"}
	if diff := cmp.Diff(want, brief{"", string(got.Status), got.Summary}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
