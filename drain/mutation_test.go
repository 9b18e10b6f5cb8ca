package drain

// Boundary tests found by mutation testing (docs/development.md, "Mutation testing").

import (
	"context"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

// TestApplyJobHookFailureResetsCount: a prolog or epilog that fails between clean health runs
// breaks the row, though job hooks never count clean runs: the node drained by ib_ports waits
// for two clean health runs after the failure, not one. A clean prolog between them neither
// counts nor breaks the row (its neighbour).
func TestApplyJobHookFailureResetsCount(t *testing.T) {
	hook := func(mode config.Mode, rs []CheckResult) Request {
		return Request{Node: "n1", Mode: mode, Results: rs, Known: allChecks, Drain: true}
	}
	for _, mode := range []config.Mode{config.ModeProlog, config.ModeEpilog} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFake(NodeState{Name: "n1", State: "IDLE"})
			p := testPolicy(t)
			steps := []struct {
				name   string
				req    Request
				want   Action
				passes int // after the run; a job hook's outcome does not report it
			}{
				{"health fails: drained", health(results(ibDown)), ActionDrained, 0},
				{"one clean run", health(results()), ActionWaiting, 1},
				{"clean job hook: the count holds", hook(mode, results()), ActionNone, 1},
				{"failing job hook: the count starts again", hook(mode, results(ibDown)), ActionKept, 0},
				{"clean run after it: 1 of 2", health(results()), ActionWaiting, 1},
				{"second clean run: resumed", health(results()), ActionResumed, 2},
			}
			for _, s := range steps {
				got := Apply(context.Background(), f, p, s.req)
				if got.Action != s.want || (s.req.Mode == config.ModeHealth && got.Passes != s.passes) {
					t.Fatalf("%s: action %q passes %d, want %q passes %d (%s; warnings %v)", s.name, got.Action, got.Passes, s.want, s.passes, got.Message, got.Warnings)
				}
			}
		})
	}
}

// TestApplyManualCountsOnlyWithResume: a clean manual run counts toward a resume only with
// --resume; without it, the next clean health run is still the first of two.
func TestApplyManualCountsOnlyWithResume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resume bool
		want   Action // the health run after the manual one
		passes int
	}{
		{"manual without --resume", false, ActionWaiting, 1},
		{"manual with --resume", true, ActionResumed, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(NodeState{Name: "n1", State: "IDLE"})
			p := testPolicy(t)
			if got := Apply(context.Background(), f, p, health(results(ibDown))); got.Action != ActionDrained {
				t.Fatalf("health fails: %q %s", got.Action, got.Message)
			}
			manual := Request{Node: "n1", Mode: config.ModeManual, Results: results(), Known: allChecks, Drain: true, Resume: tc.resume}
			Apply(context.Background(), f, p, manual)
			got := Apply(context.Background(), f, p, health(results()))
			if got.Action != tc.want || got.Passes != tc.passes {
				t.Errorf("health after manual: %q passes %d, want %q passes %d (%s)", got.Action, got.Passes, tc.want, tc.passes, got.Message)
			}
		})
	}
}

// TestNameList: five names are listed whole, a sixth is cut to "...".
func TestNameList(t *testing.T) {
	if got := nameList([]string{"n1", "n2", "n3", "n4", "n5"}); got != "n1, n2, n3, n4, n5" {
		t.Errorf("five: %q", got)
	}
	if got := nameList([]string{"n1", "n2", "n3", "n4", "n5", "n6"}); got != "n1, n2, n3, n4, n5, ..." {
		t.Errorf("six: %q", got)
	}
}

// TestFormatReasonExactLength: a reason of exactly MaxReasonLen keeps its whole summary; one
// byte more cuts the summary with "...".
func TestFormatReasonExactLength(t *testing.T) {
	head := "nodecheck: ib_ports: "
	fits := strings.Repeat("x", MaxReasonLen-len(head))
	if got := FormatReason("nodecheck:", []Failure{{Check: "ib_ports", Summary: fits}}); got != head+fits {
		t.Errorf("%d bytes: %q, want the whole summary", len(got), got)
	}
	got := FormatReason("nodecheck:", []Failure{{Check: "ib_ports", Summary: fits + "y"}})
	if len(got) != MaxReasonLen || !strings.HasSuffix(got, "x...") {
		t.Errorf("one byte over: %d bytes %q, want %d ending in ...", len(got), got, MaxReasonLen)
	}
}

// TestGuardNoLimit: with no limit (N 0) the guard acts without listing the cluster, so an
// unreachable listing does not hold the node back; with a limit of 1 it does.
func TestGuardNoLimit(t *testing.T) {
	for _, tc := range []struct {
		n       int
		entered bool
	}{{0, true}, {1, false}} {
		f := newFake(NodeState{Name: "n1", State: "IDLE"})
		f.down = true
		g := Guard{Limit: Limit{N: tc.n}, Counts: func(NodeState) bool { return true }}
		res := g.Enter(context.Background(), f, "n1", func() bool { return true }, func() bool { return true })
		if res.Entered != tc.entered || res.Unreachable == tc.entered {
			t.Errorf("limit %d: %+v, want entered %v", tc.n, res, tc.entered)
		}
	}
}
