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

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const validMeta = `{"format": 1, "hostname": "gpu-h100-01", "node_name": "gpu01", "taken_at": "2025-01-15T10:00:00Z", "nodecheck_version": "test"}`

// writeSnapshot writes a snapshot directory from files (path: content), adding a valid
// meta.json unless files has one, and opens it.
func writeSnapshot(t *testing.T, files map[string]string) (*Snapshot, string) {
	t.Helper()
	dir := t.TempDir()
	if _, ok := files[metaFile]; !ok {
		files = mergeFiles(files, map[string]string{metaFile: validMeta})
	}
	writeTree(t, dir, files)
	s, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatalf("OpenSnapshot: %v", err)
	}
	return s, dir
}

func TestOpenSnapshotFixture(t *testing.T) {
	s, err := OpenSnapshot("testdata/snap-h100")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	wantMeta := Meta{Format: 1, Hostname: "gpu-h100-01", NodeName: "gpu01",
		TakenAt: time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), NodecheckVersion: "test"}
	if diff := cmp.Diff(wantMeta, s.Meta()); diff != "" {
		t.Errorf("Meta (-want +got):\n%s", diff)
	}
	if h, err := s.Hostname(ctx); err != nil || h != "gpu-h100-01" {
		t.Errorf("Hostname = %q, %v; want gpu-h100-01", h, err)
	}
	if !strings.Contains(string(s.NVMLJSON()), `"driver_version": "535.161.08"`) {
		t.Errorf("NVMLJSON = %s", s.NVMLJSON())
	}

	gres, err := s.ReadFile(ctx, "/etc/slurm/gres.conf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/snap-h100/fs/etc/slurm/gres.conf")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(gres)); diff != "" {
		t.Errorf("ReadFile gres.conf (-want +got):\n%s", diff)
	}

	ports, err := s.IBPorts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]IBPort{h100Port("mlx5_0"), h100Bond}, ports); diff != "" {
		t.Errorf("IBPorts (-want +got):\n%s", diff)
	}

	res, err := s.Exec(ctx, []string{"/usr/bin/nv-fabricmanager", "--version"})
	if err != nil {
		t.Fatal(err)
	}
	wantRes := CmdResult{Argv: []string{"/usr/bin/nv-fabricmanager", "--version"},
		Stdout: "\n\n\n\tFabric Manager version is : 535.161.08\n\n", ExitCode: 0, Duration: 12 * time.Millisecond}
	if diff := cmp.Diff(wantRes, res); diff != "" {
		t.Errorf("Exec (-want +got):\n%s", diff)
	}
}

