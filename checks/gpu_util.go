package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/text"
)

// PCI vendor ids and class codes the GPU checks look for (include/linux/pci_ids.h; the sysfs
// class file holds base class, subclass and programming interface: 0x030200). Classes are
// compared without the programming interface.
const (
	pciVendorNVIDIA   = 0x10de
	pciVendorMellanox = 0x15b3

	pciClassVGA         = 0x0300 // PCI_CLASS_DISPLAY_VGA: GPUs with a display engine
	pciClass3D          = 0x0302 // PCI_CLASS_DISPLAY_3D: data-centre GPUs (H100, A100)
	pciClassBridgeOther = 0x0680 // PCI_CLASS_BRIDGE_OTHER: how NVSwitches enumerate
	pciClassEthernet    = 0x0200 // PCI_CLASS_NETWORK_ETHERNET: ConnectX in Ethernet mode, BlueField
	pciClassInfiniBand  = 0x0207 // PCI_CLASS_NETWORK_INFINIBAND: ConnectX in InfiniBand mode
)

func pciClass(d node.PCIDevice) uint32 { return d.Class >> 8 }

// isNVIDIAGPU: an NVIDIA function of class 3D controller or VGA. NVIDIA's HDMI audio (0x0403)
// and the Grace root ports (0x0604) of GB200 nodes are not GPUs.
func isNVIDIAGPU(d node.PCIDevice) bool {
	return d.Vendor == pciVendorNVIDIA && (pciClass(d) == pciClass3D || pciClass(d) == pciClassVGA)
}

// isNVSwitch: an NVIDIA function of class "other bridge" (lspci: "Bridge [0680]: NVIDIA
// Corporation Device [10de:22a3]" on HGX H100, [10de:1af1] on HGX A100).
func isNVSwitch(d node.PCIDevice) bool {
	return d.Vendor == pciVendorNVIDIA && pciClass(d) == pciClassBridgeOther
}

// isMellanoxNet: a Mellanox/NVIDIA networking function in InfiniBand or Ethernet mode, which is
// what mlx5_core drives and what appears under /sys/class/infiniband (RoCE included).
func isMellanoxNet(d node.PCIDevice) bool {
	return d.Vendor == pciVendorMellanox && (pciClass(d) == pciClassInfiniBand || pciClass(d) == pciClassEthernet)
}

// sysfsBusID turns a PCI bus id as NVML writes it ("00000000:9A:00.0": 8-digit domain, upper
// case, nvml.h NVML_DEVICE_PCI_BUS_ID_FMT) into the form sysfs and lspci use ("0000:9a:00.0":
// at least 4 domain digits, lower case), so that the two can be compared. A sysfs-form id
// comes back unchanged; an id it cannot read comes back lower-cased and trimmed.
func sysfsBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	dom, rest, ok := strings.Cut(id, ":")
	if !ok || dom == "" || len(dom) > 8 || strings.Count(rest, ":") != 1 {
		return id
	}
	n, err := strconv.ParseUint(dom, 16, 32)
	if err != nil {
		return id
	}
	return fmt.Sprintf("%04x:%s", n, rest)
}

// gpuLabel names a GPU as summaries do: "gpu 3 (0000:3b:00.0)", "gpu 3" when the bus id is
// unknown, "gpu 0000:3b:00.0" when NVML did not give an index.
func gpuLabel(index int, addr string) string {
	switch {
	case index < 0:
		return "gpu " + addr
	case addr == "":
		return "gpu " + strconv.Itoa(index)
	}
	return "gpu " + strconv.Itoa(index) + " (" + addr + ")"
}

// factsError is the result of a fact that could not be read: a fail when the check ran out of
// time (a deadline is a result), else an error naming what was being done.
func factsError(ctx context.Context, doing string, err error) Result {
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out: " + doing, Err: err, Remedy: remedyOf(faultTimeout)}
	}
	return Result{Status: StatusError, Summary: doing + ": " + err.Error(), Err: err}
}

// slurmFilesError is factsError for Slurm's own files: one that did not come in time is a
// file system to fix (admin), not a node to reboot.
func slurmFilesError(ctx context.Context, doing string, err error) Result {
	res := factsError(ctx, doing, err)
	if res.Status == StatusFail {
		res.Remedy = remedyOf(faultSlurmTimeout)
	}
	return res
}

// listSome joins the first max items and counts the rest: "a, b, c (+2 more)".
func listSome(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + moreSuffix(len(items)-max)
}

// countNoun is "1 GPU", "8 GPUs".
func countNoun(n int, one, many string) string {
	return strconv.Itoa(n) + " " + text.Plural(n, one, many)
}

