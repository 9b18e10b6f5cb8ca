package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseGresConfLines(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		want         []GresLine
		wantAD       string
		wantNodeAD   []AutoDetectLine
		wantProblems []string
		wantMsg      string
	}{
		{
			name: "ranges, count default, keys in any case",
			in:   "NAME=gpu type=h100 FILE=/dev/nvidia[0,2-3] COREs=[0-3]\n",
			want: []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Type: "h100", Files: []string{"/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia3"}, Cores: []Range{{0, 3}}, CoresKey: "Cores", CoresText: "[0-3]"}},
		},
		{
			name: "NodeName hostlist, CPUs is the old spelling of Cores",
			in:   "NodeName=tux[0-2] Name=gpu File=/dev/nvidia0 CPUs=0,2-3\n",
			want: []GresLine{{Pos: Pos{"gres.conf", 1}, NodeNames: mustHostlist("tux[0-2]"), Name: "gpu", Files: []string{"/dev/nvidia0"}, Cores: []Range{{0, 0}, {2, 3}}, CoresKey: "CPUs", CoresText: "0,2-3"}},
		},
		{
			name: "count suffixes are powers of 1024",
			in:   "Name=tmpdisk count=10g\nName=bandwidth Type=lustre Count=4G Flags=CountOnly\nName=nic Count=100\n",
			want: []GresLine{
				{Pos: Pos{"gres.conf", 1}, Name: "tmpdisk", Count: 10 << 30, CountSet: true},
				{Pos: Pos{"gres.conf", 2}, Name: "bandwidth", Type: "lustre", Count: 4 << 30, CountSet: true, Flags: []string{"CountOnly"}},
				{Pos: Pos{"gres.conf", 3}, Name: "nic", Count: 100, CountSet: true},
			},
		},
		{
			name: "mps and shard may count per file",
			in:   "Name=mps Count=200 File=/dev/nvidia0\nName=shard Count=8 File=/dev/nvidia1\n",
			want: []GresLine{
				{Pos: Pos{"gres.conf", 1}, Name: "mps", Files: []string{"/dev/nvidia0"}, Count: 200, CountSet: true},
				{Pos: Pos{"gres.conf", 2}, Name: "shard", Files: []string{"/dev/nvidia1"}, Count: 8, CountSet: true},
			},
		},
		{
			name: "MIG with MultipleFiles",
			in:   "Name=gpu Type=a100_3g.20gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[21,30]\n",
			want: []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Type: "a100_3g.20gb", MultipleFiles: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap30"}}},
		},
		{
			name: "Links",
			in:   "Name=gpu File=/dev/nvidia0 Links=-1,2,0\n",
			want: []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Files: []string{"/dev/nvidia0"}, Links: []int{-1, 2, 0}}},
		},
		{
			name:       "global and per-node AutoDetect",
			in:         "AutoDetect=nvml\nNodeName=tux[8-11] AutoDetect=rsmi\nNodeName=tux3 Autodetect=OFF Name=gpu File=/dev/nvidia0\n",
			want:       []GresLine{{Pos: Pos{"gres.conf", 3}, NodeNames: mustHostlist("tux3"), Name: "gpu", Files: []string{"/dev/nvidia0"}, AutoDetect: "off"}},
			wantAD:     "nvml",
			wantNodeAD: []AutoDetectLine{{Pos{"gres.conf", 2}, mustHostlist("tux[8-11]"), "rsmi"}, {Pos{"gres.conf", 3}, mustHostlist("tux3"), "off"}},
		},
		{
			name:         "typo'd key names the line and the fix",
			in:           "Name=gpu\nName=gpu Fille=/dev/nvidia0\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu"}, {Pos: Pos{"gres.conf", 2}, Name: "gpu"}},
			wantProblems: []string{"error gres.conf:2"},
			wantMsg:      "gres.conf:2: unknown key Fille= (did you mean File=?)",
		},
		{
			name:         "missing Name is reported and the line ignored",
			in:           "NodeName=node1 Name=gpu Type=tesla File=/dev/nvidia1\nNodeName=node1 Type=tesla File=/dev/nvidia2\nName=\"\" File=/dev/nvidia3\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, NodeNames: mustHostlist("node1"), Name: "gpu", Type: "tesla", Files: []string{"/dev/nvidia1"}}},
			wantProblems: []string{"error gres.conf:2", "error gres.conf:3"},
			wantMsg:      "line has no Name=",
		},
		{
			name:         "broken NodeName bracket: the line applies to no node",
			in:           "NodeName=tux[0-3 Name=gpu File=/dev/nvidia0\n",
			wantProblems: []string{"error gres.conf:1"},
			wantMsg:      "'[' is never closed",
		},
		{
			name:         "broken File bracket",
			in:           "Name=gpu File=/dev/nvidia[0-3\n",
			wantProblems: []string{"error gres.conf:1"},
		},
		{
			name:         "Links on a multi-file line",
			in:           "Name=gpu Type=gtx File=/dev/nvidia[3-5] COREs=0-1 Links=-1,0,0,0,0,0\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Type: "gtx", Files: []string{"/dev/nvidia3", "/dev/nvidia4", "/dev/nvidia5"}, Cores: []Range{{0, 1}}, CoresKey: "Cores", CoresText: "0-1", Links: []int{-1, 0, 0, 0, 0, 0}}},
			wantProblems: []string{"error gres.conf:1"},
			wantMsg:      "split the line into one line per File=",
		},
		{
			name:         "Links ranges and junk are ignored, as Slurm does",
			in:           "Name=gpu File=/dev/nvidia1 Links=0-1\nName=gpu File=/dev/nvidia2 Links=null\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Files: []string{"/dev/nvidia1"}}, {Pos: Pos{"gres.conf", 2}, Name: "gpu", Files: []string{"/dev/nvidia2"}}},
			wantProblems: []string{"warning gres.conf:1", "warning gres.conf:2"},
		},
		{
			name:         "bad Count and Count against files",
			in:           "Name=gpu Count=lots\nName=gpu File=/dev/nvidia[0-1] Count=4\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu"}, {Pos: Pos{"gres.conf", 2}, Name: "gpu", Files: []string{"/dev/nvidia0", "/dev/nvidia1"}, Count: 4, CountSet: true}},
			wantProblems: []string{"error gres.conf:1", "error gres.conf:2"},
			wantMsg:      "count does not match File value",
		},
		{
			name:         "File and MultipleFiles",
			in:           "Name=gpu File=/dev/nvidia0 MultipleFiles=/dev/nvidia1\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Files: []string{"/dev/nvidia0"}, MultipleFiles: []string{"/dev/nvidia1"}}},
			wantProblems: []string{"error gres.conf:1"},
		},
		{
			name:         "bad Cores",
			in:           "Name=gpu File=/dev/nvidia0 Cores=3-1\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Files: []string{"/dev/nvidia0"}}},
			wantProblems: []string{"error gres.conf:1"},
		},
		{
			name:         "inline AutoDetect without NodeName does nothing",
			in:           "Name=gpu AutoDetect=nvml File=/dev/nvidia0\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", AutoDetect: "nvml", Files: []string{"/dev/nvidia0"}}},
			wantProblems: []string{"warning gres.conf:1"},
		},
		{
			name:         "unknown AutoDetect and Flags",
			in:           "AutoDetect=nvidia-smi\nName=gpu File=/dev/nvidia0 Flags=CountOnly,fast\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 2}, Name: "gpu", Files: []string{"/dev/nvidia0"}, Flags: []string{"CountOnly", "fast"}}},
			wantAD:       "nvidia-smi",
			wantProblems: []string{"warning gres.conf:1", "warning gres.conf:2"},
		},
		{
			name:         "huge File range is refused before expanding",
			in:           "Name=gpu File=/dev/nvidia[0-999999]\n",
			wantProblems: []string{"error gres.conf:1"},
		},
		{
			name:         "relative device path",
			in:           "Name=gpu File=nvidia0\n",
			want:         []GresLine{{Pos: Pos{"gres.conf", 1}, Name: "gpu", Files: []string{"nvidia0"}}},
			wantProblems: []string{"warning gres.conf:1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGresConf([]byte(tc.in), "gres.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, g.Lines, hostlistCmp, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if g.AutoDetect != tc.wantAD {
				t.Errorf("AutoDetect = %q, want %q", g.AutoDetect, tc.wantAD)
			}
			if diff := cmp.Diff(tc.wantNodeAD, g.NodeAutoDetect, hostlistCmp, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("NodeAutoDetect (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problemLines(g.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, g.Problems)
			}
			if tc.wantMsg != "" && !strings.Contains(fmt.Sprint(g.Problems), tc.wantMsg) {
				t.Errorf("no problem message contains %q: %v", tc.wantMsg, g.Problems)
			}
		})
	}
}

