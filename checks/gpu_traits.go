package checks

import "sync"

// What NVML reports for every GPU of a model. A check that finds one of these missing from a
// GPU's reading has not looked at it: it says error for that GPU, naming what is missing,
// never ok (issue 12: "a check that did not look says ok"). A model not in the table, or a
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
//   - MNNVL: the Grace-Blackwell superchips of NVIDIA's multi-node NVLink racks, "18x compute
//     trays, each with 2 Grace CPUs and 4 Blackwell GPUs" (MNNVL user guide, overview); NVML
//     names them "NVIDIA GB200" (nvidia-smi nvlink -s of a GB200 tray, NVIDIA/k8s-test-infra#371).
var gpuTraitsByModel = map[string]gpuTraits{
	"gb300": {ecc: true, rowRemapping: true, fabric: true, sensors: true, mnnvl: true},
	"gb200": {ecc: true, rowRemapping: true, fabric: true, sensors: true, mnnvl: true},
	"b200":  {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"b100":  {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"gh200": {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h200":  {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h100":  {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h800":  {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"h20":   {ecc: true, rowRemapping: true, fabric: true, sensors: true},
	"a100":  {ecc: true, rowRemapping: true, sensors: true},
	"a800":  {ecc: true, rowRemapping: true, sensors: true},
	"a40":   {ecc: true, rowRemapping: true, sensors: true},
	"a30":   {ecc: true, rowRemapping: true, sensors: true},
	"a16":   {ecc: true, rowRemapping: true, sensors: true},
	"a10g":  {ecc: true, rowRemapping: true, sensors: true},
	"a10":   {ecc: true, rowRemapping: true, sensors: true},
	"a2":    {ecc: true, rowRemapping: true, sensors: true},
	"l40s":  {ecc: true, rowRemapping: true, sensors: true},
	"l40":   {ecc: true, rowRemapping: true, sensors: true},
	"l20":   {ecc: true, rowRemapping: true, sensors: true},
	"l4":    {ecc: true, rowRemapping: true, sensors: true},
	"v100":  {ecc: true, pageRetirement: true, sensors: true},
	"p100":  {ecc: true, pageRetirement: true, sensors: true},
	"t4":    {ecc: true, pageRetirement: true, sensors: true},
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