// validPCIAddress reports whether s is a PCI function address as sysfs names it under
// /sys/bus/pci/devices: domain:bus:device.function in lower-case hex, "0000:1a:00.0". The
// kernel prints the domain with "%04x" (drivers/pci/probe.c pci_setup_device), so it has 4
// digits, or more without a leading zero (VMD domains: "10000"); NVML's "00000000" is not it.
func validPCIAddress(s string) bool {
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || len(dom) < 4 || len(dom) > 8 || (len(dom) > 4 && dom[0] == '0') || !lowerHex(dom) {
		return false
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 || !lowerHex(bus) {
		return false
	}
	dev, fn, ok := strings.Cut(rest, ".")
	if !ok || len(dev) != 2 || !lowerHex(dev) || len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return false
	}
	d, _ := strconv.ParseUint(dev, 16, 8)
	return d < 32
}

func lowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// modelWords splits a GPU name, a Slurm feature or a Gres type into lower-case words at
// blanks, '-', '_' and '/': "NVIDIA A100-SXM4-80GB" -> nvidia a100 sxm4 80gb,
// "nvidia_h100_80gb_hbm3" -> nvidia h100 80gb hbm3.
func modelWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '\t' || r == '-' || r == '_' || r == '/'
	})
}

// containsWords reports whether words appear one after another in haystack, the way
// gpu_models rules match a name's words (modelWords): "geforce" is in "NVIDIA
// GeForce RTX 4090", "a100 sxm4" in "NVIDIA A100-SXM4-80GB", "a10" not in "NVIDIA
// A100-PCIE-40GB". No words are in nothing.
func containsWords(haystack, words []string) bool {
	if len(words) == 0 {
		return false
	}
	for i := 0; i+len(words) <= len(haystack); i++ {
		if slices.Equal(haystack[i:i+len(words)], words) {
			return true
		}
	}
	return false
}

// nvmlGPUs reads the NVML inventory for a check that judges each GPU. ok is false when there
// is nothing to judge, with the result to return: NVML not initialised, or listing no GPU, is
// a skip where no NVIDIA GPU is on the PCI bus (a CPU node, with or without the driver
// installed) and an error where one is (its GPUs cannot be judged; gpu_count fails that node).
// what names what the check reads, for the message: "memory error counters".
func nvmlGPUs(ctx context.Context, env *Env, what string) (inv node.GPUInventory, res Result, ok bool) {
	inv, err := env.Facts.GPUs(ctx)
	if err != nil {
		return inv, factsError(ctx, "query NVML", err), false
	}
	if inv.Init == node.InitSuccess && len(inv.Devices) > 0 {
		return inv, Result{}, true
	}
	why := "NVML init " + inv.Init
	switch {
	case inv.Init == "":
		why = "NVML init: no result"
	case inv.Init == node.InitSuccess:
		why = "NVML lists no GPU"
	}
	pci, perr := env.Facts.PCIDevices(ctx)
	if perr != nil && ctx.Err() != nil {
		return inv, factsError(ctx, "list PCI devices", perr), false
	}
	onBus := 0
	for _, d := range pci {
		if isNVIDIAGPU(d) {
			onBus++
		}
	}
	res = Result{Observed: why}
	switch {
	case onBus > 0:
		res.Status = StatusError
		res.Summary = fmt.Sprintf("cannot read the %s of the %s on the PCI bus: %s", what, countNoun(onBus, "NVIDIA GPU", "NVIDIA GPUs"), why)
		res.Err = errors.New(res.Summary)
	case perr != nil:
		res.Status, res.Err = StatusError, perr
		res.Summary = fmt.Sprintf("%s, and the PCI bus cannot be listed to tell whether this node has GPUs: %s", why, text.OneLine(perr.Error(), 120))
	default:
		res.Status = StatusSkip
		res.Summary = "no NVIDIA GPU on the PCI bus (" + why + ")"
	}
	res.Summary = text.OneLine(res.Summary, 160)
	return inv, res, false
}

// gpuSubject is the subject of a detail about NVML's GPU g, found at addr on the PCI bus
// (sysfs form; "" takes NVML's own bus id).
func gpuSubject(g node.GPU, addr string) Subject {
	if addr == "" {
		addr = sysfsBusID(g.PCIBusID)
	}
	s := busSubject(addr)
	if g.Index >= 0 {
		s.GPU.Index, s.GPU.HasIndex = g.Index, true
	}
	s.GPU.UUID, s.GPU.Serial = g.UUID, g.Serial
	return s
}

// busSubject is the subject of a detail about the GPU at the PCI address addr (sysfs form),
// known by its address alone; zero for an address that is none.
func busSubject(addr string) Subject {
	if !validPCIAddress(addr) {
		return Subject{}
	}
	return Subject{GPU: GPURef{Bus: addr}}
}
