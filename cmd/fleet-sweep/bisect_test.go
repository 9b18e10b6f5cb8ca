package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeNet is a network of healthy nodes at 400 GB/s with faults: bad nodes fail any run they
// are in, slow nodes scale a run's busbw by their factor, a bad link fails a run holding both
// its ends, and unscheduled nodes never get to run. It counts what locate asks.
type fakeNet struct {
	bad     map[string]bool
	slow    map[string]float64
	links   [][2]string
	notRun  map[string]bool
	calls   int
	overlap bool // a round ran two sets sharing a node
}

func (f *fakeNet) run(_ context.Context, _ int, sets [][]string) []setOutcome {
	f.calls++
	seen := map[string]bool{}
	out := make([]setOutcome, len(sets))
	for i, set := range sets {
		bw := 400.0
		for _, n := range set {
			if seen[n] {
				f.overlap = true
			}
			seen[n] = true
			switch {
			case f.notRun[n]:
				out[i].NotRun = "job 9 still PENDING (Resources) at the deadline: cancelled"
			case f.bad[n]:
				out[i].Failed = "Test NCCL failure common.cu:1179 'remote process exited or there was a network error'"
			case f.slow[n] > 0:
				bw *= f.slow[n]
			}
		}
		for _, l := range f.links {
			if slices.Contains(set, l[0]) && slices.Contains(set, l[1]) && out[i].NotRun == "" {
				out[i].Failed = "Test NCCL failure common.cu:1179 'remote process exited or there was a network error'"
			}
		}
		if out[i].Failed == "" && out[i].NotRun == "" {
			out[i].BusBW, out[i].At = bw, "4 GiB"
		}
	}
	return out
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// culpritText renders culprits as "node n7", "link n3,n9", sorted.
func culpritText(cs []culprit) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Kind+" "+strings.Join(c.Nodes, ","))
	}
	slices.Sort(out)
	return out
}

var testOpts = locateOptions{Slow: slowRule{MAD: 3, FloorPct: 5, MinNodes: 4}}

// TestLocateOneBadNode: every position of one failing node, in fleets of 4 to 40 nodes, with
// pairs and with one set of all nodes: locate names exactly that node, within 2 rounds with
// pairs (3 in the triple an odd count leaves) and 1 + ceil(log2 N) with one set (the issue asks
// for about log2(32) + 2 = 7 at 32), and never runs two sets sharing a node in one round.
func TestLocateOneBadNode(t *testing.T) {
	worst := map[string]int{}
	for n := 4; n <= 40; n++ {
		for _, group := range []int{2, n} {
			limit := 2 + n%2
			if group == n {
				limit = 1 + int(math.Ceil(math.Log2(float64(n))))
			}
			for bad := 1; bad <= n; bad++ {
				f := &fakeNet{bad: map[string]bool{fmt.Sprintf("n%d", bad): true}}
				opts := testOpts
				opts.Group = group
				res := locate(context.Background(), nodeNames(n), opts, f.run)
				want := []string{fmt.Sprintf("node n%d", bad)}
				if diff := cmp.Diff(want, culpritText(res.Culprits)); diff != "" || res.Rounds > limit || f.overlap || res.Rounds != f.calls {
					t.Fatalf("%d nodes, group %d, n%d bad: culprits (-want +got) %s; %d rounds (limit %d), runner called %d times, overlap %v\n%+v",
						n, group, bad, diff, res.Rounds, limit, f.calls, f.overlap, res.Runs)
				}
				key := fmt.Sprintf("%d nodes, group %d", n, group)
				worst[key] = max(worst[key], res.Rounds*1000+res.Jobs)
			}
		}
	}
	for _, k := range []string{"32 nodes, group 2", "32 nodes, group 32"} {
		t.Logf("%s: worst %d rounds, %d jobs", k, worst[k]/1000, worst[k]%1000)
	}
}

