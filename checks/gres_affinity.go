package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

const idGresAffinity = "gres_affinity"

// gresAffinity holds gres.conf's map of the node against the node: the Cores= (or CPUs=) of
// each GPU line against the cores of the socket the GPU's PCI device hangs off, and Links=
// against the NVLinks NVML sees. Both only steer scheduling (slurmd gives a job the GPUs and
// cores gres.conf pairs, and prefers GPUs Links= says are well connected), so a wrong map is
// configuration, not a sick node: it warns and never drains.
//
// Slurm's numbering, which the judge follows (gres_affinity_judge.go): Cores= counts cores,
// not CPUs, in Slurm's abstract numbering (gres.conf(5); slurmd converts it with
// xcpuinfo_abs_to_mac), which runs socket by socket: core 0 is the first core of the first
// socket. Links= lists, for one GPU, the NVLinks to every GPU of the node by device number,
// -1 for itself, the device number being the GPU's place in PCI bus id order (gres.conf(5)),
// which is NVML's index order and what slurmd's AutoDetect=nvml writes.
type gresAffinity struct{}

func (gresAffinity) ID() string { return idGresAffinity }

func (gresAffinity) Description() string {
	return "gres.conf Cores= name the cores of each GPU's own socket (its PCI device's NUMA node), and Links= the NVLinks NVML sees"
}

// GPUFields implements gpuFactsUser: minor numbers and bus ids, to tell which PCI device each
// gres.conf File= is. Where the NVLinks lead is no GPU fact: node.NVLinkTopologyFact reads it in
// an NVML session of its own, and only when a line for the node gives Links=.
func (gresAffinity) GPUFields() node.GPUFields {
	return node.GPUMinorNumber | node.GPUPCIBusID
}

// gresAffinityConfig is [checks.gres_affinity]: no keys of its own, gres.conf is the
// expectation and the node's sysfs and NVML the truth.
type gresAffinityConfig struct {
	config.CheckCommon
}

// Section runs the check in health and manual mode only. The map does not change between
// jobs, a wrong one only warns, and reading it costs one sysfs read per core (about 230 on a
// two-socket 112-core node, a few milliseconds) plus, where Links= is given, an NVML session
// of its own: nothing a prolog should pay before every job. Health mode keeps it visible
// through the metrics every HealthCheckInterval.
func (gresAffinity) Section() config.Section {
	return &gresAffinityConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

func (gresAffinity) Run(ctx context.Context, env *Env) Result {
	gresPath, err := env.Slurm.GresPath(ctx)
	if err != nil {
		return slurmFilesError(ctx, "find slurm.conf to read gres.conf", err)
	}
	gc, err := env.Slurm.Gres(ctx)
	if isNotExist(err) {
		return Result{Status: StatusSkip, Summary: "no gres.conf at " + gresPath}
	}
	if err != nil {
		return slurmFilesError(ctx, "read gres.conf", err)
	}
	ng := gc.ForNode(env.Node)
	if ng.AutoDetect != "" && ng.AutoDetect != "off" {
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("gres.conf uses AutoDetect=%s for %s (%s): slurmd takes each GPU's cores and links from the driver itself, and checks any Cores= or Links= given against them", ng.AutoDetect, env.Node, ng.AutoDetectPos)}
	}
	gpus := affinityWants(ng)
	if len(gpus) == 0 {
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("gres.conf (%s) gives no GPU of %s Cores= or Links=: nothing to compare", gresPath, env.Node)}
	}
	if res, done := findAffinityGPUs(ctx, env, gpus); done {
		return res
	}
	facts := affinityFacts{}
	if slices.ContainsFunc(gpus, func(g affinityGPU) bool { return g.cores != nil }) {
		if res, done := gatherCoreFacts(ctx, env, gpus, &facts); done {
			return res
		}
	}
	if slices.ContainsFunc(gpus, func(g affinityGPU) bool { return g.links != nil }) {
		t, err := node.Read(ctx, env.Facts, node.NVLinkTopologyFact)
		if err != nil {
			return factsError(ctx, "read the NVLink topology from NVML for Links=", err)
		}
		facts.links = &t
	}
	return judgeGresAffinity(gpus, facts)
}

