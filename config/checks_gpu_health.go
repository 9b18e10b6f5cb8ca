package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GPUMemoryErrorsConfig configures the gpu_memory_errors check: ECC mode, uncorrectable ECC
// errors, row remapping and page retirement, as NVML reports them.
type GPUMemoryErrorsConfig struct {
	CheckCommon
	// ECCOff is what a GPU that has ECC but runs with it off gives: "fail" (the default:
	// NVIDIA ships data-centre GPUs with ECC on, and off it corrupts memory silently),
	// "warn" or "ok".
	ECCOff string `toml:"ecc_off"`
	// ECCOffModels lists GPUs that may run with ECC off whatever ECCOff says, as words of
	// their NVML names matched as in gpu_models ("geforce" matches "NVIDIA GeForce RTX
	// 4090"): workstation and consumer GPUs, which NVIDIA ships with ECC off.
	ECCOffModels []string `toml:"ecc_off_models"`
	// Pending is what a row remapping or page retirement that waits for a GPU reset gives:
	// "fail" (the default: drain, so that the GPU is reset once the node is idle) or "warn".
	Pending string `toml:"pending"`
	// RetiredPagesLimit fails a GPU (pre-Ampere page retirement) with this many retired
	// pages or more, single- and double-bit together. NVIDIA's DCGM fails at 63, "to match
	// the field diag" (the tool that qualifies a GPU for RMA); the InfoROM holds 64.
	RetiredPagesLimit int `toml:"retired_pages_limit"`
}

// Values of ecc_off and pending.
const (
	VerdictFail = "fail"
	VerdictWarn = "warn"
	VerdictOK   = "ok"
)

// DefaultRetiredPagesLimit is retired_pages_limit's default: DCGM_LIMIT_MAX_RETIRED_PAGES in
// NVIDIA's DCGM (common/DcgmGPUHardwareLimits.h, "Max retired pages updated to match the
// field diag"), which its health watch and diagnostic fail at.
const DefaultRetiredPagesLimit = 63

// MaxRetiredPages is how many page retirements a GPU's InfoROM holds
// (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html: "a maximum of
// 64 retirements for the frame buffer").
const MaxRetiredPages = 64

// defaultECCOffModels are the NVML name words of the GPUs NVIDIA ships with ECC off, or
// without ECC: GeForce, TITAN, Quadro and the RTX workstation boards ("NVIDIA RTX A6000").
// "ECC is off by default for Geforce and Quadro(RTX) cards, but for Tesla cards, it is turned
// on by default" (Chaos support, https://support.chaos.com/hc/en-us/articles/24886637113617);
// the RTX 4090 capture (corpus nvsmi/gpud-q-rtx4090x8-535.154.05.txt) reads "ECC Mode Current
// Disabled", the A10 and H100 captures "Enabled".
func defaultECCOffModels() []string { return []string{"geforce", "titan", "quadro", "rtx"} }

func defaultGPUMemoryErrors() GPUMemoryErrorsConfig {
	return GPUMemoryErrorsConfig{
		CheckCommon:       CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()},
		ECCOff:            VerdictFail,
		ECCOffModels:      defaultECCOffModels(),
		Pending:           VerdictFail,
		RetiredPagesLimit: DefaultRetiredPagesLimit,
	}
}

func (me *GPUMemoryErrorsConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	switch me.ECCOff {
	case VerdictFail, VerdictWarn, VerdictOK:
	default:
		add("ecc_off", " = %q: give \"fail\", \"warn\" or \"ok\": what a GPU with ECC off gives", me.ECCOff)
	}
	for _, m := range me.ECCOffModels {
		if len(GPUModelWords(m)) == 0 {
			add("ecc_off_models", ": %q names no words; give words of NVML GPU names, such as \"geforce\" or \"rtx a6000\"", m)
		}
	}
	switch me.Pending {
	case VerdictFail, VerdictWarn:
	default:
		add("pending", " = %q: give \"fail\" or \"warn\": what a row remapping or page retirement waiting for a GPU reset gives", me.Pending)
	}
	if me.RetiredPagesLimit < 1 || me.RetiredPagesLimit > MaxRetiredPages {
		add("retired_pages_limit", " = %d: give a page count from 1 to %d (a GPU retires at most %d pages), such as %d as NVIDIA's DCGM uses",
			me.RetiredPagesLimit, MaxRetiredPages, MaxRetiredPages, DefaultRetiredPagesLimit)
	}
	return errs
}