func TestSnapshotDevNode(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{devicesFile: `[
		{"path": "/dev/nvidia0", "type": "char", "major": 195, "minor": 0},
		{"path": "/dev/nvidia7", "missing": true},
		{"path": "/dev/nvidia-caps", "type": "dir"},
		{"path": "/dev/nvidia-link", "type": "symlink"}
	]`})
	tests := []struct {
		name string
		path string
		want DevNode
	}{
		{name: "recorded char", path: "/dev/nvidia0", want: DevNode{Path: "/dev/nvidia0", Type: "char", Major: 195, Minor: 0}},
		{name: "recorded missing", path: "/dev/nvidia7", want: DevNode{Path: "/dev/nvidia7", Missing: true}},
		{name: "recorded dir", path: "/dev/nvidia-caps", want: DevNode{Path: "/dev/nvidia-caps", Type: "dir"}},
		{name: "recorded dangling symlink", path: "/dev/nvidia-link", want: DevNode{Path: "/dev/nvidia-link", Type: "symlink"}},
		{name: "not recorded is absent", path: "/dev/nvidia3", want: DevNode{Path: "/dev/nvidia3", Missing: true}},
		{name: "unclean path", path: "/dev//nvidia0", want: DevNode{Path: "/dev/nvidia0", Type: "char", Major: 195, Minor: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.DevNode(context.Background(), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DevNode(%q) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
	for _, p := range []string{"nvidia0", "/dev/../dev/nvidia0"} {
		if _, err := s.DevNode(context.Background(), p); err == nil {
			t.Errorf("DevNode(%q): no error", p)
		}
	}
}

// bigLog is a kernel log (as JSON string content) of 20-byte lines, one more than
// KernelLogLimit holds whole and a 7-byte line before them, and its tail as replay keeps it.
var (
	bigLog     = "[ 0.5] x\\n" + strings.Repeat("[ 1.000000] fill 07\\n", KernelLogLimit/20+1)
	bigLogTail = strings.Repeat("[ 1.000000] fill 07\n", KernelLogLimit/20)
)

func TestSnapshotExecMatching(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{commandsFile: `[
		{"argv": ["/usr/bin/nvidia-smi", "-q"], "stdout": "query", "exit_code": 0},
		{"argv": ["/usr/bin/nvidia-smi", "topo", "-m"], "stdout": "topology", "exit_code": 0},
		{"argv": ["/usr/bin/nv-fabricmanager", "--version"], "stdout": "usr bin", "exit_code": 0, "duration_ms": 7},
		{"argv": ["/opt/nvidia/bin/nv-fabricmanager", "--version"], "stdout": "opt", "exit_code": 0},
		{"argv": ["/usr/bin/systemctl", "is-active", "nvidia-fabricmanager"], "stdout": "inactive\n", "exit_code": 3},
		{"argv": ["/usr/bin/big"], "stdout": "` + strings.Repeat("x", DefaultOutputLimit+1) + `", "exit_code": 0},
		{"argv": ["/usr/bin/cut-when-recorded"], "stdout": "abc", "truncated": true},
		{"argv": ["/usr/bin/dmesg", "--kernel"], "stdout": "` + bigLog + `", "exit_code": 0},
		{"argv": ["/usr/bin/dmesg", "--old"], "stdout": "[ 1.0] a\n", "truncated": true},
		{"argv": ["/usr/bin/dmesg", "--new"], "stdout": "[ 9.0] z\n", "truncated": true, "cut_front": true},
		{"argv": ["/usr/bin/dcgmi", "health", "--host", "localhost", "-g", "a", "-c", "-j"], "stdout": "health", "exit_code": 0}
	]`})
	tests := []struct {
		name          string
		argv          []string
		wantStdout    string
		wantExit      int
		wantDuration  time.Duration
		wantTruncated bool
		wantFront     bool
		wantErr       string
		notExist      bool
	}{
		{name: "exact", argv: []string{"/usr/bin/nv-fabricmanager", "--version"}, wantStdout: "usr bin", wantDuration: 7 * time.Millisecond},
		{name: "exact beats an earlier base-name match", argv: []string{"/usr/bin/nvidia-smi", "topo", "-m"}, wantStdout: "topology"},
		{name: "exact, second of two with the same base name", argv: []string{"/opt/nvidia/bin/nv-fabricmanager", "--version"}, wantStdout: "opt"},
		{name: "base name and arguments, first in file order", argv: []string{"/usr/local/bin/nv-fabricmanager", "--version"}, wantStdout: "usr bin", wantDuration: 7 * time.Millisecond},
		{name: "base name and arguments beat base name alone", argv: []string{"/sbin/nvidia-smi", "topo", "-m"}, wantStdout: "topology"},
		{name: "base name alone", argv: []string{"/usr/bin/nvidia-smi", "--query-gpu=name"}, wantStdout: "query"},
		{name: "exit code replayed", argv: []string{"/usr/bin/systemctl", "is-active", "nvidia-fabricmanager"}, wantStdout: "inactive\n", wantExit: 3},
		{name: "output cut as Live cuts it", argv: []string{"/usr/bin/big"}, wantStdout: strings.Repeat("x", DefaultOutputLimit), wantTruncated: true},
		{name: "recorded truncation kept", argv: []string{"/usr/bin/cut-when-recorded"}, wantStdout: "abc", wantTruncated: true},
		{name: "a kernel log keeps its end, from a line", argv: []string{"/usr/bin/dmesg", "--kernel"}, wantStdout: bigLogTail, wantTruncated: true, wantFront: true},
		{name: "a recording that lost the log's end says so", argv: []string{"/usr/bin/dmesg", "--old"}, wantStdout: "[ 1.0] a\n", wantTruncated: true},
		{name: "a recording that kept the log's end says so", argv: []string{"/usr/bin/dmesg", "--new"}, wantStdout: "[ 9.0] z\n", wantTruncated: true, wantFront: true},
		{name: "dcgmi: base name and arguments", argv: []string{"/opt/dcgm/bin/dcgmi", "health", "--host", "localhost", "-g", "a", "-c", "-j"}, wantStdout: "health"},
		{name: "dcgmi: never another question's answer", argv: []string{"/usr/bin/dcgmi", "diag", "--host", "localhost", "-g", "a", "-r", "1", "-j"}, wantExit: -1,
			wantErr: "run /usr/bin/dcgmi: not recorded in the snapshot", notExist: true},
		{name: "not recorded is not installed", argv: []string{"/usr/sbin/ibstat"}, wantExit: -1,
			wantErr: "run /usr/sbin/ibstat: not recorded in the snapshot", notExist: true},
		{name: "relative", argv: []string{"nvidia-smi"}, wantExit: -1, wantErr: "is not absolute"},
		{name: "empty", argv: []string{}, wantExit: -1, wantErr: "empty command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Exec(context.Background(), tc.argv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Exec(%q): %v, want an error containing %q", tc.argv, err, tc.wantErr)
				}
				if gotNE := errors.Is(err, fs.ErrNotExist); gotNE != tc.notExist {
					t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, gotNE, tc.notExist)
				}
			} else if err != nil {
				t.Fatalf("Exec(%q): %v", tc.argv, err)
			}
			want := CmdResult{Argv: tc.argv, Stdout: tc.wantStdout, ExitCode: tc.wantExit, Duration: tc.wantDuration, Truncated: tc.wantTruncated, CutFront: tc.wantFront}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Exec(%q) (-want +got):\n%s", tc.argv, diff)
			}
		})
	}
}

