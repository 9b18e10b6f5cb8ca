package drain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

func TestLimitReached(t *testing.T) {
	tests := []struct {
		name           string
		limit          Limit
		drained, total int
		want           bool
		allowed        int
	}{
		{"no limit", Limit{}, 1000, 1000, false, -1},
		{"count below", Limit{N: 10}, 9, 100, false, 10},
		{"count at", Limit{N: 10}, 10, 100, true, 10},
		{"count above", Limit{N: 1}, 2, 2, true, 1},
		{"percent below", Limit{N: 10, Percent: true}, 9, 100, false, 10},
		{"percent at", Limit{N: 10, Percent: true}, 10, 100, true, 10},
		{"percent not rounded: 10% of 15 is 1.5", Limit{N: 10, Percent: true}, 1, 15, false, 2},
		{"percent not rounded: 2 >= 1.5", Limit{N: 10, Percent: true}, 2, 15, true, 2},
		{"two-node cluster, first drain passes", Limit{N: 10, Percent: true}, 0, 2, false, 1},
		{"two-node cluster, second drain held", Limit{N: 10, Percent: true}, 1, 2, true, 1},
		{"50% of two nodes", Limit{N: 50, Percent: true}, 1, 2, true, 1},
		{"empty cluster listing holds", Limit{N: 10, Percent: true}, 0, 0, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.limit.Reached(tc.drained, tc.total); got != tc.want {
				t.Errorf("%s.Reached(%d, %d) = %v, want %v", tc.limit, tc.drained, tc.total, got, tc.want)
			}
			if tc.allowed >= 0 && tc.limit.Allowed(tc.total) != tc.allowed {
				t.Errorf("%s.Allowed(%d) = %d, want %d", tc.limit, tc.total, tc.limit.Allowed(tc.total), tc.allowed)
			}
		})
	}
}

func TestLimitString(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want string
	}{{Limit{}, "none"}, {Limit{N: 3}, "3"}, {Limit{N: 10, Percent: true}, "10%"}} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.l, got, tc.want)
		}
	}
}

