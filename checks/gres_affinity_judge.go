package checks

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// affinityGPU is one GPU of a gres.conf line with Cores= or Links=, followed from its device
// file to its PCI device; stop holds its verdict where it could not be followed.
type affinityGPU struct {
	file      string // /dev/nvidia4
	where     string // /etc/slurm/gres.conf:5
	coresKey  string // "Cores" or "CPUs", as written
	coresText string // the value as written: "0-55"
	cores     []slurm.Range
	links     []int // nil when not given
	linksText string
	minor     int    // of the device file; -1 until known
	bus       string // the GPU's PCI address as sysfs writes it; "" until known
	numa      int    // numa_node of the PCI device; -1: none
	stop      *Detail
}

// stopf stops g with an error: it could not be followed far enough to be judged.
func (g *affinityGPU) stopf(format string, args ...any) {
	g.stop = &Detail{Device: g.label(), Status: StatusError, Message: fmt.Sprintf(format, args...), Subject: g.subject()}
}

// label names g as details do: "gpu 0000:9b:00.0", or its device file until its PCI device is
// known.
func (g affinityGPU) label() string {
	if g.bus != "" {
		return "gpu " + g.bus
	}
	return g.file
}

// subject is g as a detail's subject: its device file, and its PCI address once known.
func (g affinityGPU) subject() Subject {
	s := busSubject(g.bus)
	s.File = g.file
	return s
}

// affinityFacts is what the node says, for the judge.
type affinityFacts struct {
	cores    *slurmCores // nil where no GPU gives Cores=
	asSocket string      // SlurmdParameters numa_node_as_socket or l3cache_as_socket; "" for neither
	links    *node.NVLinkTopology
}

// slurmCores is the node's cores in Slurm's abstract numbering: cores[i] is core i.
type slurmCores struct {
	cores   []slurmCore
	sockets int
	nodes   map[int]bool // the NUMA nodes the kernel lists, with or without CPUs
}

// slurmCore is one core: the socket Slurm counts it in (0, 1, ... in Slurm's order), the NUMA
// node of its first CPU (-1: none), and its CPUs.
type slurmCore struct {
	socket int
	numa   int
	cpus   []int
}

// numberCores numbers the cores as slurmd does (xcpuinfo.c: abstract core id = the core's
// place when hwloc's sockets are walked in order and each socket's cores in order, hwloc
// ordering siblings by their first CPU): sockets in the order of their lowest CPU, and in
// each socket its cores in the order of their lowest CPU. A "socket" is a package, or a NUMA
// node with numaAsSocket (SlurmdParameters=numa_node_as_socket).
func numberCores(t node.CPUTopology, numaAsSocket bool) slurmCores {
	numaOf := map[int]int{}
	sc := slurmCores{nodes: map[int]bool{}}
	for _, n := range t.NUMANodes {
		sc.nodes[n.ID] = true
		for _, c := range n.CPUs {
			numaOf[c] = n.ID
		}
	}
	type group struct{ numa, pkg int }
	order := map[group]int{}
	var bySocket [][]slurmCore
	for _, c := range t.Cores { // sorted by lowest CPU
		numa, ok := numaOf[c.CPUs[0]]
		if !ok {
			numa = -1
		}
		key := group{numa: -2, pkg: c.Package}
		if numaAsSocket && numa >= 0 {
			key = group{numa: numa, pkg: -2}
		}
		s, ok := order[key]
		if !ok {
			s = len(bySocket)
			order[key] = s
			bySocket = append(bySocket, nil)
		}
		bySocket[s] = append(bySocket[s], slurmCore{socket: s, numa: numa, cpus: c.CPUs})
	}
	for _, cs := range bySocket {
		sc.cores = append(sc.cores, cs...)
	}
	sc.sockets = len(bySocket)
	return sc
}

// affinityVerdicts is a verdict per GPU line: its Cores= and, where given, its Links=.
func affinityVerdicts(gpus []affinityGPU, f affinityFacts) []affinityVerdict {
	var vs []affinityVerdict
	for _, g := range gpus {
		switch {
		case g.stop != nil:
			vs = append(vs, affinityVerdict{Detail: *g.stop, line: g.stop.Message})
			continue
		case g.cores != nil && f.cores != nil:
			vs = append(vs, judgeCores(g, *f.cores, f.asSocket != ""))
		}
		if g.links != nil && f.links != nil {
			vs = append(vs, judgeLinks(g, *f.links))
		}
	}
	return vs
}

