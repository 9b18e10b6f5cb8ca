package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestSlurmConcurrentLimit: four nodes fail at the same moment with
// max_drained = "1", each run with a state directory of its own, as on real nodes without a
// shared file system; as prologs and as epilogs of four jobs started together, and as four
// health runs started together. Exactly one node ends drained; the other runs hold their
// drain back (before draining, or by stepping back after it), and a held prolog or epilog
// exits 0 so that Slurm does not drain the node either. Before the recount, four epilogs
// started at once drained three of the four nodes.
//
// It runs once per Slurm version on a test bed of four nodes (testbed.ForEachVersion).
func TestSlurmConcurrentLimit(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-slurm-limit-test-",
		Short:      "the real-Slurm max_drained test takes about 30 s per Slurm version",
		Nodes:      4,
	}, func(t *testing.T, b *testbed.Bed) { testSlurmConcurrentLimit(t, newBed(t, b)) })
}

func testSlurmConcurrentLimit(t *testing.T, tb *bed) {
	ibDown := tb.Snapshot(t, "h100-ib-port-down")
	// configs gives each node a nodecheck.toml and state directory of its own.
	configs := func(t *testing.T) map[string]string {
		m := map[string]string{}
		for _, n := range tb.Nodes {
			m[n] = tb.Config(t, "[drain]\nmax_drained = \"1\"\n")
		}
		return m
	}

	t.Run("health runs started together", func(t *testing.T) {
		tb.Reset(t)
		cfg := configs(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		actions := map[string]drain.Outcome{}
		for _, n := range tb.Nodes {
			wg.Go(func() {
				rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", n, "--drain", "--config", cfg[n])
				mu.Lock()
				actions[n] = rep.Drain
				mu.Unlock()
			})
		}
		wg.Wait()
		drained := tb.checkOneDrained(t)
		for n, o := range actions {
			t.Logf("%s: %s: %s", n, o.Action, o.Message)
			want := drain.ActionHeld
			if n == drained {
				want = drain.ActionDrained
			}
			if o.Action != want {
				t.Errorf("%s: %s (%s), want %s", n, o.Action, o.Message, want)
			}
		}
	})

	for _, hook := range []string{"prolog", "epilog"} {
		t.Run(hook+"s of four jobs started together", func(t *testing.T) {
			tb.Reset(t)
			cfg := configs(t)
			for _, n := range tb.Nodes {
				tb.Hook(t, n, hook, tb.Nodecheck, "run", "--snapshot", ibDown, "--node", n, "--drain", "--config", cfg[n])
			}
			jobs := map[string]string{}
			for _, n := range tb.Nodes {
				jobs[n] = tb.sbatch(t, "-w", n, "--wrap", "/bin/true")
			}
			action := regexp.MustCompile(`"action":"([a-z]+)"`)
			acted := map[string]string{}
			testbed.WaitFor(t, "every "+hook+" to act", 60*time.Second, func() bool {
				for _, n := range tb.Nodes {
					if m := action.FindStringSubmatch(tb.HookFile(n, hook+".err")); m != nil {
						acted[n] = m[1]
					}
				}
				return len(acted) == len(tb.Nodes)
			})
			drained := tb.checkOneDrained(t)
			for _, n := range tb.Nodes {
				want := "held"
				if n == drained {
					want = "drained"
				}
				if acted[n] != want {
					t.Errorf("%s's %s: %s, want %s; logs:\n%s", n, hook, acted[n], want, tb.HookFile(n, hook+".err"))
				}
			}
			// The held prologs exited 0: their jobs ran. The drained node's job is requeued
			// and held, as after any failed prolog.
			if hook == "prolog" {
				for _, n := range tb.Nodes {
					n, job := n, jobs[n]
					want := "JobState=COMPLETED "
					if n == drained {
						want = "Reason=launch_failed_requeued_held"
					}
					testbed.WaitFor(t, fmt.Sprintf("job %s on %s: %s", job, n, want), 30*time.Second, func() bool {
						return strings.Contains(tb.Slurm(t, "scontrol", "show", "job", "-o", job), want)
					})
				}
			}
		})
	}
}

// checkOneDrained returns the one node drained with nodecheck's reason, failing t unless
// exactly one is. A step back resumes a node, which reads idle* for a moment: wait for that.
func (tb *bed) checkOneDrained(t *testing.T) string {
	t.Helper()
	var drained []string
	for _, n := range tb.Nodes {
		node := tb.node(t, n)
		if node.Drained() && strings.HasPrefix(node.Reason, "nodecheck: ib_ports: ") {
			drained = append(drained, n)
		}
		t.Logf("%s: %s %q", n, node, node.Reason)
	}
	slices.Sort(drained)
	if len(drained) != 1 {
		t.Fatalf("drained with nodecheck's reason: %v, want exactly one node (max_drained = \"1\")", drained)
	}
	return drained[0]
}
