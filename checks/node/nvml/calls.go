//go:build cgo

package nvml

// Which NVML calls each fact costs, by go-nvml method name (nvml.Interface and nvml.Device;
// "fabric" is api.fabric, nvmlDeviceGetGpuFabricInfoV). Every reading also makes the calls of
// readingCalls. The tests hold the adapter to this table: asked for one fact, it makes only
// that fact's calls, and a run makes only the calls of the facts its checks judge.
var fieldCalls = map[string][]string{
	"driver_version":      {"SystemGetDriverVersion"},
	"cuda_driver_version": {"SystemGetCudaDriverVersion"},
	"minor_number":        {"GetMinorNumber"},
	"uuid":                {"GetUUID"},
	"name":                {"GetName"},
	"pci_bus_id":          {"GetPciInfo"},
	"serial":              {"GetSerial"},
	"pcie": {"GetCurrPcieLinkWidth", "GetMaxPcieLinkWidth",
		"GetCurrPcieLinkGeneration", "GetMaxPcieLinkGeneration"},
	"fabric":              {"fabric"},
	"ecc":                 {"GetEccMode", "GetTotalEccErrors"},
	"remapped_rows":       {"GetRemappedRows"},
	"retired_pages":       {"GetRetiredPages", "GetRetiredPagesPendingStatus"},
	"nvlinks":             {"GetNvLinkState"},
	"nvlink_errors":       {"GetNvLinkState", "GetNvLinkErrorCounter"},
	"pcie_replay_counter": {"GetPcieReplayCounter"},
	"memory":              {"GetMemoryInfo_v2", "GetMemoryInfo"},
	"compute":             {"GetComputeRunningProcesses"},
	"clock_event_reasons": {"GetCurrentClocksEventReasons", "GetCurrentClocksThrottleReasons"},
	"temperature":         {"GetTemperature", "GetTemperatureThreshold", "GetFieldValues", "GetMarginTemperature"},
	"power":               {"GetEnforcedPowerLimit", "GetPowerManagementDefaultLimit", "GetPowerUsage"},
	"persistence_mode":    {"GetPersistenceMode"},
	"recovery_action":     {"GetFieldValues"},
	"ecc_corrected":       {"GetEccMode", "GetTotalEccErrors"},
}

// readingCalls are made by every reading that initialises NVML, whatever it asks for:
// nvmlInit, nvmlDeviceGetCount, one handle per GPU, nvmlShutdown.
var readingCalls = []string{"Init", "DeviceGetCount", "DeviceGetHandleByIndex", "Shutdown"}
