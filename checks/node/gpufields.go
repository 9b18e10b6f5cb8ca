package node

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// GPUFields is a set of the facts an NVML reading takes: the fields of GPU and the two
// versions of GPUInventory. A run reads only the facts its checks judge (checks.NewEnv
// computes the set from the checks of the run's mode); each costs NVML calls on every GPU
// (checks/node/nvml documents which). Its JSON form is the list of the facts' nvml.json keys.
type GPUFields uint32

// The facts a reading may take. The device count, each device's handle and its index are
// always read; nothing else is unless asked for.
const (
	GPUDriverVersion  GPUFields = 1 << iota // GPUInventory.DriverVersion (once per node)
	GPUCUDAVersion                          // GPUInventory.CUDADriverVersion (once per node)
	GPUMinorNumber                          // GPU.MinorNumber
	GPUUUID                                 // GPU.UUID
	GPUName                                 // GPU.Name
	GPUPCIBusID                             // GPU.PCIBusID
	GPUSerial                               // GPU.Serial
	GPUPCIe                                 // GPU.PCIe
	GPUFabric                               // GPU.Fabric
	GPUECC                                  // GPU.ECC: the mode and the uncorrectable counts
	GPURemappedRows                         // GPU.RemappedRows
	GPURetiredPages                         // GPU.RetiredPages
	GPUNVLinks                              // GPU.NVLinks
	GPUNVLinkErrors                         // GPU.NVLinkErrors
	GPUPCIeReplays                          // GPU.PCIeReplays
	GPUMemory                               // GPU.Memory
	GPUCompute                              // GPU.Compute
	GPUClockEvents                          // GPU.ClockEvents
	GPUThermal                              // GPU.Thermal
	GPUPower                                // GPU.Power
	GPUPersistence                          // GPU.Persistence
	GPURecoveryAction                       // GPU.RecoveryAction, and GPU.ResetStatus where the driver has no action
	// GPUECCCorrected is GPU.ECC.VolatileCorrected (with the ECC mode, which says whether
	// there is a count): the correctable errors whose rate the history judges, a call per GPU
	// that no other check needs.
	GPUECCCorrected

	gpuFieldsEnd // keep last
)

// AllGPUFields is every fact: what `nodecheck snapshot` records.
const AllGPUFields = gpuFieldsEnd - 1

// LegacyGPUFields are the facts nodecheck read before readings listed theirs: what an
// nvml.json without "fields" holds.
const LegacyGPUFields = GPUDriverVersion | GPUCUDAVersion | GPUMinorNumber | GPUUUID | GPUName | GPUPCIBusID |
	GPUPCIe | GPUFabric | GPUECC | GPURemappedRows | GPURetiredPages | GPUNVLinks | GPUMemory | GPUCompute |
	GPUECCCorrected

// gpuFieldKeys are the facts' nvml.json keys, in bit order.
var gpuFieldKeys = []string{
	"driver_version", "cuda_driver_version", "minor_number", "uuid", "name", "pci_bus_id", "serial",
	"pcie", "fabric", "ecc", "remapped_rows", "retired_pages", "nvlinks", "nvlink_errors",
	"pcie_replay_counter", "memory", "compute", "clock_event_reasons", "temperature", "power",
	"persistence_mode", "recovery_action", "ecc_corrected",
}

// Has reports whether f holds every fact of g.
func (f GPUFields) Has(g GPUFields) bool { return f&g == g }

// Keys lists the facts of f by their nvml.json keys, in bit order.
func (f GPUFields) Keys() []string {
	out := make([]string, 0, bits.OnesCount32(uint32(f)))
	for i, k := range gpuFieldKeys {
		if f&(1<<i) != 0 {
			out = append(out, k)
		}
	}
	return out
}

// String is the keys joined by ","; "none" for the empty set.
func (f GPUFields) String() string {
	if f == 0 {
		return "none"
	}
	return strings.Join(f.Keys(), ",")
}

// ParseGPUField is the fact an nvml.json key names.
func ParseGPUField(key string) (GPUFields, error) {
	if i := slices.Index(gpuFieldKeys, key); i >= 0 {
		return 1 << i, nil
	}
	return 0, fmt.Errorf("%q is not a GPU fact nodecheck reads (known: %s)", key, strings.Join(gpuFieldKeys, ", "))
}