func mustHostlist(s string) *Hostlist {
	h, err := ParseHostlist(s)
	if err != nil {
		panic(err)
	}
	return h
}

func TestGresInclude(t *testing.T) {
	files := map[string]string{
		"/etc/slurm/gres.conf":        "AutoDetect=off\nInclude gres.d/gpu.conf\nName=mps Count=400\n",
		"/etc/slurm/gres.d/gpu.conf":  "NodeName=gpu[01-02] Name=gpu File=/dev/nvidia[0-1]\nInclude ../gres.conf\n",
		"/etc/slurm/gres.d/other.txt": "",
	}
	g, err := LoadGresConf("/etc/slurm/gres.conf", mapFS(files))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range g.Lines {
		got = append(got, fmt.Sprintf("%s:%d %s", filepath.Base(l.Pos.File), l.Pos.Line, l.Name))
	}
	if diff := cmp.Diff([]string{"gpu.conf:1 gpu", "gres.conf:3 mps"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"error gpu.conf:2"}, problemLines(g.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, err := LoadGresConf("/etc/slurm/none.conf", mapFS(files)); err == nil || !strings.Contains(err.Error(), "read gres.conf") {
		t.Errorf("LoadGresConf of a missing file: %v", err)
	}
}

// gresLineSummary is a GresLine as the corpus tables check it: where, what, which files, how many.
type gresLineSummary struct {
	Line  int
	Name  string
	Type  string
	Files string // compressed
	Total uint64
}

// TestGresConfCorpus resolves every gres.conf under testdata/gres for a named node: the lines
// that apply to it in file order, their files and counts, its AutoDetect, and the problems.
func TestGresConfCorpus(t *testing.T) {
	tests := []struct {
		file     string
		node     string
		want     []gresLineSummary
		wantAD   string
		problems []string
	}{
		{file: "slurm-doc-gres-autodetect-off-manual-cores.conf", node: "node0", wantAD: "off", want: []gresLineSummary{
			{3, "gpu", "a100", "/dev/nvidia0", 1}, {4, "gpu", "a100", "/dev/nvidia1", 1}}},
		{file: "slurm-doc-gres-autodetect-off-manual-cores.conf", node: "node1"},
		{file: "slurm-doc-gres-mps-bandwidth.conf", node: "tux0", wantAD: "nvml", want: []gresLineSummary{
			{4, "gpu", "gp100", "/dev/nvidia0", 1}, {5, "gpu", "gp100", "/dev/nvidia1", 1}, {6, "gpu", "p6000", "/dev/nvidia2", 1}, {7, "gpu", "p6000", "/dev/nvidia3", 1},
			{8, "mps", "", "/dev/nvidia0", 200}, {9, "mps", "", "/dev/nvidia1", 200}, {10, "mps", "", "/dev/nvidia2", 100}, {11, "mps", "", "/dev/nvidia3", 100},
			{12, "bandwidth", "lustre", "", 4 << 30}}},
		{file: "slurm-doc-gres-mps-example1.conf", node: "node0", wantAD: "nvml", want: []gresLineSummary{
			{5, "gpu", "gp100", "/dev/nvidia0", 1}, {6, "gpu", "gp100", "/dev/nvidia1", 1}, {7, "gpu", "p6000", "/dev/nvidia2", 1}, {8, "gpu", "p6000", "/dev/nvidia3", 1},
			{10, "mps", "", "", 400}}},
		{file: "slurm-doc-gres-mps-example2-4types.conf", node: "node0", wantAD: "nvml", want: []gresLineSummary{
			{5, "gpu", "gtx1080", "/dev/nvidia0", 1}, {6, "gpu", "gtx1070", "/dev/nvidia1", 1}, {7, "gpu", "gtx1060", "/dev/nvidia2", 1}, {8, "gpu", "gtx1050", "/dev/nvidia3", 1},
			{9, "mps", "", "/dev/nvidia0", 1300}, {10, "mps", "", "/dev/nvidia1", 1200}, {11, "mps", "", "/dev/nvidia2", 1100}, {12, "mps", "", "/dev/nvidia3", 1000}}},
		{file: "slurm-doc-gres-shard-example1.conf", node: "node0", wantAD: "nvml", want: []gresLineSummary{
			{5, "gpu", "gp100", "/dev/nvidia0", 1}, {6, "gpu", "gp100", "/dev/nvidia1", 1}, {7, "gpu", "p6000", "/dev/nvidia2", 1}, {8, "gpu", "p6000", "/dev/nvidia3", 1},
			{10, "shard", "", "", 32}}},
		{file: "slurm-doc-gres-shard-example2.conf", node: "node0", wantAD: "nvml", want: []gresLineSummary{
			{5, "gpu", "gtx1080", "/dev/nvidia0", 1}, {6, "gpu", "gtx1070", "/dev/nvidia1", 1}, {7, "gpu", "gtx1060", "/dev/nvidia2", 1}, {8, "gpu", "gtx1050", "/dev/nvidia3", 1},
			{9, "shard", "", "/dev/nvidia0", 8}, {10, "shard", "", "/dev/nvidia1", 8}, {11, "shard", "", "/dev/nvidia2", 8}, {12, "shard", "", "/dev/nvidia3", 8}}},
		{file: "slurm-man-autodetect-except-one-node.conf", node: "tux3", wantAD: "off", want: []gresLineSummary{
			{8, "gpu", "", "/dev/nvidia[0-3]", 4}}},
		{file: "slurm-man-autodetect-except-one-node.conf", node: "tux2", wantAD: "nvml"},
		{file: "slurm-man-autodetect-nvml-mps.conf", node: "tux0", wantAD: "nvml", want: []gresLineSummary{
			{7, "gpu", "gtx560", "/dev/nvidia0", 1}, {8, "gpu", "tesla", "/dev/nvidia1", 1}, {9, "mps", "", "/dev/nvidia0", 100}, {10, "mps", "", "/dev/nvidia1", 100}}},
		{file: "slurm-man-bandwidth-countonly.conf", node: "tux7", want: []gresLineSummary{{7, "bandwidth", "lustre", "", 4 << 30}}},
		{file: "slurm-man-bandwidth-countonly.conf", node: "tux8"},
		{file: "slurm-man-explicit-three-gpus-commented.conf", node: "tux0", want: []gresLineSummary{
			{6, "gpu", "tesla", "/dev/nvidia[0-1]", 2}, {9, "gpu", "tesla", "/dev/nvidia3", 1}}},
		{file: "slurm-man-mixed-nvml-rsmi-nodes.conf", node: "tux7", wantAD: "nvml"},
		{file: "slurm-man-mixed-nvml-rsmi-nodes.conf", node: "tux8", wantAD: "rsmi"},
		{file: "slurm-man-mixed-nvml-rsmi-nodes.conf", node: "tux12", want: []gresLineSummary{{8, "gpu", "", "/dev/nvidia[0-3]", 4}}},
		{file: "slurm-man-single-file-positive-nodename-ranges.conf", node: "tux3", want: []gresLineSummary{{10, "gpu", "", "/dev/nvidia[0,2-3]", 3}}},
		{file: "slurm-man-single-file-positive-nodename-ranges.conf", node: "tux15", want: []gresLineSummary{{11, "gpu", "", "/dev/nvidia[0-3]", 4}}},
		{file: "slurm-man-single-file-positive-nodename-ranges.conf", node: "tux16"},
		{file: "slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf", node: "node1", want: []gresLineSummary{
			{3, "gpu", "tesla", "/dev/nvidia[0-4]", 5}, {4, "gpu", "tesla", "/dev/nvidia5", 1}, {5, "gpu", "special", "/dev/nvidia6", 1}, {6, "gpu", "gtx", "/dev/nvidia7", 1},
			{7, "nic", "", "", 100}, {8, "tmpdisk", "", "", 10 << 30}}},
		{file: "slurm-testsuite-39.18-b4-links-mismatch.conf", node: "node1", problems: []string{"error slurm-testsuite-39.18-b4-links-mismatch.conf:5"}, want: []gresLineSummary{
			{3, "gpu", "ti", "/dev/nvidia0", 1}, {4, "gpu", "ti", "/dev/nvidia[1-2]", 2}, {5, "gpu", "gtx", "/dev/nvidia[3-5]", 3}}},
		{file: "slurm-testsuite-39.18-b5-a100x8-links.conf", node: "node1", want: []gresLineSummary{
			{3, "gpu", "a100", "/dev/nvidia0", 1}, {4, "gpu", "a100", "/dev/nvidia1", 1}, {5, "gpu", "a100", "/dev/nvidia2", 1}, {6, "gpu", "a100", "/dev/nvidia3", 1},
			{7, "gpu", "a100", "/dev/nvidia4", 1}, {8, "gpu", "a100", "/dev/nvidia5", 1}, {9, "gpu", "a100", "/dev/nvidia6", 1}, {10, "gpu", "a100", "/dev/nvidia7", 1}}},
		{file: "slurm-testsuite-39.18-c10-links-topology.conf", node: "node1", want: []gresLineSummary{
			{3, "gpu", "tesla", "/dev/nvidia0", 1}, {4, "gpu", "tesla", "/dev/nvidia1", 1}, {5, "gpu", "tesla", "/dev/nvidia2", 1}, {6, "gpu", "tesla", "/dev/nvidia3", 1},
			{7, "gpu", "tesla", "/dev/nvidia4", 1}, {8, "gpu", "tesla", "/dev/nvidia5", 1}, {9, "gpu", "tesla", "/dev/nvidia6", 1}, {10, "gpu", "tesla", "/dev/nvidia7", 1}}},
		{file: "slurm-testsuite-39.18-c18-missing-name.conf", node: "node1", problems: []string{"error slurm-testsuite-39.18-c18-missing-name.conf:4"}, want: []gresLineSummary{
			{3, "gpu", "tesla", "/dev/nvidia1", 1}}},
		{file: "slurm-testsuite-7.17.1.conf", node: "test_node0", want: []gresLineSummary{{5, "gpu", "", "/dev/tty[0-3]", 4}, {6, "gpu", "", "/dev/tty[4-7]", 4}}},
		{file: "slurm-testsuite-7.17.2.conf", node: "test_node0", want: []gresLineSummary{{5, "gpu", "", "/dev/tty[0-3]", 4}, {6, "gpu", "", "/dev/tty[4-7]", 4}}},
		{file: "slurm-testsuite-7.17.3.conf", node: "test_node0", want: []gresLineSummary{
			{5, "gpu", "", "/dev/tty0", 1}, {6, "gpu", "", "/dev/tty1", 1}, {7, "gpu", "", "/dev/tty2", 1}, {8, "gpu", "", "/dev/tty3", 1},
			{9, "gpu", "", "/dev/tty4", 1}, {10, "gpu", "", "/dev/tty5", 1}, {11, "gpu", "", "/dev/tty6", 1}, {12, "gpu", "", "/dev/tty7", 1}}},
		{file: "slurm-testsuite-7.17.4.conf", node: "test_node0", want: []gresLineSummary{{5, "gpu", "", "/dev/tty[0-3]", 4}, {6, "gpu", "", "/dev/tty[4-7]", 4}}},
		{file: "slurm-testsuite-7.17.6.conf", node: "test_node0", want: []gresLineSummary{{5, "gpu", "", "/dev/tty[0-3]", 4}, {6, "gpu", "", "/dev/tty[4-7]", 4}}},
		{file: "slurm-testsuite-7.17.7.conf", node: "test_node0", want: []gresLineSummary{{5, "gpu", "", "/dev/tty[0-3]", 4}, {6, "gpu", "", "/dev/tty[4-7]", 4}}},
		{file: "csua-slurm-docker-cluster-gres.conf", node: "c1", want: []gresLineSummary{
			{2, "gpu", "", "/dev/nvidia0", 1}, {3, "gpu", "", "/dev/nvidia1", 1}, {4, "gpu", "", "/dev/nvidia2", 1}, {5, "gpu", "", "/dev/nvidia3", 1},
			{6, "gpu", "", "/dev/nvidia4", 1}, {7, "gpu", "", "/dev/nvidia5", 1}, {8, "gpu", "", "/dev/nvidia6", 1}, {9, "gpu", "", "/dev/nvidia7", 1}}},
		{file: "nodecheck-mig-multiplefiles.conf", node: "tux1", wantAD: "off", want: []gresLineSummary{
			{3, "gpu", "a100", "/dev/nvidia0", 1}, {4, "gpu", "a100_3g.20gb", "/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21", 1}, {5, "gpu", "a100_3g.20gb", "/dev/nvidia1,/dev/nvidia-caps/nvidia-cap30", 1}}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.file] = true
		t.Run(tc.file+"/"+tc.node, func(t *testing.T) {
			g, err := LoadGresConf(filepath.Join("testdata", "gres", tc.file), os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			ng := g.ForNode(tc.node)
			var got []gresLineSummary
			for _, l := range ng.Lines {
				files := l.Files
				if len(l.MultipleFiles) > 0 {
					files = l.MultipleFiles
				}
				got = append(got, gresLineSummary{l.Pos.Line, l.Name, l.Type, CompressHostlist(files), l.Total()})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines for %s (-want +got):\n%s", tc.node, diff)
			}
			if ng.AutoDetect != tc.wantAD {
				t.Errorf("AutoDetect for %s = %q, want %q", tc.node, ng.AutoDetect, tc.wantAD)
			}
			if diff := cmp.Diff(tc.problems, problemLines(g.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, g.Problems)
			}
		})
	}
	checkCorpusDir(t, filepath.Join("testdata", "gres"), seen)
}

func ExampleParseGresConf() {
	conf := `AutoDetect=off
NodeName=gpu[01-04] Name=gpu Type=h100 File=/dev/nvidia[0-7] Cores=0-31
NodeName=gpu05 Name=gpu Type=h100 File=/dev/nvidia[0,2-7]
Name=mps Count=800
`
	g, err := ParseGresConf([]byte(conf), "gres.conf", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, node := range []string{"gpu02", "gpu05"} {
		ng := g.ForNode(node)
		fmt.Println(node, "AutoDetect="+ng.AutoDetect)
		for _, l := range ng.Lines {
			fmt.Printf("  %s %s:%s count=%d files=%s\n", l.Pos, l.Name, l.Type, l.Total(), CompressHostlist(l.Files))
		}
	}
	// Output:
	// gpu02 AutoDetect=off
	//   gres.conf:2 gpu:h100 count=8 files=/dev/nvidia[0-7]
	//   gres.conf:4 mps: count=800 files=
	// gpu05 AutoDetect=off
	//   gres.conf:3 gpu:h100 count=7 files=/dev/nvidia[0,2-7]
	//   gres.conf:4 mps: count=800 files=
}

func FuzzParseGresConf(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "gres"))
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join("testdata", "gres", e.Name())); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("NodeName=n[1-2] Name=gpu File=/dev/nvidia[0-1] Links=-1,0 Cores=[0-3] Count=2K\nInclude gres.conf\n"))
	f.Add([]byte("Name=gpu MultipleFiles=/dev/a,/dev/b[0-1 File=x Count=99999999999999999999\nAutoDetect=\"nvml"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(string) ([]byte, error) { return data, nil }
		g, err := ParseGresConf(data, "/etc/slurm/gres.conf", read)
		if err != nil {
			return
		}
		for _, p := range g.Problems {
			if p.Line <= 0 || p.File == "" {
				t.Fatalf("problem without a position: %+v", p)
			}
		}
		for _, l := range g.Lines {
			if l.Name == "" {
				t.Fatalf("GRES line without a name: %+v", l)
			}
			if len(l.Files) > maxGresFiles {
				t.Fatalf("%d files on one line", len(l.Files))
			}
			l.Total()
			l.MaxCore()
			if l.NodeNames != nil {
				g.ForNode(l.NodeNames.String())
			}
		}
		g.ForNode("n1")
	})
}
