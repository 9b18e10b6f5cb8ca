package files

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// silentWriter opens path (a FIFO) for writing and keeps it open, writing nothing, until the
// test ends: a reader then blocks in read(2), as on a hung NFS mount.
func silentWriter(t *testing.T, path string) {
	t.Helper()
	// O_RDWR never blocks on a FIFO (Linux fifo(7)), and holds a writer end.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
}

// fixtures makes one of each kind of file in a new directory and returns it.
func fixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("small", []byte("NodeName=gpu01\n"))
	write("exact", bytes.Repeat([]byte("x"), 64))
	write("over", bytes.Repeat([]byte("x"), 65))
	// A sparse 5 GiB file: refused by its size, before any read.
	f, err := os.Create(filepath.Join(dir, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(5 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mkfifo(t, filepath.Join(dir, "fifo"))
	mkfifo(t, filepath.Join(dir, "fifo-writer"))
	silentWriter(t, filepath.Join(dir, "fifo-writer"))
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link":      "small",
		"link-fifo": "fifo",
		"dangling":  "absent",
		"devzero":   "/dev/zero",
		"devnull":   "/dev/null",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dir
}

func TestRead(t *testing.T) {
	dir := fixtures(t)
	follow := Limits{MaxBytes: 64, FollowSymlinks: true}
	nofollow := Limits{MaxBytes: 64}
	tests := []struct {
		name    string
		path    string
		lim     Limits
		want    string // content, when wantErr is nil
		wantErr error
		wantMsg string // in the error's text
	}{
		{"regular file", "small", nofollow, "NodeName=gpu01\n", nil, ""},
		{"exactly the limit", "exact", nofollow, strings.Repeat("x", 64), nil, ""},
		{"one byte over the limit", "over", nofollow, "", ErrTooLarge, "65 bytes, over the limit of 64 bytes for it"},
		{"sparse 5 GiB file refused by its size", "huge", nofollow, "", ErrTooLarge, "5 GiB (5368709120 bytes), over the limit"},
		{"FIFO without a writer", "fifo", follow, "", ErrNotRegular, "is a named pipe (FIFO), not a regular file"},
		{"FIFO with a silent writer", "fifo-writer", follow, "", ErrNotRegular, "named pipe (FIFO)"},
		{"directory", "dir", follow, "", ErrNotRegular, "is a directory, not a regular file"},
		{"socket", "sock", follow, "", ErrNotRegular, "is a socket, not a regular file"},
		{"char device /dev/zero", "/dev/zero", follow, "", ErrNotRegular, "is a character device, not a regular file"},
		{"char device /dev/null", "/dev/null", follow, "", ErrNotRegular, "character device"},
		{"symlink followed", "link", follow, "NodeName=gpu01\n", nil, ""},
		{"symlink refused", "link", nofollow, "", ErrSymlink, "is a symlink, which nodecheck does not follow here"},
		{"symlink to a FIFO", "link-fifo", follow, "", ErrNotRegular, "named pipe"},
		{"symlink to /dev/zero", "devzero", follow, "", ErrNotRegular, "character device"},
		{"symlink to /dev/zero, not followed", "devzero", nofollow, "", ErrSymlink, "symlink"},
		{"dangling symlink followed", "dangling", follow, "", fs.ErrNotExist, "no such file"},
		{"dangling symlink not followed", "dangling", nofollow, "", ErrSymlink, "symlink"},
		{"missing file", "absent", follow, "", fs.ErrNotExist, "no such file"},
		{"under a regular file", "small/x", follow, "", syscall.ENOTDIR, "not a directory"},
		{"/proc file over the limit, found by reading", "/proc/self/maps", Limits{MaxBytes: 16, FollowSymlinks: true}, "", ErrTooLarge, "more than 16 bytes"},
		{"no limit given", "small", Limits{}, "", nil, "no size limit given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			got, err := Read(ctx, path, tc.lim)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Read took %s: it blocked", d)
			}
			if tc.wantMsg == "" {
				if err != nil || string(got) != tc.want {
					t.Fatalf("Read = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Read = %q, nil; want an error saying %q", got, tc.wantMsg)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not %v", err, tc.wantErr)
			}
			if tc.wantErr != fs.ErrNotExist && errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v says the file does not exist", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) || !strings.HasPrefix(err.Error(), "read "+path+": ") {
				t.Errorf("error %q, want one starting \"read %s: \" and saying %q", err, path, tc.wantMsg)
			}
		})
	}
}

