package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestFleetSweepScale sweeps a test bed of N slurmd, set by NODECHECK_FLEET_SCALE=N (16, 64,
// 256; unset: skipped): 5 nodes replay failing snapshots, 3 replay a SIMULATED slow NCCL result
// (the real h100-nccl-ok log with its bandwidth x 0.85, see slowSnapshot: above the absolute
// 390 GB/s, 15% under the fleet), every other node the real h100-nccl-ok. The summary must
// name exactly the 5 failing and the 3 slow nodes, and call every other node healthy; the wall
// time and the Slurm calls are logged for docs/fleet-sweep.md. Then --multinode over the
// healthy nodes, with the all_reduce_perf stand-in halving the bandwidth of any job holding one
// chosen node: in pairs, and in one set of all, it must name that node and only it, within 2
// rounds (3 with an odd count) and 1 + ceil(log2 N) rounds. Last, in pairs, with that node's
// runs hanging after their header: it must be named, its pair cancelled at the run limit.
//
// It runs once per Slurm version (testbed.ForEachVersion; NODECHECK_TESTBED_SLURM=22.05 for
// one), each on its own test bed of N nodes named n1..nN, zero-padded (n001 with 256). It is
// opt-in: the sweep itself takes seconds, but with the bed's start and stop and the two
// multi-node searches the test took about 35 s per version at 16 nodes and 3.5-4 minutes at 256
// on 2 shared cores (docs/fleet-sweep.md).
func TestFleetSweepScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NODECHECK_FLEET_SCALE"))
	if n == 0 {
		t.Skip("set NODECHECK_FLEET_SCALE=N (16, 64, 256) to sweep a test bed of N nodes")
	}
	if n < 16 {
		t.Fatalf("NODECHECK_FLEET_SCALE=%d: want at least 16 (5 failing and 3 slow nodes among healthy ones)", n)
	}
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-fleet-scale-",
		Short:      "the fleet sweep's scale test starts a test bed of NODECHECK_FLEET_SCALE nodes",
		// The jobs run as root but read the snapshots and write the reports in here.
		TempMode:  0o755,
		Nodes:     n,
		NodeWidth: len(strconv.Itoa(n)),
	}, func(t *testing.T, b *testbed.Bed) { testFleetSweepScale(t, bed{b}) })
}

