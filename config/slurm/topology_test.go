package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// parseTopo parses topology.conf text for a test.
func parseTopo(t *testing.T, text string) *TopologyConf {
	t.Helper()
	tc, err := ParseTopologyConf(strings.NewReader(text), "topology.conf", nil)
	if err != nil {
		t.Fatalf("ParseTopologyConf: %v", err)
	}
	return tc
}

func TestParseTopologyConf(t *testing.T) {
	type sw struct{ name, nodes, switches string }
	tests := []struct {
		name      string
		in        string
		want      []sw     // tree form: name, Nodes=, Switches= ("-" when not given)
		blocks    []sw     // block form: name, Nodes=
		sizes     []int    // BlockSizes
		speed     uint32   // LinkSpeed of the first switch
		wantProbs []string // parts of each problem, in order
	}{
		{name: "man tree", in: "SwitchName=s0 Nodes=dev[0-5]\nSwitchName=s1 Nodes=dev[6-11]\nSwitchName=s3 Switches=s[0-1]\n",
			want: []sw{{"s0", "dev[0-5]", "-"}, {"s1", "dev[6-11]", "-"}, {"s3", "-", "s[0-1]"}}},
		{name: "keys in any case, comments, tabs", in: "# topology\nswitchname=s0\tNODES=tux[0-3]   linkspeed=900 # leaf\nSWITCHNAME=s1 switches=s0\n",
			want: []sw{{"s0", "tux[0-3]", "-"}, {"s1", "-", "s0"}}, speed: 900},
		{name: "continuation", in: "SwitchName=s0 \\\nNodes=a[1-2]\n", want: []sw{{"s0", "a[1-2]", "-"}}},
		{name: "continuation with trailing blanks, as Slurm strips them", in: "SwitchName=s0 \\  \t\nNodes=a[1-2]\n", want: []sw{{"s0", "a[1-2]", "-"}}},
		{name: "blanks around equals", in: "SwitchName = s0 Nodes =a1\nSwitchName=s1 LinkSpeed = 5 Switches= s0\n",
			want: []sw{{"s0", "a1", "-"}, {"s1", "-", "s0"}}},
		{name: "CRLF", in: "SwitchName=s0 Nodes=a1\r\nSwitchName=s1 Switches=s0\r\n", want: []sw{{"s0", "a1", "-"}, {"s1", "-", "s0"}}},
		{name: "empty leaf", in: "SwitchName=s0\n", want: []sw{{"s0", "-", "-"}}},
		{name: "block form", in: "BlockName=b1 Nodes=node[1-32]\nBlockName=b2 Nodes=node[33-64]\nBlockSizes=30,120\n",
			blocks: []sw{{"b1", "node[1-32]", ""}, {"b2", "node[33-64]", ""}}, sizes: []int{30, 120}},
		{name: "unknown top key", in: "SwitchNme=s0 Nodes=a1\n", wantProbs: []string{"unknown key SwitchNme= (did you mean SwitchName=?)"}},
		{name: "bare word", in: "SwitchName=s0 Nodes=a1\nfoo\n", want: []sw{{"s0", "a1", "-"}}, wantProbs: []string{`"foo" is not Key=Value`}},
		{name: "unknown switch key", in: "SwitchName=s0 Node=a1\n", want: []sw{{"s0", "-", "-"}}, wantProbs: []string{"unknown key Node= (did you mean Nodes=?)"}},
		{name: "key twice", in: "SwitchName=s0 Nodes=a1 Nodes=a2\n", want: []sw{{"s0", "a2", "-"}}, wantProbs: []string{"gives Nodes= twice"}},
		{name: "nodes and switches", in: "SwitchName=s0 Nodes=a1 Switches=s1\n", want: []sw{{"s0", "a1", "s1"}}, wantProbs: []string{"switch s0 has both child switches and nodes"}},
		{name: "no name", in: "SwitchName=\"\" Nodes=a1\n", wantProbs: []string{"SwitchName= has no name"}},
		// Slurm skips blanks after '=': the switch is named "Nodes=a1" and has no nodes.
		{name: "blank after equals takes the next word", in: "SwitchName= Nodes=a1\n", want: []sw{{"Nodes=a1", "-", "-"}},
			wantProbs: []string{"SwitchName= is followed by a blank, so Slurm takes the next word as its value (SwitchName=Nodes=a1)"}},
		{name: "empty value", in: "SwitchName=s0 Nodes=\n", want: []sw{{"s0", "", "-"}}, wantProbs: []string{"Nodes= has no value: Slurm refuses the file (Parse error)"}},
		{name: "comment after a continuation", in: "SwitchName=s0 \\ # leaf one\nNodes=a[1-2]\n", want: []sw{{"s0", "a[1-2]", "-"}}},
		{name: "long name", in: "SwitchName=" + strings.Repeat("s", 65) + "\n", wantProbs: []string{"65 bytes long"}},
		{name: "bad link speed", in: "SwitchName=s0 Nodes=a1 LinkSpeed=fast\n", want: []sw{{"s0", "a1", "-"}}, wantProbs: []string{"LinkSpeed=fast: not a whole number"}},
		{name: "bad hostlist", in: "SwitchName=s0 Nodes=a[1-\n", want: []sw{{"s0", "", "-"}}, wantProbs: []string{"SwitchName=s0 Nodes=a[1-:"}},
		{name: "block without nodes", in: "BlockName=b1\n", blocks: []sw{{"b1", "-", ""}}, wantProbs: []string{"block b1 hasn't got nodes"}},
		{name: "block sizes not doubling", in: "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,12\n", blocks: []sw{{"b1", "n[1-4]", ""}}, wantProbs: []string{"12 is not 4 (the base block size) times a power of two"}},
		{name: "block sizes not a number", in: "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,x\n", blocks: []sw{{"b1", "n[1-4]", ""}}, wantProbs: []string{`"x" is not a positive whole number`}},
		{name: "block sizes twice", in: "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4\nBlockSizes=4,8\n", blocks: []sw{{"b1", "n[1-4]", ""}}, sizes: []int{4, 8}, wantProbs: []string{"BlockSizes= given again (first at topology.conf:2)"}},
		{name: "block sizes not alone", in: "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4 Nodes=x\n", blocks: []sw{{"b1", "n[1-4]", ""}}, sizes: []int{4}, wantProbs: []string{"must be alone on its line"}},
		{name: "mixed forms", in: "SwitchName=s0 Nodes=a1\nBlockName=b1 Nodes=a2\n", want: []sw{{"s0", "a1", "-"}}, blocks: []sw{{"b1", "a2", ""}},
			wantProbs: []string{"topology.conf:2: BlockName=/BlockSizes= lines mix with SwitchName= lines (first at topology.conf:1)"}},
		{name: "empty file", in: "# nothing\n", wantProbs: []string{"no SwitchName= or BlockName= line"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseTopo(t, tc.in)
			var sws []sw
			for _, s := range got.Switches {
				n, c := "-", "-"
				if s.Nodes != nil {
					n = s.Nodes.String()
				}
				if s.Switches != nil {
					c = s.Switches.String()
				}
				sws = append(sws, sw{s.Name, n, c})
			}
			if fmt.Sprint(sws) != fmt.Sprint(tc.want) {
				t.Errorf("switches %v, want %v", sws, tc.want)
			}
			var bs []sw
			for _, b := range got.Blocks {
				n := "-"
				if b.Nodes != nil {
					n = b.Nodes.String()
				}
				bs = append(bs, sw{b.Name, n, ""})
			}
			if fmt.Sprint(bs) != fmt.Sprint(tc.blocks) {
				t.Errorf("blocks %v, want %v", bs, tc.blocks)
			}
			if fmt.Sprint(got.BlockSizes) != fmt.Sprint(tc.sizes) {
				t.Errorf("BlockSizes %v, want %v", got.BlockSizes, tc.sizes)
			}
			if tc.speed != 0 && got.Switches[0].LinkSpeed != tc.speed {
				t.Errorf("LinkSpeed %d, want %d", got.Switches[0].LinkSpeed, tc.speed)
			}
			checkProblems(t, got.Problems, tc.wantProbs)
		})
	}
}

