package history

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// memFS is a directory in memory behind a Store's injected functions.
type memFS struct {
	files map[string][]byte
	modes map[string]fs.FileMode
	reads int
}

func newMemFS() *memFS { return &memFS{files: map[string][]byte{}, modes: map[string]fs.FileMode{}} }

func (m *memFS) store(dir string) Store {
	return Store{
		Dir: dir,
		Read: func(path string, max int64) ([]byte, error) {
			m.reads++
			b, ok := m.files[path]
			if !ok {
				return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
			}
			return b[:min(int64(len(b)), max+1)], nil
		},
		Write: func(path string, data []byte, perm fs.FileMode) error {
			m.files[path], m.modes[path] = slices.Clone(data), perm
			return nil
		},
		Rename: func(o, n string) error {
			b, ok := m.files[o]
			if !ok {
				return fs.ErrNotExist
			}
			delete(m.files, o)
			m.files[n] = b
			return nil
		},
		Remove: func(p string) error { delete(m.files, p); return nil },
		List: func(d string) ([]string, error) {
			var names []string
			for p := range maps.Keys(m.files) {
				if filepath.Dir(p) == d {
					names = append(names, filepath.Base(p))
				}
			}
			slices.Sort(names)
			return names, nil
		},
		Limits: DefaultLimits(),
	}
}

// sample is a history built by merging real kernel log lines and invented counters.
func sampleHistory(t testing.TB) *History {
	t.Helper()
	h := New("gpu01")
	g := h100
	g.Counters[ECCCorrected] = Read(10)
	h.Merge(t0.Add(26*time.Hour), run(t0.Add(26*time.Hour), "boot-a", t0, dmesg2, g), DefaultLimits())
	p := PortObs{Device: "mlx5_0", Port: 1, Netdevs: []string{"ib0"}, State: 4, PhysState: 5}
	o := run(t0.Add(27*time.Hour), "boot-a", t0, dmesg2, g)
	o.Ports = []PortObs{p}
	h.Merge(t0.Add(27*time.Hour), o, DefaultLimits())
	if _, err := h.Clear(Selector{Port: "ib0"}, "root", t0.Add(27*time.Hour), "reseated the cable"); err != nil {
		t.Fatal(err)
	}
	if err := h.RecordRepair(Repair{Target: "gpu", Key: g.UUID, Action: "reset_gpu", Started: t0.Add(27 * time.Hour).Unix(), Outcome: OutcomePending}); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestStoreRoundTrip(t *testing.T) {
	m := newMemFS()
	s := m.store("/var/lib/nodecheck/history")
	h := sampleHistory(t)
	now := t0.Add(28 * time.Hour)
	if err := s.Save(h, now); err != nil {
		t.Fatal(err)
	}
	path := "/var/lib/nodecheck/history/gpu01.json"
	if m.modes[path] != 0o600 {
		t.Errorf("mode %v", m.modes[path])
	}
	got, err := s.Load("gpu01", now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("(-saved +loaded)\n%s", diff)
	}
	fresh, err := s.Load("gpu02", now)
	if err != nil || fresh.Node != "gpu02" || fresh.Format != Format || len(fresh.GPUs) != 0 {
		t.Errorf("no file: %+v, %v", fresh, err)
	}
}

func TestStoreBadFiles(t *testing.T) {
	valid, err := Encode(sampleHistory(t), t0.Add(28*time.Hour), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to string) []byte {
		if !strings.Contains(string(valid), from) {
			t.Fatalf("%q not in the file", from)
		}
		return []byte(strings.Replace(string(valid), from, to, 1))
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", valid[:len(valid)/2], fmt.Sprintf("truncated: the JSON stops at byte %d, inside a value", len(valid)/2)},
		{"empty", nil, "empty file"},
		{"not JSON", []byte("gpu01: all good\n"), "not valid JSON at byte 1: invalid character 'g' looking for beginning of value"},
		{"a future format", []byte(`{"format":2,"node":"gpu01"}`), "format 2 is from a newer nodecheck; this one reads format 1"},
		{"no format", []byte(`{"node":"gpu01","gpus":[]}`), `no "format": not a nodecheck history file`},
		{"format as a string", []byte(`{"format":"1","node":"gpu01"}`), "format: want int, not a JSON string, at byte 13"},
		{"another node's", edit(`"node":"gpu01"`, `"node":"gpu02"`), `written for node "gpu02", not "gpu01"`},
		{"a time in 1970", edit(`"first_seen":`, `"first_seen":-5,"x":`), "boots[0].first_seen: -5 is not a time between 2000 and 2100"},
		{"an absurd XID", edit(`"x":79`, `"x":100000`), "gpus[0].xids[0].x: 100000 is out of range (1 to 999)"},
		{"a control character", edit(`GPU has fallen off the bus.`, `GPU has fallen\u0007off the bus.`), "gpus[0].xids[0].m:"},
		{"a counter below -1", edit(`"c":[10,`, `"c":[-7,`), "gpus[0].samples[0].c[0]: -7 is out of range"},
		{"trailing garbage", append(slices.Clone(valid), "{}"...), "not valid JSON at byte"},
		{"too large", append(slices.Clone(valid), make([]byte, 1<<20)...), "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemFS()
			s := m.store("/state/history")
			m.files["/state/history/gpu01.json"] = tc.data
			now := t0.Add(30 * time.Hour)
			h, err := s.Load("gpu01", now)
			var bad *BadFileError
			if !errors.As(err, &bad) {
				t.Fatalf("error %v, want a *BadFileError", err)
			}
			if !strings.Contains(bad.Err.Error(), tc.want) {
				t.Errorf("reason %q, want it to say %q", bad.Err, tc.want)
			}
			if h == nil || h.Node != "gpu01" || len(h.GPUs) != 0 {
				t.Errorf("want a fresh history, got %+v", h)
			}
			kept := "/state/history/gpu01.json.bad-20261202T060000Z"
			if _, ok := m.files[kept]; !ok || bad.KeptAs != filepath.Base(kept) {
				t.Errorf("kept as %q; files %v", bad.KeptAs, slices.Collect(maps.Keys(m.files)))
			}
			if _, ok := m.files["/state/history/gpu01.json"]; ok {
				t.Error("the bad file is still in place")
			}
		})
	}
}

