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

// GPUModelsConfig configures the gpu_models check.
type GPUModelsConfig struct {
	CheckCommon
	// Models adds rules to the built-in table that names a GPU model token after the NVML
	// device name, each "words=token": "h100=h100", "rtx 4090=rtx4090". A rule matches a
	// name when its words appear one after another among the name's words (see
	// GPUModelWords); the rules given here are tried before the built-in ones, in order.
	Models []string `toml:"models"`
}

func defaultGPUModels() GPUModelsConfig {
	return GPUModelsConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()}}
}

func (gm *GPUModelsConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	for _, r := range gm.Models {
		if _, _, err := ParseGPUModelRule(r); err != nil {
			errs = append(errs, tomlKeyError{path: append(slices.Clip(p), "models"), msg: ": " + err.Error()})
		}
	}
	return errs
}

// GPUModelWords splits a GPU name, a Slurm feature or a Gres type into lower-case words at
// blanks, '-', '_' and '/': "NVIDIA A100-SXM4-80GB" -> nvidia a100 sxm4 80gb,
// "nvidia_h100_80gb_hbm3" -> nvidia h100 80gb hbm3.
func GPUModelWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '\t' || r == '-' || r == '_' || r == '/'
	})
}

// ParseGPUModelRule reads one gpu_models rule, "words=token": "rtx 4090=rtx4090" gives the
// words rtx 4090 and the token rtx4090. The token is what slurm.conf Feature= and Gres types
// call the model: lower-case letters, digits, '.' and '_'.
func ParseGPUModelRule(s string) (words []string, token string, err error) {
	pat, tok, ok := strings.Cut(s, "=")
	if !ok {
		return nil, "", fmt.Errorf("%q is not a rule: write words of the NVML name, '=' and the model token, such as \"h100=h100\" or \"rtx 4090=rtx4090\"", s)
	}
	words = GPUModelWords(pat)
	if len(words) == 0 {
		return nil, "", fmt.Errorf("%q names no words of an NVML name before '='", s)
	}
	token = strings.TrimSpace(tok)
	if token == "" || strings.ToLower(token) != token || strings.ContainsFunc(token, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '.' && r != '_'
	}) {
		return nil, "", fmt.Errorf("%q: the token %q must be lower-case letters, digits, '.' and '_', as a slurm.conf feature (\"h100\")", s, token)
	}
	return words, token, nil
}

// XIDErrorsConfig configures the xid_errors check.
type XIDErrorsConfig struct {
	CheckCommon
	// Dmesg is util-linux dmesg, run as "dmesg --kernel --nopager".
	Dmesg string `toml:"dmesg"`
	// FailXIDs are the XIDs that fail the node (the GPU needs a reset or the node a reboot).
	FailXIDs []int `toml:"fail_xids"`
	// WarnXIDs are XIDs that only warn; an XID in no list warns too. Listed for the reader,
	// and so that a [[group]] can move an XID from fail_xids here.
	WarnXIDs []int `toml:"warn_xids"`
	// IgnoreXIDs are never reported (an application's own XID 13 flood, say).
	IgnoreXIDs []int `toml:"ignore_xids"`
}

// defaultFailXIDs are the XIDs NVIDIA's XID catalog resolves with a GPU reset or a node
// reboot (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Resolution
// Bucket (Immediate Action)" RESET_GPU / RESTART_BM, and the dynamic page retirement page
// https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html for 48, 63, 64):
// 48 double-bit ECC error, 61 and 62 internal micro-controller halt, 63 and 64 ECC page
// retirement or row remapping pending or failed, 74 NVLink error, 79 GPU fallen off the bus,
// 92 high single-bit ECC rate, 94 and 95 contained and uncontained ECC error, 119 and 120
// GSP RPC timeout and GSP error, 140 unrecovered ECC error, 154 GPU recovery action changed
// (reset or reboot required).
func defaultFailXIDs() []int {
	return []int{48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154}
}

// defaultWarnXIDs are XIDs an application usually causes (the same catalog: RESTART_APP):
// 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing, 45
// preemptive cleanup after an earlier error, 68 video processor exception.
func defaultWarnXIDs() []int { return []int{13, 31, 43, 45, 68} }

func defaultXIDErrors() XIDErrorsConfig {
	return XIDErrorsConfig{
		CheckCommon: CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		Dmesg:       "/usr/bin/dmesg",
		FailXIDs:    defaultFailXIDs(),
		WarnXIDs:    defaultWarnXIDs(),
	}
}

// maxXID bounds XID numbers in the config: the catalog's XIDs are below 200.
const maxXID = 1000

func (xe *XIDErrorsConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	if !strings.HasPrefix(xe.Dmesg, "/") {
		add("dmesg", " = %q: give an absolute path: Slurm starts prologs and health checks without PATH", xe.Dmesg)
	}
	seen := map[int]string{}
	for _, l := range []struct {
		key  string
		xids []int
	}{{"fail_xids", xe.FailXIDs}, {"warn_xids", xe.WarnXIDs}, {"ignore_xids", xe.IgnoreXIDs}} {
		for _, x := range l.xids {
			switch prev, dup := seen[x]; {
			case x < 1 || x >= maxXID:
				add(l.key, ": %d is not an XID; give numbers from 1 to %d, as the kernel log prints them (\"NVRM: Xid (PCI:0000:9b:00): 79, ...\")", x, maxXID-1)
			case dup && prev == l.key:
				add(l.key, ": %d is listed twice", x)
			case dup:
				add(l.key, ": %d is also in %s; put each XID in one list", x, prev)
			default:
				seen[x] = l.key
			}
		}
	}
	return errs
}
