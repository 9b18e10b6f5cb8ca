package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idPCIeLink = "pcie_link"

// The ways pcie_link fails: its rows of the remedy table (Faults).
const (
	faultPCIeWidth fault = "pcie_link/width"
)

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

// GPUFields implements gpuFactsUser: each GPU's bus id and PCIe link.
func (pcieLink) GPUFields() node.GPUFields {
	return node.GPUPCIBusID | node.GPUPCIe
}

// pcieLinkConfig is [checks.pcie_link].
type pcieLinkConfig struct {
	config.CheckCommon
	// MinWidth, when set, lowers the width a device must reach from its own max width to
	// min(max width, MinWidth): 8 accepts a x16 GPU at x8, and leaves an x2 NVSwitch at x2.
	MinWidth int `toml:"min_width"`
	// ExcludeDevices lists PCI addresses ("0000:1a:00.0", as sysfs writes them) never judged,
	// e.g. a network card that sits in a narrower slot on purpose.
	ExcludeDevices []string `toml:"exclude_devices"`
}

func (pcieLink) Section() config.Section {
	return &pcieLinkConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// pcieMaxWidth is the widest PCIe link the specification defines (x32).
const pcieMaxWidth = 32

// ValidateSection implements config.SectionValidator.
func (pl *pcieLinkConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	if pl.MinWidth < 0 || pl.MinWidth > pcieMaxWidth {
		errs = append(errs, config.Problemf("min_width", " = %d: give a lane count from 1 to %d, such as 8 or 16, or 0 to expect each device's max width", pl.MinWidth, pcieMaxWidth))
	}
	for _, a := range pl.ExcludeDevices {
		if !validPCIAddress(a) {
			errs = append(errs, config.Problemf("exclude_devices", ": %q is not a PCI address; write it as sysfs does, such as \"0000:1a:00.0\"", a))
		}
	}
	return errs
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
	inNVML bool   // a GPU NVML lists, whatever the source of its width
	// subject is the device the link is: the GPU, or an NVSwitch's or HCA's PCI function.
	subject Subject
}

func (pcieLink) Run(ctx context.Context, env *Env) Result {
	pci, err := env.Facts.PCIDevices(ctx)
	if err != nil {
		return factsError(ctx, "list PCI devices", err)
	}
	// NVML is optional here: without it, sysfs has the GPUs' links too.
	inv, err := env.Facts.GPUs(ctx)
	if err != nil && ctx.Err() != nil {
		return factsError(ctx, "query NVML", err)
	}
	var nvml []node.GPU
	nvmlNote := ""
	switch {
	case err != nil:
		nvmlNote = "NVML unavailable (" + err.Error() + "): GPU links from sysfs"
	case inv.Init != node.InitSuccess:
		nvmlNote = "NVML init: " + inv.Init + ": GPU links from sysfs"
	default:
		nvml = inv.Devices
	}
	return judgePCIeLinks(pci, nvml, nvmlNote, settings[*pcieLinkConfig](env.Config, idPCIeLink))
}

// judgePCIeLinks judges the links of the GPUs, NVSwitches and Mellanox HCAs on the PCI bus;
// nvml is NVML's GPUs (nil where NVML is unavailable, which nvmlNote then says).
func judgePCIeLinks(pci []node.PCIDevice, nvml []node.GPU, nvmlNote string, cfg *pcieLinkConfig) Result {
	devs, excluded := pcieLinks(pci, nvml, cfg.ExcludeDevices)
	// A bus that shows no link width for any device is a virtual machine's: there a device
	// without one is not judged. On a bus that shows them, a GPU or NVSwitch without one
	// is a reading that failed.
	sysfsWidths := slices.ContainsFunc(pci, func(d node.PCIDevice) bool { return d.MaxLinkWidth > 0 })
	res := Result{Status: StatusOK}
	var bad, unread []Detail
	var unjudged []string
	judged := map[string]int{}
	for _, dv := range devs {
		d, ok := judgeLink(dv, cfg.MinWidth, sysfsWidths)
		switch {
		case d.Status == StatusError:
			unread = append(unread, d)
		case !ok:
			unjudged = append(unjudged, dv.label)
		default:
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
	exclNote := ""
	if excluded > 0 {
		exclNote = fmt.Sprintf(" (%d excluded by config)", excluded)
	}
	switch {
	case len(bad) > 0:
		res.Status = StatusFail
		res.Summary, res.Subject = bad[0].Device+" "+bad[0].Message+moreSuffix(len(bad)-1), bad[0].Subject
	case len(unread) > 0:
		res.Status = StatusError
		res.Summary, res.Subject = unread[0].Device+" "+unread[0].Message+moreSuffix(len(unread)-1), unread[0].Subject
		res.Err = errors.New(res.Summary)
	case len(devs) == 0 && excluded > 0:
		res.Status = StatusSkip
		res.Summary = "every GPU, NVSwitch and HCA on the PCI bus is excluded by config" + exclNote
	case len(devs) == 0:
		res.Status = StatusSkip
		res.Summary = "no GPU, NVSwitch or Mellanox InfiniBand/Ethernet HCA on the PCI bus"
	case total == 0:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no PCIe link width for any of %d devices (%s): nothing to judge (a virtual machine?)", len(devs), listSome(unjudged, 2))
	default:
		res.Summary = pcieOKSummary(judged, cfg.MinWidth, exclNote, len(unjudged))
	}
	return res
}

// pcieLinks lists the links to judge, GPUs first, then NVSwitches, then HCAs, each by
// address, and counts the devices exclude_devices leaves out. A GPU's link comes from NVML
// where NVML reports it; GPUs NVML reports that the bus listing lacks (gpu_count names them)
// still have a link.
func pcieLinks(pci []node.PCIDevice, nvml []node.GPU, exclude []string) ([]pcieDev, int) {
	nvmlAt := map[string]node.GPU{}
	for _, g := range nvml {
		if g.Error == "" && g.PCIBusID != "" {
			nvmlAt[sysfsBusID(g.PCIBusID)] = g
		}
	}
	var devs []pcieDev
	excluded := 0
	onBus := map[string]bool{}
	hcaLinks := map[string]bool{}
	for _, d := range pci {
		kind := pcieKind(d)
		switch {
		case kind == "":
			continue
		case kind == "gpu":
			onBus[d.Address] = true
		case kind == "hca" && hcaLinks[pciSlot(d.Address)]:
			continue // the card's first function is its link
		case kind == "hca":
			hcaLinks[pciSlot(d.Address)] = true
		}
		if slices.Contains(exclude, d.Address) {
			excluded++
			continue
		}
		g, inNVML := nvmlAt[d.Address]
		if inNVML && kind == "gpu" && g.PCIe != nil && g.PCIe.MaxLinkWidth > 0 {
			devs = append(devs, nvmlLink(g, d.Address))
			continue
		}
		dev := pcieDev{kind: kind, addr: d.Address, label: kind + " " + d.Address, cur: d.CurLinkWidth, max: d.MaxLinkWidth, source: "sysfs",
			subject: Subject{PCI: d.Address}}
		switch {
		case inNVML:
			dev.label, dev.inNVML, dev.subject = gpuLabel(g.Index, d.Address), true, gpuSubject(g, d.Address)
		case kind == "gpu":
			dev.subject = busSubject(d.Address)
		}
		if d.CurLinkSpeedGTs > 0 && d.MaxLinkSpeedGTs > 0 && d.CurLinkSpeedGTs < d.MaxLinkSpeedGTs {
			dev.speed = fmtGTs(d.CurLinkSpeedGTs) + " of " + fmtGTs(d.MaxLinkSpeedGTs)
		}
		devs = append(devs, dev)
	}
	for addr, g := range nvmlAt {
		if !onBus[addr] && !slices.Contains(exclude, addr) && g.PCIe != nil && g.PCIe.MaxLinkWidth > 0 {
			devs = append(devs, nvmlLink(g, addr))
		}
	}
	slices.SortStableFunc(devs, func(a, b pcieDev) int {
		if c := kindRank(a.kind) - kindRank(b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.addr, b.addr)
	})
	return devs, excluded
}

// pcieKind is what pcie_link judges a PCI function as: "gpu", "nvswitch", "hca", or "" for
// a function it does not judge.
func pcieKind(d node.PCIDevice) string {
	switch {
	case isNVIDIAGPU(d):
		return "gpu"
	case isNVSwitch(d):
		return "nvswitch"
	case isMellanoxNet(d):
		return "hca"
	}
	return ""
}

// pcieOKSummary is the summary of links all at their width: "8 GPUs, 4 NVSwitches at full
// PCIe width".
func pcieOKSummary(judged map[string]int, minWidth int, exclNote string, unjudged int) string {
	var kinds []string
	for _, k := range []struct{ kind, one, many string }{{"gpu", "GPU", "GPUs"}, {"nvswitch", "NVSwitch", "NVSwitches"}, {"hca", "HCA", "HCAs"}} {
		if judged[k.kind] > 0 {
			kinds = append(kinds, countNoun(judged[k.kind], k.one, k.many))
		}
	}
	width := "at full PCIe width"
	if minWidth > 0 {
		width = fmt.Sprintf("at full PCIe width or x%d", minWidth)
	}
	s := strings.Join(kinds, ", ") + " " + width + exclNote
	if unjudged > 0 {
		s += fmt.Sprintf("; %d without link width not judged", unjudged)
	}
	return s
}

// judgeLink compares a link's current width with its max (or min_width, when lower). ok is
// false when the link is not judged: no width (a virtual function, a VM's bus, the attribute
// absent), or a current width above the max, which is what config space reads as all ones
// give when a device has dropped off the bus. For a GPU or NVSwitch on a bus that shows
// widths (sysfsWidths), that is an error: its link was not read. An HCA's function without
// a width is left out (SR-IOV virtual functions have none). So is a device on a bus with no
// widths at all (a virtual machine's) that NVML does not list with one.
func judgeLink(dv pcieDev, minWidth int, sysfsWidths bool) (Detail, bool) {
	d := Detail{Device: dv.label, Status: StatusOK, Subject: dv.subject}
	if dv.cur <= 0 || dv.max <= 0 || dv.cur > dv.max {
		d.Message = fmt.Sprintf("not judged: %s link width x%d of x%d", dv.source, dv.cur, dv.max)
		if dv.cur <= 0 || dv.max <= 0 {
			d.Message = "not judged: no link width in " + dv.source
		}
		if dv.kind != "hca" && (sysfsWidths || dv.inNVML) {
			d.Status, d.Expected = StatusError, "a link width"
			d.Message = "link width not read: " + strings.TrimPrefix(d.Message, "not judged: ")
			if dv.cur > dv.max && dv.max > 0 {
				d.Message += " (the device does not answer: fallen off the bus?)"
			}
		}
		return d, false
	}
	want := dv.max
	if minWidth > 0 && minWidth < want {
		want = minWidth
	}
	d.Observed, d.Expected = "x"+strconv.Itoa(dv.cur), "x"+strconv.Itoa(want)
	if dv.cur < want {
		failDetail(&d, faultPCIeWidth)
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
	dv := pcieDev{kind: "gpu", addr: addr, label: gpuLabel(g.Index, addr), cur: g.PCIe.CurLinkWidth, max: g.PCIe.MaxLinkWidth, source: "NVML",
		subject: gpuSubject(g, addr)}
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

// Faults declares the check's own rows of the remedy table.
func (pcieLink) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultPCIeWidth, "a GPU, NVSwitch or HCA runs its PCIe link narrower than its max width (or min_width)", RemedyService,
				"the width is trained from the physical lanes: reseat the card, riser or cable (DCGM: \"Reconnect PCIe card\", DCGM_FR_PCI_REPLAY_RATE_NEXT; its diag's pcie plugin flags link downtraining as a hardware fault)"},
		},
	}
}

// Explain is what `nodecheck explain pcie_link` says.
func (pcieLink) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The PCI bus (/sys/bus/pci/devices): each device's vendor, class, current_link_width, max_link_width, current_link_speed and max_link_speed.",
			"NVML, for the GPUs whose link it reports (current and max width and generation); sysfs for the others.",
			"It judges the GPUs, the NVSwitches, and the Mellanox (0x15b3) InfiniBand and Ethernet functions, one per card.",
		},
		Passes: "Every GPU, NVSwitch and Mellanox HCA runs its PCIe link at its max width, or at least at min_width where that is lower. Link speed is only noted, never judged: GPUs slow their links down when idle.",
		Fails:  "A device runs its link with fewer lanes than expected (x8 of x16), which halves the bandwidth to it or worse: a badly seated card or riser, a damaged slot or cable, or a link that trained down after errors.",
		Skips:  "There is no GPU, NVSwitch or Mellanox HCA on the PCI bus, every one is excluded by config, or none reports a link width (a virtual machine).",
		Errors: "The PCI bus cannot be read, or the link width of a GPU or NVSwitch cannot be read: NVML lists the GPU without one and sysfs has none either, sysfs has none on a bus where other devices show theirs, or the width reads above the max (config space reads as all ones: a device that fell off the bus). An HCA function without a width (an SR-IOV virtual function) is not judged.",
		Keys: map[string]string{
			"min_width":       "Lowest acceptable width in lanes, for devices whose max is wider: 8 accepts a x16 GPU at x8. 0: each device must run at its own max width.",
			"exclude_devices": `PCI addresses never judged, as sysfs writes them ("0000:1a:00.0"): a card in a narrower slot on purpose, say.`,
		},
		Fix: []string{
			"lspci -vv -s ADDRESS | grep -E 'LnkCap|LnkSta': a LnkSta width below the LnkCap width confirms it (recent lspci adds \"(downgraded)\").",
			"Power the node off, reseat the card or the riser and its cables, check the slot for damage, and check the link again after boot.",
			"If it stays narrow, move the card to another slot to tell a bad card from a bad slot, and replace the part at fault.",
			"A card that sits in a narrower slot on purpose goes in exclude_devices; a fleet that accepts x8 links sets min_width = 8.",
		},
	}
}
