package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

const idNodeInventory = "node_inventory"

// The ways node_inventory fails: its rows of the remedy table (Faults).
const (
	faultMemoryLost   fault = "node_inventory/memory_lost"
	faultMemoryConfig fault = "node_inventory/memory_config"
	faultSocketLost   fault = "node_inventory/socket_lost"
	faultCPUsConfig   fault = "node_inventory/cpus_config"
)

// Summaries node_inventory emits from more than one place.
const (
	nodeInventoryNotRecorded = "inventory not recorded in this snapshot"
	nodeInventoryTimedOut    = "timed out reading the CPU and memory inventory"
)

// nodeInventory compares the node's CPUs, sockets, cores per socket, threads per core and
// usable memory with its slurm.conf NodeName line. slurmd registers with what it finds, and
// slurmctld sets a node that registers with less than its configuration INVAL, so less is a
// fail; more is a warning (Slurm uses only what is configured).
type nodeInventory struct{}

func (nodeInventory) ID() string { return idNodeInventory }

func (nodeInventory) Description() string {
	return "CPUs, sockets, cores, threads and usable memory are at least what slurm.conf's NodeName line says"
}

// nodeInventoryConfig is [checks.node_inventory]. It has no keys of its own: slurm.conf is
// the expectation.
type nodeInventoryConfig struct {
	config.CheckCommon
	// Sockets, Cores and Threads are fixed counts the node must have exactly, besides
	// slurm.conf's line: NHC's check_hw_cpuinfo SOCKETS CORES THREADS (all sockets, all
	// physical cores, all logical CPUs). 0 does not check.
	// They are counted from /proc/cpuinfo as NHC counts, which differs from sysfs on aarch64.
	Sockets int `toml:"sockets"`
	Cores   int `toml:"cores"`
	Threads int `toml:"threads"`
}

// ValidateSection implements config.SectionValidator.
func (c *nodeInventoryConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for _, k := range []struct {
		key string
		v   int
	}{{"sockets", c.Sockets}, {"cores", c.Cores}, {"threads", c.Threads}} {
		if k.v < 0 {
			out = append(out, config.Problemf(k.key, " = %d: give 0 (not checked) or a count", k.v))
		}
	}
	return out
}

// Section runs the check in health and manual modes only: the inventory does not change
// between jobs, so a prolog has nothing to gain from reading it again.
func (nodeInventory) Section() config.Section {
	return &nodeInventoryConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

// inventoryItem is one slurm.conf key compared with the node.
type inventoryItem struct {
	key      string // slurm.conf's spelling: "CoresPerSocket"
	have     uint64 // what the node has
	want     uint64 // what slurm.conf says
	unit     string // " MiB" for RealMemory
	moreIsOK bool   // RealMemory: memory above it is normal
	fixed    bool   // a fixed count of nodecheck.toml (NHC's check_hw_cpuinfo): any difference fails
}

func (nodeInventory) Run(ctx context.Context, env *Env) Result {
	inv, err := node.Read(ctx, env.Facts, node.InventoryFact)
	switch {
	case err != nil && ctx.Err() != nil:
		return Result{Status: StatusFail, Summary: nodeInventoryTimedOut, Err: err, Remedy: remedyOf(faultTimeout)}
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: nodeInventoryNotRecorded}
	case err != nil:
		return Result{Status: StatusError, Summary: err.Error(), Err: err}
	}
	conf, nl, failed, ok := nodeConfLine(ctx, env)
	if !ok {
		return failed
	}
	items := inventoryItems(inv, nl)
	if c := settings[*nodeInventoryConfig](env.Config, idNodeInventory); c.Sockets > 0 || c.Cores > 0 || c.Threads > 0 {
		b, err := env.Facts.ReadFile(ctx, "/proc/cpuinfo") // as NHC counts: sysfs differs on aarch64
		if err != nil && ctx.Err() != nil {
			return Result{Status: StatusFail, Summary: nodeInventoryTimedOut, Err: err, Remedy: remedyOf(faultTimeout)}
		}
		items = append(items, fixedCountItems(string(b), c)...)
	}
	if len(items) == 0 {
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("the NodeName line of %s in %s sets none of CPUs, Sockets, CoresPerSocket, ThreadsPerCore and RealMemory", env.Node, conf.Path)}
	}
	res := Result{Status: StatusOK}
	var bad []Detail
	var obs, exp string
	for _, it := range items {
		d := judgeInventoryItem(it)
		res.Details = append(res.Details, d)
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
		if obs != "" {
			obs += " "
			exp += " "
		}
		obs += it.key + "=" + strconv.FormatUint(it.have, 10)
		exp += it.key + "=" + strconv.FormatUint(it.want, 10)
	}
	res.Observed, res.Expected = obs, exp
	if len(bad) > 0 {
		res.Status = worstOf(bad)
		// The worst first: a fail is what the drain reason must name.
		first := bad[0]
		for _, d := range bad {
			if d.Status.Worse(first.Status) {
				first = d
			}
		}
		res.Summary = first.Message + moreSuffix(len(bad)-1)
		return res
	}
	res.Summary = "as slurm.conf says: " + obs
	return res
}

