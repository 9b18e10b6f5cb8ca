package node

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

func FuzzParseIBState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "4: ACTIVE\n", "5: LinkUp\n", "3: Disabled", "2: Polling",
		"1: DOWN", "0: NOP", "9: <unknown>", "", ":", "4:", ": x", "x: y", "18446744073709551616: X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, name, err := parseIBState(s)
		if err != nil {
			return
		}
		if name == "" || name != strings.TrimSpace(name) {
			t.Fatalf("parseIBState(%q) name %q is empty or padded", s, name)
		}
		// What the kernel would have written for the parsed values parses back the same.
		id2, name2, err := parseIBState(fmt.Sprintf("%d: %s\n", id, name))
		if err != nil || id2 != id || name2 != name {
			t.Fatalf("parseIBState(%q) = %d, %q, which does not round-trip: %d, %q, %v", s, id, name, id2, name2, err)
		}
	})
}

func FuzzParseIBRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)", "200 Gb/sec (2X NDR)\n", "2.5 Gb/sec (1X SDR)",
		"10 Gb/sec (4X)", "40 Gb/sec", "", "Gb/sec", "1e400 Gb/sec", "NaN Gb/sec", ". Gb/sec", "1. Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseIBRate(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("parseIBRate(%q) = %v with error %v, want 0", s, v, err)
			}
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("parseIBRate(%q) = %v", s, v)
		}
		if v2, err := parseIBRate(strconv.FormatFloat(v, 'f', -1, 64) + " Gb/sec"); err != nil || v2 != v {
			t.Fatalf("parseIBRate(%q) = %v does not round-trip: %v, %v", s, v, v2, err)
		}
	})
}

// FuzzReadIBPorts feeds arbitrary attribute text to the port reader: it must keep the port,
// never fail on content, and keep unparsable text as read.
func FuzzReadIBPorts(f *testing.F) {
	f.Add("4: ACTIVE\n", "5: LinkUp\n", "400 Gb/sec (4X NDR)\n", "InfiniBand\n")
	f.Add("1: DOWN\n", "3: Disabled\n", "40 Gb/sec (4X QDR)\n", "Ethernet\n")
	f.Add("garbage", "", "fast", "")
	f.Fuzz(func(t *testing.T, state, phys, rate, link string) {
		dir := "class/infiniband/mlx5_0/ports/1/"
		fsys := fstest.MapFS{
			dir + "state":      {Data: []byte(state)},
			dir + "phys_state": {Data: []byte(phys)},
			dir + "rate":       {Data: []byte(rate)},
			dir + "link_layer": {Data: []byte(link)},
		}
		if max(len(state), len(phys), len(rate), len(link)) > sysfsAttrLimit {
			return // over the bound is an error, tested elsewhere
		}
		ports, err := readIBPorts(context.Background(), fsys)
		if err != nil {
			t.Fatalf("readIBPorts: %v", err)
		}
		if len(ports) != 1 || ports[0].Name() != "mlx5_0/1" {
			t.Fatalf("readIBPorts = %+v, want the one port", ports)
		}
		p := ports[0]
		wantState := func(text string) (uint, string) {
			if id, name, err := parseIBState(text); err == nil {
				return id, name
			}
			return 0, strings.TrimSpace(text)
		}
		if id, name := wantState(state); p.StateID != id || p.State != name {
			t.Fatalf("state %q read as %d %q, want %d %q", state, p.StateID, p.State, id, name)
		}
		if id, name := wantState(phys); p.PhysStateID != id || p.PhysState != name {
			t.Fatalf("phys_state %q read as %d %q, want %d %q", phys, p.PhysStateID, p.PhysState, id, name)
		}
		if p.Rate != strings.TrimSpace(rate) || p.LinkLayer != strings.TrimSpace(link) {
			t.Fatalf("rate %q and link_layer %q kept as %q and %q", rate, link, p.Rate, p.LinkLayer)
		}
		if want, _ := parseIBRate(rate); p.RateGbps != want {
			t.Fatalf("rate %q read as %v, want %v", rate, p.RateGbps, want)
		}
	})
}

