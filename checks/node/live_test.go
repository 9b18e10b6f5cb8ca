package node

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// fixtureLive returns a Live over fresh temporary roots, and the roots.
func fixtureLive(t *testing.T, opts ...LiveOption) (*Live, Paths) {
	t.Helper()
	p := Paths{Sys: t.TempDir(), Dev: t.TempDir(), FS: t.TempDir()}
	l, err := NewLive(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}

func TestNewLive(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeTree(t, dir, map[string]string{"file": "x"})
	tests := []struct {
		name     string
		paths    Paths
		wantErr  string
		notExist bool
	}{
		{name: "ok", paths: Paths{Sys: dir, Dev: dir, FS: dir}},
		{name: "defaults", paths: DefaultPaths()},
		{name: "empty", paths: Paths{Sys: dir, FS: dir}, wantErr: "node root Dev is empty"},
		{name: "relative", paths: Paths{Sys: "sys", Dev: dir, FS: dir}, wantErr: `node root Sys "sys" is not absolute`},
		{name: "missing", paths: Paths{Sys: dir, Dev: dir, FS: filepath.Join(dir, "nope")}, wantErr: "node root FS: ", notExist: true},
		{name: "file", paths: Paths{Sys: file, Dev: dir, FS: dir}, wantErr: "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLive(tc.paths)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("NewLive: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewLive: %v, want an error containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tc.notExist {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, got, tc.notExist)
			}
		})
	}
}