// inventoryItems lists the keys slurm.conf sets for the node, with what the node has, in
// slurm.conf's order of specificity: CPUs, then the topology, then memory. Sockets comes
// from Boards × SocketsPerBoard where only those are set, as Slurm derives it.
func inventoryItems(inv node.Inventory, nl slurm.NodeLine) []inventoryItem {
	set := func(key string) bool { _, ok := nl.Set[key]; return ok }
	u := func(v int) uint64 {
		if v < 0 {
			return 0
		}
		return uint64(v)
	}
	var items []inventoryItem
	if set("CPUs") {
		items = append(items, inventoryItem{key: "CPUs", have: u(inv.CPUs), want: u(nl.CPUs)})
	}
	switch {
	case set("Sockets"):
		items = append(items, inventoryItem{key: "Sockets", have: u(inv.Sockets), want: u(nl.Sockets)})
	case set("SocketsPerBoard"):
		boards := max(nl.Boards, 1)
		items = append(items, inventoryItem{key: "Sockets", have: u(inv.Sockets), want: u(boards * nl.SocketsPerBoard)})
	}
	if set("CoresPerSocket") {
		items = append(items, inventoryItem{key: "CoresPerSocket", have: u(inv.CoresPerSocket), want: u(nl.CoresPerSocket)})
	}
	if set("ThreadsPerCore") {
		items = append(items, inventoryItem{key: "ThreadsPerCore", have: u(inv.ThreadsPerCore), want: u(nl.ThreadsPerCore)})
	}
	if set("RealMemory") {
		items = append(items, inventoryItem{key: "RealMemory", have: inv.MemoryUsableMiB, want: nl.RealMemory, unit: " MiB", moreIsOK: true})
	}
	return items
}

// fixedCountItems are the fixed counts nodecheck.toml sets (NHC's check_hw_cpuinfo), against
// the counts NHC itself makes of /proc/cpuinfo (nhcCPUCounts), which are not sysfs's on every
// machine: on aarch64, without "physical id", NHC counts every CPU as a socket. Where
// /proc/cpuinfo cannot be read, each count is an item the node could not tell (0).
func fixedCountItems(cpuinfo string, c *nodeInventoryConfig) []inventoryItem {
	sockets, cores, threads := nhcCPUCounts(cpuinfo)
	var items []inventoryItem
	for _, k := range []struct {
		key        string
		want, have int
	}{{"sockets", c.Sockets, sockets}, {"cores", c.Cores, cores}, {"threads", c.Threads, threads}} {
		if k.want > 0 {
			items = append(items, inventoryItem{key: k.key, have: uint64(max(k.have, 0)), want: uint64(k.want), fixed: true})
		}
	}
	return items
}

