package checks

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

const idMemory = "memory"

// The ways memory fails: its rows of the remedy table (Faults).
const (
	faultMemorySize fault = "memory/size"
	faultMemoryFree fault = "memory/free"
)

// memory checks the node's RAM and swap sizes and free memory against limits, from
// /proc/meminfo, with NHC's rules (scripts/lbnl_hw.nhc): check_hw_physmem, check_hw_swap,
// check_hw_mem (ranges with a fudge factor), check_hw_mem_free, check_hw_physmem_free and
// check_hw_swap_free. "Free" RAM is NHC's: MemFree + Buffers + Cached. RAM against slurm.conf's
// RealMemory is node_inventory's.
type memory struct{}

func (memory) ID() string { return idMemory }

func (memory) Description() string {
	return "RAM and swap sizes within their ranges and enough memory free (/proc/meminfo, NHC's rules)"
}

// memoryConfig is [checks.memory]. Each range is "MIN MAX [FUDGE]" (FUDGE a size or a
// percentage of the actual size, as NHC's); each free limit a size; "" turns one off.
type memoryConfig struct {
	config.CheckCommon
	Physmem     string `toml:"physmem"`      // check_hw_physmem: MemTotal
	Swap        string `toml:"swap"`         // check_hw_swap: SwapTotal
	TotalMem    string `toml:"total_mem"`    // check_hw_mem: MemTotal + SwapTotal
	MemFree     string `toml:"mem_free"`     // check_hw_mem_free: RAM free + SwapFree
	PhysmemFree string `toml:"physmem_free"` // check_hw_physmem_free: RAM free
	SwapFree    string `toml:"swap_free"`    // check_hw_swap_free: SwapFree
}

// Section: NHC's shipped nhc.conf checks only check_hw_mem_free 1mb, which this keeps: a node
// with under 1 MiB of RAM and swap free cannot start a job. Sizes are the site's to set.
func (memory) Section() config.Section {
	return &memoryConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: config.ModeNames()},
		MemFree: "1MiB"}
}

// ValidateSection implements config.SectionValidator.
func (c *memoryConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for _, k := range c.limits() {
		if _, err := k.parse(); err != nil {
			out = append(out, config.Problemf(k.key, " = %q: %v", k.text, err))
		}
	}
	return out
}

// memLimit is one key of the section: a range or a free limit.
type memLimit struct {
	key, text string
	isRange   bool
}

func (c *memoryConfig) limits() []memLimit {
	return []memLimit{
		{"physmem", c.Physmem, true}, {"swap", c.Swap, true}, {"total_mem", c.TotalMem, true},
		{"mem_free", c.MemFree, false}, {"physmem_free", c.PhysmemFree, false}, {"swap_free", c.SwapFree, false},
	}
}

// memRange is a parsed limit in kB: a range (min, max, fudge) or a floor (min).
type memRange struct {
	min, max  uint64
	fudge     uint64
	fudgePct  uint64
	isPct     bool
	hasMax    bool
	limitText string
}

func (k memLimit) parse() (memRange, error) {
	f := strings.Fields(k.text)
	r := memRange{limitText: k.text}
	kb := func(s string) (uint64, error) {
		b, err := ParseSize(s)
		return b / 1024, err
	}
	var err error
	switch {
	case len(f) == 0:
		return r, nil
	case !k.isRange && len(f) == 1:
		r.min, err = kb(f[0])
		return r, err
	case !k.isRange:
		return r, errors.New(`want one size, such as "1GiB"`)
	case len(f) < 2 || len(f) > 3:
		return r, errors.New(`want "MIN MAX [FUDGE]", such as "1TiB 1TiB 5%"`)
	}
	if r.min, err = kb(f[0]); err != nil {
		return r, err
	}
	if r.max, err = kb(f[1]); err != nil {
		return r, err
	}
	r.hasMax = true
	if len(f) == 3 {
		if p, ok := strings.CutSuffix(f[2], "%"); ok {
			r.fudgePct, err = strconv.ParseUint(p, 10, 8)
			r.isPct = true
			if err != nil || r.fudgePct > 100 {
				return r, fmt.Errorf("fudge %q: a whole percentage, 0%% to 100%%", f[2])
			}
		} else if r.fudge, err = kb(f[2]); err != nil {
			return r, err
		}
	}
	return r, nil
}

// meminfo holds the /proc/meminfo fields the check reads, in kB.
type meminfo struct {
	MemTotal, MemFree, Buffers, Cached, SwapTotal, SwapFree uint64
	hasMem, hasSwap                                         bool
}

// parseMeminfo reads /proc/meminfo's "Key:   N kB" lines. MemTotal is required; a kernel
// without swap support still writes SwapTotal, so its absence is an error too.
func parseMeminfo(b []byte) (meminfo, error) {
	var mi meminfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch key {
		case "MemTotal":
			dst, mi.hasMem = &mi.MemTotal, true
		case "MemFree":
			dst = &mi.MemFree
		case "Buffers":
			dst = &mi.Buffers
		case "Cached":
			dst = &mi.Cached
		case "SwapTotal":
			dst, mi.hasSwap = &mi.SwapTotal, true
		case "SwapFree":
			dst = &mi.SwapFree
		default:
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return mi, fmt.Errorf("meminfo:%d: %s: %q is not a count of kB", n, key, strings.TrimSpace(rest))
		}
		*dst = v
	}
	if !mi.hasMem || !mi.hasSwap {
		return mi, errors.New("meminfo: no MemTotal or no SwapTotal line")
	}
	return mi, nil
}

