package node

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeGPUs is a GPUSource answering inv, err, and counting calls and the facts asked for.
type fakeGPUs struct {
	inv   GPUInventory
	err   error
	calls int
	want  GPUFields // of the last call
}

func (f *fakeGPUs) GPUs(ctx context.Context, want GPUFields) (GPUInventory, error) {
	f.calls++
	f.want = want
	return f.inv.Clone(), f.err
}

// h100GPU is GPU i of testdata/snap-h100's kind, as NVML reports it.
func h100GPU(i int, busID string) GPU {
	return GPU{Index: i, MinorNumber: i, UUID: "GPU-00000000-0000-0000-0000-00000000000" + string(rune('0'+i)),
		Name: "NVIDIA H100 80GB HBM3", PCIBusID: busID,
		PCIe:   &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
		Fabric: &Fabric{State: "COMPLETED", Status: "SUCCESS"}}
}

func TestLiveGPUs(t *testing.T) {
	ctx := context.Background()
	t.Run("no source", func(t *testing.T) {
		l, _ := fixtureLive(t)
		got, err := l.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(GPUInventory{Init: InitNotBuilt}, got); diff != "" {
			t.Errorf("GPUs (-want +got):\n%s", diff)
		}
	})
	t.Run("nil source", func(t *testing.T) {
		l, _ := fixtureLive(t, WithGPUSource(nil))
		if got, err := l.GPUs(ctx); err != nil || got.Init != InitNotBuilt {
			t.Errorf("GPUs = %+v, %v; want Init %s", got, err, InitNotBuilt)
		}
	})
	t.Run("source", func(t *testing.T) {
		want := GPUInventory{Init: InitSuccess, DriverVersion: "535.161.08", CUDADriverVersion: 12020, DeviceCount: 1,
			Devices: []GPU{h100GPU(0, "00000000:19:00.0")}}
		src := &fakeGPUs{inv: want}
		l, _ := fixtureLive(t, WithGPUSource(src))
		got, err := l.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GPUs (-want +got):\n%s", diff)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		src := &fakeGPUs{inv: GPUInventory{Init: InitSuccess}}
		l, _ := fixtureLive(t, WithGPUSource(src))
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.GPUs(cancelled); !errors.Is(err, context.Canceled) || src.calls != 0 {
			t.Errorf("GPUs with a cancelled context: %v after %d source calls, want context.Canceled and none", err, src.calls)
		}
	})
}

