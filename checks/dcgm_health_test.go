package checks

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config"
)

// dcgmFixture reads one of the dcgmi outputs of checks/node/dcgm/testdata (SOURCE there).
func dcgmFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("node", "dcgm", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dcgmTestGPUs is an 8-GPU node as NVML names it; GPU 1's serial is the one the DCGM 4
// diagnostic fixtures give for DCGM GPU 1.
func dcgmTestGPUs() node.GPUInventory {
	inv := node.GPUInventory{Init: node.InitSuccess, DeviceCount: 8}
	for i := range 8 {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10),
			UUID: fmt.Sprintf("GPU-%d", i), Serial: fmt.Sprintf("16549220%05d", 3331+i)})
	}
	inv.Devices[1].Serial = "1654922004426"
	return inv
}

// dcgmExecFacts answers dcgmi command lines from answers (by the words after the program),
// records the calls, and hangs on hang until ctx is done.
type dcgmExecFacts struct {
	*fakeFacts
	answers map[string]node.CmdResult
	hang    string
	calls   []string
}

func (f *dcgmExecFacts) Exec(ctx context.Context, argv []string) (node.CmdResult, error) {
	key := strings.Join(argv[1:], " ")
	f.calls = append(f.calls, key)
	if f.hang != "" && strings.Contains(key, f.hang) {
		<-ctx.Done()
		return node.CmdResult{ExitCode: -1}, fmt.Errorf("run %s: killed: %w", argv[0], ctx.Err())
	}
	r, ok := f.answers[key]
	if !ok {
		return node.CmdResult{ExitCode: -1}, fmt.Errorf("run %s: %w", argv[0], fs.ErrNotExist)
	}
	return r, nil
}

const (
	dcgmTestWatches = "health --host localhost -g a -f -j"
	dcgmTestSet     = "health --host localhost -g a -s a"
	dcgmTestCheck   = "health --host localhost -g a -c -j"
)

