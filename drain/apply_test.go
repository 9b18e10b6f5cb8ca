package drain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

// fakeSlurm is a controller in memory: node states by name, a record of updates, and a clock
// that stamps reasons in whole ticks, as slurmctld does in seconds.
type fakeSlurm struct {
	mu         sync.Mutex
	nodes      map[string]NodeState
	down       bool          // every call fails as if slurmctld were unreachable
	delay      time.Duration // every call takes this long (or until ctx ends)
	updates    []string
	tick       time.Duration // reason time resolution (default a second)
	keepReason bool          // RESUME keeps the reason, as Slurm 24.11 does
	before     func(op, node string)
}

func newFake(nodes ...NodeState) *fakeSlurm {
	f := &fakeSlurm{nodes: map[string]NodeState{}}
	for _, n := range nodes {
		f.nodes[n.Name] = n
	}
	return f
}

func (f *fakeSlurm) wait(ctx context.Context, op, node string) error {
	if f.before != nil {
		f.before(op, node)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return &CommandError{Argv: []string{"/usr/bin/scontrol"}, ExitCode: -1, Err: ctx.Err()}
		}
	}
	if f.down {
		return &CommandError{Argv: []string{"/usr/bin/scontrol"}, ExitCode: 1, Stderr: "Unable to contact slurm controller (connect failure)"}
	}
	return nil
}

