package drain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

// fakeSlurm is a controller in memory: node states by name, and a record of updates.
type fakeSlurm struct {
	mu      sync.Mutex
	nodes   map[string]NodeState
	down    bool          // every call fails as if slurmctld were unreachable
	delay   time.Duration // every call takes this long (or until ctx ends)
	updates []string
}

func newFake(nodes ...NodeState) *fakeSlurm {
	f := &fakeSlurm{nodes: map[string]NodeState{}}
	for _, n := range nodes {
		f.nodes[n.Name] = n
	}
	return f
}

func (f *fakeSlurm) wait(ctx context.Context) error {
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
	if err := f.wait(ctx); err != nil {
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

func (f *fakeSlurm) Reasons(ctx context.Context) ([]NodeReason, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []NodeReason
	for _, n := range f.nodes {
		out = append(out, NodeReason{n.Name, n.Reason})
	}
	return out, nil
}

func (f *fakeSlurm) Update(ctx context.Context, u Update) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[u.Node]
	switch u.State {
	case "DRAIN":
		n.Flags, n.Reason = []string{"DRAIN"}, u.Reason
	case "RESUME":
		n.Flags, n.Reason = nil, ""
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
	return Policy{Prefix: "nodecheck:", ResumeAfterPasses: 2, StateDir: filepath.Join(t.TempDir(), "state"), LockWait: time.Second}
}

var ibDown = []Failure{{"ib_ports", "mlx5_5/1: state 1: DOWN, want 4: ACTIVE"}}

// TestApplySequence walks one node through failing and clean runs, as README "Draining"
// describes: drained at the first failure, resumed after two clean health runs, and the count
// reset by a failure in between.
func TestApplySequence(t *testing.T) {
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	p := testPolicy(t)
	health := func(failures []Failure) Request {
		return Request{Node: "n1", Mode: config.ModeHealth, Failures: failures, Drain: true, Resume: true}
	}
	steps := []struct {
		name   string
		req    Request
		want   Action
		passes int
	}{
		{"health fails: drained", health(ibDown), ActionDrained, 0},
		{"health fails again: kept", health(ibDown), ActionKept, 0},
		{"one clean run: waiting", health(nil), ActionWaiting, 1},
		{"failure resets the count", health(ibDown), ActionKept, 0},
		{"clean again: 1 of 2", health(nil), ActionWaiting, 1},
		{"partial clean run does not count", Request{Node: "n1", Mode: config.ModeHealth, Drain: true, Resume: true, Partial: true}, ActionWaiting, 1},
		{"prolog clean run does not count", Request{Node: "n1", Mode: config.ModeProlog, Drain: true}, ActionNone, 0},
		{"second clean run: resumed", health(nil), ActionResumed, 2},
		{"third clean run: nothing to do", health(nil), ActionNone, 3},
		{"prolog fails: drained", Request{Node: "n1", Mode: config.ModeProlog, Failures: ibDown, Drain: true}, ActionDrained, 0},
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

func TestApplyOutcomes(t *testing.T) {
	idle := NodeState{Name: "n1", State: "IDLE"}
	admin := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "maintenance"}
	ours := func(name string) NodeState {
		return NodeState{Name: name, State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: x"}
	}
	failing := Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true, Resume: true}
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
		{"admin drain never resumed", newFake(admin), nil, Request{Node: "n1", Mode: config.ModeHealth, Resume: true}, ActionKept, "never resumed", 0, nil},
		{"controller down: unreachable, nothing changed", &fakeSlurm{nodes: map[string]NodeState{"n1": idle}, down: true}, nil, failing, ActionUnreachable, "Unable to contact slurm controller", 0, nil},
		{"unknown node", newFake(idle), nil, Request{Node: "n9", Mode: config.ModeHealth, Failures: ibDown, Drain: true}, ActionUnreachable, "Node n9 not found", 0, nil},
		{"limit holds the drain", newFake(idle, ours("n2"), ours("n3"), NodeState{Name: "n4", State: "IDLE"}), func(p *Policy) { p.MaxDrained = Limit{N: 50, Percent: true} },
			failing, ActionHeld, "safety limit reached: 2 of 4 nodes", 0, nil},
		{"limit not reached", newFake(idle, ours("n2"), NodeState{Name: "n3", State: "IDLE"}), func(p *Policy) { p.MaxDrained = Limit{N: 2} },
			failing, ActionDrained, "", 1, []string{"/usr/bin/scontrol update NodeName=n1 State=DRAIN 'Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE'"}},
		{"foreign drains do not count toward the limit", newFake(idle, admin2("n2")), func(p *Policy) { p.MaxDrained = Limit{N: 1} },
			failing, ActionDrained, "", 1, nil},
		{"dry run drains nothing", newFake(idle), nil, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true, DryRun: true},
			ActionDrained, "dry run, would drain", 0, []string{"/usr/bin/scontrol update NodeName=n1 State=DRAIN 'Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE'"}},
		{"healthy prolog calls nothing", &fakeSlurm{down: true}, nil, Request{Node: "n1", Mode: config.ModeProlog, Drain: true}, ActionNone, "healthy", 0, nil},
		{"manual without --drain only reports", &fakeSlurm{down: true}, nil, Request{Node: "n1", Mode: config.ModeManual, Failures: ibDown}, ActionNone, "does not drain", 0, nil},
		{"no time left", newFake(idle), nil, failing, ActionSkipped, "no time left", 0, nil},
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
	p.StateDir = filepath.Join(file, "state") // below a regular file: cannot be created, even by root
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	got := Apply(context.Background(), f, p, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true, Resume: true})
	if got.Action != ActionDrained || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "not counted") {
		t.Fatalf("got %q, warnings %v; want drained with one warning", got.Action, got.Warnings)
	}
	for i := range 3 {
		got = Apply(context.Background(), f, p, Request{Node: "n1", Mode: config.ModeHealth, Drain: true, Resume: true})
		if got.Action != ActionWaiting || !strings.Contains(got.Message, "by hand") {
			t.Fatalf("clean run %d: got %q %q, want waiting", i+1, got.Action, got.Message)
		}
	}
}

