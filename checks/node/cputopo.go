package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// The sysfs directories ReadCPUTopology reads (Documentation/ABI/stable/sysfs-devices-system-cpu,
// Documentation/ABI/stable/sysfs-devices-node).
const (
	cpuSysDir  = "/sys/devices/system/cpu"
	nodeSysDir = "/sys/devices/system/node"
)

// maxCPUNumber bounds a CPU or NUMA node number in a kernel list: NR_CPUS is at most 8192
// (arch/x86/Kconfig) and MAX_NUMNODES 1024, so a larger number is garbage, and a range up to
// it would allocate for nothing.
const maxCPUNumber = 1<<16 - 1

// CPUTopology is the node's CPUs as the kernel lays them out under /sys/devices/system: which
// online CPUs (hardware threads) share a core, which package (socket) each core sits in, and
// which CPUs each NUMA node holds. It does not number cores: Slurm's numbering is the checks'
// business.
type CPUTopology struct {
	// Cores lists every core with an online CPU, ordered by its lowest CPU number.
	Cores []CPUCore
	// NUMANodes lists the online NUMA nodes by id with their online CPUs (none for a
	// memory-only node, such as a GH200's GPU memory). Nil where the kernel has no NUMA
	// (no /sys/devices/system/node/online).
	NUMANodes []NUMANode
}

// CPUCore is one core and its online hardware threads.
type CPUCore struct {
	Package int   // topology/physical_package_id; -1 where the kernel does not know it
	CPUs    []int // ascending
}

// NUMANode is one NUMA node and its online CPUs.
type NUMANode struct {
	ID   int
	CPUs []int // ascending; empty for a node without CPUs
}

// ReadCPUTopology reads the CPU topology through f's ReadFile, so that a recording holds
// every file it read and a snapshot replays it:
//
//   - /sys/devices/system/node/online and nodeN/cpulist of each online node (without the
//     online file, nodeN/cpulist from node0 up to the first missing one; none at all means
//     a kernel without NUMA);
//   - /sys/devices/system/cpu/online, the online CPUs (else cpu/present, else the CPUs the
//     NUMA nodes list);
//   - for the lowest online CPU of each core not yet seen, cpuN/topology/physical_package_id
//     and cpuN/topology/core_cpus_list (thread_siblings_list on kernels before 5.7), which
//     names the core's other threads, so one read per core, not per CPU; where neither list
//     exists, cpuN/topology/core_id (and die_id where present) of every CPU.
//
// A missing file that is needed is an error naming it (wrapping fs.ErrNotExist).
func ReadCPUTopology(ctx context.Context, f Facts) (CPUTopology, error) {
	nodes, err := readNUMANodes(ctx, f)
	if err != nil {
		return CPUTopology{}, err
	}
	online, err := readOnlineCPUs(ctx, f, nodes)
	if err != nil {
		return CPUTopology{}, err
	}
	for i := range nodes {
		nodes[i].CPUs = slices.DeleteFunc(nodes[i].CPUs, func(c int) bool {
			_, ok := slices.BinarySearch(online, c)
			return !ok
		})
	}
	cores, err := readCores(ctx, f, online)
	if err != nil {
		return CPUTopology{}, err
	}
	return CPUTopology{Cores: cores, NUMANodes: nodes}, nil
}