// TestLocateSlowNode: a node that slows every run it is in to 75% is named like a failing
// one, through the threshold drawn from round 1's pairs; with one set of all nodes there is
// no round-1 median, and --multinode-min-busbw draws the line.
func TestLocateSlowNode(t *testing.T) {
	for _, group := range []int{2, 32} {
		for _, slow := range []int{1, 16, 32} {
			f := &fakeNet{slow: map[string]float64{fmt.Sprintf("n%d", slow): 0.75}}
			opts := testOpts
			opts.Group = group
			if group == 32 {
				opts.MinBusBW = 360
			}
			res := locate(context.Background(), nodeNames(32), opts, f.run)
			if diff := cmp.Diff([]string{fmt.Sprintf("node n%d", slow)}, culpritText(res.Culprits)); diff != "" || res.Rounds > 7 {
				t.Errorf("group %d, n%d slow: (-want +got) %s, %d rounds, threshold %v (%s)", group, slow, diff, res.Rounds, res.Threshold, res.ThresholdWhy)
			}
		}
	}
	f := &fakeNet{slow: map[string]float64{"n5": 0.75}}
	opts := testOpts
	opts.Group = 2
	res := locate(context.Background(), nodeNames(32), opts, f.run)
	if res.Threshold != 380 || !strings.Contains(res.ThresholdWhy, "median 400.0 GB/s over 16 sets, MAD 0.0: slow below 380.0") {
		t.Errorf("threshold %v: %s", res.Threshold, res.ThresholdWhy)
	}
}

func TestLocateNone(t *testing.T) {
	for _, n := range []int{2, 3, 17, 32, 64} {
		for _, group := range []int{2, 4, n} {
			f := &fakeNet{}
			opts := testOpts
			opts.Group = group
			res := locate(context.Background(), nodeNames(n), opts, f.run)
			if len(res.Culprits) != 0 || res.Rounds != 1 || res.Jobs != len(chunk(nodeNames(n), max(group, 2))) || res.Aborted != "" {
				t.Errorf("%d nodes, group %d: %+v", n, group, res)
			}
		}
	}
}

// TestLocateBadLink: a link between two nodes fails only the runs holding both. With pairs it
// is found when the two are a pair (other links are never exercised by pairs); with one set of
// all nodes it is found wherever its ends are, by crossing the halves. From 4 nodes on: in a
// fleet of 3 the only reference for a node is inside the bad set, and a bad link to it reads
// as a bad node; in a fleet of 2 nothing tells a link from a node ("unresolved", tested below).
func TestLocateBadLink(t *testing.T) {
	worst := 0
	for n := 4; n <= 20; n++ {
		for i := 1; i <= n; i++ {
			for j := i + 1; j <= n; j++ {
				a, b := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", j)
				f := &fakeNet{links: [][2]string{{a, b}}}
				opts := testOpts
				opts.Group = n
				res := locate(context.Background(), nodeNames(n), opts, f.run)
				if diff := cmp.Diff([]string{"link " + a + "," + b}, culpritText(res.Culprits)); diff != "" || f.overlap {
					t.Fatalf("%d nodes, link %s-%s: (-want +got) %s, overlap %v\n%+v", n, a, b, diff, f.overlap, res.Runs)
				}
				worst = max(worst, res.Rounds)
			}
		}
	}
	t.Logf("a bad link among up to 20 nodes in one set: at most %d rounds", worst)
	// Pairs: the link between a pair's nodes is named as that pair.
	f := &fakeNet{links: [][2]string{{"n7", "n8"}}}
	opts := testOpts
	opts.Group = 2
	res := locate(context.Background(), nodeNames(32), opts, f.run)
	if diff := cmp.Diff([]string{"link n7,n8"}, culpritText(res.Culprits)); diff != "" || res.Rounds != 2 || res.Jobs != 18 {
		t.Errorf("pairs, link n7-n8: (-want +got) %s; %d rounds, %d jobs", diff, res.Rounds, res.Jobs)
	}
}

func TestLocateSeveralAndEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		group   int
		net     fakeNet
		want    []string
		aborted string
	}{
		{name: "two bad nodes in one pair", n: 8, group: 2, net: fakeNet{bad: map[string]bool{"n3": true, "n4": true}},
			want: []string{"node n3", "node n4"}},
		{name: "two bad nodes apart, one set", n: 16, group: 16, net: fakeNet{bad: map[string]bool{"n2": true, "n11": true}},
			want: []string{"node n11", "node n2"}},
		{name: "a bad node and a bad link", n: 16, group: 2, net: fakeNet{bad: map[string]bool{"n1": true}, links: [][2]string{{"n9", "n10"}}},
			want: []string{"link n9,n10", "node n1"}},
		{name: "only two nodes, bad: no reference to tell them apart", n: 2, group: 2, net: fakeNet{bad: map[string]bool{"n2": true}},
			want: []string{"unresolved n1,n2"}},
		{name: "a pair that never ran is unresolved, never good", n: 6, group: 2, net: fakeNet{notRun: map[string]bool{"n3": true}},
			want: []string{"unresolved n3,n4"}},
		{name: "every pair fails: a setup problem, nothing narrowed", n: 6, group: 2,
			net:     fakeNet{bad: map[string]bool{"n1": true, "n3": true, "n5": true}},
			want:    []string{"unresolved n1,n2", "unresolved n3,n4", "unresolved n5,n6"},
			aborted: "every set failed in round 1"},
		// Halving {n1,n2,n3} gives {n1} and {n2,n3}; with n2 bad no test ever passes, so no
		// node can serve as a reference: said, not guessed.
		{name: "three nodes, the middle one bad: no reference", n: 3, group: 2, net: fakeNet{bad: map[string]bool{"n2": true}},
			want: []string{"unresolved n1", "unresolved n2,n3"}},
		{name: "odd count: the last node joins the last pair", n: 5, group: 2, net: fakeNet{bad: map[string]bool{"n5": true}},
			want: []string{"node n5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts
			opts.Group = tc.group
			res := locate(context.Background(), nodeNames(tc.n), opts, tc.net.run)
			if diff := cmp.Diff(tc.want, culpritText(res.Culprits)); diff != "" {
				t.Errorf("culprits (-want +got):\n%s\nruns %+v", diff, res.Runs)
			}
			if !strings.HasPrefix(res.Aborted, tc.aborted) || (tc.aborted == "") != (res.Aborted == "") {
				t.Errorf("aborted %q, want %q", res.Aborted, tc.aborted)
			}
		})
	}
}

// TestLocateDeadline: a context that ends stops the search; what is left is unresolved.
func TestLocateDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeNet{bad: map[string]bool{"n9": true}}
	run := func(ctx context.Context, round int, sets [][]string) []setOutcome {
		defer cancel() // the deadline passes during round 1
		return f.run(ctx, round, sets)
	}
	opts := testOpts
	opts.Group = 16
	res := locate(ctx, nodeNames(16), opts, run)
	if diff := cmp.Diff([]string{"unresolved " + strings.Join(nodeNames(16), ",")}, culpritText(res.Culprits)); diff != "" || res.Rounds != 1 {
		t.Errorf("(-want +got) %s, %d rounds", diff, res.Rounds)
	}
}

func TestChunk(t *testing.T) {
	tests := []struct {
		n, size int
		want    [][]string
	}{
		{4, 2, [][]string{{"n1", "n2"}, {"n3", "n4"}}},
		{5, 2, [][]string{{"n1", "n2"}, {"n3", "n4", "n5"}}},
		{5, 4, [][]string{{"n1", "n2", "n3", "n4", "n5"}}},
		{6, 4, [][]string{{"n1", "n2", "n3", "n4"}, {"n5", "n6"}}},
		{3, 8, [][]string{{"n1", "n2", "n3"}}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, chunk(nodeNames(tc.n), tc.size)); diff != "" {
			t.Errorf("chunk(%d, %d) (-want +got):\n%s", tc.n, tc.size, diff)
		}
	}
}
