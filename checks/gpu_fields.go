package checks

import (
	"slices"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// gpuFactsUser is a check that reads NVML (env.Facts.GPUs). GPUFields names the GPU facts its
// judge looks at; a run asks NVML for the facts of the checks that run in its mode and no
// more (a prolog makes only the NVML calls the prolog's checks need). Every check
// that reads GPUs declares them: TestGPUFieldsDeclared fails for one that does not, and
// TestGPUFieldsSuffice for one whose verdict changes when the facts it did not name are
// left out.
type gpuFactsUser interface {
	GPUFields() node.GPUFields
}

// RepairGPUFields are the GPU facts a health run's repair step reads ([repair] enabled): the
// processes on each GPU, its identity, and its model and NVLinks, which tell the GPUs the
// driver resets together (repair.ResetSet; the nvlink check and the model checks of a health
// run read the last two already, unless they are turned off).
const RepairGPUFields = node.GPUPCIBusID | node.GPUUUID | node.GPUSerial | node.GPUCompute | node.GPUName | node.GPUNVLinks

// GPUFieldsFor is the union of the GPU facts of the checks of list that run in mode under
// cfg: enabled, and mode among their modes. Checks outside their modes only report (the
// last result of nccl_allreduce) and read no GPU.
func GPUFieldsFor(list []Check, cfg *config.Config, mode config.Mode) node.GPUFields {
	var f node.GPUFields
	if cfg.Repair.Enabled && mode.Repairs() {
		// The repair step after the checks (docs/repairs.md) resets a GPU only when NVML lists
		// no process on it or on the GPUs reset with it, and records it by UUID and serial.
		f |= RepairGPUFields
	}
	for _, c := range list {
		u, ok := c.(gpuFactsUser)
		if !ok {
			continue
		}
		set := Settings(cfg, c)
		if set.Enabled && slices.Contains(set.Modes, string(mode)) {
			f |= u.GPUFields()
		}
	}
	return f
}

// gpuFactsRead reports whether inv's reading took the facts f: a snapshot recorded before
// nodecheck read them has not, and a check then says it did not look, rather than judge
// their absence.
func gpuFactsRead(inv node.GPUInventory, f node.GPUFields) bool { return inv.Read().Has(f) }
