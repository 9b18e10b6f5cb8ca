package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/files"
)

// InventoryFact is the node's CPU topology and usable memory (Inventory), recorded as
// inventory.json. Live reads the CPU topology from /sys/devices/system/cpu (under
// Paths.Sys) and the usable memory from /proc/meminfo (under Paths.FS), every file through
// config/files (bounded, regular files only), the whole reading abandoned at ctx's end.
//
// It counts what github.com/jaypipes/ghw counts (ghw.CPU, ghw.Memory), which nodecheck used
// until the prolog's start-up left it out: ghw links net/http, crypto/tls and YAML, whose
// initialisation every process paid (docs/speed.md). The test TestInventoryMatchesGHW holds
// the two to the same answer on the fixtures and on the machine that runs it.
var InventoryFact = &Fact[Inventory]{
	Name: "inventory",
	What: "CPU and memory inventory",
	Live: func(_ context.Context, l *Live) (Inventory, error) {
		return readInventory(dirTree(l.paths.Sys), l.hostPath("/proc/meminfo"))
	},
	Check: checkInventory,
}

// cpuDir is /sys/devices/system/cpu relative to the sysfs root.
const cpuDir = "devices/system/cpu"

// readInventory reads the topology of sys's online logical CPUs and MemTotal from meminfo.
func readInventory(sys fs.FS, meminfo string) (Inventory, error) {
	cpus, err := readCPUTopology(sys)
	if err != nil {
		return Inventory{}, fmt.Errorf("read CPU inventory: %w", err)
	}
	inv := cpus.inventory()
	if inv.CPUs == 0 {
		return Inventory{}, errors.New("read CPU inventory: no online CPU found in /sys/devices/system/cpu")
	}
	mem, err := readMemTotal(meminfo)
	if err != nil {
		return Inventory{}, fmt.Errorf("read memory inventory: %w", err)
	}
	inv.MemoryUsableMiB = mem >> 20
	return inv, nil
}

// cpuTopology is the online logical CPUs: their count, and the cores of each physical
// package (socket) by core id.
type cpuTopology struct {
	cpus     int
	packages map[int]map[int]bool
}

func (t cpuTopology) inventory() Inventory {
	inv := Inventory{Sockets: len(t.packages), CPUs: t.cpus}
	cores := 0
	for _, c := range t.packages {
		cores += len(c)
	}
	if inv.Sockets > 0 {
		inv.CoresPerSocket = cores / inv.Sockets
	}
	if cores > 0 {
		inv.ThreadsPerCore = inv.CPUs / cores
	}
	return inv
}

// readCPUTopology lists <sys>/devices/system/cpu/cpuN, leaves out those whose online file
// says 0 (cpu0 usually has none: it is online), and groups the rest by
// topology/physical_package_id and topology/core_id. As ghw does, an id that cannot be read
// counts as -1 (the kernel itself writes -1 where the firmware does not say): such CPUs share
// one package or core rather than vanishing. A directory that cannot be listed is an error.
func readCPUTopology(sys fs.FS) (cpuTopology, error) {
	t := cpuTopology{packages: map[int]map[int]bool{}}
	ents, err := fs.ReadDir(sys, cpuDir)
	if err != nil {
		return t, fmt.Errorf("list /sys/%s: %w", cpuDir, bare(err))
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "cpu")
		if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue // cpufreq, cpuidle, online, possible, ...
		}
		dir := path.Join(cpuDir, e.Name())
		if v, err := readSysInt(sys, path.Join(dir, "online")); err == nil && v == 0 {
			continue
		}
		pkg := readSysIntOr(sys, path.Join(dir, "topology", "physical_package_id"), -1)
		core := readSysIntOr(sys, path.Join(dir, "topology", "core_id"), -1)
		if t.packages[pkg] == nil {
			t.packages[pkg] = map[int]bool{}
		}
		t.packages[pkg][core] = true
		t.cpus++
	}
	return t, nil
}

// readSysInt reads a sysfs attribute holding one decimal integer.
func readSysInt(sys fs.FS, name string) (int, error) {
	b, err := readBounded(sys, name, sysfsAttrLimit)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// readSysIntOr is readSysInt with def for a file that cannot be read or parsed.
func readSysIntOr(sys fs.FS, name string, def int) int {
	v, err := readSysInt(sys, name)
	if err != nil {
		return def
	}
	return v
}

// readMemTotal returns /proc/meminfo's MemTotal in bytes: the memory the kernel can use, the
// installed memory less what firmware and the kernel reserve.
func readMemTotal(meminfo string) (uint64, error) {
	b, err := files.Read(context.Background(), meminfo, liveLimits(sysfsAttrLimit*16))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return 0, fmt.Errorf("%s: MemTotal %q: want a number of kB", meminfo, strings.TrimSpace(rest))
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		switch {
		case err != nil || v > 1<<53:
			return 0, fmt.Errorf("%s: MemTotal %q: want a number of kB", meminfo, strings.TrimSpace(rest))
		case len(f) == 2 && f[1] != "kB":
			return 0, fmt.Errorf("%s: MemTotal %q: unit %q, want kB", meminfo, strings.TrimSpace(rest), f[1])
		case v == 0:
			return 0, fmt.Errorf("%s: MemTotal is 0", meminfo)
		}
		return v << 10, nil
	}
	return 0, fmt.Errorf("%s: no MemTotal line", meminfo)
}

// checkInventory refuses negative counts in a replayed inventory.
func checkInventory(inv Inventory) error {
	for _, f := range []struct {
		key string
		v   int
	}{{"sockets", inv.Sockets}, {"cores_per_socket", inv.CoresPerSocket}, {"threads_per_core", inv.ThreadsPerCore}, {"cpus", inv.CPUs}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.key, f.v)
		}
	}
	return nil
}