// readOnlineCPUs reads the online CPUs: cpu/online, else cpu/present, else every CPU of the
// NUMA nodes.
func readOnlineCPUs(ctx context.Context, f Facts, nodes []NUMANode) ([]int, error) {
	var firstErr error
	for _, name := range []string{"online", "present"} {
		online, err := readKernelList(ctx, f, cpuSysDir+"/"+name)
		switch {
		case err == nil && len(online) == 0:
			return nil, fmt.Errorf("read %s/%s: no CPU listed", cpuSysDir, name)
		case err == nil:
			return online, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		case firstErr == nil:
			firstErr = err
		}
	}
	var all []int
	for _, n := range nodes {
		all = append(all, n.CPUs...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == 0 {
		return nil, firstErr
	}
	return all, nil
}

// coreKey names a core: by its lowest online CPU where a sibling list named its threads, else
// by package, die and core_id (first -1).
type coreKey struct{ pkg, die, core, first int }

// readCores groups the online CPUs into cores.
func readCores(ctx context.Context, f Facts, online []int) ([]CPUCore, error) {
	isOnline := make(map[int]bool, len(online))
	for _, c := range online {
		isOnline[c] = true
	}
	seen := make(map[int]bool, len(online))
	byKey := map[coreKey]*CPUCore{}
	var keys []coreKey
	for _, cpu := range online {
		if seen[cpu] {
			continue
		}
		dir := fmt.Sprintf("%s/cpu%d/topology", cpuSysDir, cpu)
		pkg, err := readKernelInt(ctx, f, dir+"/physical_package_id", -1)
		if err != nil {
			return nil, err
		}
		key, threads, err := readCoreOf(ctx, f, dir, cpu, pkg, isOnline)
		if err != nil {
			return nil, err
		}
		c, ok := byKey[key]
		if !ok {
			c = &CPUCore{Package: pkg}
			byKey[key] = c
			keys = append(keys, key)
		}
		for _, t := range threads {
			if !seen[t] {
				seen[t] = true
				c.CPUs = append(c.CPUs, t)
			}
		}
	}
	out := make([]CPUCore, 0, len(keys))
	for _, k := range keys {
		c := byKey[k]
		slices.Sort(c.CPUs)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CPUCore) int { return a.CPUs[0] - b.CPUs[0] })
	return out, nil
}

// readCoreOf finds the core of cpu: its online siblings from core_cpus_list or
// thread_siblings_list, else its core_id (and die_id) in package pkg.
func readCoreOf(ctx context.Context, f Facts, dir string, cpu, pkg int, isOnline map[int]bool) (coreKey, []int, error) {
	for _, name := range []string{"core_cpus_list", "thread_siblings_list"} {
		p := dir + "/" + name
		list, err := readKernelList(ctx, f, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return coreKey{}, nil, err
		}
		if !slices.Contains(list, cpu) {
			return coreKey{}, nil, fmt.Errorf("read %s: %q does not hold cpu%d itself", p, formatKernelList(list), cpu)
		}
		var threads []int
		for _, t := range list {
			if isOnline[t] {
				threads = append(threads, t)
			}
		}
		return coreKey{first: threads[0], pkg: -2, die: -2, core: -2}, threads, nil
	}
	core, err := readKernelInt(ctx, f, dir+"/core_id", 0)
	if err != nil {
		return coreKey{}, nil, fmt.Errorf("%w (nor core_cpus_list nor thread_siblings_list beside it)", err)
	}
	die, err := readKernelInt(ctx, f, dir+"/die_id", -1)
	if errors.Is(err, fs.ErrNotExist) {
		die, err = 0, nil // before Linux 5.3, or one die per package
	}
	if err != nil {
		return coreKey{}, nil, err
	}
	return coreKey{pkg: pkg, die: die, core: core, first: -1}, []int{cpu}, nil
}

// maxProbedNodes bounds the NUMA nodes read where /sys/devices/system/node/online is
// missing (MAX_NUMNODES is at most 1024).
const maxProbedNodes = 1024

// readNUMANodes reads the online NUMA nodes and their CPUs; nil where the kernel has none.
func readNUMANodes(ctx context.Context, f Facts) ([]NUMANode, error) {
	ids, err := readKernelList(ctx, f, nodeSysDir+"/online")
	probe := errors.Is(err, fs.ErrNotExist)
	if err != nil && !probe {
		return nil, err
	}
	if probe {
		ids = make([]int, maxProbedNodes)
		for i := range ids {
			ids[i] = i
		}
	}
	var nodes []NUMANode
	for _, id := range ids {
		cpus, err := readKernelList(ctx, f, fmt.Sprintf("%s/node%d/cpulist", nodeSysDir, id))
		if probe && errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, NUMANode{ID: id, CPUs: cpus})
	}
	return nodes, nil
}

// ReadPCINUMANode reads /sys/bus/pci/devices/<addr>/numa_node: the NUMA node the PCI function
// at addr ("0000:9b:00.0", as sysfs names it) is attached to, -1 where the firmware does not
// say (a single-node machine, or a BIOS without an SRAT/_PXM entry for the root port).
func ReadPCINUMANode(ctx context.Context, f Facts, addr string) (int, error) {
	if addr == "" || strings.ContainsAny(addr, "/\x00") || addr == "." || addr == ".." {
		return 0, fmt.Errorf("read numa_node: %q is not a PCI address", addr)
	}
	return readKernelInt(ctx, f, "/sys/"+pciDevicesDir+"/"+addr+"/numa_node", -1)
}

// NVIDIAProcGPUInfo is the path of the NVIDIA driver's description of the GPU at addr
// ("0000:19:00.0"): /proc/driver/nvidia/gpus/<addr>/information.
func NVIDIAProcGPUInfo(addr string) string {
	return "/proc/driver/nvidia/gpus/" + addr + "/information"
}

