package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// loadFabric parses an ibnetdiscover fixture.
func loadFabric(t testing.TB, path string) *Fabric {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := ParseIBNetDiscover(fh, path)
	if err != nil {
		t.Fatalf("ParseIBNetDiscover(%s): %v", path, err)
	}
	return f
}

// fabricNode finds a node by its ibnetdiscover name ("S-...", "H-...").
func fabricNode(t *testing.T, f *Fabric, name string) (int32, FabricNode) {
	t.Helper()
	for i, n := range f.Nodes {
		if n.Name() == name {
			return int32(i), n
		}
	}
	t.Fatalf("no node %s", name)
	return -1, FabricNode{}
}

// TestParseIBNetDiscoverCorpus reads every real capture and checks what each shows: counts,
// descriptions, GUIDs, LIDs, ports and rates.
func TestParseIBNetDiscoverCorpus(t *testing.T) {
	dir := "testdata/ibnetdiscover/"
	tests := []struct {
		file                 string
		format               string
		switches, cas, links int
		problems             []string
		node, desc           string // a node and its description
		lid                  int
		port                 int    // a port of node...
		remote               string // ...cabled to this node
		remotePort           int
		rate                 string
		portGUID             uint64 // node's port GUID on that link, when printed
	}{
		{file: "jabl-ibtopotool-test1.txt", format: FabricFormatTopology, switches: 2, cas: 4, links: 7,
			node: "S-0008f10400410015", desc: "SW-6IB4 Voltaire", lid: 3, port: 1, remote: "S-005442ba00003080", remotePort: 10, rate: "4xSDR"}, // as the ISR9024's line 19 prints it; the SW-6IB4's side says 1xSDR
		{file: "jabl-ibtopotool-test2.txt", format: FabricFormatTopology, switches: 1, cas: 2, links: 2,
			node: "H-0002c9030002847c", desc: "compute-00-00 HCA-1", lid: 2, port: 2, remote: "S-000b8cffff0053ee", remotePort: 2, rate: "4xSDR", portGUID: 0x2c9030002847e},
		{file: "jabl-ibtopotool-test3.txt", format: FabricFormatTopology, switches: 2, cas: 6, links: 10,
			problems: []string{"jabl-ibtopotool-test3.txt:2: skipped, not ibnetdiscover output"},
			node:     "S-f4521403005764b0", desc: "MF0;switch-de779e:SX6012/U1", lid: 174, port: 8, remote: "H-e41d2d03005cf1f8", remotePort: 1, rate: "4xSDR"},
		{file: "jabl-ibtopotool-test4.txt", format: FabricFormatTopology, switches: 1, cas: 1, links: 1,
			node: "H-0003ba000100e388", desc: "nsn33-43 HCA-1", lid: 14, port: 2, remote: "S-0021283a8389a0a0", remotePort: 23, rate: "4xQDR", portGUID: 0x3ba000100e38a},
		{file: "ltaulell-x5-ibnetdiscover.txt", format: FabricFormatTopology, switches: 11, cas: 89, links: 159,
			node: "S-0008f10500108c5c", desc: "Voltaire 4036 # 4036-8C5C", lid: 16, port: 15, remote: "S-0008f10500200b50", remotePort: 1, rate: "4xQDR"},
		{file: "topograph-gb200-single-ca-no-switch.txt", format: FabricFormatTopology, switches: 0, cas: 1, links: 0,
			node: "H-b8e92403009ca838", desc: "dgx-gb200-n01-c1 HCA-1"},
		{file: "topograph-gb200-rail-optimized-ndr.txt", format: FabricFormatTopology, switches: 40, cas: 582, links: 1114,
			node: "H-e09d7303007a4bd8", desc: "a08-p1-dgx-04-c01 mlx5_5", lid: 647, port: 1, remote: "S-2c5eab0300b87b40", remotePort: 1, rate: "4xNDR", portGUID: 0xe09d7303007a4bd8},
		{file: "treydock-ibnetdiscover-p-osc-edr.txt", format: FabricFormatPorts, switches: 4, cas: 3, links: 4,
			node: "H-7cfe9003003b4b96", desc: "o0002 HCA-1", lid: 133, port: 1, remote: "S-7cfe9003009ce5b0", remotePort: 11, rate: "4x EDR", portGUID: 0x7cfe9003003b4b96},
		{file: "treydock-ibnetdiscover-p-hdr-padded-names.txt", format: FabricFormatPorts, switches: 5, cas: 2, links: 2,
			problems: []string{"port 1 of H-946dae0300630bfe is shown cabled to S-946dae030053ec1a port 81 here, but to another port at line 2"},
			node:     "S-946dae0300618c83", desc: "5FB0406-spine-IB02", lid: 25},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f := loadFabric(t, dir+tc.file)
			sw, ca := 0, 0
			for _, n := range f.Nodes {
				switch n.Type {
				case FabricSwitch:
					sw++
				case FabricCA:
					ca++
				}
			}
			if f.Format != tc.format || sw != tc.switches || ca != tc.cas || len(f.Links) != tc.links {
				t.Errorf("format %q, %d switches, %d CAs, %d links; want %q, %d, %d, %d", f.Format, sw, ca, len(f.Links), tc.format, tc.switches, tc.cas, tc.links)
			}
			checkProblems(t, f.Problems, tc.problems)
			i, n := fabricNode(t, f, tc.node)
			if n.Desc != tc.desc || n.LID != tc.lid {
				t.Errorf("%s: desc %q lid %d, want %q lid %d", tc.node, n.Desc, n.LID, tc.desc, tc.lid)
			}
			if tc.remote == "" {
				return
			}
			r, ok := f.Remote(i, tc.port)
			if !ok || f.Nodes[r.Node].Name() != tc.remote || r.Port != tc.remotePort {
				t.Fatalf("%s port %d: remote %+v (%v), want %s port %d", tc.node, tc.port, r, ok, tc.remote, tc.remotePort)
			}
			l := f.Links[f.portLink(i, tc.port)]
			if l.Rate != tc.rate {
				t.Errorf("rate %q, want %q", l.Rate, tc.rate)
			}
			local := l.A
			if local.Node != i {
				local = l.B
			}
			if local.GUID != tc.portGUID {
				t.Errorf("port GUID %x, want %x", local.GUID, tc.portGUID)
			}
		})
	}
}

