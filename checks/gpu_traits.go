package checks

import (
	"slices"
	"sync"
)

// What NVML reports for every GPU of a model. A check that finds one of these missing from a
// GPU's reading has not looked at it: it says error for that GPU, naming what is missing,
// never ok ("a check that did not look says ok"). A model not in the table, or a
// trait it does not have, leaves the absence as it is: the feature may really be absent
// (consumer boards, older generations), and the check says so with a skip.

// gpuTraits is what NVML reports for every GPU of one model.
type gpuTraits struct {
	ecc            bool // ECC mode and error counters (nvmlDeviceGetEccMode): data-centre GPUs
	rowRemapping   bool // nvmlDeviceGetRemappedRows: Ampere data-centre GPUs and later
	pageRetirement bool // nvmlDeviceGetRetiredPages: data-centre GPUs before Ampere
	fabric         bool // nvmlDeviceGetGpuFabricInfoV, on a node with NVSwitches: Hopper and later
	// sensors: clocks event reasons, temperature and its thresholds, power limits and
	// persistence mode (gpu_clocks, gpu_thermal, gpu_power_limit, gpu_persistence).
	sensors bool
	// mnnvl: built for multi-node NVLink racks (GB200, GB300 NVL), whose GPUs reach the
	// rack's NVLink switch trays and share memory across trays through IMEX.
	mnnvl bool
	// arch is the architecture, in drain/repair's words (repair.Architectures): which GPUs
	// the driver resets alone (repair.ResetSet).
	arch string
}

// gpuTraitsByModel holds the traits of the models nodecheck knows them for, by the token the
// built-in gpu_models table gives the NVML name (builtinGPUModels). Sources:
//
//   - ECC: NVIDIA ships its data-centre GPUs with ECC ("ECC is enabled by default" on A100,
//     docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt); the captures under shared/corpus read
//     "ECC Mode Current Enabled" on A10, A40, H100 and H200.
//   - Row remapping: "A100 and later" replace rows instead of retiring pages (the same NVIDIA
//     document); the captures show a "Remapped Rows" section on A10, A40, H100, H200 (and on
//     the GeForce RTX 4090, but not on the RTX 5090: consumer boards are left out).
//   - Page retirement: the data-centre GPUs before Ampere (V100, P100, T4), which retire pages
//     after ECC errors (docs.nvidia.com/deploy/dynamic-page-retirement).
//   - Fabric: nvml.h documents nvmlDeviceGetGpuFabricInfo "for Hopper or newer fully
//     supported devices"; the H100 and H200 captures read "Fabric State Completed". A100
//     registers with Fabric Manager without a fabric state NVML can report.
//   - Sensors: nvml.h documents the clocks event reasons "for all fully supported products",
//     the temperature thresholds and power limits "for Kepler or newer fully supported
//     devices" (the data-centre line), persistence mode "for all products" on Linux; the A40,
//     H100 and H200 captures under shared/corpus (nvsmi-q) print every one of them.
//   - Architecture: NVIDIA's data-centre line by generation (Pascal P100; Volta V100; Turing
//     T4; Ampere A100, A800, A40, A30, A16, A10, A10G, A2; Ada Lovelace L40S, L40, L20, L4;
//     Hopper H100, H800, H200, H20, GH200; Blackwell B100, B200, GB200, GB300).
//   - MNNVL: the Grace-Blackwell superchips of NVIDIA's multi-node NVLink racks, "18x compute
//     trays, each with 2 Grace CPUs and 4 Blackwell GPUs" (MNNVL user guide, overview); NVML
//     names them "NVIDIA GB200" (nvidia-smi nvlink -s of a GB200 tray, NVIDIA/k8s-test-infra#371).
var gpuTraitsByModel = map[string]gpuTraits{
	"gb300": {arch: "blackwell", ecc: true, rowRemapping: true, fabric: true, sensors: true, mnnvl: true},
	"gb200": {arch: "blackwell", ecc: true, rowRemapping: true, fabric: true, sensors: true, mnnvl: true},
	"b200":  {arch: "blackwell", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"b100":  {arch: "blackwell", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"gh200": {arch: "hopper", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h200":  {arch: "hopper", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h100":  {arch: "hopper", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h800":  {arch: "hopper", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h20":   {arch: "hopper", ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"a100":  {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a800":  {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a40":   {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a30":   {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a16":   {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a10g":  {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a10":   {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"a2":    {arch: "ampere", ecc: true, rowRemapping: true, sensors: true},
	"l40s":  {arch: "ada", ecc: true, rowRemapping: true, sensors: true},
	"l40":   {arch: "ada", ecc: true, rowRemapping: true, sensors: true},
	"l20":   {arch: "ada", ecc: true, rowRemapping: true, sensors: true},
	"l4":    {arch: "ada", ecc: true, rowRemapping: true, sensors: true},
	"v100":  {arch: "volta", ecc: true, pageRetirement: true, sensors: true},
	"p100":  {arch: "pascal", ecc: true, pageRetirement: true, sensors: true},
	"t4":    {arch: "turing", ecc: true, pageRetirement: true, sensors: true},
}

// traitsOf returns the traits of the GPU model an NVML name names, and the model's token
// ("h100"); no traits and "" for a model the built-in table does not know.
func traitsOf(name string) (gpuTraits, string) {
	table, err := builtinGPUModelTable()
	if err != nil { // the built-in rules are constants, which TestBuiltinGPUModels parses
		return gpuTraits{}, ""
	}
	token := table.modelOf(name)
	return gpuTraitsByModel[token], token
}

// builtinGPUModelTable is the built-in table, parsed on first use and kept: traitsOf asks it
// for every GPU in several checks of a run. It is read only.
var builtinGPUModelTable = sync.OnceValues(func() (gpuModelTable, error) { return newGPUModelTable(nil) })

// GPUArchitecture is the architecture of the GPU model an NVML name names, in drain/repair's
// words ("hopper", "ampere", "volta", ...; repair.Architectures); "" for a model the built-in
// table does not know. The repair step reads it to tell which GPUs the driver resets alone.
func GPUArchitecture(name string) string {
	tr, _ := traitsOf(name)
	return tr.arch
}

// GPUArchitectures lists the architectures GPUArchitecture may give, each once, sorted.
func GPUArchitectures() []string {
	var out []string
	for _, tr := range gpuTraitsByModel {
		out = append(out, tr.arch)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
