package drain

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

func TestReasonRemedy(t *testing.T) {
	tests := []struct {
		name, reason, want string
		ok                 bool
	}{
		{"one failure", "nodecheck: ib_ports: mlx5_5/1: state DOWN, want ACTIVE [admin]", "admin", true},
		{"more failures", "nodecheck: gpu_memory_errors: gpu 3: row remapping pending [reset_gpu] (+2 more)", "reset_gpu", true},
		{"no summary", "nodecheck: gpu_count [service]", "service", true},
		{"repair tag and reboot words", "nodecheck: xid_errors: gpu 1: Xid 79 [reboot] [repair: reboot] : reboot issued : reboot complete", "reboot", true},
		{"no remedy", "nodecheck: ib_ports: mlx5_5/1: state DOWN", "", false},
		{"escalation", "nodecheck: service: gpu 1652922000001 0000:9b:00.0 3 repairs in 7d: before a GPU reset", "", false},
		{"fleet sweep", "nodecheck: fleet: slow: busbw 405.1 GB/s at 4 GiB, 8.1% below the h100 median 440.8", "", false},
		{"not a word", "nodecheck: x: y [Reset GPU]", "", false},
		{"empty brackets", "nodecheck: x: y []", "", false},
		{"empty", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ReasonRemedy(tc.reason)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ReasonRemedy(%q) = %q, %v; want %q, %v", tc.reason, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestApplyCurrent follows the drain a run leaves (Outcome.Current, what the metrics say)
// through a node's life: when the drain began survives the runs that keep it and a repair's
// change of reason, and ends with the resume.
func TestApplyCurrent(t *testing.T) {
	const reason = "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE"
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := t0
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	p := testPolicy(t)
	p.Now = func() time.Time { return now }
	type step struct {
		name    string
		at      time.Duration // after t0
		before  func()        // changes the node in Slurm before the run
		req     Request
		want    *Current
		wantAct Action
	}
	drainedAt := &Current{Drained: true, Reason: reason, Since: t0.Add(time.Minute)}
	steps := []step{
		{name: "healthy, in service", req: health(results()), want: &Current{}, wantAct: ActionNone},
		{name: "fails: drained now", at: time.Minute, req: health(results(ibDown)), want: drainedAt, wantAct: ActionDrained},
		{name: "fails again: since kept", at: 6 * time.Minute, req: health(results(ibDown)), want: drainedAt, wantAct: ActionKept},
		{name: "a repair tags the reason: since kept", at: 11 * time.Minute,
			before: func() {
				n := f.nodes["n1"]
				n.Reason, n.ReasonTime = TagReason(reason, "reboot"), now
				f.nodes["n1"] = n
			},
			req:  health(results(ibDown)),
			want: &Current{Drained: true, Reason: TagReason(reason, "reboot"), Since: t0.Add(time.Minute)}, wantAct: ActionKept},
		{name: "a prolog that may not act: not read", at: 12 * time.Minute,
			req: Request{Node: "n1", Mode: config.ModeProlog, Results: results(), Known: allChecks}, want: nil, wantAct: ActionNone},
		{name: "clean: waiting", at: 16 * time.Minute, req: health(results()), want: &Current{Drained: true, Reason: TagReason(reason, "reboot"), Since: t0.Add(time.Minute)}, wantAct: ActionWaiting},
		{name: "clean: resumed", at: 21 * time.Minute, req: health(results()), want: &Current{}, wantAct: ActionResumed},
		{name: "a fleet drain this host never recorded: Slurm's reason time", at: 30 * time.Minute,
			before: func() {
				f.nodes["n1"] = NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: fleet: slow: busbw", ReasonTime: t0.Add(25 * time.Minute)}
			},
			req:  health(results()),
			want: &Current{Drained: true, Reason: "nodecheck: fleet: slow: busbw", Since: t0.Add(25 * time.Minute)}, wantAct: ActionKept},
		{name: "an admin resumes: no drain", at: 35 * time.Minute,
			before: func() { f.nodes["n1"] = NodeState{Name: "n1", State: "IDLE"} },
			req:    health(results()), want: &Current{}, wantAct: ActionNone},
		{name: "no reason time (scontrol -o): first seen", at: 40 * time.Minute,
			before: func() {
				f.nodes["n1"] = NodeState{Name: "n1", State: "DOWN", Flags: []string{"DRAIN"}, Reason: reason + " : reboot issued"}
			},
			req:  health(results(ibDown)),
			want: &Current{Drained: true, Reason: reason + " : reboot issued", Since: t0.Add(40 * time.Minute)}, wantAct: ActionKept},
		{name: "and kept at the next run", at: 45 * time.Minute, req: health(results(ibDown)),
			want: &Current{Drained: true, Reason: reason + " : reboot issued", Since: t0.Add(40 * time.Minute)}, wantAct: ActionKept},
		{name: "an admin's drain is not nodecheck's", at: 50 * time.Minute,
			before: func() {
				f.nodes["n1"] = NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance"}
			},
			req: health(results(ibDown)), want: &Current{}, wantAct: ActionKept},
	}
	for _, s := range steps {
		now = t0.Add(s.at)
		if s.before != nil {
			s.before()
		}
		got := Apply(context.Background(), f, p, s.req)
		if got.Action != s.wantAct {
			t.Fatalf("%s: action %q (%s), want %q", s.name, got.Action, got.Message, s.wantAct)
		}
		if diff := cmp.Diff(s.want, got.Current); diff != "" {
			t.Fatalf("%s: Current (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestApplyCurrentWithoutState: with no state directory nothing remembers when a drain began:
// Slurm's reason time where Slurm gives it, else not known (zero), never "now" at every run.
func TestApplyCurrentWithoutState(t *testing.T) {
	const reason = "nodecheck: ib_ports: down [admin]"
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		node NodeState
		want time.Time
	}{
		{"scontrol --json gives the time", NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason, ReasonTime: at}, at},
		{"scontrol -o does not", NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Prefix: "nodecheck:", ResumeAfterPasses: 2, Now: func() time.Time { return at.Add(time.Hour) }}
			got := Apply(context.Background(), newFake(tc.node), p, health(results(ibDown)))
			want := &Current{Drained: true, Reason: reason, Since: tc.want}
			if diff := cmp.Diff(want, got.Current); diff != "" {
				t.Errorf("Current (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyCurrentDryRun: a dry run that would drain says so, from now; one that cannot read
// the node says nothing.
func TestApplyCurrentDryRun(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	p := testPolicy(t)
	p.Now = func() time.Time { return at }
	req := health(results(ibDown))
	req.DryRun = true
	got := Apply(context.Background(), newFake(NodeState{Name: "n1", State: "IDLE"}), p, req)
	want := &Current{Drained: true, Reason: "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE", Since: at}
	if diff := cmp.Diff(want, got.Current); diff != "" {
		t.Errorf("dry run: Current (-want +got):\n%s", diff)
	}
	down := newFake(NodeState{Name: "n1", State: "IDLE"})
	down.down = true
	if got := Apply(context.Background(), down, p, health(results(ibDown))); got.Current != nil || got.Action != ActionUnreachable {
		t.Errorf("controller down: action %q, Current %+v; want unreachable and nil", got.Action, got.Current)
	}
}