func TestJudgeDCGMHealth(t *testing.T) {
	gpus := dcgmGPUs{inv: dcgmTestGPUs(), ok: true}
	conn := dcgmConn{dcgmi: "/usr/bin/dcgmi", host: "localhost"}
	for _, tc := range []struct {
		name        string
		file        string
		w           dcgmWatchState
		warnCodes   []int
		status      Status
		remedy      Remedy
		summary     string
		failingBus  []string // the subjects' bus ids of the failing details, in order
		warnDevices []string
	}{
		{name: "healthy, watches set before", file: "health-c-j-healthy.json", status: StatusOK, summary: "DCGM health Healthy: no incident"},
		{name: "healthy, watches just set: no data yet", file: "health-c-j-healthy.json", w: dcgmWatchState{missing: []string{"PCIe"}, setNow: true},
			status: StatusSkip, summary: "nodecheck set them now"},
		{name: "healthy, watches off and not set", file: "health-c-j-healthy.json", w: dcgmWatchState{missing: []string{"PCIe", "Memory"}},
			status: StatusWarn, summary: "watches off: PCIe, Memory", warnDevices: []string{"watches"}},
		// The ClusterMAX injection: DCGM says Warning, the code's severity is ISOLATE.
		{name: "injected PCIe replay fails GPU 0, service", file: "health-c-j-pcie-replay-gpu0.json", status: StatusFail, remedy: RemedyService,
			summary:    "gpu 0 (0000:18:00.0): PCIe system: Detected more than 31 PCIe replays per minute for GPU 0 : 99999 (DCGM_FR_PCI_REPLAY_RATE (3), ISOLATE; DCGM: Warning)",
			failingBus: []string{"0000:18:00.0"}},
		{name: "a PCIe replay incident fails even right after the watches were set", file: "health-c-j-pcie-replay-gpu0.json", w: dcgmWatchState{missing: []string{"PCIe"}, setNow: true},
			status: StatusFail, remedy: RemedyService, failingBus: []string{"0000:18:00.0"}},
		{name: "warn_codes makes it a warning", file: "health-c-j-pcie-replay-gpu0.json", warnCodes: []int{3}, status: StatusWarn, summary: "PCIe system: Detected more than 31",
			warnDevices: []string{"gpu 0 (0000:18:00.0)"}},
		{name: "DBE (ISOLATE) and a pending retirement (RESET) on GPU 3; thermal (MONITOR) on GPU 5 warns", file: "health-c-j-memory-gpu3-thermal-gpu5.json",
			status: StatusFail, remedy: RemedyService, summary: "gpu 3 (0000:48:00.0): Memory system: Detected 2 volatile double-bit ECC error(s)",
			failingBus: []string{"0000:48:00.0", "0000:48:00.0"}, warnDevices: []string{"gpu 5 (0000:68:00.0)"}},
		{name: "GPU_RECOVERY_RESET resets GPU 2; NVSwitch fatal is service; power (MONITOR) warns", file: "health-c-j-reset-gpu2-nvswitch1-power-gpu6.json",
			status: StatusFail, remedy: RemedyService, summary: "gpu 2 (0000:38:00.0): Driver: GPU 2 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET). (DCGM_FR_GPU_RECOVERY_RESET (125), RESET; DCGM: Failure) (+2 more)",
			failingBus: []string{"0000:38:00.0", ""}, warnDevices: []string{"gpu 6 (0000:78:00.0)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := dcgm.ParseHealthCheck([]byte(dcgmFixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			res := judgeDCGMHealth(rep, tc.w, gpus, tc.warnCodes, conn)
			settleRemedy(&res)
			assertRemedies(t, res)
			if res.Status != tc.status || res.Remedy != tc.remedy || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("got %s %q remedy %q; want %s containing %q, remedy %q", res.Status, res.Summary, res.Remedy, tc.status, tc.summary, tc.remedy)
			}
			var failing, warns []string
			for _, d := range res.Details {
				switch d.Status {
				case StatusFail:
					failing = append(failing, d.Subject.GPU.Bus)
				case StatusWarn:
					warns = append(warns, d.Device)
				}
			}
			if !slices.Equal(failing, tc.failingBus) || !slices.Equal(warns, tc.warnDevices) {
				t.Errorf("failing buses %q, warning devices %q; want %q, %q", failing, warns, tc.failingBus, tc.warnDevices)
			}
		})
	}
}

// TestDCGMHealthRemedyPerGPU: the RESET incident's detail names GPU 2 by every field the repair
// step reads, and its remedy is reset_gpu; the result's is the NVSwitch's service.
func TestDCGMHealthRemedyPerGPU(t *testing.T) {
	rep, err := dcgm.ParseHealthCheck([]byte(dcgmFixture(t, "health-c-j-reset-gpu2-nvswitch1-power-gpu6.json")))
	if err != nil {
		t.Fatal(err)
	}
	res := judgeDCGMHealth(rep, dcgmWatchState{}, dcgmGPUs{inv: dcgmTestGPUs(), ok: true}, nil, dcgmConn{host: "localhost"})
	d := res.Details[0]
	want := GPURef{Index: 2, HasIndex: true, Bus: "0000:38:00.0", UUID: "GPU-2", Serial: "1654922003333"}
	if d.Status != StatusFail || d.Remedy != RemedyResetGPU || d.Subject.GPU != want {
		t.Errorf("GPU 2's detail: %s %s %+v; want fail reset_gpu %+v", d.Status, d.Remedy, d.Subject.GPU, want)
	}
	// Without NVML, the DCGM id is the GPU's index, and nothing else is claimed.
	res = judgeDCGMHealth(rep, dcgmWatchState{}, dcgmGPUs{}, nil, dcgmConn{host: "localhost"})
	if g := res.Details[0].Subject.GPU; g != (GPURef{Index: 2, HasIndex: true}) {
		t.Errorf("without NVML: subject %+v", g)
	}
}