// TestApplyStateWriteFails: a drain.json that cannot be replaced is reported, and the run
// still acts.
func TestApplyStateWriteFails(t *testing.T) {
	p := testPolicy(t)
	if err := os.MkdirAll(filepath.Join(p.StateDir, stateFile), 0o700); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	got := Apply(context.Background(), f, p, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true})
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
	if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.StateDir, stateFile), []byte(`{"format": 1, "nodes": {"n1": {"consecutive_passes": 5`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: x"})
	got := Apply(context.Background(), f, p, Request{Node: "n1", Mode: config.ModeHealth, Drain: true, Resume: true})
	if got.Action != ActionWaiting || got.Passes != 1 || len(got.Warnings) != 1 {
		t.Fatalf("got %q passes %d warnings %v; want waiting, 1 pass, one warning", got.Action, got.Passes, got.Warnings)
	}
	st, err := readState(p.StateDir)
	if err != nil || st.Nodes["n1"].Passes != 1 {
		t.Fatalf("state after the run: %+v, %v", st, err)
	}
	info, err := os.Stat(p.StateDir)
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
		first <- Apply(context.Background(), f, p, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true})
	}()
	waitForLock(t, p.StateDir)

	short := p
	short.LockWait = 100 * time.Millisecond
	start := time.Now()
	got := Apply(context.Background(), f, short, Request{Node: "n1", Mode: config.ModeHealth, Drain: true, Resume: true})
	if got.Action != ActionLocked || !strings.Contains(got.Message, "another nodecheck run holds the lock") || !strings.Contains(got.Message, "no drain action taken") {
		t.Errorf("second run: got %q %q, want locked", got.Action, got.Message)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("second run waited %s, more than its 100ms", el)
	}

	long := p
	long.LockWait = 5 * time.Second
	third := Apply(context.Background(), f, long, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true})
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
	holder := holdLock(t, p.StateDir, 3*time.Second)
	defer holder()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := Apply(ctx, newFake(NodeState{Name: "n1", State: "IDLE"}), p, Request{Node: "n1", Mode: config.ModeProlog, Failures: ibDown, Drain: true})
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
	release := holdLock(t, p.StateDir, 10*time.Second)
	short := p
	short.LockWait = 150 * time.Millisecond
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	if got := Apply(context.Background(), f, short, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true}); got.Action != ActionLocked {
		t.Fatalf("while another process holds the lock: %q %q, want locked", got.Action, got.Message)
	}
	release()
	if got := Apply(context.Background(), f, short, Request{Node: "n1", Mode: config.ModeHealth, Failures: ibDown, Drain: true}); got.Action != ActionDrained {
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
	_ = l.Unlock()
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
			_ = l.Unlock()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("nobody took the lock")
}
