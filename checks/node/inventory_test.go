package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const inventoryFixture = "testdata/inventory-2cpu"

// inventoryJSON is InventoryFact's snapshot file.
const inventoryJSON = "inventory.json"

// fixtureInventory is what testdata/inventory-2cpu holds (see its SOURCE).
var fixtureInventory = Inventory{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1, CPUs: 2, MemoryUsableMiB: 24105}

func absFixture(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLiveInventoryFixture(t *testing.T) {
	fix := absFixture(t, inventoryFixture)
	// Sys outside FS: ghw must be given absolute overrides instead of a chroot at FS.
	outside := t.TempDir()
	if err := os.CopyFS(filepath.Join(outside, "proc"), os.DirFS(filepath.Join(fix, "proc"))); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths Paths
	}{
		{name: "sys under FS", paths: Paths{Sys: filepath.Join(fix, "sys"), Dev: fix, FS: fix}},
		{name: "sys outside FS", paths: Paths{Sys: filepath.Join(fix, "sys"), Dev: outside, FS: outside}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLive(tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Read(context.Background(), l, InventoryFact)
			if err != nil {
				t.Fatalf("Inventory: %v", err)
			}
			if diff := cmp.Diff(fixtureInventory, got); diff != "" {
				t.Errorf("Inventory (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLiveInventoryEmptyTree(t *testing.T) {
	dir := t.TempDir()
	l, err := NewLive(Paths{Sys: dir, Dev: dir, FS: dir})
	if err != nil {
		t.Fatal(err)
	}
	if inv, err := Read(context.Background(), l, InventoryFact); err == nil {
		t.Errorf("Inventory of an empty tree = %+v, want an error", inv)
	}
}

// TestLiveInventoryReal reads this machine and compares with /proc/cpuinfo and /proc/meminfo.
func TestLiveInventoryReal(t *testing.T) {
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), l, InventoryFact)
	if err != nil {
		t.Fatalf("Inventory: %v", err)
	}
	procs := 0
	for _, line := range strings.Split(string(cpuinfo), "\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "processor" {
			procs++
		}
	}
	if got.CPUs != procs {
		t.Errorf("CPUs = %d, /proc/cpuinfo lists %d processors", got.CPUs, procs)
	}
	if got.Sockets < 1 || got.CoresPerSocket < 1 || got.ThreadsPerCore < 1 {
		t.Errorf("Inventory = %+v, want at least one socket, core and thread", got)
	}
	if n := got.Sockets * got.CoresPerSocket * got.ThreadsPerCore; n != got.CPUs {
		t.Logf("Sockets x CoresPerSocket x ThreadsPerCore = %d, CPUs %d (an uneven topology)", n, got.CPUs)
	}
	if want := memTotalMiB(t); got.MemoryUsableMiB != want {
		t.Errorf("MemoryUsableMiB = %d, /proc/meminfo MemTotal is %d MiB", got.MemoryUsableMiB, want)
	}
}

func memTotalMiB(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

func TestLiveInventoryDone(t *testing.T) {
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, l, InventoryFact); !errors.Is(err, context.Canceled) {
		t.Errorf("Inventory with ctx done: %v, want context.Canceled", err)
	}
}

func TestSnapshotInventory(t *testing.T) {
	ctx := context.Background()
	t.Run("absent", func(t *testing.T) {
		s, _ := writeSnapshot(t, map[string]string{})
		if _, err := Read(ctx, s, InventoryFact); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Inventory without inventory.json: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("present", func(t *testing.T) {
		s, _ := writeSnapshot(t, map[string]string{inventoryJSON: `{"sockets": 2, "cores_per_socket": 56, "threads_per_core": 2, "cpus": 224, "memory_usable_mib": 2063731}`})
		got, err := Read(ctx, s, InventoryFact)
		if err != nil {
			t.Fatal(err)
		}
		want := Inventory{Sockets: 2, CoresPerSocket: 56, ThreadsPerCore: 2, CPUs: 224, MemoryUsableMiB: 2063731}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Inventory (-want +got):\n%s", diff)
		}
	})
	for _, tc := range []struct{ name, json, wantErr string }{
		{name: "not an object", json: `[{"cpus": 2}]`, wantErr: "inventory.json: want a JSON object"},
		{name: "mistyped", json: "{\n  \"cpus\": \"2\"\n}", wantErr: "inventory.json:2:13: cpus: string value, want an integer"},
		{name: "negative", json: `{"cpus": -2}`, wantErr: "cpus -2 is negative"},
		{name: "syntax", json: `{"cpus": 2`, wantErr: inventoryJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{metaFile: validMeta, inventoryJSON: tc.json})
			_, err := OpenSnapshot(dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("OpenSnapshot: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRecordInventory(t *testing.T) {
	fix := absFixture(t, inventoryFixture)
	l, err := NewLive(Paths{Sys: filepath.Join(fix, "sys"), Dev: fix, FS: fix})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(l)
	if _, err := Read(context.Background(), r, InventoryFact); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	st, err := r.Save(dir, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Facts, "inventory") {
		t.Errorf("Saved.Facts = %q, want inventory among them", st.Facts)
	}
	s, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), s, InventoryFact)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fixtureInventory, got); diff != "" {
		t.Errorf("replayed Inventory (-want +got):\n%s", diff)
	}
}

// countingInventory counts readings of the inventory; nothing else of Facts is used.
type countingInventory struct {
	Facts
	calls atomic.Int32
}

func (c *countingInventory) Fact(_ context.Context, d FactDecl) (any, error) {
	if d != InventoryFact {
		return nil, fmt.Errorf("read %s: %w", d.FactName(), fs.ErrNotExist)
	}
	c.calls.Add(1)
	return fixtureInventory, nil
}

func TestMemoInventory(t *testing.T) {
	inner := &countingInventory{}
	m := NewMemo(inner)
	for range 3 {
		got, err := Read(context.Background(), m, InventoryFact)
		if err != nil || got != fixtureInventory {
			t.Fatalf("Inventory = %+v, %v", got, err)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("inner Inventory called %d times, want 1", n)
	}
}
