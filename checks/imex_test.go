package checks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const imexActiveCmd = "/usr/bin/systemctl is-active nvidia-imex"

func TestIMEX(t *testing.T) {
	// gb200Tray is a GB200 compute tray's 4 GPUs on the fabric; its PCI bus holds GPUs and no
	// NVSwitch (the switches sit in the rack's switch trays).
	gb200Tray := func() node.GPUInventory {
		inv := node.GPUInventory{Init: node.InitSuccess, DeviceCount: 4}
		for i, bus := range []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"} {
			inv.Devices = append(inv.Devices, node.GPU{Index: i, Name: "NVIDIA GB200", PCIBusID: bus, Fabric: &node.Fabric{State: "COMPLETED", Status: "SUCCESS"}})
		}
		return inv
	}
	var trayPCI []node.PCIDevice
	for _, d := range h100PCI() {
		if !isNVSwitch(d) {
			trayPCI = append(trayPCI, d)
		}
	}
	channel0 := map[string]node.DevNode{"/dev/nvidia-caps-imex-channels/channel0": charDev(511, 0)}
	active := map[string]node.CmdResult{imexActiveCmd: {Stdout: "active\n"}}
	perJob := "GresTypes=gpu\nSwitchType=switch/nvidia_imex\nNodeName=gpu-h100-01 Gres=gpu:4\n"
	for _, tc := range []struct {
		name      string
		pci       []node.PCIDevice
		gpus      node.GPUInventory
		devs      map[string]node.DevNode
		cmds      map[string]node.CmdResult
		slurmConf string
		want      brief
	}{
		{"GB200 tray, IMEX up, channel 0", trayPCI, gb200Tray(), channel0, active, "",
			brief{"", "ok", "nvidia-imex active; 1 IMEX channel present"}},
		{"GB200 tray, IMEX inactive", trayPCI, gb200Tray(), channel0, map[string]node.CmdResult{imexActiveCmd: {Stdout: "inactive\n", ExitCode: 3}}, "",
			brief{"", "fail", "nvidia-imex service inactive, want active: see journalctl -u nvidia-imex, then systemctl restart nvidia-imex"}},
		{"GB200 tray, channel missing", trayPCI, gb200Tray(), nil, active, "",
			brief{"", "fail", "/dev/nvidia-caps-imex-channels/channel0 missing: load the driver with NVreg_CreateImexChannel0=1 (or nvidia-modprobe -i 0), or set channels in [checks.imex]"}},
		{"GB200 tray, Slurm makes channels per job", trayPCI, gb200Tray(), nil, active, perJob,
			brief{"", "ok", "nvidia-imex active; channels made per job by Slurm (SwitchType=switch/nvidia_imex in /etc/slurm/slurm.conf)"}},
		{"HGX H100: NVSwitches on the bus", h100PCI(), h100NVML(), nil, nil, "",
			brief{"", "skip", "4 NVSwitches on the PCI bus: a single-node NVLink system, no IMEX"}},
		{"H100 VM whose host keeps the NVSwitches", trayPCI, h100NVML(), nil, nil, "",
			brief{"", "skip", "GPUs on an NVLink fabric without NVSwitch here, but not of a multi-node NVLink model (GB200, GB300): a VM whose host manages the NVSwitches, no IMEX"}},
		{"PCIe GPUs without a fabric", trayPCI, changeGPU(h100NVML(), 0, func(*node.GPU) {}).Only(node.GPUName | node.GPUPCIBusID), nil, nil, "",
			brief{"", "skip", "not a multi-node NVLink tray: no NVSwitch on the PCI bus, and no GPU reports an NVLink fabric state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.slurmConf != "" {
				files["/etc/slurm/slurm.conf"] = tc.slurmConf
			}
			f := &execFacts{fakeFacts: &fakeFacts{pci: tc.pci, gpus: tc.gpus, devs: tc.devs, files: files}, cmds: tc.cmds}
			got := imex{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", config.Default(Schema())))
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\nran: %q details: %+v", diff, f.ran, got.Details)
			}
		})
	}
}

func TestIMEXSection(t *testing.T) {
	runSectionCases(t, []sectionCase{
		{name: "defaults", want: func(c *config.Config) any {
			s := settings[*imexConfig](c, idIMEX)
			return []any{s.Service, s.Channels, s.Force}
		}, wantVal: []any{"nvidia-imex", []string{"/dev/nvidia-caps-imex-channels/channel0"}, false}},
		{name: "no channel required", toml: "[checks.imex]\nchannels = []\n",
			want: func(c *config.Config) any { return len(settings[*imexConfig](c, idIMEX).Channels) }, wantVal: 0},
		{name: "relative systemctl", toml: "[checks.imex]\nsystemctl = \"systemctl\"\n",
			wantErr: `nodecheck.toml:2: checks.imex.systemctl = "systemctl": give an absolute path: Slurm starts prologs and health checks without PATH`},
		{name: "channel not a device path", toml: "[checks.imex]\nchannels = [\"channel0\"]\n",
			wantErr: `nodecheck.toml:2: checks.imex.channels: "channel0": give a device path, such as "/dev/nvidia-caps-imex-channels/channel0"`},
	})
}

// TestIMEXPCIUnreadable: a PCI listing that failed is an error naming it, not a skip for "no
// NVSwitch and no GPU" (never healthy by not looking).
func TestIMEXPCIUnreadable(t *testing.T) {
	f := &execFacts{fakeFacts: &fakeFacts{pciErr: errors.New("open /sys/bus/pci/devices: permission denied"), gpus: h100NVML()}}
	got := imex{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", config.Default(Schema())))
	if got.Status != StatusError || !strings.Contains(got.Summary, "list PCI devices: open /sys/bus/pci/devices") {
		t.Errorf("%s %q, want an error naming the PCI listing", got.Status, got.Summary)
	}
}