// NVLinkConfig configures the nvlink check: every NVLink of every GPU is active.
type NVLinkConfig struct {
	CheckCommon
	// ExpectedLinks adds rules to the built-in table of how many NVLinks a GPU model has,
	// each "words=N" with the words of gpu_models rules: "a100 sxm4=12", "h100 pcie=0" (0:
	// NVLink optional, never judged). The rules given here are tried first, in order.
	ExpectedLinks []string `toml:"expected_links"`
	// Exclude lists GPUs, by PCI address as sysfs writes it ("0000:3b:00.0"), or single
	// links of a GPU ("0000:3b:00.0/3"), never judged.
	Exclude []string `toml:"exclude"`
}

// MaxNVLinks is the most NVLinks one GPU has: NVML_NVLINK_MAX_LINKS in nvml.h (18, H100
// and Blackwell).
const MaxNVLinks = 18

func defaultNVLink() NVLinkConfig {
	return NVLinkConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: allModes()}}
}

func (nl *NVLinkConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	for _, r := range nl.ExpectedLinks {
		if _, _, err := ParseNVLinkRule(r); err != nil {
			errs = append(errs, tomlKeyError{path: append(slices.Clip(p), "expected_links"), msg: ": " + err.Error()})
		}
	}
	for _, x := range nl.Exclude {
		if _, _, err := ParseNVLinkExclude(x); err != nil {
			errs = append(errs, tomlKeyError{path: append(slices.Clip(p), "exclude"), msg: ": " + err.Error()})
		}
	}
	return errs
}

// ParseNVLinkRule reads one expected_links rule, "words=N": "a100 sxm4=12" gives the words
// a100 sxm4 and 12 links. N is from 0 (NVLink optional: not judged) to MaxNVLinks.
func ParseNVLinkRule(s string) (words []string, links int, err error) {
	pat, n, ok := strings.Cut(s, "=")
	if !ok {
		return nil, 0, fmt.Errorf("%q is not a rule: write words of the NVML name, '=' and the number of NVLinks, such as \"a100 sxm4=12\", or \"h100 pcie=0\" where NVLink is optional", s)
	}
	words = GPUModelWords(pat)
	if len(words) == 0 {
		return nil, 0, fmt.Errorf("%q names no words of an NVML name before '='", s)
	}
	links, err = strconv.Atoi(strings.TrimSpace(n))
	if err != nil || links < 0 || links > MaxNVLinks {
		return nil, 0, fmt.Errorf("%q: the number of NVLinks must be from 0 to %d (0: NVLink optional, not judged)", s, MaxNVLinks)
	}
	return words, links, nil
}

// ParseNVLinkExclude reads one exclude entry: a PCI address as sysfs writes it
// ("0000:3b:00.0"), link -1, or an address and a link ("0000:3b:00.0/3").
func ParseNVLinkExclude(s string) (addr string, link int, err error) {
	addr, l, hasLink := strings.Cut(s, "/")
	if !ValidPCIAddress(addr) {
		return "", 0, fmt.Errorf("%q: %q is not a PCI address; write it as sysfs does, such as \"0000:3b:00.0\", or \"0000:3b:00.0/3\" for its link 3", s, addr)
	}
	if !hasLink {
		return addr, -1, nil
	}
	link, err = strconv.Atoi(l)
	if err != nil || link < 0 || link >= MaxNVLinks || strconv.Itoa(link) != l {
		return "", 0, fmt.Errorf("%q: the link after '/' must be a number from 0 to %d, as nvidia-smi nvlink -s numbers them", s, MaxNVLinks-1)
	}
	return addr, link, nil
}
