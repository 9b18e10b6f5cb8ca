package checks

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/slurm"
)

func TestGPUCount(t *testing.T) {
	// Variations of the H100 node, one change each.
	lostDev := func() node.GPUInventory { // GPU 4 lost: NVML opens no handle, so no bus id
		inv := h100NVML()
		inv.Devices[4] = node.GPU{Index: 4, Error: "ERROR_GPU_IS_LOST"}
		return inv
	}
	lostWithBus := func() node.GPUInventory {
		inv := h100NVML()
		inv.Devices[4].Error = "ERROR_GPU_IS_LOST"
		return inv
	}
	seven := func() node.GPUInventory { // GPU at 0000:9b:00.0 gone from NVML altogether
		inv := h100NVML()
		inv.Devices = append(inv.Devices[:4:4], inv.Devices[5:]...)
		inv.DeviceCount = 7
		return inv
	}
	twoGone := func() node.GPUInventory {
		inv := h100NVML()
		inv.Devices = append(inv.Devices[:1:1], inv.Devices[2:7]...)
		inv.DeviceCount = 6
		return inv
	}
	noBusIDs := func() node.GPUInventory {
		inv := h100NVML()
		for i := range inv.Devices {
			inv.Devices[i].PCIBusID = ""
		}
		return inv
	}
	a100s := func() node.GPUInventory {
		inv := h100NVML()
		for i := range inv.Devices {
			inv.Devices[i].Name = "NVIDIA A100-SXM4-80GB"
		}
		return inv
	}
	pciWithout := func(addr string) []node.PCIDevice {
		var out []node.PCIDevice
		for _, d := range h100PCI() {
			if d.Address != addr {
				out = append(out, d)
			}
		}
		return out
	}
	cpuPCI := []node.PCIDevice{{Address: "0000:00:00.0", Vendor: 0x8086, Class: 0x088000}}
	noLib := node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}
	notLoaded := node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}
	gres := func(g string) string {
		return "GresTypes=gpu\nNodeName=gpu-h100-[01-16] Gres=" + g + "\nNodeName=cpu-[01-32] CPUs=224\n"
	}
	displayGPU := []node.PCIDevice{{Address: "0000:03:00.0", Vendor: 0x10de, Class: 0x030000, CurLinkWidth: 16, MaxLinkWidth: 16}}
	oneGPU := node.GPUInventory{Init: "SUCCESS", DriverVersion: "535.161.08", DeviceCount: 1,
		Devices: []node.GPU{{Index: 0, Name: "NVIDIA RTX A2000", PCIBusID: "00000000:03:00.0"}}}

	tests := []struct {
		name        string
		slurm       string // slurm.conf; empty: none
		node        string
		pci         []node.PCIDevice
		pciErr      error
		gpus        node.GPUInventory
		gpuErr      error
		wantStatus  Status
		wantSummary string
	}{
		{"healthy", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:h100:8), NVML and on PCI"},
		{"GPU gone from NVML, still on PCI", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, seven(), nil, StatusFail,
			"7/8 GPUs in NVML, 8 on PCI: 0000:9b:00.0 missing"},
		{"GPU lost: NVML gives an index, no bus id", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, lostDev(), nil, StatusFail,
			"7/8 GPUs in NVML, 8 on PCI: 0000:9b:00.0 missing, gpu 4 ERROR_GPU_IS_LOST"},
		{"GPU lost with its bus id", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, lostWithBus(), nil, StatusFail,
			"7/8 GPUs in NVML, 8 on PCI: 0000:9b:00.0 ERROR_GPU_IS_LOST"},
		{"two GPUs gone", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, twoGone(), nil, StatusFail,
			"6/8 GPUs in NVML, 8 on PCI: 0000:3b:00.0 missing, 0000:db:00.0 missing"},
		{"GPU off the bus and out of NVML", h100SlurmConf, "gpu-h100-01", pciWithout("0000:9b:00.0"), nil, seven(), nil, StatusFail,
			"slurm.conf expects 8 GPUs (Gres=gpu:h100:8), NVML and PCI show 7"},
		{"NVML sees a GPU the bus listing lacks", h100SlurmConf, "gpu-h100-01", pciWithout("0000:db:00.0"), nil, h100NVML(), nil, StatusFail,
			"8/8 GPUs in NVML, 7 on PCI: 0000:db:00.0 not on PCI"},
		{"slurm.conf expects more", gres("gpu:h100:9"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusFail,
			"slurm.conf expects 9 GPUs (Gres=gpu:h100:9), NVML and PCI show 8"},
		{"slurm.conf expects fewer", gres("gpu:h100:4"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusFail,
			"slurm.conf expects 4 GPUs (Gres=gpu:h100:4), NVML and PCI show 8"},
		{"counts summed over types", gres("gpu:h100:4,gpu:h100nvl:4"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusWarn,
			"8 GPUs agree, but Gres type h100nvl matches 0 of 4 GPUs by NVML name (nvidia_h100_80gb_hbm3)"},
		{"untyped Gres", gres("gpu:8"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:8), NVML and on PCI"},
		{"other GRES are not GPUs", gres("gpu:h100:8,mps:800,shard:64"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:h100:8), NVML and on PCI"},
		{"autodetect-style type", gres("gpu:nvidia_h100_80gb_hbm3:8"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:nvidia_h100_80gb_hbm3:8), NVML and on PCI"},
		{"type in upper case", gres("gpu:H100:8"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:H100:8), NVML and on PCI"},
		{"type names another model", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, a100s(), nil, StatusWarn,
			"8 GPUs agree, but Gres type h100 matches 0 of 8 GPUs by NVML name (nvidia_a100-sxm4-80gb)"},
		{"vague type", gres("gpu:tesla:8"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusWarn,
			"8 GPUs agree, but Gres type tesla matches 0 of 8 GPUs by NVML name (nvidia_h100_80gb_hbm3)"},
		{"MIG types count instances", gres("gpu:h100:7,gpu:h100_3g.40gb:2"), "gpu-h100-01", h100PCI(), nil, h100NVML(), nil, StatusOK,
			"8 GPUs in NVML and on PCI; slurm.conf Gres=gpu:h100:7,gpu:h100_3g.40gb:2 counts MIG instances, not compared"},
		{"MIG node with a lost GPU", gres("gpu:h100:7,gpu:h100_3g.40gb:2"), "gpu-h100-01", h100PCI(), nil, seven(), nil, StatusFail,
			"7 GPUs in NVML, 8 on PCI: 0000:9b:00.0 missing"},
		{"NVML bus ids unknown: counts only", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, noBusIDs(), nil, StatusOK,
			"8 GPUs in slurm.conf (Gres=gpu:h100:8), NVML and on PCI"},
		{"driver not loaded", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, notLoaded, nil, StatusFail,
			"NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 8 GPUs"},
		{"no driver, GPUs on the bus, none in slurm.conf", h100SlurmConf, "cpu-01", h100PCI(), nil, noLib, nil, StatusFail,
			"NVML init: ERROR_LIBRARY_NOT_FOUND, 8 NVIDIA GPUs on PCI"},
		{"CPU node", h100SlurmConf, "cpu-01", cpuPCI, nil, noLib, nil, StatusSkip,
			"no GPU Gres for cpu-01 in slurm.conf and no NVIDIA GPU on the PCI bus (NVML init: ERROR_LIBRARY_NOT_FOUND)"},
		{"CPU node with the driver", h100SlurmConf, "cpu-01", cpuPCI, nil, node.GPUInventory{Init: "SUCCESS"}, nil, StatusSkip,
			"no GPU Gres for cpu-01 in slurm.conf and no NVIDIA GPU on the PCI bus"},
		{"display GPU on a CPU node warns", h100SlurmConf, "cpu-01", displayGPU, nil, oneGPU, nil, StatusWarn,
			"slurm.conf gives cpu-01 no GPU Gres, but NVML and PCI show 1 GPU: Slurm will not schedule them"},
		{"node not in slurm.conf", h100SlurmConf, "gpu-b200-01", h100PCI(), nil, h100NVML(), nil, StatusError,
			"cannot tell how many GPUs Slurm expects (node gpu-b200-01 is not defined in /etc/slurm/slurm.conf); NVML and PCI agree on 8"},
		{"no slurm.conf, a GPU lost", "", "gpu-h100-01", h100PCI(), nil, seven(), nil, StatusFail,
			"7 GPUs in NVML, 8 on PCI: 0000:9b:00.0 missing"},
		{"no slurm.conf, no GPU", "", "cpu-01", cpuPCI, nil, noLib, nil, StatusError,
			"cannot tell how many GPUs Slurm expects (find slurm.conf: /etc/slurm/slurm.conf does not exist); none on PCI, NVML init: ERROR_LIBRARY_NOT_FOUND"},
		{"PCI listing fails", h100SlurmConf, "gpu-h100-01", nil, errors.New("read /sys/bus/pci/devices: permission denied"), h100NVML(), nil, StatusError,
			"list PCI devices: read /sys/bus/pci/devices: permission denied"},
		{"NVML call fails", h100SlurmConf, "gpu-h100-01", h100PCI(), nil, node.GPUInventory{}, errors.New("nvml helper: exit status 127"), StatusError,
			"query NVML: nvml helper: exit status 127"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.slurm != "" {
				files["/etc/slurm/slurm.conf"] = tc.slurm
			}
			f := &fakeFacts{files: files, pci: tc.pci, pciErr: tc.pciErr, gpus: tc.gpus, gpuErr: tc.gpuErr}
			got := gpuCount{}.Run(context.Background(), gpuEnv(f, tc.node, nil))
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
}

// TestGPUCountDetails: every GPU gets a detail, the lost one first among the failures.
func TestGPUCountDetails(t *testing.T) {
	inv := h100NVML()
	inv.Devices[4] = node.GPU{Index: 4, Error: "ERROR_GPU_IS_LOST"}
	f := &fakeFacts{files: map[string]string{"/etc/slurm/slurm.conf": h100SlurmConf}, pci: h100PCI(), gpus: inv}
	got := gpuCount{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
	var bad []Detail
	for _, d := range got.Details {
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
	}
	want := []Detail{
		{Device: "gpu 0000:9b:00.0", Status: StatusFail, Message: "on PCI, not in NVML", Observed: "PCI", Expected: "NVML, PCI", Remedy: RemedyReboot,
			Subject: Subject{GPU: GPURef{Bus: "0000:9b:00.0"}}},
		{Device: "gpu 4", Status: StatusFail, Message: "NVML: ERROR_GPU_IS_LOST", Observed: "ERROR_GPU_IS_LOST", Expected: "usable in NVML", Remedy: RemedyReboot,
			Subject: Subject{GPU: GPURef{Index: 4, HasIndex: true}}},
	}
	if diff := cmp.Diff(want, bad); diff != "" {
		t.Errorf("failing details (-want +got):\n%s", diff)
	}
	if len(got.Details) != 9 {
		t.Errorf("got %d details, want 9 (8 on PCI + 1 lost): %+v", len(got.Details), got.Details)
	}
	if diff := cmp.Diff("8 (Gres=gpu:h100:8)", got.Expected); diff != "" {
		t.Errorf("Expected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("7 in NVML (device count 8), 8 on PCI", got.Observed); diff != "" {
		t.Errorf("Observed (-want +got):\n%s", diff)
	}
}

func TestGresTypeMatches(t *testing.T) {
	tests := []struct {
		gresType, name string
		want           bool
	}{
		{"h100", "NVIDIA H100 80GB HBM3", true},
		{"a100", "NVIDIA A100-SXM4-80GB", true},
		{"nvidia_a100-pcie-40gb", "NVIDIA A100-PCIE-40GB", true}, // slurmd -C with AutoDetect (corpus slurm-doc-slurmd-C-l3cache.txt)
		{"A100", "NVIDIA A100-SXM4-80GB", true},
		{"h100_80gb", "NVIDIA H100 80GB HBM3", true},
		{"tesla", "Tesla V100-SXM2-16GB", true},
		{"tesla", "NVIDIA H100 80GB HBM3", false},
		{"a100", "NVIDIA H100 80GB HBM3", false},
		{"h100", "NVIDIA GH200 480GB", false},
		{"rtx4090", "NVIDIA GeForce RTX 4090", false}, // Slurm would not match it either: "rtx_4090"
		{"", "NVIDIA H100 80GB HBM3", false},
	}
	for _, tc := range tests {
		t.Run(tc.gresType+"/"+tc.name, func(t *testing.T) {
			if got := gresTypeMatches(tc.gresType, tc.name); got != tc.want {
				t.Errorf("gresTypeMatches(%q, %q) = %v, want %v", tc.gresType, tc.name, got, tc.want)
			}
		})
	}
}

func TestMIGProfile(t *testing.T) {
	tests := []struct {
		gresType string
		want     bool
	}{
		{"a100_3g.20gb", true}, {"1g.10gb", true}, {"nvidia_h100_80gb_hbm3_1g.10gb", true},
		{"h100", false}, {"nvidia_h100_80gb_hbm3", false}, {"a100-sxm4-80gb", false}, {"gh200", false},
	}
	for _, tc := range tests {
		t.Run(tc.gresType, func(t *testing.T) {
			if got := migProfile().MatchString(tc.gresType); got != tc.want {
				t.Errorf("migProfile(%q) = %v, want %v", tc.gresType, got, tc.want)
			}
		})
	}
}

// TestGPUCountDeadline: a fact read cut short by the check's deadline is a fail, not an error.
func TestGPUCountDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeFacts{pciErr: context.Canceled}
	got := gpuCount{}.Run(ctx, gpuEnv(f, "gpu-h100-01", nil))
	assertRemedies(t, got)
	if diff := cmp.Diff(brief{"", "fail", "timed out: list PCI devices"}, brief{"", string(got.Status), got.Summary}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestJudgeGPUCount feeds the judge literal counts: the bus, NVML and slurm.conf.
func TestJudgeGPUCount(t *testing.T) {
	bus := []string{"0000:19:00.0", "0000:3b:00.0"}
	gpu := func(i int, addr, errName string) node.GPU {
		return node.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", PCIBusID: addr, Error: errName}
	}
	two := node.GPUInventory{Init: "SUCCESS", DeviceCount: 2, Devices: []node.GPU{gpu(0, "00000000:19:00.0", ""), gpu(1, "00000000:3B:00.0", "")}}
	h100x2 := gpuExpectation{count: 2, specs: []slurm.GresSpec{{Name: "gpu", Type: "h100", Count: 2}}}
	tests := []struct {
		name        string
		bus         []string
		inv         node.GPUInventory
		exp         gpuExpectation
		wantStatus  Status
		wantSummary string
	}{
		{"all agree", bus, two, h100x2, StatusOK, "2 GPUs in slurm.conf (Gres=gpu:h100:2), NVML and on PCI"},
		{"one lost", bus, node.GPUInventory{Init: "SUCCESS", DeviceCount: 2, Devices: []node.GPU{gpu(0, "00000000:19:00.0", ""), gpu(1, "00000000:3B:00.0", "ERROR_GPU_IS_LOST")}},
			h100x2, StatusFail, "1/2 GPUs in NVML, 2 on PCI: 0000:3b:00.0 ERROR_GPU_IS_LOST"},
		{"one missing from NVML", bus, node.GPUInventory{Init: "SUCCESS", DeviceCount: 1, Devices: []node.GPU{gpu(0, "00000000:19:00.0", "")}},
			h100x2, StatusFail, "1/2 GPUs in NVML, 2 on PCI: 0000:3b:00.0 missing"},
		{"slurm.conf says more", bus, two, gpuExpectation{count: 4, specs: []slurm.GresSpec{{Name: "gpu", Count: 4}}}, StatusFail,
			"slurm.conf expects 4 GPUs (Gres=gpu:4), NVML and PCI show 2"},
		{"slurm.conf unreadable", bus, two, gpuExpectation{err: errors.New("no slurm.conf")}, StatusError,
			"cannot tell how many GPUs Slurm expects (no slurm.conf); NVML and PCI agree on 2"},
		{"NVML down with GPUs on the bus", bus, node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, h100x2, StatusFail,
			"NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 2 GPUs"},
		{"CPU node", nil, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, gpuExpectation{}, StatusSkip,
			"no GPU Gres for cpu01 in slurm.conf and no NVIDIA GPU on the PCI bus (NVML init: ERROR_LIBRARY_NOT_FOUND)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUCount("cpu01", tc.bus, tc.inv, tc.exp)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
