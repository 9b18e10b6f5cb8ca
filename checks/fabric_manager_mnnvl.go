package checks

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodecheck/nodecheck/checks/node"
)

// GPUs on an NVLink fabric whose NVSwitches are not on this node's PCI bus. Two kinds of node
// have them:
//
//   - Multi-node NVLink (MNNVL) compute trays, as in GB200 and GB300 NVL racks: the NVSwitches
//     sit in the rack's NVLink switch trays. NVIDIA's MNNVL user guide
//     (https://docs.nvidia.com/multi-node-nvlink-systems/mnnvl-user-guide/overview.html): the
//     switch trays' NVOS image "includes the NMX-C application, the FM application, and the
//     NVLSM application": Fabric Manager runs there. The compute tray has each GPU's fabric
//     registration (NVML, as on HGX) and the IMEX service with its channel devices (the imex
//     check).
//   - Virtual machines given GPUs of an HGX board whose NVSwitches the host keeps (Fabric
//     Manager's shared NVSwitch virtualization model): Fabric Manager runs on the host.
//
// Either way the GPUs' fabric registration is what jobs need, and Fabric Manager has nothing to
// manage on this node.

// fabricWithoutNVSwitch reports whether a GPU of inv reports an NVLink fabric state; the
// caller knows that no NVSwitch is on the PCI bus.
func fabricWithoutNVSwitch(inv node.GPUInventory) bool {
	if inv.Init != node.InitSuccess {
		return false
	}
	for _, g := range inv.Devices {
		if g.Fabric != nil && g.Fabric.State != "" && g.Fabric.State != fabricNotSupported {
			return true
		}
	}
	return false
}

// multiNodeNVLinkTray reports whether inv is a multi-node NVLink compute tray's: GPUs on a
// fabric (no NVSwitch on the bus, which the caller knows) of a model built for MNNVL racks
// (gpuTraits.mnnvl: GB200, GB300). A VM's HGX GPUs are on a fabric too, but need no IMEX.
func multiNodeNVLinkTray(inv node.GPUInventory) bool {
	if !fabricWithoutNVSwitch(inv) {
		return false
	}
	for _, g := range inv.Devices {
		if tr, _ := traitsOf(g.Name); tr.mnnvl {
			return true
		}
	}
	return false
}

// noFabricWhy says, for the skip of a node without NVSwitches, why its GPUs are not taken to
// be on a fabric either.
func noFabricWhy(inv node.GPUInventory, err error) string {
	switch {
	case err != nil:
		return " (NVML: " + err.Error() + ")"
	case inv.Init != node.InitSuccess:
		return ", and NVML is unavailable (" + inv.Init + ") to tell GPUs on an NVLink fabric"
	}
	return ", and no GPU reports an NVLink fabric state"
}

// runFabricWithoutNVSwitch judges GPUs on a fabric without NVSwitches here: every GPU
// registered (COMPLETED, SUCCESS), and Fabric Manager not running here.
func runFabricWithoutNVSwitch(ctx context.Context, env *Env, cfg *fabricManagerConfig, inv node.GPUInventory) Result {
	svc := fmService(ctx, env, cfg.Systemctl, cfg.Service)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out asking systemd for " + cfg.Service, Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
	}
	return judgeFabricWithoutNVSwitch(inv, fmNotHere(svc, cfg.Service))
}

// fmNotHere turns the service's state into the verdict for a node without NVSwitches, where
// Fabric Manager is expected off: active warns (it has no NVSwitch to manage: the switch
// trays or the VM's host run it); any other state is ok; a systemd that cannot be asked
// leaves it not judged (a skip: the fabric registration, which is what jobs need, is judged
// either way).
func fmNotHere(svc Detail, service string) Detail {
	d := svc
	d.Expected, d.Remedy = "not active", "" // a warn or an ok: no remedy
	switch svc.Status {
	case StatusOK:
		d.Status = StatusWarn
		d.Message = fmt.Sprintf("%s active on a node without NVSwitch: Fabric Manager runs where the NVSwitches are (NVLink switch trays, or the VM's host); systemctl disable --now %s", service, service)
	case StatusFail:
		d.Status = StatusOK
		d.Message = fmt.Sprintf("%s %s, as expected without NVSwitch here", service, svc.Observed)
	default:
		d.Status = StatusSkip
		d.Message = "not judged: " + svc.Message
	}
	return d
}

// judgeFabricWithoutNVSwitch combines the GPUs' fabric registration and health with the
// verdict on Fabric Manager.
func judgeFabricWithoutNVSwitch(inv node.GPUInventory, fm Detail) Result {
	details, problems, withFabric := judgeFabric(inv.Devices, true)
	res := Result{Status: StatusOK, Details: append([]Detail{fm}, details...),
		Observed: fmt.Sprintf("%d GPUs with a fabric state, no NVSwitch on the PCI bus", withFabric),
		Expected: "fabric COMPLETED/SUCCESS and healthy on every GPU, Fabric Manager not running here"}
	bad := problems
	if fm.Status == StatusWarn {
		bad = append(bad, fm)
	}
	if len(bad) > 0 {
		summarizeWorst(&res, bad)
		return res
	}
	res.Summary = fmt.Sprintf("NVLink fabric without NVSwitch on this node: fabric COMPLETED on %s%s, Fabric Manager not running here (it runs where the NVSwitches are)",
		countNoun(withFabric, "GPU", "GPUs"), fabricHealthSuffix(inv.Devices))
	return res
}

// countNVSwitchesGPUs counts the NVSwitches and the NVIDIA GPUs among the PCI functions.
func countNVSwitchesGPUs(pci []node.PCIDevice) (switches, gpus int) {
	for _, d := range pci {
		switch {
		case isNVSwitch(d):
			switches++
		case isNVIDIAGPU(d):
			gpus++
		}
	}
	return switches, gpus
}

// summarizeWorst makes res the verdict of its worst problem (the first of that status): its
// status and message, the count of the others, and an error for an error.
func summarizeWorst(res *Result, problems []Detail) {
	worst := problems[0]
	for _, b := range problems[1:] {
		if b.Status.Worse(worst.Status) {
			worst = b
		}
	}
	res.Status, res.Summary, res.Subject = worst.Status, worst.Message+moreSuffix(len(problems)-1), worst.Subject
	if res.Status == StatusError {
		res.Err = errors.New(res.Summary)
	}
}
