package checks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idIMEX = "imex"

// The ways imex fails: its rows of the remedy table (Faults).
const (
	faultIMEXService fault = "imex/service"
	faultIMEXChannel fault = "imex/channel"
)

// imex checks, on multi-node NVLink compute trays (GB200 and GB300 NVL: GPUs of those models on
// an NVLink fabric with no NVSwitch on the node's PCI bus, see fabric_manager_mnnvl.go), what a job needs
// to share GPU memory with the other trays over NVLink: the IMEX service active, and the IMEX
// channel devices present. NVIDIA's MNNVL user guide: "NVIDIA Internode Memory Exchange (IMEX)
// is a secure service facilitating the mapping of GPU memory over NVLink between the GPUs in
// an NVLink domain"; a CUDA process reaches it through a channel, the character device
// /dev/nvidia-caps-imex-channels/channelN, which the driver creates at load with the module
// parameter NVreg_CreateImexChannel0=1 (channel 0) or nvidia-modprobe creates on demand.
// Where Slurm makes a channel per job (slurm.conf SwitchType=switch/nvidia_imex), the channel
// devices are not judged: Slurm creates them for each job step.
type imex struct{}

func (imex) ID() string { return idIMEX }

func (imex) Description() string {
	return "on multi-node NVLink trays (GB200/GB300 NVL): the IMEX service active and its channel devices present"
}

// GPUFields implements gpuFactsUser: each GPU's fabric state and model, to tell a multi-node
// NVLink tray.
func (imex) GPUFields() node.GPUFields { return node.GPUFabric | node.GPUName }

// imexConfig is [checks.imex].
type imexConfig struct {
	config.CheckCommon
	// Force runs the check where the node does not look like a multi-node NVLink tray.
	Force bool `toml:"force"`
	// Systemctl asks for the service state.
	Systemctl string `toml:"systemctl"`
	// Service is the IMEX unit.
	Service string `toml:"service"`
	// Channels are the IMEX channel devices that must exist; empty judges none.
	Channels []string `toml:"channels"`
}

// imexChannelDir is where the driver makes the IMEX channel devices.
const imexChannelDir = "/dev/nvidia-caps-imex-channels/"

func (imex) Section() config.Section {
	return &imexConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()},
		Systemctl:   "/usr/bin/systemctl",
		Service:     "nvidia-imex",
		Channels:    []string{imexChannelDir + "channel0"},
	}
}

// ValidateSection implements config.SectionValidator.
func (ic *imexConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	if !strings.HasPrefix(ic.Systemctl, "/") {
		errs = append(errs, config.Problemf("systemctl", " = %q: give an absolute path: Slurm starts prologs and health checks without PATH", ic.Systemctl))
	}
	if strings.TrimSpace(ic.Service) == "" || strings.ContainsAny(ic.Service, " \t\n/") {
		errs = append(errs, config.Problemf("service", " = %q: give the systemd unit of IMEX, such as \"nvidia-imex\"", ic.Service))
	}
	for _, c := range ic.Channels {
		if !strings.HasPrefix(c, "/dev/") || strings.Contains(c, "..") {
			errs = append(errs, config.Problemf("channels", ": %q: give a device path, such as %q", c, imexChannelDir+"channel0"))
		}
	}
	return errs
}

// slurmIMEXSwitch is the SwitchType with which Slurm makes IMEX channels per job (Slurm 24.11).
const slurmIMEXSwitch = "switch/nvidia_imex"

func (imex) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*imexConfig](env.Config, idIMEX)
	pci, err := env.Facts.PCIDevices(ctx)
	if err != nil {
		// Without the listing, "no NVSwitch and no GPU" would be a guess: never skip on it.
		return factsError(ctx, "list PCI devices", err)
	}
	switches, gpus := countNVSwitchesGPUs(pci)
	if switches == 0 && gpus == 0 && !cfg.Force {
		return Result{Status: StatusSkip, Summary: "no NVSwitch and no NVIDIA GPU on the PCI bus"}
	}
	inv, gerr := env.Facts.GPUs(ctx)
	if gerr != nil && ctx.Err() != nil {
		return factsError(ctx, "query NVML", gerr)
	}
	if !cfg.Force {
		switch {
		case switches > 0:
			return Result{Status: StatusSkip, Summary: fmt.Sprintf("%s on the PCI bus: a single-node NVLink system, no IMEX", countNoun(switches, "NVSwitch", "NVSwitches"))}
		case gerr != nil || !fabricWithoutNVSwitch(inv):
			return Result{Status: StatusSkip, Summary: "not a multi-node NVLink tray: no NVSwitch on the PCI bus" + noFabricWhy(inv, gerr)}
		case !multiNodeNVLinkTray(inv):
			return Result{Status: StatusSkip, Summary: "GPUs on an NVLink fabric without NVSwitch here, but not of a multi-node NVLink model (GB200, GB300): a VM whose host manages the NVSwitches, no IMEX"}
		}
	}
	svc := serviceActive(ctx, env, cfg.Systemctl, cfg.Service, idIMEX, faultIMEXService)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out asking systemd for " + cfg.Service, Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
	}
	perJob := ""
	if env.Slurm != nil {
		if conf, err := env.Slurm.Conf(ctx); err == nil {
			if st, ok := conf.Setting("SwitchType"); ok && strings.EqualFold(strings.TrimSpace(st.Value), slurmIMEXSwitch) {
				perJob = conf.Path
			}
		}
	}
	var channels []node.DevNode
	if perJob == "" {
		for _, c := range cfg.Channels {
			dn, err := env.Facts.DevNode(ctx, c)
			if err != nil {
				return factsError(ctx, "stat "+c, err)
			}
			channels = append(channels, dn)
		}
	}
	return judgeIMEX(svc, channels, perJob)
}