func FuzzNaturalCompare(f *testing.F) {
	f.Add("mlx5_2", "mlx5_10")
	f.Add("n01", "n1")
	f.Add("", "0")
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, ba := naturalCompare(a, b), naturalCompare(b, a)
		if ab != -ba {
			t.Fatalf("naturalCompare(%q, %q) = %d but reversed %d", a, b, ab, ba)
		}
		if (ab == 0) != (a == b) {
			t.Fatalf("naturalCompare(%q, %q) = %d", a, b, ab)
		}
		if naturalCompare(a, a) != 0 {
			t.Fatalf("naturalCompare(%q, itself) != 0", a)
		}
	})
}

// FuzzSnapshotJSON feeds the same bytes to every snapshot file parser (every declared fact's too):
// none may panic, and what they accept must hold the promises replay relies on.
func FuzzSnapshotJSON(f *testing.F) {
	for _, s := range []string{
		validMeta,
		`{"format": 1, "delay_ms": {"/sys/class/infiniband": 60000}}`,
		`[{"path": "/dev/nvidia0", "type": "char", "major": 195, "minor": 0}, {"path": "/dev/nvidia7", "missing": true}]`,
		`[{"argv": ["/usr/bin/nv-fabricmanager", "--version"], "stdout": "x", "stderr": "", "exit_code": 0, "duration_ms": 12}]`,
		`{"init": "SUCCESS", "devices": [{"index": 0, "delay_ms": 5}]}`,
		`{"timed_out": true}`, `{"init": "ERROR_LIBRARY_NOT_FOUND"}`, `{"init": "SUCCESS", "delay_ms": -1}`,
		`{"init": "SUCCESS", "fields": ["serial", "clock_event_reasons"], "devices": [{"index": 0, "clock_event_reasons": {"reasons": ["hw_slowdown"]}, "temperature": {"gpu_c": 30, "tlimit_margin_c": -2}, "recovery_action": "GPU_RESET"}]}`,
		`{"init": "SUCCESS", "devices": [{"index": 0, "minor_number": 0, "pci_bus_id": "00000000:19:00.0", "links": [{"link": 0, "remote_pci_bus_id": "00000000:83:00.0", "remote_type": "SWITCH"}]}]}`,
		`{"init": "SUCCESS", "devices": [{"links": [{"link": -1}]}]}`,
		`{"init": "SUCCESS", "delay_ms": 5, "devices": [{"index": 1, "links": [{"link": 2}]}]}`,
		`{"sockets": 2, "cores_per_socket": 56, "threads_per_core": 2, "cpus": 224, "memory_usable_mib": 2063731}`,
		`{"sockets": -1}`, `{"cpus": 1e3}`, `{"timed_out": true, "delay_ms": 10}`, `null`, `[]`,
		"[\n{\"path\": 1}]", `{"format": "1"}`, `[{"argv": []}]`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := parseMeta(b); err == nil {
			if m.Format != SnapshotFormat {
				t.Fatalf("parseMeta accepted format %d", m.Format)
			}
			for p, ms := range m.DelayMS {
				if ms < 0 || !strings.HasPrefix(p, "/") || path.Clean(p) != p {
					t.Fatalf("parseMeta accepted delay %q: %d", p, ms)
				}
			}
		}
		if devs, err := parseDevices(b); err == nil {
			for p, d := range devs {
				if p != d.Path || path.Clean(p) != p || !strings.HasPrefix(p, "/") {
					t.Fatalf("parseDevices accepted path %q", p)
				}
				if d.Missing == slices.Contains(devTypes, d.Type) {
					t.Fatalf("parseDevices accepted %+v", d)
				}
			}
		}
		if cmds, err := parseCommands(b); err == nil {
			for _, c := range cmds {
				got, ok := matchCommand(cmds, c.Argv)
				if !ok || !slices.Equal(got.Argv, c.Argv) {
					t.Fatalf("argv %q does not replay its own record: %v %q", c.Argv, ok, got.Argv)
				}
			}
		}
		if r, err := parseNVML(b); err == nil {
			if r.Init == "" && !r.TimedOut || r.DelayMS < 0 || r.DeviceCount < 0 || r.Fields&^AllGPUFields != 0 {
				t.Fatalf("parseNVML accepted %+v", r)
			}
			for _, d := range r.Devices {
				if c := d.ClockEvents; c != nil && !slices.Equal(c.Reasons, ClockEventReasonNames(c.Mask)) {
					t.Fatalf("clock event reasons %v do not name mask 0x%x", c.Reasons, c.Mask)
				}
			}
		}
		for _, d := range DeclaredFacts() {
			fuzzFactRecord(t, d, b)
		}
	})
}

