package checks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idPCIeLink = "pcie_link"

// pcieLink checks that every GPU, NVSwitch and Mellanox HCA runs its PCIe link at full width
// (or at least min_width). A GPU's link comes from NVML where NVML reports it, from sysfs
// otherwise. Link speed is never judged: GPUs lower it when idle (a Gen5 H100 at rest shows
// 2.5 GT/s), so a slower link is only a note in the details.
//
// Network functions judged: Mellanox (0x15b3) functions of class InfiniBand or Ethernet,
// which is every port mlx5_core drives and so every device under /sys/class/infiniband,
// RoCE and BlueField included. The functions of one card share one link, so only the first
// function of each PCI device (bus:device) is judged. Virtual functions report no link
// width and are left out like any function without one.
type pcieLink struct{}

func (pcieLink) ID() string { return idPCIeLink }

func (pcieLink) Description() string {
	return "GPUs, NVSwitches and Mellanox HCAs run their PCIe link at max width (or min_width); speed is only noted"
}

func (pcieLink) Settings(cfg *config.Config) config.CheckCommon {
	return cfg.Checks.PCIeLink.CheckCommon
}

// pcieDev is one link to judge.
type pcieDev struct {
	kind   string // "gpu", "nvswitch", "hca"
	addr   string // "0000:3b:00.0"
	label  string // "gpu 3 (0000:3b:00.0)"
	cur    int    // current width, lanes
	max    int    // max width, lanes
	speed  string // "Gen1 of Gen5", "16 GT/s of 32 GT/s": set when below the max
	source string // "NVML" or "sysfs"
}

func (pcieLink) Run(ctx context.Context, env *Env) Result {
	cfg := env.Config.Checks.PCIeLink
	pci, err := env.Facts.PCIDevices(ctx)
	if err != nil {
		return factsError(ctx, "list PCI devices", err)
	}
	// NVML is optional here: without it, sysfs has the GPUs' links too.
	inv, err := env.Facts.GPUs(ctx)
	if err != nil && ctx.Err() != nil {
		return factsError(ctx, "query NVML", err)
	}
	nvmlNote := ""
	nvmlAt := map[string]node.GPU{}
	switch {
	case err != nil:
		nvmlNote = "NVML unavailable (" + err.Error() + "): GPU links from sysfs"
	case inv.Init != nvmlSuccess:
		nvmlNote = "NVML init: " + inv.Init + ": GPU links from sysfs"
	default:
		for _, g := range inv.Devices {
			if g.Error == "" && g.PCIBusID != "" {
				nvmlAt[sysfsBusID(g.PCIBusID)] = g
			}
		}
	}

	var devs []pcieDev
	var unjudged []string // "nvswitch 0000:05:00.0: no link width in sysfs"
	excluded := 0
	onBus := map[string]bool{}
	hcaLinks := map[string]bool{}
	for _, d := range pci {
		var kind string
		switch {
		case isNVIDIAGPU(d):
			kind = "gpu"
			onBus[d.Address] = true
		case isNVSwitch(d):
			kind = "nvswitch"
		case isMellanoxNet(d):
			kind = "hca"
			link := pciSlot(d.Address)
			if hcaLinks[link] {
				continue
			}
			hcaLinks[link] = true
		default:
			continue
		}
		if slices.Contains(cfg.ExcludeDevices, d.Address) {
			excluded++
			continue
		}
		if g, ok := nvmlAt[d.Address]; ok && kind == "gpu" && g.PCIe != nil && g.PCIe.MaxLinkWidth > 0 {
			devs = append(devs, nvmlLink(g, d.Address))
			continue
		}
		label := kind + " " + d.Address
		if g, ok := nvmlAt[d.Address]; ok {
			label = gpuLabel(g.Index, d.Address)
		}
		dev := pcieDev{kind: kind, addr: d.Address, label: label, cur: d.CurLinkWidth, max: d.MaxLinkWidth, source: "sysfs"}
		if d.CurLinkSpeedGTs > 0 && d.MaxLinkSpeedGTs > 0 && d.CurLinkSpeedGTs < d.MaxLinkSpeedGTs {
			dev.speed = fmtGTs(d.CurLinkSpeedGTs) + " of " + fmtGTs(d.MaxLinkSpeedGTs)
		}
		devs = append(devs, dev)
	}
	// GPUs NVML reports that the PCI listing lacks (gpu_count names them) still have a link.
	for addr, g := range nvmlAt {
		if !onBus[addr] && !slices.Contains(cfg.ExcludeDevices, addr) && g.PCIe != nil && g.PCIe.MaxLinkWidth > 0 {
			devs = append(devs, nvmlLink(g, addr))
		}
	}
	slices.SortStableFunc(devs, func(a, b pcieDev) int {
		if c := kindRank(a.kind) - kindRank(b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.addr, b.addr)
	})

	res := Result{Status: StatusOK}
	var bad []Detail
	judged := map[string]int{}
	for _, dv := range devs {
		d, ok := judgeLink(dv, cfg.MinWidth)
		if !ok {
			unjudged = append(unjudged, dv.label)
		} else {
			judged[dv.kind]++
		}
		if d.Status == StatusFail {
			bad = append(bad, d)
		}
		res.Details = append(res.Details, d)
	}
	if nvmlNote != "" {
		res.Details = append(res.Details, Detail{Device: "nvml", Status: StatusOK, Message: nvmlNote})
	}
	total := judged["gpu"] + judged["nvswitch"] + judged["hca"]
	res.Observed = fmt.Sprintf("%d links judged, %d below expected width", total, len(bad))
	res.Expected = "max width"
	if cfg.MinWidth > 0 {
		res.Expected = fmt.Sprintf("max width or x%d", cfg.MinWidth)
	}
	if len(bad) > 0 {
		res.Status = StatusFail
		res.Summary = bad[0].Device + " " + bad[0].Message + moreSuffix(len(bad)-1)
		return res
	}
	exclNote := ""
	if excluded > 0 {
		exclNote = fmt.Sprintf(" (%d excluded by config)", excluded)
	}
	if len(devs) == 0 {
		res.Status = StatusSkip
		if excluded > 0 {
			res.Summary = "every GPU, NVSwitch and HCA on the PCI bus is excluded by config" + exclNote
		} else {
			res.Summary = "no GPU, NVSwitch or Mellanox InfiniBand/Ethernet HCA on the PCI bus"
		}
		return res
	}
	if total == 0 {
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no PCIe link width for any of %d devices (%s): nothing to judge (a virtual machine?)", len(devs), listSome(unjudged, 2))
		return res
	}
	var kinds []string
	for _, k := range []struct{ kind, one, many string }{{"gpu", "GPU", "GPUs"}, {"nvswitch", "NVSwitch", "NVSwitches"}, {"hca", "HCA", "HCAs"}} {
		if judged[k.kind] > 0 {
			kinds = append(kinds, countNoun(judged[k.kind], k.one, k.many))
		}
	}
	width := "at full PCIe width"
	if cfg.MinWidth > 0 {
		width = fmt.Sprintf("at full PCIe width or x%d", cfg.MinWidth)
	}
	res.Summary = strings.Join(kinds, ", ") + " " + width + exclNote
	if len(unjudged) > 0 {
		res.Summary += fmt.Sprintf("; %d without link width not judged", len(unjudged))
	}
	return res
}

