package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// hostlistCmp compares parsed hostlists by their expression.
var hostlistCmp = cmp.Comparer(func(a, b *Hostlist) bool { return a.String() == b.String() })

func TestParseGresSpec(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []GresSpec
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "count only", in: "gpu:8", want: []GresSpec{{Name: "gpu", Count: 8}}},
		{name: "name only is one", in: "gpu", want: []GresSpec{{Name: "gpu", Count: 1}}},
		{name: "type and count", in: "gpu:h100:8", want: []GresSpec{{Name: "gpu", Type: "h100", Count: 8}}},
		{name: "type without count is one", in: "gpu:tesla", want: []GresSpec{{Name: "gpu", Type: "tesla", Count: 1}}},
		{name: "several types", in: "gpu:h100:8,gpu:a100:2", want: []GresSpec{{Name: "gpu", Type: "h100", Count: 8}, {Name: "gpu", Type: "a100", Count: 2}}},
		{name: "mig type with dot", in: "gpu:a100:1,gpu:a100_3g.20gb:2", want: []GresSpec{{Name: "gpu", Type: "a100", Count: 1}, {Name: "gpu", Type: "a100_3g.20gb", Count: 2}}},
		{name: "autodetected type with hyphens", in: "gpu:nvidia_a100-pcie-40gb:2", want: []GresSpec{{Name: "gpu", Type: "nvidia_a100-pcie-40gb", Count: 2}}},
		{name: "gres.shtml mps and bandwidth", in: "gpu:tesla:2,gpu:kepler:2,mps:400,bandwidth:lustre:no_consume:4G", want: []GresSpec{
			{Name: "gpu", Type: "tesla", Count: 2}, {Name: "gpu", Type: "kepler", Count: 2}, {Name: "mps", Count: 400},
			{Name: "bandwidth", Type: "lustre", Count: 4 << 30, NoConsume: true}}},
		{name: "no_consume without type", in: "mps:no_consume:400", want: []GresSpec{{Name: "mps", Count: 400, NoConsume: true}}},
		{name: "suffixes are powers of 1024", in: "tmpdisk:10g,a:1K,b:2M,c:1T,d:1P", want: []GresSpec{
			{Name: "tmpdisk", Count: 10 << 30}, {Name: "a", Count: 1 << 10}, {Name: "b", Count: 2 << 20}, {Name: "c", Count: 1 << 40}, {Name: "d", Count: 1 << 50}}},
		{name: "shards", in: "gpu:2,shard:64", want: []GresSpec{{Name: "gpu", Count: 2}, {Name: "shard", Count: 64}}},
		{name: "numeric type keeps count", in: "gpu:1080:3", want: []GresSpec{{Name: "gpu", Type: "1080", Count: 3}}},
		{name: "blanks around elements", in: "gpu:8, mps:400", want: []GresSpec{{Name: "gpu", Count: 8}, {Name: "mps", Count: 400}}},
		{name: "empty element", in: "gpu:8,,mps:100", wantErr: "empty element"},
		{name: "no name", in: ":8", wantErr: "missing GRES name"},
		{name: "bad count", in: "gpu:h100:eight", wantErr: `count "eight"`},
		{name: "bad suffix", in: "gpu:8X", wantErr: `unknown suffix "X"`},
		{name: "overflow", in: "gpu:99999999999999999999", wantErr: "too large"},
		{name: "suffix overflow", in: "gpu:99999999P", wantErr: "too large"},
		{name: "too many fields", in: "gpu:a:b:8", wantErr: "too many ':' fields"},
		{name: "scontrol socket notation", in: "gpu:h100:8(S:0-1)", wantErr: "scontrol's socket notation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGresSpec(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseGresSpec(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGresSpec(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseGresSpec(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestGresSpecString(t *testing.T) {
	tests := []struct {
		name string
		in   GresSpec
		want string
	}{
		{name: "untyped", in: GresSpec{Name: "gpu", Count: 8}, want: "gpu:8"},
		{name: "typed", in: GresSpec{Name: "gpu", Type: "h100", Count: 8}, want: "gpu:h100:8"},
		{name: "suffix", in: GresSpec{Name: "bandwidth", Type: "lustre", Count: 4 << 30, NoConsume: true}, want: "bandwidth:lustre:no_consume:4G"},
		{name: "not a whole suffix", in: GresSpec{Name: "mps", Count: 1500}, want: "mps:1500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// mapFS serves files from a map, as a node snapshot would.
func mapFS(files map[string]string) ReadFileFunc {
	return func(path string) ([]byte, error) {
		if s, ok := files[path]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
}

func problemLines(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s:%d", p.Severity, filepath.Base(p.File), p.Line))
	}
	return out
}

func TestParseSlurmConfSyntax(t *testing.T) {
	type node struct {
		Line                        int
		Names, Hostnames, Addrs     string
		CPUs, Sockets, Cores, Thrds int
		Mem                         uint64
		Gres                        string
		Features                    []string
	}
	summarize := func(sc *SlurmConf) []node {
		var out []node
		for _, n := range sc.Nodes {
			out = append(out, node{n.Pos.Line, n.Names.String(), n.Hostnames, n.Addrs, n.CPUs, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore, n.RealMemory, gresText(n.Gres), n.Features})
		}
		return out
	}
	tests := []struct {
		name         string
		in           string
		wantNodes    []node
		wantProblems []string
		wantMsg      string // a problem message contains this
	}{
		{
			name:      "keys in any case, tabs, comments",
			in:        "nodename=gpu[01-04]\tcpus=64  GRES=gpu:h100:8 # eight GPUs\n#NodeName=ignored\n",
			wantNodes: []node{{Line: 1, Names: "gpu[01-04]", CPUs: 64, Gres: "gpu:h100:8"}},
		},
		{
			name: "DEFAULT applies to later lines only, and merges",
			in: "NodeName=a CPUs=1\nNodeName=DEFAULT CPUs=2 RealMemory=2000\nNodeName=DEFAULT Gres=gpu:4\n" +
				"NodeName=b\nNodeName=c CPUs=8 Gres=gpu:2\n",
			wantNodes: []node{
				{Line: 1, Names: "a", CPUs: 1, Gres: "(none)"},
				{Line: 4, Names: "b", CPUs: 2, Mem: 2000, Gres: "gpu:4"},
				{Line: 5, Names: "c", CPUs: 8, Mem: 2000, Gres: "gpu:2"},
			},
		},
		{
			name:      "quoted values and escaped hash",
			in:        "NodeName=n1 Feature=\"a,b\" Reason=\"power, ETA=Dec25\" Gres=gpu:1 Extra=x\\#y\n",
			wantNodes: []node{{Line: 1, Names: "n1", Gres: "gpu:1", Features: []string{"a", "b"}}},
		},
		{
			// slurmctld 22.05.8 read `Features="a#b" CPUs=4` as Features="a and CPUs unset:
			// _strip_comments does not look at quotes.
			name:         "a hash inside quotes is a comment to Slurm",
			in:           "NodeName=n1 Feature=\"a,b\" Reason=\"power, #ETA=Dec25\" Gres=gpu:1\n",
			wantNodes:    []node{{Line: 1, Names: "n1", Gres: "(none)", Features: []string{"a", "b"}}},
			wantProblems: []string{"error slurm.conf:1"},
			wantMsg:      `so it reads "NodeName=n1 Feature=\"a,b\" Reason=\"power," and ignores the rest of the line: write \# for a literal '#'`,
		},
		{
			// Seen on slurmctld 22.05.8: each of these lines set CPUs (and Weight=77).
			name: "blanks around equals, continuations with blanks or a comment after the backslash, escapes",
			in: "NodeName = n1 CPUs = 4 RealMemory =100\nNodeName=n2 \\   \n  CPUs=2\nNodeName=n3 \\ # a comment \\\n  CPUs=3\n" +
				"NodeName=n4 Features=p\\,q CPUs=1\\\n6\nNodeName=n5 CPUs=5 Features=x\\\\#y\nNodeName=n6 Features = \"u v\"\n",
			wantNodes: []node{{Line: 1, Names: "n1", CPUs: 4, Mem: 100, Gres: "(none)"}, {Line: 2, Names: "n2", CPUs: 2, Gres: "(none)"},
				{Line: 4, Names: "n3", CPUs: 3, Gres: "(none)"}, {Line: 6, Names: "n4", CPUs: 16, Gres: "(none)", Features: []string{"p", "q"}},
				{Line: 8, Names: "n5", CPUs: 5, Gres: "(none)", Features: []string{`x\`}}, {Line: 9, Names: "n6", Gres: "(none)", Features: []string{"u v"}}},
		},
		{
			// slurmctld 22.05.8 set Features to "CPUs=6" and left CPUs unset.
			name:         "a blank after equals takes the next word as the value",
			in:           "NodeName=n6 Features= CPUs=6\n",
			wantNodes:    []node{{Line: 1, Names: "n6", Gres: "(none)", Features: []string{"CPUs=6"}}},
			wantProblems: []string{"warning slurm.conf:1"},
			wantMsg:      "Features= is followed by a blank, so Slurm takes the next word as its value (Features=CPUs=6)",
		},
		{
			// Each stopped slurmctld 22.05.8 (Parse error ... fatal).
			name:         "empty value, text after a closing quote, a quote inside a value",
			in:           "NodeName=n1 Features=\nNodeName=n2 Features=\"a b\"c\nNodeName=n3 Features=a\"b c\"\n",
			wantNodes:    []node{{Line: 1, Names: "n1", Gres: "(none)"}, {Line: 2, Names: "n2", Gres: "(none)", Features: []string{`"a`}}, {Line: 3, Names: "n3", Gres: "(none)", Features: []string{`a"b`}}},
			wantProblems: []string{"error slurm.conf:1", "error slurm.conf:2", "error slurm.conf:2", "error slurm.conf:3"},
		},
		{
			name:      "a comment ending in a backslash does not continue",
			in:        "NodeName=n1 CPUs=2 # old: CPUs=1 \\\nNodeName=n2\n",
			wantNodes: []node{{Line: 1, Names: "n1", CPUs: 2, Gres: "(none)"}, {Line: 2, Names: "n2", Gres: "(none)"}},
		},
		{
			name:      "continuation line",
			in:        "NodeName=n[1-2] \\\n  CPUs=4 \\\n  Gres=gpu:2\nNodeName=n3\n",
			wantNodes: []node{{Line: 1, Names: "n[1-2]", CPUs: 4, Gres: "gpu:2"}, {Line: 4, Names: "n3", Gres: "(none)"}},
		},
		{
			name:      "CRLF line ends",
			in:        "NodeName=n1 CPUs=4\r\nNodeName=n2\r\n",
			wantNodes: []node{{Line: 1, Names: "n1", CPUs: 4, Gres: "(none)"}, {Line: 2, Names: "n2", Gres: "(none)"}},
		},
		{
			name:      "NodeHostname and NodeAddr",
			in:        "NodeName=dev[0-1] NodeHostname=h[0-1] NodeAddr=10.0.0.[1-2]\n",
			wantNodes: []node{{Line: 1, Names: "dev[0-1]", Hostnames: "h[0-1]", Addrs: "10.0.0.[1-2]", Gres: "(none)"}},
		},
		{
			name:         "broken bracket names the line",
			in:           "GresTypes=gpu\n\nNodeName=gpu[01- Gres=gpu:8\n",
			wantProblems: []string{"error slurm.conf:3"},
			wantMsg:      `slurm.conf:3: NodeName=gpu[01-: "[01-": '[' is never closed; add the missing ']'`,
		},
		{
			name:         "typo of NodeName",
			in:           "NodeNmae=gpu01 Gres=gpu:8\n",
			wantProblems: []string{"error slurm.conf:1"},
			wantMsg:      "did you mean NodeName=?",
		},
		{
			name:         "typo of a node key",
			in:           "NodeName=gpu01 Gress=gpu:8\n",
			wantNodes:    []node{{Line: 1, Names: "gpu01", Gres: "(none)"}},
			wantProblems: []string{"error slurm.conf:1"},
			wantMsg:      "unknown key Gress= on a NodeName line (did you mean Gres=?)",
		},
		{
			name:         "unknown node key far from any",
			in:           "NodeName=gpu01 FutureKey=1\n",
			wantNodes:    []node{{Line: 1, Names: "gpu01", Gres: "(none)"}},
			wantProblems: []string{"warning slurm.conf:1"},
		},
		{
			name:         "bad numbers and gres",
			in:           "NodeName=n1 CPUs=many RealMemory=-1 Gres=gpu:h100:x\n",
			wantNodes:    []node{{Line: 1, Names: "n1", Gres: "(none)"}},
			wantProblems: []string{"error slurm.conf:1", "error slurm.conf:1", "error slurm.conf:1"},
		},
		{
			name:         "NodeAddr on DEFAULT",
			in:           "NodeName=DEFAULT NodeAddr=x\nNodeName=n1\n",
			wantNodes:    []node{{Line: 2, Names: "n1", Gres: "(none)"}},
			wantProblems: []string{"error slurm.conf:1"},
		},
		{
			name:         "fewer hostnames than nodes",
			in:           "NodeName=n[1-3] NodeHostname=h[1-2]\n",
			wantNodes:    []node{{Line: 1, Names: "n[1-3]", Hostnames: "h[1-2]", Gres: "(none)"}},
			wantProblems: []string{"error slurm.conf:1"},
			wantMsg:      "names 2 hosts for 3 nodes",
		},
		{
			name:      "one address for many nodes is legal",
			in:        "NodeName=test_node[0-9] nodeaddr=localhost port=27001-27010\n",
			wantNodes: []node{{Line: 1, Names: "test_node[0-9]", Addrs: "localhost", Gres: "(none)"}},
		},
		{
			name:         "bare word",
			in:           "ClusterName=c\nthis is not a setting\n",
			wantProblems: []string{"error slurm.conf:2"},
		},
		{
			name:         "unclosed quote",
			in:           "NodeName=n1 Reason=\"oops\n",
			wantNodes:    []node{{Line: 1, Names: "n1", Gres: "(none)"}},
			wantProblems: []string{"error slurm.conf:1"},
		},
		{
			name: "other keys are ignored, several on one line",
			in:   "SlurmctldPort=6817 SlurmdPort=6818\nSelectType=select/cons_tres\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.in), "slurm.conf", nil)
			if err != nil {
				t.Fatalf("ParseSlurmConf: %v", err)
			}
			if diff := cmp.Diff(tc.wantNodes, summarize(sc)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problemLines(sc.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, sc.Problems)
			}
			if tc.wantMsg != "" && !strings.Contains(fmt.Sprint(sc.Problems), tc.wantMsg) {
				t.Errorf("no problem message contains %q: %v", tc.wantMsg, sc.Problems)
			}
		})
	}
}

func TestSlurmConfDefaultPositions(t *testing.T) {
	in := "Nodename=DEFAULT Sockets=2 CoresPerSocket=2 ThreadsPerCore=2 gres=gpu:8\nNodeName=test_node[0-9] gres=gpu:4\n"
	sc, err := ParseSlurmConf([]byte(in), "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Pos{
		"Sockets": {"slurm.conf", 1}, "CoresPerSocket": {"slurm.conf", 1}, "ThreadsPerCore": {"slurm.conf", 1},
		"Gres": {"slurm.conf", 2},
	}
	if diff := cmp.Diff(want, sc.Nodes[0].Set); diff != "" {
		t.Errorf("Set (-want +got):\n%s", diff)
	}
	if cpus, ok := sc.Nodes[0].CPUCount(); cpus != 8 || !ok {
		t.Errorf("CPUCount() = %d, %v; want 8, true", cpus, ok)
	}
}

func TestSlurmConfInclude(t *testing.T) {
	tests := []struct {
		name         string
		files        map[string]string
		wantNodes    []string // "file:line names"
		wantFiles    []string
		wantProblems []string
		wantErr      string
	}{
		{
			name: "relative to the including file",
			files: map[string]string{
				"/etc/slurm/slurm.conf":        "GresTypes=gpu\nInclude nodes.conf\nPartitionName=p Nodes=ALL\n",
				"/etc/slurm/nodes.conf":        "NodeName=gpu[01-02] Gres=gpu:8\ninclude sub/more.conf\n",
				"/etc/slurm/sub/more.conf":     "NodeName=gpu03 Gres=gpu:8\n",
				"/etc/slurm/unused/slurm.conf": "NodeName=never\n",
			},
			wantNodes: []string{"nodes.conf:1 gpu[01-02]", "more.conf:1 gpu03"},
			wantFiles: []string{"/etc/slurm/slurm.conf", "/etc/slurm/nodes.conf", "/etc/slurm/sub/more.conf"},
		},
		{
			name: "absolute path and Include=",
			files: map[string]string{
				"/etc/slurm/slurm.conf": "Include=/srv/conf/nodes.conf\n",
				"/srv/conf/nodes.conf":  "NodeName=n1\n",
			},
			wantNodes: []string{"nodes.conf:1 n1"},
			wantFiles: []string{"/etc/slurm/slurm.conf", "/srv/conf/nodes.conf"},
		},
		{
			name: "loop",
			files: map[string]string{
				"/etc/slurm/slurm.conf": "NodeName=n1\nInclude a.conf\n",
				"/etc/slurm/a.conf":     "NodeName=n2\nInclude ./slurm.conf\n",
			},
			wantNodes:    []string{"slurm.conf:1 n1", "a.conf:1 n2"},
			wantFiles:    []string{"/etc/slurm/slurm.conf", "/etc/slurm/a.conf"},
			wantProblems: []string{"error a.conf:2"},
		},
		{
			name:         "no file name",
			files:        map[string]string{"/etc/slurm/slurm.conf": "Include\n"},
			wantFiles:    []string{"/etc/slurm/slurm.conf"},
			wantProblems: []string{"error slurm.conf:1"},
		},
		{
			name:    "missing include is an error naming the line",
			files:   map[string]string{"/etc/slurm/slurm.conf": "\nInclude gone.conf\n"},
			wantErr: "/etc/slurm/slurm.conf:2: Include /etc/slurm/gone.conf",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := LoadSlurmConf("/etc/slurm/slurm.conf", mapFS(tc.files))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("error = %v, want one containing %q and wrapping fs.ErrNotExist", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range sc.Nodes {
				got = append(got, filepath.Base(n.Pos.File)+":"+fmt.Sprint(n.Pos.Line)+" "+n.Names.String())
			}
			if diff := cmp.Diff(tc.wantNodes, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFiles, sc.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problemLines(sc.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, sc.Problems)
			}
		})
	}
}

func TestLoadSlurmConfMissing(t *testing.T) {
	_, err := LoadSlurmConf("/nope/slurm.conf", mapFS(nil))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "read slurm.conf") {
		t.Errorf("error = %v, want a read error wrapping fs.ErrNotExist", err)
	}
}

// corpusNode is a node line of a corpus file, as its table expects it.
type corpusNode struct {
	Line     int
	Names    string
	Gres     string
	CPUs     int // CPUCount
	Features []string
}

type corpusSlurm struct {
	Nodes      []corpusNode
	Partitions []string // "name=nodes", "*" marks Default
	GresTypes  []string
	Problems   []string
	// Host maps a host name to the node NodeByHostname must find ("" = none).
	Host map[string]string
}

func summarizeSlurm(sc *SlurmConf, hosts []string) corpusSlurm {
	var s corpusSlurm
	for _, n := range sc.Nodes {
		cpus, _ := n.CPUCount()
		s.Nodes = append(s.Nodes, corpusNode{n.Pos.Line, n.Names.String(), gresText(n.Gres), cpus, n.Features})
	}
	for _, p := range sc.Partitions {
		d := ""
		if p.Default {
			d = "*"
		}
		s.Partitions = append(s.Partitions, p.Name+d+"="+p.Nodes)
	}
	s.GresTypes = sc.GresTypes
	s.Problems = problemLines(sc.Problems)
	if len(hosts) > 0 {
		s.Host = map[string]string{}
		for _, h := range hosts {
			s.Host[h], _ = sc.NodeByHostname(h)
		}
	}
	return s
}

// TestSlurmConfCorpus reads every slurm.conf under testdata/slurmconf: each real file and each
// one written for these tests has an entry, and the first line says where it comes from.
func TestSlurmConfCorpus(t *testing.T) {
	tests := []struct {
		file  string
		hosts []string
		want  corpusSlurm
	}{
		{file: "slurm-doc-gres-l3cache-node.conf", want: corpusSlurm{
			Nodes: []corpusNode{{Line: 6, Names: "node0", Gres: "gpu:a100:2", CPUs: 32}}}},
		{file: "slurm-doc-gres-mig-nodes.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 4, Names: "tux[1-16]", Gres: "gpu:a100:1,gpu:a100_3g.20gb:2", CPUs: 1}},
			GresTypes: []string{"gpu"}}},
		{file: "slurm-doc-gres-shard-nodes.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 4, Names: "tux[1-16]", Gres: "gpu:2,shard:64", CPUs: 1}},
			GresTypes: []string{"gpu", "shard"}}},
		{file: "slurm-doc-gres-slurmconf-mps-bandwidth.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 4, Names: "tux[0-7]", Gres: "gpu:tesla:2,gpu:kepler:2,mps:400,bandwidth:lustre:no_consume:4G", CPUs: 1}},
			GresTypes: []string{"gpu", "mps", "bandwidth"}}},
		{file: "slurm-doc-power-save-cloud-nodes.conf", hosts: []string{"tux5", "ec127.example.com", "tux128"}, want: corpusSlurm{
			Nodes: []corpusNode{
				{Line: 13, Names: "tux[0-127]", Gres: "(none)", CPUs: 8, Features: []string{"local"}},
				{Line: 14, Names: "ec[0-127]", Gres: "(none)", CPUs: 8, Features: []string{"cloud"}},
			},
			Partitions: []string{"debug*=tux[0-32]", "batch=tux[0-127],ec[0-127]"},
			// The page's HTML left "</pre>" at the end of the excerpt: Slurm would refuse it.
			Problems: []string{"error slurm-doc-power-save-cloud-nodes.conf:17"},
			Host:     map[string]string{"tux5": "tux5", "ec127.example.com": "ec127", "tux128": ""}}},
		{file: "slurm-doc-slurmd-C-l3cache.txt", want: corpusSlurm{
			Nodes:    []corpusNode{{Line: 3, Names: "node0", Gres: "gpu:nvidia_a100-pcie-40gb:2", CPUs: 32}},
			Problems: []string{"error slurm-doc-slurmd-C-l3cache.txt:2"}}},
		{file: "slurm-etc-slurm.conf.example", hosts: []string{"linux32", "linux0"}, want: corpusSlurm{
			Nodes:      []corpusNode{{Line: 154, Names: "linux[1-32]", Gres: "(none)", CPUs: 1}},
			Partitions: []string{"debug*=ALL"},
			Host:       map[string]string{"linux32": "linux32", "linux0": ""}}},
		{file: "slurm-man-slurmconf-example-dev0-25.conf", hosts: []string{"dev20", "edev20"}, want: corpusSlurm{
			Nodes:      []corpusNode{{Line: 36, Names: "dev[0-25]", Gres: "(none)", CPUs: 2}},
			Partitions: []string{"debug*=dev[0-8,18-25]", "batch=dev[9-17]", "long=dev[9-17]"},
			// NodeAddr is an address, not a host name: edev20 is not a node's host name.
			Host: map[string]string{"dev20": "dev20", "edev20": ""}}},
		{file: "slurm-testsuite-7.17.1-slurm.conf", hosts: []string{"localhost", "test_node3"}, want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 13, Names: "test_node[0-9]", Gres: "gpu:8", CPUs: 8}},
			GresTypes: []string{"gpu"},
			Host:      map[string]string{"localhost": "", "test_node3": "test_node3"}}},
		{file: "slurm-testsuite-7.17.3-slurm.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 12, Names: "test_node[0-9]", Gres: "gpu:8", CPUs: 16}},
			GresTypes: []string{"gpu"}}},
		{file: "slurm-testsuite-7.17.6-nogrestypes-slurm.conf", want: corpusSlurm{
			Nodes: []corpusNode{{Line: 12, Names: "test_node[0-9]", Gres: "(none)", CPUs: 8}}}},
		{file: "slurm-testsuite-7.17.7-slurm.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 12, Names: "test_node[0-9]", Gres: "gpu:8", CPUs: 8}},
			GresTypes: []string{"gpu"}}},
		{file: "nodecheck-doc-gres-2types.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node0", Gres: "gpu:gp100:2,gpu:p6000:2,mps:400,shard:32", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "shard"}}},
		{file: "nodecheck-doc-gres-4types.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node0", Gres: "gpu:gtx1080:1,gpu:gtx1070:1,gpu:gtx1060:1,gpu:gtx1050:1,mps:4600,shard:32", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "shard"}}},
		{file: "nodecheck-man-gres-bandwidth.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "tux[0-7]", Gres: "bandwidth:lustre:no_consume:4G", CPUs: 1}},
			GresTypes: []string{"bandwidth"}}},
		{file: "nodecheck-man-gres-tux-typed.conf", want: corpusSlurm{
			Nodes: []corpusNode{
				{Line: 3, Names: "tux[0-1]", Gres: "gpu:gtx560:1,gpu:tesla:1,mps:200", CPUs: 4},
				{Line: 4, Names: "tux2", Gres: "gpu:tesla:3", CPUs: 4},
			},
			GresTypes: []string{"gpu", "mps"}}},
		{file: "nodecheck-man-gres-tux16.conf", want: corpusSlurm{
			Nodes: []corpusNode{
				{Line: 3, Names: "tux[0-2,4-15]", Gres: "gpu:4", CPUs: 16},
				{Line: 4, Names: "tux3", Gres: "gpu:3", CPUs: 16},
			},
			Partitions: []string{"gpu*=tux[0-15]"},
			GresTypes:  []string{"gpu"}}},
		{file: "nodecheck-man-gres-tux16-pending.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "tux[0-15]", Gres: "gpu:4", CPUs: 16}},
			GresTypes: []string{"gpu"}}},
		{file: "nodecheck-test39.18-a59.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node1", Gres: "gpu:tesla:2,gpu:gtx:1", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "nic", "mic", "tmpdisk"}}},
		{file: "nodecheck-test39.18-b4.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node1", Gres: "gpu:ti:3,gpu:gtx:3", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "nic", "mic", "tmpdisk"}}},
		{file: "nodecheck-test39.18-b5.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node1", Gres: "gpu:a100:8", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "nic", "mic", "tmpdisk"}}},
		{file: "nodecheck-test39.18-c10.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node1", Gres: "gpu:tesla:8", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "nic", "mic", "tmpdisk"}}},
		{file: "csua-slurm-docker-cluster-slurm.conf", want: corpusSlurm{
			Nodes:      []corpusNode{{Line: 93, Names: "c[1-7]", Gres: "gpu:1", CPUs: 4, Features: []string{"P100"}}},
			Partitions: []string{"normal*=c[1-7]"},
			GresTypes:  []string{"gpu"},
			// CacheGroups= left Slurm in 21.08: 22.05 and later refuse the file.
			Problems: []string{"error csua-slurm-docker-cluster-slurm.conf:27"}}},
		{file: "nodecheck-test39.18-c18.conf", want: corpusSlurm{
			Nodes:     []corpusNode{{Line: 3, Names: "node1", Gres: "gpu:tesla:2", CPUs: 4}},
			GresTypes: []string{"gpu", "mps", "nic", "mic", "tmpdisk"}}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "slurmconf", tc.file)
			sc, err := LoadSlurmConf(path, os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarizeSlurm(sc, tc.hosts), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s\nproblems: %v", diff, sc.Problems)
			}
		})
	}
	checkCorpusDir(t, filepath.Join("testdata", "slurmconf"), seen)
}

// checkCorpusDir fails for a file of dir that has no table entry or no source line.
func checkCorpusDir(t *testing.T, dir string, seen map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if !seen[e.Name()] {
			missing = append(missing, e.Name())
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if !strings.HasPrefix(first, "# source: ") && !strings.HasPrefix(first, "# written for nodecheck's tests") {
			t.Errorf("%s: first line %q says neither where the file comes from (# source: ...) nor that it was written for the tests", e.Name(), first)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("files in %s without a table entry: %v", dir, missing)
	}
}

func TestNodeLookup(t *testing.T) {
	in := "NodeName=gpu[01-04] Gres=gpu:h100:8\nNodeName=dgx[1-2] NodeHostname=host-a,host-b NodeAddr=10.0.0.[1-2]\nNodeName=DEFAULT CPUs=4\nNodeName=cpu1\n"
	sc, err := ParseSlurmConf([]byte(in), "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeTests := []struct {
		name     string
		wantLine int
		wantOK   bool
		wantGPUs uint64
	}{
		{name: "gpu03", wantLine: 1, wantOK: true, wantGPUs: 8},
		{name: "dgx2", wantLine: 2, wantOK: true},
		{name: "cpu1", wantLine: 4, wantOK: true},
		{name: "gpu05"},
		{name: "host-a"},
	}
	for _, tc := range nodeTests {
		t.Run("Node "+tc.name, func(t *testing.T) {
			n, ok := sc.Node(tc.name)
			if ok != tc.wantOK || n.Pos.Line != tc.wantLine || n.GPUCount() != tc.wantGPUs {
				t.Errorf("Node(%q) = line %d, gpus %d, %v; want line %d, gpus %d, %v", tc.name, n.Pos.Line, n.GPUCount(), ok, tc.wantLine, tc.wantGPUs, tc.wantOK)
			}
		})
	}
	hostTests := []struct {
		host, want string
	}{
		{host: "gpu02", want: "gpu02"},
		{host: "gpu02.cluster.example", want: "gpu02"},
		{host: "host-b", want: "dgx2"},
		{host: "host-a.example", want: "dgx1"},
		{host: "dgx1", want: ""}, // its host name is host-a
		{host: "10.0.0.1", want: ""},
		{host: "", want: ""},
	}
	for _, tc := range hostTests {
		t.Run("NodeByHostname "+tc.host, func(t *testing.T) {
			got, ok := sc.NodeByHostname(tc.host)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("NodeByHostname(%q) = %q, %v; want %q", tc.host, got, ok, tc.want)
			}
		})
	}
}

func sliceHas(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func ExampleParseSlurmConf() {
	conf := `GresTypes=gpu
NodeName=DEFAULT CPUs=64 RealMemory=512000
NodeName=gpu[01-04] Gres=gpu:h100:8 Feature=h100,nvlink
PartitionName=gpu Nodes=gpu[01-04] Default=YES
`
	sc, err := ParseSlurmConf([]byte(conf), "slurm.conf", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _ := sc.Node("gpu03")
	fmt.Println(n.Pos, n.Names, n.CPUs, n.RealMemory, n.GPUCount(), n.Features)
	fmt.Println(sc.Partitions[0].Name, sc.Partitions[0].Nodes, len(sc.Problems))
	// Output:
	// slurm.conf:3 gpu[01-04] 64 512000 8 [h100 nvlink]
	// gpu gpu[01-04] 0
}

func ExampleParseGresSpec() {
	gres, err := ParseGresSpec("gpu:h100:8,mps:400,bandwidth:lustre:no_consume:4G")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range gres {
		fmt.Printf("%s type=%q count=%d no_consume=%v\n", g.Name, g.Type, g.Count, g.NoConsume)
	}
	// Output:
	// gpu type="h100" count=8 no_consume=false
	// mps type="" count=400 no_consume=false
	// bandwidth type="lustre" count=4294967296 no_consume=true
}

func FuzzParseSlurmConf(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "slurmconf"))
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join("testdata", "slurmconf", e.Name())); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("NodeName=a[1-3] NodeHostname=h[1-3] Gres=gpu:2 \\\n CPUs=4\nInclude x.conf\n"))
	f.Add([]byte("NodeName=DEFAULT Gres=\"gpu:1\"\nNodeName=n\\#1 Reason=\"a # b\nPartitionName=p Nodes=n[1-"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every Include reads the same bytes again: that exercises loops and depth too.
		read := func(string) ([]byte, error) { return data, nil }
		sc, err := ParseSlurmConf(data, "/etc/slurm/slurm.conf", read)
		if err != nil {
			return
		}
		for _, p := range sc.Problems {
			if p.Line <= 0 || p.File == "" {
				t.Fatalf("problem without a position: %+v", p)
			}
		}
		for _, n := range sc.Nodes {
			n.GPUCount()
			n.CPUCount()
			sc.Node(n.Names.String())
		}
		sc.NodeByHostname("a1.example")
	})
}

func FuzzParseGresSpec(f *testing.F) {
	for _, s := range []string{"gpu:h100:8,gpu:a100:2", "gpu:8", "gpu:tesla:2,mps:400,bandwidth:lustre:no_consume:4G", "gpu:a100_3g.20gb:2", "tmpdisk:10g", "gpu:1(S:0)", ":", ",", "gpu:99999999999999999999P", "0, 00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGresSpec(s)
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.Name == "" {
				t.Fatalf("ParseGresSpec(%q) gave an element without a name: %+v", s, gs)
			}
			// What String prints must read back as the same element.
			back, err := ParseGresSpec(g.String())
			if err != nil || len(back) != 1 || back[0] != g {
				if g.Type != "" && confStartsWithDigit(g.Type) && !strings.Contains(g.Type, ":") {
					continue // "gpu:1080:3" prints back fine; types that parse as counts cannot
				}
				t.Fatalf("ParseGresSpec(%q) = %+v; String %q reads back as %+v, %v", s, g, g.String(), back, err)
			}
		}
	})
}