// nhcCPUCounts counts sockets, cores and threads as LBNL NHC's nhc_hw_gather_data does
// (lbnl_hw.nhc): distinct "physical id" values are the sockets; cores are sockets × the
// last "cpu cores", threads sockets × the last "siblings" (0 without it); with processors but
// no "physical id" (aarch64, some VMs) sockets, cores and threads are all the processor count;
// otherwise 1, 1, 1. An empty cpuinfo gives 0, 0, 0 (not read).
func nhcCPUCounts(cpuinfo string) (sockets, cores, threads int) {
	if cpuinfo == "" {
		return 0, 0, 0
	}
	processors, perSocket, siblings := 0, -1, -1
	ids := map[string]bool{}
	for _, line := range strings.Split(cpuinfo, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "processor" && f[1] == ":":
			processors++
		case len(f) >= 4 && f[0] == "physical" && f[1] == "id" && f[2] == ":":
			ids[f[3]] = true
		case len(f) >= 3 && f[0] == "siblings" && f[1] == ":":
			siblings, _ = strconv.Atoi(f[2])
		case len(f) >= 4 && f[0] == "cpu" && f[1] == "cores" && f[2] == ":":
			perSocket, _ = strconv.Atoi(f[3])
		}
	}
	switch {
	case processors > 0 && len(ids) == 0:
		return processors, processors, processors
	case len(ids) > 0 && perSocket >= 0:
		sockets, cores = len(ids), len(ids)*perSocket
		if siblings >= 0 {
			threads = len(ids) * siblings
		}
		return sockets, cores, threads
	}
	return 1, 1, 1
}

// judgeInventoryItem is the verdict on one key. A zero on the node side means the node could not
// tell, which is not evidence of missing hardware.
func judgeInventoryItem(it inventoryItem) Detail {
	have := strconv.FormatUint(it.have, 10) + it.unit
	want := strconv.FormatUint(it.want, 10) + it.unit
	d := Detail{Device: it.key, Status: StatusOK, Observed: have, Expected: want}
	what := it.key
	if it.key == "RealMemory" {
		what = "usable memory"
	}
	switch {
	case it.have == 0 && it.fixed:
		d.Status = StatusError
		d.Message = fmt.Sprintf("CPU %s: /proc/cpuinfo could not be read to count them, nodecheck.toml says %s = %s", it.key, it.key, want)
	case it.have == 0:
		d.Status = StatusError
		d.Message = fmt.Sprintf("%s: the node's value could not be read, slurm.conf says %s=%s", it.key, it.key, want)
	case it.fixed && it.have != it.want:
		failDetail(&d, faultCPUsConfig)
		d.Message = fmt.Sprintf("actual CPU %s count (%s) does not match expected (%s) in nodecheck.toml (NHC's check_hw_cpuinfo)", strings.TrimSuffix(it.key, "s"), have, want)
	case it.fixed:
		d.Message = fmt.Sprintf("CPU %s %s, as nodecheck.toml says", it.key, have)
	case it.have < it.want && it.key == "RealMemory":
		failDetail(&d, memoryShortFault(it.have, it.want))
		d.Message = fmt.Sprintf("usable memory %s is %d MiB below RealMemory=%d: Slurm sets the node INVAL", have, it.want-it.have, it.want)
	case it.have < it.want:
		failDetail(&d, faultCPUsConfig)
		if it.key == "Sockets" {
			d.Remedy = remedyOf(faultSocketLost)
		}
		d.Message = fmt.Sprintf("%s %s, slurm.conf says %s=%s: Slurm sets the node INVAL", what, have, it.key, want)
	case it.have > it.want && !it.moreIsOK:
		d.Status = StatusWarn
		d.Message = fmt.Sprintf("%s %s, more than slurm.conf's %s=%s: Slurm uses only %s", what, have, it.key, want, want)
	case it.have > it.want:
		d.Message = fmt.Sprintf("%s %s, at least RealMemory=%d", what, have, it.want)
	default:
		d.Message = fmt.Sprintf("%s %s, as slurm.conf says", what, have)
	}
	return d
}

// memoryLostShare is the shortfall below RealMemory, as a share of it, from which usable
// memory is taken for a DIMM lost rather than for RealMemory set too high: a DIMM is at
// least 1/48 (2%) of a node (48 slots on two sockets), and what firmware and the kernel keep
// is less than that.
const memoryLostShare = 0.02

