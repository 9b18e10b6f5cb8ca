package files

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDir: a Dir reads what Read reads, by one name, and never follows a symlink (to a file
// or a sub-directory): those, and anything else it refuses, the caller asks its root.
func TestDir(t *testing.T) {
	dir := fixtures(t)
	if err := os.WriteFile(filepath.Join(dir, "dir", "attr"), []byte("16.0 GT/s PCIe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<10) // 16 KiB: past the stack buffer
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir", filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	top, err := OpenDirIn(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lim := Limits{MaxBytes: 64, FollowSymlinks: true}

	for _, tc := range []struct {
		name string
		lim  Limits
		want string // the content, or what the error says
		is   error  // the error's kind; nil for a read that works
	}{
		{"small", lim, "NodeName=gpu01\n", nil},
		{"exact", lim, strings.Repeat("x", 64), nil},
		{"over", lim, "over the limit", ErrTooLarge},
		{"huge", lim, "5 GiB", ErrTooLarge},
		{"big", Limits{MaxBytes: 1 << 20}, string(big), nil},
		{"big", Limits{MaxBytes: 1000}, "over the limit", ErrTooLarge},
		{"link", lim, "is a symlink", ErrSymlink}, // followed by root, never by a Dir
		{"fifo", lim, "read fifo: is a named pipe (FIFO)", ErrNotRegular},
		{"fifo-writer", lim, "named pipe", ErrNotRegular},
		{"sock", lim, "socket", ErrNotRegular},
		{"dir", lim, "directory", ErrNotRegular},
		{"absent", lim, "no such file", fs.ErrNotExist},
		{"..", lim, "not one name", nil},
		{"dir/attr", lim, "not one name", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			b, err := top.Read(ctx, tc.name, tc.lim)
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %s: a refusal must not wait", time.Since(start))
			}
			switch {
			case tc.is == nil && tc.want != "not one name":
				if err != nil || string(b) != tc.want {
					t.Errorf("= %.40q, %v; want %.40q", b, err, tc.want)
				}
			case err == nil:
				t.Errorf("= %.40q, want an error saying %q", b, tc.want)
			case tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %v; want %v saying %q", err, tc.is, tc.want)
			}
		})
	}

	sub, err := top.Sub("dir")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if b, err := sub.Read(ctx, "attr", lim); err != nil || string(b) != "16.0 GT/s PCIe\n" {
		t.Errorf("dir/attr through Sub: %q, %v", b, err)
	}
	for range 2 { // twice: a listing must not use up the Dir
		ents, err := top.ReadDir()
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if err != nil || !slices.IsSorted(names) || !slices.Contains(names, "dirlink") || len(names) != 15 {
			t.Errorf("ReadDir = %v, %v; want the 15 fixtures, sorted", names, err)
		}
		for _, e := range ents {
			if e.Name() == "dirlink" && e.Type() != fs.ModeSymlink {
				t.Errorf("dirlink listed as %v, want a symlink", e.Type())
			}
		}
	}
	if d, err := top.Sub("dirlink"); err == nil {
		d.Close()
		t.Error("Sub followed a symlink to a directory")
	}
	for _, name := range []string{"fifo", "devzero", "..", "a/b", "small"} {
		if d, err := top.Sub(name); err == nil {
			d.Close()
			t.Errorf("Sub(%q) opened it, want an error", name)
		}
	}
	// Beneath: links inside followed, links out refused, one call.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "dir", "abs-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(dir, "dir", "rel-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../dir", filepath.Join(dir, "dir", "rel-in")); err != nil {
		t.Fatal(err)
	}
	for name, ok := range map[string]bool{
		"dir": true, "dirlink": true, "dir/rel-in": true, "dirlink/rel-in": true,
		"dir/abs-out": false, "dir/rel-out": false, "dir/attr": false, "fifo": false,
		"devzero": false, "../dir": false, ".": false, "/dir": false, "absent": false,
	} {
		d, err := top.Beneath(name)
		if err == nil {
			b, rerr := d.Read(ctx, "attr", lim)
			d.Close()
			if !ok || rerr != nil || string(b) != "16.0 GT/s PCIe\n" {
				t.Errorf("Beneath(%q) opened it (attr %q, %v), want ok=%v", name, b, rerr, ok)
			}
		} else if ok && !errors.Is(err, syscall.ENOSYS) {
			t.Errorf("Beneath(%q): %v, want it opened", name, err)
		}
	}
	if target, err := top.Readlink("dirlink"); err != nil || target != "dir" {
		t.Errorf("Readlink(dirlink) = %q, %v", target, err)
	}
	if _, err := top.Readlink("small"); err == nil {
		t.Error("Readlink of a regular file: no error")
	}
}

// TestReadCheckSees: Limits.Check gets the opened file's stat, with its *syscall.Stat_t as
// Sys (the ownership rule reads the owner from it), through a path and through a root.
func TestReadCheckSees(t *testing.T) {
	dir := fixtures(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var seen []fs.FileInfo
	lim := Limits{MaxBytes: 64, Check: func(fi fs.FileInfo) error { seen = append(seen, fi); return nil }}
	if _, err := Read(context.Background(), filepath.Join(dir, "small"), lim); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadIn(context.Background(), root, "small", lim); err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(filepath.Join(dir, "small"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range seen {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Ino != want.Sys().(*syscall.Stat_t).Ino || fi.Name() != "small" || fi.Mode() != want.Mode() || fi.Size() != want.Size() || !fi.ModTime().Equal(want.ModTime()) {
			t.Errorf("Check saw %s %v %d %v, want the file's own stat", fi.Name(), fi.Mode(), fi.Size(), fi.ModTime())
		}
	}
	if len(seen) != 2 {
		t.Errorf("Check called %d times, want 2", len(seen))
	}
}

// TestReadPseudoFiles: files that do not say their size (/proc says 0, sysfs 4096 for a few
// bytes) are read to the read that returns nothing, as os.ReadFile reads them.
func TestReadPseudoFiles(t *testing.T) {
	for _, p := range []string{"/proc/self/mountinfo", "/proc/meminfo", "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "/sys/devices/system/cpu/online"} {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Logf("%s: %v (not on this machine)", p, err)
			continue
		}
		got, err := Read(context.Background(), p, Limits{MaxBytes: 1 << 20})
		if err != nil || len(got) == 0 || !strings.HasPrefix(string(got), string(want[:min(len(want), 16)])) || p != "/proc/meminfo" && !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes (%v), os.ReadFile %d", p, len(got), err, len(want))
		}
	}
}
