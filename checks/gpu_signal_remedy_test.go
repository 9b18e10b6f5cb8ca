package checks

import (
	"context"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// signalRemedyCases are the failures of the signal checks, imex and fabric_manager without
// NVSwitch, for TestRemedyMapping.
func signalRemedyCases() []remedyCase {
	const dev = "gpu 0 (0000:19:00.0)"
	recovery := func(a string) Result {
		return judgeGPURecovery([]node.GPU{sigGPU(func(g *node.GPU) { g.RecoveryAction = a })})
	}
	clocksCfg := settings[*gpuClocksConfig](config.Default(Schema()), idGPUClocks)
	clocks := func(mask uint64, cfg *gpuClocksConfig) Result {
		return judgeGPUClocks([]node.GPU{sigGPU(func(g *node.GPU) { g.ClockEvents = node.NewClockEvents(mask) })}, cfg)
	}
	capFails := *clocksCfg
	capFails.Fail = append(capFails.Fail, "sw_power_cap")
	hot := judgeGPUThermal([]node.GPU{sigGPU(func(g *node.GPU) {
		g.Thermal = &node.Thermal{GPUC: 95, SlowdownC: 89, ShutdownC: 92}
	})}, settings[*gpuThermalConfig](config.Default(Schema()), idGPUThermal))
	systemd := &execFacts{fakeFacts: &fakeFacts{}, cmds: map[string]node.CmdResult{
		"/usr/bin/systemctl is-active nvidia-imex": {Stdout: "inactive\n", ExitCode: 3}}}
	svc := serviceActive(context.Background(), gpuEnv(systemd, "gpu01", nil), "/usr/bin/systemctl", "nvidia-imex", idIMEX, faultIMEXService)
	tray := node.GPUInventory{Init: node.InitSuccess, Devices: []node.GPU{{Index: 0, Name: "NVIDIA GB200", PCIBusID: "00000008:01:00.0",
		Fabric: &node.Fabric{State: "COMPLETED", Status: "Insufficient Resources"}}}}
	return []remedyCase{
		{"recovery action GPU_RESET", recovery("GPU_RESET"), dev, RemedyResetGPU},
		{"recovery action DRAIN_P2P", recovery("DRAIN_P2P"), dev, RemedyResetGPU},
		{"recovery action DRAIN_AND_RESET", recovery("DRAIN_AND_RESET"), dev, RemedyResetGPU},
		{"recovery action NODE_REBOOT", recovery("NODE_REBOOT"), dev, RemedyReboot},
		{"recovery action BUS_RESET", recovery("BUS_RESET"), dev, RemedyReboot},
		{"recovery action unknown", recovery("ACTION_9"), dev, RemedyReboot},
		{"recovery action RECOVER_IMEX_DOMAIN", recovery("RECOVER_IMEX_DOMAIN"), dev, RemedyAdmin},
		{"HW thermal slowdown", clocks(node.ClockHWSlowdown|node.ClockHWThermalSlowdown, clocksCfg), dev, RemedyService},
		{"HW power brake", clocks(node.ClockHWSlowdown|node.ClockHWPowerBrakeSlowdown, clocksCfg), dev, RemedyService},
		{"SW power cap failed by the site", clocks(node.ClockSWPowerCap, &capFails), dev, RemedyAdmin},
		{"over the slowdown temperature", hot, dev, RemedyService},
		{"IMEX service inactive", judgeIMEX(svc, nil, ""), "service nvidia-imex", RemedyAdmin},
		{"IMEX channel missing", judgeIMEX(Detail{Device: "service nvidia-imex", Status: StatusOK, Observed: "active"},
			[]node.DevNode{{Path: imexChannelDir + "channel0", Missing: true}}, ""), imexChannelDir + "channel0", RemedyAdmin},
		{"GB200 tray fabric not registered", judgeFabricWithoutNVSwitch(tray, Detail{Device: "service nvidia-fabricmanager", Status: StatusOK}),
			"gpu 0 (0008:01:00.0)", RemedyReboot},
	}
}