// judgeLink compares a link's current width with its max (or min_width, when lower). ok is
// false when the link cannot be judged: no width (virtual function, VM, attribute absent), or
// a current width above the max, which is what config space reads as all ones give when a
// device has dropped off the bus.
func judgeLink(dv pcieDev, minWidth int) (Detail, bool) {
	d := Detail{Device: dv.label, Status: StatusOK}
	if dv.cur <= 0 || dv.max <= 0 || dv.cur > dv.max {
		d.Message = fmt.Sprintf("not judged: %s link width x%d of x%d", dv.source, dv.cur, dv.max)
		if dv.cur <= 0 || dv.max <= 0 {
			d.Message = "not judged: no link width in " + dv.source
		}
		return d, false
	}
	want := dv.max
	if minWidth > 0 && minWidth < want {
		want = minWidth
	}
	d.Observed, d.Expected = "x"+strconv.Itoa(dv.cur), "x"+strconv.Itoa(want)
	if dv.cur < want {
		d.Status = StatusFail
		d.Message = fmt.Sprintf("PCIe x%d, expected x%d", dv.cur, want)
		if want != dv.max {
			d.Message += fmt.Sprintf(" (max x%d)", dv.max)
		}
	} else {
		d.Message = fmt.Sprintf("PCIe x%d of x%d (%s)", dv.cur, dv.max, dv.source)
	}
	if dv.speed != "" {
		d.Message += "; speed " + dv.speed + ", not judged: links slow down when idle"
	}
	return d, true
}

func nvmlLink(g node.GPU, addr string) pcieDev {
	dv := pcieDev{kind: "gpu", addr: addr, label: gpuLabel(g.Index, addr), cur: g.PCIe.CurLinkWidth, max: g.PCIe.MaxLinkWidth, source: "NVML"}
	if g.PCIe.CurLinkGen > 0 && g.PCIe.MaxLinkGen > 0 && g.PCIe.CurLinkGen < g.PCIe.MaxLinkGen {
		dv.speed = fmt.Sprintf("Gen%d of Gen%d", g.PCIe.CurLinkGen, g.PCIe.MaxLinkGen)
	}
	return dv
}

// pciSlot is an address without its function: "0000:1a:00.1" -> "0000:1a:00". Functions of
// one slot share the physical link.
func pciSlot(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return addr
}

// kindRank orders the report: GPUs, then NVSwitches, then HCAs.
func kindRank(kind string) int {
	switch kind {
	case "gpu":
		return 0
	case "nvswitch":
		return 1
	}
	return 2
}

func fmtGTs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " GT/s" }
