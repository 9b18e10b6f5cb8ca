package config

import "time"

// GPUCountConfig configures the gpu_count check.
type GPUCountConfig struct {
	CheckCommon
}

// PCIeLinkConfig configures the pcie_link check.
type PCIeLinkConfig struct {
	CheckCommon
	// MinWidth, when set, is the width every judged device must reach instead of its own max.
	MinWidth int `toml:"min_width"`
}

// FabricManagerConfig configures the fabric_manager check.
type FabricManagerConfig struct {
	CheckCommon
	// Force runs the check even where no NVSwitch is on the PCI bus.
	Force bool `toml:"force"`
	// Binary is nv-fabricmanager, asked for its version.
	Binary string `toml:"binary"`
	// Systemctl asks for the service state.
	Systemctl string `toml:"systemctl"`
	// Service is the Fabric Manager unit.
	Service string `toml:"service"`
}

func defaultGPUCount() GPUCountConfig {
	return GPUCountConfig{CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()}}
}

func defaultPCIeLink() PCIeLinkConfig {
	return PCIeLinkConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()}}
}

func defaultFabricManager() FabricManagerConfig {
	return FabricManagerConfig{
		CheckCommon: CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()},
		Binary:      "/usr/bin/nv-fabricmanager",
		Systemctl:   "/usr/bin/systemctl",
		Service:     "nvidia-fabricmanager",
	}
}
