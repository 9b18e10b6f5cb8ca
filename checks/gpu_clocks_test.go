package checks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// captureInv is the inventory import-nvidia-smi makes of a real capture under
// checks/node/testdata/nvsmi (each named, with its source, in that directory's SOURCE).
func captureInv(t *testing.T, name string) node.GPUInventory {
	t.Helper()
	f, err := os.Open(filepath.Join("node", "testdata", "nvsmi", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inv, err := node.ParseNvidiaSMIQuery(f)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// Real captures the signal checks are held to.
const (
	capH100Brake = "gpud-q-h100x8-535.161.08.txt"                                 // HW Slowdown + HW Power Brake Active on all 8
	capH100_565  = "thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt" // idle, Recovery Action None, T.Limit temps
	capH100_183  = "gpud-q-h100x8-535.183.01.txt"                                 // GPU 2: SW power cap, SW thermal, HW power brake
	capA40       = "thamada-gls-a40-x10-550.127.05-swpowercap-aggregate-ecc.txt"  // SW Power Cap on 2 of 10; absolute thresholds
	capH200      = "thamada-gls-h200-550.90.12.txt"                               // no Recovery Action line (550.90)
	capRTX4060   = "thamada-gls-rtx4060ti-x2-550.54.14-persistence-disabled.txt"  // persistence Disabled
	capRTX5090   = "thamada-gls-rtx5090-570.124.06-swpowercap.txt"                // SW Power Cap, Recovery Action None
	capGTX680    = "thamada-gls-gtx680-470.256.02-old-layout.txt"                 // "Clocks Throttle Reasons : N/A"
)

// sigGPU is an H100 with the given change, for literal judge tests.
func sigGPU(change func(g *node.GPU)) node.GPU {
	g := node.GPU{Index: 0, MinorNumber: 0, Name: h100Name, PCIBusID: "00000000:19:00.0"}
	change(&g)
	return g
}

func TestJudgeGPUClocks(t *testing.T) {
	cfg := settings[*gpuClocksConfig](config.Default(Schema()), idGPUClocks)
	clocks := func(mask uint64) node.GPU {
		return sigGPU(func(g *node.GPU) { g.ClockEvents = node.NewClockEvents(mask) })
	}
	for _, tc := range []struct {
		name string
		gpus []node.GPU
		want brief
	}{
		{"idle", []node.GPU{clocks(node.ClockGPUIdle)}, brief{"", "ok", "no GPU slowed down by hardware or heat (1 GPU)"}},
		{"nothing holds the clocks", []node.GPU{clocks(0)}, brief{"", "ok", "no GPU slowed down by hardware or heat (1 GPU)"}},
		{"SW power cap, applications clocks, sync boost, display, board limit, reliability are normal",
			[]node.GPU{clocks(node.ClockSWPowerCap | node.ClockApplicationsSetting | node.ClockSyncBoost | node.ClockDisplaySetting | node.ClockBoardLimit | node.ClockReliability)},
			brief{"", "ok", "no GPU slowed down by hardware or heat (1 GPU)"}},
		{"HW slowdown", []node.GPU{clocks(node.ClockHWSlowdown)},
			brief{"", "fail", "gpu 0 (0000:19:00.0): HW slowdown: clocks cut by half or more (clocks event reasons 0x8)"}},
		{"HW thermal slowdown", []node.GPU{clocks(node.ClockHWSlowdown | node.ClockHWThermalSlowdown)},
			brief{"", "fail", "gpu 0 (0000:19:00.0): HW slowdown: clocks cut by half or more; HW thermal slowdown: too hot (clocks event reasons 0x48)"}},
		{"HW power brake alone", []node.GPU{clocks(node.ClockHWPowerBrakeSlowdown)},
			brief{"", "fail", "gpu 0 (0000:19:00.0): HW power brake: asserted from outside the GPU, such as by the power supply (clocks event reasons 0x80)"}},
		{"SW thermal slowdown warns", []node.GPU{clocks(node.ClockSWThermalSlowdown)},
			brief{"", "warn", "gpu 0 (0000:19:00.0): SW thermal slowdown: at its max operating temperature"}},
		{"a bit nvml.h does not define warns", []node.GPU{clocks(0x800 | node.ClockGPUIdle)},
			brief{"", "warn", "gpu 0 (0000:19:00.0): clocks event reason nvml.h does not define: bit_0x800"}},
		{"fail beats warn, counted", []node.GPU{clocks(node.ClockSWThermalSlowdown), clocks(node.ClockHWSlowdown), clocks(node.ClockHWSlowdown)},
			brief{"", "fail", "gpu 1 (0000:19:00.0): HW slowdown: clocks cut by half or more (clocks event reasons 0x8) (+1 more)"}},
		{"lost GPU", []node.GPU{{Index: 4, Error: "ERROR_GPU_IS_LOST"}},
			brief{"", "error", "gpu 4: NVML: ERROR_GPU_IS_LOST: clock event reasons not read"}},
		{"H100 without reasons: not looked at", []node.GPU{sigGPU(func(*node.GPU) {})},
			brief{"", "error", "gpu 0 (0000:19:00.0): clock event reasons not reported by NVML (h100 GPUs report them): not judged"}},
		{"consumer GPU without reasons", []node.GPU{{Index: 0, Name: "NVIDIA GeForce GTX 680", PCIBusID: "00000000:08:00.0"}},
			brief{"", "skip", "gpu 0 (0000:08:00.0): no clock event reasons reported (NVIDIA GeForce GTX 680)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.gpus {
				if tc.gpus[i].Error == "" {
					tc.gpus[i].Index = i
				}
			}
			got := judgeGPUClocks(tc.gpus, cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
	t.Run("hw_slowdown moved to warn", func(t *testing.T) {
		c := *cfg
		c.Fail, c.Warn = []string{"hw_thermal_slowdown", "hw_power_brake_slowdown"}, []string{"hw_slowdown", "sw_thermal_slowdown"}
		got := judgeGPUClocks([]node.GPU{clocks(node.ClockHWSlowdown)}, &c)
		if got.Status != StatusWarn {
			t.Errorf("%s: %s", got.Status, got.Summary)
		}
	})
}

// TestGPUClocksCaptures judges the reasons real captures print.
func TestGPUClocksCaptures(t *testing.T) {
	cfg := settings[*gpuClocksConfig](config.Default(Schema()), idGPUClocks)
	for _, tc := range []struct {
		file string
		want brief
	}{
		// Every GPU of the capture behind h100-healthy has its HW power brake asserted.
		{capH100Brake, brief{"", "fail", "gpu 0 (0000:19:00.0): HW slowdown: clocks cut by half or more; HW power brake: asserted from outside the GPU, such as by the power supply (clocks event reasons 0x88) (+7 more)"}},
		// GPU 2 prints HW Power Brake Slowdown Active without HW Slowdown.
		{capH100_183, brief{"", "fail", "gpu 2 (0000:75:00.0): HW power brake: asserted from outside the GPU, such as by the power supply (clocks event reasons 0xa4)"}},
		{capH100_565, brief{"", "ok", "no GPU slowed down by hardware or heat (8 GPUs)"}},
		{capA40, brief{"", "ok", "no GPU slowed down by hardware or heat (10 GPUs)"}}, // SW Power Cap is normal
		{capRTX5090, brief{"", "ok", "no GPU slowed down by hardware or heat (1 GPU)"}},
		{capGTX680, brief{"", "skip", "gpu 0 (0000:08:00.0): no clock event reasons reported (NVIDIA GeForce GTX 680)"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := judgeGPUClocks(captureInv(t, tc.file).Devices, cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGPUSignalNotRecorded: a reading that did not take the fact (a snapshot recorded before
// nodecheck read it) is a skip that says so, never an ok.
func TestGPUSignalNotRecorded(t *testing.T) {
	inv := h100NVML() // no Fields: the legacy facts
	f := &fakeFacts{pci: h100PCI(), gpus: inv}
	for _, c := range []Check{gpuClocks{}, gpuThermal{}, gpuPowerLimit{}, gpuPersistence{}, gpuRecoveryAction{}} {
		got := c.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
		if got.Status != StatusSkip || got.Observed != "not recorded" {
			t.Errorf("%s: %s %q, want a skip saying the fact was not recorded", c.ID(), got.Status, got.Summary)
		}
	}
	inv.Fields = node.AllGPUFields
	f.gpus = inv
	if got := (gpuClocks{}).Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil)); got.Status != StatusError {
		t.Errorf("read but absent on an H100: %s %q, want error", got.Status, got.Summary)
	}
}

func TestGPUClocksSection(t *testing.T) {
	runSectionCases(t, []sectionCase{
		{
			name: "defaults",
			want: func(c *config.Config) any {
				s := settings[*gpuClocksConfig](c, idGPUClocks)
				return []any{s.Modes, s.Fail, s.Warn}
			},
			wantVal: []any{[]string{"epilog", "health", "manual"}, []string{"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}, []string{"sw_thermal_slowdown"}},
		},
		{
			name: "group moves hw_slowdown to warn",
			toml: "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.gpu_clocks]\nfail = [\"hw_thermal_slowdown\"]\nwarn = [\"hw_slowdown\"]\n",
			node: "gpu02",
			want: func(c *config.Config) any {
				s := settings[*gpuClocksConfig](c, idGPUClocks)
				return []any{s.Fail, s.Warn}
			},
			wantVal: []any{[]string{"hw_thermal_slowdown"}, []string{"hw_slowdown"}},
		},
		{
			name:    "unknown reason",
			toml:    "[checks.gpu_clocks]\nfail = [\"overheat\"]\n",
			wantErr: `nodecheck.toml:2: checks.gpu_clocks.fail: "overheat" is not a clocks event reason (known: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting, board_limit, reliability, or bit_0xN)`,
		},
		{
			name:    "a reason in both lists",
			toml:    "[checks.gpu_clocks]\nwarn = [\"hw_slowdown\"]\n",
			wantErr: `nodecheck.toml:2: checks.gpu_clocks.warn: "hw_slowdown" is in fail too: give each reason in one list`,
		},
	})
}
