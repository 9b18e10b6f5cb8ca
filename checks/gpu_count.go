package checks

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

const idGPUCount = "gpu_count"

// The ways gpu_count fails: its rows of the remedy table (Faults).
const (
	faultGPULost       fault = "gpu_count/gpu_lost"
	faultGPUNeedsReset fault = "gpu_count/reset_required"
	faultGPUOffBus     fault = "gpu_count/not_on_pci"
	faultGPUsShort     fault = "gpu_count/fewer_than_slurm"
	faultGPUsExtra     fault = "gpu_count/more_than_slurm"
)

// nvmlDeviceFault is the fault of a GPU NVML lists but cannot use (node.GPU.Error).
func nvmlDeviceFault(err string) fault {
	if err == "ERROR_RESET_REQUIRED" {
		return faultGPUNeedsReset
	}
	return faultGPULost
}

// gpuCount compares three counts: the GPUs slurm.conf gives this node (Gres=gpu[:type]:N,
// summed over types), the GPUs NVML can open, and the NVIDIA GPUs on the PCI bus. A GPU on
// the bus that NVML cannot open (fell off the bus, ERROR_GPU_IS_LOST, driver failed to
// attach) is named by its bus id. The expectation always comes from slurm.conf, also with
// gres.conf AutoDetect: that is what slurmctld schedules.
type gpuCount struct{}

func (gpuCount) ID() string { return idGPUCount }

func (gpuCount) Description() string {
	return "GPUs in slurm.conf Gres= for this node = GPUs NVML sees = NVIDIA GPUs on the PCI bus; Gres type names the NVML model"
}

// GPUFields implements gpuFactsUser: names and bus ids, to match NVML with the PCI bus.
func (gpuCount) GPUFields() node.GPUFields {
	return node.GPUName | node.GPUPCIBusID
}

// gpuCountConfig is [checks.gpu_count]: no keys of its own, slurm.conf is the expectation.
type gpuCountConfig struct {
	config.CheckCommon
}