// judgeGresAffinity judges each GPU's Cores= and Links= by the node's facts.
func judgeGresAffinity(gpus []affinityGPU, f affinityFacts) Result {
	vs := affinityVerdicts(gpus, f)
	var res Result
	var ok, bad, skipped []affinityVerdict
	coresOK, linksOK := 0, 0
	for _, v := range vs {
		res.Details = append(res.Details, v.Detail)
		switch v.Status {
		case StatusSkip:
			skipped = append(skipped, v)
		case StatusOK:
			ok = append(ok, v)
			if strings.HasPrefix(v.Observed, "Links=") {
				linksOK++
			} else {
				coresOK++
			}
		default:
			bad = append(bad, v)
		}
	}
	var expect []string
	if f.cores != nil {
		unit := "socket's"
		if f.asSocket != "" {
			unit = "NUMA node's"
		}
		expect = append(expect, "each GPU's Cores= within its own "+unit+" cores")
	}
	if f.links != nil {
		expect = append(expect, "each Links= as NVML sees the NVLinks")
	}
	res.Expected = strings.Join(expect, "; ")
	res.Observed = fmt.Sprintf("%d of %s off", len(bad), countNoun(len(vs), "GPU entry", "GPU entries"))
	switch {
	case len(ok)+len(bad) == 0:
		res.Status, res.Expected, res.Observed = StatusSkip, "", ""
		res.Summary = skipped[0].line + moreSuffix(len(skipped)-1)
		return res
	case len(bad) > 0:
		// Name a map that is wrong before a GPU that could not be looked at.
		first := bad[0]
		res.Status = first.Status
		for _, v := range bad {
			if v.Status.Worse(res.Status) {
				res.Status = v.Status
			}
			if v.Status == StatusWarn && first.Status != StatusWarn {
				first = v
			}
		}
		res.Summary, res.Subject = first.line+moreSuffix(len(bad)-1), first.Subject
		return res
	}
	res.Status = StatusOK
	res.Summary = affinityOKSummary(coresOK, linksOK, f)
	if len(skipped) > 0 {
		res.Summary += fmt.Sprintf(" (%s not judged: %s)", countNoun(len(skipped), "GPU entry", "GPU entries"), skipped[0].line)
	}
	return res
}

// affinityOKSummary says how many GPUs' Cores= and Links= were found right.
func affinityOKSummary(coresOK, linksOK int, f affinityFacts) string {
	var parts []string
	if coresOK > 0 {
		own := "sockets'"
		if f.asSocket != "" {
			own = "NUMA nodes'"
		}
		parts = append(parts, fmt.Sprintf("Cores= of %s within their own %s cores", countNoun(coresOK, "GPU", "GPUs"), own))
	}
	if linksOK > 0 {
		parts = append(parts, fmt.Sprintf("Links= of %s as NVML sees the NVLinks", countNoun(linksOK, "GPU", "GPUs")))
	}
	return strings.Join(parts, "; ")
}

// affinityVerdict is a detail and the one line a summary says of it, which names the GPU as
// the detail's Device does and then what the detail's Message says.
type affinityVerdict struct {
	Detail
	line string
}

// verdict makes g's verdict from what follows the GPU's name: the detail says "/dev/nvidia4
// (gres.conf:5 Cores=0-55) is on ...", the summary "gpu 0000:9b:00.0 (/dev/nvidia4,
// gres.conf:5 Cores=0-55) is on ...".
func (g affinityGPU) verdict(d Detail, value, rest string) affinityVerdict {
	d.Message = fmt.Sprintf("%s (%s %s)%s", g.file, g.where, value, rest)
	return affinityVerdict{Detail: d, line: fmt.Sprintf("%s (%s, %s %s)%s", g.label(), g.file, g.where, value, rest)}
}