// TestStepBack is the order in which drains made at the same moment keep or step back: the
// reason's time, then the name; only nodecheck's drains of nodes out of service count.
func TestStepBack(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(1_700_000_000+sec, 0) }
	ours := func(name string, sec int64) NodeState {
		return NodeState{Name: name, State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x", ReasonTime: at(sec)}
	}
	idle := func(name string) NodeState { return NodeState{Name: name, State: "IDLE"} }
	tests := []struct {
		name   string
		nodes  []NodeState
		self   string
		limit  Limit
		keep   bool
		ahead  []string
		counts int
	}{
		{"alone", []NodeState{ours("n3", 5), idle("n1"), idle("n2"), idle("n4")}, "n3", Limit{N: 1}, true, nil, 1},
		{"same second: the first name keeps", []NodeState{ours("n1", 5), ours("n2", 5), ours("n3", 5), ours("n4", 5)}, "n1", Limit{N: 1}, true, nil, 4},
		{"same second: the others step back", []NodeState{ours("n1", 5), ours("n2", 5), ours("n3", 5), ours("n4", 5)}, "n3", Limit{N: 1}, false, []string{"n1", "n2"}, 4},
		{"an earlier second keeps over a smaller name", []NodeState{ours("n1", 6), ours("n9", 5)}, "n1", Limit{N: 1}, false, []string{"n9"}, 2},
		{"two allowed: the second keeps", []NodeState{ours("n1", 5), ours("n2", 5), ours("n3", 5)}, "n2", Limit{N: 2}, true, []string{"n1"}, 3},
		{"two allowed: the third steps back", []NodeState{ours("n1", 5), ours("n2", 5), ours("n3", 5)}, "n3", Limit{N: 2}, false, []string{"n1", "n2"}, 3},
		{"percent of the listing", []NodeState{ours("n1", 5), ours("n2", 5), idle("n3"), idle("n4")}, "n2", Limit{N: 50, Percent: true}, true, []string{"n1"}, 2},
		{"old drains come first", []NodeState{{Name: "n8", State: "DOWN", Reason: "nodecheck: x"}, ours("n1", 5)}, "n1", Limit{N: 1}, false, []string{"n8"}, 2},
		{"foreign drains and leftovers do not count", []NodeState{{Name: "n0", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance"},
			{Name: "n2", State: "IDLE", Reason: "nodecheck: x", ReasonTime: at(1)}, ours("n5", 5)}, "n5", Limit{N: 1}, true, nil, 1},
		{"own drain gone (resumed meanwhile): nothing to step back", []NodeState{ours("n1", 5), idle("n2")}, "n2", Limit{N: 1}, true, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep, ahead, counts := stepBack(countDrained(tc.nodes, "nodecheck:"), tc.self, tc.limit, len(tc.nodes))
			if keep != tc.keep || counts != tc.counts {
				t.Errorf("keep %v counted %d, want %v %d", keep, counts, tc.keep, tc.counts)
			}
			if diff := cmp.Diff(tc.ahead, ahead); diff != "" {
				t.Errorf("ahead (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyConcurrentLimit: nodes that fail together, each with its own run
// and its own state directory (no shared file system), never leave more drains than
// max_drained allows, and always leave at least one. The fake controller stamps reasons in
// 40 ms ticks (Slurm: seconds) and the runs wait 50 ms after their drain; random delays before
// every Slurm call interleave the runs differently in every round, and a barrier makes every
// run pass its first count before any drains (the race that drained three of four nodes
// with max_drained = "1").
func TestApplyConcurrentLimit(t *testing.T) {
	const tick, settle = 20 * time.Millisecond, 25 * time.Millisecond
	rounds := 12
	if testing.Short() {
		rounds = 8
	}
	for _, tc := range []struct {
		limit Limit
		nodes int
		want  int
	}{
		{Limit{N: 1}, 4, 1},
		{Limit{N: 2}, 4, 2},
		{Limit{N: 50, Percent: true}, 6, 3},
		{Limit{N: 1}, 8, 1},
	} {
		t.Run(fmt.Sprintf("%s of %d nodes", tc.limit, tc.nodes), func(t *testing.T) {
			for round := range rounds {
				kept, actions := concurrentRound(t, tc.limit, tc.nodes, tick, settle, uint64(round))
				if len(kept) > tc.want || len(kept) == 0 {
					t.Fatalf("round %d: %d nodes drained (%v), want 1 to %d; actions %v", round, len(kept), kept, tc.want, actions)
				}
			}
		})
	}
}

// concurrentRound fails n nodes at once and returns the drained ones and each run's action.
func concurrentRound(t *testing.T, limit Limit, n int, tick, settle time.Duration, seed uint64) ([]string, map[string]string) {
	t.Helper()
	f := newFake()
	f.tick = tick
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		f.nodes[name] = NodeState{Name: name, State: "IDLE"}
	}
	var start sync.WaitGroup
	start.Add(n)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	jitter := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(rng.IntN(int(2 * tick)))
	}
	counted := map[string]bool{}
	f.before = func(op, node string) {
		time.Sleep(jitter())
		if op == "update" {
			// Every run has made its first count: they all saw no drain.
			start.Wait()
		}
	}
	var wg sync.WaitGroup
	actions := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		wg.Go(func() {
			p := Policy{Prefix: "nodecheck:", ResumeAfterPasses: 2, MaxDrained: limit, Settle: settle, LockWait: time.Second,
				State: testState(filepath.Join(t.TempDir(), "state"))}
			slurm := &countOnce{fakeSlurm: f, name: name, done: &start, seen: counted, mu: &mu}
			out := Apply(context.Background(), slurm, p, Request{Node: name, Mode: config.ModeEpilog, Results: results(ibDown), Known: allChecks, Drain: true})
			mu.Lock()
			actions[name] = string(out.Action) + ": " + out.Message
			mu.Unlock()
		})
	}
	wg.Wait()
	var kept []string
	for name, node := range f.nodes {
		if node.Drained() {
			kept = append(kept, name)
		}
		if a := actions[name]; !strings.HasPrefix(a, "drained") && !strings.HasPrefix(a, "held") {
			t.Errorf("%s: %s, want drained or held", name, a)
		}
		if node.Drained() != strings.HasPrefix(actions[name], "drained") {
			t.Errorf("%s is %s but its run says %s", name, node, actions[name])
		}
	}
	slices.Sort(kept)
	return kept, actions
}

// countOnce is the fake seen by one run: its first Nodes call (the count before the drain)
// releases the barrier that holds every drain.
type countOnce struct {
	*fakeSlurm
	name string
	done *sync.WaitGroup
	seen map[string]bool
	mu   *sync.Mutex
}

func (c *countOnce) Nodes(ctx context.Context) ([]NodeState, error) {
	nodes, err := c.fakeSlurm.Nodes(ctx)
	c.mu.Lock()
	first := !c.seen[c.name]
	c.seen[c.name] = true
	c.mu.Unlock()
	if first {
		c.done.Done()
	}
	return nodes, err
}
