package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

const idHostMemoryErrors = "host_memory_errors"

// faultHostMemoryUE is host_memory_errors' row of the remedy table.
const faultHostMemoryUE fault = "host_memory_errors/uncorrectable"

// hostMemoryErrors reads the kernel's EDAC memory controller counters: the machine-check
// memory errors the kernel decoded since boot (Documentation/admin-guide/ras.rst, "EDAC").
// A GPU node's host memory fails like any server's, and a job that lands on a DIMM with
// uncorrectable errors dies with it. NHC's check_hw_mcelog asks mcelog for the same faults.
type hostMemoryErrors struct{}

func (hostMemoryErrors) ID() string { return idHostMemoryErrors }

func (hostMemoryErrors) Description() string {
	return "no uncorrectable host memory error since boot (EDAC memory controllers), correctable ones under a limit"
}

// hostMemoryErrorsConfig is [checks.host_memory_errors].
type hostMemoryErrorsConfig struct {
	config.CheckCommon
	// WarnCorrectable warns when the correctable errors of a memory controller reach it; 0
	// never warns (the kernel's documentation gives no threshold: a site sets its own).
	WarnCorrectable int `toml:"warn_correctable"`
}

func (hostMemoryErrors) Section() config.Section {
	return &hostMemoryErrorsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: []string{"health", "manual"}}}
}

// ValidateSection implements config.SectionValidator.
func (c *hostMemoryErrorsConfig) ValidateSection() []config.Problem {
	if c.WarnCorrectable < 0 {
		return []config.Problem{config.Problemf("warn_correctable", " = %d: give 0 (never warn) or more", c.WarnCorrectable)}
	}
	return nil
}

// edacMC is one memory controller's counters (/sys/devices/system/edac/mc/mcN).
type edacMC struct {
	Name         string // "mc0"
	UE, UENoInfo uint64 // ue_count, ue_noinfo_count
	CE, CENoInfo uint64 // ce_count, ce_noinfo_count
}

// maxEDACControllers bounds the controllers read: one or two per socket.
const maxEDACControllers = 64

func (hostMemoryErrors) Run(ctx context.Context, env *Env) Result {
	set := settings[*hostMemoryErrorsConfig](env.Config, idHostMemoryErrors)
	var mcs []edacMC
	for i := range maxEDACControllers {
		mc := edacMC{Name: "mc" + strconv.Itoa(i)}
		dir := "/sys/devices/system/edac/mc/" + mc.Name + "/"
		var err error
		for _, f := range []struct {
			file string
			dst  *uint64
		}{{"ue_count", &mc.UE}, {"ue_noinfo_count", &mc.UENoInfo}, {"ce_count", &mc.CE}, {"ce_noinfo_count", &mc.CENoInfo}} {
			var b []byte
			b, err = env.Facts.ReadFile(ctx, dir+f.file)
			if err != nil {
				break
			}
			if *f.dst, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
				return Result{Status: StatusError, Summary: fmt.Sprintf("%s%s: %q is not a count", dir, f.file, strings.TrimSpace(string(b))), Err: err}
			}
		}
		if errors.Is(err, fs.ErrNotExist) && i > 0 {
			break // the controllers are numbered from 0 without gaps
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return Result{Status: StatusSkip, Summary: "no EDAC memory controller (/sys/devices/system/edac/mc/mc0): no EDAC driver for this platform loaded, or not recorded in this snapshot"}
		case err != nil:
			return Result{Status: StatusError, Summary: "could not read the EDAC counters of " + mc.Name, Err: err}
		}
		mcs = append(mcs, mc)
	}
	return judgeHostMemoryErrors(mcs, set.WarnCorrectable)
}

// judgeHostMemoryErrors fails on any uncorrectable error and warns at warnCE correctable
// ones (0: never), per memory controller.
func judgeHostMemoryErrors(mcs []edacMC, warnCE int) Result {
	var res Result
	for _, mc := range mcs {
		ue, ce := mc.UE+mc.UENoInfo, mc.CE+mc.CENoInfo
		d := Detail{Device: mc.Name, Observed: fmt.Sprintf("%d uncorrectable, %d correctable", ue, ce), Expected: "0 uncorrectable"}
		switch {
		case ue > 0:
			d.Message = fmt.Sprintf("%d uncorrectable memory errors since boot (%d correctable)", ue, ce)
			failDetail(&d, faultHostMemoryUE)
		case warnCE > 0 && ce >= uint64(warnCE):
			d.Status = StatusWarn
			d.Message = fmt.Sprintf("%d correctable memory errors since boot, warn_correctable = %d", ce, warnCE)
		default:
			d.Status = StatusOK
			d.Message = fmt.Sprintf("no uncorrectable memory error, %d correctable", ce)
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, fmt.Sprintf("no uncorrectable memory error on %s", countNoun(len(mcs), "memory controller", "memory controllers")))
}

func (hostMemoryErrors) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultHostMemoryUE, "the kernel's EDAC counted uncorrectable host memory errors since boot", RemedyService,
			"Linux admin-guide/ras.rst: an uncorrected error is data lost in a DIMM; the DIMM the BMC's or EDAC's log names is to be replaced"},
	}}
}

// Explain is what `nodecheck explain host_memory_errors` says.
func (hostMemoryErrors) Explain() Explanation {
	return Explanation{
		Reads:  []string{"/sys/devices/system/edac/mc/mcN/ue_count, ue_noinfo_count, ce_count and ce_noinfo_count of every memory controller: the errors the kernel's EDAC driver decoded since boot."},
		Passes: "No memory controller counted an uncorrectable error (and none reached warn_correctable correctable ones).",
		Warns:  "A memory controller counted warn_correctable or more correctable errors (off by default).",
		Fails:  "A memory controller counted an uncorrectable error since boot.",
		Skips:  "No EDAC driver is loaded for the platform (no mc0), or a snapshot has no EDAC counters.",
		Errors: "A counter cannot be read or is not a number.",
		Keys: map[string]string{
			"warn_correctable": "Correctable errors of one memory controller since boot from which the check warns; 0 never warns.",
		},
		Fix: []string{
			"edac-util -v (or grep . /sys/devices/system/edac/mc/mc*/csrow*/*_count) and the BMC's event log name the DIMM; replace it.",
		},
	}
}