// affinityWants lists the GPUs of the node's Name=gpu lines that give Cores= or Links=, one
// per File= file, in file order.
func affinityWants(ng slurm.NodeGres) []affinityGPU {
	var out []affinityGPU
	for _, l := range ng.Lines {
		if !strings.EqualFold(l.Name, "gpu") || (l.Cores == nil && l.Links == nil) {
			continue
		}
		for _, f := range l.Files {
			g := affinityGPU{file: f, where: l.Pos.String(), coresKey: l.CoresKey, coresText: l.CoresText,
				cores: l.Cores, links: l.Links, minor: -1, numa: -1}
			if l.Links != nil {
				g.linksText = formatLinks(l.Links)
			}
			out = append(out, g)
		}
	}
	return out
}

// findAffinityGPUs follows each GPU's file to its minor number (stat, as slurmd does) and the
// minor to its PCI device: through NVML where it answers, else through the driver's
// /proc/driver/nvidia/gpus/<addr>/information of each NVIDIA GPU on the PCI bus. A GPU that
// cannot be followed is stopped with an error: its map cannot be judged.
func findAffinityGPUs(ctx context.Context, env *Env, gpus []affinityGPU) (Result, bool) {
	for i := range gpus {
		g := &gpus[i]
		dn, err := env.Facts.DevNode(ctx, g.file)
		if ctx.Err() != nil {
			return factsError(ctx, "stat "+g.file, ctx.Err()), true
		}
		switch {
		case err != nil:
			g.stopf("cannot stat %s (%s): %v", g.file, g.where, err)
		case dn.Missing || dn.Type != "char" || dn.Major != nvidiaMajor || dn.Minor >= nvidiactlMinor:
			g.stopf("%s (%s) is not an NVIDIA GPU device (%s): cannot tell which GPU it is (gres_devices says more)", g.file, g.where, describeDevNode(dn))
		default:
			g.minor = int(dn.Minor)
		}
	}
	inv, err := env.Facts.GPUs(ctx)
	if err != nil && ctx.Err() != nil {
		return factsError(ctx, "query NVML", err), true
	}
	busOf, nvmlWhy := map[int]string{}, ""
	switch {
	case err != nil:
		nvmlWhy = "NVML: " + err.Error()
	case inv.Init != node.InitSuccess:
		nvmlWhy = "NVML init " + inv.Init
	default:
		for _, d := range inv.Devices {
			if d.MinorNumber >= 0 && d.PCIBusID != "" {
				busOf[d.MinorNumber] = sysfsBusID(d.PCIBusID)
			}
		}
	}
	// What NVML did not name (all of them where NVML is down; a lost GPU, which NVML gives
	// no minor) the driver's procfs may.
	if slices.ContainsFunc(gpus, func(g affinityGPU) bool { _, ok := busOf[g.minor]; return g.stop == nil && !ok }) {
		proc, res := procMinors(ctx, env)
		if ctx.Err() != nil {
			return res, true
		}
		for m, bus := range proc {
			if _, ok := busOf[m]; !ok {
				busOf[m] = bus
			}
		}
	}
	if nvmlWhy != "" && len(busOf) == 0 {
		err := fmt.Errorf("%s, and no NVIDIA GPU on the PCI bus has a readable /proc/driver/nvidia/gpus/<address>/information", nvmlWhy)
		return Result{Status: StatusError, Err: err,
			Summary: fmt.Sprintf("cannot tell which PCI devices gres.conf's GPUs are: %v", err)}, true
	}
	for i := range gpus {
		g := &gpus[i]
		if g.stop != nil {
			continue
		}
		bus, ok := busOf[g.minor]
		if !ok {
			why := fmt.Sprintf("none of the %s NVML lists has minor %d, nor does the driver's /proc/driver/nvidia/gpus", countNoun(len(inv.Devices), "GPU", "GPUs"), g.minor)
			if nvmlWhy != "" {
				why = fmt.Sprintf("%s, and no /proc/driver/nvidia/gpus/*/information of the NVIDIA GPUs on the PCI bus says Device Minor %d", nvmlWhy, g.minor)
			}
			g.stopf("cannot tell which PCI device %s (%s) is: %s", g.file, g.where, why)
			continue
		}
		g.bus = bus
	}
	return Result{}, false
}

