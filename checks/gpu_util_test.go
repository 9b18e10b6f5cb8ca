package checks

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// The H100 node of these tests is testdata/snapshots/h100-healthy as Go values: GPU bus ids
// from the nvidia-smi -q capture (corpus nvsmi/gpud-q-h100x8-535.161.08.txt), NVSwitches and
// link widths from the lspci -vvv capture of the same layout (corpus
// pcie/gpud-lspci-vvv-h100x8-node.txt; see the snapshot's SOURCE).
var h100Buses = []string{"19", "3b", "4c", "5d", "9b", "bb", "cb", "db"}

const h100Name = "NVIDIA H100 80GB HBM3"

// h100PCI is the node's NVIDIA functions: 8 GPUs (10de:2330, 3D controller, Gen5 x16) and 4
// NVSwitches (10de:22a3, bridge, 16 GT/s x2).
func h100PCI() []node.PCIDevice {
	var out []node.PCIDevice
	for _, b := range h100Buses[:4] {
		out = append(out, h100GPUFn(b))
	}
	for _, b := range []string{"83", "84", "85", "86"} {
		out = append(out, node.PCIDevice{Address: "0000:" + b + ":00.0", Vendor: 0x10de, Device: 0x22a3, Class: 0x068000,
			CurLinkWidth: 2, MaxLinkWidth: 2, CurLinkSpeedGTs: 16, MaxLinkSpeedGTs: 16})
	}
	for _, b := range h100Buses[4:] {
		out = append(out, h100GPUFn(b))
	}
	return out
}

func h100GPUFn(bus string) node.PCIDevice {
	return node.PCIDevice{Address: "0000:" + bus + ":00.0", Vendor: 0x10de, Device: 0x2330, Class: 0x030200,
		CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkSpeedGTs: 32, MaxLinkSpeedGTs: 32}
}

// h100NVML is what NVML reports on that node: driver 535.161.08, fabric COMPLETED/SUCCESS.
func h100NVML() node.GPUInventory {
	inv := node.GPUInventory{Init: "SUCCESS", DriverVersion: "535.161.08", CUDADriverVersion: 12020, DeviceCount: 8}
	for i, b := range h100Buses {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, MinorNumber: i, Name: h100Name,
			PCIBusID: "00000000:" + strings.ToUpper(b) + ":00.0",
			PCIe:     &node.PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric:   &node.Fabric{State: "COMPLETED", Status: "SUCCESS"}})
	}
	return inv
}

// h100SlurmConf is the fixture cluster's slurm.conf, reduced to what the GPU checks read.
const h100SlurmConf = "GresTypes=gpu\n" +
	"NodeName=gpu-h100-[01-16] CPUs=224 Gres=gpu:h100:8 Feature=h100,ndr\n" +
	"NodeName=cpu-[01-32] CPUs=224 Feature=cpu\n"

// execFacts adds recorded commands to fakeFacts; a command not recorded is not installed,
// as in a snapshot. Commands are keyed by their argv joined with blanks.
type execFacts struct {
	*fakeFacts
	cmds    map[string]node.CmdResult
	execErr error
	ran     []string
}

func (f *execFacts) Exec(_ context.Context, argv []string) (node.CmdResult, error) {
	key := strings.Join(argv, " ")
	f.ran = append(f.ran, key)
	if f.execErr != nil {
		return node.CmdResult{}, f.execErr
	}
	r, ok := f.cmds[key]
	if !ok {
		return node.CmdResult{}, fmt.Errorf("exec %s: %w", argv[0], fs.ErrNotExist)
	}
	r.Argv = argv
	return r, nil
}