func TestSnapshotGPUs(t *testing.T) {
	ctx := context.Background()
	t.Run("fixture", func(t *testing.T) {
		s, err := OpenSnapshot("testdata/snap-h100")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g := h100GPU(0, "0000:18:00.0")
		want := GPUInventory{Init: InitSuccess, DriverVersion: "535.161.08", CUDADriverVersion: 12020, DeviceCount: 1,
			Devices: []GPU{g}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GPUs (-want +got):\n%s", diff)
		}
		// Each answer is a fresh copy: a caller changing one cannot change the next.
		got.Devices[0].PCIe.CurLinkWidth = 8
		again, _ := s.GPUs(ctx)
		if again.Devices[0].PCIe.CurLinkWidth != 16 {
			t.Error("a caller's change to an answer reached the next answer")
		}
	})
	t.Run("repository h100-healthy", func(t *testing.T) {
		s, err := OpenSnapshot(h100Snapshot(t))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Init != InitSuccess || got.DeviceCount != 8 || len(got.Devices) != 8 {
			t.Fatalf("GPUs = %+v, want 8 devices", got)
		}
		want := GPU{Index: 7, MinorNumber: 7, UUID: got.Devices[7].UUID, Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: "00000000:DB:00.0",
			PCIe:     &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric:   &Fabric{State: "COMPLETED", Status: "SUCCESS"},
			// From the capture's ECC, Remapped Rows, FB Memory Usage and Processes sections;
			// the 18 links are the snapshot's invented part (see its SOURCE).
			ECC:          &ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: ptr[uint64](0), VolatileCorrected: ptr[uint64](0), AggregateUncorrected: ptr[uint64](0)},
			RemappedRows: &RemappedRows{},
			Memory:       &Memory{TotalMiB: 81559, UsedMiB: 0, ReservedMiB: 551},
			Compute:      &Compute{Processes: []Process{}},
		}
		for l := range 18 {
			want.NVLinks = append(want.NVLinks, NVLink{Link: l, Active: true})
		}
		if diff := cmp.Diff(want, got.Devices[7]); diff != "" {
			t.Errorf("GPU 7 (-want +got):\n%s", diff)
		}
	})

	tests := []struct {
		name     string
		nvml     string // "" leaves nvml.json out
		want     GPUInventory
		wantErr  string
		notExist bool
	}{
		{name: "not recorded", wantErr: "read NVML: no NVML facts recorded (the snapshot has no nvml.json)", notExist: true},
		{name: "library not found", nvml: `{"init": "ERROR_LIBRARY_NOT_FOUND"}`,
			want: GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}},
		{name: "not built", nvml: `{"init": "NOT_BUILT_WITH_NVML", "device_count": 0}`,
			want: GPUInventory{Init: InitNotBuilt}},
		{name: "lost gpu", nvml: `{"init": "SUCCESS", "driver_version": "550.54.15", "device_count": 2, "devices": [
			{"index": 0, "minor_number": 0, "pci_bus_id": "00000000:18:00.0", "pcie": {"curr_link_width": 8, "max_link_width": 16, "curr_link_gen": 5, "max_link_gen": 5}},
			{"index": 1, "minor_number": -1, "error": "ERROR_GPU_IS_LOST", "future_key": true}]}`,
			want: GPUInventory{Init: InitSuccess, DriverVersion: "550.54.15", DeviceCount: 2, Devices: []GPU{
				{Index: 0, MinorNumber: 0, PCIBusID: "00000000:18:00.0", PCIe: &PCIe{CurLinkWidth: 8, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5}},
				{Index: 1, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"},
			}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.nvml != "" {
				files[nvmlFile] = tc.nvml
			}
			s, _ := writeSnapshot(t, files)
			got, err := s.GPUs(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GPUs = %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				if errors.Is(err, fs.ErrNotExist) != tc.notExist {
					t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, !tc.notExist, tc.notExist)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapshotGPUsDelays(t *testing.T) {
	tests := []struct {
		name  string
		nvml  string
		stall bool
	}{
		{name: "root delay", nvml: `{"init": "SUCCESS", "delay_ms": 60000}`, stall: true},
		{name: "device delay", nvml: `{"init": "SUCCESS", "device_count": 2, "devices": [{"index": 0}, {"index": 1, "delay_ms": 60000}]}`, stall: true},
		{name: "recorded as timed out", nvml: `{"timed_out": true}`, stall: true},
		{name: "short delays", nvml: `{"init": "SUCCESS", "delay_ms": 10, "device_count": 1, "devices": [{"index": 0, "delay_ms": 10}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := writeSnapshot(t, map[string]string{nvmlFile: tc.nvml})
			const deadline = 100 * time.Millisecond
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, err := s.GPUs(ctx)
			elapsed := time.Since(start)
			if !tc.stall {
				if err != nil || elapsed < 20*time.Millisecond {
					t.Errorf("GPUs = %v after %v, want an answer after both delays (20ms)", err, elapsed)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("GPUs = %v, want context.DeadlineExceeded", err)
			}
			if elapsed < deadline || elapsed > deadline+2*time.Second {
				t.Errorf("GPUs returned after %v, want about %v", elapsed, deadline)
			}
		})
	}
	t.Run("timed out without a deadline", func(t *testing.T) {
		s, _ := writeSnapshot(t, map[string]string{nvmlFile: `{"timed_out": true}`})
		if _, err := s.GPUs(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("GPUs = %v, want context.DeadlineExceeded at once", err)
		}
	})
}

func TestParseNVMLErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "no init", in: `{"device_count": 0}`, want: `nvml.json: no "init"`},
		{name: "negative delay", in: `{"init": "SUCCESS", "delay_ms": -1}`, want: "nvml.json: delay_ms -1 is negative"},
		{name: "negative count", in: `{"init": "SUCCESS", "device_count": -1}`, want: "nvml.json: device_count -1 is negative"},
		{name: "negative device delay", in: `{"init": "SUCCESS", "devices": [{"index": 0}, {"index": 3, "delay_ms": -5}]}`,
			want: "nvml.json: device 2 (index 3): delay_ms -5 is negative"},
		{name: "width not a number", in: "{\"init\": \"SUCCESS\",\n \"devices\": [{\"pcie\": {\"curr_link_width\": \"x16\"}}]}",
			want: "nvml.json:2:47: devices.pcie.curr_link_width: string value, want an integer"},
		{name: "init not a string", in: `{"init": 0}`, want: "nvml.json:1:10: init: number value, want a string"},
		{name: "count not a number", in: `{"init": "SUCCESS", "device_count": "8"}`, want: "nvml.json:1:39: device_count: string value, want an integer"},
		{name: "ECC counter not a number", in: `{"init": "SUCCESS", "devices": [{"ecc": {"volatile_uncorrected": -1}}]}`,
			want: "nvml.json:1:67: devices.ecc.volatile_uncorrected: number -1 value, want a non-negative integer"},
		{name: "process pid not a number", in: `{"init": "SUCCESS", "devices": [{"compute": {"processes": [{"pid": "42"}]}}]}`,
			want: "devices.compute.processes.pid: string value, want a non-negative integer"}, // Process decodes itself: the column is within it
		{name: "device delay not a number", in: `{"init": "SUCCESS", "devices": [{"delay_ms": "5"}]}`,
			want: "nvml.json:1:48: devices.delay_ms: string value, want an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseNVML([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseNVML: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestNVMLRecordRoundTrip: every field of a GPU survives a recording and its replay, so
// that a snapshot of a real node replays what the checks saw there.
func TestNVMLRecordRoundTrip(t *testing.T) {
	inv := GPUInventory{Init: InitSuccess, DriverVersion: "535.161.08", CUDADriverVersion: 12020, DeviceCount: 1,
		Fields: GPUName | GPUThermal | GPURecoveryAction,
		Devices: []GPU{{Index: 1, MinorNumber: 3, Error: "ERROR_RESET_REQUIRED", UUID: "GPU-x", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:19:00.0",
			Serial: "1650124031592",
			PCIe:   &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric: &Fabric{State: "COMPLETED", Status: "SUCCESS", Health: FabricHealth{Summary: FabricUnhealthy, DegradedBandwidth: FabricFalse,
				RouteRecovery: FabricFalse, RouteUnhealthy: FabricTrue, AccessTimeoutRecovery: FabricFalse, IncorrectConfiguration: FabricConfigOK}},
			ECC:          &ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: ptr[uint64](2)},
			RemappedRows: &RemappedRows{Uncorrectable: 1, Pending: true},
			RetiredPages: &RetiredPages{SingleBit: 1, DoubleBit: 2, Pending: true},
			NVLinks:      []NVLink{{Link: 0, Active: true}, {Link: 1}},
			Memory:       &Memory{TotalMiB: 81559, UsedMiB: 1200, ReservedMiB: 551},
			Compute:      &Compute{Processes: []Process{{PID: 4242, UsedMiB: 1200, UID: 1000, User: "alice", Command: "python"}}},
			NVLinkErrors: &NVLinkErrors{CRCFlit: 1, CRCData: 2, Replay: 3, Recovery: 4, Links: 18, Unread: []string{"crc_data"}},
			PCIeReplays:  ptr[uint64](7),
			ClockEvents:  NewClockEvents(ClockHWSlowdown | ClockHWPowerBrakeSlowdown),
			Thermal: &Thermal{GPUC: 30, SlowdownC: 89, ShutdownC: 92, GPUMaxC: 87, MemoryC: 36, MemoryMaxC: 95,
				MarginC: ptr(57), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:          &Power{EnforcedLimitW: 500, DefaultLimitW: 700, DrawW: 100.89},
			Persistence:    ptr(false),
			RecoveryAction: "GPU_RESET",
			ResetStatus:    &ResetStatus{ResetRequired: true, DrainAndReset: true},
		}}}
	// nvmlRecord and gpuRecord embed GPUInventory and GPU: a field the JSON leaves out (a
	// "-" tag, a record key that shadows it) would not be replayed. A field this test leaves
	// at its zero would be one whose recording nobody checks.
	for _, v := range []reflect.Value{reflect.ValueOf(inv), reflect.ValueOf(inv.Devices[0])} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set in this test: set it, so that its recording and replay are checked", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	b, err := json.Marshal(newNVMLRecord(inv))
	if err != nil {
		t.Fatal(err)
	}
	var r nvmlRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inv, nvmlInventory(r)); diff != "" {
		t.Errorf("replayed inventory (-recorded +replayed):\n%s", diff)
	}
}

// TestJSONFieldPath: encoding/json names embedded structs in its key paths; the path a
// snapshot error gives is the file's.
func TestJSONFieldPath(t *testing.T) {
	tests := []struct {
		root any
		path string
		want string
	}{
		{nvmlRecord{}, "devices.GPU.pcie.curr_link_width", "devices.pcie.curr_link_width"},
		{nvmlRecord{}, "GPUInventory.init", "init"},
		{nvmlRecord{}, "devices.GPU.compute.processes.pid", "devices.compute.processes.pid"},
		{nvmlRecord{}, "devices.delay_ms", "devices.delay_ms"},
		{[]deviceRecord{}, "DevNode.major", "major"},
		{Meta{}, "delay_ms", "delay_ms"},
		{nvmlRecord{}, "devices.GPU.unknown.GPU", "devices.unknown.GPU"}, // off the types: kept
	}
	for _, tc := range tests {
		if got := jsonFieldPath(reflect.TypeOf(tc.root), tc.path); got != tc.want {
			t.Errorf("jsonFieldPath(%T, %q) = %q, want %q", tc.root, tc.path, got, tc.want)
		}
	}
}