// MarshalJSON writes the keys as a list.
func (f GPUFields) MarshalJSON() ([]byte, error) { return json.Marshal(f.Keys()) }

// UnmarshalJSON reads a list of keys; an unknown one is an error naming it.
func (f *GPUFields) UnmarshalJSON(b []byte) error {
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	var out GPUFields
	for _, k := range keys {
		g, err := ParseGPUField(k)
		if err != nil {
			return err
		}
		out |= g
	}
	*f = out
	return nil
}

// Read is the set of facts inv's reading took: Fields, or LegacyGPUFields for a reading
// that does not list them (an nvml.json written before the list, a literal in a test).
func (inv GPUInventory) Read() GPUFields {
	if inv.Fields == 0 {
		return LegacyGPUFields
	}
	return inv.Fields
}

// Only returns a deep copy of inv holding only the facts of f (the rest left at their
// zero, MinorNumber at -1), with Fields saying so: what a reading asked for f alone gives.
func (inv GPUInventory) Only(f GPUFields) GPUInventory {
	out := inv.Clone()
	out.Fields = inv.Read() & f
	if !f.Has(GPUDriverVersion) {
		out.DriverVersion = ""
	}
	if !f.Has(GPUCUDAVersion) {
		out.CUDADriverVersion = 0
	}
	for i := range out.Devices {
		out.Devices[i] = out.Devices[i].only(f)
	}
	return out
}

// only zeroes the fields of g outside f.
func (g GPU) only(f GPUFields) GPU {
	keep := GPU{Index: g.Index, MinorNumber: -1, Error: g.Error}
	for _, c := range []struct {
		bit  GPUFields
		copy func()
	}{
		{GPUMinorNumber, func() { keep.MinorNumber = g.MinorNumber }},
		{GPUUUID, func() { keep.UUID = g.UUID }},
		{GPUName, func() { keep.Name = g.Name }},
		{GPUPCIBusID, func() { keep.PCIBusID = g.PCIBusID }},
		{GPUSerial, func() { keep.Serial = g.Serial }},
		{GPUPCIe, func() { keep.PCIe = g.PCIe }},
		{GPUFabric, func() { keep.Fabric = g.Fabric }},
		{GPURemappedRows, func() { keep.RemappedRows = g.RemappedRows }},
		{GPURetiredPages, func() { keep.RetiredPages = g.RetiredPages }},
		{GPUNVLinks, func() { keep.NVLinks = g.NVLinks }},
		{GPUNVLinkErrors, func() { keep.NVLinkErrors = g.NVLinkErrors }},
		{GPUPCIeReplays, func() { keep.PCIeReplays = g.PCIeReplays }},
		{GPUMemory, func() { keep.Memory = g.Memory }},
		{GPUCompute, func() { keep.Compute = g.Compute }},
		{GPUClockEvents, func() { keep.ClockEvents = g.ClockEvents }},
		{GPUThermal, func() { keep.Thermal = g.Thermal }},
		{GPUPower, func() { keep.Power = g.Power }},
		{GPUPersistence, func() { keep.Persistence = g.Persistence }},
		{GPURecoveryAction, func() { keep.RecoveryAction, keep.ResetStatus = g.RecoveryAction, g.ResetStatus }},
	} {
		if f.Has(c.bit) {
			c.copy()
		}
	}
	keep.ECC = g.ECC.only(f)
	return keep
}

// only is the part of e a reading of f takes: the mode with either ECC fact, the
// uncorrectable counts with GPUECC, the correctable one with GPUECCCorrected.
func (e *ECC) only(f GPUFields) *ECC {
	if e == nil || f&(GPUECC|GPUECCCorrected) == 0 {
		return nil
	}
	out := *e
	if !f.Has(GPUECC) {
		out.VolatileUncorrected, out.AggregateUncorrected = nil, nil
	}
	if !f.Has(GPUECCCorrected) {
		out.VolatileCorrected = nil
	}
	return &out
}
