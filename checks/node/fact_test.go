package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDeclaredFacts holds every declaration to what the machinery relies on: a name that is
// a file name of its own and not one of the snapshot's other files, words for errors, a
// reader, and a value that is a JSON object without the replay's own keys.
func TestDeclaredFacts(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range DeclaredFacts() {
		name := d.FactName()
		t.Run(name, func(t *testing.T) {
			if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(name) {
				t.Errorf("name %q: want lowercase letters, digits and '_'", name)
			}
			if seen[name] {
				t.Errorf("name %q declared twice", name)
			}
			seen[name] = true
			if f := name + ".json"; slices.Contains([]string{metaFile, devicesFile, commandsFile, nvmlFile}, f) {
				t.Errorf("name %q is the snapshot's %s", name, f)
			}
			if d.what() == "" {
				t.Error("What is empty: errors would say `read : ...`")
			}
			typ := d.valueType()
			b, err := encodeJSON(reflect.Zero(typ).Interface())
			if err != nil || !strings.HasPrefix(string(b), "{") {
				t.Errorf("the zero %v encodes as %s (%v), want a JSON object", typ, b, err)
			}
			for _, key := range []string{"delay_ms", "timed_out"} {
				if jsonFieldType(typ, key) != nil {
					t.Errorf("%v has a key %q, which a record keeps for the replay", typ, key)
				}
			}
		})
	}
}

// testValue is testFact's value.
type testValue struct {
	N     int      `json:"n"`
	Items []string `json:"items,omitempty"`
}

// testFact declares a fact for these tests only, read on the live node by live.
func testFact(live func(ctx context.Context) (testValue, error)) *Fact[testValue] {
	return &Fact[testValue]{
		Name: "test_value",
		What: "test value",
		Live: func(ctx context.Context, _ *Live) (testValue, error) { return live(ctx) },
		Check: func(v testValue) error {
			if v.N < 0 {
				return fmt.Errorf("n %d is negative", v.N)
			}
			return nil
		},
	}
}

// openTestSnapshot writes files (with a valid meta.json unless given) and opens the snapshot
// with decls as the declared facts.
func openTestSnapshot(t *testing.T, files map[string]string, decls ...FactDecl) (*Snapshot, error) {
	t.Helper()
	dir := t.TempDir()
	if _, ok := files[metaFile]; !ok {
		files = mergeFiles(files, map[string]string{metaFile: validMeta})
	}
	writeTree(t, dir, files)
	return openSnapshotFacts(context.Background(), dir, decls)
}