func TestLiveReadFile(t *testing.T) {
	l, p := fixtureLive(t, WithMaxFileSize(64))
	writeTree(t, p.FS, map[string]string{
		"etc/slurm/gres.conf": "Name=gpu File=/dev/nvidia[0-7]\n",
		"var/log/big":         strings.Repeat("x", 65),
		"var/log/exact":       strings.Repeat("x", 64),
	})
	writeTree(t, p.Sys, map[string]string{"class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n"})
	writeTree(t, p.Dev, map[string]string{"shm/x": "in dev"})
	if err := syscall.Mkfifo(filepath.Join(p.FS, "etc/slurm/fifo.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"zero.conf": "/dev/zero", "link.conf": "gres.conf"} {
		if err := os.Symlink(target, filepath.Join(p.FS, "etc/slurm", link)); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name     string
		ctx      context.Context
		path     string
		want     string
		wantErr  string
		notExist bool
	}{
		{name: "file under FS", path: "/etc/slurm/gres.conf", want: "Name=gpu File=/dev/nvidia[0-7]\n"},
		{name: "unclean path is cleaned", path: "//etc/slurm//gres.conf/", want: "Name=gpu File=/dev/nvidia[0-7]\n"},
		{name: "sys path under Sys", path: "/sys/class/infiniband/mlx5_0/ports/1/state", want: "4: ACTIVE\n"},
		{name: "dev path under Dev", path: "/dev/shm/x", want: "in dev"},
		{name: "at the bound", path: "/var/log/exact", want: strings.Repeat("x", 64)},
		{name: "over the bound", path: "/var/log/big", wantErr: "read /var/log/big: file too large: 65 bytes, over the limit of 64 bytes"},
		{name: "FIFO", path: "/etc/slurm/fifo.conf", wantErr: "read /etc/slurm/fifo.conf: is a named pipe (FIFO), not a regular file"},
		{name: "symlink to /dev/zero", path: "/etc/slurm/zero.conf", wantErr: "read /etc/slurm/zero.conf: is a character device, not a regular file"},
		{name: "symlink followed", path: "/etc/slurm/link.conf", want: "Name=gpu File=/dev/nvidia[0-7]\n"},
		{name: "missing", path: "/etc/slurm/slurm.conf", wantErr: "read /etc/slurm/slurm.conf: no such file or directory", notExist: true},
		{name: "directory", path: "/etc/slurm", wantErr: "read /etc/slurm: is a directory"},
		{name: "relative", path: "etc/slurm/gres.conf", wantErr: `read: path "etc/slurm/gres.conf" is not absolute`},
		{name: "dot dot", path: "/etc/../etc/slurm/gres.conf", wantErr: `contains ".."`},
		{name: "cancelled", ctx: cancelled, path: "/etc/slurm/gres.conf", wantErr: "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			got, err := l.ReadFile(ctx, tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadFile(%q) = %q, %v, want an error containing %q", tc.path, got, err, tc.wantErr)
				}
				if gotNE := errors.Is(err, fs.ErrNotExist); gotNE != tc.notExist {
					t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, gotNE, tc.notExist)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFile(%q): %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("ReadFile(%q) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

func TestLiveDevNode(t *testing.T) {
	l, p := fixtureLive(t)
	writeTree(t, p.Dev, map[string]string{"nvidia-file": "not a device", "dir/x": ""})
	writeTree(t, p.FS, map[string]string{"run/thing": ""})
	for _, s := range []struct{ target, link string }{
		{"nvidia-file", "link-to-file"},
		{"nowhere", "dangling"},
		{"loop-b", "loop-a"},
		{"loop-a", "loop-b"},
	} {
		if err := os.Symlink(s.target, filepath.Join(p.Dev, s.link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(p.Dev, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		path string
		want DevNode
	}{
		{name: "regular file", path: "/dev/nvidia-file", want: DevNode{Path: "/dev/nvidia-file", Type: "file"}},
		{name: "directory", path: "/dev/dir", want: DevNode{Path: "/dev/dir", Type: "dir"}},
		{name: "dev root", path: "/dev", want: DevNode{Path: "/dev", Type: "dir"}},
		{name: "symlink followed", path: "/dev/link-to-file", want: DevNode{Path: "/dev/link-to-file", Type: "file"}},
		{name: "dangling symlink", path: "/dev/dangling", want: DevNode{Path: "/dev/dangling", Type: "symlink"}},
		{name: "symlink loop", path: "/dev/loop-a", want: DevNode{Path: "/dev/loop-a", Type: "symlink"}},
		{name: "fifo", path: "/dev/fifo", want: DevNode{Path: "/dev/fifo", Type: "other"}},
		{name: "missing", path: "/dev/nvidia7", want: DevNode{Path: "/dev/nvidia7", Missing: true}},
		{name: "under a file", path: "/dev/nvidia-file/x", want: DevNode{Path: "/dev/nvidia-file/x", Missing: true}},
		{name: "unclean", path: "/dev//nvidia-file", want: DevNode{Path: "/dev/nvidia-file", Type: "file"}},
		{name: "outside dev under FS", path: "/run/thing", want: DevNode{Path: "/run/thing", Type: "file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.DevNode(context.Background(), tc.path)
			if err != nil {
				t.Fatalf("DevNode(%q): %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DevNode(%q) (-want +got):\n%s", tc.path, diff)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		for _, c := range []struct {
			ctx  context.Context
			path string
			want string
		}{
			{context.Background(), "nvidia0", "is not absolute"},
			{context.Background(), "/dev/../etc/passwd", `contains ".."`},
			{cancelled, "/dev/nvidia-file", "context canceled"},
		} {
			if _, err := l.DevNode(c.ctx, c.path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("DevNode(%q): %v, want an error containing %q", c.path, err, c.want)
			}
		}
	})
}

// TestLiveDevNodeMknod makes real device nodes, as GPU nodes have them, which needs root.
func TestLiveDevNodeMknod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root: skipping the character and block device cases")
	}
	l, p := fixtureLive(t)
	mk := func(name string, mode uint32, major, minor uint32) {
		t.Helper()
		if err := unix.Mknod(filepath.Join(p.Dev, name), mode|0o666, int(unix.Mkdev(major, minor))); err != nil {
			t.Skipf("mknod %s: %v (a container without CAP_MKNOD?)", name, err)
		}
	}
	mk("nvidia0", unix.S_IFCHR, 195, 0)
	mk("nvidia3", unix.S_IFCHR, 195, 3)
	mk("nvidiactl", unix.S_IFCHR, 195, 255)
	mk("nvidia-caps-big", unix.S_IFCHR, 4095, 1048575) // largest major and minor Linux has
	mk("sda", unix.S_IFBLK, 8, 0)
	if err := os.Symlink("nvidia3", filepath.Join(p.Dev, "gpu-by-name")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want DevNode
	}{
		{"/dev/nvidia0", DevNode{Path: "/dev/nvidia0", Type: "char", Major: 195, Minor: 0}},
		{"/dev/nvidia3", DevNode{Path: "/dev/nvidia3", Type: "char", Major: 195, Minor: 3}},
		{"/dev/nvidiactl", DevNode{Path: "/dev/nvidiactl", Type: "char", Major: 195, Minor: 255}},
		{"/dev/nvidia-caps-big", DevNode{Path: "/dev/nvidia-caps-big", Type: "char", Major: 4095, Minor: 1048575}},
		{"/dev/sda", DevNode{Path: "/dev/sda", Type: "block", Major: 8, Minor: 0}},
		// Slurm stat(2)s gres.conf's File=, following the link: so does DevNode.
		{"/dev/gpu-by-name", DevNode{Path: "/dev/gpu-by-name", Type: "char", Major: 195, Minor: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := l.DevNode(context.Background(), tc.path)
			if err != nil {
				t.Fatalf("DevNode(%q): %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DevNode(%q) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// TestLiveDevNodeRealNull reads the real /dev/null, which is char 1:3 on every Linux.
func TestLiveDevNodeRealNull(t *testing.T) {
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.DevNode(context.Background(), "/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DevNode{Path: "/dev/null", Type: "char", Major: 1, Minor: 3}, got); diff != "" {
		t.Errorf("DevNode(/dev/null) (-want +got):\n%s", diff)
	}
}

func TestLiveIBPorts(t *testing.T) {
	t.Run("fixture", func(t *testing.T) {
		abs, err := filepath.Abs("testdata/sys-ib-procfs")
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLive(Paths{Sys: abs, Dev: t.TempDir(), FS: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.IBPorts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range got {
			names = append(names, p.Name())
		}
		if diff := cmp.Diff([]string{"hfi1_0/1", "mlx4_0/1", "mlx4_0/2", "mlx5_0/1"}, names); diff != "" {
			t.Errorf("IBPorts names (-want +got):\n%s", diff)
		}
	})
	t.Run("sysfs layout", func(t *testing.T) {
		l, err := NewLive(Paths{Sys: buildSysfsIB(t), Dev: t.TempDir(), FS: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.IBPorts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]IBPort{h100Port("mlx5_0"), h100Bond}, got); diff != "" {
			t.Errorf("IBPorts (-want +got):\n%s", diff)
		}
	})
	t.Run("no infiniband", func(t *testing.T) {
		l, _ := fixtureLive(t)
		got, err := l.IBPorts(context.Background())
		if err != nil || len(got) != 0 {
			t.Errorf("IBPorts on a node without /sys/class/infiniband = %v, %v; want none and no error", got, err)
		}
	})
}

func TestLiveHostname(t *testing.T) {
	t.Run("fixture", func(t *testing.T) {
		l, p := fixtureLive(t)
		writeTree(t, p.FS, map[string]string{"proc/sys/kernel/hostname": "gpu-h100-01\n"})
		got, err := l.Hostname(context.Background())
		if err != nil || got != "gpu-h100-01" {
			t.Errorf("Hostname = %q, %v; want gpu-h100-01", got, err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		l, p := fixtureLive(t)
		writeTree(t, p.FS, map[string]string{"proc/sys/kernel/hostname": "\n"})
		if got, err := l.Hostname(context.Background()); err == nil || !strings.Contains(err.Error(), "is empty") {
			t.Errorf("Hostname = %q, %v; want an error saying it is empty", got, err)
		}
	})
	t.Run("fixture without proc", func(t *testing.T) {
		l, _ := fixtureLive(t)
		// A fixture root must not fall back to the machine running the test.
		if got, err := l.Hostname(context.Background()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Hostname = %q, %v; want an error wrapping fs.ErrNotExist", got, err)
		}
	})
	t.Run("real", func(t *testing.T) {
		l, err := NewLive(DefaultPaths())
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.Hostname()
		if err != nil {
			t.Skip(err)
		}
		if got, err := l.Hostname(context.Background()); err != nil || got != want {
			t.Errorf("Hostname = %q, %v; want %q", got, err, want)
		}
	})
}
