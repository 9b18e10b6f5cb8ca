package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jaypipes/ghw"
)

// ghwInventory is what github.com/jaypipes/ghw reads from the node at p: the oracle Live's own
// reader is held to (ghw is linked into this test only; see Live.Inventory for why).
func ghwInventory(t *testing.T, p Paths) Inventory {
	t.Helper()
	args := ghwArgs(p)
	cpu, err := ghw.CPU(args...)
	if err != nil {
		t.Fatalf("ghw.CPU: %v", err)
	}
	inv := Inventory{Sockets: len(cpu.Processors), CPUs: int(cpu.TotalHardwareThreads)}
	if cores := int(cpu.TotalCores); cores > 0 {
		inv.ThreadsPerCore = inv.CPUs / cores
		if inv.Sockets > 0 {
			inv.CoresPerSocket = cores / inv.Sockets
		}
	}
	mem, err := ghw.Memory(args...)
	if err != nil {
		t.Fatalf("ghw.Memory: %v", err)
	}
	inv.MemoryUsableMiB = uint64(mem.TotalUsableBytes) >> 20 //nolint:gosec // MemTotal, positive
	return inv
}

// ghwArgs point ghw at p: a chroot at Paths.FS with /sys overridden where Paths.Sys is not
// FS/sys. Warnings and external tools are off.
func ghwArgs(p Paths) []any {
	args := []any{ghw.WithDisableWarnings(), ghw.WithDisableTools(), ghw.WithChroot(p.FS)}
	if p.Sys != filepath.Join(p.FS, "sys") {
		args = append(args, ghw.WithPathOverrides(ghw.PathOverrides{"/sys": p.Sys}))
	}
	return args
}

// cpuTree writes a node's /sys/devices/system/cpu and /proc for cpus given as
// "package:core" ("0:1"), "package:core:0" for an offline one; cpuinfo lists each.
func cpuTree(t *testing.T, memTotal string, cpus ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"proc/meminfo": "MemTotal:       " + memTotal + "\nMemFree:         1000 kB\n"}
	var cpuinfo strings.Builder
	for i, c := range cpus {
		f := strings.Split(c, ":")
		base := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", i)
		files[base+"topology/physical_package_id"] = f[0] + "\n"
		files[base+"topology/core_id"] = f[1] + "\n"
		if len(f) == 3 {
			files[base+"online"] = f[2] + "\n"
		} else if i > 0 {
			files[base+"online"] = "1\n"
		}
		fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: GenuineIntel\nmodel name\t: test\nphysical id\t: %s\ncore id\t\t: %s\n\n", i, f[0], f[1])
	}
	files["proc/cpuinfo"] = cpuinfo.String()
	files["sys/devices/system/cpu/online"] = "0-" + fmt.Sprint(len(cpus)-1) + "\n"
	writeTree(t, dir, files)
	return dir
}

func TestInventoryMatchesGHW(t *testing.T) {
	fix := absFixture(t, inventoryFixture)
	cases := []struct {
		name  string
		paths Paths
		want  *Inventory // nil: whatever ghw says (this machine)
	}{
		{"fixture", Paths{Sys: filepath.Join(fix, "sys"), Dev: fix, FS: fix}, &fixtureInventory},
		{"this machine", DefaultPaths(), nil},
	}
	two := cpuTree(t, "2113260412 kB", "0:0", "0:1", "0:0", "0:1", "1:0", "1:1", "1:0", "1:1:0")
	cases = append(cases, struct {
		name  string
		paths Paths
		want  *Inventory
	}{"2 sockets, SMT, cpu7 offline", Paths{Sys: filepath.Join(two, "sys"), Dev: two, FS: two},
		&Inventory{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 1, CPUs: 7, MemoryUsableMiB: 2063730}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(tc.paths.Sys, cpuDir)); err != nil {
				t.Skipf("no %s here: %v", cpuDir, err)
			}
			l, err := NewLive(tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Read(context.Background(), l, InventoryFact)
			if err != nil {
				t.Fatalf("Inventory: %v", err)
			}
			oracle := ghwInventory(t, tc.paths)
			if diff := cmp.Diff(oracle, got); diff != "" {
				t.Errorf("Inventory differs from ghw's (-ghw +nodecheck):\n%s", diff)
			}
			if tc.want != nil {
				if diff := cmp.Diff(*tc.want, got); diff != "" {
					t.Errorf("Inventory (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestReadMemTotal(t *testing.T) {
	for _, tc := range []struct {
		name, meminfo string
		want          uint64
		wantErr       string
	}{
		{"kB", "MemTotal:       24684236 kB\nMemFree: 1 kB\n", 24684236 << 10, ""},
		{"not first", "Foo: 1\nMemTotal: 1024 kB\n", 1 << 20, ""},
		{"absent", "MemFree: 1 kB\n", 0, "no MemTotal line"},
		{"empty value", "MemTotal:\n", 0, "want a number of kB"},
		{"not a number", "MemTotal: lots kB\n", 0, "want a number of kB"},
		{"other unit", "MemTotal: 12 MB\n", 0, `unit "MB"`},
		{"zero", "MemTotal: 0 kB\n", 0, "MemTotal is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "meminfo")
			if err := os.WriteFile(p, []byte(tc.meminfo), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readMemTotal(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("readMemTotal: %d, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("readMemTotal = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