// TestParseIBNetDiscoverShapes covers the shapes of the topology file real captures do not:
// -g grouping, -f full information, routers, quotes and '#' in descriptions, "[ext N]".
func TestParseIBNetDiscoverShapes(t *testing.T) {
	in := `#
# Topology file: generated on Mon Jul 25 11:30:26 2016
#

Chassis 1 (guid 0x8f104003f1a8d)

# Spine Nodes
vendid=0x8f1
devid=0x5a31
sysimgguid=0x8f104003f1a8d		# Chassis 1 (ISR9288/ISR9096 Voltaire sLB-24D)
switchguid=0x8f104004120ad(8f104004120ad)	# ISR9288/ISR9096 Voltaire sLB-24D slot 1
Switch	24 "S-0008f104004120ad"		# "ISR9288 "quoted" # sLB" base port 0 lid 64 lmc 0
[1][ext 3]	"H-0002c90200225ed0"[1](2c90200225ed1) 		# "node-1 mlx4_0" lid 12 4xQDR s=4 w=2 v=4
[2]	"R-0002c90200000001"[1](2c90200000002) 		# "router one" lid 13 4xQDR

Non-Chassis Nodes

caguid=0x2c90200225ed0
Ca	2 "H-0002c90200225ed0"		# "node-1 mlx4_0"
[1](2c90200225ed1) 	"S-0008f104004120ad"[1][ext 3]		# lid 12 lmc 0 "ISR9288 "quoted" # sLB" lid 64 4xQDR

rtguid=0x2c90200000001
Rt	1 "R-0002c90200000001"		# "router one"
[1](2c90200000002) 	"S-0008f104004120ad"[2]		# lid 13 lmc 0 "ISR9288 "quoted" # sLB" lid 64 4xQDR
`
	f, err := ParseIBNetDiscover(strings.NewReader(in), "grouped.txt")
	if err != nil {
		t.Fatal(err)
	}
	checkProblems(t, f.Problems, nil)
	if len(f.Nodes) != 3 || len(f.Links) != 2 {
		t.Fatalf("%d nodes, %d links: %+v", len(f.Nodes), len(f.Links), f.Nodes)
	}
	sw, n := fabricNode(t, f, "S-0008f104004120ad")
	if n.Desc != `ISR9288 "quoted" # sLB` || n.LID != 64 || n.Ports != 24 {
		t.Errorf("switch %+v", n)
	}
	r, ok := f.Remote(sw, 2)
	if !ok || f.Nodes[r.Node].Type != FabricRouter || f.Nodes[r.Node].Desc != "router one" || r.GUID != 0x2c90200000002 {
		t.Errorf("port 2: %+v %v", r, ok)
	}
	if l := f.Links[0]; l.Rate != "4xQDR" || l.Line != 13 {
		t.Errorf("link %+v", l)
	}
}