// judgeCores judges one GPU's Cores= against the cores of its socket (its NUMA node with
// byNUMA).
func judgeCores(g affinityGPU, sc slurmCores, byNUMA bool) affinityVerdict {
	value := fmt.Sprintf("%s=%s", g.coresKey, g.coresText)
	d := Detail{Device: g.label(), Observed: value, Subject: g.subject()}
	total := len(sc.cores)
	var named []int
	var beyond []slurm.Range
	for _, r := range g.cores {
		if r.Last >= total {
			beyond = append(beyond, slurm.Range{First: max(r.First, total), Last: r.Last})
		}
	}
	for id := range total {
		if inRanges(id, g.cores) {
			named = append(named, id)
		}
	}
	local, where, skip := localCores(g, sc, byNUMA)
	if skip != "" {
		d.Status, d.Message = StatusSkip, skip
		return affinityVerdict{Detail: d, line: skip}
	}
	d.Expected = fmt.Sprintf("%s= within %s", g.coresKey, coreList(local))
	nameLocal := func(ids []int) bool {
		return len(ids) > 0 && !slices.ContainsFunc(ids, func(i int) bool { return !slices.Contains(local, i) })
	}
	foreign := slices.DeleteFunc(slices.Clone(named), func(i int) bool { return slices.Contains(local, i) })
	var rest string
	switch {
	case len(beyond) > 0:
		d.Status = StatusWarn
		rest = fmt.Sprintf(" names cores %s, but the node has %s (0-%d in Slurm's numbering, socket by socket); it is on %s", rangesText(beyond), countNoun(total, "core", "cores"), total-1, where)
	case len(named) == total && sc.sockets > 1:
		d.Status = StatusOK
		rest = fmt.Sprintf(" names every core of the node: no affinity (leaving %s= out tells Slurm the same, and schedules faster); it is on %s", g.coresKey, where)
	case nameLocal(named):
		d.Status = StatusOK
		rest = " on " + where
	case len(foreign) == len(named):
		d.Status = StatusWarn
		rest = fmt.Sprintf(" is on %s; its %s= name %s", where, g.coresKey, describeCores(named, sc))
	default:
		d.Status = StatusWarn
		rest = fmt.Sprintf(" is on %s; its %s= also name %s", where, g.coresKey, describeCores(foreign, sc))
	}
	return g.verdict(d, value, rest)
}

// localCores is the cores g's Cores= should name, and how to say where g is: "NUMA node 1
// (cores 56-111)". skip says why g cannot be judged.
func localCores(g affinityGPU, sc slurmCores, byNUMA bool) (local []int, where, skip string) {
	all := make([]int, len(sc.cores))
	for i := range all {
		all[i] = i
	}
	if g.numa < 0 {
		if sc.sockets <= 1 {
			return all, fmt.Sprintf("the node's only socket (cores %s)", coreList(all)), ""
		}
		return nil, "", fmt.Sprintf("%s (%s, %s): the kernel gives its PCI device no NUMA node (numa_node -1: the firmware's ACPI tables do not place it), so its socket cannot be told among %d; %s=%s not judged", g.label(), g.file, g.where, sc.sockets, g.coresKey, g.coresText)
	}
	var nodeCores []int
	sockets := map[int]bool{}
	for i, c := range sc.cores {
		if c.numa == g.numa {
			nodeCores = append(nodeCores, i)
			sockets[c.socket] = true
		}
	}
	switch {
	case !sc.nodes[g.numa]:
		return nil, "", fmt.Sprintf("%s (%s, %s): numa_node says NUMA node %d, which /sys/devices/system/node does not list; %s=%s not judged", g.label(), g.file, g.where, g.numa, g.coresKey, g.coresText)
	case len(nodeCores) == 0:
		return nil, "", fmt.Sprintf("%s (%s, %s): its NUMA node %d has no CPUs (a memory-only node), so its cores cannot be told; %s=%s not judged", g.label(), g.file, g.where, g.numa, g.coresKey, g.coresText)
	}
	if byNUMA {
		return nodeCores, fmt.Sprintf("NUMA node %d (cores %s)", g.numa, coreList(nodeCores)), ""
	}
	for i, c := range sc.cores {
		if sockets[c.socket] && !slices.Contains(nodeCores, i) {
			local = append(local, i)
		}
	}
	if len(local) == 0 {
		return nodeCores, fmt.Sprintf("NUMA node %d (cores %s)", g.numa, coreList(nodeCores)), ""
	}
	local = append(local, nodeCores...)
	slices.Sort(local)
	socketIDs := slices.Sorted(maps.Keys(sockets))
	return local, fmt.Sprintf("NUMA node %d, in socket %s (the socket's cores %s; the NUMA node's %s)", g.numa, intsText(socketIDs), coreList(local), coreList(nodeCores)), ""
}

