package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idMachineChecks = "machine_checks"

// faultMachineCheckUC is machine_checks' row of the remedy table.
const faultMachineCheckUC fault = "machine_checks/uncorrected"

// machineChecks judges the x86 machine checks since boot: the errors the CPUs' machine-check
// banks reported, in their caches, interconnect, memory controllers and the memory behind
// them (Documentation/arch/x86/x86_64/machinecheck.rst). It reads them where the kernel
// prints them (the kernel log, read once for the run with xid_errors) and, where mcelog is
// installed, asks its daemon (`mcelog --client`, as LBNL NHC's check_hw_mcelog does).
// host_memory_errors counts the memory errors EDAC decoded; this check covers the rest of
// the CPU, and the memory errors of nodes without an EDAC driver.
type machineChecks struct{}

func (machineChecks) ID() string { return idMachineChecks }

func (machineChecks) Description() string {
	return "no uncorrected x86 machine check since boot (the kernel log, and mcelog's daemon where installed); corrected ones warn"
}

// machineChecksConfig is [checks.machine_checks].
type machineChecksConfig struct {
	config.CheckCommon
	// WarnCorrected warns from this many corrected machine checks since boot; 0 never warns.
	WarnCorrected int `toml:"warn_corrected"`
	// Dmesg is util-linux dmesg; the run reads the log once where it equals xid_errors'.
	Dmesg string `toml:"dmesg"`
	// Mcelog is mcelog's path; "" never asks it. Not installed: the kernel log alone.
	Mcelog string `toml:"mcelog"`
}

func (machineChecks) Section() config.Section {
	return &machineChecksConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		WarnCorrected: 1, Dmesg: "/usr/bin/dmesg", Mcelog: "/usr/sbin/mcelog"}
}

// ValidateSection implements config.SectionValidator.
func (c *machineChecksConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	if c.WarnCorrected < 0 {
		out = append(out, config.Problemf("warn_corrected", " = %d: give 0 (never warn) or more", c.WarnCorrected))
	}
	if !path.IsAbs(c.Dmesg) {
		out = append(out, config.Problemf("dmesg", " = %q: give an absolute path: hooks have no PATH", c.Dmesg))
	}
	if c.Mcelog != "" && !path.IsAbs(c.Mcelog) {
		out = append(out, config.Problemf("mcelog", " = %q: give an absolute path (hooks have no PATH), or \"\" never to ask mcelog", c.Mcelog))
	}
	return out
}

// machineCheckDir is where an x86 kernel with machine-check support lists its CPUs'
// machine-check settings (Documentation/ABI/testing/sysfs-mce and
// arch/x86/kernel/cpu/mce/core.c mce_device_create: machinecheckN/check_interval).
const machineCheckDir = "/sys/devices/system/machinecheck/machinecheck0"

// mceFacts is what machine_checks judges.
type mceFacts struct {
	Kernel mceKernelLog
	// KernelErr says why the kernel log was not read; "" when it was. KernelCut says the
	// log was read only in part.
	KernelErr, KernelCut string
	// Mcelog is mcelog's answer; nil where it was not asked (not installed, or mcelog =
	// ""). McelogErr says why an answer is no judgement.
	Mcelog    *mcelogReport
	McelogErr string
}

func (machineChecks) Run(ctx context.Context, env *Env) Result {
	set := settings[*machineChecksConfig](env.Config, idMachineChecks)
	switch _, err := env.Facts.ReadFile(ctx, machineCheckDir+"/check_interval"); {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "no " + machineCheckDir + ": no x86 machine-check architecture here (another CPU architecture, a kernel booted with mce=off, a VM without MCA), or not recorded in this snapshot"}
	case err != nil && ctx.Err() != nil:
		return Result{Status: StatusFail, Summary: "timed out reading " + machineCheckDir, Err: err, Remedy: remedyOf(faultTimeout)}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read " + machineCheckDir + "/check_interval", Err: err}
	}
	var f mceFacts
	out, res, ok := runKernelLog(ctx, env, set.Dmesg)
	switch {
	case !ok && res.Status == StatusFail:
		return res // the deadline
	case !ok && errors.Is(res.Err, node.ErrNotRecorded):
		return Result{Status: StatusSkip, Summary: "the snapshot did not record the kernel log (" + set.Dmesg + "): no machine checks to judge in this replay", Err: res.Err}
	case !ok:
		f.KernelErr = "cannot read the kernel log (" + set.Dmesg + "): " + text.OneLine(errText(res), 160)
	default:
		f.Kernel = scanMCE(out.Stdout)
		if out.Truncated {
			f.KernelCut = "only " + strconv.Itoa(len(out.Stdout)>>10) + " KiB of the kernel log were read: machine checks in the rest not seen"
		}
	}
	if set.Mcelog != "" {
		var res Result
		if f.Mcelog, f.McelogErr, res = askMcelog(ctx, env, set.Mcelog); res.Status != "" {
			return res
		}
	}
	return judgeMachineChecks(f, set.WarnCorrected)
}

