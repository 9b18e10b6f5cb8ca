package checks

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// Network functions of the lspci -vvv capture of an 8x H100 node (corpus
// pcie/gpud-lspci-vvv-h100x8-node.txt): a ConnectX-7 at 1a:00.0 (15b3:1021, Ethernet,
// LnkCap 32GT/s x16) and a dual-port ConnectX-6 Dx at 1b:00.0/1b:00.1 (15b3:101d, 16GT/s
// x16); both functions of the CX-6 Dx report the one link they share.
func cx7(addr string, cur int) node.PCIDevice {
	return node.PCIDevice{Address: addr, Vendor: 0x15b3, Device: 0x1021, Class: 0x020700,
		CurLinkWidth: cur, MaxLinkWidth: 16, CurLinkSpeedGTs: 32, MaxLinkSpeedGTs: 32}
}

func cx6dx(addr string, cur int) node.PCIDevice {
	return node.PCIDevice{Address: addr, Vendor: 0x15b3, Device: 0x101d, Class: 0x020000,
		CurLinkWidth: cur, MaxLinkWidth: 16, CurLinkSpeedGTs: 16, MaxLinkSpeedGTs: 16}
}

func TestPCIeLink(t *testing.T) {
	// sysfsWidth and nvmlWidth set GPU i's current width in sysfs or in NVML.
	sysfsWidth := func(i, w int) []node.PCIDevice {
		pci := h100PCI()
		for j := range pci {
			if pci[j].Address == "0000:"+h100Buses[i]+":00.0" {
				pci[j].CurLinkWidth = w
			}
		}
		return pci
	}
	nvmlWidth := func(i, w int) node.GPUInventory {
		inv := h100NVML()
		inv.Devices[i].PCIe.CurLinkWidth = w
		return inv
	}
	idle := func() node.GPUInventory { // idle H100s at Gen1 (2.5 GT/s) of Gen5
		inv := h100NVML()
		for i := range inv.Devices {
			inv.Devices[i].PCIe.CurLinkGen = 1
		}
		return inv
	}
	noPCIe := func() node.GPUInventory {
		inv := h100NVML()
		for i := range inv.Devices {
			inv.Devices[i].PCIe = nil
		}
		return inv
	}
	switchAt := func(addr string, w int) []node.PCIDevice {
		pci := h100PCI()
		for j := range pci {
			if pci[j].Address == addr {
				pci[j].CurLinkWidth = w
			}
		}
		return pci
	}
	withNet := func(net ...node.PCIDevice) []node.PCIDevice { return append(h100PCI(), net...) }
	// The A100 VM of testdata/snapshots/a100-healthy: no link attributes in sysfs at all,
	// GPU links from NVML only.
	a100PCI := func() []node.PCIDevice {
		var out []node.PCIDevice
		for _, d := range h100PCI() {
			d.CurLinkWidth, d.MaxLinkWidth, d.CurLinkSpeedGTs, d.MaxLinkSpeedGTs = 0, 0, 0, 0
			out = append(out, d)
		}
		return out
	}
	twoNarrow := nvmlWidth(6, 8)
	twoNarrow.Devices[1].PCIe.CurLinkWidth = 4
	fallen := sysfsWidth(2, 63) // config space reads all ones: width field 0x3f
	notLoaded := node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}
	cpu := []node.PCIDevice{{Address: "0000:00:00.0", Vendor: 0x8086, Class: 0x088000}}

	tests := []struct {
		name        string
		pci         []node.PCIDevice
		pciErr      error
		gpus        node.GPUInventory
		gpuErr      error
		minWidth    int
		exclude     []string
		wantStatus  Status
		wantSummary string
	}{
		{"healthy H100", h100PCI(), nil, h100NVML(), nil, 0, nil, StatusOK, "8 GPUs, 4 NVSwitches at full PCIe width"},
		{"GPU at x8 in NVML and sysfs", sysfsWidth(3, 8), nil, nvmlWidth(3, 8), nil, 0, nil, StatusFail,
			"gpu 3 (0000:5d:00.0) PCIe x8, expected x16"},
		{"NVML is preferred over sysfs", sysfsWidth(3, 8), nil, h100NVML(), nil, 0, nil, StatusOK,
			"8 GPUs, 4 NVSwitches at full PCIe width"},
		{"NVML without PCIe facts: sysfs", sysfsWidth(3, 8), nil, noPCIe(), nil, 0, nil, StatusFail,
			"gpu 3 (0000:5d:00.0) PCIe x8, expected x16"},
		{"driver not loaded: sysfs", sysfsWidth(3, 8), nil, notLoaded, nil, 0, nil, StatusFail,
			"gpu 0000:5d:00.0 PCIe x8, expected x16"},
		{"NVML call fails: sysfs", h100PCI(), nil, node.GPUInventory{}, errors.New("nvml helper: exit status 127"), 0, nil, StatusOK,
			"8 GPUs, 4 NVSwitches at full PCIe width"},
		{"two GPUs degraded", h100PCI(), nil, twoNarrow, nil, 0, nil, StatusFail,
			"gpu 1 (0000:3b:00.0) PCIe x4, expected x16 (+1 more)"},
		{"idle GPUs at Gen1 are fine", h100PCI(), nil, idle(), nil, 0, nil, StatusOK, "8 GPUs, 4 NVSwitches at full PCIe width"},
		{"NVSwitch at x1 of x2", switchAt("0000:85:00.0", 1), nil, h100NVML(), nil, 0, nil, StatusFail,
			"nvswitch 0000:85:00.0 PCIe x1, expected x2"},
		{"min_width accepts x8", sysfsWidth(3, 8), nil, nvmlWidth(3, 8), nil, 8, nil, StatusOK,
			"8 GPUs, 4 NVSwitches at full PCIe width or x8"},
		{"min_width still catches x4", sysfsWidth(3, 4), nil, nvmlWidth(3, 4), nil, 8, nil, StatusFail,
			"gpu 3 (0000:5d:00.0) PCIe x4, expected x8 (max x16)"},
		{"min_width above a device's max expects its max", switchAt("0000:83:00.0", 1), nil, h100NVML(), nil, 8, nil, StatusFail,
			"nvswitch 0000:83:00.0 PCIe x1, expected x2"},
		{"HCAs at full width, one per card", withNet(cx7("0000:1a:00.0", 16), cx6dx("0000:1b:00.0", 16), cx6dx("0000:1b:00.1", 16)), nil, h100NVML(), nil, 0, nil, StatusOK,
			"8 GPUs, 4 NVSwitches, 2 HCAs at full PCIe width"},
		{"HCA at x8", withNet(cx7("0000:1a:00.0", 8)), nil, h100NVML(), nil, 0, nil, StatusFail,
			"hca 0000:1a:00.0 PCIe x8, expected x16"},
		{"second function of a card is the same link", withNet(cx6dx("0000:1b:00.0", 16), cx6dx("0000:1b:00.1", 8)), nil, h100NVML(), nil, 0, nil, StatusOK,
			"8 GPUs, 4 NVSwitches, 1 HCA at full PCIe width"},
		{"excluded HCA", withNet(cx7("0000:1a:00.0", 8)), nil, h100NVML(), nil, 0, []string{"0000:1a:00.0"}, StatusOK,
			"8 GPUs, 4 NVSwitches at full PCIe width (1 excluded by config)"},
		{"A100 VM: GPUs from NVML, NVSwitches not judged", a100PCI(), nil, h100NVML(), nil, 0, nil, StatusOK,
			"8 GPUs at full PCIe width; 4 without link width not judged"},
		{"VM without link data anywhere", a100PCI(), nil, notLoaded, nil, 0, nil, StatusSkip,
			"no PCIe link width for any of 12 devices (gpu 0000:19:00.0, gpu 0000:3b:00.0 (+10 more)): nothing to judge (a virtual machine?)"},
		// Issue 12: a link whose width cannot be read is not one at full width. gpu_count
		// fails the node for the GPU itself.
		{"GPU fallen off the bus: its width not read", fallen, nil, notLoaded, nil, 0, nil, StatusError,
			"gpu 0000:4c:00.0 link width not read: sysfs link width x63 of x16 (the device does not answer: fallen off the bus?)"},
		{"NVSwitch without width on a bus that has widths", switchAt("0000:85:00.0", 0), nil, h100NVML(), nil, 0, nil, StatusError,
			"nvswitch 0000:85:00.0 link width not read: no link width in sysfs"},
		{"GPU NVML lists without a width, none in sysfs", a100PCI(), nil, noPCIe(), nil, 0, nil, StatusError,
			"gpu 0 (0000:19:00.0) link width not read: no link width in sysfs (+7 more)"},
		// Invented: a ConnectX-7 virtual function (15b3:101e) at 1a:00.1's VF slot, which has
		// no link attributes.
		{"HCA function without width is not judged", withNet(cx7("0000:1a:00.0", 16), node.PCIDevice{Address: "0000:1a:01.0", Vendor: 0x15b3, Device: 0x101e, Class: 0x020700}), nil, h100NVML(), nil, 0, nil, StatusOK,
			"8 GPUs, 4 NVSwitches, 1 HCA at full PCIe width; 1 without link width not judged"},
		{"CPU node", cpu, nil, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, nil, 0, nil, StatusSkip,
			"no GPU, NVSwitch or Mellanox InfiniBand/Ethernet HCA on the PCI bus"},
		{"everything excluded", []node.PCIDevice{cx7("0000:1a:00.0", 8)}, nil, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, nil, 0, []string{"0000:1a:00.0"}, StatusSkip,
			"every GPU, NVSwitch and HCA on the PCI bus is excluded by config (1 excluded by config)"},
		{"PCI listing fails", nil, errors.New("read /sys/bus/pci/devices: permission denied"), h100NVML(), nil, 0, nil, StatusError,
			"list PCI devices: read /sys/bus/pci/devices: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			settings[*pcieLinkConfig](cfg, idPCIeLink).MinWidth = tc.minWidth
			settings[*pcieLinkConfig](cfg, idPCIeLink).ExcludeDevices = tc.exclude
			f := &fakeFacts{pci: tc.pci, pciErr: tc.pciErr, gpus: tc.gpus, gpuErr: tc.gpuErr}
			got := pcieLink{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", cfg))
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
}

// TestPCIeLinkDetails: the speed of an idle GPU is a note, never a failure; NVML is named as
// the source; the degraded GPU comes with both values.
func TestPCIeLinkDetails(t *testing.T) {
	inv := h100NVML()
	inv.Devices[0].PCIe.CurLinkGen = 1
	inv.Devices[3].PCIe.CurLinkWidth = 8
	f := &fakeFacts{pci: h100PCI(), gpus: inv}
	got := pcieLink{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
	want := []Detail{
		{Device: "gpu 0 (0000:19:00.0)", Status: StatusOK, Observed: "x16", Expected: "x16",
			Message: "PCIe x16 of x16 (NVML); speed Gen1 of Gen5, not judged: links slow down when idle", Subject: subjectGPU(0, "0000:19:00.0")},
		{Device: "gpu 3 (0000:5d:00.0)", Status: StatusFail, Observed: "x8", Expected: "x16", Message: "PCIe x8, expected x16", Remedy: RemedyService,
			Subject: subjectGPU(3, "0000:5d:00.0")},
		{Device: "nvswitch 0000:83:00.0", Status: StatusOK, Observed: "x2", Expected: "x2", Message: "PCIe x2 of x2 (sysfs)",
			Subject: Subject{PCI: "0000:83:00.0"}}, // an NVSwitch is no GPU: no GPU a reset could take
	}
	pick := []Detail{got.Details[0], got.Details[3], got.Details[8]}
	if diff := cmp.Diff(want, pick); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if got.Status != StatusFail || len(got.Details) != 12 {
		t.Errorf("status %s with %d details, want fail with 12", got.Status, len(got.Details))
	}
}

// TestPCIeLinkSysfsSpeed: without NVML an idle GPU's sysfs speed (2.5 GT/s of 32) is a note,
// and the width alone decides.
func TestPCIeLinkSysfsSpeed(t *testing.T) {
	pci := h100PCI()
	pci[0].CurLinkSpeedGTs = 2.5
	f := &fakeFacts{pci: pci, gpus: node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}}
	got := pcieLink{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
	want := Detail{Device: "gpu 0000:19:00.0", Status: StatusOK, Observed: "x16", Expected: "x16",
		Message: "PCIe x16 of x16 (sysfs); speed 2.5 GT/s of 32 GT/s, not judged: links slow down when idle",
		Subject: Subject{GPU: GPURef{Bus: "0000:19:00.0"}}} // on the bus, NVML down: known by its address alone
	if diff := cmp.Diff(want, got.Details[0]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Detail{Device: "nvml", Status: StatusOK, Message: "NVML init: ERROR_DRIVER_NOT_LOADED: GPU links from sysfs"}, got.Details[len(got.Details)-1]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPCIeLinkConfig: the keys of [checks.pcie_link] have their defaults, decode, reach a node
// through a group, and bad values name their line and the fix.
func TestPCIeLinkConfig(t *testing.T) {
	tests := []sectionCase{
		{
			name: "pcie_link keys",
			toml: "[checks.pcie_link]\nmin_width = 8\nexclude_devices = [\"0000:1a:00.0\", \"10000:01:00.1\"]\n",
			want: func(c *config.Config) any {
				return []any{settings[*pcieLinkConfig](c, idPCIeLink).MinWidth, settings[*pcieLinkConfig](c, idPCIeLink).ExcludeDevices}
			},
			wantVal: []any{8, []string{"0000:1a:00.0", "10000:01:00.1"}},
		},
		{
			name:    "group sets exclude_devices for its nodes",
			toml:    "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.pcie_link]\nexclude_devices = [\"0000:1b:00.0\"]\n",
			node:    "gpu03",
			want:    func(c *config.Config) any { return settings[*pcieLinkConfig](c, idPCIeLink).ExcludeDevices },
			wantVal: []string{"0000:1b:00.0"},
		},
		{
			name:    "min_width out of range",
			toml:    "[checks.pcie_link]\nmin_width = 64\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.min_width = 64: give a lane count from 1 to 32, such as 8 or 16, or 0 to expect each device's max width`,
		},
		{
			name:    "negative min_width",
			toml:    "[checks.pcie_link]\nmin_width = -1\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.min_width = -1: give a lane count from 1 to 32, such as 8 or 16, or 0 to expect each device's max width`,
		},
		{
			name: "addresses not as sysfs writes them",
			toml: "[checks.pcie_link]\nexclude_devices = [\"00000000:1A:00.0\", \"1a:00.0\"]\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.exclude_devices: "00000000:1A:00.0" is not a PCI address; write it as sysfs does, such as "0000:1a:00.0"` + "\n" +
				`nodecheck.toml:2: checks.pcie_link.exclude_devices: "1a:00.0" is not a PCI address; write it as sysfs does, such as "0000:1a:00.0"`,
		},
	}
	runSectionCases(t, tests)
}

// TestJudgeLink feeds the judge of one link literal widths.
func TestJudgeLink(t *testing.T) {
	tests := []struct {
		name        string
		dv          pcieDev
		minWidth    int
		sysfsWidths bool
		want        Detail
		wantJudged  bool
	}{
		{"full width", pcieDev{kind: "gpu", label: "gpu 0", cur: 16, max: 16, source: "NVML"}, 0, true,
			Detail{Device: "gpu 0", Status: StatusOK, Message: "PCIe x16 of x16 (NVML)", Observed: "x16", Expected: "x16"}, true},
		{"half width", pcieDev{kind: "gpu", label: "gpu 0", cur: 8, max: 16, source: "sysfs"}, 0, true,
			Detail{Device: "gpu 0", Status: StatusFail, Message: "PCIe x8, expected x16", Observed: "x8", Expected: "x16", Remedy: RemedyService}, true},
		{"half width under min_width", pcieDev{kind: "gpu", label: "gpu 0", cur: 8, max: 16, source: "sysfs"}, 8, true,
			Detail{Device: "gpu 0", Status: StatusOK, Message: "PCIe x8 of x16 (sysfs)", Observed: "x8", Expected: "x8"}, true},
		{"idle speed noted", pcieDev{kind: "gpu", label: "gpu 0", cur: 16, max: 16, source: "NVML", speed: "Gen1 of Gen5"}, 0, true,
			Detail{Device: "gpu 0", Status: StatusOK, Message: "PCIe x16 of x16 (NVML); speed Gen1 of Gen5, not judged: links slow down when idle", Observed: "x16", Expected: "x16"}, true},
		{"NVSwitch without width on a bus with widths", pcieDev{kind: "nvswitch", label: "nvswitch 0000:85:00.0", source: "sysfs"}, 0, true,
			Detail{Device: "nvswitch 0000:85:00.0", Status: StatusError, Message: "link width not read: no link width in sysfs", Expected: "a link width"}, false},
		{"NVSwitch on a VM's bus", pcieDev{kind: "nvswitch", label: "nvswitch 0000:85:00.0", source: "sysfs"}, 0, false,
			Detail{Device: "nvswitch 0000:85:00.0", Status: StatusOK, Message: "not judged: no link width in sysfs"}, false},
		{"HCA function without width", pcieDev{kind: "hca", label: "hca 0000:1a:01.0", source: "sysfs"}, 0, true,
			Detail{Device: "hca 0000:1a:01.0", Status: StatusOK, Message: "not judged: no link width in sysfs"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, judged := judgeLink(tc.dv, tc.minWidth, tc.sysfsWidths)
			assertRemedies(t, Result{Status: got.Status, Details: []Detail{got}})
			if diff := cmp.Diff(tc.want, got); diff != "" || judged != tc.wantJudged {
				t.Errorf("judged %v, want %v; detail (-want +got):\n%s", judged, tc.wantJudged, diff)
			}
		})
	}
}
