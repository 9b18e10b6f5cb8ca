package drain

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// lockState opens dir as a run does and takes its lock.
func lockState(ctx context.Context, dir string, wait time.Duration) (*stateDir, error) {
	sd, err := files.OpenStateDir(dir, os.Geteuid(), false)
	if err != nil {
		return nil, err
	}
	d := &stateDir{dir: sd}
	if err := d.lock(ctx, wait); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// testState is the state directory at dir as a run opens it, for one run: a test that
// changes the directory between runs makes a new one, as a new process would.
func testState(dir string) *files.State {
	return files.NewState(dir, "[state] dir", os.Geteuid(), false)
}

func writeStateFile(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readStateFile(t *testing.T, dir string) passState {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st passState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDecodeState(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		in      string
		want    map[string]nodeRecord
		wantErr string
	}{
		{"format 2", `{"format": 2, "nodes": {"n1": {"consecutive_passes": 1, "updated_at": "2024-01-02T03:04:05Z", "drained_by": ["ib_ports"], "reason": "nodecheck: ib_ports: x"}}}`,
			map[string]nodeRecord{"n1": {Passes: 1, UpdatedAt: at, DrainedBy: []string{"ib_ports"}, Reason: "nodecheck: ib_ports: x"}}, ""},
		{"format 1 migrates: counts start again", `{"format": 1, "nodes": {"n1": {"consecutive_passes": 1, "updated_at": "2024-01-02T03:04:05Z"}}}`,
			map[string]nodeRecord{"n1": {}}, ""},
		{"negative count", `{"format": 2, "nodes": {"n1": {"consecutive_passes": -4}}}`, map[string]nodeRecord{"n1": {}}, ""},
		{"unknown format", `{"format": 3, "nodes": {"n1": {"consecutive_passes": 9}}}`, map[string]nodeRecord{}, "format 3, want 2; counting clean runs from 0"},
		{"cut short", `{"format": 2, "nodes": {"n1": {"consecut`, map[string]nodeRecord{}, "unexpected end of JSON input; counting clean runs from 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeState([]byte(tc.in), "drain.json")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got.Nodes); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// needRoot skips tests that give files away or rely on root's view of ownership.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a directory to another user")
	}
}

// TestApplyUntrustedStateDir: another user's world-writable state directory
// whose drain.json says 99 clean runs must not resume a node after one run: the directory is
// refused with the commands that fix it, and without a usable state nodecheck never resumes.
func TestApplyUntrustedStateDir(t *testing.T) {
	needRoot(t)
	p := testPolicy(t)
	writeStateFile(t, p.State.Path(), `{"format": 2, "nodes": {"n1": {"consecutive_passes": 99, "drained_by": ["ib_ports"], "reason": "nodecheck: ib_ports: x"}}}`)
	if err := os.Chown(p.State.Path(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.State.Path(), 0o777); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"})
	for i := range 3 {
		got := Apply(context.Background(), f, p, health(results()))
		if got.Action != ActionWaiting || len(got.Warnings) != 1 {
			t.Fatalf("run %d: %q %q %v, want waiting with a warning", i+1, got.Action, got.Message, got.Warnings)
		}
		want := "state directory " + p.State.Path() + " is owned by uid 65534, not root and mode -rwxrwxrwx lets group or others write it, and nodecheck runs as root; run: chown root " + p.State.Path() + " && chmod go-w " + p.State.Path()
		if !strings.HasPrefix(got.Warnings[0], want) {
			t.Errorf("warning %q\nwant it to start %q", got.Warnings[0], want)
		}
	}
	if len(f.updates) != 0 {
		t.Errorf("updates %v", f.updates)
	}
	// A failing node is still drained: the state directory only counts clean runs.
	f = newFake(NodeState{Name: "n1", State: "IDLE"})
	if got := Apply(context.Background(), f, p, health(results(ibDown))); got.Action != ActionDrained {
		t.Errorf("failing run: %+v", got)
	}
	if st := readStateFile(t, p.State.Path()); st.Nodes["n1"].Passes != 99 {
		t.Errorf("the untrusted drain.json was rewritten: %+v", st)
	}
}

// TestApplyUntrustedStateFile: a drain.json another user owns (or may write) in a trusted
// directory is ignored: its counts are not believed.
func TestApplyUntrustedStateFile(t *testing.T) {
	needRoot(t)
	p := testPolicy(t)
	writeStateFile(t, p.State.Path(), `{"format": 2, "nodes": {"n1": {"consecutive_passes": 99, "drained_by": ["ib_ports"], "reason": "nodecheck: ib_ports: x"}}}`)
	if err := os.Chmod(filepath.Join(p.State.Path(), stateFile), 0o666); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"})
	got := Apply(context.Background(), f, p, health(results()))
	if got.Action != ActionWaiting || got.Passes != 1 || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "chmod go-w") {
		t.Fatalf("%q passes %d %v; want waiting after 1 pass, with the fix", got.Action, got.Passes, got.Warnings)
	}
}

// TestApplyStateDirSymlink: a symlink at the state directory's path is not followed.
func TestApplyStateDirSymlink(t *testing.T) {
	needRoot(t)
	p := testPolicy(t)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	writeStateFile(t, elsewhere, `{"format": 2, "nodes": {"n1": {"consecutive_passes": 99, "drained_by": ["ib_ports"], "reason": "nodecheck: ib_ports: x"}}}`)
	if err := os.Symlink(elsewhere, p.State.Path()); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"})
	got := Apply(context.Background(), f, p, health(results()))
	if got.Action != ActionWaiting || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "is a symlink, which nodecheck does not follow as root") {
		t.Fatalf("%q %v; want waiting, refused", got.Action, got.Warnings)
	}
}

// TestApplyLockSymlink: a symlink planted at <state>/lock must not make root
// create (or open) its target; the run still drains a failing node.
func TestApplyLockSymlink(t *testing.T) {
	p := testPolicy(t)
	if err := os.MkdirAll(p.State.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "etc-shadow-like")
	if err := os.Symlink(target, filepath.Join(p.State.Path(), lockFile)); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE"})
	got := Apply(context.Background(), f, p, health(results(ibDown)))
	if got.Action != ActionDrained || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "symlink") {
		t.Fatalf("%q %v; want drained with a warning about the symlink", got.Action, got.Warnings)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock symlink's target exists: %v", err)
	}
}

