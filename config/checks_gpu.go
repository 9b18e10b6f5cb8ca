package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GPUCountConfig configures the gpu_count check.
type GPUCountConfig struct {
	CheckCommon
}

// PCIeLinkConfig configures the pcie_link check.
type PCIeLinkConfig struct {
	CheckCommon
	// MinWidth, when set, lowers the width a device must reach from its own max width to
	// min(max width, MinWidth): 8 accepts a x16 GPU at x8, and leaves an x2 NVSwitch at x2.
	MinWidth int `toml:"min_width"`
	// ExcludeDevices lists PCI addresses ("0000:1a:00.0", as sysfs writes them) never judged,
	// e.g. a network card that sits in a narrower slot on purpose.
	ExcludeDevices []string `toml:"exclude_devices"`
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

// pcieMaxWidth is the widest PCIe link the specification defines (x32).
const pcieMaxWidth = 32

func (pl *PCIeLinkConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	if pl.MinWidth < 0 || pl.MinWidth > pcieMaxWidth {
		add("min_width", " = %d: give a lane count from 1 to %d, such as 8 or 16, or 0 to expect each device's max width", pl.MinWidth, pcieMaxWidth)
	}
	for _, a := range pl.ExcludeDevices {
		if !ValidPCIAddress(a) {
			add("exclude_devices", ": %q is not a PCI address; write it as sysfs does, such as \"0000:1a:00.0\"", a)
		}
	}
	return errs
}

// ValidPCIAddress reports whether s is a PCI function address as sysfs names it under
// /sys/bus/pci/devices: domain:bus:device.function in lower-case hex, "0000:1a:00.0". The
// kernel prints the domain with "%04x" (drivers/pci/probe.c pci_setup_device), so it has 4
// digits, or more without a leading zero (VMD domains: "10000"); NVML's "00000000" is not it.
func ValidPCIAddress(s string) bool {
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || len(dom) < 4 || len(dom) > 8 || (len(dom) > 4 && dom[0] == '0') || !lowerHex(dom) {
		return false
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 || !lowerHex(bus) {
		return false
	}
	dev, fn, ok := strings.Cut(rest, ".")
	if !ok || len(dev) != 2 || !lowerHex(dev) || len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return false
	}
	d, _ := strconv.ParseUint(dev, 16, 8)
	return d < 32
}

func lowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

func (fm *FabricManagerConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	for _, kv := range []struct{ key, val string }{{"binary", fm.Binary}, {"systemctl", fm.Systemctl}} {
		if !strings.HasPrefix(kv.val, "/") {
			add(kv.key, " = %q: give an absolute path: Slurm starts prologs and health checks without PATH", kv.val)
		}
	}
	if strings.TrimSpace(fm.Service) == "" || strings.ContainsAny(fm.Service, " \t\n/") {
		add("service", " = %q: give the systemd unit of Fabric Manager, such as \"nvidia-fabricmanager\"", fm.Service)
	}
	return errs
}