func TestDCGMClassify(t *testing.T) {
	info := func(code int) (dcgm.ErrorInfo, bool) { return dcgm.Lookup(code) }
	for _, tc := range []struct {
		code   int
		sev    dcgm.Severity
		failed bool
		warn   []int
		want   dcgmClass
	}{
		{3, dcgm.SeverityIsolate, false, nil, dcgmClassIsolate}, // DCGM's Warning does not soften ISOLATE
		{3, dcgm.SeverityIsolate, false, []int{3}, dcgmClassMonitor},
		{3, dcgm.SeverityIsolate, false, []int{4}, dcgmClassIsolate},
		{5, dcgm.SeverityMonitor, true, nil, dcgmClassMonitor}, // MONITOR never fails, whatever DCGM's word
		{6, dcgm.SeverityReset, false, nil, dcgmClassReset},
		{9, dcgm.SeverityTriage, false, nil, dcgmClassTriage},
		{29, dcgm.SeverityConfig, true, nil, dcgmClassConfig},
		{126, dcgm.SeverityIsolate, true, nil, dcgmClassReboot},
		{120, dcgm.SeverityIsolate, true, nil, dcgmClassReboot},
		{0, dcgm.SeverityNone, false, nil, dcgmClassOK},
		{200, dcgm.SeverityUnknown, true, nil, dcgmClassUnrecognised},
		{200, dcgm.SeverityUnknown, false, nil, dcgmClassMonitor},
	} {
		e, known := info(tc.code)
		if got := dcgmClassify(e, known, tc.sev, tc.failed, tc.warn); got != tc.want {
			t.Errorf("dcgmClassify(%d, %s, failed %v, warn %v) = %d, want %d", tc.code, tc.sev, tc.failed, tc.warn, got, tc.want)
		}
	}
}