// gpuEnv is an Env for node name on facts f, with slurm.conf at /etc/slurm/slurm.conf.
func gpuEnv(f node.Facts, name string, cfg *config.Config) *Env {
	if cfg == nil {
		cfg = config.Default(Schema())
	}
	return &Env{Facts: f, Config: cfg, Mode: config.ModeHealth, Node: name, ReadOnly: true,
		Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
}

func TestSysfsBusID(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"00000000:9A:00.0", "0000:9a:00.0"},    // NVML, nvidia-smi
		{"00000000:DB:00.0", "0000:db:00.0"},    // nvidia-smi -q of the H100 capture
		{"00000001:00:00.0", "0001:00:00.0"},    // Azure ND A100 v4: one domain per GPU
		{"00010000:01:00.0", "10000:01:00.0"},   // VMD domain: sysfs prints %04x, so 5 digits
		{"0000:9a:00.0", "0000:9a:00.0"},        // already sysfs form
		{" 00000000:19:00.0\n", "0000:19:00.0"}, // stray blanks
		{"", ""},
		{"GPU-ee7954ec", "gpu-ee7954ec"},         // not a bus id: lower-cased as is
		{"zzzzzzzz:19:00.0", "zzzzzzzz:19:00.0"}, // domain not hex
		{"000000000:19:00.0", "000000000:19:00.0"},
		{"19:00.0", "19:00.0"}, // no domain
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sysfsBusID(tc.in)); diff != "" {
				t.Errorf("sysfsBusID(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// FuzzSysfsBusID: normalizing is idempotent and never yields upper case, and NVML's form
// of an address sysfs would print comes back as that address.
func FuzzSysfsBusID(f *testing.F) {
	for _, s := range []string{"00000000:9A:00.0", "0000:9a:00.0", "00010000:01:00.0", "", ":", "a:b:c", "ffffffff:ff:1f.7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := sysfsBusID(s)
		if again := sysfsBusID(got); again != got {
			t.Errorf("not idempotent: %q -> %q -> %q", s, got, again)
		}
		if strings.ToLower(got) != got {
			t.Errorf("%q -> %q has upper case", s, got)
		}
		if validPCIAddress(got) {
			var dom, bus, dev, fn uint
			if _, err := fmt.Sscanf(got, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err != nil {
				t.Fatalf("%q: %v", got, err)
			}
			nvml := fmt.Sprintf("%08X:%02X:%02X.%X", dom, bus, dev, fn)
			if back := sysfsBusID(nvml); back != got {
				t.Errorf("NVML form %q of %q -> %q", nvml, got, back)
			}
		}
	})
}

func TestPCIKinds(t *testing.T) {
	tests := []struct {
		name                string
		dev                 node.PCIDevice
		gpu, nvswitch, hcaN bool
	}{
		{"H100 3D controller", node.PCIDevice{Vendor: 0x10de, Device: 0x2330, Class: 0x030200}, true, false, false},
		{"GeForce VGA", node.PCIDevice{Vendor: 0x10de, Device: 0x2684, Class: 0x030000}, true, false, false},
		{"NVIDIA HDMI audio", node.PCIDevice{Vendor: 0x10de, Device: 0x22ba, Class: 0x040300}, false, false, false},
		{"ASPEED BMC VGA", node.PCIDevice{Vendor: 0x1a03, Device: 0x2000, Class: 0x030000}, false, false, false},
		{"H100 NVSwitch", node.PCIDevice{Vendor: 0x10de, Device: 0x22a3, Class: 0x068000}, false, true, false},
		{"Grace root port", node.PCIDevice{Vendor: 0x10de, Device: 0x22b2, Class: 0x060400}, false, false, false},
		{"ConnectX-7 InfiniBand", node.PCIDevice{Vendor: 0x15b3, Device: 0x1021, Class: 0x020700}, false, false, true},
		{"ConnectX-7 Ethernet", node.PCIDevice{Vendor: 0x15b3, Device: 0x1021, Class: 0x020000}, false, false, true},
		{"BlueField-3 bridge", node.PCIDevice{Vendor: 0x15b3, Device: 0x197b, Class: 0x060400}, false, false, false},
		{"Intel Ethernet", node.PCIDevice{Vendor: 0x8086, Device: 0x1593, Class: 0x020000}, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := [3]bool{isNVIDIAGPU(tc.dev), isNVSwitch(tc.dev), isMellanoxNet(tc.dev)}
			if diff := cmp.Diff([3]bool{tc.gpu, tc.nvswitch, tc.hcaN}, got); diff != "" {
				t.Errorf("(gpu, nvswitch, hca) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainsWords(t *testing.T) {
	tests := []struct {
		name, words string
		want        bool
	}{
		{nameRTX4090, "geforce", true},
		{nameRTX4090, "rtx 4090", true},
		{"NVIDIA RTX A6000", "rtx", true},
		{nameA100, "a100 sxm4", true},
		{"NVIDIA A100-PCIE-40GB", "a10", false},
		{"NVIDIA A100 80GB PCIe", "a100 pcie", false}, // the words must be adjacent
		{nameH100, "h100 80gb hbm3", true},
		{"NVIDIA GH200 480GB", "h200", false},
		{nameH100, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.words, func(t *testing.T) {
			if got := containsWords(modelWords(tc.name), modelWords(tc.words)); got != tc.want {
				t.Errorf("containsWords(%q, %q) = %v, want %v", tc.name, tc.words, got, tc.want)
			}
		})
	}
}

func TestValidPCIAddress(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"0000:1a:00.0", true}, {"0000:db:00.0", true}, {"10000:01:00.1", true}, {"0000:1b:1f.7", true},
		{"0000:1A:00.0", false}, {"00000000:1a:00.0", false}, {"000000000:1a:00.0", false}, {"1a:00.0", false},
		{"0000:1a:00", false}, {"0000:1a:20.0", false}, {"0000:1a:00.8", false}, {"0000:1a:00:0", false}, {"", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			if got := validPCIAddress(tc.addr); got != tc.want {
				t.Errorf("validPCIAddress(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}