// memoryShortFault tells a lost DIMM (service) from a RealMemory set above MemTotal (admin).
func memoryShortFault(have, want uint64) fault {
	if float64(want-have) >= memoryLostShare*float64(want) {
		return faultMemoryLost
	}
	return faultMemoryConfig
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (nodeInventory) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultMemoryLost, "usable memory 2% or more below RealMemory: a DIMM lost at boot", RemedyService,
				"a DIMM is 2% or more of a node's memory (48 DIMMs at most on two sockets); the kernel's and firmware's share is less: dmidecode and the BMC's log name the DIMM to reseat or replace"},
			{faultMemoryConfig, "usable memory less than 2% below RealMemory", RemedyAdmin,
				"RealMemory set above MemTotal, which firmware and kernel reservations keep under the installed memory: set it from slurmd -C"},
			{faultSocketLost, "fewer sockets than slurm.conf says", RemedyService, "a CPU package that did not come up is a board or CPU fault"},
			{faultCPUsConfig, "fewer CPUs, cores per socket or threads per core than slurm.conf says, or CPU counts other than nodecheck.toml's fixed ones", RemedyAdmin,
				"CPUs offline, maxcpus= or nosmt on the kernel command line, or cores or SMT off in the BIOS: configuration, or a NodeName line to correct"},
		},
	}
}

// Explain is what `nodecheck explain node_inventory` says.
func (nodeInventory) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The CPU topology and memory: /sys/devices/system/cpu (online logical CPUs, their physical package and core, counted as github.com/jaypipes/ghw counts them) and /proc/meminfo (MemTotal, the usable memory, in MiB).",
			"slurm.conf: the node's NodeName line, only the keys it sets among CPUs, Sockets (or Boards and SocketsPerBoard), CoresPerSocket, ThreadsPerCore and RealMemory.",
			"/proc/cpuinfo, only where sockets, cores or threads are set, counted as NHC counts it (distinct physical ids; sockets × cpu cores; sockets × siblings; every processor a socket where there is no physical id, as on aarch64).",
		},
		Passes: "Every key the NodeName line sets matches the node, and the usable memory is at least RealMemory.",
		Warns:  "The node has more CPUs, sockets, cores per socket or threads per core than slurm.conf says: Slurm uses only what is configured. Memory above RealMemory is normal and passes.",
		Fails:  "The node has fewer CPUs, sockets, cores per socket or threads per core than slurm.conf says, other counts than the fixed sockets, cores or threads set here, or less usable memory than RealMemory (the summary says how many MiB short): slurmd registers with what it finds and slurmctld sets the node INVAL. Or reading the inventory ran out of time.",
		Skips:  "The mode is not in modes (health and manual by default: the inventory does not change between jobs), the NodeName line sets none of the keys compared, or a snapshot replayed has no inventory.json.",
		Errors: "The inventory cannot be read, slurm.conf cannot be read, or the node is not defined in it.",
		Keys: map[string]string{
			"sockets": "A fixed count of CPU sockets the node must have exactly, besides slurm.conf's line (NHC's check_hw_cpuinfo, counted from /proc/cpuinfo as NHC counts); 0 does not check.",
			"cores":   "A fixed count of physical cores, all sockets together (sockets × \"cpu cores\"), to have exactly; 0 does not check.",
			"threads": "A fixed count of logical CPUs (sockets × \"siblings\") to have exactly; 0 does not check.",
		},
		Fix: []string{
			"Memory a little below RealMemory: MemTotal is the installed memory less what firmware and the kernel reserve (crashkernel=, hugepages reserved at boot), and it changes with a BIOS or kernel update. Set RealMemory a few percent under MemTotal (slurmd -C prints what slurmd finds), then scontrol reconfigure.",
			"Memory well below RealMemory: a DIMM lost at boot. Look at dmidecode -t memory and the BMC's event log (ipmitool sel elist), then reseat or replace it.",
			"Fewer CPUs: CPUs taken offline (cat /sys/devices/system/cpu/offline), maxcpus= or nosmt on the kernel command line, or hyper-threading or sockets turned off in the BIOS. Compare lscpu and slurmd -C with the NodeName line.",
			"More than configured: complete the NodeName line (slurmd -C prints one), or ignore it where the spare CPUs are kept out of Slurm on purpose (then prefer CpuSpecList or CoreSpecCount).",
		},
	}
}