// judgeIMEX judges the service and the channel devices; perJob names the slurm.conf that
// makes channels per job ("" when none does), whose channels are then not judged.
func judgeIMEX(svc Detail, channels []node.DevNode, perJob string) Result {
	res := Result{Status: StatusOK, Details: []Detail{svc}, Expected: "service active, channel devices present"}
	var bad []Detail
	if svc.Status != StatusOK {
		bad = append(bad, svc)
	}
	for _, c := range channels {
		d := Detail{Device: c.Path, Status: StatusOK, Observed: "char", Expected: "char device", Subject: Subject{File: c.Path}}
		switch {
		case c.Missing:
			failDetail(&d, faultIMEXChannel)
			d.Observed = "missing"
			d.Message = c.Path + " missing: load the driver with NVreg_CreateImexChannel0=1 (or nvidia-modprobe -i 0), or set channels in [checks.imex]"
		case c.Type != "char":
			failDetail(&d, faultIMEXChannel)
			d.Observed = c.Type
			d.Message = fmt.Sprintf("%s is a %s, not a character device", c.Path, c.Type)
		default:
			d.Message = c.Path + " present"
		}
		res.Details = append(res.Details, d)
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
	}
	res.Observed = "service " + orUnknown(svc.Observed)
	if len(bad) > 0 {
		summarizeWorst(&res, bad)
		return res
	}
	switch {
	case perJob != "":
		res.Summary = fmt.Sprintf("%s; channels made per job by Slurm (SwitchType=%s in %s)", svc.Message, slurmIMEXSwitch, perJob)
	case len(channels) == 0:
		res.Summary = svc.Message + "; no channel device required (channels = [])"
	default:
		res.Summary = fmt.Sprintf("%s; %s present", svc.Message, countNoun(len(channels), "IMEX channel", "IMEX channels"))
	}
	return res
}

// Faults declares the check's own rows of the remedy table.
func (imex) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultIMEXService, "the IMEX service is not active on a multi-node NVLink tray", RemedyAdmin,
				"NVIDIA's MNNVL user guide, IMEX: the service runs on every node of the NVLink domain from its configuration (nodes_config.cfg): a person checks the configuration and the domain's nodes, then restarts it"},
			{faultIMEXChannel, "an IMEX channel device is missing or not a character device", RemedyAdmin,
				"the driver makes channel 0 only when loaded with NVreg_CreateImexChannel0=1 (or nvidia-modprobe -i 0 makes it): configuration, or Slurm's switch/nvidia_imex plugin"},
		},
	}
}

// Explain is what `nodecheck explain imex` says.
func (imex) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The PCI bus (NVSwitches) and NVML (each GPU's fabric state), to tell a multi-node NVLink compute tray: GPUs on an NVLink fabric with no NVSwitch on the node's own bus.",
			"systemctl is-active SERVICE (nvidia-imex).",
			"The channel devices (stat, never opened), unless slurm.conf SwitchType=switch/nvidia_imex makes them per job.",
		},
		Passes: "On a multi-node NVLink tray, the IMEX service is active and every channel device is a character device.",
		Fails:  "The IMEX service is not active, or a channel device is missing or not a character device: jobs cannot map GPU memory across trays over NVLink (CUDA fails to import memory, NCCL falls back or fails).",
		Skips:  "NVSwitches are on the PCI bus (an HGX-style single-node system) or no GPU reports an NVLink fabric state (not a multi-node NVLink tray), or the GPUs on a fabric are of a model not built for multi-node NVLink racks (an HGX board's GPUs in a VM), unless force = true.",
		Errors: "systemctl cannot be asked, or a channel device cannot be stat'ed.",
		Keys: map[string]string{
			"force":     "Run even where the node does not look like a multi-node NVLink tray.",
			"systemctl": "systemctl, by absolute path (hooks run without PATH).",
			"service":   "The IMEX systemd unit.",
			"channels":  "IMEX channel devices that must exist. [] judges none (for sites that create channels per job by other means than Slurm's switch/nvidia_imex, which the check notices by itself).",
		},
		Fix: []string{
			"systemctl status nvidia-imex and journalctl -u nvidia-imex; /etc/nvidia-imex/nodes_config.cfg lists the domain's nodes, which must all run IMEX.",
			"ls -l /dev/nvidia-caps-imex-channels/: channel0 comes with the driver option NVreg_CreateImexChannel0=1 (modprobe.d) or nvidia-modprobe -i 0; with Slurm's switch/nvidia_imex, Slurm makes one per job.",
			"nvidia-smi -q -d FABRIC (or nodecheck explain fabric_manager) for the GPUs' fabric registration, which IMEX needs first.",
		},
	}
}
