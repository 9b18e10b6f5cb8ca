package validate

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// defaultFloors are [validate.floors] as the built-in config has them.
func defaultFloors() config.ValidateFloors { return config.ValidateFloors{GEMMSpread: 0.10} }

// fakeHost answers each tool (by base name) with a fixture; a tool without an answer is not
// installed. hang makes a tool run until its deadline, as runCommand's kill would end it.
type fakeHost struct {
	mu      sync.Mutex
	answers map[string]node.CmdResult
	hang    map[string]bool
	// hangServer makes ib_write_bw's server (run without "localhost") wait for a client
	// that never comes.
	hangServer bool
	inv        node.GPUInventory
	ports      []node.IBPort
	calls      [][]string
}

func (h *fakeHost) Exec(ctx context.Context, argv []string) (node.CmdResult, error) {
	h.mu.Lock()
	h.calls = append(h.calls, argv)
	h.mu.Unlock()
	name := filepath.Base(argv[0])
	if name == "env" {
		for _, a := range argv[1:] {
			if !strings.Contains(a, "=") {
				name = filepath.Base(a)
				break
			}
		}
	}
	if h.hang[name] || h.hangServer && name == "ib_write_bw" && argv[len(argv)-1] != "localhost" {
		<-ctx.Done()
		return node.CmdResult{Argv: argv, ExitCode: 137}, fmt.Errorf("run %s: killed: %w", argv[0], ctx.Err())
	}
	out, ok := h.answers[name]
	if !ok {
		return node.CmdResult{Argv: argv, ExitCode: -1}, fmt.Errorf("run %s: %w", argv[0], fs.ErrNotExist)
	}
	out.Argv = argv
	return out, nil
}

func (h *fakeHost) GPUs(context.Context) (node.GPUInventory, error) { return h.inv, nil }
func (h *fakeHost) IBPorts(context.Context) ([]node.IBPort, error)  { return h.ports, nil }

func h100Inventory() node.GPUInventory {
	inv := node.GPUInventory{Init: node.InitSuccess, DeviceCount: 8}
	for i := range 8 {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3"})
	}
	return inv
}

func answer(t testing.TB, files ...string) node.CmdResult {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(readFixture(t, f))
	}
	return node.CmdResult{Stdout: b.String()}
}

func testConfig() config.ValidateConfig {
	return config.Default(nil).Validation
}

