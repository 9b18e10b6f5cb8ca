package slurm

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/config/text"
)

// topoCase is topology.conf text, an optional slurm.conf and an optional capture file.
type topoCase struct {
	topo    string
	slurm   string // slurm.conf text; "" for none
	fabric  string // capture fixture path, or "=" + capture text; "" for none
	naming  AdapterNaming
	guidMap string // GUID map fixture path
}

func (c topoCase) run(t testing.TB) TopologyResult {
	t.Helper()
	tc, err := ParseTopologyConf(strings.NewReader(c.topo), "topology.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := TopologyInput{Topology: tc, Naming: c.naming}
	if c.slurm != "" {
		in.Slurm, err = ParseSlurmConf([]byte(c.slurm), "slurm.conf", nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if text, ok := strings.CutPrefix(c.fabric, "="); ok {
		in.Fabric, err = ParseIBNetDiscover(strings.NewReader(text), "ibnetdiscover.txt")
		if err != nil {
			t.Fatal(err)
		}
	} else if c.fabric != "" {
		in.Fabric = loadFabric(t, c.fabric)
	}
	if c.guidMap != "" {
		f, err := os.Open(c.guidMap)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, probs, err := ParseGUIDMap(f, c.guidMap)
		if err != nil || len(probs) > 0 {
			t.Fatalf("GUID map: %v %v", err, probs)
		}
		in.Naming.GUIDs = m
	}
	return LintTopology(in)
}

// named returns every node the problems (not the notes) name.
func named(t testing.TB, r TopologyResult) []string {
	t.Helper()
	var out []string
	for _, p := range r.Problems {
		if p.Nodes == "" {
			continue
		}
		names, err := ExpandHostlist(p.Nodes)
		if err != nil {
			t.Fatalf("problem names %q: %v", p.Nodes, err)
		}
		out = append(out, names...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestLintTopologyOnly checks topology.conf alone and against slurm.conf.
func TestLintTopologyOnly(t *testing.T) {
	slurm := "NodeName=gpu[01-08] CPUs=64\nNodeName=cpu[1-2]\n"
	tests := []struct {
		name      string
		c         topoCase
		wantProbs []string // parts of each problem, in order
		wantNodes []string // the nodes each problem names, in order
		wantNotes []string
	}{
		{name: "clean tree", c: topoCase{slurm: slurm, topo: "SwitchName=s0 Nodes=gpu[01-04]\nSwitchName=s1 Nodes=gpu[05-08],cpu[1-2]\nSwitchName=top Switches=s[0-1]\n"}},
		{name: "clean without slurm.conf", c: topoCase{topo: "SwitchName=s0 Nodes=gpu[01-04]\nSwitchName=top Switches=s0\n"}},
		{name: "omitted nodes", c: topoCase{slurm: slurm, topo: "SwitchName=s0 Nodes=gpu[01-04]\nSwitchName=top Switches=s0\n"},
			wantProbs: []string{"slurm.conf:1 defines gpu[05-08], which topology.conf puts in no switch: Slurm warns (switches lack access to 4 nodes)", "slurm.conf:2 defines cpu[1-2]"},
			wantNodes: []string{"gpu[05-08]", "cpu[1-2]"}},
		{name: "unknown names", c: topoCase{slurm: slurm, topo: "SwitchName=s0 Nodes=gpu[01-08],cpu[1-2],gpu09,gpux\n"},
			wantProbs: []string{"topology.conf:1 SwitchName=s0 lists 2 names slurm.conf does not define (gpu09,gpux): Slurm ignores them (Invalid hostnames in switch configuration)"},
			wantNodes: []string{"gpu09,gpux"}},
		{name: "no overlap with slurm.conf", c: topoCase{slurm: slurm, topo: "SwitchName=s0 Nodes=tux[0-3]\n"},
			wantProbs: []string{"topology.conf names 4 nodes and slurm.conf defines none of them (tux[0-3]): is this the cluster's slurm.conf?"}, wantNodes: []string{""}},
		{name: "node in two leaves", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=a[4-6]\nSwitchName=top Switches=s[0-1]\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=s1 lists a4, which SwitchName=s0 (topology.conf:1) lists too: Slurm warns (Multiple leaf switches contain nodes)"}, wantNodes: []string{"a4"}},
		{name: "switch with neither Nodes= nor Switches=: refused", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1\nSwitchName=top Switches=s[0-1]\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=s1 has neither Nodes= nor Switches=: Slurm refuses the file"}, wantNodes: []string{""}},
		{name: "switch defined twice", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s0 Nodes=b1\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=s0 is defined again (first at topology.conf:1): Slurm refuses the file"}, wantNodes: []string{""}},
		{name: "undefined child", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=top Switches=s[0-1]\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=top Switches= names s1, which no SwitchName= line defines: Slurm refuses the file (Switch configuration top has invalid child (s1))"}, wantNodes: []string{""}},
		{name: "many undefined children: one problem", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=top Switches=s[0-99999]\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=top Switches= names 99999 switches no SwitchName= line defines (s[1-4096] and 95903 more): Slurm refuses the file (Switch configuration top has invalid child (s1))"}, wantNodes: []string{""}},
		{name: "own child", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=top Switches=s0,top\n"},
			wantProbs: []string{"Switches= names top, itself"}, wantNodes: []string{""}},
		{name: "loop", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=a Switches=s0,b\nSwitchName=b Switches=a\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=a is its own descendant (a -> b -> a): not a tree"}, wantNodes: []string{""}},
		{name: "no common top", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=b[1-4]\n"},
			wantProbs: []string{"topology.conf:1 no switch is above all the others: 2 switches head separate trees (SwitchName=s0 (topology.conf:1), SwitchName=s1 (topology.conf:2))"}, wantNodes: []string{""}},
		// Slurm's rule (switch_record_validate): warn only when no switch's nodes are all
		// the nodes. Several tops are fine when one reaches everything.
		{name: "spines over every leaf have a root", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=b[1-4]\nSwitchName=t0 Switches=s[0-1]\nSwitchName=t1 Switches=s[0-1]\n"}},
		{name: "one of two tops reaches every leaf", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=b[1-4]\nSwitchName=t0 Switches=s[0-1]\nSwitchName=t1 Switches=s0\n"}},
		{name: "two tops, each one leaf short", c: topoCase{topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=b[1-4]\nSwitchName=s2 Nodes=c1\nSwitchName=t0 Switches=s[0-1]\nSwitchName=t1 Switches=s[1-2]\n"},
			wantProbs: []string{"topology.conf:4 no switch is above all the others: 2 switches head separate trees (SwitchName=t0 (topology.conf:4), SwitchName=t1 (topology.conf:5)) and none reaches every node"}, wantNodes: []string{""}},
		{name: "a node two leaves list counts under either", c: topoCase{topo: "SwitchName=s0 Nodes=a4\nSwitchName=s1 Nodes=a[1-4]\nSwitchName=x Switches=s1\nSwitchName=y Switches=s0\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=s1 lists a4, which SwitchName=s0 (topology.conf:1) lists too"}, wantNodes: []string{"a4"}},
		{name: "names slurm.conf does not define do not count", c: topoCase{slurm: "NodeName=a[1-4]\n", topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=s1 Nodes=zz\nSwitchName=x Switches=s0\nSwitchName=y Switches=s1\n"},
			wantProbs: []string{"topology.conf:2 SwitchName=s1 lists 1 name slurm.conf does not define (zz)"}, wantNodes: []string{"zz"}},
		{name: "clean blocks", c: topoCase{slurm: "NodeName=node[1-128]\n", topo: "BlockName=block1 Nodes=node[1-32]\nBlockName=block2 Nodes=node[33-64]\nBlockName=block3 Nodes=node[65-96]\nBlockName=block4 Nodes=node[97-128]\nBlockSizes=30,120\n"}},
		{name: "block smaller than base", c: topoCase{topo: "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-7]\n"},
			wantProbs: []string{"topology.conf:2 BlockName=b2 has 3 nodes, fewer than the base block size 4 (the first block, BlockName=b1): Slurm refuses the file"}, wantNodes: []string{""}},
		{name: "block smaller than BlockSizes", c: topoCase{topo: "BlockName=b1 Nodes=n[1-4]\nBlockSizes=8\n"},
			wantProbs: []string{"fewer than the base block size 8 (BlockSizes= at topology.conf:2)"}, wantNodes: []string{""}},
		{name: "block twice and empty", c: topoCase{topo: "BlockName=b1 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\nBlockName=b3 Nodes=\"\"\n"},
			wantProbs: []string{"BlockName=b1 is defined again", "BlockName=b3 lists no nodes"}, wantNodes: []string{"", ""}},
		{name: "block omitted nodes", c: topoCase{slurm: "NodeName=n[1-8]\n", topo: "BlockName=b1 Nodes=n[1-4]\n"},
			wantProbs: []string{"slurm.conf:1 defines n[5-8], which topology.conf puts in no block: Slurm warns (blocks lack access to 4 nodes)"}, wantNodes: []string{"n[5-8]"}},
		{name: "node in two blocks", c: topoCase{topo: "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-7]\n"},
			wantProbs: []string{"BlockName=b2 lists n4, which BlockName=b1 (topology.conf:1) lists too"}, wantNodes: []string{"n4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.run(t)
			if len(r.Problems) != len(tc.wantProbs) {
				t.Fatalf("%d problems, want %d:\n%s", len(r.Problems), len(tc.wantProbs), dumpProblems(r.Problems))
			}
			for i, p := range r.Problems {
				if !strings.Contains(p.Message, tc.wantProbs[i]) || p.Nodes != tc.wantNodes[i] {
					t.Errorf("problem %d = %q (nodes %q), want it to contain %q (nodes %q)", i, p.Message, p.Nodes, tc.wantProbs[i], tc.wantNodes[i])
				}
			}
		})
	}
}

// TestLintTopologyCorpus lints each real topology.conf alone: the problems are Slurm's.
func TestLintTopologyCorpus(t *testing.T) {
	want := map[string][]string{
		"maatthias-puppet-topology.conf":                     {"4 switches head separate trees"},
		"slurm-testsuite-133.1-tc4-tree-no-root.conf":        {"2 switches head separate trees"},
		"slurm-testsuite-133.1-tc6-disconnected-trunks.conf": {"3 switches head separate trees"},
		"ltaulell-x5-topology.conf":                          {"SwitchName=S-0008f105001086a2 is its own descendant (S-0008f105001086a2 -> S-0008f10500108530 -> S-0008f105001086a2)"},
		"slurm-doc-topology-tree-ex1.conf":                   nil,
		"slurm-doc-topology-tree-linkspeed.conf":             nil, // four spines, each over every leaf
		"slurm-doc-topology-tree-leaves-plus-top.conf":       nil,
		"topograph-gb200-subset-topology.conf":               nil,
		"slurm-man-topology-conf-tree-example.conf":          nil,
		"slurm-testsuite-check-block.conf":                   nil,
	}
	for file, parts := range want {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/topology/" + file)
			if err != nil {
				t.Fatal(err)
			}
			r := topoCase{topo: string(b)}.run(t)
			if len(r.Problems) != len(parts) {
				t.Fatalf("%d problems, want %d:\n%s", len(r.Problems), len(parts), dumpProblems(r.Problems))
			}
			for i, p := range parts {
				if !strings.Contains(r.Problems[i].Message, p) {
					t.Errorf("problem %q, want %q", r.Problems[i].Message, p)
				}
			}
		})
	}
}

// moveNode rewrites topology.conf text so that node is listed under the switch or block
// named to instead of where it was: what an admin's stale file looks like after a node was
// recabled.
func moveNode(t *testing.T, conf, node, to string) string {
	t.Helper()
	lines := strings.Split(conf, "\n")
	from, dst := -1, -1
	nodesRe := regexp.MustCompile(`Nodes=(\S*)`)
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		name := strings.Fields(l + " x")[0]
		if name == "SwitchName="+to || name == "BlockName="+to {
			dst = i
		}
		if m := nodesRe.FindStringSubmatch(l); m != nil {
			names, err := ExpandHostlist(m[1])
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(names, node) {
				from = i
			}
		}
	}
	if from < 0 || dst < 0 {
		t.Fatalf("moveNode %s to %s: from line %d, to line %d", node, to, from, dst)
	}
	edit := func(i int, f func([]string) []string) {
		m := nodesRe.FindStringSubmatchIndex(lines[i])
		names, _ := ExpandHostlist(lines[i][m[2]:m[3]])
		lines[i] = lines[i][:m[2]] + CompressHostlist(f(names)) + lines[i][m[3]:]
	}
	edit(from, func(ns []string) []string { return slices.DeleteFunc(ns, func(s string) bool { return s == node }) })
	edit(dst, func(ns []string) []string { return append(ns, node) })
	return strings.Join(lines, "\n")
}

// TestLintTopologyMovedNodes takes real captures with a topology.conf that matches each,
// moves nodes between leaves in the file, and expects exactly the moved nodes named. The
// unmodified pairs must name no node, except the one real finding of the GB200 capture.
func TestLintTopologyMovedNodes(t *testing.T) {
	const gb200Swap = "b08-p1-dgx-08-c01" // its HCA-5 and HCA-6 cables are swapped in the capture
	ib, tp := "testdata/ibnetdiscover/", "testdata/topology/"
	pairs := []struct {
		name     string
		topo     string
		c        topoCase
		baseline []string // nodes the unmodified pair names
		moves    [][][2]string
	}{
		{name: "X5 with its GUID map", topo: tp + "ltaulell-x5-topology.conf",
			c: topoCase{fabric: ib + "ltaulell-x5-ibnetdiscover.txt", guidMap: ib + "ltaulell-x5-guid-hostname-map.txt"},
			moves: [][][2]string{
				{{"sl390lin22", "S-0002c90200417670"}},
				{{"r422node1", "S-0008f10500108bba"}, {"sl390lin101", "S-0002c902004827b0"}, {"r815lin110", "S-0008f10500200b50"}},
				{{"sl390lin22", "S-0008f105002036b4"}, {"sl390lin28", "S-0008f105002036b4"}, {"sl390lin34", "S-0008f105002036b4"}, {"sl390lin37", "S-0008f105002036b4"}},
				{{"H-003048c749450000", "S-0008f10500108bba"}, {"x5570comp1", "S-0008f10500200b50"}},
			}},
		{name: "GB200 racks tree", topo: tp + "nodecheck-gb200-racks-tree.conf", c: topoCase{fabric: ib + "topograph-gb200-rail-optimized-ndr.txt"},
			baseline: []string{gb200Swap},
			moves: [][][2]string{
				{{"a06-p1-dgx-02-c03", "su05"}},
				{{"b05-p1-dgx-05-c10", "su03"}, {"a07-p1-dgx-03-c01", "su08"}, {"a08-p1-dgx-04-c17", "su01"}},
			}},
		{name: "GB200 subset by topograph", topo: tp + "topograph-gb200-subset-topology.conf", c: topoCase{fabric: ib + "topograph-gb200-rail-optimized-ndr.txt"},
			moves: [][][2]string{{{"b05-p1-dgx-05-c07", "S-2c5eab0300b87a80"}}, {{"a05-p1-dgx-01-c03", "S-2c5eab0300c26040"}}}},
		{name: "GB200 racks as blocks", topo: tp + "nodecheck-gb200-racks-block.conf", c: topoCase{fabric: ib + "topograph-gb200-rail-optimized-ndr.txt"},
			baseline: []string{gb200Swap},
			moves:    [][][2]string{{{"a06-p1-dgx-02-c03", "rack05"}}, {{"b06-p1-dgx-06-c02", "rack01"}, {"b07-p1-dgx-07-c18", "rack03"}}}},
		{name: "GB200 six-tray blocks", topo: tp + "nodecheck-gb200-sixes-block.conf", c: topoCase{fabric: ib + "topograph-gb200-rail-optimized-ndr.txt"},
			baseline: []string{gb200Swap},
			moves:    [][][2]string{{{"a07-p1-dgx-03-c02", "r05b"}}, {{"b05-p1-dgx-05-c18", "r07a"}, {"a08-p1-dgx-04-c09", "r03c"}}}},
		{name: "test3 SwitchIB and SX6012", topo: tp + "nodecheck-jabl-test3.conf", c: topoCase{fabric: ib + "jabl-ibtopotool-test3.txt"},
			moves: [][][2]string{{{"r-ufm216", "sx6012"}}, {{"r-ufm96", "switchib"}, {"r-ufm100", "switchib"}}, {{"r-ufm101", "switchib"}}}},
		{name: "test1 GUID-named nodes", topo: tp + "nodecheck-jabl-test1-guid-names.conf", c: topoCase{fabric: ib + "jabl-ibtopotool-test1.txt"},
			moves: [][][2]string{{{"H-005442b100004900", "isr9024"}}, {{"H-0008f10403960558", "sw6ib4"}}}},
		{name: "OSC ports report", topo: tp + "nodecheck-treydock-osc-ports.conf", c: topoCase{fabric: ib + "treydock-ibnetdiscover-p-osc-edr.txt"},
			moves: [][][2]string{{{"o0002", "ib-i4l1s01"}}, {{"p0001", "ib-i1l1s01"}}}},
		{name: "test2 one switch", topo: tp + "nodecheck-jabl-test2.conf", c: topoCase{fabric: ib + "jabl-ibtopotool-test2.txt"}},
		{name: "test4 one host", topo: tp + "nodecheck-jabl-test4.conf", c: topoCase{fabric: ib + "jabl-ibtopotool-test4.txt"}},
		{name: "HDR ports report", topo: tp + "nodecheck-treydock-hdr-ports.conf", c: topoCase{fabric: ib + "treydock-ibnetdiscover-p-hdr-padded-names.txt"}},
	}
	for _, pc := range pairs {
		conf, err := os.ReadFile(pc.topo)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(pc.name+"/unmodified", func(t *testing.T) {
			c := pc.c
			c.topo = string(conf)
			r := c.run(t)
			if got := named(t, r); fmt.Sprint(got) != fmt.Sprint(pc.baseline) {
				t.Errorf("named %v, want %v:\n%s", got, pc.baseline, dumpProblems(r.Problems))
			}
		})
		for _, moves := range pc.moves {
			var want []string
			text := string(conf)
			for _, m := range moves {
				text = moveNode(t, text, m[0], m[1])
				want = append(want, m[0])
			}
			t.Run(fmt.Sprintf("%s/move %v", pc.name, want), func(t *testing.T) {
				c := pc.c
				c.topo = text
				r := c.run(t)
				want = append(want, pc.baseline...)
				sort.Strings(want)
				if got := named(t, r); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("named %v, want %v:\n%s\n%s", got, want, text, dumpProblems(r.Problems))
				}
				for _, p := range r.Problems {
					if slices.Contains(want, p.Nodes) && p.Nodes != gb200Swap && !strings.Contains(p.Message, "move "+p.Nodes+" to ") {
						t.Errorf("problem about %s does not say where to move it: %s", p.Nodes, p.Message)
					}
				}
			})
		}
	}
}

// recable rewrites a topology-format capture as if adapter ca's port caPort had been moved
// to port newPort of switch newSw: the old switch's line goes, the new switch gets one, the
// adapter's own line names the new switch.
func recable(t *testing.T, capture, ca string, caPort int, newSw string, newPort int) string {
	t.Helper()
	lines := strings.Split(capture, "\n")
	var out []string
	var caLine string
	oldPrefix := regexp.MustCompile(`^\[\d+\]\t"` + ca + `"\[` + fmt.Sprint(caPort) + `\]`)
	for _, l := range lines {
		if oldPrefix.MatchString(l) {
			caLine = l
			continue
		}
		out = append(out, l)
	}
	if caLine == "" {
		t.Fatalf("recable: no switch line for %s port %d", ca, caPort)
	}
	newLine := fmt.Sprintf("[%d]", newPort) + caLine[strings.IndexByte(caLine, '\t'):]
	var res []string
	inCA := false
	for _, l := range out {
		res = append(res, l)
		if strings.HasPrefix(l, "Switch") && strings.Contains(l, `"`+newSw+`"`) {
			res = append(res, newLine)
		}
		if strings.HasPrefix(l, "Ca") || strings.HasPrefix(l, "Switch") {
			inCA = strings.Contains(l, `"`+ca+`"`)
		}
		if inCA && strings.HasPrefix(l, fmt.Sprintf("[%d](", caPort)) {
			i := strings.Index(l, `"S-`)
			j := strings.Index(l[i:], "]") + i + 1
			res[len(res)-1] = l[:i] + fmt.Sprintf(`"%s"[%d]`, newSw, newPort) + l[j:]
		}
	}
	return strings.Join(res, "\n")
}

// TestLintTopologyRecabled moves nodes in the capture instead of the file: recabled adapters
// of the X5 and GB200 fabrics.
func TestLintTopologyRecabled(t *testing.T) {
	x5, err := os.ReadFile("testdata/ibnetdiscover/ltaulell-x5-ibnetdiscover.txt")
	if err != nil {
		t.Fatal(err)
	}
	x5conf, _ := os.ReadFile("testdata/topology/ltaulell-x5-topology.conf")
	// sl390lin22 (H-78e7d1030022773c) from S-0008f1050020369c to a free port of S-0002c902004827b0.
	moved := recable(t, string(x5), "H-78e7d1030022773c", 1, "S-0002c902004827b0", 11)
	r := topoCase{topo: string(x5conf), fabric: "=" + moved, guidMap: "testdata/ibnetdiscover/ltaulell-x5-guid-hostname-map.txt"}.run(t)
	if got := named(t, r); fmt.Sprint(got) != "[sl390lin22]" {
		t.Fatalf("named %v:\n%s", got, dumpProblems(r.Problems))
	}
	if !strings.Contains(dumpProblems(r.Problems), "puts sl390lin22 under SwitchName=S-0008f1050020369c, but its adapter H-78e7d1030022773c is cabled to leaf 'Infiniscale-IV Mellanox Technologies' (S-0002c902004827b0) port 11, with the nodes of SwitchName=S-0002c902004827b0 (topology.conf:13); the rest of SwitchName=S-0008f1050020369c is on leaf 'Voltaire 4036 # 4036-369C' (S-0008f1050020369c): move sl390lin22 to SwitchName=S-0002c902004827b0") {
		t.Errorf("message:\n%s", dumpProblems(r.Problems))
	}

	gb, err := os.ReadFile("testdata/ibnetdiscover/topograph-gb200-rail-optimized-ndr.txt")
	if err != nil {
		t.Fatal(err)
	}
	racks, _ := os.ReadFile("testdata/topology/nodecheck-gb200-racks-tree.conf")
	// One of a07-p1-dgx-03-c05's four adapters (HCA-2, H-e09d730300857a68) to rack 05's rail-2 leaf.
	one := recable(t, string(gb), "H-e09d730300857a68", 1, "S-2c5eab0300c26180", 25)
	r = topoCase{topo: string(racks), fabric: "=" + one}.run(t)
	if got := named(t, r); fmt.Sprint(got) != "[a07-p1-dgx-03-c05 b08-p1-dgx-08-c01]" {
		t.Fatalf("named %v:\n%s", got, dumpProblems(r.Problems))
	}
	if !strings.Contains(dumpProblems(r.Problems), "lists a07-p1-dgx-03-c05 in SwitchName=su03, and 1 of its 4 rails is elsewhere: adapter HCA-2 (H-e09d730300857a68) is cabled to leaf 'MF0;B09-P1-IBLEAF-02-05:MQM9701/U1' (S-2c5eab0300c26180) port 25, with the nodes of SwitchName=su05 (topology.conf:6), not to leaf 'MF0;A09-P1-IBLEAF-02-03:MQM9701/U1'") {
		t.Errorf("message:\n%s", dumpProblems(r.Problems))
	}
}

func TestLintTopologyRails(t *testing.T) {
	gb := "testdata/ibnetdiscover/topograph-gb200-rail-optimized-ndr.txt"
	racks, _ := os.ReadFile("testdata/topology/nodecheck-gb200-racks-tree.conf")
	r := topoCase{topo: string(racks), fabric: gb}.run(t)
	if !r.RailOptimized {
		t.Fatal("the GB200 fabric is not recognised as rail-optimized")
	}
	notes := dumpProblems(r.Notes)
	for _, want := range []string{
		"rail-optimized fabric: 119 of 122 nodes with adapters on several leaves follow 4 rails (HCA-1 on 8 leaves, HCA-2 on 8 leaves, HCA-5 on 7 leaves, HCA-6 on 8 leaves)",
		"69 channel adapters cabled to switches name no host in their node description ('MT4129 ConnectX7   Mellanox Technologies' H-e09d730300858d88, line 56)",
		"40 SHARP aggregation nodes",
		"channel adapters of 3 hosts that topology.conf does not name (ubuntu, B11-P1-CUFM-02, localhost)",
		"25 nodes topology.conf places have no adapter in the capture",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !strings.Contains(dumpProblems(r.Problems), "b08-p1-dgx-08-c01's adapters leave the rails the other nodes follow: HCA-5 (H-e09d730300859464) is on leaf 'MF0;B09-P1-IBLEAF-04-08:MQM9701/U1' (S-2c5eab0300c26540) port 1, which carries HCA-6 of the other nodes") {
		t.Errorf("problems:\n%s", dumpProblems(r.Problems))
	}

	// Not rail-optimized: one dual-homed node among single-adapter ones (an invented capture
	// in ibnetdiscover's format: no public capture has this).
	split := `Switch	36 "S-0000000000000a01"		# "leaf-a" base port 0 lid 1 lmc 0
[1]	"H-0000000000000101"[1](101) 		# "n1 mlx5_0" lid 11 4xHDR
[2]	"H-0000000000000201"[1](201) 		# "n2 mlx5_0" lid 12 4xHDR
[3]	"H-0000000000000301"[1](301) 		# "n3 mlx5_0" lid 13 4xHDR

Switch	36 "S-0000000000000b01"		# "leaf-b" base port 0 lid 2 lmc 0
[1]	"H-0000000000000102"[1](102) 		# "n1 mlx5_1" lid 14 4xHDR
[2]	"H-0000000000000401"[1](401) 		# "n4 mlx5_0" lid 15 4xHDR
`
	r = topoCase{topo: "SwitchName=a Nodes=n[1-3]\nSwitchName=b Nodes=n4\nSwitchName=top Switches=a,b\n", fabric: "=" + split}.run(t)
	if r.RailOptimized || fmt.Sprint(named(t, r)) != "[n1]" || !strings.Contains(r.Problems[0].Message, "n1's adapters reach different leaf switches (mlx5_0 (H-0000000000000101) on leaf 'leaf-a' (S-0000000000000a01) port 1; mlx5_1 (H-0000000000000102) on leaf 'leaf-b' (S-0000000000000b01) port 1) and the fabric is not rail-optimized") {
		t.Errorf("railed %v, problems:\n%s", r.RailOptimized, dumpProblems(r.Problems))
	}
}

func TestLintTopologyNaming(t *testing.T) {
	// An invented capture in ibnetdiscover's format: hosts described in the ways sites do.
	capture := `Switch	36 "S-0000000000000a01"		# "leaf-a" base port 0 lid 1 lmc 0
[1]	"H-0000000000000101"[1](101) 		# "gpu001.cluster.example mlx5_0" lid 11 4xHDR
[2]	"H-0000000000000201"[1](201) 		# "node-gpu002" lid 12 4xHDR
[3]	"H-0000000000000301"[1](301) 		# "MT4129 ConnectX7   Mellanox Technologies" lid 13 4xHDR
[4]	"H-0000000000000401"[1](401) 		# "storage1 mlx5_0" lid 14 4xHDR
[5]	"H-0000000000000501"[1](501) 		# "gpu005" lid 15 4xHDR
`
	slurm := "NodeName=n[001-005] NodeHostname=gpu[001-005]\n"
	topo := "SwitchName=a Nodes=n[001-005]\n"
	tests := []struct {
		name   string
		naming AdapterNaming
		want   []string // notes that must be there
		placed int      // nodes of topology.conf with an adapter
	}{
		{name: "descriptions", want: []string{"2 channel adapters cabled to switches name no host", "channel adapters of 1 host that neither slurm.conf nor topology.conf names (storage1)"}, placed: 2},
		{name: "regexp", naming: AdapterNaming{HostRegexp: regexp.MustCompile(`^(?:node-)?(?P<host>gpu\d+)`)}, placed: 3,
			want: []string{"2 channel adapters cabled to switches name no host", "--ib-host-regexp matched none of these"}},
		{name: "GUID map", naming: AdapterNaming{GUIDs: map[uint64]string{0x301: "gpu003", 0x201: "gpu002"}}, placed: 4,
			want: []string{"channel adapters of 1 host that neither slurm.conf nor topology.conf names (storage1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := topoCase{topo: topo, slurm: slurm, fabric: "=" + capture, naming: tc.naming}.run(t)
			notes := dumpProblems(r.Notes)
			for _, w := range tc.want {
				if !strings.Contains(notes, w) {
					t.Errorf("notes lack %q:\n%s", w, notes)
				}
			}
			if want := fmt.Sprintf("%d %s topology.conf places", 5-tc.placed, text.Plural(5-tc.placed, "node", "nodes")); !strings.Contains(notes, want) {
				t.Errorf("notes lack %q:\n%s", want, notes)
			}
			if len(r.Problems) != 0 {
				t.Errorf("problems:\n%s", dumpProblems(r.Problems))
			}
		})
	}
}

func TestLintTopologyNoAdapterNamed(t *testing.T) {
	r := topoCase{topo: "SwitchName=s Nodes=a[1-2]\n", fabric: "testdata/ibnetdiscover/jabl-ibtopotool-test1.txt"}.run(t)
	if !strings.Contains(dumpProblems(r.Notes), "no channel adapter in the capture could be named to a node (4 adapters cabled to a switch)") {
		t.Errorf("notes:\n%s", dumpProblems(r.Notes))
	}
}

func TestMergeTopology(t *testing.T) {
	r := Report{Problems: []Problem{{File: "slurm.conf", Line: 3}, {File: "gres.conf", Line: 1}}, Notes: []Problem{}}
	MergeTopology(&r, TopologyResult{Problems: []Problem{{File: "topology.conf", Line: 2}, {File: "slurm.conf", Line: 1}}, Notes: []Problem{{File: "topology.conf"}}})
	var got []string
	for _, p := range r.Problems {
		got = append(got, fmt.Sprintf("%s:%d", p.File, p.Line))
	}
	if fmt.Sprint(got) != "[slurm.conf:1 slurm.conf:3 gres.conf:1 topology.conf:2]" || len(r.Notes) != 1 {
		t.Errorf("merged %v, notes %v", got, r.Notes)
	}
}

// TestTopologyNamesBound: the Nodes= and Switches= lists of a file stand for at most
// maxTopologyNames names together; the list that passes it is an error at its line, the
// rest of the file is read for its syntax only, and nothing is checked node by node.
func TestTopologyNamesBound(t *testing.T) {
	lines := func(n int, f string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, f, i, i)
		}
		return b.String()
	}
	at := maxTopologyNames / 64 // 64 lines of this many names are exactly the bound
	tests := []struct {
		name     string
		topo     string
		wantLine int // the line of the error; 0: none
	}{
		{name: "one range far past the bound", topo: "SwitchName=s0 Nodes=node[0-16000000]\n", wantLine: 1},
		{name: "64 such lines: one error", topo: lines(64, "SwitchName=s%d Nodes=node%d[0-16000000]\n"), wantLine: 1},
		{name: "exactly the bound", topo: lines(64, fmt.Sprintf("SwitchName=s%%d Nodes=n%%dx[1-%d]\n", at))},
		{name: "one name past it, on the 64th line", topo: lines(63, fmt.Sprintf("SwitchName=s%%d Nodes=n%%dx[1-%d]\n", at)) + fmt.Sprintf("SwitchName=last Nodes=z[0-%d]\n", at), wantLine: 64},
		{name: "Switches= counts too", topo: "SwitchName=s0 Nodes=a[1-4]\nSwitchName=top Switches=s[0-16000000]\n", wantLine: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := topoCase{topo: tc.topo, slurm: "NodeName=a[1-4]\n"}.run(t)
			var cut []Problem
			for _, p := range r.Problems {
				if strings.Contains(p.Message, fmt.Sprintf("past %d names", maxTopologyNames)) {
					cut = append(cut, p)
				}
			}
			if tc.wantLine == 0 {
				if len(cut) > 0 {
					t.Fatalf("cut within the bound:\n%s", dumpProblems(cut))
				}
				return
			}
			if len(cut) != 1 || cut[0].Line != tc.wantLine || cut[0].Severity != SeverityError {
				t.Fatalf("want one error at line %d naming the bound, got:\n%s", tc.wantLine, dumpProblems(r.Problems))
			}
			if len(r.Problems) != 1 {
				t.Errorf("nodes checked past the cut:\n%s", dumpProblems(r.Problems))
			}
			if len(r.Notes) != 1 || !strings.Contains(r.Notes[0].Message, "nodes were not checked") {
				t.Errorf("notes %v, want one saying nodes were not checked", r.Notes)
			}
		})
	}
}

// TestTopologyNamesBoundInclude: names in an Included file count toward the bound, and the
// error is at the Included file's line.
func TestTopologyNamesBoundInclude(t *testing.T) {
	half := fmt.Sprintf("SwitchName=%%s Nodes=%%s[1-%d]\n", maxTopologyNames/2)
	files := map[string]string{"/etc/slurm/more.conf": fmt.Sprintf(half, "s1", "b") + fmt.Sprintf(half, "s2", "c")}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	tc, err := ParseTopologyConf(strings.NewReader(fmt.Sprintf(half, "s0", "a")+"Include more.conf\n"), "/etc/slurm/topology.conf", read)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Pos{File: "/etc/slurm/more.conf", Line: 2}); tc.NamesCut != want {
		t.Errorf("cut at %v, want %v:\n%s", tc.NamesCut, want, dumpProblems(tc.Problems))
	}
}

// BenchmarkLintTopologyNamesBound lints a topology.conf whose lists stand for exactly
// maxTopologyNames names (64 leaves, none of them slurm.conf's nodes), the most lint expands,
// and one far past it (64 lines of Nodes=node[0-16000000]), which it refuses at the first.
func BenchmarkLintTopologyNamesBound(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"at the bound", fmt.Sprintf("SwitchName=s%%d Nodes=n%%dx[1-%d]\n", maxTopologyNames/64)},
		{"far past it", "SwitchName=s%d Nodes=node%d[0-16000000]\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf strings.Builder
			for i := range 64 {
				fmt.Fprintf(&buf, bc.line, i, i)
			}
			sc, err := ParseSlurmConf([]byte("NodeName=a[1-4]\n"), "slurm.conf", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tc, err := ParseTopologyConf(strings.NewReader(buf.String()), "topology.conf", nil)
				if err != nil {
					b.Fatal(err)
				}
				LintTopology(TopologyInput{Slurm: sc, Topology: tc})
			}
		})
	}
}