func testFleetSweepScale(t *testing.T, tb bed) {
	all := tb.Nodes
	n := len(all)
	failing := map[string]string{ // spread over the fleet
		all[2]:     "h100-ib-port-down",
		all[n/4]:   "h100-pcie-x8",
		all[n/2]:   "h100-gpu-lost",
		all[3*n/4]: "h100-fm-down",
		all[n-1]:   "h100-nccl-wrong",
	}
	slow := []string{all[n/8+1], all[n/2+2], all[n-3]}
	slowSnap := tb.slowSnapshot(t, 0.85)
	ok := tb.Snapshot(t, "h100-nccl-ok")
	args := []string{"--partition", "debug", "--poll", "0", "--timeout", (2*time.Minute + time.Duration(n)*time.Second).String(),
		"--format", "json"}
	for _, node := range all {
		snap := ok
		if f, bad := failing[node]; bad {
			snap = tb.Snapshot(t, f)
		} else if slices.Contains(slow, node) {
			snap = slowSnap
		}
		args = append(args, "--args-for", node+"=--snapshot "+shellQuote(snap)+" --node "+node)
	}
	start := time.Now()
	stdout, stderr, code := tb.sweepFor(t, 10*time.Minute, append(slices.Clone(args), "--out", t.TempDir())...)
	wall := time.Since(start)
	var s summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitUnhealthy {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	var gotFailing []string
	for _, f := range s.Failing {
		gotFailing = append(gotFailing, f.Node)
	}
	var wantFailing []string
	for _, node := range all {
		if _, bad := failing[node]; bad {
			wantFailing = append(wantFailing, node)
		}
	}
	gotSlow := s.slowNodes()
	slices.Sort(gotSlow)
	wantSlow := slices.Clone(slow)
	slices.Sort(wantSlow)
	if diff := cmp.Diff(wantFailing, gotFailing); diff != "" {
		t.Errorf("failing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSlow, gotSlow); diff != "" {
		t.Errorf("slow (-want +got):\n%s", diff)
	}
	if len(s.Missing) != 0 || len(s.Healthy) != n-8 {
		t.Errorf("%d healthy (want %d), missing %+v", len(s.Healthy), n-8, s.Missing)
	}
	calls := make([]string, 0, len(s.SlurmCalls))
	for k, v := range s.SlurmCalls {
		calls = append(calls, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(calls)
	t.Logf("Slurm %s, %d nodes: sweep wall time %.1fs (summary says %.1fs), Slurm calls %d (%s)", tb.Series, n, wall.Seconds(), s.ElapsedS, s.SlurmCallsTotal, strings.Join(calls, ", "))

	// Multi-node, over the healthy and slow nodes: the all_reduce_perf stand-in prints the real
	// 2-node H100 log, at half the bandwidth in any job holding the chosen node.
	bad := all[5]
	log2, _ := filepath.Abs(filepath.Join("testdata", "nccl", "nccltests-309-h100-2node-16gpu-mpi.log"))
	for _, group := range []int{2, n} {
		t.Run(fmt.Sprintf("multinode, sets of %d, %s bad", group, bad), func(t *testing.T) {
			margs := append(slices.Clone(args), "--out", t.TempDir(), "--multinode", "--mpi", "none", "--tasks-per-node", "1",
				"--allreduce", tb.standIn(t), "--multinode-group", strconv.Itoa(group), "--multinode-min-busbw", "300",
				"--allreduce-args", "-log "+shellQuote(log2)+" -slow "+bad+" -factor 0.5 -- -b 1G -e 16G -f 2 -g 1")
			start := time.Now()
			stdout, stderr, code := tb.sweepFor(t, 10*time.Minute, margs...)
			var s summary
			if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitUnhealthy || s.Multinode == nil {
				t.Fatalf("exit %d, %v\n%s", code, err, stderr)
			}
			m := s.Multinode
			tested := len(m.Nodes)
			limit := 2 + tested%2
			if group > 2 {
				limit = 1 + int(math.Ceil(math.Log2(float64(tested))))
			}
			if diff := cmp.Diff([]string{"node " + bad}, culpritText(m.Culprits)); diff != "" || m.Rounds > limit {
				t.Errorf("culprits (-want +got) %s; %d rounds (limit %d)", diff, m.Rounds, limit)
			}
			t.Logf("Slurm %s: multinode over %d nodes in sets of %d: culprit %v in %d rounds, %d jobs, phase %.1fs, whole command %.1fs, Slurm calls %d",
				tb.Series, tested, group, culpritText(m.Culprits), m.Rounds, m.Jobs, m.ElapsedS, time.Since(start).Seconds(), s.SlurmCallsTotal)
		})
	}

	// A node whose runs hang after their header (the stand-in's -hang): its pair is cancelled
	// at the run limit drawn from round 1's other pairs, and the node is named, within a
	// fraction of the 10-minute phase deadline.
	t.Run(fmt.Sprintf("multinode, pairs, %s hangs", bad), func(t *testing.T) {
		margs := append(slices.Clone(args), "--out", t.TempDir(), "--multinode", "--mpi", "none", "--tasks-per-node", "1",
			"--allreduce", tb.standIn(t), "--multinode-min-job-limit", "5s", "--multinode-timeout", "10m",
			"--allreduce-args", "-log "+shellQuote(log2)+" -hang "+bad+" -hang-for 2m -- -b 1G -e 16G -f 2 -g 1")
		start := time.Now()
		stdout, stderr, code := tb.sweepFor(t, 10*time.Minute, margs...)
		var s summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitUnhealthy || s.Multinode == nil {
			t.Fatalf("exit %d, %v\n%s", code, err, stderr)
		}
		m := s.Multinode
		if diff := cmp.Diff([]string{"node " + bad}, culpritText(m.Culprits)); diff != "" || len(m.Culprits) != 1 || !strings.Contains(m.Culprits[0].Why, " hung after its header (no result row): killed at ") {
			t.Errorf("culprits (-want +got) %s; %+v", diff, m.Culprits)
		}
		if m.RunLimitS < 5 || m.ElapsedS > 120 {
			t.Errorf("run limit %v s (%s), phase %.1f s", m.RunLimitS, m.RunLimitWhy, m.ElapsedS)
		}
		t.Logf("Slurm %s: multinode, %s hanging: %v in %d rounds, %d jobs, run limit %.1f s (%s), phase %.1fs, whole command %.1fs",
			tb.Series, bad, culpritText(m.Culprits), m.Rounds, m.Jobs, m.RunLimitS, m.RunLimitWhy, m.ElapsedS, time.Since(start).Seconds())
	})
}