// describeCores says which NUMA nodes (or, where the kernel gives none, sockets) the cores
// ids belong to: "NUMA node 0's cores", "cores 0-3 (NUMA node 0) and 60-63 (NUMA node 1)".
func describeCores(ids []int, sc slurmCores) string {
	type group struct {
		name string
		ids  []int
	}
	var groups []group
	for _, id := range ids {
		c := sc.cores[id]
		name := fmt.Sprintf("NUMA node %d", c.numa)
		if c.numa < 0 {
			name = fmt.Sprintf("socket %d", c.socket)
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.name == name })
		if i < 0 {
			groups = append(groups, group{name: name})
			i = len(groups) - 1
		}
		groups[i].ids = append(groups[i].ids, id)
	}
	if len(groups) == 1 {
		whole := 0
		for _, c := range sc.cores {
			if fmt.Sprintf("NUMA node %d", c.numa) == groups[0].name || (c.numa < 0 && fmt.Sprintf("socket %d", c.socket) == groups[0].name) {
				whole++
			}
		}
		if whole == len(groups[0].ids) {
			return groups[0].name + "'s cores"
		}
		return fmt.Sprintf("cores %s of %s", coreList(groups[0].ids), groups[0].name)
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s (%s)", coreList(g.ids), g.name)
	}
	return "cores " + strings.Join(parts, " and ")
}

// judgeLinks judges one GPU's Links= against where NVML says its active NVLinks lead, as
// slurmd's AutoDetect=nvml counts them (_nvml_get_nvlink_info): per GPU in PCI bus id order,
// the active links whose far end is that GPU's PCI address; -1 at this GPU's own place; a far
// end that is no GPU (an NVSwitch) counted nowhere.
func judgeLinks(g affinityGPU, t node.NVLinkTopology) affinityVerdict {
	value := "Links=" + g.linksText
	d := Detail{Device: g.label(), Observed: value, Subject: g.subject()}
	fail := func(status Status, rest string) affinityVerdict {
		d.Status = status
		return g.verdict(d, value, rest)
	}
	if t.Init != node.InitSuccess {
		return fail(StatusError, fmt.Sprintf(": NVML init %s: cannot see its NVLinks to judge Links=", t.Init))
	}
	devs := slices.Clone(t.Devices)
	slices.SortStableFunc(devs, func(a, b node.GPULinkEnds) int { return comparePCI(sysfsBusID(a.PCIBusID), sysfsBusID(b.PCIBusID)) })
	self := slices.IndexFunc(devs, func(x node.GPULinkEnds) bool { return x.MinorNumber == g.minor })
	if self < 0 {
		return fail(StatusError, fmt.Sprintf(": none of the %s NVML lists has minor %d: cannot judge Links=", countNoun(len(devs), "GPU", "GPUs"), g.minor))
	}
	if devs[self].Error != "" {
		return fail(StatusError, fmt.Sprintf(": NVML %s while reading its NVLinks: cannot judge Links=", devs[self].Error))
	}
	want, toSwitches, unread := autoDetectLinks(devs, self)
	if len(unread) > 0 {
		return fail(StatusError, fmt.Sprintf(": NVML could not say where %s lead (%s): cannot judge Links=", countNoun(len(unread), "active NVLink", "active NVLinks"), strings.Join(unread, ", ")))
	}
	wantText := formatLinks(want)
	d.Expected = "Links=" + wantText
	switch diffs := linkDiffs(g.links, want, devs, self); {
	case len(diffs) == 0:
		return fail(StatusOK, " as NVML sees the NVLinks")
	case toSwitches > 0 && uniformLinks(g.links, want, self):
		return fail(StatusOK, fmt.Sprintf(": its %s lead to NVSwitches, so it reaches every other GPU alike; giving each the same number tells Slurm what AutoDetect's 0s tell it", countNoun(toSwitches, "active NVLink", "active NVLinks")))
	default:
		via := ""
		if toSwitches > 0 {
			via = fmt.Sprintf("; its other %s lead to NVSwitches", countNoun(toSwitches, "active NVLink", "active NVLinks"))
		}
		return fail(StatusWarn, fmt.Sprintf(": %s%s; AutoDetect=nvml would write Links=%s", listSome(diffs, 3), via, wantText))
	}
}