func TestBadFileMessage(t *testing.T) {
	m := newMemFS()
	s := m.store("/state/history")
	m.files["/state/history/gpu01.json"] = []byte(`{"format":1,"node":"gpu01","gpus":[{"uuid":"GPU-1","bus":"0000:9b`)
	_, err := s.Load("gpu01", t0)
	want := "history /state/history/gpu01.json: truncated: the JSON stops at byte 65, inside a value; " +
		"kept aside as gpu01.json.bad-20261201T000000Z, starting a fresh history (earlier events and admin clears are not counted)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestKeptAsideBounded(t *testing.T) {
	m := newMemFS()
	s := m.store("/state/history")
	for i := range 5 {
		m.files["/state/history/gpu01.json"] = []byte("not json")
		// Twice in the same second: the second gets its own name.
		now := t0.Add(time.Duration(i/2) * time.Hour)
		if _, err := s.Load("gpu01", now); err == nil {
			t.Fatal("no error")
		}
	}
	var kept []string
	for p := range m.files {
		kept = append(kept, filepath.Base(p))
	}
	slices.Sort(kept)
	want := []string{"gpu01.json.bad-20261201T010000Z", "gpu01.json.bad-20261201T010000Z-2", "gpu01.json.bad-20261201T020000Z"}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestLoadReadError(t *testing.T) {
	s := newMemFS().store("/state/history")
	s.Read = func(string, int64) ([]byte, error) { return nil, fs.ErrPermission }
	h, err := s.Load("gpu01", t0)
	if h != nil || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("got %v, %v; want no history and the read error", h, err)
	}
}

func TestStoreNodeNames(t *testing.T) {
	s := newMemFS().store("/state/history")
	for _, n := range []string{"gpu01", "rack1_node-2.cluster"} {
		if _, err := s.Path(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", ".", "..", "../etc/passwd", "a/b", "gpu 01", strings.Repeat("n", 129)} {
		if _, err := s.Load(n, t0); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

// TestStoreOnDisk sets a bad file aside in a real directory, through os.Rename.
func TestStoreOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := Store{Dir: dir, Limits: DefaultLimits(),
		Read: func(p string, max int64) ([]byte, error) { return os.ReadFile(p) },
		Write: func(p string, data []byte, perm fs.FileMode) error {
			return os.WriteFile(p, data, perm)
		}}
	if err := os.WriteFile(filepath.Join(dir, "n1.json"), []byte(`{"format":9,"node":"n1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := s.Load("n1", t0)
	var bad *BadFileError
	if !errors.As(err, &bad) || h == nil {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, bad.KeptAs)); err != nil {
		t.Error(err)
	}
	if err := s.Save(h, t0); err != nil {
		t.Fatal(err)
	}
	if h2, err := s.Load("n1", t0); err != nil || h2.Node != "n1" {
		t.Errorf("%+v %v", h2, err)
	}
}

func TestEncodeByteCap(t *testing.T) {
	h := fullHistory(t, DefaultLimits())
	lim := DefaultLimits()
	lim.MaxBytes = 16 << 10
	data, err := Encode(h, benchNow, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > lim.MaxBytes {
		t.Errorf("%d bytes over the %d cap", len(data), lim.MaxBytes)
	}
	if _, err := Decode(data, h.Node, 1<<20); err != nil {
		t.Errorf("the trimmed file does not decode: %v", err)
	}
	// The sticky XID survives: the first and newest of each XID are kept.
	if js := h.JudgeXIDs(benchNow, DefaultRules()); Worst(js) != StatusFail {
		t.Errorf("after trimming: %s", Worst(js))
	}
}

// TestDocExample decodes the file example of doc.go, so that the documentation stays true.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "Format 1:\n//\n")
	if !ok {
		t.Fatal("no example in doc.go")
	}
	var js strings.Builder
	for line := range strings.Lines(rest) {
		body, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			break
		}
		js.WriteString(body)
	}
	h, err := Decode([]byte(js.String()), "gpu01", 1<<20)
	if err != nil {
		t.Fatalf("%v\n%s", err, js.String())
	}
	if len(h.GPUs) != 1 || len(h.GPUs[0].XIDs) != 1 || len(h.Ports) != 1 || len(h.Repairs) != 1 || h.SyslogMark.N != 12 {
		t.Errorf("%+v", h)
	}
}