// fuzzFactRecord holds what d's decoding accepts from b to the promises replay and recording
// rely on: no negative delay, a value its Check accepts, and a value that a Recorder writes
// back in a form that decodes to itself.
func fuzzFactRecord(t *testing.T, d FactDecl, b []byte) {
	v, k, err := d.decode(b)
	if err != nil {
		return
	}
	if k.DelayMS < 0 {
		t.Fatalf("%s: accepted delay_ms %d", d.FactName(), k.DelayMS)
	}
	if k.TimedOut {
		return // the value is never replayed
	}
	if reflect.TypeOf(v) != d.valueType() {
		t.Fatalf("%s: decoded a %T, want a %v", d.FactName(), v, d.valueType())
	}
	once, err := encodeJSON(v)
	if err != nil {
		t.Fatalf("%s: %+v does not encode: %v", d.FactName(), v, err)
	}
	v2, _, err := d.decode(once)
	if err != nil {
		t.Fatalf("%s: the record of %+v does not replay: %v\n%s", d.FactName(), v, err, once)
	}
	if twice, _ := encodeJSON(v2); !bytes.Equal(once, twice) {
		t.Fatalf("%s: recorded again it changes:\n%s\n%s", d.FactName(), once, twice)
	}
}

func FuzzParseHexID(f *testing.F) {
	for _, s := range []string{"0x10de\n", "0x2330", "0x030200\n", "0xffffffff", "0x100000000", "10de", "0x", "", "0x-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseHexID(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("parseHexID(%q) = %#x with error %v, want 0", s, v, err)
			}
			return
		}
		// What the kernel would have written for v parses back the same.
		if v2, err := parseHexID(fmt.Sprintf("0x%04x\n", v)); err != nil || v2 != v {
			t.Fatalf("parseHexID(%q) = %#x does not round-trip: %#x, %v", s, v, v2, err)
		}
	})
}

func FuzzParsePCILinkWidth(f *testing.F) {
	for _, s := range []string{"16\n", "1", "2", "32", "0", "255\n", "63", "x16", "", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parsePCILinkWidth(s)
		if v < 0 || v > maxPCILinkWidth || err != nil && v != 0 {
			t.Fatalf("parsePCILinkWidth(%q) = %d, %v", s, v, err)
		}
		if err == nil && v != 0 {
			if v2, err := parsePCILinkWidth(strconv.Itoa(v) + "\n"); err != nil || v2 != v {
				t.Fatalf("parsePCILinkWidth(%q) = %d does not round-trip: %d, %v", s, v, v2, err)
			}
		}
	})
}