// checkProblems checks that each problem contains its wanted part, in order, and that each
// names its file and line.
func checkProblems(t *testing.T, got []Problem, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), dumpProblems(got))
		return
	}
	for i, p := range got {
		if !strings.Contains(p.Message, want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, p.Message, want[i])
		}
		if p.File == "" || p.Line == 0 || !strings.HasPrefix(p.Message, filepath.Base(p.File)+":"+fmt.Sprint(p.Line)) {
			t.Errorf("problem %d does not start with its file and line: %+v", i, p)
		}
	}
}

// TestParseTopologyConfCorpus parses every real topology.conf: each is read whole, with the
// problems Slurm itself would have.
func TestParseTopologyConfCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/topology/*.conf")
	if err != nil || len(files) < 20 {
		t.Fatalf("fixtures: %v, %d files", err, len(files))
	}
	want := map[string]struct {
		switches, blocks int
		form             string
	}{
		"slurm-man-topology-conf-tree-example.conf":          {4, 0, "tree"},
		"slurm-man-topology-conf-block-example.conf":         {0, 4, "block"},
		"slurm-doc-topology-tree-linkspeed.conf":             {8, 0, "tree"},
		"slurm-testsuite-133.1-tc3-tree-root.conf":           {23, 0, "tree"},
		"slurm-testsuite-check-block.conf":                   {0, 8, "block"},
		"ltaulell-x5-topology.conf":                          {11, 0, "tree"},
		"yosoyjay-sharp-cmd-topology-guid-nodes.conf":        {113, 0, "tree"},
		"hibozzy18-nstda-tara-topology.conf":                 {5, 0, "tree"},
		"slurm-testsuite-133.1-tc6-disconnected-trunks.conf": {7, 0, "tree"},
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := ParseTopologyConf(iotest.OneByteReader(strings.NewReader(string(data))), f, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(tc.Problems) > 0 {
			t.Errorf("%s: problems:\n%s", f, dumpProblems(tc.Problems))
		}
		if w, ok := want[filepath.Base(f)]; ok {
			if len(tc.Switches) != w.switches || len(tc.Blocks) != w.blocks || tc.Form() != w.form {
				t.Errorf("%s: %d switches, %d blocks, form %q; want %+v", f, len(tc.Switches), len(tc.Blocks), tc.Form(), w)
			}
		}
	}
}

func TestParseTopologyConfInclude(t *testing.T) {
	files := map[string]string{"/etc/slurm/leaves.conf": "SwitchName=s0 Nodes=a[1-2]\n"}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	tc, err := ParseTopologyConf(strings.NewReader("Include leaves.conf\nSwitchName=top Switches=s0\n"), "/etc/slurm/topology.conf", read)
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.Switches) != 2 || tc.Switches[0].Pos.String() != "/etc/slurm/leaves.conf:1" || len(tc.Files) != 2 {
		t.Errorf("switches %+v, files %v", tc.Switches, tc.Files)
	}
	if _, err := ParseTopologyConf(strings.NewReader("Include missing.conf\n"), "/etc/slurm/topology.conf", read); err == nil || !strings.Contains(err.Error(), "topology.conf:1: Include /etc/slurm/missing.conf") {
		t.Errorf("missing Include: err = %v", err)
	}
}

func TestParseTopologyConfTooLarge(t *testing.T) {
	big := strings.NewReader(strings.Repeat("#", maxTopologyConfBytes+1))
	if _, err := ParseTopologyConf(big, "topology.conf", nil); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("err = %v, want a size error", err)
	}
	if _, err := ParseTopologyConf(iotest.ErrReader(os.ErrPermission), "topology.conf", nil); err == nil {
		t.Error("a read error was not returned")
	}
}

func FuzzParseTopologyConf(f *testing.F) {
	files, _ := filepath.Glob("testdata/topology/*.conf")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	f.Add("SwitchName = s0 \\ \nNodes=a[1-2] Switches=\nBlockSizes=4,8,x\nBlockName=b Nodes=\n")
	f.Fuzz(func(t *testing.T, in string) {
		tc, err := ParseTopologyConf(strings.NewReader(in), "topology.conf", nil)
		if err != nil {
			return
		}
		for _, p := range tc.Problems {
			if p.Line < 1 || p.Message == "" || (p.Severity != SeverityError && p.Severity != SeverityWarning) {
				t.Fatalf("bad problem %+v", p)
			}
		}
		// Linting what parsed must not panic either, with or without slurm.conf.
		sc, _ := ParseSlurmConf([]byte("NodeName=a[1-4]\n"), "slurm.conf", nil)
		LintTopology(TopologyInput{Topology: tc})
		LintTopology(TopologyInput{Topology: tc, Slurm: sc})
	})
}

func ExampleParseTopologyConf() {
	tc, err := ParseTopologyConf(strings.NewReader(`# two leaves under one spine
SwitchName=leaf1 Nodes=gpu[001-032]
SwitchName=leaf2 Nodes=gpu[033-064] LinkSpeed=400
SwitchName=spine Switches=leaf[1-2]
`), "topology.conf", nil)
	if err != nil {
		panic(err)
	}
	for _, s := range tc.Switches {
		fmt.Println(s.Name, s.IsLeaf(), s.Nodes.Len(), s.Switches.String(), s.LinkSpeed)
	}
	fmt.Println(tc.Form(), len(tc.Problems))
	// Output:
	// leaf1 true 32  0
	// leaf2 true 32  400
	// spine false 0 leaf[1-2] 0
	// tree 0
}

// TestParseTopologyYAML: a topology.yaml is refused with ErrTopologyYAML, by its name or by
// its content, and no topology.conf of the corpus is taken for one.
func TestParseTopologyYAML(t *testing.T) {
	example, err := os.ReadFile("testdata/topology/slurm-man-topology-yaml-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, text string
		yaml             bool
	}{
		{name: "topology.yaml(5) example", file: "/etc/slurm/topology.yaml", text: string(example), yaml: true},
		{name: "its content under another name", file: "/etc/slurm/topology.conf", text: string(example), yaml: true},
		{name: "a mapping first", file: "topo", text: "# site topology\n\ntopology: t1\n", yaml: true},
		{name: "by its name alone", file: "/etc/slurm/TOPOLOGY.YML", text: "SwitchName=s0 Nodes=a1\n", yaml: true},
		{name: "topology.conf", file: "/etc/slurm/topology.conf", text: "# a: b\nSwitchName=s0 Nodes=a:1\n"},
		{name: "empty topology.conf", file: "/etc/slurm/topology.conf", text: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopologyConf(strings.NewReader(tc.text), tc.file, nil)
			if got := errors.Is(err, ErrTopologyYAML); got != tc.yaml {
				t.Fatalf("err = %v, want ErrTopologyYAML %v", err, tc.yaml)
			}
			if tc.yaml && !strings.HasPrefix(err.Error(), tc.file+": topology.yaml (Slurm 25.05 and later") {
				t.Errorf("err = %q, want it to name the file and the version", err)
			}
		})
	}
}
