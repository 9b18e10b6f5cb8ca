package node

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileStatLive stats a tree of each kind of path through Live, rooted at a temporary FS.
func TestFileStatLive(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "data"), []byte("12345"), 0o640))
	must(os.WriteFile(filepath.Join(root, "empty"), nil, 0o755))
	must(os.Mkdir(filepath.Join(root, "sticky"), 0o755))
	must(os.Chmod(filepath.Join(root, "sticky"), os.ModeSticky|0o777))
	must(os.Symlink("data", filepath.Join(root, "link")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	l, err := NewLive(Paths{Sys: root, Dev: root, FS: root})
	must(err)
	euid, egid := uint32(os.Geteuid()), uint32(os.Getegid())
	for _, tc := range []struct {
		path string
		want func(FileStat) bool
	}{
		{"/data", func(s FileStat) bool {
			return s.Type == "file" && s.Mode == 0o640 && s.Size == 5 && s.Readable && s.Writable && !s.Executable &&
				!s.Symlink && s.UID == euid && s.GID == egid && !s.MTime.IsZero()
		}},
		{"/empty", func(s FileStat) bool { return s.Type == "file" && s.Size == 0 && s.Executable }},
		{"/sticky", func(s FileStat) bool { return s.Type == "dir" && s.Mode == 0o1777 && s.Executable }},
		{"/link", func(s FileStat) bool { return s.Symlink && s.Type == "file" && s.Size == 5 }},
		{"/dangling", func(s FileStat) bool { return s.Symlink && s.Type == "" && !s.Missing && s.Error == "" }},
		{"/absent", func(s FileStat) bool { return s.Missing && s.Type == "" && !s.Symlink }},
		{"/data/under", func(s FileStat) bool { return s.Missing }}, // ENOTDIR
	} {
		st, err := l.FileStat(context.Background(), tc.path)
		if err != nil {
			t.Errorf("FileStat(%s): %v", tc.path, err)
			continue
		}
		if st.Path != tc.path || st.EUID != euid || st.EGID != egid || !tc.want(st) {
			t.Errorf("FileStat(%s) = %+v", tc.path, st)
		}
	}
	if _, err := l.FileStat(context.Background(), "relative"); err == nil {
		t.Error("FileStat(relative): no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.FileStat(ctx, "/data"); !errors.Is(err, context.Canceled) {
		t.Errorf("FileStat with ctx done: %v, want context.Canceled", err)
	}
}

// TestFileStatRecordReplay records FileStat answers and replays them; a path the recording
// never asked about is not recorded, not missing.
func TestFileStatRecordReplay(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Paths{Sys: root, Dev: root, FS: root})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(l)
	want := map[string]FileStat{}
	for _, p := range []string{"/data", "/absent"} {
		st, err := rec.FileStat(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = st
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, Meta{Hostname: "n1"}); err != nil {
		t.Fatal(err)
	}
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for p, w := range want {
		got, err := snap.FileStat(context.Background(), p)
		// The times go through JSON: compare them as instants.
		if err != nil || !got.MTime.Equal(w.MTime) || !got.ATime.Equal(w.ATime) {
			t.Errorf("replayed FileStat(%s) = %+v, %v; want %+v", p, got, err, w)
			continue
		}
		got.MTime, got.ATime, w.MTime, w.ATime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != w {
			t.Errorf("replayed FileStat(%s) = %+v; want %+v", p, got, w)
		}
	}
	if _, err := snap.FileStat(context.Background(), "/never"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "not recorded") {
		t.Errorf("FileStat of a path not recorded: %v, want not recorded", err)
	}
}

// TestParseStats refuses the records a recording never writes.
func TestParseStats(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`[{"path":"/a","type":"file"}]`, ""},
		{`[{"path":"a"}]`, "not a clean absolute path"},
		{`[{"path":"/a/../b"}]`, "not a clean absolute path"},
		{`[{"path":"/a"},{"path":"/a"}]`, "listed twice"},
		{`[{"path":"/a","type":"pipe"}]`, `type "pipe"`},
		{`[{"path":"/a","missing":true,"type":"file"}]`, "missing, yet"},
		{`[{"path":"/a","mode":4096}]`, "bits above 07777"},
		{`[{"path":"/a","delay_ms":-1}]`, "negative"},
		{`{"path":"/a"}`, "stats.json"},
	} {
		_, err := parseStats([]byte(tc.json))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("parseStats(%s): %v", tc.json, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("parseStats(%s) = %v, want an error with %q", tc.json, err, tc.want)
		}
	}
}

// TestFileStatReplayDelay: a replayed stat stalls for meta.json's delay on its path (a hung
// NFS mount, recorded) and gives up at ctx's end.
func TestFileStatReplayDelay(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"meta.json":  `{"format": 1, "hostname": "n1", "delay_ms": {"/nfs": 3600000}}`,
		"stats.json": `[{"path": "/nfs/home", "type": "dir", "mode": 493, "readable": true}, {"path": "/tmp", "type": "dir", "mode": 1023}]`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := snap.FileStat(ctx, "/nfs/home"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("FileStat under a delayed path: %v, want the deadline", err)
	}
	if st, err := snap.FileStat(context.Background(), "/tmp"); err != nil || st.Mode != 0o1777 || st.Type != "dir" {
		t.Errorf("FileStat(/tmp) = %+v, %v", st, err)
	}
}