func (f *fakeSlurm) Node(ctx context.Context, name string) (NodeState, error) {
	if err := f.wait(ctx, "node", name); err != nil {
		return NodeState{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[name]
	if !ok {
		return NodeState{}, &CommandError{Argv: []string{"/usr/bin/scontrol"}, ExitCode: 1, Stderr: "Node " + name + " not found"}
	}
	return n, nil
}

func (f *fakeSlurm) Nodes(ctx context.Context) ([]NodeState, error) {
	if err := f.wait(ctx, "nodes", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []NodeState
	for _, name := range slices.Sorted(maps.Keys(f.nodes)) {
		out = append(out, f.nodes[name])
	}
	return out, nil
}

func (f *fakeSlurm) Update(ctx context.Context, u Update) error {
	if err := f.wait(ctx, "update", u.Node); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[u.Node]
	tick := f.tick
	if tick == 0 {
		tick = time.Second
	}
	switch u.State {
	case "DRAIN":
		n.Flags, n.Reason, n.ReasonTime = union(n.Flags, []string{"DRAIN"}), u.Reason, time.Now().Truncate(tick)
	case "RESUME":
		n.Flags = slices.DeleteFunc(slices.Clone(n.Flags), func(s string) bool { return s == "DRAIN" })
		if !f.keepReason {
			n.Reason, n.ReasonTime = "", time.Time{}
		}
	}
	f.nodes[u.Node] = n
	f.updates = append(f.updates, u.Node+" "+u.State)
	return nil
}

func (f *fakeSlurm) Argv(u Update) []string {
	return (&Client{scontrol: "/usr/bin/scontrol"}).Argv(u)
}

var _ Slurm = (*fakeSlurm)(nil)

func testPolicy(t *testing.T) Policy {
	return Policy{Prefix: "nodecheck:", ResumeAfterPasses: 2, State: testState(filepath.Join(t.TempDir(), "state")), LockWait: time.Second}
}

// allChecks is the node's checks for these tests, as checks.IDs() would list them.
var allChecks = []string{"gres_devices", "gpu_count", "ib_ports", "xid_errors"}

// results is a run in which every check of allChecks said ok, but for the ones given.
func results(not ...CheckResult) []CheckResult {
	var out []CheckResult
	for _, id := range allChecks {
		r := CheckResult{Check: id, Status: StatusOK, Summary: "fine"}
		for _, n := range not {
			if n.Check == id {
				r = n
			}
		}
		if r.Status != "" {
			out = append(out, r)
		}
	}
	return out
}

// notRun leaves a check out of results.
func notRun(id string) CheckResult { return CheckResult{Check: id} }

var ibDown = CheckResult{Check: "ib_ports", Status: StatusFail, Summary: "mlx5_5/1: state 1: DOWN, want 4: ACTIVE"}

// health is a health run that may drain and resume.
func health(rs []CheckResult) Request {
	return Request{Node: "n1", Mode: config.ModeHealth, Results: rs, Known: allChecks, Drain: true, Resume: true}
}

// TestApplySequence walks one node through failing and clean runs, as docs/draining.md
// describes: drained at the first failure, resumed after two clean health runs, and the count
// reset by a failure in between.
func TestApplySequence(t *testing.T) {
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	p := testPolicy(t)
	steps := []struct {
		name   string
		req    Request
		want   Action
		passes int
	}{
		{"health fails: drained", health(results(ibDown)), ActionDrained, 0},
		{"health fails again: kept", health(results(ibDown)), ActionKept, 0},
		{"one clean run: waiting", health(results()), ActionWaiting, 1},
		{"failure resets the count", health(results(ibDown)), ActionKept, 0},
		{"clean again: 1 of 2", health(results()), ActionWaiting, 1},
		{"partial clean run does not count", Request{Node: "n1", Mode: config.ModeHealth, Results: []CheckResult{{Check: "ib_ports", Status: StatusOK, Summary: ""}}, Known: allChecks, Drain: true, Resume: true, Partial: true}, ActionWaiting, 1},
		{"prolog clean run does not count", Request{Node: "n1", Mode: config.ModeProlog, Results: results(), Known: allChecks, Drain: true}, ActionNone, 0},
		{"second clean run: resumed", health(results()), ActionResumed, 2},
		{"third clean run: nothing to do", health(results()), ActionNone, 3},
		{"prolog fails: drained", Request{Node: "n1", Mode: config.ModeProlog, Results: results(ibDown), Known: allChecks, Drain: true}, ActionDrained, 0},
	}
	for _, s := range steps {
		got := Apply(context.Background(), f, p, s.req)
		if got.Action != s.want || (s.req.Mode == config.ModeHealth && got.Passes != s.passes) {
			t.Fatalf("%s: action %q passes %d, want %q passes %d (%s; warnings %v)", s.name, got.Action, got.Passes, s.want, s.passes, got.Message, got.Warnings)
		}
		if len(got.Warnings) > 0 {
			t.Fatalf("%s: warnings %v", s.name, got.Warnings)
		}
	}
	want := []string{"n1 DRAIN", "n1 RESUME", "n1 DRAIN"}
	if diff := cmp.Diff(want, f.updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if got := f.nodes["n1"].Reason; got != "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE" {
		t.Errorf("reason %q", got)
	}
}

// TestApplyEvidence: a node drained by ib_ports resumes only after two runs in a row in which
// ib_ports looked and found the port up. A run in which ib_ports could not look (error), did
// not look (skip) or did not run breaks the row; a partial or undecided run neither counts nor
// breaks it; warn counts.
func TestApplyEvidence(t *testing.T) {
	ibErr := CheckResult{Check: "ib_ports", Status: StatusError, Summary: "read /sys/class/infiniband: permission denied"}
	ibSkip := CheckResult{Check: "ib_ports", Status: StatusSkip, Summary: "no InfiniBand devices under /sys/class/infiniband"}
	ibWarn := CheckResult{Check: "ib_ports", Status: StatusWarn, Summary: "mlx5_5/1: rate 200 Gb/s, want 400"}
	gpuErr := CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"}
	type step struct {
		req     Request
		want    Action
		passes  int
		message string
	}
	partial := func(rs ...CheckResult) Request {
		r := health(rs)
		r.Partial = true
		return r
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"error never counts and resets", []step{
			{health(results(ibErr)), ActionWaiting, 0, "ib_ports, which drained the node, could not look (error: read /sys/class/infiniband: permission denied)"},
			{health(results(ibErr)), ActionWaiting, 0, "could not look"},
			{health(results(ibErr)), ActionWaiting, 0, "could not look"},
			{health(results()), ActionWaiting, 1, "ib_ports found the fault gone"},
			{health(results(ibErr)), ActionWaiting, 0, "could not look"},
			{health(results()), ActionWaiting, 1, ""},
			{health(results()), ActionResumed, 2, "ib_ports found the fault gone"},
		}},
		{"skip resets", []step{
			{health(results()), ActionWaiting, 1, ""},
			{health(results(ibSkip)), ActionWaiting, 0, "did not look (skip: no InfiniBand devices"},
		}},
		{"not run resets", []step{
			{health(results()), ActionWaiting, 1, ""},
			{health(results(notRun("ib_ports"))), ActionWaiting, 0, "ib_ports, which drained the node, did not run"},
		}},
		{"warn counts", []step{
			{health(results(ibWarn)), ActionWaiting, 1, ""},
			{health(results(ibWarn)), ActionResumed, 2, ""},
		}},
		{"partial neither counts nor resets", []step{
			{health(results()), ActionWaiting, 1, ""},
			{partial(CheckResult{Check: "ib_ports", Status: StatusOK}), ActionWaiting, 1, "a partial run (--check) does not count"},
			{partial(CheckResult{Check: "gpu_count", Status: StatusOK}), ActionWaiting, 1, "does not count"},
			{partial(ibErr), ActionWaiting, 0, "could not look"},
		}},
		{"undecided through another check neither counts nor resets", []step{
			{health(results()), ActionWaiting, 1, ""},
			{health(results(gpuErr)), ActionWaiting, 1, "gpu_count could not decide (error), so the run is undecided and does not count"},
			{health(results()), ActionResumed, 2, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(NodeState{Name: "n1", State: "IDLE"})
			p := testPolicy(t)
			if got := Apply(context.Background(), f, p, health(results(ibDown))); got.Action != ActionDrained {
				t.Fatalf("drain: %+v", got)
			}
			for i, s := range tc.steps {
				got := Apply(context.Background(), f, p, s.req)
				if got.Action != s.want || got.Passes != s.passes || !strings.Contains(got.Message, s.message) {
					t.Fatalf("run %d: %q passes %d %q; want %q passes %d with %q", i+1, got.Action, got.Passes, got.Message, s.want, s.passes, s.message)
				}
				if diff := cmp.Diff([]string{"ib_ports"}, got.DrainedBy); diff != "" {
					t.Errorf("run %d: drained_by (-want +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

// TestApplyResumeNeedsACountingRun: the passes already counted are never enough alone: a run
// that does not count (undecided, partial) does not resume a node, even when
// resume_after_passes was lowered under the count meanwhile (docs/output.md:
// an undecided run never resumes).
func TestApplyResumeNeedsACountingRun(t *testing.T) {
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	p := testPolicy(t)
	Apply(context.Background(), f, p, health(results(ibDown)))
	if got := Apply(context.Background(), f, p, health(results())); got.Action != ActionWaiting || got.Passes != 1 {
		t.Fatalf("first clean run: %+v", got)
	}
	p.ResumeAfterPasses = 1
	undecided := health(results(CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"}))
	partial := health([]CheckResult{{Check: "ib_ports", Status: StatusOK, Summary: ""}})
	partial.Partial = true
	for _, r := range []Request{undecided, partial} {
		if got := Apply(context.Background(), f, p, r); got.Action != ActionWaiting || got.Passes != 1 {
			t.Errorf("a run that does not count: %q passes %d %q, want waiting", got.Action, got.Passes, got.Message)
		}
	}
	if got := Apply(context.Background(), f, p, health(results())); got.Action != ActionResumed {
		t.Errorf("a counting run: %+v, want resumed", got)
	}
}

// TestApplyRepairPasses: a node whose reason carries a repair's tag waits for
// passes_to_resume clean runs (RepairPasses) instead of resume_after_passes; without the tag,
// or with repairs off (RepairPasses 0), resume_after_passes holds.
func TestApplyRepairPasses(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reason       string
		repairPasses int
		resumedAfter int
	}{
		{"repaired node, passes_to_resume 3", "nodecheck: ib_ports: down [repair: reset_gpu]", 3, 3},
		{"drained node, no repair", "nodecheck: ib_ports: down", 3, 2},
		{"repairs off", "nodecheck: ib_ports: down [repair: reset_gpu]", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: tc.reason})
			p := testPolicy(t)
			p.RepairPasses = tc.repairPasses
			for i := 1; i <= tc.resumedAfter; i++ {
				got := Apply(context.Background(), f, p, health(results()))
				if want := map[bool]Action{true: ActionResumed, false: ActionWaiting}[i == tc.resumedAfter]; got.Action != want {
					t.Fatalf("run %d: %s (%s), want %s", i, got.Action, got.Message, want)
				}
			}
		})
	}
}

// TestApplyEvidenceGrows: a check that fails while the node stays drained joins the checks a
// resume waits on.
func TestApplyEvidenceGrows(t *testing.T) {
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	p := testPolicy(t)
	gpuFail := CheckResult{Check: "gpu_count", Status: StatusFail, Summary: "7 of 8 GPUs"}
	gpuErr := CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"}
	Apply(context.Background(), f, p, health(results(ibDown)))
	if got := Apply(context.Background(), f, p, health(results(gpuFail))); got.Action != ActionKept {
		t.Fatalf("second failure: %+v", got)
	}
	got := Apply(context.Background(), f, p, health(results(gpuErr)))
	if got.Passes != 0 || !strings.Contains(got.Message, "gpu_count, which drained the node, could not look") {
		t.Errorf("gpu_count errors: %+v", got)
	}
	if diff := cmp.Diff([]string{"ib_ports", "gpu_count"}, got.DrainedBy); diff != "" {
		t.Errorf("drained_by (-want +got):\n%s", diff)
	}
}

// TestApplyLegacyDrain: a node drained before nodecheck kept the failing checks (format 1
// state, or none) waits on the check its reason names.
func TestApplyLegacyDrain(t *testing.T) {
	for _, tc := range []struct {
		name, state string
	}{
		{"format 1 state", `{"format": 1, "nodes": {"n1": {"consecutive_passes": 1, "updated_at": "2024-01-01T00:00:00Z"}}}`},
		{"no state", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy(t)
			if tc.state != "" {
				writeStateFile(t, p.State.Path(), tc.state)
			}
			f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: mlx5_5/1 down (+1 more)"})
			got := Apply(context.Background(), f, p, health(results(CheckResult{Check: "ib_ports", Status: StatusError, Summary: "no sysfs"})))
			if got.Action != ActionWaiting || got.Passes != 0 || len(got.Warnings) > 0 {
				t.Fatalf("ib_ports errors: %+v", got)
			}
			if diff := cmp.Diff([]string{"ib_ports"}, got.DrainedBy); diff != "" {
				t.Errorf("drained_by (-want +got):\n%s", diff)
			}
			Apply(context.Background(), f, p, health(results()))
			if got := Apply(context.Background(), f, p, health(results())); got.Action != ActionResumed {
				t.Errorf("after two clean runs: %+v", got)
			}
		})
	}
}

// TestApplyResumeByHand: a drain for a check that is not the node's own (the fleet sweep's
// "fleet"), or a reason naming no check, is never resumed by the node's health runs.
func TestApplyResumeByHand(t *testing.T) {
	for _, reason := range []string{
		"nodecheck: fleet: slow: busbw 405.1 GB/s at 4 GiB, 8.1% below the h100 median 440.8",
		"nodecheck: (+2 more)",
		"nodecheck:",
	} {
		t.Run(reason, func(t *testing.T) {
			f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: reason})
			p := testPolicy(t)
			for i := range 4 {
				got := Apply(context.Background(), f, p, health(results()))
				if got.Action != ActionKept || !strings.Contains(got.Message, "resume it by hand") {
					t.Fatalf("clean run %d: %q %q, want kept, by hand", i+1, got.Action, got.Message)
				}
			}
			// A failing run keeps the drain and its reason, and records nothing a later run
			// could resume on.
			if got := Apply(context.Background(), f, p, health(results(ibDown))); got.Action != ActionKept {
				t.Fatalf("failing run: %+v", got)
			}
			for range 3 {
				if got := Apply(context.Background(), f, p, health(results())); got.Action != ActionKept {
					t.Fatalf("clean run after a failure: %+v", got)
				}
			}
			if len(f.updates) != 0 {
				t.Errorf("updates %v", f.updates)
			}
		})
	}
}

func TestApplyOutcomes(t *testing.T) {
	idle := NodeState{Name: "n1", State: "IDLE"}
	admin := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance"}
	ours := func(name string) NodeState {
		return NodeState{Name: name, State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: x"}
	}
	// Slurm 24.11 keeps the reason of a resumed node: in service, it counts for nothing.
	resumed := func(name, reason string) NodeState { return NodeState{Name: name, State: "IDLE", Reason: reason} }
	failing := health(results(ibDown))
	clean := Request{Node: "n1", Mode: config.ModeHealth, Results: results(), Known: allChecks, Resume: true}
	tests := []struct {
		name     string
		fake     *fakeSlurm
		policy   func(*Policy)
		req      Request
		want     Action
		message  string
		updates  int
		commands []string
	}{
		{"admin drain kept when failing", newFake(admin), nil, failing, ActionKept, "maintenance", 0, nil},
		{"admin drain never resumed", newFake(admin), nil, clean, ActionKept, "never resumed", 0, nil},
		{"controller down: unreachable, nothing changed", &fakeSlurm{nodes: map[string]NodeState{"n1": idle}, down: true}, nil, failing, ActionUnreachable, "Unable to contact slurm controller", 0, nil},
		{"unknown node", newFake(idle), nil, Request{Node: "n9", Mode: config.ModeHealth, Results: results(ibDown), Drain: true}, ActionUnreachable, "Node n9 not found", 0, nil},
		{"limit holds the drain", newFake(idle, ours("n2"), ours("n3"), NodeState{Name: "n4", State: "IDLE"}), func(p *Policy) { p.MaxDrained = Limit{N: 50, Percent: true} },
			failing, ActionHeld, "safety limit reached: 2 of 4 nodes already carry nodecheck's drain (n2, n3)", 0, nil},
		{"limit not reached", newFake(idle, ours("n2"), NodeState{Name: "n3", State: "IDLE"}), func(p *Policy) { p.MaxDrained = Limit{N: 2}; p.Settle = time.Millisecond },
			failing, ActionDrained, "", 1, []string{"/usr/bin/scontrol update NodeName=n1 State=DRAIN 'Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE'"}},
		{"foreign drains do not count toward the limit", newFake(idle, admin2("n2")), func(p *Policy) { p.MaxDrained = Limit{N: 1}; p.Settle = time.Millisecond },
			failing, ActionDrained, "", 1, nil},
		{"a resumed node's leftover reason does not count (24.11)", newFake(idle, resumed("n2", "nodecheck: ib_ports: x"), resumed("n3", "nodecheck: gpu_count: y")),
			func(p *Policy) { p.MaxDrained = Limit{N: 1}; p.Settle = time.Millisecond }, failing, ActionDrained, "", 1, nil},
		{"a leftover admin reason on a node in service does not stop a drain (24.11)", newFake(resumed("n1", "maintenance")), nil, failing, ActionDrained, "", 1, nil},
		{"down with nodecheck's reason counts toward the limit", newFake(idle, NodeState{Name: "n2", State: "DOWN", Reason: "nodecheck: x"}),
			func(p *Policy) { p.MaxDrained = Limit{N: 1} }, failing, ActionHeld, "1 of 2 nodes already carry nodecheck's drain (n2)", 0, nil},
		{"dry run drains nothing", newFake(idle), nil, Request{Node: "n1", Mode: config.ModeHealth, Results: results(ibDown), Drain: true, DryRun: true},
			ActionDrained, "dry run, would drain", 0, []string{"/usr/bin/scontrol update NodeName=n1 State=DRAIN 'Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE'"}},
		{"healthy prolog calls nothing", &fakeSlurm{down: true}, nil, Request{Node: "n1", Mode: config.ModeProlog, Results: results(), Drain: true}, ActionNone, "healthy", 0, nil},
		{"undecided prolog: never called healthy", &fakeSlurm{down: true}, nil, Request{Node: "n1", Mode: config.ModeProlog, Drain: true,
			Results: results(CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"})}, ActionNone, "no check failed, but the run is undecided (a check could not look)", 0, nil},
		{"manual without --drain only reports", &fakeSlurm{down: true}, nil, Request{Node: "n1", Mode: config.ModeManual, Results: results(ibDown)}, ActionNone, "does not drain", 0, nil},
		{"no time left", newFake(idle), nil, failing, ActionSkipped, "no time left", 0, nil},
		{"error_is_failure drains for an error", newFake(idle), func(p *Policy) { p.ErrorIsFailure = true },
			health(results(CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"})), ActionDrained, "drain: nodecheck: gpu_count: NVML: driver not loaded", 1, nil},
		{"an error alone does not drain", newFake(idle), nil,
			health(results(CheckResult{Check: "gpu_count", Status: StatusError, Summary: "NVML: driver not loaded"})), ActionNone, "no check failed, but the run is undecided; node is IDLE", 0, nil},
		{"a state nodecheck leaves alone", newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"MAINTENANCE", "RESERVED"}}), nil, failing,
			ActionKept, "MAINTENANCE: in a maintenance reservation", 0, nil},
		{"a state nodecheck does not know", newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"BLOCKED"}}), nil, failing,
			ActionKept, "node state IDLE+BLOCKED is not one nodecheck knows (BLOCKED is a state nodecheck does not know): nothing done", 0, nil},
		{"down with nodecheck's reason is left to Slurm", newFake(NodeState{Name: "n1", State: "DOWN", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"}), nil, clean,
			ActionKept, "node is DOWN+DRAIN (DOWN: Slurm or an admin took the node down", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy(t)
			if tc.policy != nil {
				tc.policy(&p)
			}
			ctx := context.Background()
			if tc.want == ActionSkipped {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			got := Apply(ctx, tc.fake, p, tc.req)
			if got.Action != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %q %q, want %q with %q", got.Action, got.Message, tc.want, tc.message)
			}
			if len(tc.fake.updates) != tc.updates {
				t.Errorf("updates %v, want %d", tc.fake.updates, tc.updates)
			}
			if tc.commands != nil {
				if diff := cmp.Diff(tc.commands, got.Commands); diff != "" {
					t.Errorf("commands (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func admin2(name string) NodeState {
	return NodeState{Name: name, State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance"}
}

// TestApplyStateDirUnusable: a state directory that cannot be created still lets a failing
// node be drained, and then never resumes (clean runs are not counted).
func TestApplyStateDirUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(t)
	p.State = testState(filepath.Join(file, "state")) // below a regular file: cannot be created, even by root
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	got := Apply(context.Background(), f, p, health(results(ibDown)))
	if got.Action != ActionDrained || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "not counted") {
		t.Fatalf("got %q, warnings %v; want drained with one warning", got.Action, got.Warnings)
	}
	for i := range 3 {
		got = Apply(context.Background(), f, p, health(results()))
		if got.Action != ActionWaiting || !strings.Contains(got.Message, "by hand") {
			t.Fatalf("clean run %d: got %q %q, want waiting", i+1, got.Action, got.Message)
		}
	}
}

// TestApplyStateWriteFails: a drain.json that cannot be replaced is reported, and the run
// still acts.
func TestApplyStateWriteFails(t *testing.T) {
	p := testPolicy(t)
	if err := os.MkdirAll(filepath.Join(p.State.Path(), stateFile), 0o700); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	got := Apply(context.Background(), f, p, health(results(ibDown)))
	if got.Action != ActionDrained {
		t.Errorf("got %q %q, want drained", got.Action, got.Message)
	}
	if len(got.Warnings) != 2 || !strings.Contains(got.Warnings[1], "clean runs are not counted") {
		t.Errorf("warnings %q, want the read and the write reported", got.Warnings)
	}
}

// TestApplyCorruptState: a damaged drain.json is reported and replaced; counting restarts.
func TestApplyCorruptState(t *testing.T) {
	p := testPolicy(t)
	if err := os.MkdirAll(p.State.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.State.Path(), stateFile), []byte(`{"format": 2, "nodes": {"n1": {"consecutive_passes": 5`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"})
	got := Apply(context.Background(), f, p, health(results()))
	if got.Action != ActionWaiting || got.Passes != 1 || len(got.Warnings) != 1 {
		t.Fatalf("got %q passes %d warnings %v; want waiting, 1 pass, one warning", got.Action, got.Passes, got.Warnings)
	}
	st := readStateFile(t, p.State.Path())
	if st.Nodes["n1"].Passes != 1 || st.Format != 2 {
		t.Fatalf("state after the run: %+v", st)
	}
	info, err := os.Stat(p.State.Path())
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, %v; want 0700", info.Mode().Perm(), err)
	}
}

// TestApplyLockGoroutines: runs that overlap take turns. One run holds the lock while its
// scontrol call is slow; a second run with a short wait gives up and acts on nothing; a third
// with a long wait acts after the first.
func TestApplyLockGoroutines(t *testing.T) {
	p := testPolicy(t)
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	f.delay = 600 * time.Millisecond
	first := make(chan Outcome)
	go func() {
		first <- Apply(context.Background(), f, p, health(results(ibDown)))
	}()
	waitForLock(t, p.State.Path())

	short := p
	short.LockWait = 100 * time.Millisecond
	start := time.Now()
	got := Apply(context.Background(), f, short, health(results()))
	if got.Action != ActionLocked || !strings.Contains(got.Message, "another nodecheck run holds the lock") || !strings.Contains(got.Message, "no drain action taken") {
		t.Errorf("second run: got %q %q, want locked", got.Action, got.Message)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("second run waited %s, more than its 100ms", el)
	}

	long := p
	long.LockWait = 5 * time.Second
	third := Apply(context.Background(), f, long, health(results(ibDown)))
	if o := <-first; o.Action != ActionDrained {
		t.Errorf("first run: %q %q, want drained", o.Action, o.Message)
	}
	if third.Action != ActionKept {
		t.Errorf("third run: %q %q, want kept (it must see the first run's drain)", third.Action, third.Message)
	}
	if diff := cmp.Diff([]string{"n1 DRAIN"}, f.updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

// TestApplyLockBudget: the wait for the lock never outlasts the run's budget.
func TestApplyLockBudget(t *testing.T) {
	p := testPolicy(t)
	holder := holdLock(t, p.State.Path(), 3*time.Second)
	defer holder()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := Apply(ctx, newFake(NodeState{Name: "n1", State: "IDLE"}), p, Request{Node: "n1", Mode: config.ModeProlog, Results: results(ibDown), Known: allChecks, Drain: true})
	if got.Action != ActionLocked {
		t.Errorf("got %q %q, want locked", got.Action, got.Message)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("waited %s past a 200ms budget", el)
	}
}

// TestApplyLockOtherProcess: the lock keeps separate processes apart, as two nodecheck runs
// are. A helper process (this test binary, re-run) holds the lock.
func TestApplyLockOtherProcess(t *testing.T) {
	p := testPolicy(t)
	release := holdLock(t, p.State.Path(), 10*time.Second)
	short := p
	short.LockWait = 150 * time.Millisecond
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	if got := Apply(context.Background(), f, short, health(results(ibDown))); got.Action != ActionLocked {
		t.Fatalf("while another process holds the lock: %q %q, want locked", got.Action, got.Message)
	}
	release()
	if got := Apply(context.Background(), f, short, health(results(ibDown))); got.Action != ActionDrained {
		t.Fatalf("after it let go: %q %q, want drained", got.Action, got.Message)
	}
}

// holdLock starts a helper process that holds dir/lock for up to d and returns a function
// that ends it. It returns once the helper holds the lock.
func holdLock(t *testing.T, dir string, d time.Duration) func() {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
	cmd.Env = append(os.Environ(), "DRAIN_LOCK_HELPER_DIR="+dir, "DRAIN_LOCK_HELPER_HOLD="+d.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked" {
		t.Fatalf("helper: %q, %v", buf, err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// TestLockHelper is the helper process of holdLock, not a test of its own.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv("DRAIN_LOCK_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestApplyLockOtherProcess and TestApplyLockBudget")
	}
	d, err := time.ParseDuration(os.Getenv("DRAIN_LOCK_HELPER_HOLD"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lockState(context.Background(), dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print("locked")
	time.Sleep(d)
	l.close()
}

// waitForLock returns once some run holds dir/lock.
func waitForLock(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l, err := lockState(context.Background(), dir, time.Millisecond)
		if errors.Is(err, errLocked) {
			return
		}
		if err == nil {
			l.close()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("nobody took the lock")
}
