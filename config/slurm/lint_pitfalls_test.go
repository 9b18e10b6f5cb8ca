package slurm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pitfallFindings returns what Lint reports only with the pitfalls on: each finding as
// "severity file:line nodes", and their messages.
func pitfallFindings(sc *SlurmConf, gc *GresConf, opts ...LintOption) (got, msgs []string) {
	with, without := Lint(sc, gc, opts...), Lint(sc, gc, append(opts, withoutPitfalls())...)
	base := map[string]int{}
	for _, p := range append(without.Problems, without.Notes...) {
		base[p.Message]++
	}
	for _, p := range append(with.Problems, with.Notes...) {
		if base[p.Message] > 0 {
			base[p.Message]--
			continue
		}
		got = append(got, p.Severity+" "+filepath.Base(p.File)+":"+strconv.Itoa(p.Line)+" "+p.Nodes)
		msgs = append(msgs, p.Message)
	}
	return got, msgs
}

// TestPitfallsCorpus lints every slurm.conf under testdata/slurmconf (the real ones are those
// of ../shared/corpus/slurmconf and CSUA's; nodecheck-* were written for tests) for the
// scheduling pitfalls: each pitfall a file shows, once, at its line; nothing on a file that
// is right.
func TestPitfallsCorpus(t *testing.T) {
	tests := []struct {
		file, gres string
		want       []string // "severity file:line nodes"
	}{
		// Real files.
		// backfill, multifactor with fair share, one partition, Feature="P100"; but MaxTime=5 days
		// against the default bf_window of one.
		{file: "csua-slurm-docker-cluster-slurm.conf", gres: "csua-slurm-docker-cluster-gres.conf", want: []string{"warning csua-slurm-docker-cluster-slurm.conf:97 "}},
		{file: "slurm-doc-gres-l3cache-node.conf", want: []string{"info slurm-doc-gres-l3cache-node.conf:6 node0"}},
		{file: "slurm-doc-gres-mig-nodes.conf", want: []string{"info slurm-doc-gres-mig-nodes.conf:4 tux[1-16]"}}, // a100 and its MIG slices are one model
		{file: "slurm-doc-gres-shard-nodes.conf", want: []string{"info slurm-doc-gres-shard-nodes.conf:4 tux[1-16]"}},
		{file: "slurm-doc-gres-slurmconf-mps-bandwidth.conf", gres: "slurm-doc-gres-mps-bandwidth.conf", want: []string{
			"warning slurm-doc-gres-slurmconf-mps-bandwidth.conf:4 tux[0-7]", // tesla and kepler in one node
			"info slurm-doc-gres-slurmconf-mps-bandwidth.conf:4 tux[0-7]",
		}},
		{file: "slurm-doc-power-save-cloud-nodes.conf", want: []string{"info slurm-doc-power-save-cloud-nodes.conf:15 "}}, // 2 partitions, PriorityType unset
		{file: "slurm-doc-slurmd-C-l3cache.txt", want: []string{"info slurm-doc-slurmd-C-l3cache.txt:3 node0"}},
		{file: "slurm-etc-slurm.conf.example"},
		{file: "slurm-man-slurmconf-example-dev0-25.conf", want: []string{"info slurm-man-slurmconf-example-dev0-25.conf:43 "}}, // 3 partitions, PriorityType unset
		{file: "slurm-testsuite-7.17.1-slurm.conf", want: []string{"info slurm-testsuite-7.17.1-slurm.conf:13 test_node[0-9]"}},
		{file: "slurm-testsuite-7.17.3-slurm.conf", want: []string{"info slurm-testsuite-7.17.3-slurm.conf:12 test_node[0-9]"}},
		{file: "slurm-testsuite-7.17.6-nogrestypes-slurm.conf"},
		{file: "slurm-testsuite-7.17.7-slurm.conf", want: []string{"info slurm-testsuite-7.17.7-slurm.conf:12 test_node[0-9]"}},
		// Written for nodecheck's tests from the Slurm documentation's examples.
		{file: "nodecheck-doc-gres-2types.conf", want: []string{"warning nodecheck-doc-gres-2types.conf:3 node0", "info nodecheck-doc-gres-2types.conf:3 node0"}},
		{file: "nodecheck-doc-gres-4types.conf", want: []string{"warning nodecheck-doc-gres-4types.conf:3 node0", "info nodecheck-doc-gres-4types.conf:3 node0"}},
		{file: "nodecheck-man-gres-bandwidth.conf"},
		{file: "nodecheck-man-gres-tux-typed.conf", want: []string{
			"warning nodecheck-man-gres-tux-typed.conf:3 tux[0-1]",
			// tux[0-1] (gtx560+tesla) and tux2 (tesla) differ: --constraint would matter.
			"warning nodecheck-man-gres-tux-typed.conf:3 tux[0-2]",
		}},
		{file: "nodecheck-man-gres-tux16-pending.conf", want: []string{"info nodecheck-man-gres-tux16-pending.conf:3 tux[0-15]"}},
		{file: "nodecheck-man-gres-tux16.conf", want: []string{"info nodecheck-man-gres-tux16.conf:3 tux[0-2,4-15,3]"}},
		{file: "nodecheck-test39.18-a59.conf", want: []string{"warning nodecheck-test39.18-a59.conf:3 node1", "info nodecheck-test39.18-a59.conf:3 node1"}},
		{file: "nodecheck-test39.18-b4.conf", want: []string{"warning nodecheck-test39.18-b4.conf:3 node1", "info nodecheck-test39.18-b4.conf:3 node1"}},
		{file: "nodecheck-test39.18-b5.conf", want: []string{"info nodecheck-test39.18-b5.conf:3 node1"}},
		{file: "nodecheck-test39.18-c10.conf", want: []string{"info nodecheck-test39.18-c10.conf:3 node1"}},
		{file: "nodecheck-test39.18-c18.conf", want: []string{"info nodecheck-test39.18-c18.conf:3 node1"}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			sc, err := LoadSlurmConf(filepath.Join("testdata", "slurmconf", tc.file), os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			var gc *GresConf
			if tc.gres != "" {
				if gc, err = LoadGresConf(filepath.Join("testdata", "gres", tc.gres), os.ReadFile); err != nil {
					t.Fatal(err)
				}
			}
			got, msgs := pitfallFindings(sc, gc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, strings.Join(msgs, "\n"))
			}
		})
	}
	checkCorpusDir(t, filepath.Join("testdata", "slurmconf"), seen)
}