func TestParseIBNetDiscoverErrors(t *testing.T) {
	tests := []struct {
		name, in string
		wantErr  string
		probs    []string
	}{
		{name: "empty", in: "", wantErr: "the capture is empty"},
		{name: "header only", in: "#\n# Topology file\n#\n", wantErr: "the capture is empty"},
		{name: "wrong file", in: "NodeName=a[1-2]\nPartitionName=p Nodes=ALL\n", wantErr: "2 lines not ibnetdiscover output, the first at line 1"},
		{name: "long line", in: "Switch\t36 \"S-01\"\t# \"" + strings.Repeat("x", maxFabricLine) + "\"\n", wantErr: "longer than"},
		{name: "port line without node", in: "vendid=0x2c9\n[1]\t\"S-01\"[2]\t# \"x\" lid 1 4xQDR\nCa\t1 \"H-02\"\t# \"h mlx5_0\"\n",
			probs: []string{"a port line outside a node"}},
		{name: "garbled header", in: "Switch\t36 \"Q-01\"\t# \"x\"\nCa\t1 \"H-02\"\t# \"h mlx5_0\"\n", probs: []string{`no Switch name "S-<guid>"`}},
		{name: "garbled port", in: "Switch\t36 \"S-01\"\t# \"x\" base port 0 lid 1 lmc 0\n[1]\tH-02[1]\n", probs: []string{"no remote"}},
		{name: "contradiction", in: "Switch\t36 \"S-01\"\t# \"x\" base port 0 lid 1 lmc 0\n[1]\t\"H-02\"[1](3) \t# \"h mlx5_0\" lid 2 4xQDR\n[2]\t\"H-04\"[1](5) \t# \"g mlx5_0\" lid 3 4xQDR\n\nCa\t1 \"H-02\"\t# \"h mlx5_0\"\n[1](3) \t\"S-01\"[2]\t# lid 2 lmc 0 \"x\" lid 1 4xQDR\n",
			probs: []string{"port 1 of H-0000000000000002 is shown cabled to S-0000000000000001 port 2 here, but to S-0000000000000001 port 1 at line 2"}},
		{name: "ports report garbage", in: "SW 1 1 0x01 4x QDR - CA 2 1 0x02 ( 'a' - 'b' )\nSW 1 2 0x01 4x QDR - CA 3 1 0x03\n", probs: []string{"no ( 'name' - 'name' ) at the end"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseIBNetDiscover(strings.NewReader(tc.in), "cap.txt")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkProblems(t, f.Problems, tc.probs)
		})
	}
	many := strings.Repeat("garbage\n", 30) + "Ca\t1 \"H-02\"\t# \"h mlx5_0\"\n"
	f, err := ParseIBNetDiscover(strings.NewReader(many), "cap.txt")
	if err != nil || len(f.Problems) != maxFabricStray+1 || !strings.Contains(f.Problems[maxFabricStray].Message, "10 more lines") {
		t.Errorf("err %v, %d problems, last %v", err, len(f.Problems), f.Problems[len(f.Problems)-1])
	}
	if _, err := ParseIBNetDiscover(iotest.ErrReader(os.ErrPermission), "cap.txt"); err == nil {
		t.Error("a read error was not returned")
	}
}