// runKernelLog is the run's reading of the kernel log: the history step's where it read the
// log with the same dmesg (xid_errors' settings), so that dmesg runs once; else its own.
func runKernelLog(ctx context.Context, env *Env, dmesg string) (node.CmdResult, Result, bool) {
	if kl := env.history.kernelLogRead(); kl != nil && settings[*xidErrorsConfig](env.Config, idXIDErrors).Dmesg == dmesg {
		return kl.out, kl.res, kl.ok
	}
	return readKernelLog(ctx, env, dmesg)
}

// errText is why res could not look: its error, else its summary.
func errText(res Result) string {
	if res.Err != nil {
		return res.Err.Error()
	}
	return res.Summary
}

// askMcelog runs `mcelog --client`. report is nil where mcelog is not installed (or not
// recorded in a snapshot); why says why an answer is no judgement; res is set where the
// check ends here (the deadline).
func askMcelog(ctx context.Context, env *Env, mcelog string) (report *mcelogReport, why string, res Result) {
	out, err := env.Facts.Exec(ctx, []string{mcelog, "--client"})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, "", Result{Status: StatusFail, Summary: "timed out asking " + mcelog + " --client", Err: err, Remedy: remedyOf(faultTimeout)}
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", Result{}
	case err != nil:
		return &mcelogReport{}, "run " + mcelog + " --client: " + text.OneLine(err.Error(), 160), Result{}
	}
	rep, err := parseMcelogClient(out.Stdout, out.Stderr)
	switch {
	case err != nil:
		return &rep, text.OneLine(err.Error(), 160), Result{}
	case out.ExitCode != 0 && rep.NoDaemon == "":
		return &rep, fmt.Sprintf("%s --client exited %d", mcelog, out.ExitCode), Result{}
	}
	return &rep, "", Result{}
}

// mceGroup is the records of one CPU and bank with one status class.
type mceGroup struct {
	rec mceRecord // the first
	n   int
}

// judgeMachineChecks fails on an uncorrected machine check (one detail per CPU and bank, and
// per memory location mcelog counts one in), warns from warnCorrected corrected ones (0:
// never), and cannot decide where a source it has could not be read.
func judgeMachineChecks(f mceFacts, warnCorrected int) Result {
	res := Result{Expected: "no uncorrected machine check", Observed: mceSources(f)}
	if f.KernelErr != "" {
		res.Details = append(res.Details, Detail{Device: "kernel log", Status: StatusError, Message: f.KernelErr})
	}
	var groups []mceGroup
	corrected := 0
	for _, r := range f.Kernel.Records {
		if !r.uncorrected() {
			corrected++
			continue
		}
		i := slices.IndexFunc(groups, func(g mceGroup) bool { return g.rec.CPU == r.CPU && g.rec.Bank == r.Bank })
		if i < 0 {
			groups = append(groups, mceGroup{rec: r})
			i = len(groups) - 1
		}
		groups[i].n++
	}
	for _, g := range groups {
		d := Detail{Device: fmt.Sprintf("CPU %d bank %d", g.rec.CPU, g.rec.Bank),
			Message:  fmt.Sprintf("uncorrected machine check (MCi_STATUS %016x: %s)", g.rec.Status, g.rec.words()),
			Observed: fmt.Sprintf("%s in the kernel log", countNoun(g.n, "uncorrected record", "uncorrected records")), Expected: res.Expected}
		if g.n > 1 {
			d.Message += fmt.Sprintf(", %d times", g.n)
		}
		failDetail(&d, faultMachineCheckUC)
		res.Details = append(res.Details, d)
	}
	mcelogCE := mcelogDetails(&res, f)
	res.Details = append(res.Details, correctedDetail(f.Kernel, corrected, mcelogCE, warnCorrected)...)
	if f.KernelCut != "" {
		res.Details = append(res.Details, Detail{Device: "kernel log", Status: StatusWarn, Message: f.KernelCut})
	}
	return settleDetails(res, "no machine check since boot ("+mceSources(f)+")")
}

// mcelogDetails adds mcelog's failing DIMMs, or why its answer is no judgement, to res and
// returns the corrected errors it counted.
func mcelogDetails(res *Result, f mceFacts) uint64 {
	if f.McelogErr != "" {
		res.Details = append(res.Details, Detail{Device: "mcelog", Status: StatusError, Message: f.McelogErr})
		return 0
	}
	if f.Mcelog == nil {
		return 0
	}
	var ce uint64
	for _, m := range f.Mcelog.DIMMs {
		ce += m.CE
		if m.UC == 0 {
			continue
		}
		d := Detail{Device: "mcelog " + m.Name, Message: fmt.Sprintf("%d uncorrected memory errors since mcelog started (%d corrected)", m.UC, m.CE),
			Observed: fmt.Sprintf("%d uncorrected", m.UC), Expected: "0 uncorrected"}
		failDetail(&d, faultMachineCheckUC)
		res.Details = append(res.Details, d)
	}
	return ce
}

