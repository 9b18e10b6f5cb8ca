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

// answer is what one Facts call gave, in a form two implementations can be compared by.
type answer struct {
	Value    any
	Err      bool
	NotExist bool
	Deadline bool
}

func answerOf(v any, err error) answer {
	return answer{Value: v, Err: err != nil, NotExist: errors.Is(err, fs.ErrNotExist),
		Deadline: errors.Is(err, context.DeadlineExceeded)}
}

// TestRecordReplay records a Live over fixture roots, saves the snapshot, and checks that the
// snapshot answers every call as Live did.
func TestRecordReplay(t *testing.T) {
	p := Paths{Sys: buildSysfsIB(t), Dev: t.TempDir(), FS: t.TempDir()}
	writeTree(t, p.FS, map[string]string{
		"etc/slurm/gres.conf":      "Name=gpu File=/dev/nvidia[0-1]\n",
		"proc/sys/kernel/hostname": "gpu-h100-01\n",
	})
	writeTree(t, p.Dev, map[string]string{"nvidia0": ""})
	if err := os.Symlink("nowhere", filepath.Join(p.Dev, "nvidia1")); err != nil {
		t.Fatal(err)
	}
	buildSysfsPCIAt(t, p.Sys)
	gpus := &fakeGPUs{inv: GPUInventory{Init: InitSuccess, DriverVersion: "550.54.15", CUDADriverVersion: 12040, DeviceCount: 2,
		Devices: []GPU{h100GPU(0, "00000000:18:00.0"), {Index: 1, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"}}}}
	live, err := NewLive(p, WithGPUSource(gpus))
	if err != nil {
		t.Fatal(err)
	}
	exit3, sleeper := testBin(t, "exit-3"), testBin(t, "sleep-forever")

	calls := []struct {
		name string
		call func(ctx context.Context, f Facts) answer
	}{
		{"ReadFile", func(ctx context.Context, f Facts) answer {
			b, err := f.ReadFile(ctx, "/etc/slurm/gres.conf")
			return answerOf(string(b), err)
		}},
		{"ReadFile missing", func(ctx context.Context, f Facts) answer {
			b, err := f.ReadFile(ctx, "/etc/slurm/slurm.conf")
			return answerOf(string(b), err)
		}},
		{"DevNode file", func(ctx context.Context, f Facts) answer { return answerOf(f.DevNode(ctx, "/dev/nvidia0")) }},
		{"DevNode dangling symlink", func(ctx context.Context, f Facts) answer { return answerOf(f.DevNode(ctx, "/dev/nvidia1")) }},
		{"DevNode missing", func(ctx context.Context, f Facts) answer { return answerOf(f.DevNode(ctx, "/dev/nvidia7")) }},
		{"IBPorts", func(ctx context.Context, f Facts) answer { return answerOf(f.IBPorts(ctx)) }},
		{"Exec", func(ctx context.Context, f Facts) answer { return answerOf(f.Exec(ctx, []string{exit3, "x"})) }},
		{"Exec missing", func(ctx context.Context, f Facts) answer {
			return answerOf(f.Exec(ctx, []string{"/usr/bin/not-installed-here"}))
		}},
		{"Exec timed out", func(ctx context.Context, f Facts) answer {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			return answerOf(f.Exec(ctx, []string{sleeper}))
		}},
		{"Hostname", func(ctx context.Context, f Facts) answer { return answerOf(f.Hostname(ctx)) }},
		{"PCIDevices", func(ctx context.Context, f Facts) answer { return answerOf(f.PCIDevices(ctx)) }},
		{"ReadFile through a PCI link", func(ctx context.Context, f Facts) answer {
			b, err := f.ReadFile(ctx, "/sys/bus/pci/devices/0000:01:00.0/max_link_width")
			return answerOf(string(b), err)
		}},
		{"GPUs", func(ctx context.Context, f Facts) answer { return answerOf(f.GPUs(ctx)) }},
	}

	rec := NewRecorder(live)
	ctx := context.Background()
	recorded := make([]answer, len(calls))
	for i, c := range calls {
		recorded[i] = c.call(ctx, rec)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	meta := Meta{NodeName: "gpu01", TakenAt: time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), NodecheckVersion: "test"}
	saved, err := rec.Save(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := meta
	wantMeta.Format, wantMeta.Hostname = 1, "gpu-h100-01"
	if diff := cmp.Diff(wantMeta, snap.Meta()); diff != "" {
		t.Errorf("Meta (-want +got):\n%s", diff)
	}
	for i, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			got := c.call(ctx, snap)
			if diff := cmp.Diff(recorded[i], got, cmpopts.IgnoreFields(CmdResult{}, "Duration")); diff != "" {
				t.Errorf("replay differs from the recording (-recorded +replayed):\n%s", diff)
			}
		})
	}
	// The one timed-out command must have been recorded as such, with its partial output.
	if !strings.Contains(recorded[8].Value.(CmdResult).Stdout, "child ") || !recorded[8].Deadline {
		t.Errorf("the timed-out command was recorded as %+v", recorded[8])
	}

	t.Run("PCI links kept", func(t *testing.T) {
		for _, l := range []struct{ addr, target string }{
			{"0000:00:02.1", "../../../devices/pci0000:00/0000:00:02.1"},
			{"0000:01:00.0", "../../../devices/pci0000:00/0000:00:02.1/0000:01:00.0"},
			{"0000:a2:00.0", "../../../devices/pci0000:a2/0000:a2:00.0"},
		} {
			got, err := os.Readlink(filepath.Join(dir, "fs/sys/bus/pci/devices", l.addr))
			if err != nil || got != l.target {
				t.Errorf("link %s = %q, %v; want %q", l.addr, got, err, l.target)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "fs/sys/devices/pci0000:00/0000:00:02.1/current_link_width"))
		if err != nil || string(b) != "4\n" {
			t.Errorf("recorded current_link_width = %q, %v; want the kernel's text", b, err)
		}
	})
	t.Run("saved counts", func(t *testing.T) {
		// 2 IB ports x 4 attributes, 6 PCI functions (38 attribute files, as in the fixture;
		// the one also read through its link is written once), gres.conf.
		want := Saved{Hostname: "gpu-h100-01", Files: 8 + 38 + 1, Links: 6, Devices: 3, Commands: 2, NVML: true}
		got := saved
		got.Bytes = 0
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Saved (-want +got):\n%s", diff)
		}
		var total int64
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				fi, ierr := d.Info()
				if ierr != nil {
					return ierr
				}
				total += fi.Size()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if saved.Bytes != total {
			t.Errorf("Saved.Bytes = %d, want %d (the size of every file written)", saved.Bytes, total)
		}
	})
	t.Run("no counters recorded", func(t *testing.T) {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(path, "counters") {
				t.Errorf("snapshot holds %s", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("save refuses a non-empty directory", func(t *testing.T) {
		if _, err := rec.Save(dir, meta); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("Save over a snapshot: %v, want an error", err)
		}
	})
}

// TestRecordSnapshot re-records a snapshot, which must replay the same.
func TestRecordSnapshot(t *testing.T) {
	orig, err := OpenSnapshot("testdata/snap-h100")
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(orig)
	ctx := context.Background()
	if _, err := rec.IBPorts(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.ReadFile(ctx, "/etc/slurm/gres.conf"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia7"} {
		if _, err := rec.DevNode(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rec.Exec(ctx, []string{"/usr/bin/nv-fabricmanager", "--version"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "again")
	if _, err := rec.Save(dir, orig.Meta()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{devicesFile, commandsFile} {
		want, err := os.ReadFile(filepath.Join("testdata/snap-h100", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		// Compare as decoded records: the fixture is written by hand, Save indents.
		var w, g any
		switch name {
		case devicesFile:
			w, err = parseDevices(want)
			if err == nil {
				g, err = parseDevices(got)
			}
		case commandsFile:
			w, err = parseCommands(want)
			if err == nil {
				g, err = parseCommands(got)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-original +re-recorded):\n%s", name, diff)
		}
	}
	again, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	p1, err1 := orig.IBPorts(ctx)
	p2, err2 := again.IBPorts(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if diff := cmp.Diff(p1, p2); diff != "" {
		t.Errorf("IBPorts (-original +re-recorded):\n%s", diff)
	}
}

// TestRecordSecrets: files that hold credentials are never written, whatever read them.
func TestRecordSecrets(t *testing.T) {
	l, p := fixtureLive(t)
	writeTree(t, p.FS, map[string]string{
		"etc/munge/munge.key":     "secret",
		"etc/slurm/jwt_hs256.key": "secret",
		"etc/slurm/slurm.conf":    "ClusterName=c\n",
		"root/.ssh/id_ed25519":    "secret",
	})
	rec := NewRecorder(l)
	ctx := context.Background()
	for _, f := range []string{"/etc/munge/munge.key", "/etc/slurm/jwt_hs256.key", "/etc/slurm/slurm.conf", "/root/.ssh/id_ed25519"} {
		if _, err := rec.ReadFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "snap")
	saved, err := rec.Save(dir, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/etc/munge/munge.key", "/etc/slurm/jwt_hs256.key", "/root/.ssh/id_ed25519"}
	if diff := cmp.Diff(want, saved.Withheld); diff != "" {
		t.Errorf("Withheld (-want +got):\n%s", diff)
	}
	if saved.Files != 1 {
		t.Errorf("Files = %d, want 1 (slurm.conf)", saved.Files)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				return rerr
			}
			if strings.Contains(string(b), "secret") {
				t.Errorf("%s holds a secret", p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIsSecretPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/etc/munge/munge.key", true},
		{"/etc/munge", true},
		{"/etc/shadow", true},
		{"/etc/ssh/ssh_host_ed25519_key", true},
		{"/home/alice/.bashrc", true},
		{"/etc/slurm/jwt_hs256.key", true},
		{"/etc/pki/tls/private/node.pem", true},
		{"/etc/mungeish", false},
		{"/etc/slurm/slurm.conf", false},
		{"/etc/nodecheck/nodecheck.toml", false},
		{"/sys/bus/pci/devices/0000:19:00.0/class", false},
		{"/var/spool/slurmd/conf-cache/slurm.conf", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if got := isSecretPath(tc.path); got != tc.want {
				t.Errorf("isSecretPath(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// blockingGPUs is a GPUSource whose reading never ends before ctx does.
type blockingGPUs struct{}

func (blockingGPUs) GPUs(ctx context.Context, _ GPUFields) (GPUInventory, error) {
	<-ctx.Done()
	return GPUInventory{}, ctx.Err()
}

func TestRecordGPUs(t *testing.T) {
	tests := []struct {
		name      string
		src       GPUSource
		wantFile  string // nvml.json as saved; "" for none
		replayErr error
	}{
		{name: "library not found", src: &fakeGPUs{inv: GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}},
			wantFile: "{\n  \"init\": \"ERROR_LIBRARY_NOT_FOUND\",\n  \"device_count\": 0\n}\n"},
		{name: "timed out is a hang", src: blockingGPUs{},
			wantFile: "{\n  \"device_count\": 0,\n  \"timed_out\": true\n}\n", replayErr: context.DeadlineExceeded},
		{name: "other errors are not recorded", src: &fakeGPUs{err: errors.New("count devices: ERROR_UNKNOWN")}, replayErr: fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := fixtureLive(t, WithGPUSource(tc.src))
			rec := NewRecorder(l)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, _ = rec.GPUs(ctx)
			dir := filepath.Join(t.TempDir(), "snap")
			saved, err := rec.Save(dir, Meta{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, nvmlFile))
			if tc.wantFile == "" {
				if !errors.Is(err, fs.ErrNotExist) || saved.NVML {
					t.Errorf("nvml.json written (%v, %v), want none", err, saved.NVML)
				}
			} else if diff := cmp.Diff(tc.wantFile, string(b)); diff != "" {
				t.Errorf("nvml.json (-want +got):\n%s", diff)
			}
			snap, err := OpenSnapshot(dir)
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer rcancel()
			if _, err := snap.GPUs(rctx); tc.replayErr != nil && !errors.Is(err, tc.replayErr) || tc.replayErr == nil && err != nil {
				t.Errorf("replayed GPUs: %v, want %v", err, tc.replayErr)
			}
		})
	}
}

func TestRecordAddFile(t *testing.T) {
	l, _ := fixtureLive(t)
	rec := NewRecorder(l)
	if err := rec.AddFile("/etc/nodecheck/nodecheck.toml", []byte("[checks]\n")); err != nil {
		t.Fatal(err)
	}
	if err := rec.AddFile("etc/x", nil); err == nil {
		t.Error("AddFile of a relative path: no error")
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, Meta{}); err != nil {
		t.Fatal(err)
	}
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := snap.ReadFile(context.Background(), "/etc/nodecheck/nodecheck.toml"); err != nil || string(b) != "[checks]\n" {
		t.Errorf("replayed nodecheck.toml = %q, %v", b, err)
	}
}

// TestRecordRepositorySnapshot re-records the repository's H100 node, PCI bus and NVML
// included, and checks that the copy replays the same.
func TestRecordRepositorySnapshot(t *testing.T) {
	orig, err := OpenSnapshot(h100Snapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec := NewRecorder(orig)
	calls := []func(f Facts) answer{
		func(f Facts) answer { return answerOf(f.PCIDevices(ctx)) },
		func(f Facts) answer { return answerOf(f.GPUs(ctx)) },
		func(f Facts) answer { return answerOf(f.IBPorts(ctx)) },
	}
	var want []answer
	for _, c := range calls {
		want = append(want, c(rec))
	}
	dir := filepath.Join(t.TempDir(), "again")
	if _, err := rec.Save(dir, orig.Meta()); err != nil {
		t.Fatal(err)
	}
	again, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if diff := cmp.Diff(want[i], c(again)); diff != "" {
			t.Errorf("call %d (-original +re-recorded):\n%s", i, diff)
		}
	}
	if got, err := os.Readlink(filepath.Join(dir, "fs/sys/bus/pci/devices/0000:19:00.0")); err != nil ||
		got != "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0" {
		t.Errorf("re-recorded link = %q, %v", got, err)
	}
}

// TestRecordHangs: reads that ctx ended are saved as delays, so that a recording of a
// wedged node replays as wedged.
func TestRecordHangs(t *testing.T) {
	orig, _ := writeSnapshot(t, map[string]string{
		metaFile: `{"format": 1, "hostname": "h", "delay_ms": {
			"/sys/class/infiniband": 60000, "/sys/bus/pci": 60000, "/etc/slow": 60000, "/dev/nvidia3": 60000}}`,
		"fs/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
		"fs/etc/fast": "fast\n",
	})
	rec := NewRecorder(orig)
	calls := []func(ctx context.Context, f Facts) error{
		func(ctx context.Context, f Facts) error { _, err := f.IBPorts(ctx); return err },
		func(ctx context.Context, f Facts) error { _, err := f.PCIDevices(ctx); return err },
		func(ctx context.Context, f Facts) error { _, err := f.ReadFile(ctx, "/etc/slow/x"); return err },
		func(ctx context.Context, f Facts) error { _, err := f.DevNode(ctx, "/dev/nvidia3"); return err },
	}
	for i, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := c(ctx, rec); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("recording call %d: %v, want context.DeadlineExceeded", i, err)
		}
		cancel()
	}
	if _, err := rec.ReadFile(context.Background(), "/etc/fast"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, orig.Meta()); err != nil {
		t.Fatal(err)
	}
	again, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	hour := int(HangDelay.Milliseconds())
	want := map[string]int{"/sys/class/infiniband": hour, "/sys/bus/pci": 60000, "/sys/bus/pci/devices": hour,
		"/etc/slow": 60000, "/etc/slow/x": hour, "/dev/nvidia3": hour}
	if diff := cmp.Diff(want, again.Meta().DelayMS); diff != "" {
		t.Errorf("delay_ms (-want +got):\n%s", diff)
	}
	for i, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := c(ctx, again); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("replayed call %d: %v, want context.DeadlineExceeded", i, err)
		}
		cancel()
	}
	if b, err := again.ReadFile(context.Background(), "/etc/fast"); err != nil || string(b) != "fast\n" {
		t.Errorf("ReadFile(/etc/fast) = %q, %v", b, err)
	}
}

// TestRecordSaveDuringRead: a read still blocked when Save runs (a check its deadline
// abandoned) is saved as a hang, whichever of the two finishes first.
func TestRecordSaveDuringRead(t *testing.T) {
	orig, _ := writeSnapshot(t, map[string]string{
		metaFile: `{"format": 1, "hostname": "h", "delay_ms": {"/sys/class/infiniband": 60000, "/etc/slow": 60000}}`,
		nvmlFile: `{"init": "SUCCESS", "delay_ms": 60000}`,
	})
	rec := NewRecorder(orig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 3)
	go func() { _, _ = rec.ReadFile(ctx, "/etc/slow/x"); done <- struct{}{} }()
	go func() { _, _ = rec.IBPorts(ctx); done <- struct{}{} }()
	go func() { _, _ = rec.GPUs(ctx); done <- struct{}{} }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		rec.mu.Lock()
		n := rec.pending["/etc/slow/x"] + rec.pending["/sys/class/infiniband"] + rec.pending[nvmlKey]
		rec.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the three reads never started")
		}
	}
	dir := filepath.Join(t.TempDir(), "snap")
	saved, err := rec.Save(dir, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range 3 {
		<-done
	}
	if diff := cmp.Diff([]string{"/etc/slow/x", "/sys/class/infiniband"}, saved.Hangs); diff != "" {
		t.Errorf("Hangs (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(dir, nvmlFile))
	if err != nil || !strings.Contains(string(b), `"timed_out": true`) {
		t.Errorf("nvml.json = %s, %v; want a timed-out reading", b, err)
	}
}