// procMinors maps minor numbers to PCI addresses through the NVIDIA driver's procfs files
// of the NVIDIA GPUs on the PCI bus, for what NVML cannot answer. A file that cannot be read
// leaves its GPU out: the caller says which minor is missing. The Result is set only when
// ctx ended.
func procMinors(ctx context.Context, env *Env) (map[int]string, Result) {
	out := map[int]string{}
	pci, err := env.Facts.PCIDevices(ctx)
	if ctx.Err() != nil {
		return nil, factsError(ctx, "list PCI devices", err)
	}
	for _, d := range pci {
		if !isNVIDIAGPU(d) {
			continue
		}
		m, err := node.ReadNVIDIAProcMinor(ctx, env.Facts, d.Address)
		if ctx.Err() != nil {
			return nil, factsError(ctx, "read "+node.NVIDIAProcGPUInfo(d.Address), err)
		}
		if err == nil {
			out[m] = d.Address
		}
	}
	return out, Result{}
}

// describeDevNode says what stat found: "missing", "a regular file", "char 195:255".
func describeDevNode(dn node.DevNode) string {
	switch {
	case dn.Missing:
		return "missing"
	case dn.Type != "char":
		return "a " + typeName(dn.Type)
	}
	return fmt.Sprintf("char %d:%d", dn.Major, dn.Minor)
}

// gatherCoreFacts reads the CPU topology, numbers the cores as slurmd does under slurm.conf's
// SlurmdParameters, and reads the NUMA node of each GPU still followed.
func gatherCoreFacts(ctx context.Context, env *Env, gpus []affinityGPU, facts *affinityFacts) (Result, bool) {
	topo, err := node.ReadCPUTopology(ctx, env.Facts)
	if err != nil {
		return factsError(ctx, "read the CPU topology to number cores as Slurm does", err), true
	}
	asSocket := ""
	if conf, err := env.Slurm.Conf(ctx); err == nil {
		asSocket = socketParameter(conf.Settings["slurmdparameters"].Value)
	} else if ctx.Err() != nil {
		return slurmFilesError(ctx, "read slurm.conf", err), true
	}
	cores := numberCores(topo, asSocket != "")
	facts.cores, facts.asSocket = &cores, asSocket
	for i := range gpus {
		g := &gpus[i]
		if g.stop != nil || g.cores == nil {
			continue
		}
		n, err := node.ReadPCINUMANode(ctx, env.Facts, g.bus)
		if ctx.Err() != nil {
			return factsError(ctx, "read the NUMA node of "+g.bus, err), true
		}
		if err != nil {
			g.stopf("cannot tell which NUMA node %s (%s, %s) is on: %v", g.bus, g.file, g.where, err)
			continue
		}
		g.numa = n
	}
	return Result{}, false
}

// socketParameter is the SlurmdParameters option that makes slurmd count NUMA nodes (or L3
// caches) as sockets ("numa_node_as_socket", "l3cache_as_socket"), "" for neither.
func socketParameter(v string) string {
	for p := range strings.SplitSeq(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "numa_node_as_socket" || p == "l3cache_as_socket" {
			return p
		}
	}
	return ""
}

// Faults: gres_affinity has no fault of its own; it gives the shared one of Slurm's files
// that did not come in time (remedy.go).
func (gresAffinity) Faults() Faults {
	return Faults{shared: []fault{faultSlurmTimeout}}
}

