package node

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeNVLinks is a GPUSource that also reads the NVLink topology, counting its readings; with
// block set the reading lasts until ctx ends.
type fakeNVLinks struct {
	fakeGPUs
	topo  NVLinkTopology
	err   error
	block bool
	calls atomic.Int32
}

// nvlinksJSON is NVLinkTopologyFact's snapshot file.
const nvlinksJSON = "nvlinks.json"

func (f *fakeNVLinks) NVLinkTopology(ctx context.Context) (NVLinkTopology, error) {
	f.calls.Add(1)
	if f.block {
		<-ctx.Done()
		return NVLinkTopology{}, ctx.Err()
	}
	return f.topo.Clone(), f.err
}

// twoLinked is two GPUs joined by two NVLinks, one more link of GPU 0 to an NVSwitch, and one
// far end NVML could not give.
func twoLinked() NVLinkTopology {
	return NVLinkTopology{Init: InitSuccess, Devices: []GPULinkEnds{
		{Index: 0, MinorNumber: 0, PCIBusID: "00000000:19:00.0", Links: []NVLinkEnd{
			{Link: 0, RemoteBusID: "00000000:3B:00.0", RemoteType: "GPU"},
			{Link: 1, RemoteBusID: "00000000:3B:00.0", RemoteType: "GPU"},
			{Link: 2, RemoteBusID: "00000000:83:00.0", RemoteType: "SWITCH"},
		}},
		{Index: 1, MinorNumber: 1, PCIBusID: "00000000:3B:00.0", Links: []NVLinkEnd{
			{Link: 0, RemoteBusID: "00000000:19:00.0"},
			{Link: 1, Error: "ERROR_UNKNOWN"},
		}},
		{Index: 2, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"},
	}}
}

func TestLiveNVLinkTopology(t *testing.T) {
	l, _ := fixtureLive(t, WithGPUSource(&fakeGPUs{}))
	if got, err := Read(context.Background(), l, NVLinkTopologyFact); err != nil || got.Init != InitNotBuilt {
		t.Errorf("a source without NVLinks: %+v, %v; want Init %s", got, err, InitNotBuilt)
	}
	src := &fakeNVLinks{topo: twoLinked()}
	l, _ = fixtureLive(t, WithGPUSource(src))
	got, err := Read(context.Background(), l, NVLinkTopologyFact)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(twoLinked(), got); diff != "" {
		t.Errorf("NVLinkTopology (-want +got):\n%s", diff)
	}
}

// TestRecordNVLinkTopology records the topology and replays it, byte for byte what the
// reading said; a reading cut off by its deadline replays as a hang; one that failed
// otherwise is not recorded.
func TestRecordNVLinkTopology(t *testing.T) {
	tests := []struct {
		name      string
		src       *fakeNVLinks
		want      NVLinkTopology
		wantFile  bool
		replayErr error
	}{
		{name: "recorded", src: &fakeNVLinks{topo: twoLinked()}, want: twoLinked(), wantFile: true},
		{name: "NVML down", src: &fakeNVLinks{topo: NVLinkTopology{Init: "ERROR_LIBRARY_NOT_FOUND"}},
			want: NVLinkTopology{Init: "ERROR_LIBRARY_NOT_FOUND"}, wantFile: true},
		{name: "timed out is a hang", src: &fakeNVLinks{block: true}, wantFile: true, replayErr: context.DeadlineExceeded},
		{name: "other errors are not recorded", src: &fakeNVLinks{err: errors.New("count GPUs: ERROR_UNKNOWN")}, replayErr: fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := fixtureLive(t, WithGPUSource(tc.src))
			rec := NewRecorder(l)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, _ = Read(ctx, rec, NVLinkTopologyFact)
			dir := filepath.Join(t.TempDir(), "snap")
			saved, err := rec.Save(dir, Meta{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, nvlinksJSON)); (err == nil) != tc.wantFile || slices.Contains(saved.Facts, "nvlinks") != tc.wantFile {
				t.Errorf("nvlinks.json written: %v (Saved.Facts %q), want %v", err == nil, saved.Facts, tc.wantFile)
			}
			meta, err := os.ReadFile(filepath.Join(dir, metaFile))
			if err != nil || strings.Contains(string(meta), "delay_ms") {
				t.Errorf("meta.json %s (%v): an NVLink reading is no path to delay", meta, err)
			}
			snap, err := OpenSnapshot(dir)
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer rcancel()
			got, err := Read(rctx, snap, NVLinkTopologyFact)
			if tc.replayErr != nil {
				if !errors.Is(err, tc.replayErr) {
					t.Errorf("replayed: %v, want %v", err, tc.replayErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replayed (-recorded +replayed):\n%s", diff)
			}
		})
	}
}

// TestRecordNVLinksStillRunning: a reading still under way when Save runs is saved as a hang.
func TestRecordNVLinksStillRunning(t *testing.T) {
	src := &fakeNVLinks{block: true}
	l, _ := fixtureLive(t, WithGPUSource(src))
	rec := NewRecorder(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _, _ = Read(ctx, rec, NVLinkTopologyFact); close(done) }()
	for src.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, Meta{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	b, err := os.ReadFile(filepath.Join(dir, nvlinksJSON))
	if err != nil || !strings.Contains(string(b), `"timed_out": true`) {
		t.Errorf("nvlinks.json = %s, %v; want a timed-out record", b, err)
	}
}

func TestSnapshotNVLinks(t *testing.T) {
	s, _ := writeSnapshot(t, map[string]string{})
	if _, err := Read(context.Background(), s, NVLinkTopologyFact); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no nvlinks.json: %v, want fs.ErrNotExist", err)
	}
	s, _ = writeSnapshot(t, map[string]string{nvlinksJSON: `{"init": "SUCCESS", "devices": [{"index": 0, "minor_number": 0, "links": [{"link": 3, "remote_pci_bus_id": "00000000:83:00.0", "remote_type": "SWITCH", "speed": 25}]}], "later": 1}`})
	got, err := Read(context.Background(), s, NVLinkTopologyFact)
	want := NVLinkTopology{Init: InitSuccess, Devices: []GPULinkEnds{{Links: []NVLinkEnd{{Link: 3, RemoteBusID: "00000000:83:00.0", RemoteType: "SWITCH"}}}}}
	if err != nil || !cmp.Equal(want, got) {
		t.Errorf("NVLinkTopology = %+v, %v; want %+v (unknown keys ignored)", got, err, want)
	}
	for _, tc := range []struct{ file, wantErr string }{
		{`{"devices": []}`, `nvlinks.json: no "init"`},
		{`{"init": "SUCCESS", "delay_ms": -1}`, "nvlinks.json: delay_ms -1 is negative"},
		{`{"init": "SUCCESS", "devices": [{"index": 4, "links": [{"link": -1}]}]}`, "nvlinks.json: device 1 (index 4): link -1 is negative"},
		{"{\n  \"init\": 7\n}", "nvlinks.json:2:11: init: number value, want a string"},
	} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{metaFile: validMeta, nvlinksJSON: tc.file})
		if _, err := OpenSnapshot(dir); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("OpenSnapshot with nvlinks.json %s: %v, want an error containing %q", tc.file, err, tc.wantErr)
		}
	}
}

func TestMemoNVLinksOnce(t *testing.T) {
	src := &fakeNVLinks{topo: twoLinked()}
	l, _ := fixtureLive(t, WithGPUSource(src))
	m := NewMemo(l)
	for range 3 {
		if _, err := Read(context.Background(), m, NVLinkTopologyFact); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Errorf("%d NVLink readings, want 1 per run", n)
	}
}