func TestSnapshotIBPortsSameAsLive(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{metaFile: validMeta})
	buildSysfsIBAt(t, filepath.Join(dir, "fs", "sys"))
	s, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Paths{Sys: filepath.Join(dir, "fs", "sys"), Dev: t.TempDir(), FS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fromSnap, err := s.IBPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fromLive, err := l.IBPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromLive, fromSnap); diff != "" {
		t.Errorf("Snapshot.IBPorts differs from Live.IBPorts on the same tree (-live +snapshot):\n%s", diff)
	}
	if len(fromSnap) != 2 {
		t.Errorf("IBPorts = %d ports, want 2", len(fromSnap))
	}

	t.Run("no fs directory", func(t *testing.T) {
		s, _ := writeSnapshot(t, map[string]string{})
		if got, err := s.IBPorts(context.Background()); err != nil || len(got) != 0 {
			t.Errorf("IBPorts = %v, %v; want none and no error", got, err)
		}
	})
}

func TestSnapshotReadFileConfined(t *testing.T) {
	s, dir := writeSnapshot(t, map[string]string{
		"fs/etc/slurm/gres.conf":  "Name=gpu File=/dev/nvidia0\n",
		"fs/opt/slurm/slurm.conf": "NodeName=gpu01 Gres=gpu:1\n",
		"fs/var/log/big":          strings.Repeat("x", DefaultMaxFileSize+1),
		"secret":                  "inside the snapshot, outside fs/",
	})
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("the live node"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, link string }{
		{"../../opt/slurm/slurm.conf", "fs/etc/slurm/slurm.conf"}, // inside fs/: followed
		{"../../secret", "fs/etc/secret"},                         // out of fs/, into dir
		{outside, "fs/etc/absolute"},                              // out of dir
		{"/etc/hostname", "fs/etc/hostname"},                      // absolute, would be the live node
		{"../../../../../../../../../../etc", "fs/up"},            // far out
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		path     string
		want     string
		wantErr  string
		notExist bool
	}{
		{name: "file", path: "/etc/slurm/gres.conf", want: "Name=gpu File=/dev/nvidia0\n"},
		{name: "symlink inside fs", path: "/etc/slurm/slurm.conf", want: "NodeName=gpu01 Gres=gpu:1\n"},
		{name: "missing", path: "/etc/slurm/cgroup.conf", wantErr: "no such file", notExist: true},
		{name: "symlink to the snapshot's own files", path: "/etc/secret", wantErr: "escapes"},
		{name: "symlink out of the snapshot", path: "/etc/absolute", wantErr: "escapes"},
		{name: "absolute symlink", path: "/etc/hostname", wantErr: "escapes"},
		{name: "through a symlinked directory", path: "/up/passwd", wantErr: "escapes"},
		{name: "dot dot", path: "/../secret", wantErr: `contains ".."`},
		{name: "relative", path: "secret", wantErr: "not absolute"},
		{name: "too large", path: "/var/log/big", wantErr: "file too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ReadFile(context.Background(), tc.path)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadFile(%q): %v", tc.path, err)
				}
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("ReadFile(%q) (-want +got):\n%s", tc.path, diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ReadFile(%q) = %q, %v; want an error containing %q", tc.path, got, err, tc.wantErr)
			}
			if gotNE := errors.Is(err, fs.ErrNotExist); gotNE != tc.notExist {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, gotNE, tc.notExist)
			}
		})
	}
}