// TestJudge: failed beats everything; an error, or nothing that ran, is undecided; a warn
// counts as ran.
func TestJudge(t *testing.T) {
	st := func(ss ...checks.Status) []Test {
		var out []Test
		for _, s := range ss {
			out = append(out, Test{Status: s})
		}
		return out
	}
	tests := []struct {
		name  string
		tests []Test
		want  Verdict
	}{
		{"all ok", st(checks.StatusOK, checks.StatusOK), VerdictPassed},
		{"ok and skip", st(checks.StatusOK, checks.StatusSkip), VerdictPassed},
		{"warn only", st(checks.StatusWarn), VerdictPassed},
		{"all skipped", st(checks.StatusSkip, checks.StatusSkip), VerdictUndecided},
		{"none", nil, VerdictUndecided},
		{"error and ok", st(checks.StatusOK, checks.StatusError), VerdictUndecided},
		{"fail and error", st(checks.StatusError, checks.StatusFail), VerdictFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.tests); got != tc.want {
				t.Errorf("judge = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFigureFloor: the floor itself passes, a hundredth below fails; no floor reports only.
func TestFigureFloor(t *testing.T) {
	fl := Floor{Expected: 460, Floor: 390, Source: "s"}
	for _, tc := range []struct {
		v    float64
		fl   Floor
		want bool
	}{{390, fl, true}, {389.99, fl, false}, {10, Floor{}, true}} {
		if got := figure("nccl_busbw", "GB/s", "", tc.v, tc.fl).OK; got != tc.want {
			t.Errorf("figure(%v, floor %v).OK = %v, want %v", tc.v, tc.fl.Floor, got, tc.want)
		}
	}
	tt := judgeFigures("x", []Figure{figure("a", "GB/s", "", 10, Floor{})}, "what", checks.RemedyAdmin)
	if tt.Status != checks.StatusWarn {
		t.Errorf("a figure without a floor: %+v, want warn", tt)
	}
}

// TestFloorsFor: the built-in rows, the site's overrides, and models the table does not know.
func TestFloorsFor(t *testing.T) {
	f := floorsFor("NVIDIA H100 80GB HBM3", 8, defaultFloors())
	if f.Model != "H100 SXM" || f.NCCL.Floor != 390 || f.D2D.Floor != 335 || f.H2D.Floor != 30 || f.D2H.Floor != 45 || f.MemBW.Floor != 1905000 {
		t.Errorf("H100: %+v", f)
	}
	if f := floorsFor("NVIDIA H100 80GB HBM3", 4, defaultFloors()); f.NCCL.Floor != 0 || !strings.Contains(f.NCCL.Source, "4 GPUs") {
		t.Errorf("H100 x4 has no built-in NCCL floor: %+v", f.NCCL)
	}
	if f := floorsFor("NVIDIA A100-SXM4-80GB", 8, defaultFloors()); f.Model != "A100 SXM" || f.NCCL.Floor != 195 || f.H2D.Floor != 22 || f.D2D.Floor != 0 {
		t.Errorf("A100: %+v", f)
	}
	if f := floorsFor("NVIDIA H200", 8, defaultFloors()); f.Model != "H200" || f.NCCL.Floor != 405 {
		t.Errorf("H200: %+v", f)
	}
	if f := floorsFor("NVIDIA A100-PCIE-40GB", 8, defaultFloors()); f.Model != "" || f.NCCL.Floor != 0 {
		t.Errorf("A100 PCIe is not A100 SXM: %+v", f)
	}
	o := defaultFloors()
	o.NCCLBusBW, o.H2D = 300, 50
	if f := floorsFor("NVIDIA H100 80GB HBM3", 8, o); f.NCCL.Floor != 300 || f.NCCL.Source != "[validate.floors] nccl_busbw_gbps" || f.NCCL.Expected != 460 || f.H2D.Floor != 50 {
		t.Errorf("overrides: %+v", f)
	}
	for _, m := range Models() {
		for _, fl := range []Floor{m.NCCL, m.D2D, m.MemBW} {
			if fl.Source == "" {
				t.Errorf("%s: a figure without its source", m.Label)
			}
		}
	}
}

// TestRunLevels drives Run with a fake host: healthy and slow outputs, missing tools, a hung
// tool, a refusal.
func TestRunLevels(t *testing.T) {
	healthy := map[string]node.CmdResult{
		"dcgmi":           {Stdout: readFixture(t, "../../node/dcgm/testdata/diag4-r1-pass-8gpu.json")},
		"nvbandwidth":     answer(t, "nvbandwidth/azurehpc-fork-h100x8-nvbw-v04-d2d-read-ce-healthy.txt", "nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt"),
		"all_reduce_perf": answer(t, "nccl/nccltests-290-h100-1node-8gpu-g8.log"),
		"ib_write_bw":     answer(t, "perftest/dgxspark-cx7-roce-ib_write_bw-run-infinitely-2rails-92-97gbps.txt"),
		"gpu_burn":        answer(t, "gpuburn/gpuburn-48-gtx1080x2-docker-healthy-temps-to-83C-excerpt.txt"),
	}
	with := func(k string, v node.CmdResult) map[string]node.CmdResult {
		m := map[string]node.CmdResult{}
		for a, b := range healthy {
			m[a] = b
		}
		m[k] = v
		return m
	}
	ports := []node.IBPort{{Device: "mlx5_0", Port: 1, RateGbps: 100}, {Device: "mlx5_1", Port: 1, RateGbps: 100}}
	tests := []struct {
		name    string
		level   Level
		mode    config.Mode
		answers map[string]node.CmdResult
		hang    string
		ports   []node.IBPort
		want    Verdict
		check   string // a test and the words its summary holds: "name: words"
	}{
		{"quick healthy", LevelQuick, config.ModeManual, healthy, "", nil, VerdictPassed, "nccl_allreduce: busbw 476.53 GB/s at 4 GiB on 8 GPUs"},
		{"quick NCCL slow", LevelQuick, config.ModeManual, with("all_reduce_perf", answer(t, "nccl/DERIVED-h100x8-busbw-halved.log")), "", nil, VerdictFailed, "nccl_allreduce: nccl_busbw 238.26 GB/s below floor 390 GB/s"},
		{"quick NCCL wrong results", LevelQuick, config.ModeManual, with("all_reduce_perf", answer(t, "nccl/nccltests-369-gh200-2node-wrong-nonzero-failed.log")), "", nil, VerdictFailed, "nccl_allreduce: all_reduce_perf computed wrong results"},
		{"quick NCCL failed", LevelQuick, config.ModeManual, with("all_reduce_perf", answer(t, "nccl/nccltests-287-rtx5090-2gpu-failed.log")), "", nil, VerdictFailed, "nccl_allreduce: all_reduce_perf failed: GENOA-06: Test NCCL failure common.cu:392"},
		{"quick nothing installed", LevelQuick, config.ModeManual, nil, "", nil, VerdictUndecided, "nvbandwidth: not installed"},
		{"quick NCCL hangs", LevelQuick, config.ModeManual, healthy, "all_reduce_perf", nil, VerdictFailed, "nccl_allreduce: all_reduce_perf did not finish within its deadline"},
		{"epilog refused", LevelQuick, config.ModeEpilog, healthy, "", nil, VerdictUndecided, ""},
		{"full with two HCAs at 100 Gb/s", LevelFull, config.ModeManual, healthy, "", ports, VerdictPassed, "ib_write_bw: 95.14-95.14 Gb/s on 2 HCAs"},
		{"full IB slow", LevelFull, config.ModeManual, with("ib_write_bw", answer(t, "perftest/DERIVED-cx7-ib_write_bw-18gbps.txt")), "", ports, VerdictFailed, "ib_write_bw: ib_write_bw mlx5_0 18.51 Gb/s below floor 90 Gb/s (expected 95)"},
		{"full IB cannot connect", LevelFull, config.ModeManual, with("ib_write_bw", node.CmdResult{Stdout: readFixture(t, "perftest/COMPOSED-ib_write_bw-client-couldnt-connect.txt"), ExitCode: 1}), "", ports, VerdictFailed, "ib_write_bw: mlx5_0: ib_write_bw loopback measured nothing: Couldn't connect to localhost:18515"},
		{"full no HCA", LevelFull, config.ModeManual, healthy, "", nil, VerdictPassed, "ib_write_bw: no InfiniBand HCA"},
		{"burn-in healthy", LevelBurnIn, config.ModeManual, healthy, "", nil, VerdictPassed, "gpu_burn: 2 GPUs, no GEMM errors, 6485-6981 Gflop/s"},
		{"burn-in GEMM errors", LevelBurnIn, config.ModeManual, with("gpu_burn", answer(t, "gpuburn/DERIVED-gtx1080x2-gpu1-gemm-errors.txt")), "", nil, VerdictFailed, "gpu_burn: GEMM results differ from the reference (silent data corruption): GPU 1: 148 errors"},
		{"burn-in GPU 1 slow", LevelBurnIn, config.ModeManual, with("gpu_burn", answer(t, "gpuburn/DERIVED-gtx1080x2-gpu1-20pct-slow.txt")), "", nil, VerdictFailed, "gpu_burn: gemm_gflops GPU 1 5188.00 Gflop/s below floor 5476.05 Gflop/s (expected 6084.5)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHost{answers: tc.answers, hang: map[string]bool{tc.hang: true}, inv: h100Inventory(), ports: tc.ports}
			cfg := testConfig()
			cfg.BurnIn, cfg.NCCLRepeats = time.Second, 2
			rep := Run(context.Background(), h, Options{Node: "n1", Level: tc.level, Mode: tc.mode, Config: cfg, IBHeadStart: time.Millisecond, testTimeout: 200 * time.Millisecond})
			if rep.Verdict != tc.want {
				t.Errorf("verdict %s, want %s; tests %+v; refused %q", rep.Verdict, tc.want, rep.Tests, rep.Refused)
			}
			if tc.mode.JobHook() {
				if !strings.Contains(rep.Refused, "never runs in a epilog") || len(h.calls) != 0 {
					t.Errorf("epilog: refused %q, calls %v", rep.Refused, h.calls)
				}
				return
			}
			name, words, _ := strings.Cut(tc.check, ": ")
			var found bool
			for _, tt := range rep.Tests {
				if tt.Name == name && strings.Contains(tt.Summary, words) {
					found = true
				}
			}
			if !found {
				t.Errorf("no test %s saying %q in %+v", name, words, rep.Tests)
			}
		})
	}
}

// TestIBServerStopped: a server whose client could not connect is stopped a grace period after
// its client, not left to the test's deadline.
func TestIBServerStopped(t *testing.T) {
	defer func(g time.Duration) { ibServerGrace = g }(ibServerGrace)
	ibServerGrace = 50 * time.Millisecond
	h := &fakeHost{answers: map[string]node.CmdResult{"ib_write_bw": {Stdout: readFixture(t, "perftest/COMPOSED-ib_write_bw-client-couldnt-connect.txt"), ExitCode: 1}},
		hangServer: true, inv: h100Inventory(), ports: []node.IBPort{{Device: "mlx5_0", Port: 1, RateGbps: 400}}}
	s := &state{h: h, o: Options{Config: testConfig(), IBHeadStart: time.Millisecond}, report: &Report{}, nGPUs: 8}
	start := time.Now()
	tt := s.ibWriteBW(context.Background(), time.Minute)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s: the server was left to the deadline", took)
	}
	if tt.Status != checks.StatusFail || !strings.Contains(tt.Summary, "mlx5_0: ib_write_bw loopback measured nothing: Couldn't connect to localhost:18515") {
		t.Errorf("got %+v", tt)
	}
}

// TestKeyFigures: the slowest device of each figure name, in the report's order; the history
// record adds the other figures below their floor.
func TestKeyFigures(t *testing.T) {
	fl := Floor{Floor: 335}
	rep := Report{Level: LevelQuick, Verdict: VerdictFailed, Started: time.Unix(1764590400, 0), Figures: []Figure{
		figure("d2d_bw", "GB/s", "GPU 0", 370, fl), figure("d2d_bw", "GB/s", "GPU 1", 162.45, fl), figure("d2d_bw", "GB/s", "GPU 2", 300, fl),
		figure("nccl_busbw", "GB/s", "", 476.53, Floor{Floor: 390}),
	}}
	var got []string
	for _, f := range rep.KeyFigures() {
		got = append(got, f.Name+" "+f.Device)
	}
	if strings.Join(got, ", ") != "d2d_bw GPU 1, nccl_busbw " {
		t.Errorf("KeyFigures: %v", got)
	}
	h := ToHistory(rep)
	var kept []string
	for _, f := range h.Figures {
		kept = append(kept, f.Device)
	}
	if strings.Join(kept, ",") != "GPU 1,GPU 2," || h.Verdict != "failed" || h.Started != 1764590400 {
		t.Errorf("ToHistory: %+v", h)
	}
}