func TestFactLive(t *testing.T) {
	l, _ := fixtureLive(t)
	ok := testFact(func(context.Context) (testValue, error) { return testValue{N: 3}, nil })
	if got, err := Read(context.Background(), l, ok); err != nil || got.N != 3 {
		t.Errorf("Read = %+v, %v; want n 3", got, err)
	}

	// A reader that ignores ctx (a read blocked in the kernel) is abandoned at the deadline.
	release := make(chan struct{})
	defer close(release)
	stuck := testFact(func(context.Context) (testValue, error) {
		select { // bounded, so that a Live that waits for it fails here instead of hanging
		case <-release:
		case <-time.After(3 * time.Second):
		}
		return testValue{}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Read(ctx, l, stuck)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "read test value: ") {
		t.Errorf("stuck reader: %v, want the deadline, naming the fact", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stuck reader returned after %s", d)
	}

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	called := false
	notRun := testFact(func(context.Context) (testValue, error) { called = true; return testValue{}, nil })
	if _, err := Read(done, l, notRun); !errors.Is(err, context.Canceled) || called {
		t.Errorf("ctx done: %v (reader called: %v), want context.Canceled without a reading", err, called)
	}
}

// TestFactSnapshot replays a declared fact's record: checked at open with the file and the
// place named, absence as fs.ErrNotExist, delays from the record and from meta.json's key at
// FactPath, and a timed-out record as a hang.
func TestFactSnapshot(t *testing.T) {
	d := testFact(nil)
	const file = "test_value.json"
	hangMeta := func(key string) string {
		return `{"format": 1, "hostname": "h", "delay_ms": {"` + key + `": 60000}}`
	}
	tests := []struct {
		name    string
		files   map[string]string
		openErr string // the opening fails with this
		want    testValue
		wantErr error // the reading fails with this
		errText string
	}{
		{name: "recorded", files: map[string]string{file: `{"n": 2, "items": ["a"], "later": {"x": 1}}`},
			want: testValue{N: 2, Items: []string{"a"}}},
		{name: "absent", files: map[string]string{}, wantErr: fs.ErrNotExist,
			errText: "read test value: not recorded (the snapshot has no test_value.json)"},
		{name: "not an object", files: map[string]string{file: `[1]`}, openErr: "test_value.json: want a JSON object"},
		{name: "syntax", files: map[string]string{file: "{\n  \"n\": 2,\n}"}, openErr: "test_value.json:3:1: "},
		{name: "mistyped", files: map[string]string{file: "{\n  \"items\": \"a\"\n}"}, openErr: "test_value.json:2:14: items: string value, want an array"},
		{name: "Check refuses", files: map[string]string{file: `{"n": -1}`}, openErr: "test_value.json: n -1 is negative"},
		{name: "negative delay", files: map[string]string{file: `{"n": 1, "delay_ms": -5}`}, openErr: "test_value.json: delay_ms -5 is negative"},
		{name: "mistyped delay", files: map[string]string{file: `{"n": 1, "delay_ms": "5"}`}, openErr: "test_value.json:1:24: delay_ms: string value, want an integer"},
		{name: "own delay", files: map[string]string{file: `{"n": 1, "delay_ms": 60000}`}, wantErr: context.DeadlineExceeded},
		{name: "timed out", files: map[string]string{file: `{"timed_out": true}`}, wantErr: context.DeadlineExceeded,
			errText: "read test value: recorded as timed out"},
		{name: "timed out skips Check", files: map[string]string{file: `{"n": -1, "timed_out": true}`}, wantErr: context.DeadlineExceeded},
		{name: "meta.json delay at FactPath", files: map[string]string{metaFile: hangMeta(FactPath("test_value")), file: `{"n": 1}`},
			wantErr: context.DeadlineExceeded},
		{name: "meta.json delay above FactPath", files: map[string]string{metaFile: hangMeta("/nodecheck/facts")}, wantErr: context.DeadlineExceeded},
		{name: "meta.json delay of another fact", files: map[string]string{metaFile: hangMeta(FactPath("other")), file: `{"n": 1}`},
			want: testValue{N: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := openTestSnapshot(t, tc.files, d)
			if tc.openErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.openErr) || !strings.HasPrefix(err.Error(), "open snapshot ") {
					t.Fatalf("open: %v, want an error containing %q", err, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			got, err := Read(ctx, s, d)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("Read: %v, want %v saying %q", err, tc.wantErr, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFactSnapshotUndeclared(t *testing.T) {
	s, err := openTestSnapshot(t, map[string]string{"test_value.json": `{"n": 1}`})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), s, testFact(nil))
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "not in node.DeclaredFacts") {
		t.Errorf("an undeclared fact: %v, want an error saying it is not declared (not absence)", err)
	}
}

// TestFactSnapshotFreshValues: each reading decodes anew, so a caller that changes its value
// does not change the next caller's.
func TestFactSnapshotFreshValues(t *testing.T) {
	d := testFact(nil)
	s, err := openTestSnapshot(t, map[string]string{"test_value.json": `{"n": 1, "items": ["a", "b"]}`}, d)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := Read(context.Background(), s, d)
	first.Items[0] = "changed"
	if again, _ := Read(context.Background(), s, d); again.Items[0] != "a" {
		t.Errorf("second reading %+v shares the first's slice", again)
	}
}

// TestFactRecordReplay records a declared fact through a Recorder, saves, and replays it.
func TestFactRecordReplay(t *testing.T) {
	tests := []struct {
		name      string
		live      func(ctx context.Context) (testValue, error)
		want      testValue
		wantFile  string // "": no file written
		replayErr error
	}{
		{name: "value", live: func(context.Context) (testValue, error) { return testValue{N: 4, Items: []string{"x"}}, nil },
			want: testValue{N: 4, Items: []string{"x"}}, wantFile: "{\n  \"n\": 4,\n  \"items\": [\n    \"x\"\n  ]\n}\n"},
		{name: "deadline is a hang", live: func(ctx context.Context) (testValue, error) { <-ctx.Done(); return testValue{}, ctx.Err() },
			wantFile: "{\n  \"timed_out\": true\n}\n", replayErr: context.DeadlineExceeded},
		{name: "other errors are not recorded", live: func(context.Context) (testValue, error) { return testValue{}, errors.New("EIO") },
			replayErr: fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := testFact(tc.live)
			l, _ := fixtureLive(t)
			rec := NewRecorder(l)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			v, _ := Read(ctx, rec, d)
			v.N = 99 // the record is what was read, not what the caller made of it
			dir := filepath.Join(t.TempDir(), "snap")
			saved, err := rec.Save(dir, Meta{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "test_value.json"))
			if string(b) != tc.wantFile || (err == nil) != (tc.wantFile != "") {
				t.Errorf("test_value.json = %q (%v), want %q", b, err, tc.wantFile)
			}
			if got := slices.Contains(saved.Facts, "test_value"); got != (tc.wantFile != "") {
				t.Errorf("Saved.Facts = %q", saved.Facts)
			}
			if meta, _ := os.ReadFile(filepath.Join(dir, metaFile)); strings.Contains(string(meta), "delay_ms") {
				t.Errorf("meta.json %s: a declared fact's hang belongs in its own record", meta)
			}
			snap, err := openSnapshotFacts(context.Background(), dir, []FactDecl{d})
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer rcancel()
			got, err := Read(rctx, snap, d)
			if tc.replayErr != nil {
				if !errors.Is(err, tc.replayErr) {
					t.Errorf("replayed: %v, want %v", err, tc.replayErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replayed (-recorded +replayed):\n%s", diff)
			}
		})
	}
}

// TestFactRecordStillRunning: a reading still under way when Save runs is saved as timed out,
// whichever of Save and the reading's return comes first.
func TestFactRecordStillRunning(t *testing.T) {
	started := make(chan struct{})
	d := testFact(func(ctx context.Context) (testValue, error) {
		close(started)
		<-ctx.Done()
		return testValue{}, ctx.Err()
	})
	l, _ := fixtureLive(t)
	rec := NewRecorder(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _, _ = Read(ctx, rec, d); close(done) }()
	<-started
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, Meta{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	b, err := os.ReadFile(filepath.Join(dir, "test_value.json"))
	if err != nil || string(b) != "{\n  \"timed_out\": true\n}\n" {
		t.Errorf("test_value.json = %q, %v; want a timed-out record", b, err)
	}
}

// countingFact counts the readings of each declared fact that reach it.
type countingFact struct {
	Facts
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingFact) Fact(ctx context.Context, d FactDecl) (any, error) {
	c.mu.Lock()
	c.calls[d.FactName()]++
	c.mu.Unlock()
	return c.Facts.Fact(ctx, d)
}

func TestFactMemo(t *testing.T) {
	l, _ := fixtureLive(t)
	inner := &countingFact{Facts: l, calls: map[string]int{}}
	m := NewMemo(inner)
	a := testFact(func(context.Context) (testValue, error) { return testValue{N: 1}, nil })
	b := &Fact[testValue]{Name: "other", What: "other", Live: func(context.Context, *Live) (testValue, error) { return testValue{N: 2}, nil }}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if v, err := Read(context.Background(), m, a); err != nil || v.N != 1 {
				t.Errorf("Read a = %+v, %v", v, err)
			}
			if v, err := Read(context.Background(), m, b); err != nil || v.N != 2 {
				t.Errorf("Read b = %+v, %v", v, err)
			}
		})
	}
	wg.Wait()
	if want := map[string]int{"test_value": 1, "other": 1}; !maps.Equal(inner.calls, want) {
		t.Errorf("readings %v, want %v: one per fact per run", inner.calls, want)
	}
}

// wrongFacts answers every declared fact with v.
type wrongFacts struct {
	Facts
	v any
}

func (w wrongFacts) Fact(context.Context, FactDecl) (any, error) { return w.v, nil }

func TestReadWrongAnswer(t *testing.T) {
	for _, v := range []any{nil, "text", &testValue{}} {
		_, err := Read(context.Background(), wrongFacts{v: v}, testFact(nil))
		if err == nil || !strings.HasPrefix(err.Error(), "read test value: the facts answered") {
			t.Errorf("answer %#v: %v, want an error naming the fact", v, err)
		}
	}
}

// TestRecordInventoryReadsDeclaredFacts: `nodecheck snapshot` asks for every declared fact
// once, reading again none that a check read, and writes what answered.
func TestRecordInventoryReadsDeclaredFacts(t *testing.T) {
	fix := absFixture(t, inventoryFixture)
	l, err := NewLive(Paths{Sys: filepath.Join(fix, "sys"), Dev: fix, FS: fix}, WithGPUSource(&fakeNVLinks{topo: twoLinked()}))
	if err != nil {
		t.Fatal(err)
	}
	inner := &countingFact{Facts: l, calls: map[string]int{}}
	rec := NewRecorder(inner)
	if _, err := Read(context.Background(), rec, NVLinkTopologyFact); err != nil {
		t.Fatal(err)
	}
	_, _ = rec.RecordInventory(context.Background(), 5*time.Second)
	saved, err := rec.Save(filepath.Join(t.TempDir(), "snap"), Meta{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, d := range DeclaredFacts() {
		want[d.FactName()] = 1
	}
	if !maps.Equal(want, inner.calls) {
		t.Errorf("readings %v, want each declared fact once: %v", inner.calls, want)
	}
	// This fixture holds what the inventory and a fake NVML give.
	for _, name := range []string{"inventory", "nvlinks"} {
		if !slices.Contains(saved.Facts, name) {
			t.Errorf("Saved.Facts = %q, want %s among them", saved.Facts, name)
		}
	}
}