// TestSnapshotSymlinkedDirs checks that fs/ and the JSON files cannot themselves be symlinks
// out of the snapshot.
func TestSnapshotSymlinkedDirs(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"etc/slurm/gres.conf": "live\n", metaFile: validMeta})

	t.Run("fs", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{metaFile: validMeta})
		if err := os.Symlink(outside, filepath.Join(dir, "fs")); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSnapshot(dir)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := s.ReadFile(context.Background(), "/etc/slurm/gres.conf"); err == nil {
			t.Errorf("ReadFile through a symlinked fs/ = %q, want an error", b)
		}
	})
	t.Run("meta.json", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(outside, metaFile), filepath.Join(dir, metaFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenSnapshot(dir); err == nil || !strings.Contains(err.Error(), "escapes") {
			t.Errorf("OpenSnapshot with meta.json out of the snapshot: %v, want an error", err)
		}
	})
}

func TestSnapshotDelays(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{
		metaFile: `{"format": 1, "hostname": "h", "delay_ms": {
			"/sys/class/infiniband": 60000, "/etc/slow": 60000, "/dev/nvidia3": 60000,
			"/usr/bin/hang": 60000, "/etc/short": 30}}`,
		devicesFile: `[{"path": "/dev/nvidia2", "type": "char", "major": 195, "minor": 2, "delay_ms": 60000},
			{"path": "/dev/nvidia3", "type": "char", "major": 195, "minor": 3}]`,
		commandsFile: `[{"argv": ["/usr/bin/nvidia-smi"], "stdout": "x", "delay_ms": 60000},
			{"argv": ["/usr/bin/hang"], "stdout": "y"}]`,
		"fs/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
		"fs/sys/class/net/ib0/operstate":               "up\n",
		"fs/etc/slowish":                               "not under /etc/slow\n",
		"fs/etc/short":                                 "short\n",
	})
	stalls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"IBPorts", func(ctx context.Context) error { _, err := s.IBPorts(ctx); return err }},
		{"ReadFile under the prefix", func(ctx context.Context) error {
			_, err := s.ReadFile(ctx, "/sys/class/infiniband/mlx5_0/ports/1/state")
			return err
		}},
		{"ReadFile of a missing file under the prefix", func(ctx context.Context) error {
			_, err := s.ReadFile(ctx, "/etc/slow/x")
			return err
		}},
		{"DevNode by prefix", func(ctx context.Context) error { _, err := s.DevNode(ctx, "/dev/nvidia3"); return err }},
		{"DevNode by entry", func(ctx context.Context) error { _, err := s.DevNode(ctx, "/dev/nvidia2"); return err }},
		{"Exec by entry", func(ctx context.Context) error { _, err := s.Exec(ctx, []string{"/usr/bin/nvidia-smi"}); return err }},
		{"Exec by prefix", func(ctx context.Context) error { _, err := s.Exec(ctx, []string{"/usr/bin/hang"}); return err }},
	}
	for _, tc := range stalls {
		t.Run("stalls/"+tc.name, func(t *testing.T) {
			const deadline = 100 * time.Millisecond
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			err := tc.call(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context.DeadlineExceeded", err)
			}
			if e := time.Since(start); e < deadline || e > deadline+2*time.Second {
				t.Errorf("returned after %v, want about %v", e, deadline)
			}
		})
	}

	fast := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"ReadFile elsewhere in /sys", func(ctx context.Context) error {
			_, err := s.ReadFile(ctx, "/sys/class/net/ib0/operstate")
			return err
		}},
		{"ReadFile of a sibling sharing the prefix text", func(ctx context.Context) error {
			_, err := s.ReadFile(ctx, "/etc/slowish")
			return err
		}},
		{"DevNode without delay", func(ctx context.Context) error { _, err := s.DevNode(ctx, "/dev/nvidia0"); return err }},
	}
	for _, tc := range fast {
		t.Run("does not stall/"+tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if err := tc.call(ctx); err != nil {
				t.Errorf("err = %v", err)
			}
			if e := time.Since(start); e > 5*time.Second {
				t.Errorf("took %v", e)
			}
		})
	}

	t.Run("short delay completes", func(t *testing.T) {
		start := time.Now()
		b, err := s.ReadFile(context.Background(), "/etc/short")
		if err != nil || string(b) != "short\n" {
			t.Errorf("ReadFile = %q, %v", b, err)
		}
		if e := time.Since(start); e < 30*time.Millisecond {
			t.Errorf("returned after %v, before the 30 ms delay", e)
		}
	})
}