// TestPitfalls: each pitfall, where it shows and where it must not.
func TestPitfalls(t *testing.T) {
	const gpus = "GresTypes=gpu\n"
	tests := []struct {
		name    string
		slurm   string
		gres    string
		window  time.Duration
		want    []string // "severity file:line nodes"
		wantMsg []string
	}{
		{name: "backfill by default", slurm: gpus + "NodeName=n1 Gres=gpu:a100:1 Feature=a100\n"},
		{name: "backfill spelt out", slurm: "SchedulerType=sched/backfill\n"},
		{name: "builtin scheduler", slurm: "SchedulerType=sched/builtin\n", want: []string{"warning slurm.conf:1 "},
			wantMsg: []string{"slurm.conf:1 SchedulerType=sched/builtin starts jobs strictly in priority order", "set SchedulerType=sched/backfill"}},
		{name: "one partition needs no multifactor", slurm: "PriorityType=priority/basic\nNodeName=n1\nPartitionName=p Nodes=n1\n"},
		{name: "basic priority with two partitions", slurm: "PriorityType=priority/basic\nNodeName=n[1-2]\nPartitionName=a Nodes=n1\nPartitionName=b Nodes=n2\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"PriorityType=priority/basic with 2 partitions (a, b)", "set PriorityType=priority/multifactor"}},
		{name: "multifactor with two partitions", slurm: "PriorityType=priority/multifactor\nNodeName=n[1-2]\nPartitionName=a Nodes=n1\nPartitionName=b Nodes=n2\n"},
		{name: "no PriorityType with two partitions is a note", slurm: "NodeName=n[1-2]\nPartitionName=a Nodes=n1\nPartitionName=b Nodes=n2\n",
			want: []string{"info slurm.conf:2 "}, wantMsg: []string{"Slurm 23.02 and older"}},
		{name: "GPU models mixed in one node, reported once for two lines",
			slurm: gpus + "NodeName=a1 Gres=gpu:a100:4,gpu:v100:4 Feature=a100,v100\nNodeName=b1 Gres=gpu:h100:2,gpu:l40s:2 Feature=h100\n",
			want:  []string{"warning slurm.conf:2 a1,b1"}, wantMsg: []string{"puts GPUs of different models (a100, v100) in a1,b1 (also slurm.conf:3)"}},
		{name: "a GPU and its MIG slices are one model", slurm: gpus + "NodeName=a1 Gres=gpu:a100:1,gpu:a100_3g.20gb:2,gpu:1g.10gb:7 Feature=a100\n"},
		{name: "models across nodes are fine", slurm: gpus + "NodeName=a1 Gres=gpu:a100:8 Feature=a100\nNodeName=h1 Gres=gpu:h100:8 Feature=h100\n"},
		{name: "feature missing, one kind of node: a note", slurm: gpus + "NodeName=g[1-4] Gres=gpu:h100:8 Feature=ib,nvme\n",
			want: []string{"info slurm.conf:2 g[1-4]"}, wantMsg: []string{"g[1-4] have GPUs (Gres=gpu:h100:8) but no Feature= naming their model", "add Feature=h100"}},
		{name: "feature missing where models differ: a warning",
			slurm: gpus + "NodeName=a[1-2] Gres=gpu:a100:8 Feature=a100\nNodeName=h[1-2] Gres=gpu:h100:8\nNodeName=v1 Gres=gpu:4\n",
			want:  []string{"warning slurm.conf:3 h[1-2],v1"}, wantMsg: []string{"(also slurm.conf:4)", "differ in model (3 kinds)"}},
		{name: "feature names the model in other words", slurm: gpus + "NodeName=a1 Gres=gpu:nvidia_a100-sxm4-80gb:8 Feature=A100\nNodeName=b1 Gres=gpu:4 Feature=gpu,ampere\nNodeName=c1 Gres=gpu:2 Feature=tesla_v100\n"},
		{name: "GPU node without Gres in a GPU partition",
			slurm: gpus + "NodeName=g[1-2] Gres=gpu:a100:8 Feature=a100\nNodeName=g3 Feature=a100\nNodeName=c1\nPartitionName=gpu Nodes=g[1-3]\nPartitionName=all Nodes=ALL\nPriorityType=priority/multifactor\n",
			want:  []string{"warning slurm.conf:3 g3", "info slurm.conf:6 c1"},
			wantMsg: []string{"g3 looks like a GPU node (a GPU model in Feature=, or gres.conf gives it GPUs) but configures no Gres=gpu, in partitions gpu, all with other GPU nodes",
				"PartitionName=all mixes GPU nodes with nodes without GPUs (c1)"}},
		{name: "gres.conf names a GPU node slurm.conf gives no Gres",
			slurm: gpus + "NodeName=g[1-2] Gres=gpu:a100:8 Feature=a100\nNodeName=g3\nPartitionName=gpu Nodes=g[1-3]\n",
			gres:  "NodeName=g[1-3] Name=gpu Type=a100 File=/dev/nvidia[0-7]\n", want: []string{"warning slurm.conf:3 g3"}},
		{name: "a global gres.conf line is no evidence",
			slurm: gpus + "NodeName=g[1-2] Gres=gpu:8 Feature=a100\nNodeName=c1\nPartitionName=all Nodes=ALL\n",
			gres:  "Name=gpu File=/dev/nvidia[0-7]\n", want: []string{"info slurm.conf:4 c1"}},
		{name: "partitions of one kind each", slurm: gpus + "NodeName=g1 Gres=gpu:8 Feature=a100\nNodeName=c1\nPartitionName=gpu Nodes=g1\nPartitionName=cpu Nodes=c1\nPriorityType=priority/multifactor\n"},
		{name: "requeue with no grace time",
			slurm: "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
				"PartitionName=DEFAULT GraceTime=60\nPartitionName=low Nodes=n[1-4] PriorityTier=1\nPartitionName=high Nodes=n[1-4] PriorityTier=10\n",
			want:    []string{"warning slurm.conf:5 "},
			wantMsg: []string{"PartitionName=low: a job preempted here (PreemptMode=REQUEUE, by a partition of higher PriorityTier) gets SIGTERM and is killed 1m0s later (GraceTime=60), under the 3m0s", "set GraceTime=180"}},
		{name: "grace time long enough", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
			"PartitionName=low Nodes=n[1-4] GraceTime=300\nPartitionName=high Nodes=n[1-4] PriorityTier=10\n"},
		{name: "site window", window: 10 * time.Minute,
			slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
				"PartitionName=low Nodes=n[1-4] GraceTime=300\nPartitionName=high Nodes=n[1-4] Priority=10\n",
			want: []string{"warning slurm.conf:5 "}, wantMsg: []string{"under the 10m0s"}},
		// Boundaries of the grace time and of the tiers.
		{name: "grace time equal to the window", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
			"PartitionName=low Nodes=n[1-4] GraceTime=180\nPartitionName=high Nodes=n[1-4] PriorityTier=10\n"},
		{name: "grace time a second short", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
			"PartitionName=low Nodes=n[1-4] GraceTime=179\nPartitionName=high Nodes=n[1-4] PriorityTier=10\n",
			want: []string{"warning slurm.conf:5 "}, wantMsg: []string{"killed 2m59s later (GraceTime=179), under the 3m0s"}},
		{name: "equal tiers do not preempt", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
			"PartitionName=low Nodes=n[1-4] PriorityTier=5\nPartitionName=high Nodes=n[1-4] PriorityTier=5\n"},
		{name: "a tier one higher preempts", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\nPriorityType=priority/multifactor\nNodeName=n[1-4]\n" +
			"PartitionName=low Nodes=n[1-4] PriorityTier=5\nPartitionName=high Nodes=n[1-4] PriorityTier=6\n",
			want: []string{"warning slurm.conf:5 "}, wantMsg: []string{"PartitionName=low: a job preempted here"}},
		{name: "feature missing where two kinds of node differ: a warning", slurm: gpus + "NodeName=a1 Gres=gpu:a100:8\nNodeName=h1 Gres=gpu:h100:8 Feature=h100\n",
			want: []string{"warning slurm.conf:2 a1"}, wantMsg: []string{"differ in model (2 kinds)"}},
		{name: "a zero count names no model", slurm: gpus + "NodeName=a1 Gres=gpu:a100:8,gpu:v100:0 Feature=a100\n"},
		{name: "suspend keeps the job", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND,GANG\nPriorityType=priority/multifactor\nNodeName=n1\n" +
			"PartitionName=low Nodes=n1\nPartitionName=high Nodes=n1 PriorityTier=10\n"},
		{name: "partition PreemptMode overrides the cluster's", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND,GANG\nPriorityType=priority/multifactor\nNodeName=n1\n" +
			"PartitionName=low Nodes=n1 PreemptMode=requeue\nPartitionName=high Nodes=n1 PriorityTier=10 PreemptMode=OFF\n",
			want: []string{"warning slurm.conf:5 "}, wantMsg: []string{"(PreemptMode=requeue"}},
		{name: "top tier is never preempted", slurm: "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nPriorityType=priority/multifactor\nNodeName=n[1-2]\n" +
			"PartitionName=low Nodes=n1\nPartitionName=high Nodes=n2 PriorityTier=10\n"},
		{name: "no preemption plugin", slurm: "PreemptMode=REQUEUE\nNodeName=n1\nPartitionName=p Nodes=n1\n"},
		// The backfill window against the longest time limit: equal is covered.
		{name: "MaxTime of the default window", slurm: "PartitionName=p Nodes=n1 MaxTime=1-00:00:00\nNodeName=n1\n"},
		{name: "MaxTime a minute past the default window", slurm: "PartitionName=p Nodes=n1 MaxTime=1441\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"slurm.conf:1 PartitionName=p MaxTime=1-00:01:00 (1441 minutes, at slurm.conf:1) is longer than the default bf_window of 1440 minutes (1 day; SchedulerParameters not set)", "add bf_window=1441 to SchedulerParameters"}},
		{name: "seconds round up to a minute", slurm: "PartitionName=p Nodes=n1 MaxTime=1440:01\nNodeName=n1\n", want: []string{"warning slurm.conf:1 "}},
		{name: "a window that covers", slurm: "SchedulerParameters=bf_continue,bf_window=2880\nPartitionName=p Nodes=n1 MaxTime=2-0\nNodeName=n1\n"},
		{name: "a window a minute short", slurm: "SchedulerParameters=bf_window=2879,bf_continue\nPartitionName=p Nodes=n1 MaxTime=2-0\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"PartitionName=p MaxTime=2-00:00:00 (2880 minutes, at slurm.conf:2) is longer than bf_window=2879 minutes (at slurm.conf:1)"}},
		{name: "DefaultTime counts", slurm: "PartitionName=DEFAULT DefaultTime=3-0\nPartitionName=a Nodes=n1 MaxTime=1-0\nPriorityType=priority/multifactor\nPartitionName=b Nodes=n1\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"PartitionName=a DefaultTime=3-00:00:00 (4320 minutes, at slurm.conf:1)"}},
		{name: "unlimited is no limit to cover", slurm: "PartitionName=p Nodes=n1 MaxTime=UNLIMITED\nNodeName=n1\n"},
		{name: "no backfill, no window", slurm: "SchedulerType=sched/builtin\nPartitionName=p Nodes=n1 MaxTime=7-0\nNodeName=n1\n", want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"SchedulerType=sched/builtin starts jobs"}},
		{name: "a window Slurm refuses", slurm: "SchedulerParameters=bf_window=0\nPartitionName=p Nodes=n1 MaxTime=2-0\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 ", "warning slurm.conf:1 "}, wantMsg: []string{"bf_window=0 is not a whole number of minutes from 1 to 43200", "is longer than the default bf_window Slurm uses instead, 1440 minutes"}},
		{name: "the least window", slurm: "SchedulerParameters=bf_window=1\nPartitionName=p Nodes=n1 MaxTime=1\nNodeName=n1\n"},
		{name: "the largest window covers 30 days", slurm: "SchedulerParameters=bf_window=43200\nPartitionName=p Nodes=n1 MaxTime=30-0\nNodeName=n1\n"},
		{name: "a window past the largest", slurm: "SchedulerParameters=bf_window=43201\nPartitionName=p Nodes=n1 MaxTime=30-0\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 ", "warning slurm.conf:1 "}, wantMsg: []string{"bf_window=43201 is not a whole number of minutes from 1 to 43200", "is longer than the default bf_window Slurm uses instead, 1440 minutes (1 day; SchedulerParameters at slurm.conf:1)", "add bf_window=43200"}},
		{name: "past what a window can cover", slurm: "SchedulerParameters=bf_window=43200\nPartitionName=p Nodes=n1 MaxTime=31-0\nNodeName=n1\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"bf_window cannot exceed 43200 minutes (30 days)"}},
		// Fair share with accounting.
		{name: "multifactor and slurmdbd without fair share", slurm: "PriorityType=priority/multifactor\nAccountingStorageType=accounting_storage/slurmdbd\n",
			want: []string{"warning slurm.conf:1 "}, wantMsg: []string{"PriorityType=priority/multifactor (slurm.conf:1) with PriorityWeightFairshare unset (its default is 0): fair share adds nothing", "set PriorityWeightFairshare=10000"}},
		{name: "a fair share weight of 0", slurm: "PriorityType=priority/multifactor\nAccountingStorageType=accounting_storage/slurmdbd\nPriorityWeightFairshare=0\n",
			want: []string{"warning slurm.conf:3 "}, wantMsg: []string{"with PriorityWeightFairshare=0:"}},
		{name: "a fair share weight of 1", slurm: "PriorityType=priority/multifactor\nAccountingStorageType=accounting_storage/slurmdbd\nPriorityWeightFairshare=1\n"},
		{name: "no accounting, no fair share to weigh", slurm: "PriorityType=priority/multifactor\nAccountingStorageType=accounting_storage/none\n"},
		{name: "basic priority has no weights", slurm: "PriorityType=priority/basic\nAccountingStorageType=accounting_storage/slurmdbd\n"},
		{name: "QOS preemption: a note", slurm: "PreemptType=preempt/qos\nPreemptMode=REQUEUE\nNodeName=n1\nPartitionName=p Nodes=n1\n",
			want: []string{"info slurm.conf:1 "}, wantMsg: []string{"GraceTime of their QOS", "sacctmgr show qos"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Problems) > 0 {
				t.Fatalf("slurm.conf problems: %v", sc.Problems)
			}
			var gc *GresConf
			if tc.gres != "" {
				if gc, err = ParseGresConf([]byte(tc.gres), "gres.conf", nil); err != nil {
					t.Fatal(err)
				}
			}
			got, msgs := pitfallFindings(sc, gc, WithCheckpointWindow(tc.window))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, strings.Join(msgs, "\n"))
			}
			for _, w := range tc.wantMsg {
				if !strings.Contains(strings.Join(msgs, "\n"), w) {
					t.Errorf("no message contains %q:\n%s", w, strings.Join(msgs, "\n"))
				}
			}
		})
	}
}