// correctedDetail is the one detail of the corrected machine checks, if any were seen:
// kernel records, mcelog's counts, CMCI storms, and "Machine check events logged" notices
// where the kernel printed no record (a decoder took them: their status is not in the log).
func correctedDetail(k mceKernelLog, records int, mcelogCE uint64, warnAt int) []Detail {
	var parts []string
	n := uint64(records)
	if records > 0 {
		parts = append(parts, countNoun(records, "corrected record", "corrected records")+" in the kernel log")
	}
	if mcelogCE > 0 {
		parts = append(parts, fmt.Sprintf("%d corrected memory errors counted by mcelog", mcelogCE))
		n = max(n, mcelogCE)
	}
	if k.Storms > 0 {
		parts = append(parts, countNoun(k.Storms, "CMCI storm", "CMCI storms")+" (corrected errors too many to take one by one)")
		n = max(n, uint64(k.Storms))
	}
	if len(k.Records) == 0 && k.Logged > 0 {
		parts = append(parts, fmt.Sprintf("%d \"Machine check events logged\" without a record in the log (mcelog, rasdaemon or EDAC took them)", k.Logged))
		n = max(n, uint64(k.Logged))
	}
	if len(parts) == 0 {
		return nil
	}
	d := Detail{Device: "corrected", Status: StatusOK, Message: strings.Join(parts, "; "), Observed: fmt.Sprintf("at least %d", n)}
	if warnAt > 0 && n >= uint64(warnAt) {
		d.Status, d.Expected = StatusWarn, fmt.Sprintf("under warn_corrected = %d", warnAt)
	}
	return []Detail{d}
}

// mceSources names what the check read: "kernel log, mcelog --client".
func mceSources(f mceFacts) string {
	var s []string
	if f.KernelErr == "" {
		s = append(s, "kernel log")
	}
	switch {
	case f.Mcelog == nil:
	case f.McelogErr != "":
	case f.Mcelog.NoDaemon != "":
		s = append(s, "mcelog installed, no daemon answers: "+f.Mcelog.NoDaemon)
	default:
		s = append(s, "mcelog --client")
	}
	if len(s) == 0 {
		return "no source read"
	}
	return strings.Join(s, ", ")
}

func (machineChecks) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultMachineCheckUC, "the kernel log holds an uncorrected x86 machine check since boot (MCi_STATUS.UC set), or mcelog counted an uncorrected memory error", RemedyService,
			"Intel SDM vol. 3B ch. 16 and AMD APM vol. 2 ch. 9: UC means the hardware did not correct the error; the bank and the decoder (mcelog --ascii, rasdaemon, the BMC's log) name the CPU, cache, link or DIMM to replace"},
	}}
}

// Explain is what `nodecheck explain machine_checks` says.
func (machineChecks) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/sys/devices/system/machinecheck/machinecheck0/check_interval: that the kernel has x86 machine checks at all.",
			"The kernel log since boot (dmesg --kernel --nopager, the run's one reading, which xid_errors shares): each \"CPU N: Machine Check...: Bank B: STATUS\" (the kernel, Intel EDAC) or \"CPU:N (...) MCB_STATUS[...]: 0xSTATUS\" (AMD EDAC) line, whose MCi_STATUS UC bit says uncorrected; \"Machine check events logged\"; \"CMCI storm detected\".",
			"Where mcelog is installed: mcelog --client, as LBNL NHC's check_hw_mcelog runs it: the daemon's corrected and uncorrected memory error counts per DIMM. No daemon running: the kernel log alone.",
		},
		Passes: "No machine check since boot, or corrected ones under warn_corrected.",
		Warns:  "warn_corrected or more corrected machine checks, CMCI storms, or \"Machine check events logged\" notices whose records went to a decoder; the kernel log read only in part.",
		Fails:  "An uncorrected machine check in the kernel log (per CPU and bank), or a DIMM mcelog counted an uncorrected error on.",
		Skips:  "Not an x86 kernel with machine checks (no /sys/devices/system/machinecheck: an Arm node, mce=off, a VM); a snapshot without the kernel log.",
		Errors: "The kernel log cannot be read (dmesg missing, kernel.dmesg_restrict), or mcelog --client answers what the check does not understand (its daemon refuses a user who is not root).",
		Keys: map[string]string{
			"warn_corrected": "Corrected machine checks since boot from which the check warns; 0 never warns.",
			"dmesg":          "util-linux dmesg's absolute path; the run reads the log once where it equals [checks.xid_errors] dmesg.",
			"mcelog":         `mcelog's absolute path; "" never asks mcelog.`,
		},
		Fix: []string{
			"dmesg | grep -i -e 'hardware error' -e 'machine check' shows the records; mcelog --ascii (Intel) or ras-mc-ctl --errors (rasdaemon) decodes the bank and status into the part: a core, a cache, a link or a DIMM.",
			"An uncorrected error: open a case with the vendor and replace the part the decoder and the BMC's event log name (ipmitool sel elist).",
			"Corrected errors that keep coming (a CMCI storm): the same part is failing; plan its replacement.",
		},
	}
}