func TestSnapshotDelayScope(t *testing.T) {
	tests := []struct {
		name   string
		delays map[string]int
		path   string
		want   int
		wantIB int
	}{
		{name: "exact", delays: map[string]int{"/sys/class/infiniband": 5}, path: "/sys/class/infiniband", want: 5, wantIB: 5},
		{name: "under", delays: map[string]int{"/sys/class/infiniband": 5}, path: "/sys/class/infiniband/mlx5_0/ports/1/rate", want: 5, wantIB: 5},
		{name: "sibling text", delays: map[string]int{"/sys/class/infiniband": 5}, path: "/sys/class/infinibandx", want: 0, wantIB: 5},
		{name: "root", delays: map[string]int{"/": 7}, path: "/etc/x", want: 7, wantIB: 7},
		{name: "one device slows IBPorts", delays: map[string]int{"/sys/class/infiniband/mlx5_3": 9}, path: "/sys/class/infiniband/mlx5_2/x", want: 0, wantIB: 9},
		{name: "largest wins", delays: map[string]int{"/sys": 3, "/sys/class": 8, "/sys/class/net": 99}, path: "/sys/class/infiniband", want: 8, wantIB: 8},
		{name: "unrelated", delays: map[string]int{"/dev/nvidia0": 4}, path: "/dev/nvidia1", want: 0, wantIB: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{}
			for p, ms := range tc.delays {
				s.delays = append(s.delays, delayRule{prefix: p, ms: ms})
			}
			if got := s.delayFor(tc.path); got != tc.want {
				t.Errorf("delayFor(%q) = %d, want %d", tc.path, got, tc.want)
			}
			if got := s.ibDelay(); got != tc.wantIB {
				t.Errorf("ibDelay() = %d, want %d", got, tc.wantIB)
			}
		})
	}
}