func TestAlsoAt(t *testing.T) {
	var ps []Pos
	for i := 1; i <= 12; i++ {
		ps = append(ps, Pos{File: "/etc/slurm/slurm.conf", Line: i})
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{1, ""}, {2, " (also slurm.conf:2)"},
		{10, " (also slurm.conf:2, slurm.conf:3, slurm.conf:4, slurm.conf:5, slurm.conf:6, slurm.conf:7, slurm.conf:8, slurm.conf:9, and 1 more)"}, {9, " (also slurm.conf:2, slurm.conf:3, slurm.conf:4, slurm.conf:5, slurm.conf:6, slurm.conf:7, slurm.conf:8, slurm.conf:9)"},
		{12, " (also slurm.conf:2, slurm.conf:3, slurm.conf:4, slurm.conf:5, slurm.conf:6, slurm.conf:7, slurm.conf:8, slurm.conf:9, and 3 more)"},
	} {
		if got := alsoAt(ps[:tc.n]); got != tc.want {
			t.Errorf("alsoAt(%d places) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestGPUModel(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{"a100", "a100"}, {"A100", "a100"}, {"a100_3g.20gb", "a100"}, {"nvidia_h100_1g.10gb", "nvidia_h100"},
		{"3g.20gb", ""}, {"nvidia_a100-pcie-40gb", "nvidia_a100-pcie-40gb"}, {"", ""},
	} {
		if got := gpuModel(tc.typ); got != tc.want {
			t.Errorf("gpuModel(%q) = %q, want %q", tc.typ, got, tc.want)
		}
	}
	for _, tc := range []struct {
		feature string
		models  []string
		want    bool
	}{
		{"P100", nil, true}, {"a100", nil, true}, {"H100-80GB", nil, true}, {"tesla_v100", nil, true}, {"mi250x", nil, true},
		{"rtx6000", nil, true}, {"ampere", nil, true}, {"gpu", nil, false}, {"local", nil, false}, {"cloud", nil, false},
		{"ib", nil, false}, {"cuda8", nil, false}, {"HyperThread", nil, false}, {"nvme", nil, false},
		{"gp100", []string{"gp100"}, true}, {"kep", []string{"kepler"}, true}, {"sxm4", []string{"nvidia_a100-sxm4-80gb"}, true},
		{"x", []string{"x100"}, false},
		// A feature inside a model, or a model inside a feature, counts from three letters.
		{"ke", []string{"kepler"}, false}, {"gpu-h10", []string{"h10"}, true}, {"xab", []string{"ab"}, false},
	} {
		if got := featureNamesGPU(tc.feature, tc.models); got != tc.want {
			t.Errorf("featureNamesGPU(%q, %q) = %v, want %v", tc.feature, tc.models, got, tc.want)
		}
	}
}
