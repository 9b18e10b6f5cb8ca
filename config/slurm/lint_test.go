package slurm

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// problemSummary is "severity file:line nodes", enough to tell problems apart in a table.
func problemSummary(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s:%d %s", p.Severity, filepath.Base(p.File), p.Line, p.Nodes))
	}
	return out
}

func lintFiles(t *testing.T, slurm, gres string) Report {
	t.Helper()
	sc, err := LoadSlurmConf(filepath.Join("testdata", "slurmconf", slurm), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	var gc *GresConf
	if gres != "" {
		if gc, err = LoadGresConf(filepath.Join("testdata", "gres", gres), os.ReadFile); err != nil {
			t.Fatal(err)
		}
	}
	return Lint(sc, gc, withoutPitfalls()) // TestPitfallsCorpus lints the same files for those
}

// TestLintCorpus lints each gres.conf fixture with a slurm.conf for its nodes, and checks the
// problems against what Slurm itself reports for them (testsuite test39.18 and test7.17).
func TestLintCorpus(t *testing.T) {
	tests := []struct {
		name         string
		slurm, gres  string
		wantProblems []string
		wantNotes    []string
	}{
		{
			// test39.18 0.59 expects 5 "more configured than expected" warnings: tesla[0-4]
			// (3 over), tesla5, special, nic, tmpdisk. slurmd truncates and carries on.
			name: "39.18 0.59 over-specified gres.conf", slurm: "nodecheck-test39.18-a59.conf", gres: "slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf",
			wantProblems: []string{
				"warning slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf:3 node1",
				"warning slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf:4 node1",
				"warning slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf:5 node1",
				"warning slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf:7 node1",
				"warning slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf:8 node1",
			},
		},
		{
			// test39.18 1.4 expects 3 Cores/Links mismatches against the detected GPUs: two come
			// from one Links= on a three-file line, which lint sees; the third (nvidia0's
			// Cores=0 against the hardware's 0-1) needs the hardware.
			name: "39.18 1.4 Links on a multi-file line", slurm: "nodecheck-test39.18-b4.conf", gres: "slurm-testsuite-39.18-b4-links-mismatch.conf",
			wantProblems: []string{"error slurm-testsuite-39.18-b4-links-mismatch.conf:5 "},
		},
		{name: "39.18 1.5 eight a100 with links", slurm: "nodecheck-test39.18-b5.conf", gres: "slurm-testsuite-39.18-b5-a100x8-links.conf"},
		{name: "39.18 2.10 link islands", slurm: "nodecheck-test39.18-c10.conf", gres: "slurm-testsuite-39.18-c10-links-topology.conf"},
		{
			// test39.18 2.18 expects one "no type name" error and one GPU left; with
			// slurm.conf's gpu:tesla:2 that node would register short and go INVAL.
			name: "39.18 2.18 line without Name", slurm: "nodecheck-test39.18-c18.conf", gres: "slurm-testsuite-39.18-c18-missing-name.conf",
			wantProblems: []string{
				"error nodecheck-test39.18-c18.conf:3 node1",
				"error slurm-testsuite-39.18-c18-missing-name.conf:4 node1",
			},
		},
		// test7.17's files pass in the testsuite because its program loads gres.conf without
		// slurmd's core conversion and bounds Cores= by a CPU count it is given; slurmd
		// counts Cores= in cores (Sockets × CoresPerSocket of these slurm.conf files) and logs
		// "Invalid GRES data" for the second half of each, as it did here for Cores=1 on a
		// node of one core and two threads.
		{name: "7.17.1 bracketed Cores", slurm: "slurm-testsuite-7.17.1-slurm.conf", gres: "slurm-testsuite-7.17.1.conf",
			wantProblems: []string{"warning slurm-testsuite-7.17.1.conf:6 test_node[0-9]"}},
		{name: "7.17.2 Cores lists", slurm: "slurm-testsuite-7.17.3-slurm.conf", gres: "slurm-testsuite-7.17.2.conf",
			wantProblems: []string{"warning slurm-testsuite-7.17.2.conf:6 test_node[0-9]"}},
		{name: "7.17.3 one line per file", slurm: "slurm-testsuite-7.17.3-slurm.conf", gres: "slurm-testsuite-7.17.3.conf",
			wantProblems: []string{
				"warning slurm-testsuite-7.17.3.conf:9 test_node[0-9]",
				"warning slurm-testsuite-7.17.3.conf:10 test_node[0-9]",
				"warning slurm-testsuite-7.17.3.conf:11 test_node[0-9]",
				"warning slurm-testsuite-7.17.3.conf:12 test_node[0-9]",
			}},
		{name: "7.17.4 no Cores", slurm: "slurm-testsuite-7.17.3-slurm.conf", gres: "slurm-testsuite-7.17.4.conf"},
		{
			// test7.17.6 expects failure: gres.conf defines GPUs, GresTypes is commented out.
			name: "7.17.6 GresTypes commented out", slurm: "slurm-testsuite-7.17.6-nogrestypes-slurm.conf", gres: "slurm-testsuite-7.17.6.conf",
			wantProblems: []string{
				"error slurm-testsuite-7.17.6.conf:5 ",
				"warning slurm-testsuite-7.17.6.conf:5 test_node[0-9]",
				"error slurm-testsuite-7.17.6.conf:6 ",
				"warning slurm-testsuite-7.17.6.conf:6 test_node[0-9]",
				"warning slurm-testsuite-7.17.6.conf:6 test_node[0-9]",
			},
		},
		{
			// test7.17.7 expects a fatal error from its program for Cores=[0-10000] on 8 CPUs;
			// slurmd, counting 4 cores, logs an error for both lines and goes on.
			name: "7.17.7 Cores beyond the node", slurm: "slurm-testsuite-7.17.7-slurm.conf", gres: "slurm-testsuite-7.17.7.conf",
			wantProblems: []string{"warning slurm-testsuite-7.17.7.conf:5 test_node[0-9]", "warning slurm-testsuite-7.17.7.conf:6 test_node[0-9]"},
		},
		{name: "man 3: one GPU out of service, counted", slurm: "nodecheck-man-gres-tux16.conf", gres: "slurm-man-single-file-positive-nodename-ranges.conf"},
		{
			name: "man 3: one GPU out of service, slurm.conf not updated", slurm: "nodecheck-man-gres-tux16-pending.conf", gres: "slurm-man-single-file-positive-nodename-ranges.conf",
			wantProblems: []string{"error nodecheck-man-gres-tux16-pending.conf:3 tux3"},
		},
		{
			name: "man 4: AutoDetect except one node", slurm: "nodecheck-man-gres-tux16.conf", gres: "slurm-man-autodetect-except-one-node.conf",
			wantProblems: []string{"warning slurm-man-autodetect-except-one-node.conf:8 tux3"},
			wantNotes:    []string{"info slurm-man-autodetect-except-one-node.conf:7 tux[0-2,4-15]"},
		},
		{
			name: "man 5: nvml, rsmi and explicit nodes", slurm: "nodecheck-man-gres-tux16.conf", gres: "slurm-man-mixed-nvml-rsmi-nodes.conf",
			wantNotes: []string{
				"info slurm-man-mixed-nvml-rsmi-nodes.conf:6 tux[0-2,4-7]",
				"info slurm-man-mixed-nvml-rsmi-nodes.conf:6 tux3",
				"info slurm-man-mixed-nvml-rsmi-nodes.conf:7 tux[8-11]",
			},
		},
		{
			name: "man 1: AutoDetect with MPS", slurm: "nodecheck-man-gres-tux-typed.conf", gres: "slurm-man-autodetect-nvml-mps.conf",
			wantProblems: []string{
				"warning slurm-man-autodetect-nvml-mps.conf:7 tux2",
				"warning slurm-man-autodetect-nvml-mps.conf:9 tux2",
				"warning slurm-man-autodetect-nvml-mps.conf:10 tux2",
			},
			wantNotes: []string{
				"info slurm-man-autodetect-nvml-mps.conf:6 tux2",
				"info slurm-man-autodetect-nvml-mps.conf:6 tux[0-1]",
			},
		},
		{
			name: "man 2: three teslas", slurm: "nodecheck-man-gres-tux-typed.conf", gres: "slurm-man-explicit-three-gpus-commented.conf",
			wantProblems: []string{
				"error nodecheck-man-gres-tux-typed.conf:3 tux[0-1]",
				"warning slurm-man-explicit-three-gpus-commented.conf:6 tux[0-1]",
				"warning slurm-man-explicit-three-gpus-commented.conf:9 tux[0-1]",
			},
		},
		{name: "man 6: bandwidth CountOnly", slurm: "nodecheck-man-gres-bandwidth.conf", gres: "slurm-man-bandwidth-countonly.conf"},
		{name: "gres.shtml MPS example 1", slurm: "nodecheck-doc-gres-2types.conf", gres: "slurm-doc-gres-mps-example1.conf", wantNotes: []string{"info slurm-doc-gres-mps-example1.conf:4 node0"}},
		{name: "gres.shtml shard example 1", slurm: "nodecheck-doc-gres-2types.conf", gres: "slurm-doc-gres-shard-example1.conf", wantNotes: []string{"info slurm-doc-gres-shard-example1.conf:4 node0"}},
		{name: "gres.shtml MPS example 2", slurm: "nodecheck-doc-gres-4types.conf", gres: "slurm-doc-gres-mps-example2-4types.conf", wantNotes: []string{"info slurm-doc-gres-mps-example2-4types.conf:4 node0"}},
		{name: "gres.shtml shard example 2", slurm: "nodecheck-doc-gres-4types.conf", gres: "slurm-doc-gres-shard-example2.conf", wantNotes: []string{"info slurm-doc-gres-shard-example2.conf:4 node0"}},
		{
			// The page's slurm.conf and gres.conf examples disagree on types and MPS.
			name: "gres.shtml first example, both halves", slurm: "slurm-doc-gres-slurmconf-mps-bandwidth.conf", gres: "slurm-doc-gres-mps-bandwidth.conf",
			wantProblems: []string{
				"warning slurm-doc-gres-mps-bandwidth.conf:4 tux[0-7]",
				"warning slurm-doc-gres-mps-bandwidth.conf:5 tux[0-7]",
				"warning slurm-doc-gres-mps-bandwidth.conf:6 tux[0-7]",
				"warning slurm-doc-gres-mps-bandwidth.conf:7 tux[0-7]",
				"warning slurm-doc-gres-mps-bandwidth.conf:10 tux[0-7]",
				"warning slurm-doc-gres-mps-bandwidth.conf:11 tux[0-7]",
			},
			wantNotes: []string{
				"info slurm-doc-gres-mps-bandwidth.conf:3 tux[0-7]",
				"info slurm-doc-gres-mps-bandwidth.conf:3 tux[0-7]",
			},
		},
		{
			// Sharding section: slurm.conf says shard:64, gres.conf's example 1 gives 32.
			name: "gres.shtml sharding, both halves", slurm: "slurm-doc-gres-shard-nodes.conf", gres: "slurm-doc-gres-shard-example1.conf",
			wantProblems: []string{
				"error slurm-doc-gres-shard-nodes.conf:4 tux[1-16]",
				"warning slurm-doc-gres-shard-example1.conf:5 tux[1-16]",
				"warning slurm-doc-gres-shard-example1.conf:6 tux[1-16]",
				"warning slurm-doc-gres-shard-example1.conf:7 tux[1-16]",
				"warning slurm-doc-gres-shard-example1.conf:8 tux[1-16]",
			},
			wantNotes: []string{"info slurm-doc-gres-shard-example1.conf:4 tux[1-16]"},
		},
		{
			// The excerpt has no GresTypes, so both halves are refused as they stand; and
			// node0 has 8 sockets of 2 cores, so the manual Cores=16-31 names cores it lacks.
			name: "gres.shtml manual cores, both halves", slurm: "slurm-doc-gres-l3cache-node.conf", gres: "slurm-doc-gres-autodetect-off-manual-cores.conf",
			wantProblems: []string{
				"error slurm-doc-gres-l3cache-node.conf:6 node0",
				"error slurm-doc-gres-autodetect-off-manual-cores.conf:3 node0",
				"error slurm-doc-gres-autodetect-off-manual-cores.conf:4 node0",
				"warning slurm-doc-gres-autodetect-off-manual-cores.conf:4 node0",
			},
		},
		{
			// Issue 12 item 8: CPUs=0-3 on nodes of 2 cores (Sockets=1 CoresPerSocket=2
			// ThreadsPerCore=2, 4 CPUs). Every line names cores beyond the second; the first
			// alone applies to gpu:1 and the other seven are extra.
			name: "CSUA docker cluster: CPUs= counts cores", slurm: "csua-slurm-docker-cluster-slurm.conf", gres: "csua-slurm-docker-cluster-gres.conf",
			wantProblems: []string{
				"error csua-slurm-docker-cluster-slurm.conf:27 ", // CacheGroups=, which Slurm dropped in 21.08
				"warning csua-slurm-docker-cluster-gres.conf:2 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:3 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:3 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:4 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:4 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:5 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:5 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:6 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:6 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:7 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:7 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:8 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:8 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:9 c[1-7]",
				"warning csua-slurm-docker-cluster-gres.conf:9 c[1-7]",
			},
		},
		{name: "MIG with MultipleFiles", slurm: "slurm-doc-gres-mig-nodes.conf", gres: "nodecheck-mig-multiplefiles.conf"},
		{
			name: "no gres.conf for configured GPUs", slurm: "slurm-doc-slurmd-C-l3cache.txt",
			wantProblems: []string{
				"error slurm-doc-slurmd-C-l3cache.txt:2 ",
				"error slurm-doc-slurmd-C-l3cache.txt:3 node0",
				"error slurm-doc-slurmd-C-l3cache.txt:3 node0",
			},
		},
		{name: "slurm.conf.example, no GRES", slurm: "slurm-etc-slurm.conf.example"},
		{name: "slurm.conf(5) example", slurm: "slurm-man-slurmconf-example-dev0-25.conf"},
		{name: "power save excerpt", slurm: "slurm-doc-power-save-cloud-nodes.conf", wantProblems: []string{"error slurm-doc-power-save-cloud-nodes.conf:17 "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := lintFiles(t, tc.slurm, tc.gres)
			if diff := cmp.Diff(tc.wantProblems, problemSummary(r.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%s", diff, dumpProblems(r.Problems))
			}
			if diff := cmp.Diff(tc.wantNotes, problemSummary(r.Notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s\n%s", diff, dumpProblems(r.Notes))
			}
		})
	}
}

func dumpProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// TestLintChecks covers each check with a small inline pair of files.
func TestLintChecks(t *testing.T) {
	tests := []struct {
		name        string
		slurm, gres string // gres "-" means no gres.conf
		want        []string
		wantMsg     []string // each is part of some problem message
	}{
		{
			name:  "the PENDING bug: fewer files than Gres= says",
			slurm: "GresTypes=gpu\n\n\n\n\n\n\n\n\n\n\nNodeName=gpu[01-04] Gres=gpu:8\nNodeName=gpu[05-08] Gres=gpu:8\n",
			gres:  "\n\nNodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-3]\nNodeName=gpu[01-04] Name=gpu File=/dev/nvidia[4-5]\nNodeName=gpu[05-08] Name=gpu File=/dev/nvidia[0-7]\n",
			want:  []string{"error slurm.conf:12 gpu[01-04]"},
			wantMsg: []string{
				"slurm.conf:12 says gpu:8 for gpu[01-04] but gres.conf lines 3-4 give 6 files: each node registers with fewer, slurmctld marks it INVAL and jobs stay PENDING: add File= entries or set Gres=gpu:6",
			},
		},
		{
			name:    "typed slurm.conf, untyped gres.conf",
			slurm:   "GresTypes=gpu\nNodeName=n[1-2] Gres=gpu:h100:8\n",
			gres:    "Name=gpu File=/dev/nvidia[0-7]\n",
			want:    []string{"error slurm.conf:2 n[1-2]", "warning gres.conf:1 n[1-2]"},
			wantMsg: []string{"no gres.conf line for them has Type=h100 (gres.conf:1)", "add Type= to this line"},
		},
		{
			name:    "untyped slurm.conf, typed gres.conf",
			slurm:   "GresTypes=gpu\nNodeName=n1 Gres=gpu:8\n",
			gres:    "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n",
			want:    []string{"warning gres.conf:1 n1"},
			wantMsg: []string{"write the type in slurm.conf (gpu:h100:N)"},
		},
		{
			name:    "GPUs and no gres.conf",
			slurm:   "GresTypes=gpu\nNodeName=n[1-4] Gres=gpu:h100:4\n",
			gres:    "-",
			want:    []string{"error slurm.conf:2 n[1-4]"},
			wantMsg: []string{"there is no gres.conf and AutoDetect is not set", "`NodeName=n[1-4] Name=gpu Type=h100 File=/dev/nvidia[0-3]`"},
		},
		{
			name:  "GPUs with global AutoDetect and no lines",
			slurm: "GresTypes=gpu\nNodeName=n[1-4] Gres=gpu:4\nNodeName=cpu1\n",
			gres:  "AutoDetect=nvml\n",
			want:  nil,
		},
		{
			name:    "duplicate device files",
			slurm:   "GresTypes=gpu\nNodeName=n1 Gres=gpu:tesla:6\n",
			gres:    "Name=gpu Type=tesla File=/dev/nvidia3\nName=gpu Type=tesla File=/dev/nvidia3\nName=gpu Type=tesla File=/dev/nvidia[3-4]\n",
			want:    []string{"error slurm.conf:2 n1", "error gres.conf:2 n1", "error gres.conf:3 n1"},
			wantMsg: []string{"gres.conf:2 gpu repeats /dev/nvidia3 from gres.conf:1", "gres.conf:3 gpu repeats /dev/nvidia3 from gres.conf:1"},
		},
		{
			name:    "some lines typed, some not",
			slurm:   "GresTypes=gpu\nNodeName=n1 Gres=gpu:tesla:2,gpu:v100:2\n",
			gres:    "Name=gpu File=/dev/nvidia[0-1]\nName=gpu Type=v100 File=/dev/nvidia[2-3]\n",
			want:    []string{"error slurm.conf:2 n1", "warning gres.conf:1 n1", "error gres.conf:2 n1"},
			wantMsg: []string{"gres.conf:2 has Type=v100 but gres.conf:1 has Name=gpu without Type= for n1", "some records have \"Type=\" specification while others do not"},
		},
		{
			name:    "some lines with files, some not",
			slurm:   "GresTypes=gpu\nNodeName=n1 Gres=gpu:tesla:2,gpu:v100:2\n",
			gres:    "Name=gpu Type=tesla File=/dev/nvidia[0-1]\nName=gpu Type=v100\n",
			want:    []string{"error slurm.conf:2 n1", "error gres.conf:2 n1"},
			wantMsg: []string{"gres.conf:2 gives Name=gpu without File= but gres.conf:1 gives it with File= for n1", "some records have \"File\" specification while others do not"},
		},
		{
			name:    "count-only record twice",
			slurm:   "GresTypes=mps\nNodeName=n1 Gres=mps:400\n",
			gres:    "Name=mps Count=200\nName=mps Count=200\n",
			want:    []string{"error gres.conf:2 n1"},
			wantMsg: []string{"duplicate records"},
		},
		{
			name:    "gres.conf line for no node, and for some unknown",
			slurm:   "GresTypes=gpu\nNodeName=tux[0-7] Gres=gpu:4\n",
			gres:    "NodeName=tux[0-7] Name=gpu File=/dev/nvidia[0-3]\nNodeName=tux[16-19] Name=gpu File=/dev/nvidia[0-3]\nNodeName=tux[6-9] AutoDetect=off\n",
			want:    []string{"warning gres.conf:2 tux[16-19]", "warning gres.conf:3 tux[8-9]"},
			wantMsg: []string{"NodeName=tux[16-19] matches no node in slurm.conf", "NodeName=tux[6-9] names 2 hosts that slurm.conf does not define (tux[8-9])"},
		},
		{
			name:    "node-local AutoDetect contradicts itself",
			slurm:   "GresTypes=gpu\nNodeName=n[1-4] Gres=gpu:4\n",
			gres:    "NodeName=n[1-2] AutoDetect=nvml\nNodeName=n[2-3] AutoDetect=off\nName=gpu File=/dev/nvidia[0-3]\n",
			want:    []string{"error gres.conf:2 n2"},
			wantMsg: []string{"contradicts AutoDetect=nvml at gres.conf:1"},
		},
		{
			name:    "GresTypes missing a name used in slurm.conf",
			slurm:   "# GresTypes=gpu,mps\nGresTypes=gpu\nNodeName=DEFAULT Gres=gpu:2,mps:100\nNodeName=n[1-2]\nNodeName=n[3-4]\n",
			gres:    "Name=gpu File=/dev/nvidia[0-1]\n",
			want:    []string{"error slurm.conf:3 n[1-4]"},
			wantMsg: []string{"Gres=gpu:2,mps:100 uses mps, but GresTypes=gpu at slurm.conf:2"},
		},
		{
			name:    "typed and untyped in one Gres=",
			slurm:   "GresTypes=gpu\nNodeName=n1 Gres=gpu:tesla:1,gpu:1\n",
			gres:    "-",
			want:    []string{"error slurm.conf:2 n1", "error slurm.conf:2 n1", "error slurm.conf:2 n1"},
			wantMsg: []string{"both with and without a type"},
		},
		{
			name:    "duplicate node names",
			slurm:   "NodeName=n[1-4]\nNodeName=n[3-5]\nNodeName=n4\n",
			gres:    "-",
			want:    []string{"error slurm.conf:2 n[3-4]", "error slurm.conf:3 n4"},
			wantMsg: []string{"slurm.conf:2 n[3-4] defined again: slurm.conf:1 already defines them"},
		},
		{
			name:    "partition with undefined nodes",
			slurm:   "NodeName=n[1-4]\nNodeSet=gpus Feature=gpu\nPartitionName=a Nodes=n[1-6],gpus\nPartitionName=b Nodes=ALL\nPartitionName=c Nodes=n[1-\n",
			gres:    "-",
			want:    []string{"error slurm.conf:3 n[5-6]", "error slurm.conf:5 "},
			wantMsg: []string{"PartitionName=a Nodes= names 2 hosts that slurm.conf does not define (n[5-6])"},
		},
		{
			name:    "over-count on CPU-only nodes is one warning",
			slurm:   "GresTypes=gpu\nNodeName=gpu[1-2] Gres=gpu:4\nNodeName=login[1-2]\n",
			gres:    "Name=gpu File=/dev/nvidia[0-3]\n",
			want:    []string{"warning gres.conf:1 login[1-2]"},
			wantMsg: []string{"gres.conf:1 gives 4 gpu to login[1-2], but slurm.conf:3 configures no gpu for them (it has no Gres=)"},
		},
		{
			name:  "Cores within the cores Slurm derives",
			slurm: "GresTypes=gpu\nNodeName=n1 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:2\n",
			gres:  "Name=gpu File=/dev/nvidia0 Cores=0-3\nName=gpu File=/dev/nvidia1 Cores=4-8\n",
			want:  []string{"warning gres.conf:2 n1"},
		},
		{
			// Seen on slurmd 22.05.8: "error: Invalid GRES data for gpu, Cores=1" for the
			// second line, nothing for the first.
			name:  "Cores count cores, not threads",
			slurm: "GresTypes=gpu\nNodeName=n1 CPUs=2 Sockets=1 CoresPerSocket=1 ThreadsPerCore=2 Gres=gpu:2\n",
			gres:  "Name=gpu File=/dev/nvidia0 CPUs=0\nName=gpu File=/dev/nvidia1 Cores=1\n",
			want:  []string{"warning gres.conf:2 n1"},
		},
		{
			// Only CPUs=: Slurm takes one core a socket and a thread a core, so 16 cores.
			name:  "CPUs alone are cores",
			slurm: "GresTypes=gpu\nNodeName=n1 CPUs=16 Gres=gpu:2\nNodeName=n2 CPUs=16 ThreadsPerCore=2 Gres=gpu:2\n",
			gres:  "Name=gpu File=/dev/nvidia0 Cores=0-7\nName=gpu File=/dev/nvidia1 Cores=8-15\n",
			want:  []string{"warning gres.conf:2 n2"},
		},
		{
			// CPU numbers of one socket each: the fix keeps the NUMA split, each GPU its
			// socket's cores (Cores=0-39 for both would lose it).
			name:  "CPU numbers per socket: the fix is per socket",
			slurm: "GresTypes=gpu\nNodeName=g1 Sockets=2 CoresPerSocket=20 ThreadsPerCore=2 Gres=gpu:2\n",
			gres:  "Name=gpu File=/dev/nvidia0 CPUs=0-19,40-59\nName=gpu File=/dev/nvidia1 CPUs=20-39,60-79\n",
			want:  []string{"warning gres.conf:1 g1", "warning gres.conf:2 g1"},
			wantMsg: []string{"gres.conf:1 CPUs=0-19,40-59 names core 59, but slurm.conf:2 gives g1 40 cores (Sockets=2 CoresPerSocket=20 ThreadsPerCore=2); CPUs= counts cores, not CPUs: slurmd logs \"error: Invalid GRES data for gpu, CPUs=0-19,40-59\" and goes on with the line's gpu bound to no core (an error, not fatal, in Slurm 22.05 and later): use Cores=0-19: as CPU numbers, CPUs=0-19,40-59 are cores 0-19",
				"gres.conf:2 CPUs=20-39,60-79 names core 79, but slurm.conf:2 gives g1 40 cores (Sockets=2 CoresPerSocket=20 ThreadsPerCore=2); CPUs= counts cores, not CPUs: slurmd logs \"error: Invalid GRES data for gpu, CPUs=20-39,60-79\" and goes on with the line's gpu bound to no core (an error, not fatal, in Slurm 22.05 and later): use Cores=20-39: as CPU numbers"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			var gc *GresConf
			if tc.gres != "-" {
				if gc, err = ParseGresConf([]byte(tc.gres), "gres.conf", nil); err != nil {
					t.Fatal(err)
				}
			}
			r := Lint(sc, gc, withoutPitfalls())
			if diff := cmp.Diff(tc.want, problemSummary(r.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%s", diff, dumpProblems(r.Problems))
			}
			for _, w := range tc.wantMsg {
				if !strings.Contains(dumpProblems(r.Problems), w) {
					t.Errorf("no problem message contains %q:\n%s", w, dumpProblems(r.Problems))
				}
			}
		})
	}
}

// TestLintGroups checks that a problem shared by thousands of nodes is one problem with their
// hostlist, and that nodes come out in slurm.conf order with their own files.
func TestLintGroups(t *testing.T) {
	slurm, gres := generateCluster(4096, 32, func(rack int) int {
		if rack%2 == 1 && rack < 20 {
			return 7 // odd racks below 20 lost a GPU in gres.conf
		}
		return 8
	})
	sc, err := ParseSlurmConf(slurm, "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := ParseGresConf(gres, "gres.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Lint(sc, gc)
	if len(r.Nodes) != 4096 || r.Nodes[0].Name != "gpu00001" || r.Nodes[4095].Name != "gpu04096" {
		t.Fatalf("nodes: %d, first %q, last %q", len(r.Nodes), r.Nodes[0].Name, r.Nodes[len(r.Nodes)-1].Name)
	}
	if got := r.Nodes[40].GresConf[0].Files; len(got) != 7 {
		t.Errorf("gpu00041 files = %v, want 7", got)
	}
	var msgs []string
	for _, p := range r.Problems {
		msgs = append(msgs, p.Nodes)
	}
	// One problem per slurm.conf line (the racks each have their own line), none for the
	// others; the node list is the rack.
	want := []string{"gpu[00033-00064]", "gpu[00097-00128]", "gpu[00161-00192]", "gpu[00225-00256]", "gpu[00289-00320]",
		"gpu[00353-00384]", "gpu[00417-00448]", "gpu[00481-00512]", "gpu[00545-00576]", "gpu[00609-00640]"}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("problem nodes (-want +got):\n%s\n%s", diff, dumpProblems(r.Problems))
	}

	// With the whole cluster on one slurm.conf line, the same fault is one problem.
	sc2, err := ParseSlurmConf([]byte("GresTypes=gpu\nNodeName=gpu[00001-04096] Gres=gpu:h100:8\n"), "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2 := Lint(sc2, gc)
	if len(r2.Problems) != 10 {
		t.Fatalf("want 10 problems (one per short gres.conf line), got:\n%s", dumpProblems(r2.Problems))
	}
}

// TestLintGolden renders reports of corpus pairs as text and JSON and compares them with
// testdata/lint/*.txt and *.json (go test ./config -run TestLintGolden -update rewrites them).
func TestLintGolden(t *testing.T) {
	tests := []struct {
		name        string
		slurm, gres string
	}{
		{name: "test39.18-a59", slurm: "nodecheck-test39.18-a59.conf", gres: "slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf"},
		{name: "test7.17.6", slurm: "slurm-testsuite-7.17.6-nogrestypes-slurm.conf", gres: "slurm-testsuite-7.17.6.conf"},
		{name: "man-tux16-pending", slurm: "nodecheck-man-gres-tux16-pending.conf", gres: "slurm-man-single-file-positive-nodename-ranges.conf"},
		{name: "man-mixed-autodetect", slurm: "nodecheck-man-gres-tux16.conf", gres: "slurm-man-mixed-nvml-rsmi-nodes.conf"},
		{name: "mig", slurm: "slurm-doc-gres-mig-nodes.conf", gres: "nodecheck-mig-multiplefiles.conf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := lintFiles(t, tc.slurm, tc.gres)
			var text, js bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatalf("JSON does not parse: %v\n%s", err, js.String())
			}
			if diff := cmp.Diff(r, back); diff != "" {
				t.Errorf("JSON does not read back as the report (-report +json):\n%s", diff)
			}
			checkGolden(t, filepath.Join("testdata", "lint", tc.name+".txt"), text.Bytes())
			checkGolden(t, filepath.Join("testdata", "lint", tc.name+".json"), js.Bytes())
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-golden +got); rerun with -update if the change is right:\n%s", path, diff)
	}
}

func TestLintEmptyJSON(t *testing.T) {
	sc, err := ParseSlurmConf(nil, "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Lint(sc, nil).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for _, k := range []string{"nodes", "problems", "notes"} {
		if v, ok := m[k].([]any); !ok || len(v) != 0 {
			t.Errorf("%s = %#v, want []", k, m[k])
		}
	}
}

func ExampleLint() {
	slurm := "GresTypes=gpu\nNodeName=gpu[01-04] Gres=gpu:h100:8\n"
	gres := "NodeName=gpu[01-03] Name=gpu Type=h100 File=/dev/nvidia[0-7]\nNodeName=gpu04 Name=gpu Type=h100 File=/dev/nvidia[0-6]\n"
	sc, _ := ParseSlurmConf([]byte(slurm), "slurm.conf", nil)
	gc, _ := ParseGresConf([]byte(gres), "gres.conf", nil)
	r := Lint(sc, gc)
	for _, p := range r.Problems {
		fmt.Println(p.Severity, p.Nodes)
		fmt.Println(p.Message)
	}
	fmt.Println(r.Nodes[3].Name, len(r.Nodes[3].GresConf[0].Files))
	// Output:
	// error gpu04
	// slurm.conf:2 says gpu:h100:8 for gpu04 but gres.conf:2 gives 7 files: each node registers with fewer, slurmctld marks it INVAL and jobs stay PENDING: add File= entries or set Gres=gpu:h100:7
	// gpu04 7
}

// FuzzLint lints arbitrary pairs of files: whatever the parsers let through, Lint must not
// panic, and every problem must have a position and a message.
func FuzzLint(f *testing.F) {
	f.Add([]byte("GresTypes=gpu\nNodeName=gpu[01-04] Gres=gpu:h100:8 CPUs=8\nPartitionName=p Nodes=gpu[01-05]\n"),
		[]byte("NodeName=gpu[01-03] Name=gpu Type=h100 File=/dev/nvidia[0-7] Cores=0-9\nName=gpu File=/dev/nvidia0\nNodeName=gpu0[1-2] AutoDetect=nvml\n"))
	f.Add([]byte("NodeName=DEFAULT Gres=gpu:2,mps:100\nNodeName=a,a,b\n"), []byte("Name=mps Count=1\nName=mps Count=1\nAutoDetect=off\n"))
	f.Add([]byte("NodeName=n[1-2] Gres=gpu:t:1,gpu:1\n"), []byte("NodeName=n1 Name=gpu MultipleFiles=/a,/b\nNodeName=n1 Name=gpu MultipleFiles=/a,/b\n"))
	f.Add([]byte("SchedulerType=sched/builtin\nPreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nProlog=/p\nHealthCheckProgram=/h\n"+
		"HealthCheckNodeState=MIXED\nPrologEpilogTimeout=3\nGresTypes=gpu\nNodeName=g[1-2] Gres=gpu:a100:2,gpu:v100:1\nNodeName=c1 Feature=h100\n"+
		"PartitionName=DEFAULT GraceTime=10\nPartitionName=lo Nodes=ALL\nPartitionName=hi Nodes=g1,c1 Priority=9\n"), []byte("NodeName=c1 Name=gpu File=/dev/nvidia0\n"))
	f.Fuzz(func(t *testing.T, slurm, gres []byte) {
		sc, err := ParseSlurmConf(slurm, "slurm.conf", nil)
		if err != nil {
			return
		}
		gc, err := ParseGresConf(gres, "gres.conf", nil)
		if err != nil {
			return
		}
		total := 0
		for _, n := range sc.Nodes {
			total += n.Names.Len()
		}
		if total > 1<<16 {
			return // large clusters are the benchmark's business, not the fuzzer's
		}
		r := Lint(sc, gc, WithHookBudgets(HookBudgets{Prolog: 5 * time.Second, Epilog: 30 * time.Second, Health: 50 * time.Second, Margin: 5 * time.Second}))
		for _, p := range append(r.Problems, r.Notes...) {
			if p.Line <= 0 || p.File == "" || p.Message == "" {
				t.Fatalf("problem without a position or message: %+v", p)
			}
		}
		if err := r.WriteJSON(io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