func FuzzParsePCILinkSpeed(f *testing.F) {
	for _, s := range []string{"32.0 GT/s PCIe\n", "2.5 GT/s PCIe", "8 GT/s", "Unknown\n", "Unknown speed",
		"", "GT/s", "1e400 GT/s PCIe", "NaN GT/s", ". GT/s", "8. GT/s PCIe", "32.0 GT/s PCIe x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parsePCILinkSpeed(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("parsePCILinkSpeed(%q) = %v with error %v, want 0", s, v, err)
			}
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("parsePCILinkSpeed(%q) = %v", s, v)
		}
		if v == 0 {
			return // "Unknown", or a literal 0
		}
		if v2, err := parsePCILinkSpeed(strconv.FormatFloat(v, 'f', -1, 64) + " GT/s PCIe\n"); err != nil || v2 != v {
			t.Fatalf("parsePCILinkSpeed(%q) = %v does not round-trip: %v, %v", s, v, v2, err)
		}
	})
}

// FuzzReadPCIDevices feeds arbitrary attribute text to the PCI reader: it must keep the
// device, never fail on content, and read each field as its parser does.
func FuzzReadPCIDevices(f *testing.F) {
	f.Add("0x10de\n", "0x2330\n", "0x030200\n", "16\n", "16\n", "32.0 GT/s PCIe\n", "32.0 GT/s PCIe\n")
	f.Add("0x1022", "0x1634", "0x060400", "4", "8", "8.0 GT/s PCIe", "8.0 GT/s PCIe")
	f.Add("garbage", "", "0x", "255", "0", "Unknown", "fast")
	f.Fuzz(func(t *testing.T, vendor, device, class, curW, maxW, curS, maxS string) {
		vals := []string{vendor, device, class, curW, maxW, curS, maxS}
		if slices.ContainsFunc(vals, func(v string) bool { return len(v) > sysfsAttrLimit }) {
			return // over the bound is an error, tested elsewhere
		}
		dir := "bus/pci/devices/0000:19:00.0/"
		fsys := fstest.MapFS{}
		for i, name := range pciAttrs {
			fsys[dir+name] = &fstest.MapFile{Data: []byte(vals[i])}
		}
		devs, err := readPCIDevices(context.Background(), fsys)
		if err != nil {
			t.Fatalf("readPCIDevices: %v", err)
		}
		if len(devs) != 1 || devs[0].Address != "0000:19:00.0" {
			t.Fatalf("readPCIDevices = %+v, want the one device", devs)
		}
		id := func(s string) uint32 { v, _ := parseHexID(s); return v }
		width := func(s string) int { v, _ := parsePCILinkWidth(s); return v }
		speed := func(s string) float64 { v, _ := parsePCILinkSpeed(s); return v }
		want := PCIDevice{Address: "0000:19:00.0", Vendor: id(vendor), Device: id(device), Class: id(class),
			SysfsPath: "/sys/bus/pci/devices/0000:19:00.0"}
		if linkJudged(want.Class) {
			want.CurLinkWidth, want.MaxLinkWidth = width(curW), width(maxW)
			want.CurLinkSpeedGTs, want.MaxLinkSpeedGTs = speed(curS), speed(maxS)
		}
		if devs[0] != want {
			t.Fatalf("readPCIDevices = %+v, want %+v", devs[0], want)
		}
	})
}

func FuzzParseKernelList(f *testing.F) {
	for _, s := range []string{"0-55,112-167\n", "0", "0,112", "\n", "", "3-5,0-4", "65535", "65536", "0-7:2/4", "5-3", "0-65535,0-65535", "-", ",", "1-", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseKernelList(s)
		if err != nil {
			if list != nil {
				t.Fatalf("ParseKernelList(%q) = %v with error %v", s, list, err)
			}
			return
		}
		for i, n := range list {
			if n < 0 || n > maxCPUNumber || (i > 0 && n <= list[i-1]) {
				t.Fatalf("ParseKernelList(%q) = %v: not ascending distinct numbers up to %d", s, list, maxCPUNumber)
			}
		}
		// What the kernel would write for it parses back the same.
		again, err := ParseKernelList(FormatKernelList(list) + "\n")
		if err != nil || !slices.Equal(again, list) {
			t.Fatalf("ParseKernelList(%q) = %v does not round-trip through %q: %v, %v", s, list, FormatKernelList(list), again, err)
		}
	})
}