func TestParseGUIDMap(t *testing.T) {
	m, probs, err := ParseGUIDMap(strings.NewReader(`# cluster X5
H-003048c74e4a0000 x5570comp1
0x0002c90300080e85 "gpu001 mlx5_0"
0002c90300080d58	r510gluster2
H-003048c74e4a0000 x5570comp1
H-003048c74e4a0000 other
nonsense host
0x01
`), "x5.map")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{0x003048c74e4a0000: "x5570comp1", 0x0002c90300080e85: "gpu001", 0x0002c90300080d58: "r510gluster2"}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("map %v, want %v", m, want)
	}
	checkProblems(t, probs, []string{"mapped to other here and to x5570comp1 at line 2", `"nonsense" is not a GUID`, "GUID 0x01 has no host name"})

	f, err := os.Open("testdata/ibnetdiscover/ltaulell-x5-guid-hostname-map.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, probs, err = ParseGUIDMap(f, "map")
	if err != nil || len(probs) != 0 || len(m) != 86 || m[0x78e7d1030022a0dc] != "sl390lin3" {
		t.Errorf("X5 map: err %v, problems %v, %d entries", err, probs, len(m))
	}
}

func FuzzParseIBNetDiscover(f *testing.F) {
	files, _ := filepath.Glob("testdata/ibnetdiscover/*.txt")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if len(b) < 64<<10 {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		fab, err := ParseIBNetDiscover(strings.NewReader(in), "cap.txt")
		if err != nil {
			return
		}
		for _, l := range fab.Links {
			if int(l.A.Node) >= len(fab.Nodes) || int(l.B.Node) >= len(fab.Nodes) {
				t.Fatalf("link to a node that is not there: %+v", l)
			}
			if r, ok := fab.Remote(l.A.Node, l.A.Port); !ok || r.Node != l.B.Node || r.Port != l.B.Port {
				t.Fatalf("Remote disagrees with link %+v: %+v", l, r)
			}
		}
		tc, _ := ParseTopologyConf(strings.NewReader("SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=b[1-4]\n"), "topology.conf", nil)
		LintTopology(TopologyInput{Topology: tc, Fabric: fab})
	})
}

func FuzzParseGUIDMap(f *testing.F) {
	b, _ := os.ReadFile("testdata/ibnetdiscover/ltaulell-x5-guid-hostname-map.txt")
	f.Add(string(b))
	f.Add("0x01 \"a b\"\nH-zz x\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, probs, err := ParseGUIDMap(strings.NewReader(in), "map")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range m {
			if h == "" || strings.ContainsAny(h, " \n") {
				t.Fatalf("host %q", h)
			}
		}
		for _, p := range probs {
			if p.Line < 1 {
				t.Fatalf("problem without a line: %+v", p)
			}
		}
	})
}

func ExampleParseIBNetDiscover() {
	f, err := ParseIBNetDiscover(strings.NewReader(`vendid=0x2c9
switchguid=0xb8cffff0053ee(b8cffff0053ee)
Switch	8 "S-000b8cffff0053ee"		# "MT43132 Mellanox Technologies" base port 0 lid 3 lmc 0
[1]	"H-0002c902002789ac"[1](2c902002789ad) 		# "compute-00-01 HCA-1" lid 1 4xSDR
[2]	"H-0002c9030002847c"[2](2c9030002847e) 		# "compute-00-00 HCA-1" lid 2 4xSDR
`), "ibnetdiscover.txt")
	if err != nil {
		panic(err)
	}
	for _, l := range f.Links {
		a, b := f.Nodes[l.A.Node], f.Nodes[l.B.Node]
		fmt.Printf("%s port %d <-> %q port %d (port GUID %x) %s\n", a.Name(), l.A.Port, b.Desc, l.B.Port, l.B.GUID, l.Rate)
	}
	// Output:
	// S-000b8cffff0053ee port 1 <-> "compute-00-01 HCA-1" port 1 (port GUID 2c902002789ad) 4xSDR
	// S-000b8cffff0053ee port 2 <-> "compute-00-00 HCA-1" port 2 (port GUID 2c9030002847e) 4xSDR
}

func ExampleParseGUIDMap() {
	m, problems, err := ParseGUIDMap(strings.NewReader("# cluster X5\nH-003048c74e4a0000 x5570comp1\n0x0002c90300080e85 \"gpu001 mlx5_0\"\n"), "guids.map")
	if err != nil {
		panic(err)
	}
	fmt.Println(m[0x003048c74e4a0000], m[0x0002c90300080e85], len(problems))
	// Output: x5570comp1 gpu001 0
}
