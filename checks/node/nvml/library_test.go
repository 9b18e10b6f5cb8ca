//go:build cgo

package nvml

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// These tests go through go-nvml's real cgo path and dlopen, against no library, a stub
// library, and (where there is one) the real driver.

// TestLibraryNotFound: on a machine without the NVIDIA library, Init fails cleanly and the
// process lives on.
func TestLibraryNotFound(t *testing.T) {
	src := New(WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")))
	got, err := src.GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, got); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
}

// TestDefaultLibrary loads libnvidia-ml.so.1 as nodecheck does on a node. Without a driver
// (this test's usual machine) that fails cleanly.
func TestDefaultLibrary(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("an NVIDIA driver is present: TestRealGPU covers this machine")
	}
	got, err := New().GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	// A container may carry the library without the kernel module.
	if got.Init != "ERROR_LIBRARY_NOT_FOUND" && got.Init != "ERROR_DRIVER_NOT_LOADED" {
		t.Errorf("GPUs = %+v, want Init ERROR_LIBRARY_NOT_FOUND (or ERROR_DRIVER_NOT_LOADED)", got)
	}
}

// TestRealGPU reads the real driver; it needs an NVIDIA GPU.
func TestRealGPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err != nil {
		t.Skip("no NVIDIA driver here (/dev/nvidiactl is missing): this test needs a GPU node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := New().GPUs(ctx, node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	t.Logf("inventory:\n%s", b)
	if got.Init != node.InitSuccess || got.DriverVersion == "" || got.CUDADriverVersion == 0 {
		t.Fatalf("GPUs = %+v, want a successful Init with versions", got)
	}
	if got.DeviceCount == 0 || len(got.Devices) != got.DeviceCount {
		t.Fatalf("GPUs: device_count %d with %d devices", got.DeviceCount, len(got.Devices))
	}
	for _, g := range got.Devices {
		if g.Error != "" {
			t.Errorf("GPU %d: %s", g.Index, g.Error)
			continue
		}
		if !strings.HasPrefix(g.UUID, "GPU-") || g.Name == "" || len(g.PCIBusID) != len("00000000:19:00.0") ||
			g.MinorNumber < 0 || g.PCIe == nil || g.PCIe.MaxLinkWidth == 0 || g.PCIe.MaxLinkGen == 0 {
			t.Errorf("GPU %d = %+v, want every field read", g.Index, g)
		}
		active := 0
		for _, l := range g.NVLinks {
			if l.Active {
				active++
			}
		}
		t.Logf("GPU %d: ecc %s, remapped rows %+v, retired pages %+v, nvlinks %d (%d active), memory %+v, compute %+v",
			g.Index, eccString(g.ECC), g.RemappedRows, g.RetiredPages, len(g.NVLinks), active, g.Memory, g.Compute)
		// Data-centre Hopper parts have ECC, and every GPU has memory. Remapped rows and the
		// process list are only logged: with MIG on, NVML may refuse both.
		if strings.Contains(g.Name, "H100") || strings.Contains(g.Name, "H200") {
			if g.ECC == nil || g.Memory == nil || g.Memory.TotalMiB == 0 {
				t.Errorf("GPU %d (%s): ecc %s, memory %+v: want both read", g.Index, g.Name, eccString(g.ECC), g.Memory)
			}
			if g.ECC != nil && g.ECC.Enabled && (g.ECC.VolatileUncorrected == nil || g.ECC.AggregateUncorrected == nil) {
				t.Errorf("GPU %d (%s): ECC on but counters unread: %s", g.Index, g.Name, eccString(g.ECC))
			}
			if g.RetiredPages != nil {
				t.Errorf("GPU %d (%s): retired pages %+v, want none (Hopper remaps rows)", g.Index, g.Name, g.RetiredPages)
			}
			// The signals every data-centre GPU reports (checks/gpu_traits.go, sensors); the
			// recovery action needs driver 550 or later, and is only logged.
			th := g.Thermal
			if g.Serial == "" || g.ClockEvents == nil || g.Power == nil || g.Power.EnforcedLimitW == 0 || g.Persistence == nil ||
				th == nil || th.GPUC == 0 || (th.SlowdownC == 0 && th.SlowdownMarginC == nil) {
				t.Errorf("GPU %d (%s): serial %q, clocks %+v, power %+v, persistence %v, thermal %+v: want all read",
					g.Index, g.Name, g.Serial, g.ClockEvents, g.Power, g.Persistence, th)
			}
		}
		t.Logf("GPU %d signals: serial %q, replays %v, clocks %+v, thermal %+v, power %+v, persistence %v, recovery %q, nvlink errors %+v",
			g.Index, g.Serial, deref(g.PCIeReplays), g.ClockEvents, g.Thermal, g.Power, deref(g.Persistence), g.RecoveryAction, g.NVLinkErrors)
	}
}

// deref prints what p points to, "-" for nil.
func deref[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// eccString prints e with its counters' values rather than their addresses.
func eccString(e *node.ECC) string {
	if e == nil {
		return "<nil>"
	}
	n := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{enabled %t, pending %t, volatile uncorrected %s, volatile corrected %s, aggregate uncorrected %s}",
		e.Enabled, e.PendingEnabled, n(e.VolatileUncorrected), n(e.VolatileCorrected), n(e.AggregateUncorrected))
}

// buildStub compiles testdata/nvmlstub.c, with the given -D flags, into
// <temp>/libnvidia-ml.so.1.
func buildStub(t *testing.T, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("no C compiler to build the stub NVML library: %v", err)
	}
	src, err := filepath.Abs("testdata/nvmlstub.c")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"-shared", "-fPIC", "-Wall", "-o", lib}, defines...)
	if out, err := exec.CommandContext(ctx, cc, append(args, src)...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return lib
}