func TestSnapshotTimedOutCommand(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{commandsFile: `[
		{"argv": ["/usr/bin/all_reduce_perf", "-g", "8"], "stdout": "# nThread 1\n", "exit_code": 137, "duration_ms": 30000, "timed_out": true}
	]`})
	argv := []string{"/usr/bin/all_reduce_perf", "-g", "8"}
	want := CmdResult{Argv: argv, Stdout: "# nThread 1\n", ExitCode: 137, Duration: 30 * time.Second}

	t.Run("hangs until the deadline", func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		got, err := s.Exec(ctx, argv)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		if e := time.Since(start); e < 100*time.Millisecond {
			t.Errorf("returned after %v, before the deadline", e)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Exec (-want +got):\n%s", diff)
		}
	})
	t.Run("without a deadline does not hang", func(t *testing.T) {
		_, err := s.Exec(context.Background(), argv)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestSnapshotHostname(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr bool
	}{
		{name: "from meta", files: map[string]string{}, want: "gpu-h100-01"},
		{name: "from fs", files: map[string]string{metaFile: `{"format": 1}`, "fs/proc/sys/kernel/hostname": "gpu07\n"}, want: "gpu07"},
		{name: "meta wins", files: map[string]string{"fs/proc/sys/kernel/hostname": "gpu07\n"}, want: "gpu-h100-01"},
		{name: "none", files: map[string]string{metaFile: `{"format": 1}`}, wantErr: true},
		{name: "empty file", files: map[string]string{metaFile: `{"format": 1}`, "fs/proc/sys/kernel/hostname": "\n"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := writeSnapshot(t, tc.files)
			got, err := s.Hostname(context.Background())
			if tc.wantErr {
				if err == nil {
					t.Errorf("Hostname = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Hostname = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestOpenSnapshotErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "no meta.json", files: map[string]string{"fs/etc/x": ""}, wantErr: "read meta.json: no such file or directory"},
		{name: "meta syntax", files: map[string]string{metaFile: "{\n  \"format\": 1,\n  \"hostname\": gpu01\n}"},
			wantErr: "meta.json:3:15: invalid character 'g'"},
		{name: "meta format 2", files: map[string]string{metaFile: `{"format": 2}`},
			wantErr: "meta.json: format 2 is not supported (this nodecheck reads format 1)"},
		{name: "meta no format", files: map[string]string{metaFile: `{"hostname": "x"}`},
			wantErr: `meta.json: no "format" (this nodecheck reads format 1)`},
		{name: "meta format as string", files: map[string]string{metaFile: `{"format": "1"}`},
			wantErr: "meta.json:1:14: format: string value, want an integer"},
		{name: "meta bad time", files: map[string]string{metaFile: `{"format": 1, "taken_at": "yesterday"}`},
			wantErr: "meta.json: "},
		{name: "delay key relative", files: map[string]string{metaFile: `{"format": 1, "delay_ms": {"sys/class": 5}}`},
			wantErr: `meta.json: delay_ms: key "sys/class" is not a clean absolute path`},
		{name: "delay negative", files: map[string]string{metaFile: `{"format": 1, "delay_ms": {"/sys": -5}}`},
			wantErr: `meta.json: delay_ms: "/sys": -5 is negative`},
		{name: "devices not a list", files: map[string]string{devicesFile: `{"path": "/dev/nvidia0"}`},
			wantErr: "devices.json:1:1: object value, want an array"},
		{name: "devices bad major", files: map[string]string{devicesFile: "[\n{\"path\": \"/dev/nvidia0\", \"type\": \"char\", \"major\": \"195\"}]"},
			wantErr: "devices.json:2:55: major: string value, want a non-negative integer"},
		{name: "devices relative path", files: map[string]string{devicesFile: `[{"path": "dev/nvidia0", "type": "char"}]`},
			wantErr: `devices.json: entry 1 ("dev/nvidia0"): path is not a clean absolute path`},
		{name: "devices duplicate", files: map[string]string{devicesFile: `[{"path": "/dev/a", "type": "char"}, {"path": "/dev/a", "missing": true}]`},
			wantErr: `devices.json: entry 2 ("/dev/a"): path listed twice`},
		{name: "devices bad type", files: map[string]string{devicesFile: `[{"path": "/dev/a", "type": "chr"}]`},
			wantErr: `devices.json: entry 1 ("/dev/a"): type "chr" is not one of char, block, file, dir, symlink, other`},
		{name: "devices no type", files: map[string]string{devicesFile: `[{"path": "/dev/a"}]`},
			wantErr: `type "" is not one of`},
		{name: "devices missing with type", files: map[string]string{devicesFile: `[{"path": "/dev/a", "missing": true, "type": "char"}]`},
			wantErr: "missing, yet has a type or numbers"},
		{name: "devices numbers on a file", files: map[string]string{devicesFile: `[{"path": "/dev/a", "type": "file", "major": 1}]`},
			wantErr: "a file has no major or minor"},
		{name: "devices negative delay", files: map[string]string{devicesFile: `[{"path": "/dev/a", "type": "char", "delay_ms": -1}]`},
			wantErr: "delay_ms -1 is negative"},
		{name: "commands syntax", files: map[string]string{commandsFile: `[{"argv": ["/bin/x"],}]`},
			wantErr: "commands.json:1:22: invalid character '}'"},
		{name: "commands empty argv", files: map[string]string{commandsFile: `[{"argv": []}]`},
			wantErr: "commands.json: entry 1: argv is empty"},
		{name: "commands relative program", files: map[string]string{commandsFile: `[{"argv": ["/bin/a"]}, {"argv": ["nvidia-smi"]}]`},
			wantErr: `commands.json: entry 2: program "nvidia-smi" is not an absolute path`},
		{name: "commands exit code not a number", files: map[string]string{commandsFile: `[{"argv": ["/bin/a"], "exit_code": "0"}]`},
			wantErr: "commands.json:1:38: exit_code: string value, want an integer"},
		{name: "nvml not an object", files: map[string]string{nvmlFile: `["SUCCESS"]`},
			wantErr: "nvml.json:1:1: array value, want an object"},
		{name: "nvml truncated", files: map[string]string{nvmlFile: `{"init": "SUCC`},
			wantErr: "nvml.json:1:14: unexpected end of JSON input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := tc.files
			if _, ok := files[metaFile]; !ok && tc.name != "no meta.json" {
				files = mergeFiles(files, map[string]string{metaFile: validMeta})
			}
			writeTree(t, dir, files)
			_, err := OpenSnapshot(dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("OpenSnapshot: %v, want an error containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("OpenSnapshot error %q does not name the snapshot directory", err)
			}
		})
	}
	t.Run("not a directory", func(t *testing.T) {
		if _, err := OpenSnapshot(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenSnapshot of a missing directory: %v, want fs.ErrNotExist", err)
		}
	})
}

// TestSnapshotUnknownKeys checks that keys a later format adds do not stop replay.
func TestSnapshotUnknownKeys(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{
		metaFile:     `{"format": 1, "hostname": "h", "kernel": "6.8.0"}`,
		devicesFile:  `[{"path": "/dev/nvidia0", "type": "char", "major": 195, "minor": 0, "mode": "0666"}]`,
		commandsFile: `[{"argv": ["/bin/a"], "stdout": "x", "signal": ""}]`,
	})
	if dn, err := s.DevNode(context.Background(), "/dev/nvidia0"); err != nil || dn.Type != "char" {
		t.Errorf("DevNode = %+v, %v", dn, err)
	}
}