// autoDetectLinks counts the active NVLinks of devs[self] to each GPU (-1 at self) as slurmd
// does; toSwitches counts the links to anything else, unread the links whose far end NVML
// could not give.
func autoDetectLinks(devs []node.GPULinkEnds, self int) (want []int, toSwitches int, unread []string) {
	pos := map[string]int{}
	for i, x := range devs {
		if x.PCIBusID != "" {
			pos[sysfsBusID(x.PCIBusID)] = i
		}
	}
	want = make([]int, len(devs))
	want[self] = -1
	for _, e := range devs[self].Links {
		if e.Error != "" || e.RemoteBusID == "" {
			unread = append(unread, fmt.Sprintf("link %d: %s", e.Link, cmp.Or(e.Error, "no address")))
			continue
		}
		switch k, ok := pos[sysfsBusID(e.RemoteBusID)]; {
		case !ok:
			toSwitches++
		case k != self:
			want[k]++
		}
	}
	return want, toSwitches, unread
}

// linkDiffs says where Links= (have) differs from what NVML sees (want), device by device.
func linkDiffs(have, want []int, devs []node.GPULinkEnds, self int) []string {
	if len(have) != len(want) {
		return []string{fmt.Sprintf("it gives %s where the node has %s (one number per GPU in PCI bus id order, -1 for this one)", countNoun(len(have), "number", "numbers"), countNoun(len(want), "GPU", "GPUs"))}
	}
	var out []string
	for k := range want {
		switch {
		case have[k] == want[k]:
		case k == self:
			out = append(out, fmt.Sprintf("place %d is this GPU itself (device %d by PCI bus id) and should be -1, not %d", k+1, k, have[k]))
		case have[k] == -1:
			out = append(out, fmt.Sprintf("-1 at place %d marks device %d (%s) as itself, which has %d NVLinks from this GPU", k+1, k, sysfsBusID(devs[k].PCIBusID), want[k]))
		default:
			out = append(out, fmt.Sprintf("%d NVLinks to device %d (%s), Links= says %d", want[k], k, sysfsBusID(devs[k].PCIBusID), have[k]))
		}
	}
	return out
}

// uniformLinks reports whether have gives -1 at self and the same number to every other GPU,
// where NVML sees no direct link to any.
func uniformLinks(have, want []int, self int) bool {
	if len(have) != len(want) || have[self] != -1 {
		return false
	}
	v := -2
	for k := range have {
		if k == self {
			continue
		}
		if want[k] != 0 || have[k] < 0 || (v != -2 && have[k] != v) {
			return false
		}
		v = have[k]
	}
	return true
}

// comparePCI orders PCI addresses as sysfs writes them ("0000:19:00.0") numerically: the
// order NVML and Slurm number GPUs in. Unparsable ones sort after, as text.
func comparePCI(a, b string) int {
	pa, okA := parsePCIAddress(a)
	pb, okB := parsePCIAddress(b)
	switch {
	case okA && okB:
		return slices.Compare(pa, pb)
	case okA:
		return -1
	case okB:
		return 1
	}
	return strings.Compare(a, b)
}

// parsePCIAddress reads domain, bus, device and function of "0000:19:00.0".
func parsePCIAddress(s string) ([]uint64, bool) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '.' })
	if len(f) != 4 {
		return nil, false
	}
	out := make([]uint64, 4)
	for i, x := range f {
		n, err := strconv.ParseUint(x, 16, 32)
		if err != nil {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// formatLinks writes a Links= value: "-1,0,2".
func formatLinks(l []int) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// inRanges reports whether n lies in one of rs.
func inRanges(n int, rs []slurm.Range) bool {
	return slices.ContainsFunc(rs, func(r slurm.Range) bool { return n >= r.First && n <= r.Last })
}

// rangesText writes ranges as Slurm does: "112-119,130".
func rangesText(rs []slurm.Range) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(r.First)
		if r.Last > r.First {
			s[i] += "-" + strconv.Itoa(r.Last)
		}
	}
	return strings.Join(s, ",")
}

// coreList writes ascending core ids compressed: "0-55,112".
func coreList(ids []int) string { return node.FormatKernelList(ids) }

// intsText writes "0", "0 and 1", "0, 1 and 2".
func intsText(ids []int) string {
	s := make([]string, len(ids))
	for i, n := range ids {
		s[i] = strconv.Itoa(n)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