func TestDCGMHealthRun(t *testing.T) {
	healthy := dcgmFixture(t, "health-c-j-healthy.json")
	watchesOn := dcgmFixture(t, "health-f-j-after-s-a.txt")
	watchesOff := dcgmFixture(t, "health-f-j-none.txt")
	noEngine := node.CmdResult{Stdout: dcgmFixture(t, "no-host-engine.txt"), ExitCode: dcgm.ExitConnectionInvalid}
	ok := func(s string) node.CmdResult { return node.CmdResult{Stdout: s} }
	for _, tc := range []struct {
		name      string
		mode      config.Mode
		readOnly  bool
		required  bool
		answers   map[string]node.CmdResult
		hang      string
		status    Status
		summary   string
		wantCalls []string
	}{
		{name: "no dcgmi", mode: config.ModeHealth, status: StatusSkip, summary: "/usr/bin/dcgmi not installed", wantCalls: []string{dcgmTestWatches}},
		{name: "no dcgmi, required", mode: config.ModeHealth, required: true, status: StatusError, summary: "not installed (DCGM's datacenter-gpu-manager package) (required = true)"},
		{name: "no host engine", mode: config.ModeHealth, answers: map[string]node.CmdResult{dcgmTestWatches: noEngine},
			status: StatusSkip, summary: "no DCGM host engine answers at localhost"},
		{name: "no host engine, required", mode: config.ModeHealth, required: true, answers: map[string]node.CmdResult{dcgmTestWatches: noEngine},
			status: StatusError, summary: "no DCGM host engine answers at localhost"},
		{name: "host engine hangs", mode: config.ModeHealth, answers: map[string]node.CmdResult{dcgmTestWatches: ok(watchesOn)}, hang: "-c -j",
			status: StatusError, summary: "the DCGM host engine at localhost did not answer health within"},
		{name: "old dcgmi", mode: config.ModeHealth, answers: map[string]node.CmdResult{dcgmTestWatches: {Stderr: "PARSE ERROR: Argument: -j (--json)\n", ExitCode: dcgm.ExitParseError}},
			status: StatusSkip, summary: "a DCGM older than 3.0"},
		{name: "watches set, healthy", mode: config.ModeHealth, answers: map[string]node.CmdResult{dcgmTestWatches: ok(watchesOn), dcgmTestCheck: ok(healthy)},
			status: StatusOK, wantCalls: []string{dcgmTestWatches, dcgmTestCheck}},
		{name: "watches off: set, then no data yet", mode: config.ModeHealth,
			answers: map[string]node.CmdResult{dcgmTestWatches: ok(watchesOff), dcgmTestSet: ok("Health monitor systems set successfully.\n"), dcgmTestCheck: ok(healthy)},
			status:  StatusSkip, summary: "nodecheck set them now", wantCalls: []string{dcgmTestWatches, dcgmTestSet, dcgmTestCheck}},
		{name: "a replay never sets watches", mode: config.ModeHealth, readOnly: true,
			answers: map[string]node.CmdResult{dcgmTestWatches: ok(watchesOff), dcgmTestCheck: ok(healthy)},
			status:  StatusWarn, summary: "watches off", wantCalls: []string{dcgmTestWatches, dcgmTestCheck}},
		{name: "prolog never asks DCGM", mode: config.ModeProlog, status: StatusSkip, summary: "not run in prolog mode", wantCalls: []string{}},
		{name: "unreadable answer", mode: config.ModeManual, answers: map[string]node.CmdResult{dcgmTestWatches: ok(watchesOn), dcgmTestCheck: ok("{\"body\": ")},
			status: StatusError, summary: "cannot read dcgmi health -c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &dcgmExecFacts{fakeFacts: &fakeFacts{gpus: dcgmTestGPUs()}, answers: tc.answers, hang: tc.hang}
			cfg := config.Default(Schema())
			cfg.Checks.Get(idDCGMHealth).(*dcgmHealthConfig).Required = tc.required
			env := &Env{Facts: f, Config: cfg, Mode: tc.mode, ReadOnly: tc.readOnly}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			res := dcgmHealth{}.Run(ctx, env)
			if res.Status != tc.status || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s containing %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			if tc.wantCalls != nil && !slices.Equal(f.calls, tc.wantCalls) && !(len(tc.wantCalls) == 0 && len(f.calls) == 0) {
				t.Errorf("dcgmi calls %q, want %q", f.calls, tc.wantCalls)
			}
			if ctx.Err() != nil {
				t.Errorf("the check used up its deadline: the runner would call it timed out instead of naming the host engine")
			}
		})
	}
}

func TestDCGMHealthConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *dcgmHealthConfig)
		want string
	}{
		{"defaults", func(*dcgmHealthConfig) {}, ""},
		{"relative dcgmi", func(c *dcgmHealthConfig) { c.DCGMI = "dcgmi" }, "dcgmi"},
		{"empty host", func(c *dcgmHealthConfig) { c.Host = "" }, "host"},
		{"unix socket", func(c *dcgmHealthConfig) { c.Host = "unix:///run/nvidia-dcgm/nv-hostengine.sock" }, ""},
		{"prolog", func(c *dcgmHealthConfig) { c.Modes = []string{"health", "prolog"} }, "modes"},
		{"bad group", func(c *dcgmHealthConfig) { c.Group = "x" }, "group"},
		{"numbered group", func(c *dcgmHealthConfig) { c.Group = "12" }, ""},
		{"bad warn code", func(c *dcgmHealthConfig) { c.WarnCodes = []int{500} }, "warn_codes"},
	} {
		c := dcgmHealth{}.Section().(*dcgmHealthConfig)
		tc.mod(c)
		errs := c.ValidateSection()
		if (tc.want == "") != (len(errs) == 0) || (tc.want != "" && errs[0].Key != tc.want) {
			t.Errorf("%s: problems %v, want one on %q", tc.name, errs, tc.want)
		}
	}
}