func (memory) Run(ctx context.Context, env *Env) Result {
	set := settings[*memoryConfig](env.Config, idMemory)
	b, err := env.Facts.ReadFile(ctx, "/proc/meminfo")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "no /proc/meminfo: not recorded in this snapshot, or /proc is not mounted"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read /proc/meminfo", Err: err}
	}
	mi, err := parseMeminfo(b)
	if err != nil {
		return Result{Status: StatusError, Summary: "could not parse /proc/meminfo", Err: err}
	}
	return judgeMemory(mi, set)
}

// judgeMemory judges each limit set against mi.
func judgeMemory(mi meminfo, set *memoryConfig) Result {
	ramFree := mi.MemFree + mi.Buffers + mi.Cached
	actual := map[string]uint64{
		"physmem": mi.MemTotal, "swap": mi.SwapTotal, "total_mem": mi.MemTotal + mi.SwapTotal,
		"mem_free": ramFree + mi.SwapFree, "physmem_free": ramFree, "swap_free": mi.SwapFree,
	}
	var res Result
	for _, k := range set.limits() {
		if strings.TrimSpace(k.text) == "" {
			continue
		}
		r, err := k.parse()
		d := Detail{Device: k.key, Expected: k.text}
		have := actual[k.key]
		d.Observed = fmt.Sprintf("%d kB", have)
		switch {
		case err != nil:
			d.Status, d.Message = StatusError, fmt.Sprintf("%q: %v", k.text, err)
		case !k.isRange && have < r.min:
			d.Message = fmt.Sprintf("%d kB free, want at least %s", have, k.text)
			failDetail(&d, faultMemoryFree)
		case k.isRange:
			fudge := r.fudge
			if r.isPct {
				fudge = r.fudgePct * have / 100
			}
			switch {
			case have+fudge < r.min:
				d.Message = fmt.Sprintf("%d kB, below the minimum of %s", have, k.text)
				failDetail(&d, faultMemorySize)
			case have > r.max+fudge:
				d.Message = fmt.Sprintf("%d kB, above the maximum of %s", have, k.text)
				failDetail(&d, faultMemorySize)
			default:
				d.Status, d.Message = StatusOK, fmt.Sprintf("%d kB, within %s", have, k.text)
			}
		default:
			d.Status, d.Message = StatusOK, fmt.Sprintf("%d kB free, at least %s", have, k.text)
		}
		res.Details = append(res.Details, d)
	}
	if len(res.Details) == 0 {
		return Result{Status: StatusSkip, Summary: "no memory limit set in [checks.memory]"}
	}
	return settleDetails(res, fmt.Sprintf("memory within %s", countNoun(len(res.Details), "limit", "limits")))
}

func (memory) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultMemorySize, "RAM or swap size outside its configured range", RemedyService,
			"NHC check_hw_physmem: RAM missing from a node that had it is a DIMM the firmware mapped out (an uncorrectable error at POST); swap outside its range is configuration, which the admin reads from the message"},
		{faultMemoryFree, "less RAM or swap free than the limit", RemedyReboot,
			"NHC check_hw_mem_free: memory a finished job left held (tmpfs files, leaked shared memory, a kernel leak) comes back with a reboot"},
	}}
}

// Explain is what `nodecheck explain memory` says.
func (memory) Explain() Explanation {
	return Explanation{
		Reads:  []string{"/proc/meminfo: MemTotal, MemFree, Buffers, Cached, SwapTotal, SwapFree."},
		Passes: "Each size set is within its range and each free limit is met.",
		Fails:  "RAM, swap or both together outside a range (after the fudge), or less free than a limit. Free RAM is NHC's: MemFree + Buffers + Cached.",
		Skips:  "No limit is set, or a snapshot has no /proc/meminfo.",
		Errors: "/proc/meminfo cannot be read or lacks MemTotal or SwapTotal.",
		Keys: map[string]string{
			"physmem":      `RAM (MemTotal) range, "MIN MAX [FUDGE]" (check_hw_physmem): sizes with units ("512GiB"), FUDGE a size or a percentage of the actual size that widens the range both ways. RealMemory in slurm.conf is node_inventory's.`,
			"swap":         `Swap (SwapTotal) range, as physmem (check_hw_swap).`,
			"total_mem":    `RAM plus swap range, as physmem (check_hw_mem).`,
			"mem_free":     `Least RAM plus swap free (check_hw_mem_free).`,
			"physmem_free": `Least RAM free (check_hw_physmem_free).`,
			"swap_free":    `Least swap free (check_hw_swap_free).`,
		},
		Fix: []string{
			"free -k shows what the check saw; dmidecode -t memory and the BMC's event log show a DIMM lost at boot.",
		},
	}
}