// ReadNVIDIAProcMinor reads the GPU's /dev/nvidiaN number from the driver's procfs file
// (NVIDIAProcGPUInfo): its "Device Minor:" line. It answers without NVML, where only the
// kernel module is loaded.
func ReadNVIDIAProcMinor(ctx context.Context, f Facts, addr string) (int, error) {
	if addr == "" || strings.ContainsAny(addr, "/\x00") || addr == "." || addr == ".." {
		return 0, fmt.Errorf("read the NVIDIA driver's GPU information: %q is not a PCI address", addr)
	}
	p := NVIDIAProcGPUInfo(addr)
	b, err := f.ReadFile(ctx, p)
	if err != nil {
		return 0, err
	}
	m, err := ParseNVIDIAProcMinor(string(b))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	return m, nil
}

// ParseNVIDIAProcMinor reads the "Device Minor:" line of the driver's
// /proc/driver/nvidia/gpus/<addr>/information ("Device Minor: \t 0"): N of /dev/nvidiaN,
// 0 to 254 (255 is /dev/nvidiactl).
func ParseNVIDIAProcMinor(s string) (int, error) {
	for line := range strings.SplitSeq(s, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "Device Minor:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 254 || strconv.Itoa(n) != v {
			return 0, fmt.Errorf("Device Minor %q is not a number from 0 to 254", v)
		}
		return n, nil
	}
	return 0, errors.New("no \"Device Minor:\" line")
}

// readKernelList reads a file in the kernel's list format (cpulist, online) through f.
func readKernelList(ctx context.Context, f Facts, p string) ([]int, error) {
	b, err := f.ReadFile(ctx, p)
	if err != nil {
		return nil, err
	}
	list, err := ParseKernelList(string(b))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return list, nil
}

// readKernelInt reads a file holding one decimal number no smaller than minimum.
func readKernelInt(ctx context.Context, f Facts, p string, minimum int) (int, error) {
	b, err := f.ReadFile(ctx, p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(s)
	if err != nil || n < minimum || n > maxCPUNumber || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("read %s: %q is not a number from %d to %d", p, s, minimum, maxCPUNumber)
	}
	return n, nil
}

// ParseKernelList reads the kernel's list format, as in /sys/devices/system/cpu/online and
// /sys/devices/system/node/node0/cpulist: comma-separated numbers and ranges, ascending,
// "0-55,112-167", with the trailing newline the kernel writes; an empty file (a node without
// CPUs) is an empty list. The numbers are returned once each, ascending. Numbers go up to
// maxCPUNumber; anything else (blanks inside, signs, the "0-7:2/4" stride syntax, which the
// kernel parses but never prints) is an error quoting the element.
func ParseKernelList(s string) ([]int, error) {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return []int{}, nil
	}
	type span struct{ first, last int }
	var spans []span
	for e := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(e, "-")
		if !isRange {
			hi = lo
		}
		first, ok1 := kernelListNumber(lo)
		last, ok2 := kernelListNumber(hi)
		switch {
		case !ok1 || !ok2:
			return nil, fmt.Errorf("list %q: %q is not a number or a range such as 0-55", s, e)
		case last < first:
			return nil, fmt.Errorf("list %q: the range %q runs backwards", s, e)
		}
		spans = append(spans, span{first, last})
	}
	// The kernel writes ascending, disjoint ranges; others are merged, so that overlapping
	// ranges cannot make the list longer than maxCPUNumber+1.
	slices.SortFunc(spans, func(a, b span) int { return a.first - b.first })
	var out []int
	next := 0 // the lowest number not yet in out
	for _, r := range spans {
		for i := max(r.first, next); i <= r.last; i++ {
			out = append(out, i)
		}
		next = max(next, r.last+1)
	}
	return out, nil
}

// kernelListNumber reads decimal digits up to maxCPUNumber.
func kernelListNumber(s string) (int, bool) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n <= maxCPUNumber
}

// formatKernelList writes a list in the kernel's format: "0-55,112-167".
func formatKernelList(list []int) string {
	var b strings.Builder
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(list[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(list[j]))
		}
		i = j + 1
	}
	return b.String()
}

// FormatKernelList writes an ascending list of distinct numbers in the kernel's list format:
// "0-55,112-167"; "" for none.
func FormatKernelList(list []int) string { return formatKernelList(list) }
