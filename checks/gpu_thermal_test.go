package checks

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeGPUThermal(t *testing.T) {
	cfg := settings[*gpuThermalConfig](config.Default(Schema()), idGPUThermal)
	warnAtSlowdown := *cfg
	warnAtSlowdown.Slowdown = verdictWarn
	// abs is an H100 with absolute limits as an older driver printed them for one ("GPU
	// Shutdown Temp : 92 C", "GPU Slowdown Temp : 89 C", "GPU Max Operating Temp : 87 C",
	// "Memory Max Operating Temp : 95 C"), at temperature c and HBM m.
	abs := func(c, m int) node.GPU {
		return sigGPU(func(g *node.GPU) {
			g.Thermal = &node.Thermal{GPUC: c, SlowdownC: 89, ShutdownC: 92, GPUMaxC: 87, MemoryC: m, MemoryMaxC: 95}
		})
	}
	// margin is an H100 as drivers 535 and later print it: margin below T.Limit, slowdown at
	// -2, shutdown at -8, max operating at 0.
	margin := func(m int) node.GPU {
		return sigGPU(func(g *node.GPU) {
			g.Thermal = &node.Thermal{GPUC: 30, MarginC: new(m), SlowdownMarginC: new(-2), ShutdownMarginC: new(-8), GPUMaxMarginC: new(0)}
		})
	}
	for _, tc := range []struct {
		name string
		g    node.GPU
		cfg  *gpuThermalConfig
		want brief
	}{
		{"cool", abs(35, 44), cfg, brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}},
		{"at max operating", abs(87, 60), cfg, brief{"", "warn", "gpu 0 (0000:19:00.0): 87 C, at its max operating temperature (87 C): its clocks may drop below base"}},
		{"at slowdown", abs(89, 60), cfg, brief{"", "fail", "gpu 0 (0000:19:00.0): 89 C, at its slowdown temperature (89 C): HW slowdown cuts its clocks by half or more"}},
		{"at slowdown, slowdown = warn", abs(90, 60), &warnAtSlowdown, brief{"", "warn", "gpu 0 (0000:19:00.0): 90 C, at its slowdown temperature (89 C): HW slowdown cuts its clocks by half or more"}},
		{"at shutdown fails even with slowdown = warn", abs(92, 60), &warnAtSlowdown, brief{"", "fail", "gpu 0 (0000:19:00.0): 92 C, at its shutdown temperature (92 C): the GPU shuts down to protect itself"}},
		{"HBM at its max", abs(50, 95), cfg, brief{"", "warn", "gpu 0 (0000:19:00.0): HBM 95 C, at its max operating temperature (95 C): SW slowdown"}},
		{"margin: cool", margin(57), cfg, brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}},
		{"margin: at T.Limit (max operating)", margin(0), cfg, brief{"", "warn", "gpu 0 (0000:19:00.0): 0 C below T.Limit, at its max operating temperature (0 C below T.Limit): its clocks may drop below base"}},
		{"margin: past slowdown", margin(-3), cfg, brief{"", "fail", "gpu 0 (0000:19:00.0): -3 C below T.Limit, at its slowdown temperature (-2 C below T.Limit): HW slowdown cuts its clocks by half or more"}},
		{"margin: at shutdown", margin(-8), cfg, brief{"", "fail", "gpu 0 (0000:19:00.0): -8 C below T.Limit, at its shutdown temperature (-8 C below T.Limit): the GPU shuts down to protect itself"}},
		{"H100 with a temperature but no threshold: not looked at", sigGPU(func(g *node.GPU) { g.Thermal = &node.Thermal{GPUC: 40} }), cfg,
			brief{"", "error", "gpu 0 (0000:19:00.0): slowdown temperature not reported by NVML (h100 GPUs report them): not judged"}},
		{"H100 without temperatures", sigGPU(func(*node.GPU) {}), cfg,
			brief{"", "error", "gpu 0 (0000:19:00.0): temperatures not reported by NVML (h100 GPUs report them): not judged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUThermal([]node.GPU{tc.g}, tc.cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
}

func TestGPUThermalCaptures(t *testing.T) {
	cfg := settings[*gpuThermalConfig](config.Default(Schema()), idGPUThermal)
	for _, tc := range []struct {
		file       string
		want       brief
		wantDetail string // the first GPU's detail
	}{
		{capH100_565, brief{"", "ok", "8 GPUs under their slowdown and max operating temperatures"}, "30 C; 57 C below T.Limit (slowdown at -2, shutdown at -8, max at 0); HBM 36 C"},
		{capA40, brief{"", "ok", "10 GPUs under their slowdown and max operating temperatures"}, "29 C (slowdown 95, shutdown 98, max 88)"},
		{capH200, brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}, "28 C; 59 C below T.Limit (slowdown at -2, shutdown at -8, max at 0); HBM 25 C"},
		// A GeForce with a temperature and no threshold ("GPU Slowdown Temp : N/A") is not judged.
		{capGTX680, brief{"", "skip", "gpu 0 (0000:08:00.0): 35 C; no slowdown temperature reported to judge it by (NVIDIA GeForce GTX 680)"}, "35 C; no slowdown temperature reported to judge it by (NVIDIA GeForce GTX 680)"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := judgeGPUThermal(captureInv(t, tc.file).Devices, cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Details[0].Message != tc.wantDetail {
				t.Errorf("detail %q, want %q", got.Details[0].Message, tc.wantDetail)
			}
		})
	}
}

func TestGPUThermalSection(t *testing.T) {
	runSectionCases(t, []sectionCase{
		{name: "defaults", want: func(c *config.Config) any {
			s := settings[*gpuThermalConfig](c, idGPUThermal)
			return []any{s.Modes, s.Slowdown}
		}, wantVal: []any{[]string{"epilog", "health", "manual"}, "fail"}},
		{name: "slowdown warns", toml: "[checks.gpu_thermal]\nslowdown = \"warn\"\n",
			want: func(c *config.Config) any { return settings[*gpuThermalConfig](c, idGPUThermal).Slowdown }, wantVal: "warn"},
		{name: "slowdown cannot be ok", toml: "[checks.gpu_thermal]\nslowdown = \"ok\"\n",
			wantErr: `nodecheck.toml:2: checks.gpu_thermal.slowdown = "ok": give "fail" or "warn": what a GPU at or over its slowdown temperature gives`},
	})
}