func (gpuCount) Section() config.Section {
	return &gpuCountConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// gpuExpectation is what slurm.conf says about this node's GPUs.
type gpuExpectation struct {
	count uint64
	specs []slurm.GresSpec // the gpu elements of Gres=, in order
	// mig is set when a Gres type names a MIG profile (gpu:a100_3g.20gb:2): the count is then
	// of MIG instances, not of physical GPUs, and cannot be compared with NVML or PCI.
	mig bool
	// err is why the expectation is unknown (slurm.conf unreadable, node not in it).
	err error
	// gresFiles is how many GPU device files gres.conf lists for the node (File= of its
	// Name=gpu lines); 0 where it lists none or cannot be read. It tells a slurm.conf that
	// counts too many (gres.conf agrees with the hardware) from a GPU that is gone.
	gresFiles int
}

func (e gpuExpectation) gres() string {
	parts := make([]string, len(e.specs))
	for i, s := range e.specs {
		parts[i] = s.String()
	}
	return strings.Join(parts, ",")
}

// migProfile matches the profile part of a MIG GRES type: "3g.20gb" in "a100_3g.20gb",
// "1g.10gb" in "nvidia_h100_80gb_hbm3_1g.10gb" (Slurm's gres.shtml MIG section names MIG
// types after nvidia-smi's profiles, "<slices>g.<memory>gb").
var migProfile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^0-9])[0-9]+g\.[0-9]+gb`) })

func expectedGPUs(ctx context.Context, env *Env) gpuExpectation {
	conf, err := env.Slurm.Conf(ctx)
	if err != nil {
		return gpuExpectation{err: err}
	}
	nl, ok := conf.Node(env.Node)
	if !ok {
		return gpuExpectation{err: fmt.Errorf("node %s is not defined in %s", env.Node, conf.Path)}
	}
	e := gpuExpectation{count: nl.GPUCount(), gresFiles: gresGPUFiles(ctx, env)}
	for _, g := range nl.Gres {
		if !strings.EqualFold(g.Name, "gpu") {
			continue
		}
		e.specs = append(e.specs, g)
		if migProfile().MatchString(strings.ToLower(g.Type)) {
			e.mig = true
		}
	}
	return e
}

// gresGPUFiles counts the File= device files of the node's Name=gpu lines in gres.conf; 0
// where there are none or gres.conf cannot be read (the count then tells nothing).
func gresGPUFiles(ctx context.Context, env *Env) int {
	gc, err := env.Slurm.Gres(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range gc.ForNode(env.Node).Lines {
		if strings.EqualFold(l.Name, "gpu") {
			n += len(l.Files)
		}
	}
	return n
}

// slurmGPUName is a GPU name as Slurm's AutoDetect writes it as a GRES type: lower case,
// blanks as underscores ("NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3"; Slurm
// src/plugins/gpu/common/gpu_common.c gpu_common_underscorify_tolower).
func slurmGPUName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), " ", "_")
}

// gresTypeMatches is the matching rule for a slurm.conf GPU type and an NVML device name,
// the one gres.conf(5) gives for AutoDetect: "the Type specified should match or be a
// substring of the value that is detected, using an underscore in lieu of any spaces",
// compared ignoring case. So h100 matches "NVIDIA H100 80GB HBM3", a100 matches
// "NVIDIA A100-SXM4-80GB", nvidia_a100-pcie-40gb matches "NVIDIA A100-PCIE-40GB", and tesla
// or a100 do not match an H100. A type that does not match is reported as a warning: Slurm
// does not need the type to name the model, but a node whose GPUs are not what its Gres
// says is worth a look (a wrong node in a NodeName range, a swapped board).
func gresTypeMatches(gresType, nvmlName string) bool {
	t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(gresType)), " ", "_")
	return t != "" && strings.Contains(slurmGPUName(nvmlName), t)
}

func (gpuCount) Run(ctx context.Context, env *Env) Result {
	pci, err := env.Facts.PCIDevices(ctx)
	if err != nil {
		return factsError(ctx, "list PCI devices", err)
	}
	inv, err := env.Facts.GPUs(ctx)
	if err != nil {
		return factsError(ctx, "query NVML", err)
	}
	exp := expectedGPUs(ctx, env)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out reading slurm.conf", Err: ctx.Err(), Remedy: remedyOf(faultSlurmTimeout)}
	}
	var bus []string // NVIDIA GPUs on the PCI bus, by address (PCIDevices is sorted)
	for _, d := range pci {
		if isNVIDIAGPU(d) {
			bus = append(bus, d.Address)
		}
	}
	return judgeGPUCount(env.Node, bus, inv, exp)
}

// judgeGPUCount compares the GPUs on the PCI bus (bus, by address), the GPUs NVML sees and
// what slurm.conf gives the node.
func judgeGPUCount(nodeName string, bus []string, inv node.GPUInventory, exp gpuExpectation) Result {
	res := Result{Expected: expectedText(exp)}
	if inv.Init != node.InitSuccess {
		return nvmlDown(nodeName, inv, exp, bus, res)
	}
	m := matchGPUs(bus, inv.Devices)
	n, p := len(m.visible), len(bus)
	res.Observed = fmt.Sprintf("%d in NVML (device count %d), %d on PCI", n, inv.DeviceCount, p)
	res.Details = m.details

	// NVML and the bus disagree: a GPU is lost, whatever Slurm expects.
	if len(m.items) > 0 || n != p {
		res.Status = StatusFail
		if exp.err == nil && exp.count == 0 {
			res.Status = StatusWarn // Slurm schedules no GPU here: nothing a job gets is broken
		}
		switch {
		case len(m.items) > 0: // the details name each GPU and its remedy
		case n < p: // NVML gave no bus ids to name the GPU it lost
			res.Remedy = remedyOf(faultGPULost)
		case n > p:
			res.Remedy = remedyOf(faultGPUOffBus)
		}
		head := fmt.Sprintf("%d GPUs in NVML, %d on PCI", n, p)
		if exp.err == nil && exp.count > 0 && !exp.mig {
			head = fmt.Sprintf("%d/%d GPUs in NVML, %d on PCI", n, exp.count, p)
		}
		if len(m.items) > 0 {
			head += ": " + listSome(m.items, 3)
		}
		res.Summary = head
		return res
	}
	return judgeAgainstSlurm(nodeName, res, m.visible, exp)
}

// gpuSeen is an NVML device with its bus id as sysfs writes it.
type gpuSeen struct {
	gpu  node.GPU
	addr string
}

// gpuMatch is NVML's devices matched with the bus: the usable ones, what disagrees (for the
// summary) and a detail per GPU.
type gpuMatch struct {
	visible []gpuSeen
	items   []string
	details []Detail
}

// matchGPUs matches NVML's devices with the GPUs on the bus: which bus ids NVML lost, and
// which NVML devices the bus does not show. Without a bus id for every NVML device only the
// counts can be compared.
func matchGPUs(bus []string, devices []node.GPU) gpuMatch {
	var m gpuMatch
	var lost []gpuSeen
	noBusID := false
	nvmlAt, lostAt := map[string]gpuSeen{}, map[string]gpuSeen{}
	for _, g := range devices {
		s := gpuSeen{gpu: g, addr: sysfsBusID(g.PCIBusID)}
		switch {
		case g.Error != "":
			lost = append(lost, s)
			if s.addr != "" {
				lostAt[s.addr] = s
			}
		default:
			m.visible = append(m.visible, s)
			nvmlAt[s.addr] = s
			noBusID = noBusID || s.addr == ""
		}
	}
	add := func(item string, d Detail) {
		if item != "" {
			m.items = append(m.items, item)
		}
		m.details = append(m.details, d)
	}
	for _, a := range bus {
		s, ok := nvmlAt[a]
		l, isLost := lostAt[a]
		switch {
		case ok:
			add("", Detail{Device: gpuLabel(s.gpu.Index, a), Status: StatusOK, Message: s.gpu.Name + " in NVML and on PCI", Observed: "NVML, PCI",
				Subject: gpuSubject(s.gpu, a)})
		case isLost:
			add(a+" "+l.gpu.Error, Detail{Device: gpuLabel(l.gpu.Index, a), Status: StatusFail,
				Message: "on PCI, NVML: " + l.gpu.Error, Observed: l.gpu.Error, Expected: "usable in NVML", Remedy: remedyOf(nvmlDeviceFault(l.gpu.Error)),
				Subject: gpuSubject(l.gpu, a)})
		case noBusID:
			add("", Detail{Device: gpuLabel(-1, a), Status: StatusOK, Message: "on PCI (NVML gave no bus ids to match)", Observed: "PCI",
				Subject: busSubject(a)})
		default:
			add(a+" missing", Detail{Device: gpuLabel(-1, a), Status: StatusFail, Message: "on PCI, not in NVML", Observed: "PCI", Expected: "NVML, PCI",
				Remedy: remedyOf(faultGPULost), Subject: busSubject(a)})
		}
	}
	for _, s := range lost {
		if s.addr != "" && slices.Contains(bus, s.addr) {
			continue // named above with its bus id
		}
		add(gpuLabel(s.gpu.Index, s.addr)+" "+s.gpu.Error, Detail{Device: gpuLabel(s.gpu.Index, s.addr), Status: StatusFail,
			Message: "NVML: " + s.gpu.Error, Observed: s.gpu.Error, Expected: "usable in NVML", Remedy: remedyOf(nvmlDeviceFault(s.gpu.Error)),
			Subject: gpuSubject(s.gpu, s.addr)})
	}
	if !noBusID {
		for _, s := range m.visible {
			if !slices.Contains(bus, s.addr) {
				add(s.addr+" not on PCI", Detail{Device: gpuLabel(s.gpu.Index, s.addr), Status: StatusFail,
					Message: s.gpu.Name + " in NVML, not on the PCI bus", Observed: "NVML", Expected: "NVML, PCI", Remedy: remedyOf(faultGPUOffBus),
					Subject: gpuSubject(s.gpu, s.addr)})
			}
		}
	}
	return m
}

// judgeAgainstSlurm judges n GPUs, on which NVML and the bus agree, against slurm.conf.
func judgeAgainstSlurm(nodeName string, res Result, visible []gpuSeen, exp gpuExpectation) Result {
	n := len(visible)
	switch {
	case exp.err != nil:
		res.Status, res.Err = StatusError, exp.err
		res.Summary = fmt.Sprintf("cannot tell how many GPUs Slurm expects (%v); NVML and PCI agree on %d", exp.err, n)
	case exp.mig:
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("%s in NVML and on PCI; slurm.conf Gres=%s counts MIG instances, not compared", countNoun(n, "GPU", "GPUs"), exp.gres())
	case exp.count == 0 && n == 0:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no GPU Gres for %s in slurm.conf and no NVIDIA GPU on the PCI bus", nodeName)
	case exp.count == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("slurm.conf gives %s no GPU Gres, but NVML and PCI show %s: Slurm will not schedule them", nodeName, countNoun(n, "GPU", "GPUs"))
	case exp.count != uint64(n):
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("slurm.conf expects %d GPUs (Gres=%s), NVML and PCI show %d", exp.count, exp.gres(), n)
		res.Remedy = remedyOf(faultGPUsExtra)
		if exp.count > uint64(n) && exp.gresFiles != n {
			// gres.conf lists as many GPUs as the node has: slurm.conf alone counts too many.
			res.Remedy = remedyOf(faultGPUsShort)
		}
	default:
		names := make([]string, n)
		for i, s := range visible {
			names[i] = s.gpu.Name
		}
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("%d GPUs in slurm.conf (Gres=%s), NVML and on PCI", n, exp.gres())
		if warn := typeMismatches(exp.specs, names); len(warn) > 0 {
			res.Status = StatusWarn
			res.Details = append(res.Details, warn...)
			res.Summary = fmt.Sprintf("%d GPUs agree, but %s", n, warn[0].Message) + moreSuffix(len(warn)-1)
		}
	}
	return res
}

// nvmlDown judges a node where NVML did not initialise: a fail where Slurm or the bus says
// there are GPUs, a skip where neither does (a CPU node without the driver).
func nvmlDown(nodeName string, inv node.GPUInventory, exp gpuExpectation, bus []string, res Result) Result {
	init := inv.Init
	if init == "" {
		init = "no result"
	}
	res.Observed = fmt.Sprintf("NVML %s, %d on PCI", init, len(bus))
	switch {
	case exp.err == nil && exp.count > 0 && !exp.mig:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("NVML init: %s, slurm.conf expects %d GPUs", init, exp.count)
		res.Remedy = remedyOf(nvmlInitFault(inv.Init))
		if len(bus) == 0 {
			res.Remedy = remedyOf(faultGPUsShort) // not one of them on the bus
		}
	case len(bus) > 0 || (exp.err == nil && exp.count > 0):
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("NVML init: %s, %s on PCI", init, countNoun(len(bus), "NVIDIA GPU", "NVIDIA GPUs"))
		res.Remedy = remedyOf(nvmlInitFault(inv.Init))
	case exp.err != nil:
		res.Status, res.Err = StatusError, exp.err
		res.Summary = fmt.Sprintf("cannot tell how many GPUs Slurm expects (%v); none on PCI, NVML init: %s", exp.err, init)
	default:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no GPU Gres for %s in slurm.conf and no NVIDIA GPU on the PCI bus (NVML init: %s)", nodeName, init)
	}
	return res
}

func expectedText(e gpuExpectation) string {
	switch {
	case e.err != nil:
		return "unknown: " + e.err.Error()
	case len(e.specs) == 0:
		return "no GPU Gres"
	case e.mig:
		return "Gres=" + e.gres() + " (MIG instances)"
	}
	return strconv.FormatUint(e.count, 10) + " (Gres=" + e.gres() + ")"
}

// typeMismatches checks each typed gpu element of Gres= against the NVML names: at least its
// count of GPUs must match the type (gresTypeMatches). Untyped elements (gpu:8) name no model.
func typeMismatches(specs []slurm.GresSpec, names []string) []Detail {
	var out []Detail
	distinct := slices.Compact(slices.Sorted(slices.Values(names)))
	for _, s := range specs {
		if s.Type == "" {
			continue
		}
		m := 0
		for _, n := range names {
			if gresTypeMatches(s.Type, n) {
				m++
			}
		}
		if uint64(m) >= s.Count {
			continue
		}
		shown := make([]string, len(distinct))
		for i, n := range distinct {
			shown[i] = slurmGPUName(n)
		}
		out = append(out, Detail{Device: "gres gpu:" + s.Type, Status: StatusWarn,
			Message:  fmt.Sprintf("Gres type %s matches %d of %d GPUs by NVML name (%s)", s.Type, m, s.Count, listSome(shown, 2)),
			Observed: strconv.Itoa(m), Expected: strconv.FormatUint(s.Count, 10)})
	}
	return out
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (gpuCount) Faults() Faults {
	return Faults{
		shared: []fault{faultNVMLDriver, faultNVMLMissing, faultSlurmTimeout},
		own: []remedyRow{
			{faultGPULost, "a GPU on the PCI bus that NVML cannot use (ERROR_GPU_IS_LOST: fallen off the bus) or does not list", RemedyReboot,
				"XID 79 \"GPU has fallen off the bus\": RESTART_BM (" + srcXIDCatalog + ")"},
			{faultGPUNeedsReset, "NVML answers a GPU with ERROR_RESET_REQUIRED", RemedyResetGPU,
				"nvml.h NVML_ERROR_RESET_REQUIRED: \"The GPU requires a reset before it can be used again\""},
			{faultGPUOffBus, "NVML lists a GPU that the PCI bus no longer shows", RemedyReboot,
				"a GPU the driver holds but the bus lost is fallen off the bus: XID 79, RESTART_BM (" + srcXIDCatalog + ")"},
			{faultGPUsShort, "NVML and the PCI bus agree on fewer GPUs than slurm.conf gives the node (and than gres.conf lists): a GPU absent from the PCI bus", RemedyService,
				"a GPU that does not enumerate on the PCI bus is a board, riser or slot to reseat or replace (XID 79's investigatory action: CONTACT_SUPPORT)"},
			{faultGPUsExtra, "slurm.conf gives the node another GPU count than NVML and the PCI bus show, and gres.conf lists as many GPU files as they show", RemedyAdmin,
				"slurm.conf(5) Gres=: the count is configuration; fix the NodeName line"},
		},
	}
}

// Explain is what `nodecheck explain gpu_count` says.
func (gpuCount) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"slurm.conf: the Gres= of this node's NodeName line (gpu[:type]:N, summed over types).",
			"NVML: the number of GPUs, each GPU's name and PCI bus id, and the GPUs NVML cannot open.",
			"The PCI bus (/sys/bus/pci/devices): the NVIDIA (vendor 0x10de) display and 3D controllers.",
		},
		Passes: "NVML and the PCI bus show the same GPUs, as many as slurm.conf gives the node, and each typed Gres element (gpu:h100:8) matches the NVML name of as many GPUs as it counts. Where a Gres type names a MIG profile (gpu:a100_3g.20gb:2) the count is of MIG instances, and only NVML and the PCI bus are compared.",
		Warns:  "The counts agree but a Gres type does not match the NVML names (a node in the wrong NodeName range, a swapped board); slurm.conf gives the node no GPU although it has some (Slurm will not schedule them); or NVML and the bus disagree on a node where Slurm schedules no GPU.",
		Fails:  "A GPU is on the PCI bus but NVML cannot open it (it fell off the bus, GPU_IS_LOST, the driver did not attach), NVML shows a GPU the bus does not, NVML does not initialise where GPUs are expected, or NVML and the bus agree on a number other than slurm.conf's.",
		Skips:  "slurm.conf gives the node no GPU and there is no NVIDIA GPU on the PCI bus: a CPU node.",
		Errors: "How many GPUs Slurm expects cannot be told (slurm.conf unreadable, the node not in it) while NVML and the bus agree, or the PCI bus or NVML cannot be read.",
		Fix: []string{
			"nvidia-smi: which GPUs are listed? nvidia-smi -q | grep -i 'bus id' against lspci -d 10de: names the missing one.",
			"dmesg -T | grep -i xid: Xid 79 (the GPU fell off the bus), 48, 63, 64, 94 or 95 (memory errors) or 119 and 120 (GSP firmware) mean a hardware or firmware fault.",
			"Reboot, with a full power cycle for a GPU that fell off the bus. If the GPU is still missing or the Xid comes back, reseat it or replace it (RMA, with the output of nvidia-bug-report.sh).",
			"If the node is right and slurm.conf is wrong (the Gres= count or type), fix slurm.conf, check it with nodecheck lint and run scontrol reconfigure.",
		},
	}
}