func FuzzParseNVIDIAProcMinor(f *testing.F) {
	for _, s := range []string{"Bus Location:    0000:65:00.0\nDevice Minor:    1\n", "Device Minor: \t 0", "Device Minor: 255", "Device Minor:", "Device Minor: 01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNVIDIAProcMinor(s)
		if err == nil && (n < 0 || n > 254) {
			t.Fatalf("ParseNVIDIAProcMinor(%q) = %d, outside 0-254", s, n)
		}
	})
}

// mapFacts answers ReadFile from a map, absence as fs.ErrNotExist; nothing else.
type mapFacts struct {
	Facts
	files map[string]string
}

func (m mapFacts) ReadFile(_ context.Context, p string) ([]byte, error) {
	s, ok := m.files[p]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
	}
	return []byte(s), nil
}

// FuzzReadCPUTopology feeds arbitrary text to the files of a small node's topology: the
// reader must never panic, and whatever it returns must be a partition of online CPUs into
// cores, sorted, with NUMA nodes holding only online CPUs.
func FuzzReadCPUTopology(f *testing.F) {
	f.Add("0-3\n", "0\n", "0,2\n", "1\n", "1,3\n", "0-1\n", "0-1\n", "2-3\n", "0\n")
	f.Add("0-3", "0", "0-1", "0", "0-1", "0", "0-3", "", "7")
	f.Add("0-1,3", "-1", "3", "1", "0-3", "0-2", "1", "x", "")
	f.Fuzz(func(t *testing.T, online, pkg0, sib0, pkg1, sib1, nodes, node0, node1, core0 string) {
		m := mapFacts{files: map[string]string{
			"/sys/devices/system/cpu/online":                             online,
			"/sys/devices/system/cpu/cpu0/topology/physical_package_id":  pkg0,
			"/sys/devices/system/cpu/cpu0/topology/core_cpus_list":       sib0,
			"/sys/devices/system/cpu/cpu0/topology/core_id":              core0,
			"/sys/devices/system/cpu/cpu1/topology/physical_package_id":  pkg1,
			"/sys/devices/system/cpu/cpu1/topology/thread_siblings_list": sib1,
			"/sys/devices/system/cpu/cpu2/topology/physical_package_id":  pkg1,
			"/sys/devices/system/cpu/cpu2/topology/core_id":              core0,
			"/sys/devices/system/cpu/cpu3/topology/physical_package_id":  pkg0,
			"/sys/devices/system/cpu/cpu3/topology/core_id":              core0,
			"/sys/devices/system/node/online":                            nodes,
			"/sys/devices/system/node/node0/cpulist":                     node0,
			"/sys/devices/system/node/node1/cpulist":                     node1,
		}}
		topo, err := ReadCPUTopology(context.Background(), m)
		if err != nil {
			return
		}
		onl, _ := ParseKernelList(online)
		seen := map[int]bool{}
		for i, c := range topo.Cores {
			if len(c.CPUs) == 0 || !slices.IsSorted(c.CPUs) || (i > 0 && c.CPUs[0] <= topo.Cores[i-1].CPUs[0]) {
				t.Fatalf("core %d of %+v: empty or out of order", i, topo)
			}
			for _, cpu := range c.CPUs {
				if seen[cpu] {
					t.Fatalf("cpu %d in two cores: %+v", cpu, topo)
				}
				seen[cpu] = true
			}
		}
		if onl != nil && len(seen) != len(onl) {
			t.Fatalf("cores hold %d CPUs, %d online (%q): %+v", len(seen), len(onl), online, topo)
		}
		for _, n := range topo.NUMANodes {
			for _, cpu := range n.CPUs {
				if !seen[cpu] {
					t.Fatalf("NUMA node %d holds cpu %d, which no core has: %+v", n.ID, cpu, topo)
				}
			}
		}
	})
}