// Explain is what `nodecheck explain gres_affinity` says.
func (gresAffinity) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"slurm.conf, to find gres.conf beside it, and its SlurmdParameters (numa_node_as_socket and l3cache_as_socket make slurmd count NUMA nodes as sockets).",
			"gres.conf: the Name=gpu lines for this node that give Cores= (or CPUs=) or Links=, with their File= devices, and AutoDetect.",
			"Each of those device files (stat only): its minor number, which names the GPU.",
			"NVML: each GPU's minor number and PCI bus id. Where NVML cannot answer, the NVIDIA GPUs on the PCI bus (/sys/bus/pci/devices) and the \"Device Minor\" of each one's /proc/driver/nvidia/gpus/<address>/information.",
			"For Cores=: the NUMA node of each GPU's PCI device (/sys/bus/pci/devices/<address>/numa_node), the online CPUs (/sys/devices/system/cpu/online), each core's package and threads (cpuN/topology/physical_package_id and core_cpus_list, or thread_siblings_list, or core_id), and each NUMA node's CPUs (/sys/devices/system/node/online, nodeN/cpulist).",
			"For Links=, and only where a line gives it: where each active NVLink of each GPU leads (NVML nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkRemotePciInfo, nvmlDeviceGetNvLinkRemoteDeviceType), in an NVML session of its own.",
		},
		Passes: "Each GPU's Cores= name only cores of the socket its PCI device hangs off (the socket of its NUMA node), or every core of the node (no affinity at all); with numa_node_as_socket or l3cache_as_socket, only cores of its NUMA node. Cores are numbered as slurmd numbers them: socket by socket, in the order of each socket's lowest CPU, each socket's cores in the order of their lowest CPU, one number per core whatever its threads (gres.conf(5): \"Core 0 will be the first core on the first socket\"; Slurm's xcpuinfo.c). Each Links= is what AutoDetect=nvml would write: per GPU in PCI bus id order, the number of active NVLinks to it, -1 at this GPU's own place. On an NVSwitch system, where every link leads to a switch and AutoDetect writes 0 for every other GPU, a Links= giving every other GPU the same number passes too: it tells Slurm what 0 tells it, that no pair is better connected than another.",
		Warns:  "A GPU's Cores= name cores of another socket than its own (jobs given that GPU get cores whose memory and PCIe traffic cross the socket interconnect), or only partly its own, or core numbers the node does not have; or a Links= disagrees with the NVLinks NVML sees (a count, or -1 not at the GPU's own place). Each warning names the GPU (PCI address, device file, gres.conf line and value) and both core lists, or the counts that differ.",
		Fails:  "Only when a read does not end in time, as every check: a wrong map is configuration, not a sick node, so it warns and never drains.",
		Skips:  "No gres.conf, gres.conf uses AutoDetect for this node (slurmd then takes cores and links from NVML itself and checks any given against them), or no GPU line for this node gives Cores= or Links=. A GPU whose PCI device has no NUMA node (numa_node -1) on a node with several sockets is not judged, and says so.",
		Errors: "slurm.conf or gres.conf cannot be read, a GPU's device file or its PCI device cannot be told (missing device file, NVML and the driver's procfs both silent), or the CPU topology, a numa_node or NVML's NVLink topology cannot be read.",
		Fix: []string{
			"nvidia-smi topo -m: the \"CPU Affinity\" and \"NUMA Affinity\" columns show each GPU's CPUs and NUMA node; lscpu -e=CPU,NODE,SOCKET,CORE shows which CPUs make which core and socket. Slurm's core numbers are not CPU numbers: on a node whose CPUs alternate between sockets, Cores=0-55 is still the first socket.",
			"The quickest correct map is slurmd's own: set AutoDetect=nvml for the node (slurmd fills Cores= and Links= from NVML), or run slurmd -G with AutoDetect=nvml and SlurmdDebug=debug2 and copy the \"Core Affinity Range - Abstract\" and \"NVLinks\" lines it logs for each GPU.",
			"Fix gres.conf, check it with nodecheck lint, and restart slurmctld and slurmd: changes to Cores= need a restart (gres.conf(5)).",
		},
	}
}
