package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKernelList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"0-55,112-167\n", append(seq(0, 55), seq(112, 167)...), ""},
		{"0\n", []int{0}, ""},
		{"0,112", []int{0, 112}, ""},
		{"\n", []int{}, ""}, // a NUMA node without CPUs
		{"", []int{}, ""},
		{"3-5,0-4", seq(0, 5), ""}, // not the kernel's form, read all the same
		{"65535", []int{65535}, ""},
		{"65536", nil, `"65536" is not a number`},
		{"0-7:2/4", nil, `"0-7:2/4" is not a number`},
		{"5-3", nil, `the range "5-3" runs backwards`},
		{"0, 1", nil, `" 1" is not a number`},
		{"-1", nil, `"-1" is not a number`},
		{"0,,1", nil, `"" is not a number`},
		{"0x3", nil, `"0x3" is not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseKernelList(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseKernelList(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseKernelList(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func seq(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

func TestFormatKernelList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""}, {[]int{0}, "0"}, {[]int{0, 112}, "0,112"}, {append(seq(0, 55), seq(112, 167)...), "0-55,112-167"}, {[]int{1, 2, 4}, "1-2,4"},
	} {
		if got := FormatKernelList(tc.in); got != tc.want {
			t.Errorf("FormatKernelList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseNVIDIAProcMinor(t *testing.T) {
	// The layout of /proc/driver/nvidia/gpus/<addr>/information as the driver writes it (two
	// GPUs of a GTX 1080 Ti / TITAN X node, quoted in a public how-to; other lines trimmed).
	const real = "Model:           GeForce GTX TITAN X\nIRQ:             64\nGPU UUID:        GPU-4ce175fe-a313-4c4a-d620-560e96e8ef2e\nVideo BIOS:      84.00.45.00.03\nBus Type:        PCIe\nDMA Size:        40 bits\nDMA Mask:        0xffffffffff\nBus Location:    0000:65:00.0\nDevice Minor:    1\nBlacklisted:     No\n"
	tests := []struct {
		in      string
		want    int
		wantErr string
	}{
		{real, 1, ""},
		{"Bus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n", 0, ""},
		{"Device Minor: 255\n", 0, `Device Minor "255" is not a number from 0 to 254`},
		{"Device Minor: x\n", 0, "is not a number"},
		{"Model: A100\n", 0, `no "Device Minor:" line`},
	}
	for _, tc := range tests {
		got, err := ParseNVIDIAProcMinor(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseNVIDIAProcMinor(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseNVIDIAProcMinor(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// topoFiles is a /sys tree (paths under /sys) for ReadCPUTopology.
type topoFiles map[string]string

// twoSocketSMT is 2 sockets x 2 cores x 2 threads as x86 Linux numbers them, with every file
// of cpu/*/topology a kernel 6.x has, for every CPU.
func twoSocketSMT() topoFiles {
	f := topoFiles{
		"devices/system/cpu/online":         "0-7\n",
		"devices/system/cpu/present":        "0-7\n",
		"devices/system/node/online":        "0-1\n",
		"devices/system/node/node0/cpulist": "0-1,4-5\n",
		"devices/system/node/node1/cpulist": "2-3,6-7\n",
	}
	for cpu := range 8 {
		core, pkg := cpu%4, (cpu%4)/2
		d := fmt.Sprintf("devices/system/cpu/cpu%d/topology/", cpu)
		f[d+"physical_package_id"] = fmt.Sprintf("%d\n", pkg)
		f[d+"core_id"] = fmt.Sprintf("%d\n", core%2)
		f[d+"die_id"] = "0\n"
		f[d+"core_cpus_list"] = fmt.Sprintf("%d,%d\n", core, core+4)
		f[d+"thread_siblings_list"] = fmt.Sprintf("%d,%d\n", core, core+4)
	}
	return f
}

func (f topoFiles) without(match func(p string) bool) topoFiles {
	out := topoFiles{}
	for p, c := range f {
		if !match(p) {
			out[p] = c
		}
	}
	return out
}

func (f topoFiles) with(p, content string) topoFiles {
	out := f.without(func(string) bool { return false })
	out[p] = content
	return out
}

func liveOver(tb testing.TB, sys topoFiles) *Live {
	tb.Helper()
	p := Paths{Sys: tb.TempDir(), Dev: tb.TempDir(), FS: tb.TempDir()}
	l, err := NewLive(p)
	if err != nil {
		tb.Fatal(err)
	}
	for name, content := range sys {
		path := filepath.Join(p.Sys, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return l
}

func TestReadCPUTopology(t *testing.T) {
	smt := CPUTopology{
		Cores:     []CPUCore{{0, []int{0, 4}}, {0, []int{1, 5}}, {1, []int{2, 6}}, {1, []int{3, 7}}},
		NUMANodes: []NUMANode{{0, []int{0, 1, 4, 5}}, {1, []int{2, 3, 6, 7}}},
	}
	isList := func(p string) bool {
		return strings.HasSuffix(p, "core_cpus_list") || strings.HasSuffix(p, "thread_siblings_list")
	}
	tests := []struct {
		name    string
		sys     topoFiles
		want    CPUTopology
		wantErr string
	}{
		{"kernel 6.x", twoSocketSMT(), smt, ""},
		{"before 5.7: thread_siblings_list", twoSocketSMT().without(func(p string) bool { return strings.HasSuffix(p, "core_cpus_list") }), smt, ""},
		{"no sibling lists: core_id and die_id", twoSocketSMT().without(isList), smt, ""},
		{"no sibling lists, no die_id", twoSocketSMT().without(func(p string) bool { return isList(p) || strings.HasSuffix(p, "die_id") }), smt, ""},
		{"no node/online: nodes probed from node0", twoSocketSMT().without(func(p string) bool { return p == "devices/system/node/online" }), smt, ""},
		{"no cpu/online: cpu/present", twoSocketSMT().without(func(p string) bool { return p == "devices/system/cpu/online" }), smt, ""},
		{"neither: the NUMA nodes' CPUs", twoSocketSMT().without(func(p string) bool {
			return strings.HasPrefix(p, "devices/system/cpu/") && !strings.Contains(p, "/topology/")
		}), smt, ""},
		{"second threads offline", twoSocketSMT().with("devices/system/cpu/online", "0-3\n"), CPUTopology{
			Cores:     []CPUCore{{0, []int{0}}, {0, []int{1}}, {1, []int{2}}, {1, []int{3}}},
			NUMANodes: []NUMANode{{0, []int{0, 1}}, {1, []int{2, 3}}},
		}, ""},
		{"no NUMA at all", twoSocketSMT().without(func(p string) bool { return strings.HasPrefix(p, "devices/system/node/") }), CPUTopology{Cores: smt.Cores}, ""},
		{"a memory-only NUMA node", twoSocketSMT().with("devices/system/node/online", "0-2\n").with("devices/system/node/node2/cpulist", "\n"), CPUTopology{
			Cores: smt.Cores, NUMANodes: append(smt.NUMANodes, NUMANode{2, []int{}}),
		}, ""},
		{"no physical_package_id", twoSocketSMT().without(func(p string) bool { return strings.HasSuffix(p, "cpu2/topology/physical_package_id") }), CPUTopology{},
			"read /sys/devices/system/cpu/cpu2/topology/physical_package_id: no such file"},
		{"a sibling list without its CPU", twoSocketSMT().with("devices/system/cpu/cpu1/topology/core_cpus_list", "0,4\n"), CPUTopology{},
			`read /sys/devices/system/cpu/cpu1/topology/core_cpus_list: "0,4" does not hold cpu1 itself`},
		{"garbage in a list", twoSocketSMT().with("devices/system/node/node1/cpulist", "2-3,six\n"), CPUTopology{},
			`read /sys/devices/system/node/node1/cpulist: list "2-3,six": "six" is not a number or a range such as 0-55`},
		{"a package id out of range", twoSocketSMT().with("devices/system/cpu/cpu0/topology/physical_package_id", "-2\n"), CPUTopology{},
			`read /sys/devices/system/cpu/cpu0/topology/physical_package_id: "-2" is not a number from -1 to 65535`},
		{"nothing at all", topoFiles{"devices/system/x": ""}, CPUTopology{}, "read /sys/devices/system/cpu/online: no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCPUTopology(context.Background(), liveOver(t, tc.sys))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("ReadCPUTopology = %+v, %v; want an error starting %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadCPUTopology (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadCPUTopologyThisMachine reads the machine the test runs on: the kernel's own files,
// whatever their layout, must read without error and cover every online CPU once.
func TestReadCPUTopologyThisMachine(t *testing.T) {
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skip("no /sys/devices/system/cpu here")
	}
	got, err := ReadCPUTopology(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	online, err := ParseKernelList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var covered []int
	for _, c := range got.Cores {
		covered = append(covered, c.CPUs...)
	}
	if len(covered) != len(online) {
		t.Errorf("the cores cover %d CPUs, %d are online (%+v)", len(covered), len(online), got)
	}
}

// TestReadCPUTopologyRecorded records a reading and replays it: the snapshot holds every file
// it read, and no other, and gives the same topology.
func TestReadCPUTopologyRecorded(t *testing.T) {
	live := liveOver(t, twoSocketSMT())
	rec := NewRecorder(live)
	want, err := ReadCPUTopology(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPCINUMANode(context.Background(), rec, "0000:19:00.0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPCINUMANode of a device that is not there: %v, want fs.ErrNotExist", err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	saved, err := rec.Save(dir, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	// online, 2 node files, node/online, and 2 files for each of the 4 cores.
	if saved.Files != 1+2+1+8 {
		t.Errorf("saved %d files, want 12: one per file read", saved.Files)
	}
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadCPUTopology(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed topology (-recorded +replayed):\n%s", diff)
	}
}

func TestReadPCINUMANode(t *testing.T) {
	l := liveOver(t, topoFiles{
		"bus/pci/devices/0000:19:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:9b:00.0/numa_node": "1\n",
		"bus/pci/devices/0000:01:00.0/numa_node": "-1\n",
		"bus/pci/devices/0000:02:00.0/numa_node": "one\n",
	})
	for _, tc := range []struct {
		addr    string
		want    int
		wantErr string
	}{
		{"0000:19:00.0", 0, ""}, {"0000:9b:00.0", 1, ""}, {"0000:01:00.0", -1, ""},
		{"0000:02:00.0", 0, `"one" is not a number`},
		{"0000:03:00.0", 0, "no such file"},
		{"../../x", 0, "is not a PCI address"},
		{"", 0, "is not a PCI address"},
	} {
		got, err := ReadPCINUMANode(context.Background(), l, tc.addr)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReadPCINUMANode(%q) = %d, %v; want an error containing %q", tc.addr, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ReadPCINUMANode(%q) = %d, %v; want %d", tc.addr, got, err, tc.want)
		}
	}
}

// TestH100SnapshotTopology replays the repository's h100-healthy: 112 cores in 2 packages,
// Slurm's cores 0-55 on NUMA node 0, its GPUs 0-3 on node 0 and 4-7 on node 1.
func TestH100SnapshotTopology(t *testing.T) {
	snap, err := OpenSnapshot(filepath.Join("..", "..", "testdata", "snapshots", "h100-healthy"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadCPUTopology(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cores) != 112 || got.Cores[55].Package != 0 || got.Cores[56].Package != 1 ||
		!cmp.Equal(got.Cores[56].CPUs, []int{56, 168}) || len(got.NUMANodes) != 2 || len(got.NUMANodes[1].CPUs) != 112 {
		t.Errorf("h100-healthy topology: %d cores, core 56 %+v, nodes %d", len(got.Cores), got.Cores[56], len(got.NUMANodes))
	}
	for bus, want := range map[string]int{"0000:19:00.0": 0, "0000:5d:00.0": 0, "0000:9b:00.0": 1, "0000:db:00.0": 1} {
		if n, err := ReadPCINUMANode(context.Background(), snap, bus); err != nil || n != want {
			t.Errorf("numa_node of %s = %d, %v; want %d", bus, n, err, want)
		}
	}
}

// BenchmarkReadCPUTopology reads a two-socket, 112-core, 224-CPU node (h100-healthy's
// layout) from a sysfs tree on disk, as a live node's check does: 116 files.
func BenchmarkReadCPUTopology(b *testing.B) {
	sys := topoFiles{
		"devices/system/cpu/online":         "0-223\n",
		"devices/system/node/online":        "0-1\n",
		"devices/system/node/node0/cpulist": "0-55,112-167\n",
		"devices/system/node/node1/cpulist": "56-111,168-223\n",
	}
	for c := range 112 {
		d := fmt.Sprintf("devices/system/cpu/cpu%d/topology/", c)
		sys[d+"physical_package_id"] = fmt.Sprintf("%d\n", c/56)
		sys[d+"core_cpus_list"] = fmt.Sprintf("%d,%d\n", c, c+112)
	}
	l := liveOver(b, sys)
	b.ReportAllocs()
	for b.Loop() {
		topo, err := ReadCPUTopology(context.Background(), l)
		if err != nil || len(topo.Cores) != 112 {
			b.Fatal(len(topo.Cores), err)
		}
	}
}
