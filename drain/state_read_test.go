package drain

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// TestReadStateRefuses: drain.json that is a FIFO (with a writer that never writes, as a
// hung file system), a device, a symlink or over the bound is refused at once (the state
// directory's reader: files.OpenIn, never blocking, bounded), with an error saying what it
// is; the state starts empty, which can only delay a resume.
func TestReadStateRefuses(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		want    error
		wantMsg string
	}{
		{"FIFO", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
		}, files.ErrNotRegular, "not a regular file; counting clean runs from 0"},
		{"char device", func(t *testing.T, p string) {
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|5); err != nil {
				t.Skipf("mknod needs root: %v", err)
			}
		}, files.ErrNotRegular, "not a regular file"},
		{"symlink", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "planted.json")
			if err := os.WriteFile(target, []byte(`{"format": 1, "nodes": {"n1": {"consecutive_passes": 99}}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, files.ErrSymlink, "symlink"},
		{"symlink to /dev/zero", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, files.ErrSymlink, "symlink"},
		{"oversized", func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 1<<30); err != nil {
				t.Fatal(err)
			}
		}, files.ErrTooLarge, "file too large: larger than 1048576 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, stateFile)
			tc.make(t, path)
			dir2, err := files.OpenStateDir(dir, os.Geteuid(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer dir2.Close()
			sd := &stateDir{dir: dir2}
			start := time.Now()
			st, err := sd.read()
			if d := time.Since(start); d > time.Second {
				t.Errorf("read took %s", d)
			}
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("read error %v, want %v naming %s and saying %q", err, tc.want, path, tc.wantMsg)
			}
			if len(st.Nodes) != 0 {
				t.Errorf("state %+v, want empty", st)
			}
		})
	}
}
