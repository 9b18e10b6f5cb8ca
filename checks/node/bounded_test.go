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
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// Every file the facts read goes through config/files: these tests put a FIFO (with and
// without a writer), a character device and an oversized file where each read expects a
// regular file, and check that the read ends at once with an error that says what it found,
// never "does not exist".

// blocker is a kind of file a read must refuse without blocking.
type blocker struct {
	name    string
	make    func(t *testing.T, path string)
	wantErr error
	wantMsg string
}

func blockers(limit int64) []blocker {
	return []blocker{
		{"FIFO", func(t *testing.T, p string) { mkfifoAt(t, p, false) }, files.ErrNotRegular, "is a named pipe (FIFO), not a regular file"},
		{"FIFO with a silent writer", func(t *testing.T, p string) { mkfifoAt(t, p, true) }, files.ErrNotRegular, "is a named pipe (FIFO)"},
		{"char device", mkZeroDevice, files.ErrNotRegular, "is a character device, not a regular file"},
		{"oversized", func(t *testing.T, p string) { sparseFile(t, p, limit+1) }, files.ErrTooLarge, "file too large"},
	}
}

// mkfifoAt makes a FIFO at path, and with writer holds a writer end open that never writes
// until the test ends.
func mkfifoAt(t *testing.T, path string, writer bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if writer {
		w, err := os.OpenFile(path, os.O_RDWR, 0) // never blocks on a FIFO
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
}

// mkZeroDevice makes a character device node 1:5 (/dev/zero's numbers) at path; it needs root.
func mkZeroDevice(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
		t.Skipf("mknod (needs root): %v", err)
	}
}

// sparseFile makes a file of size bytes that takes no disk.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// checkRefused checks that err is b's refusal, names path, and came within a second.
func checkRefused(t *testing.T, b blocker, err error, took time.Duration, names string) {
	t.Helper()
	if took > time.Second {
		t.Errorf("took %s: the read blocked", took)
	}
	if !errors.Is(err, b.wantErr) || !strings.Contains(err.Error(), b.wantMsg) {
		t.Errorf("error %v, want %v saying %q", err, b.wantErr, b.wantMsg)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v says the file does not exist", err)
	}
	if err != nil && !strings.Contains(err.Error(), names) {
		t.Errorf("error %q does not name %s", err, names)
	}
}

func TestOpenSnapshotRefusesBlockers(t *testing.T) {
	names := []string{metaFile, nvmlFile, devicesFile, commandsFile}
	for _, d := range DeclaredFacts() {
		names = append(names, d.FactName()+".json")
	}
	for _, name := range names {
		for _, b := range blockers(snapshotJSONLimit) {
			t.Run(name+"/"+b.name, func(t *testing.T) {
				dir := t.TempDir()
				if name != metaFile {
					writeTree(t, dir, map[string]string{metaFile: validMeta})
				}
				b.make(t, filepath.Join(dir, name))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				_, err := OpenSnapshotContext(ctx, dir)
				checkRefused(t, b, err, time.Since(start), "open snapshot "+dir+": read "+name+": ")
			})
		}
	}
}

func TestSnapshotReadFileRefusesBlockers(t *testing.T) {
	for _, b := range blockers(DefaultMaxFileSize) {
		t.Run(b.name, func(t *testing.T) {
			s, dir := writeSnapshot(t, map[string]string{})
			b.make(t, filepath.Join(dir, "fs/etc/slurm/slurm.conf"))
			start := time.Now()
			_, err := s.ReadFile(context.Background(), "/etc/slurm/slurm.conf")
			checkRefused(t, b, err, time.Since(start), "read /etc/slurm/slurm.conf: ")
		})
	}
}

func TestLiveReadFileRefusesBlockers(t *testing.T) {
	for _, b := range blockers(DefaultMaxFileSize) {
		t.Run(b.name, func(t *testing.T) {
			l, p := fixtureLive(t)
			b.make(t, filepath.Join(p.FS, "etc/slurm/gres.conf"))
			start := time.Now()
			_, err := l.ReadFile(context.Background(), "/etc/slurm/gres.conf")
			checkRefused(t, b, err, time.Since(start), "read /etc/slurm/gres.conf: ")
		})
	}
}

// TestIBPortsRefuseBlockers: a FIFO or device in place of a port attribute, or of a ports
// directory, is an error on that port, not a hang, in Live and Snapshot alike.
func TestIBPortsRefuseBlockers(t *testing.T) {
	for _, where := range []string{"class/infiniband/mlx5_0/ports/1/state", "class/infiniband/mlx5_0/ports"} {
		for _, b := range blockers(sysfsAttrLimit)[:3] {
			t.Run(where+"/"+b.name, func(t *testing.T) {
				dir := t.TempDir()
				writeTree(t, dir, map[string]string{metaFile: validMeta})
				sys := filepath.Join(dir, "fs", "sys")
				writeTree(t, sys, portFiles("mlx5_1", "1", "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand"))
				if !strings.HasSuffix(where, "ports") {
					writeTree(t, sys, portFiles("mlx5_0", "1", "-", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand"))
				}
				b.make(t, filepath.Join(sys, where))
				s, err := OpenSnapshot(dir)
				if err != nil {
					t.Fatal(err)
				}
				l, err := NewLive(Paths{Sys: sys, Dev: t.TempDir(), FS: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range []Facts{l, s} {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					start := time.Now()
					ports, err := f.IBPorts(ctx)
					cancel()
					if d := time.Since(start); d > time.Second {
						t.Errorf("%T: IBPorts took %s: a read blocked", f, d)
					}
					if err == nil || !strings.Contains(err.Error(), "/sys/"+where) || errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%T: IBPorts error %v, want one naming /sys/%s", f, err, where)
					}
					if len(ports) == 0 || ports[len(ports)-1].Device != "mlx5_1" || ports[len(ports)-1].StateID != 4 {
						t.Errorf("%T: IBPorts = %+v, want the healthy mlx5_1 port still read", f, ports)
					}
				}
			})
		}
	}
}

// TestListWithinAbandons: a listing that blocks where ctx cannot reach (a read stuck in the
// kernel) is given up at ctx's deadline, naming what was listed.
func TestListWithinAbandons(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := listWithin(ctx, "/sys/bus/pci/devices", func() ([]PCIDevice, error) {
		<-release
		return nil, nil
	})
	if d := time.Since(start); d > time.Second {
		t.Errorf("listWithin returned after %s", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "list /sys/bus/pci/devices: no answer after ") {
		t.Errorf("error %v, want the listing named and abandoned", err)
	}
}
