package checks

import "github.com/nodecheck/nodecheck/checks/node"

// The facts a health run's repair step reads besides NVML's GPUs (docs/repairs.md, step 5:
// which GPUs the driver resets together), taken from what the run's checks already read:
// nothing here reads the node.

// NVSwitches counts the NVSwitches in a PCI listing (NVIDIA bridge functions, class 0x0680),
// as fabric_manager counts them.
func NVSwitches(pci []node.PCIDevice) int {
	switches, _ := countNVSwitchesGPUs(pci)
	return switches
}

// FabricManagerState is the Fabric Manager service's state as the run's fabric_manager check
// read it from systemd ("active", "inactive", "failed", ...): the Observed of its detail whose
// subject is a service; "" where the check did not run, skipped (no NVSwitch), or could not
// ask systemd.
func FabricManagerState(results []Result) string {
	for _, r := range results {
		if r.Check != idFabricManager {
			continue
		}
		for _, d := range r.Details {
			if d.Subject.Service != "" && (d.Status == StatusOK || d.Status == StatusFail) {
				return d.Observed
			}
		}
	}
	return ""
}
