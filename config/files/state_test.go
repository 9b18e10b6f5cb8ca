package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStateDirOpen(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "real")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		euid     int
		readOnly bool
		wantErr  string // "" for none
		exists   bool
	}{
		{"created 0700", filepath.Join(base, "new", "state"), 1000, false, "", true},
		{"dry run, missing: an empty state", filepath.Join(base, "missing"), 1000, true, "", false},
		{"a symlink is refused", link, 1000, false, "is a symlink", false},
		{"a symlink is refused in a dry run too", link, 1000, true, "is a symlink", false},
		{"as root, writable by others: refused with the fix", open, 0, false, "chmod go-w", false},
		{"as another user, writable by others: used", open, 1000, false, "", true},
		{"no path", "", 0, false, "[state] dir is empty", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenStateDir(tc.path, tc.euid, tc.readOnly)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("OpenStateDir(%s) = %v, want an error with %q", tc.path, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Exists() != tc.exists {
				t.Errorf("Exists() = %v, want %v", s.Exists(), tc.exists)
			}
			if tc.exists && !tc.readOnly && tc.path != open {
				fi, err := os.Stat(tc.path)
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("created with %v, %v; want 0700", fi.Mode(), err)
				}
			}
		})
	}
}

func TestStateDirFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := OpenStateDir(dir, os.Geteuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, err := s.ReadFile("drain.json", 100); b != nil || err != nil {
		t.Fatalf("missing file = %q, %v; want nil, nil", b, err)
	}
	if err := s.WriteFile("drain.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "drain.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("written with %v, %v; want 0600", fi, err)
	}
	if b, err := s.ReadFile("drain.json", 100); string(b) != "{}\n" || err != nil {
		t.Errorf("read back %q, %v", b, err)
	}
	if _, err := s.ReadFile("drain.json", 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the bound: %v, want ErrTooLarge", err)
	}
	// A planted symlink is neither read nor written through.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "repair.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadFile("repair.json", 100); !errors.Is(err, ErrSymlink) {
		t.Errorf("read through a symlink: %v, want ErrSymlink", err)
	}
	if err := s.WriteFile("x/../drain.json", nil); err == nil {
		t.Error("a name with a slash was written")
	}
	if err := s.Rename("drain.json", "drain.json.bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "drain.json.bad")); err != nil {
		t.Errorf("rename: %v", err)
	}
}

func TestStateDirReadOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "drain.json"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStateDir(dir, os.Geteuid(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, _ := s.ReadFile("drain.json", 10); string(b) != "old" {
		t.Errorf("a dry run reads %q, want the file", b)
	}
	if err := s.WriteFile("drain.json", []byte("new")); err == nil {
		t.Error("a dry run wrote")
	}
	unlock, err := s.Lock(context.Background(), "lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(filepath.Join(dir, "lock")); !os.IsNotExist(err) {
		t.Errorf("a dry run made a lock file: %v", err)
	}
	sub, err := s.Sub("history")
	if err != nil || sub.Exists() {
		t.Errorf("a dry run's missing history = %v, %v; want an empty one", sub, err)
	}
}

func TestStateDirLockAndSub(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStateDir(dir, os.Geteuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unlock, err := s.Lock(context.Background(), "lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenStateDir(dir, os.Geteuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Lock(context.Background(), "lock", 50*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Errorf("second lock: %v, want ErrLocked", err)
	}
	unlock()
	unlock2, err := other.Lock(context.Background(), "lock", time.Second)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()

	h, err := s.Sub("history")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.WriteFile("gpu01.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "history", "gpu01.json")); err != nil {
		t.Error(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sub("planted"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Sub through a symlink: %v", err)
	}
	if _, err := s.Sub("../up"); err == nil {
		t.Error("Sub with a slash was opened")
	}
}