// TestReadDeadline: a read that blocks after the open (a FIFO with a writer that never
// writes stands in for a hung NFS server) is abandoned at ctx's deadline.
func TestReadDeadline(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hung")
	mkfifo(t, fifo)
	silentWriter(t, fifo)
	lim := Limits{MaxBytes: 1 << 20, anyType: true}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Read(ctx, fifo, lim)
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("Read returned after %s, want at the 100ms deadline", d)
	}
	if !strings.Contains(err.Error(), "read "+fifo+": no answer after") {
		t.Errorf("error %q does not say the read was abandoned", err)
	}

	// Cancelled (SIGTERM) rather than timed out.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := Read(ctx, fifo, lim); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one wrapping context.Canceled", err)
	}

	// Already done: nothing is started.
	if _, err := Read(ctx, filepath.Join(dir, "absent"), lim); !errors.Is(err, context.Canceled) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want context.Canceled and no look at the file", err)
	}

	// Any-type reads stay bounded: /dev/zero never ends.
	if _, err := Read(context.Background(), "/dev/zero", Limits{MaxBytes: 4096, anyType: true}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("reading /dev/zero: %v, want ErrTooLarge", err)
	}
}

func TestReadIn(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("meta.json", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, "nvml.json"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	lim := Limits{MaxBytes: 1 << 10, FollowSymlinks: true}
	ctx := context.Background()

	if b, err := ReadIn(ctx, root, "meta.json", lim); err != nil || string(b) != "{}" {
		t.Errorf("meta.json: %q, %v", b, err)
	}
	if b, err := ReadIn(ctx, root, "inside", lim); err != nil || string(b) != "{}" {
		t.Errorf("a link inside the root: %q, %v", b, err)
	}
	if _, err := ReadIn(ctx, root, "inside", Limits{MaxBytes: 1 << 10}); !errors.Is(err, ErrSymlink) {
		t.Errorf("a link not to be followed: %v, want ErrSymlink", err)
	}
	_, err = ReadIn(ctx, root, "escape", lim)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "a symlink to \""+filepath.Join(outside, "secret")+"\", which leads outside "+dir) {
		t.Errorf("a link out of the root: %v, want an error naming the link and its target", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ReadIn(ctx2, root, "nvml.json", lim); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "read nvml.json: is a named pipe (FIFO)") {
		t.Errorf("a FIFO: %v", err)
	}
	if _, err := ReadIn(ctx, root, "absent", lim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestReadUpTo(t *testing.T) {
	dir := fixtures(t)
	read := ReadUpTo(context.Background(), false)
	tests := []struct {
		name    string
		max     int64
		want    int // bytes returned
		wantErr error
	}{
		{"small", 64, len("NodeName=gpu01\n"), nil},
		{"exact", 64, 64, nil},
		{"over", 64, 65, nil},
		{"over", 10, 11, nil},
		{"huge", 1 << 10, 1<<10 + 1, nil},
		{"fifo", 64, 0, ErrNotRegular},
		{"link", 64, 0, ErrSymlink},
		{"absent", 64, 0, fs.ErrNotExist},
	}
	for _, tc := range tests {
		b, err := read(filepath.Join(dir, tc.name), tc.max)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(b) != tc.want {
			t.Errorf("%s with max %d: %d bytes, %v; want %d bytes", tc.name, tc.max, len(b), err, tc.want)
		}
	}
}

func TestAwait(t *testing.T) {
	// A ctx that can never be done runs fn in place.
	v, err := Await(context.Background(), func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("Await = %d, %v", v, err)
	}
	// fn's own error comes back as it is.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	want := errors.New("boom")
	if _, err := Await(ctx, func() (int, error) { return 0, want }); err != want {
		t.Errorf("Await error %v, want %v", err, want)
	}
	// A blocked fn is abandoned at the deadline.
	block := make(chan struct{})
	defer close(block)
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Await(ctx, func() (int, error) { <-block; return 1, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Await error %v, want DeadlineExceeded", err)
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{
		300: "300 bytes", 4 << 20: "4 MiB (4194304 bytes)", 1536: "1.5 KiB (1536 bytes)", 5 << 30: "5 GiB (5368709120 bytes)",
	} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkRead is a small attribute read, as the IB and PCI readers make hundreds of, with
// and without a deadline (a goroutine each).
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state")
	if err := os.WriteFile(path, []byte("4: ACTIVE\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	lim := Limits{MaxBytes: 4096, FollowSymlinks: true}
	b.Run("no deadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(context.Background(), path, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deadline", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(ctx, path, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
