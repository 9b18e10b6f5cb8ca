package slurm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseLLDPCorpus reads real lldpcli and lldptool outputs (testdata/lldp/SOURCE).
func TestParseLLDPCorpus(t *testing.T) {
	tests := []struct {
		file, iface string
		want        []LLDPNeighbor
	}{
		{"pica8-as4610-tor-json-excerpt.json", "", []LLDPNeighbor{{Interface: "eth0", SysName: "B2-Tor", ChassisID: "mac cc:37:ab:60:cd:c1",
			PortID: "ifname ge-1/1/28", PortDescr: "ge-1/1/28", Description: "PICA8 Inc., Model as4610_54, PicOS 2.6.2"}}},
		{"server-dual-leaf-cumulus-plain-excerpt.txt", "", []LLDPNeighbor{
			{Interface: "eth2", SysName: "leaf01", ChassisID: "mac 44:38:39:00:02:00", PortID: "ifname swp44", PortDescr: "swp44", Description: "Cumulus Linux version 3.6.1 running on Bochs Bochs"},
			{Interface: "eth3", SysName: "leaf02", ChassisID: "mac 44:38:39:00:03:00", PortID: "ifname swp44", PortDescr: "swp44", Description: "Cumulus Linux version 3.6.1 running on Bochs Bochs"}}},
		{"netboxagent-dedibox-keyvalue-minimal.txt", "", []LLDPNeighbor{{Interface: "enp1s0f0", SysName: "s120-f3-2.itx4", ChassisID: "mac 00:07:cb:0b:6c:d7", PortID: "ifname RJ-9"}}},
		{"openlldp-39-lldptool-t-ens2f0-excerpt.txt", "ens2f0", []LLDPNeighbor{{Interface: "ens2f0", SysName: "HB1-BJ1-BigData-002", ChassisID: "mac 70:57:bf:fa:ab:20", PortID: "ifname ens2f0"}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "lldp", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseLLDP(data, tc.file, tc.iface)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLLDPForms(t *testing.T) {
	// lldpcli 1.0's json form with two interfaces (a list), a chassis keyed by name; and json0.
	const twoIfaces = `{"lldp": {"interface": [{"n1p0": {"via": "LLDP", "chassis": {"leaf01": {"id": {"type": "mac", "value": "aa"}, "descr": "leaf01 switch"}}, "port": {"id": {"type": "ifname", "value": "swp1"}}}}, {"n1p1": {"chassis": {"id": {"type": "mac", "value": "bb"}}, "port": {"id": {"type": "mac", "value": "cc"}}}}]}}`
	const json0 = `{"lldp": [{"interface": [{"name": "n1p0", "chassis": [{"id": [{"type": "mac", "value": "aa"}], "name": [{"value": "leaf01"}]}], "port": [{"id": [{"type": "ifname", "value": "swp1"}]}]}]}]}`
	tests := []struct {
		name, in string
		want     []LLDPNeighbor
		wantErr  string
	}{
		{"json list", twoIfaces, []LLDPNeighbor{{Interface: "n1p0", SysName: "leaf01", ChassisID: "mac aa", PortID: "ifname swp1", Description: "leaf01 switch"},
			{Interface: "n1p1", ChassisID: "mac bb", PortID: "mac cc"}}, ""},
		{"json0", json0, []LLDPNeighbor{{Interface: "n1p0", SysName: "leaf01", ChassisID: "mac aa", PortID: "ifname swp1"}}, ""},
		{"no neighbours", `{"lldp": {}}`, nil, ""},
		{"empty", "", nil, ""},
		{"not lldp", "hello\n", nil, "not lldpcli or lldptool output"},
		{"bad json", `{"lldp": [`, nil, "unexpected end"},
		{"bad keyvalue", "lldp.x\n", nil, "is not lldp.INTERFACE.KEY=VALUE"},
		{"lldptool without an interface", "Chassis ID TLV\n\tMAC: aa\n", nil, "names no local interface"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLLDP([]byte(tc.in), "x", "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// lldpCaps is a fabric of two leaves, one port a node, n[1-4] on leaf01 and n[5-8] on leaf02,
// with the nodes in moved on the leaf it names. Invented, in the shape of lldpd's captures.
func lldpCaps(moved map[string]string) []LLDPCapture {
	var caps []LLDPCapture
	for i := 1; i <= 8; i++ {
		h := "n" + strconv.Itoa(i)
		leaf := "leaf01"
		if i > 4 {
			leaf = "leaf02"
		}
		if to, ok := moved[h]; ok {
			leaf = to
		}
		caps = append(caps, LLDPCapture{Host: h, Source: "lldpd", Path: h + ".json", Neighbors: []LLDPNeighbor{
			{Interface: "ens1f0", SysName: leaf, PortID: "ifname swp" + h[1:]}}})
	}
	return caps
}

func lintLLDP(t *testing.T, topo string, caps []LLDPCapture, swmap map[string]string) TopologyResult {
	t.Helper()
	tc, err := ParseTopologyConf(strings.NewReader(topo), "topology.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseSlurmConf([]byte("NodeName=n[1-8] CPUs=1\nPartitionName=p Nodes=ALL\n"), "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, naming := BuildLLDPMap(caps, swmap).Fabric("lldp")
	return LintTopology(TopologyInput{Slurm: sc, Topology: tc, Fabric: f, Naming: naming})
}

func TestLintTopologyLLDP(t *testing.T) {
	const topo = "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=top Switches=s[1-2]\n"
	tests := []struct {
		name  string
		moved map[string]string
		want  []string // nodes named in warnings
	}{
		{"as cabled", nil, nil},
		{"n2 moved to leaf02", map[string]string{"n2": "leaf02"}, []string{"n2"}},
		{"n1 and n8 swapped", map[string]string{"n1": "leaf02", "n8": "leaf01"}, []string{"n1", "n8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := lintLLDP(t, topo, lldpCaps(tc.moved), nil)
			var got []string
			for _, p := range r.Problems {
				if p.Severity == SeverityError {
					t.Errorf("error: %s", p)
				}
				if p.Nodes != "" {
					got = append(got, p.Nodes)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes named (-want +got):\n%s\nproblems: %v", diff, r.Problems)
			}
		})
	}
}

func TestGenerateTopologyLLDP(t *testing.T) {
	swmap, probs, err := ParseSwitchMap(strings.NewReader("# lldp name, topology.conf name\nleaf01 s1\nleaf02 s2\n"), "switch.map")
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	m := BuildLLDPMap(lldpCaps(nil), swmap)
	var b bytes.Buffer
	if err := m.GenerateTopology(&b, "tree", "top"); err != nil {
		t.Fatal(err)
	}
	want := "# topology.conf written by nodecheck topology generate from LLDP neighbours\nSwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\n# top joins the leaves: LLDP from the nodes does not see the spines\nSwitchName=top Switches=s[1-2]\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// What it wrote lints clean against the same captures.
	if r := lintLLDP(t, b.String(), lldpCaps(nil), swmap); len(r.Problems) > 0 {
		t.Errorf("generated topology.conf has problems: %v", r.Problems)
	}
	b.Reset()
	if err := m.GenerateTopology(&b, "block", ""); err != nil || !strings.Contains(b.String(), "BlockName=s2 Nodes=n[5-8]\n") {
		t.Errorf("block form: %v\n%s", err, b.String())
	}
	if err := m.GenerateTopology(&b, "dragonfly", ""); err == nil {
		t.Error("an unknown form is accepted")
	}
}

func TestParseSwitchMapProblems(t *testing.T) {
	_, probs, err := ParseSwitchMap(strings.NewReader("a b c\nx y\nx z\n"), "m")
	if err != nil {
		t.Fatal(err)
	}
	if got := problemSummary(probs); !cmp.Equal(got, []string{"error m:1 ", "error m:3 "}) {
		t.Errorf("problems %q", got)
	}
}

func FuzzParseLLDP(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "lldp", "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"lldp": {"interface": [{"a": {"chassis": {"x": {}}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, err := ParseLLDP(data, "f", "eth0")
		if err != nil {
			return
		}
		caps := []LLDPCapture{{Host: "h", Neighbors: ns}}
		fab, _ := BuildLLDPMap(caps, nil).Fabric("f")
		if len(fab.Links) > len(ns) {
			t.Errorf("%d links from %d neighbours", len(fab.Links), len(ns))
		}
	})
}