// TestApplyStateFileSymlink: a symlink at drain.json is neither read nor written through.
func TestApplyStateFileSymlink(t *testing.T) {
	p := testPolicy(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte(`{"format": 2, "nodes": {"n1": {"consecutive_passes": 99}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.State.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(p.State.Path(), stateFile)); err != nil {
		t.Fatal(err)
	}
	f := newFake(NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: x"})
	got := Apply(context.Background(), f, p, health(results()))
	if got.Passes != 1 || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "symlink") {
		t.Fatalf("passes %d %v; want 1 pass and a warning", got.Passes, got.Warnings)
	}
	if data, _ := os.ReadFile(victim); !strings.Contains(string(data), "99") {
		t.Errorf("the symlink's target was written: %s", data)
	}
	if fi, err := os.Lstat(filepath.Join(p.State.Path(), stateFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("drain.json: %v %v, want a regular file in place of the link", fi, err)
	}
}

// TestApplyLockedMessage: the locked message says how long the run waited,
// not the configured wait, when the budget cut the wait short.
func TestApplyLockedMessage(t *testing.T) {
	p := testPolicy(t)
	p.LockWait = 10 * time.Second
	release := holdLock(t, p.State.Path(), 5*time.Second)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := Apply(ctx, newFake(NodeState{Name: "n1", State: "IDLE"}), p, Request{Node: "n1", Mode: config.ModeProlog, Results: results(ibDown), Drain: true})
	took := time.Since(start)
	m := regexp.MustCompile(`\(waited ([0-9.a-z]+)\)`).FindStringSubmatch(got.Message)
	if got.Action != ActionLocked || m == nil {
		t.Fatalf("got %q %q, want locked, saying how long it waited", got.Action, got.Message)
	}
	waited, err := time.ParseDuration(m[1])
	if err != nil || waited < 300*time.Millisecond || waited > took+50*time.Millisecond {
		t.Errorf("message says it waited %s (%v); the run took %s with 300ms of budget and LockWait 10s", m[1], err, took)
	}
}
