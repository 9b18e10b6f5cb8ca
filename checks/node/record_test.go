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
	live, err := NewLive(p)
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
	}

	rec := NewRecorder(live)
	ctx := context.Background()
	recorded := make([]answer, len(calls))
	for i, c := range calls {
		recorded[i] = c.call(ctx, rec)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	meta := Meta{NodeName: "gpu01", TakenAt: time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), NodecheckVersion: "test"}
	if err := rec.Save(dir, meta); err != nil {
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
		if err := rec.Save(dir, meta); err == nil || !strings.Contains(err.Error(), "not empty") {
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
	if err := rec.Save(dir, orig.Meta()); err != nil {
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