// stubResult is what TestStubHelper prints.
type stubResult struct {
	Inv node.GPUInventory `json:"inv"`
	Err string            `json:"err"`
}

const stubResultPrefix = "STUB RESULT: "

// TestStubHelper is not a test: TestStubLibrary runs the test binary again with
// NODECHECK_NVML_STUB set, so that the stub is loaded in a process of its own (a library
// dlopened with RTLD_GLOBAL stays for the life of the process) and so that a call the
// dynamic linker cannot resolve kills that process rather than the test run.
func TestStubHelper(t *testing.T) {
	lib := os.Getenv("NODECHECK_NVML_STUB")
	if lib == "" {
		t.Skip("helper process for TestStubLibrary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := New(WithLibraryPath(lib)).GPUs(ctx, node.AllGPUFields)
	res := stubResult{Inv: inv}
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	os.Stdout.Write([]byte(stubResultPrefix + string(b) + "\n"))
}

// TestStubLibrary loads a stub libnvidia-ml.so.1 built here: the library is present, so
// nvmlInit runs, and what the adapter does with its answers is the real cgo path.
func TestStubLibrary(t *testing.T) {
	libs := map[string]string{
		"":                     buildStub(t),
		"-DNVMLSTUB_FABRIC_V":  buildStub(t, "-DNVMLSTUB_FABRIC_V"),
		"-DNVMLSTUB_FABRIC_V3": buildStub(t, "-DNVMLSTUB_FABRIC_V3"),
		"-DNVMLSTUB_FABRIC_V1": buildStub(t, "-DNVMLSTUB_FABRIC_V1"),
		"-DNVMLSTUB_OLD":       buildStub(t, "-DNVMLSTUB_OLD"),
	}
	// gpu0 is the stub's GPU 0 as Source should read it from a current driver; old changes
	// it to what a driver without the newer functions gives.
	gpu0 := func(f *node.Fabric) node.GPU {
		return node.GPU{Index: 0, MinorNumber: 0, UUID: "GPU-5705e5b0-0000-4000-8000-000000000000", Name: "NVIDIA Stub GPU",
			PCIBusID: "00000000:19:00.0", PCIe: &node.PCIe{CurLinkWidth: 8, MaxLinkWidth: 16, CurLinkGen: 4, MaxLinkGen: 5},
			Fabric: f,
			ECC: &node.ECC{Enabled: true, PendingEnabled: true,
				VolatileUncorrected: new(uint64(0)), VolatileCorrected: new(uint64(0)), AggregateUncorrected: new(uint64(0))},
			RemappedRows:   &node.RemappedRows{},
			NVLinks:        []node.NVLink{{Link: 0, Active: true}, {Link: 1, Active: true}, {Link: 2}, {Link: 3, Active: true}},
			Memory:         &node.Memory{TotalMiB: 81920, UsedMiB: 1024, ReservedMiB: 512},
			Compute:        &node.Compute{Processes: []node.Process{{PID: 4242, UsedMiB: 500, UID: -1}}},
			Serial:         "1650124031592",
			NVLinkErrors:   &node.NVLinkErrors{CRCFlit: 0 + 1 + 3, Replay: 3 * 2, Links: 3, Unread: []string{"crc_data"}},
			PCIeReplays:    new(uint64(7)),
			ClockEvents:    node.NewClockEvents(node.ClockGPUIdle),
			Thermal:        &node.Thermal{GPUC: 30, SlowdownC: 89, ShutdownC: 92, GPUMaxC: 87, MemoryC: 36, MemoryMaxC: 95},
			Power:          &node.Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 100.89},
			Persistence:    new(true),
			RecoveryAction: "NONE",
		}
	}
	old := func(g node.GPU) node.GPU {
		g.RemappedRows = nil
		g.Memory = &node.Memory{TotalMiB: 81920, UsedMiB: 512 + 1024}
		g.RecoveryAction = ""
		g.ResetStatus = &node.ResetStatus{ResetRequired: true}
		return g
	}
	lost := node.GPU{Index: 1, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"}
	reads := []string{
		"nvmlInit_v2", "nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlDeviceGetCount_v2",
		"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetMinorNumber", "nvmlDeviceGetUUID", "nvmlDeviceGetName",
		"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetSerial", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth",
		"nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
	}
	ecc := []string{"nvmlDeviceGetEccMode", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetTotalEccErrors"}
	// Links 0-3 answer, link 4 is past the GPU's links and ends the walk. The error counters
	// of the 3 active links: flow-control CRC, data CRC (not supported: asked once), replay,
	// recovery.
	links := slices.Concat(slices.Repeat([]string{"nvmlDeviceGetNvLinkState"}, 5),
		slices.Repeat([]string{"nvmlDeviceGetNvLinkErrorCounter"}, 3+1+3+3))
	signals := func(clocks string) []string {
		return slices.Concat([]string{"nvmlDeviceGetPcieReplayCounter", clocks, "nvmlDeviceGetTemperature"},
			slices.Repeat([]string{"nvmlDeviceGetTemperatureThreshold"}, 4),
			[]string{"nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementDefaultLimit", "nvmlDeviceGetPowerUsage",
				"nvmlDeviceGetPersistenceMode", "nvmlDeviceGetFieldValues"})
	}
	health := slices.Concat(ecc, []string{"nvmlDeviceGetRemappedRows", "nvmlDeviceGetRetiredPages"}, links,
		[]string{"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetComputeRunningProcesses_v3"}, signals("nvmlDeviceGetCurrentClocksEventReasons"))
	// The old driver's library lacks nvmlDeviceGetCurrentClocksEventReasons: only its
	// throttle-reasons name is called.
	oldHealth := slices.Concat(ecc, []string{"nvmlDeviceGetRetiredPages"}, links,
		[]string{"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses"}, signals("nvmlDeviceGetCurrentClocksThrottleReasons"))
	calls := func(fabric, health []string) []string {
		return slices.Concat(reads, fabric, health, []string{"nvmlDeviceGetHandleByIndex_v2", "nvmlShutdown"})
	}
	tests := []struct {
		name      string
		build     string // -D flag of the stub
		init      string // NVMLSTUB_INIT; "" leaves it unset (driver not loaded)
		want      node.GPUInventory
		wantCalls []string
	}{
		{
			name:      "driver not loaded",
			want:      node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"},
			wantCalls: []string{"nvmlInit_v2"}, // and nothing else, not even nvmlShutdown
		},
		{
			name:      "no permission",
			init:      "4",
			want:      node.GPUInventory{Init: "ERROR_NO_PERMISSION"},
			wantCalls: []string{"nvmlInit_v2"},
		},
		{
			name: "initialised, one GPU lost, no fabric functions",
			init: "0",
			want: node.GPUInventory{Init: "SUCCESS", DriverVersion: "999.99.99", CUDADriverVersion: 12040, DeviceCount: 2, Fields: node.AllGPUFields,
				Devices: []node.GPU{gpu0(nil), lost}},
			wantCalls: calls(nil, health),
		},
		{
			name:  "versioned fabric call, v3 too new for the driver",
			build: "-DNVMLSTUB_FABRIC_V",
			init:  "0",
			want: node.GPUInventory{Init: "SUCCESS", DriverVersion: "999.99.99", CUDADriverVersion: 12040, DeviceCount: 2, Fields: node.AllGPUFields,
				Devices: []node.GPU{gpu0(&node.Fabric{State: "COMPLETED", Status: "SUCCESS", Health: node.FabricHealth{
					DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "FALSE", AccessTimeoutRecovery: "FALSE"}}), lost}},
			wantCalls: calls([]string{"nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfoV"}, health),
		},
		{
			name:  "versioned fabric call, v3 with a health summary",
			build: "-DNVMLSTUB_FABRIC_V3",
			init:  "0",
			want: node.GPUInventory{Init: "SUCCESS", DriverVersion: "999.99.99", CUDADriverVersion: 12040, DeviceCount: 2, Fields: node.AllGPUFields,
				Devices: []node.GPU{gpu0(&node.Fabric{State: "COMPLETED", Status: "SUCCESS", Health: node.FabricHealth{Summary: "UNHEALTHY",
					DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "TRUE", AccessTimeoutRecovery: "FALSE"}}), lost}},
			wantCalls: calls([]string{"nvmlDeviceGetGpuFabricInfoV"}, health),
		},
		{
			name:  "unversioned fabric call only",
			build: "-DNVMLSTUB_FABRIC_V1",
			init:  "0",
			want: node.GPUInventory{Init: "SUCCESS", DriverVersion: "999.99.99", CUDADriverVersion: 12040, DeviceCount: 2, Fields: node.AllGPUFields,
				Devices: []node.GPU{gpu0(&node.Fabric{State: "IN_PROGRESS", Status: "SUCCESS"}), lost}},
			wantCalls: calls([]string{"nvmlDeviceGetGpuFabricInfo"}, health),
		},
		{
			name:  "old driver: no remapped rows, memory v1, unversioned process call, reset status for want of a recovery action",
			build: "-DNVMLSTUB_OLD",
			init:  "0",
			want: node.GPUInventory{Init: "SUCCESS", DriverVersion: "999.99.99", CUDADriverVersion: 12040, DeviceCount: 2, Fields: node.AllGPUFields,
				Devices: []node.GPU{old(gpu0(nil)), lost}},
			wantCalls: calls(nil, oldHealth),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "calls")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStubHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "NODECHECK_NVML_STUB="+libs[tc.build], "NVMLSTUB_LOG="+logFile)
			if tc.init != "" {
				cmd.Env = append(cmd.Env, "NVMLSTUB_INIT="+tc.init)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				// A symbol lookup error ends the helper with exit 127 and the linker's message.
				t.Fatalf("helper process: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			var res stubResult
			found := false
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), stubResultPrefix); ok {
					if err := json.Unmarshal([]byte(line), &res); err != nil {
						t.Fatal(err)
					}
					found = true
				}
			}
			if !found {
				t.Fatalf("helper printed no result:\n%s", stdout.String())
			}
			if res.Err != "" {
				t.Errorf("GPUs error: %s", res.Err)
			}
			if diff := cmp.Diff(tc.want, res.Inv); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCalls, strings.Fields(string(b))); diff != "" {
				t.Errorf("NVML calls (-want +got):\n%s", diff)
			}
		})
	}
}
