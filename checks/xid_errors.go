package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/xidcatalog"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idXIDErrors = "xid_errors"

// The ways xid_errors fails: its rows of the remedy table (Faults).
const (
	faultXIDReset     fault = "xid_errors/reset"
	faultXIDResetSoon fault = "xid_errors/reset_when_convenient"
	faultXIDReboot    fault = "xid_errors/reboot"
	faultXIDSupport   fault = "xid_errors/contact_support"
	faultXIDSoftware  fault = "xid_errors/software"
	faultXID154Reset  fault = "xid_errors/recovery_reset"
	faultXID154Reboot fault = "xid_errors/recovery_reboot"
)

// xidErrors reads the NVIDIA XID events in the kernel log (dmesg) and judges them over time,
// from the node's history: an event counts once across runs (dmesg shows every XID since
// boot at every run); an XID NVIDIA's XID catalog resolves with a GPU reset or a reboot fails
// its GPU until the GPU is reset (reset-class) or the node reboots (new boot id), or an admin
// clears it, even once the kernel log no longer shows it; application XIDs warn, and fail
// only when they repeat on one GPU (NVSentinel's repeat rules). Without a history (a snapshot
// replay without --state-dir) it judges the kernel log since boot by number, as before: the
// fail_xids fail, the others warn. The kernel log belongs to the node, not to a job, so the
// check runs in health and manual mode only, and never blames the next job's prolog for what
// an earlier job met.
type xidErrors struct{}

// observes: the kernel log's XIDs, and NVML's GPUs to name them by UUID and serial.
func (xidErrors) observes() observed { return observed{kernelLog: true, gpus: true} }

// judgementRemedy is an XID's remedy by the catalog (remedyForXID), as the same XID in the
// kernel log since boot gets.
func (xidErrors) judgementRemedy(j history.Judgement) Remedy {
	return remedyForXID(j.XID, j.XIDMessage)
}

func (xidErrors) ID() string { return idXIDErrors }

func (xidErrors) Description() string {
	return "no NVIDIA XID in the kernel log since boot that NVIDIA's XID catalog resolves with a node action (fail_xids; 144-150 and 154 by their message); other XIDs warn"
}

// GPUFields implements gpuFactsUser: the GPUs' bus ids, to name the GPU of each XID, and
// the identity the history step records them under (UUID and serial: a GPU moved or
// replaced is not confused with its slot).
func (xidErrors) GPUFields() node.GPUFields {
	return node.GPUPCIBusID | historyGPUIdentity
}

// xidErrorsConfig is [checks.xid_errors]. An XID is judged by the list it is in: an XID in
// a list the admin set (one that is not its built-in default) is taken out of the lists
// left at their defaults, so that `ignore_xids = [13]` alone ignores XID 13 although the
// built-in warn_xids holds it; two lists the admin set must not share an XID (see
// xidVerdicts).
type xidErrorsConfig struct {
	config.CheckCommon
	// Dmesg is util-linux dmesg, run as "dmesg --kernel --nopager".
	Dmesg string `toml:"dmesg"`
	// FailXIDs are the XIDs that fail the node (the GPU needs a reset, the node a reboot, or
	// a person must act); by default those NVIDIA's catalog resolves so (xid_catalog.go).
	FailXIDs []int `toml:"fail_xids"`
	// WarnXIDs are XIDs that only warn; an XID in no list warns too. Listed for the reader,
	// and so that a [[group]] can move an XID from fail_xids here.
	WarnXIDs []int `toml:"warn_xids"`
	// IgnoreXIDs are never reported (an application's own XID 13 flood, say).
	IgnoreXIDs []int `toml:"ignore_xids"`
	// RebootXIDs are the fail_xids only a reboot ends (a GPU reset cannot reach a GPU that
	// fell off the bus); the other fail_xids also end with a GPU reset or driver reload.
	RebootXIDs []int `toml:"reboot_xids"`
	// RecentWindow is how long an XID that does not fail warns after it was seen.
	RecentWindow time.Duration `toml:"recent_window"`
	// The repeat rules (NVSentinel's health-events-analyzer): bursts of an XID on one GPU
	// within RepeatWindow that fail it; 0 turns a rule off.
	RepeatXID13SameUnit int           `toml:"repeat_xid13_same_unit"`
	RepeatXID31         int           `toml:"repeat_xid31"`
	RepeatAny           int           `toml:"repeat_any"`
	RepeatWindow        time.Duration `toml:"repeat_window"`
}

// Section runs the check in health and manual modes only: the kernel log is the node's,
// not a job's.
func (xidErrors) Section() config.Section {
	r := history.DefaultRules()
	return &xidErrorsConfig{
		CheckCommon:  config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		Dmesg:        "/usr/bin/dmesg",
		FailXIDs:     defaultFailXIDs(),
		WarnXIDs:     defaultWarnXIDs(),
		IgnoreXIDs:   defaultIgnoreXIDs(),
		RebootXIDs:   defaultRebootXIDs(),
		RecentWindow: r.RecentXIDs,
		// history.DefaultRules' three repeat rules, in order, and their common window.
		RepeatXID13SameUnit: r.Repeats[0].Count, RepeatXID31: r.Repeats[1].Count, RepeatAny: r.Repeats[2].Count,
		RepeatWindow: r.Repeats[0].Window,
	}
}

// rules puts the section onto the history's defaults: the fail_xids are the sticky XIDs
// (those in reboot_xids only a reboot ends), warn_xids the application XIDs, ignore_xids
// ignored, the XIDs the catalog resolves by their message (154, 144-150) and no list holds
// decoded per record, with the repeat counts and windows of the section.
func (xe *xidErrorsConfig) rules(r history.Rules) history.Rules {
	r.ResetXIDs, r.RebootXIDs, r.AppXIDs, r.IgnoreXIDs = nil, nil, nil, nil
	v := xe.xidVerdicts()
	for _, x := range slices.Sorted(maps.Keys(v)) {
		switch v[x] {
		case StatusFail:
			if slices.Contains(xe.RebootXIDs, x) {
				r.RebootXIDs = append(r.RebootXIDs, x)
			} else {
				r.ResetXIDs = append(r.ResetXIDs, x)
			}
		case StatusWarn:
			r.AppXIDs = append(r.AppXIDs, x)
		case StatusSkip:
			r.IgnoreXIDs = append(r.IgnoreXIDs, x)
		}
	}
	r.Decode = func(xid int, msg, loc string) history.XIDClass {
		if !xidDecoded(xid) {
			return history.XIDWarn
		}
		return xidMessageClass(xid, msg, loc)
	}
	r.RecentXIDs = xe.RecentWindow
	r.Repeats = slices.Clone(r.Repeats)
	for i, n := range []int{xe.RepeatXID13SameUnit, xe.RepeatXID31, xe.RepeatAny} {
		r.Repeats[i].Count, r.Repeats[i].Window = n, xe.RepeatWindow
	}
	return r
}

// maxXID bounds XID numbers in the config: the catalog's XIDs are below 200, and the kernel
// log parser (history.ParseXIDLine) reads 1 to 999.
const maxXID = 1000

// xidList is one of the three lists, and whether the admin set it: a list that differs
// from its built-in default (as a set) is the admin's.
type xidList struct {
	key    string
	xids   []int
	status Status // StatusFail, StatusWarn, or StatusSkip for ignored
	set    bool
}

func (xe *xidErrorsConfig) lists() []xidList {
	same := func(a, b []int) bool {
		return slices.Equal(slices.Compact(slices.Sorted(slices.Values(a))), slices.Compact(slices.Sorted(slices.Values(b))))
	}
	return []xidList{
		{"fail_xids", xe.FailXIDs, StatusFail, !same(xe.FailXIDs, defaultFailXIDs())},
		{"warn_xids", xe.WarnXIDs, StatusWarn, !same(xe.WarnXIDs, defaultWarnXIDs())},
		{"ignore_xids", xe.IgnoreXIDs, StatusSkip, !same(xe.IgnoreXIDs, defaultIgnoreXIDs())},
	}
}

// xidVerdicts maps each listed XID to its status: StatusFail, StatusWarn, or StatusSkip for
// an ignored one; an XID not in the map warns, or is judged by its message (xidStatus). A
// list the admin set wins over one left at its built-in default; ValidateSection refuses an
// XID in two lists the admin set.
func (xe *xidErrorsConfig) xidVerdicts() map[int]Status {
	out := map[int]Status{}
	for _, adminFirst := range []bool{true, false} {
		for _, l := range xe.lists() {
			if l.set != adminFirst {
				continue
			}
			for _, x := range l.xids {
				if _, taken := out[x]; !taken {
					out[x] = l.status
				}
			}
		}
	}
	return out
}

// ValidateSection implements config.SectionValidator.
func (xe *xidErrorsConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	add := func(key, format string, args ...any) { errs = append(errs, config.Problemf(key, format, args...)) }
	if !strings.HasPrefix(xe.Dmesg, "/") {
		add("dmesg", " = %q: give an absolute path: Slurm starts prologs and health checks without PATH", xe.Dmesg)
	}
	for _, x := range xe.RebootXIDs {
		if x < 1 || x >= maxXID {
			add("reboot_xids", ": %d is not an XID; give numbers from 1 to %d", x, maxXID-1)
		}
	}
	if xe.RecentWindow < 0 {
		add("recent_window", ` = "%s": give a duration of 0 (no warning) or more, such as "24h"`, xe.RecentWindow)
	}
	for _, k := range []struct {
		key string
		n   int
	}{{"repeat_any", xe.RepeatAny}, {"repeat_xid13_same_unit", xe.RepeatXID13SameUnit}, {"repeat_xid31", xe.RepeatXID31}} {
		if k.n < 0 {
			add(k.key, " = %d: give a count of bursts, or 0 to turn the rule off", k.n)
		}
	}
	if xe.RepeatWindow <= 0 {
		add("repeat_window", ` = "%s": give a window such as "24h"`, xe.RepeatWindow)
	}
	setIn := map[int]string{} // the first list the admin set that holds each XID
	for _, l := range xe.lists() {
		inList := map[int]bool{}
		for _, x := range l.xids {
			prev, inSet := setIn[x]
			if x < 1 || x >= maxXID {
				add(l.key, ": %d is not an XID; give numbers from 1 to %d, as the kernel log prints them (\"NVRM: Xid (PCI:0000:9b:00): 79, ...\")", x, maxXID-1)
				continue
			}
			switch {
			case inList[x]:
				add(l.key, ": %d is listed twice", x)
			case inSet && l.set:
				add(l.key, ": %d is also in %s; put each XID in one list", x, prev)
			case l.set:
				setIn[x] = l.key
			}
			inList[x] = true
		}
	}
	return errs
}

// xidStatus is the verdict of one XID event: its list's, else by its message for an XID the
// catalog resolves by its message (154, 144-150), else a warning.
func xidStatus(verdicts map[int]Status, xid int, msg string) Status {
	if st, ok := verdicts[xid]; ok {
		return st
	}
	if xidDecoded(xid) {
		return xidMessageStatus(xid, msg)
	}
	return StatusWarn
}

// nvmlNoLibrary is GPUInventory.Init on a node without the NVIDIA driver's libnvidia-ml.
const nvmlNoLibrary = "ERROR_LIBRARY_NOT_FOUND"

// xidCount is the events of one XID on one GPU.
type xidCount struct {
	bus     string
	xid     int
	n       int
	message string // of the first event
	status  Status
}

func (xidErrors) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*xidErrorsConfig](env.Config, idXIDErrors)
	if _, err := xidcatalog.Load(); err != nil {
		return Result{Status: StatusError, Summary: "the built-in XID catalog does not parse: " + text.OneLine(err.Error(), 160) + " (a damaged build: reinstall nodecheck)", Err: err}
	}
	inv, invErr := env.Facts.GPUs(ctx)
	if invErr == nil && inv.Init == nvmlNoLibrary {
		return Result{Status: StatusSkip, Summary: "no NVIDIA driver here (NVML " + nvmlNoLibrary + "): no XIDs to read"}
	}
	var out node.CmdResult
	var res Result
	var ok bool
	if kl := env.history.kernelLogRead(); kl != nil {
		out, res, ok = kl.out, kl.res, kl.ok // the history step read it for this run
	} else {
		out, res, ok = readKernelLog(ctx, env, cfg.Dmesg)
	}
	h, why, usable := env.history.usable("XIDs over time")
	if usable {
		return judgeXIDHistory(env.history, h.JudgeXIDs(env.history.now, cfg.rules(history.DefaultRules())), out, res, ok)
	}
	if !ok {
		return res
	}
	var gpus map[string]node.GPU
	if invErr == nil {
		gpus = xidGPUs(inv)
	}
	sinceBoot := judgeXIDs(history.ScanKernelLog(out.Stdout).XIDs, kernelLogCut(out), cfg.xidVerdicts(), gpus)
	if why.Status == StatusError && sinceBoot.Status != StatusFail {
		// The kernel log since boot shows nothing that fails, but an XID that holds until a
		// reset or reboot may have left it (dmesg --clear, a full ring buffer), and only the
		// history would know: the check could not look.
		why.Summary += "; the kernel log since boot: " + sinceBoot.Summary
		return why
	}
	return sinceBoot
}

// judgeXIDHistory is the result of the XID judgements js over time. When the kernel log
// could not be read this run (kl the result saying why), what the history already holds
// still fails a GPU; anything less is not a judgement, and kl is returned.
func judgeXIDHistory(r *runHistory, js []history.Judgement, out node.CmdResult, kl Result, read bool) Result {
	res := r.overTimeResult(js, xidErrors{}.judgementRemedy, "no XID in force on "+countNoun(len(js), "GPU", "GPUs")+" (history of this boot and the kernel log)", "no reset- or reboot-class XID in force, no XID repeating beyond its rule")
	if !read {
		if res.Status != StatusFail {
			return kl
		}
		res.Summary += "; the kernel log was not read this run: " + kl.Summary
		return res
	}
	if cut := kernelLogCut(out); cut != "" {
		// What was read still fails a GPU; a cut log only adds a warning.
		res.Summary += "; " + cut
		res.Details = append(res.Details, kernelLogCutDetail(cut, out))
		if StatusWarn.Worse(res.Status) {
			res.Status = StatusWarn
		}
	}
	return res
}

// kernelLogCut says how the kernel log was read only in part; "" when it was read whole.
// dmesg's output keeps its newest KernelLogLimit bytes (node.KeepsTail); a snapshot recorded
// before nodecheck kept the newest part has the oldest, and says so (no CutFront).
func kernelLogCut(out node.CmdResult) string {
	kib := strconv.Itoa(len(out.Stdout) >> 10)
	switch {
	case !out.Truncated:
		return ""
	case out.CutFront:
		return "only the kernel log's newest " + kib + " KiB were read (it is longer), earlier XIDs not read"
	}
	return "the kernel log was cut at " + kib + " KiB, later XIDs not read"
}

// kernelLogCutDetail is the warning detail of a kernel log read in part (cut from
// kernelLogCut).
func kernelLogCutDetail(cut string, out node.CmdResult) Detail {
	return Detail{Device: "kernel log", Status: StatusWarn, Message: cut,
		Observed: strconv.Itoa(len(out.Stdout)>>10) + " KiB read", Expected: "the whole kernel log since boot"}
}

// readKernelLog runs dmesg for the kernel log since boot. ok is false, with the result to
// return, when it cannot be read: the deadline (a fail), dmesg missing or failing (an error:
// the check could not look), or a snapshot that did not record it (a skip that says so:
// the replay does not have the fact).
func readKernelLog(ctx context.Context, env *Env, dmesg string) (node.CmdResult, Result, bool) {
	argv := []string{dmesg, "--kernel", "--nopager"}
	out, err := env.Facts.Exec(ctx, argv)
	switch {
	case err != nil && ctx.Err() != nil:
		return out, Result{Status: StatusFail, Summary: "timed out reading the kernel log with " + dmesg, Err: err, Remedy: remedyOf(faultTimeout)}, false
	case errors.Is(err, node.ErrNotRecorded):
		// The replay lacks the fact; the node it was recorded on may well have dmesg.
		return out, Result{Status: StatusSkip, Summary: "the snapshot did not record the kernel log (" + dmesg +
			"): no XIDs to judge in this replay; nodecheck snapshot records it on a node whose dmesg it can run", Err: err}, false
	case errors.Is(err, fs.ErrNotExist):
		return out, Result{Status: StatusError, Summary: "cannot read the kernel log: " + text.OneLine(err.Error(), 160) +
			" (install util-linux or set checks.xid_errors.dmesg)", Err: err}, false
	case err != nil:
		return out, Result{Status: StatusError, Summary: "run " + dmesg + ": " + text.OneLine(err.Error(), 160), Err: err}, false
	case out.ExitCode != 0:
		why := text.OneLine(out.Stderr, 160)
		if why == "" {
			why = "no message"
		}
		// dmesg: read kernel buffer failed: Operation not permitted (kernel.dmesg_restrict=1
		// and not root).
		err := fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), out.ExitCode, why)
		return out, Result{Status: StatusError, Summary: fmt.Sprintf("cannot read the kernel log: %s exited %d: %s", dmesg, out.ExitCode, why), Err: err}, false
	}
	return out, Result{}, true
}

// judgeXIDs judges the XID lines of the kernel log by the verdict of each XID (see
// xidVerdicts: ignored ones are left out, XIDs in no list warn); cut says how the log was
// read only in part (kernelLogCut; "" when whole). gpus are NVML's GPUs by the driver's bus
// id (xidGPUs), which name the GPU of an XID.
func judgeXIDs(xids []history.XIDLine, cut string, verdicts map[int]Status, gpus map[string]node.GPU) Result {
	var counts []xidCount
	for _, ev := range xids {
		st := xidStatus(verdicts, ev.XID, ev.Message)
		if st == StatusSkip {
			continue
		}
		// One row per GPU, XID and verdict: an NVLink5 XID may be fatal once and not the next time.
		i := slices.IndexFunc(counts, func(c xidCount) bool { return c.bus == ev.Bus && c.xid == ev.XID && c.status == st })
		if i >= 0 {
			counts[i].n++
			continue
		}
		counts = append(counts, xidCount{bus: ev.Bus, xid: ev.XID, n: 1, message: ev.Message, status: st})
	}
	// Failures first, then by GPU and XID, so the summary names the worst.
	slices.SortStableFunc(counts, func(a, b xidCount) int {
		if a.status != b.status {
			if a.status.Worse(b.status) {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.bus, b.bus); c != 0 {
			return c
		}
		return a.xid - b.xid
	})
	res := Result{Expected: "no XID in fail_xids", Observed: countNoun(len(counts), "XID kind", "XID kinds") + " since boot"}
	var fails, warns int
	for _, c := range counts {
		// Without NVML the kernel's name of the PCI device is all there is: no function, so
		// no bus id a repair could act on.
		dev, subject := "gpu "+c.bus, Subject{GPU: GPURef{Slot: c.bus}}
		if g, ok := gpus[c.bus]; ok {
			addr := sysfsBusID(g.PCIBusID)
			dev, subject = gpuLabel(g.Index, addr), gpuSubject(g, addr)
		}
		msg := fmt.Sprintf("XID %d on %s", c.xid, dev)
		if c.n > 1 {
			msg += fmt.Sprintf(" (%d times)", c.n)
		}
		if c.message != "" {
			msg += ": " + text.OneLine(c.message, 100)
		}
		d := Detail{Device: dev, Status: c.status, Message: msg, Observed: "XID " + strconv.Itoa(c.xid), Expected: "no XID", Subject: subject}
		if c.status == StatusFail {
			d.Remedy = remedyForXID(c.xid, c.message)
		}
		res.Details = append(res.Details, d)
		if c.status == StatusFail {
			fails++
		} else {
			warns++
		}
	}
	if cut != "" {
		res.Details = append(res.Details, Detail{Device: "kernel log", Status: StatusWarn, Message: cut, Expected: "the whole kernel log since boot"})
		cut = "; " + cut
	}
	switch {
	case fails > 0:
		res.Status = StatusFail
		res.Summary, res.Subject = res.Details[0].Message+moreSuffix(len(counts)-1)+cut, res.Details[0].Subject
	case warns > 0:
		res.Status = StatusWarn
		res.Summary, res.Subject = res.Details[0].Message+moreSuffix(len(counts)-1)+cut, res.Details[0].Subject
	case cut != "":
		res.Status = StatusWarn
		res.Summary = "no NVIDIA XID in what was read" + cut
	default:
		res.Status = StatusOK
		res.Summary = "no NVIDIA XID in the kernel log since boot"
	}
	return res
}

// xidGPUs maps the driver's bus ids ("0000:9b:00") to NVML's GPUs where NVML can say; NVML
// being unavailable only leaves the bus ids as they are.
func xidGPUs(inv node.GPUInventory) map[string]node.GPU {
	if inv.Init != node.InitSuccess {
		return nil
	}
	m := map[string]node.GPU{}
	for _, g := range inv.Devices {
		addr := sysfsBusID(g.PCIBusID)
		if bus, _, ok := strings.Cut(addr, "."); ok && addr != "" {
			m[bus] = g
		}
	}
	return m
}

// Faults declares the check's own rows of the remedy table, and lists the built-in
// fail_xids by remedy for explain.
func (xidErrors) Faults() Faults {
	return Faults{
		note: func() string { return "The built-in fail_xids by remedy: " + xidDefaultsByRemedy() + "." },
		own: []remedyRow{
			{faultXIDReset, "an XID the catalog resolves with RESET_GPU, or with a workflow that says a reset clears it (48, 74; 144-150 whose decode-sheet row says RESET_GPU)", RemedyResetGPU, srcXIDCatalog + " (and its XID 144-150 Decode sheet)"},
			{faultXIDResetSoon, "an XID the catalog asks no immediate node action for, failed by a site's fail_xids or by repeats: 63 (row remap: the driver says \"reset gpu to activate\"), 94 (\"reset the GPU when convenient\"), IGNORE/IGNORE ones, and XIDs the catalog gives no bucket (162 and later) or does not list", RemedyResetGPU,
				srcXIDCatalog + " (trigger conditions of 63, 64, 94); the cheapest remedy that clears the GPU's state, repeated repairs escalate"},
			{faultXIDReboot, "an XID the catalog resolves with RESTART_BM or RESTART_VM (79 fallen off the bus, 151 key rotation error)", RemedyReboot, srcXIDCatalog},
			{faultXIDSupport, "an XID whose action is CONTACT_SUPPORT or CHECK_MECHANICALS (the catalog's unused XIDs such as 61, 142 NVENC3 error, 54 auxiliary power), or one with no immediate node action whose investigatory action is CONTACT_SUPPORT, failed by a site's fail_xids or by repeats (92, 43, 68)", RemedyService,
				srcXIDCatalog + ", and its Investigatory Action column"},
			{faultXIDSoftware, "an XID whose action is UPDATE_SWFW (78 vGPU start error), or one with no immediate node action whose investigatory action is software, failed by a site's fail_xids or by repeats (13, 31: WORKFLOW_XID_13/31, CHECK_APP/CUDA, INVESTIGATE_SW; 45: RESTART_FM; 159: CHECK_UVM)", RemedyAdmin,
				srcXIDCatalog + ", and its Investigatory Action column"},
			{faultXID154Reset, "XID 154 saying GPU Reset Required, Drain and Reset or Drain P2P (None only warns, unless a site lists 154 in fail_xids)", RemedyResetGPU,
				"XID 154 \"summarizes the recovery action required for other Xids\" (" + srcXIDCatalog + ")"},
			{faultXID154Reboot, "XID 154 saying Node Reboot Required, or an action nodecheck cannot read", RemedyReboot,
				"XID 154 (" + srcXIDCatalog + "); a reboot also clears any action nodecheck could not read"},
		},
	}
}

// Explain is what `nodecheck explain xid_errors` says.
func (xidErrors) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The kernel log: dmesg --kernel --nopager (the last 8 MiB of its output, from a line's start: the whole ring buffer of any usual log_buf_len, and its newest lines of a larger one), its \"NVRM: Xid (PCI:0000:9b:00): 79, ...\" lines with their kernel times, and the NVIDIA driver's load lines (a second load in a boot resets every GPU).",
			"The node's history (<state dir>/history/<node>.json, or --state-dir), with this run's XIDs merged into it: an XID counts once across runs, by its kernel time past what was merged before; the boot id (/proc/sys/kernel/random/boot_id) tells a reboot, the uptime (/proc/uptime) puts kernel times on the clock.",
			"NVML, where available: the GPUs' UUIDs, serials and bus ids, to name the GPU of each XID (a replaced GPU in the same slot is a new GPU).",
		},
		Passes: "No XID holds on any GPU of this boot: none in fail_xids since the GPU's last reset or the last clear, and none repeating beyond its rule.",
		Warns:  "An XID not in fail_xids was seen within recent_window (24 h): by default those NVIDIA's XID catalog asks no node action for but something to look into (RESTART_APP: 13 graphics engine exception, 31 memory page fault, 94 contained ECC error, ...; IGNORE with an investigatory action: 43 GPU stopped processing, 92 high single-bit ECC rate, ...; WORKFLOW_XID_45; CHECK_UVM), an NVLink5 XID (144-150) whose row of the catalog's decode sheet is not RESET_GPU, XID 154 changing to None, and any XID in no list (162 and later have no bucket in the catalog). The catalog's IGNORE/IGNORE XIDs (63 row remapping event, judged by gpu_memory_errors from NVML; 106 and 107 SMBPBI test messages) are ignore_xids. Also when the kernel log is longer than what is read (8 MiB), and when the history file was unusable and a fresh one started.",
		Fails:  "An XID in fail_xids is in force on a GPU: by default those whose Immediate Action in NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors, kept in nodecheck as checks/xidcatalog) is a node action: RESET_GPU (" + xidsWithAction("RESET_GPU") + ") and the workflows of 48 (double-bit ECC) and 74 (NVLink error), RESTART_BM or RESTART_VM (" + xidsWithAction("RESTART_BM", "RESTART_VM") + "), CONTACT_SUPPORT (the unused XIDs, " + xidsWithAction("CONTACT_SUPPORT") + "), CHECK_MECHANICALS (" + xidsWithAction("CHECK_MECHANICALS") + "), UPDATE_SWFW (" + xidsWithAction("UPDATE_SWFW") + "). Also, by their message: an NVLink5 XID (144-150) whose IntrInfo and Error Status decode to RESET_GPU in the catalog's decode sheet (the driver's Fatal where no row matches), and XID 154 naming a reset, drain or reboot. It stays in force (sticky) until the GPU is reset (a reset recorded by a repair, a driver reload in the kernel log, or the GPU's volatile counters restarting), the node reboots (a new boot id), or an admin runs nodecheck history clear --gpu BUS; those in reboot_xids (79, 151) and XID 154 naming a reboot only by a reboot or a clear. Or an XID repeats on one GPU beyond a repeat rule (NVSentinel's health-events-analyzer): XID 13 on the same GPC/TPC repeat_xid13_same_unit times (2), XID 31 repeat_xid31 times (2), any XID but 31 and 45 repeat_any times (5), within repeat_window (24 h), lines close together counting as one burst. The summary names the GPU (bus id, UUID, serial), the XID, when, and what clears it. Without a history (a replay without --state-dir) the kernel log since boot is judged alone: an XID in fail_xids fails until the next boot.",
		Skips:  "NVML finds no NVIDIA driver library (ERROR_LIBRARY_NOT_FOUND): a node without NVIDIA GPUs. Or, replaying a snapshot, dmesg's output was not recorded.",
		Errors: "dmesg is missing, or cannot read the kernel log (kernel.dmesg_restrict=1 and not root: \"Operation not permitted\"); or a state directory is configured but cannot be used (not root-owned, writable by others, a symlink) and the kernel log since boot shows nothing that fails: an XID that holds until a reset may have left the log.",
		Keys: map[string]string{
			"dmesg":                  "util-linux dmesg, run as \"dmesg --kernel --nopager\", which prints kernel times (\"[  123.456789] ...\"). Absolute path.",
			"fail_xids":              "XIDs that fail the node, until a GPU reset, a reboot or a clear. Built in: the catalog's XIDs with a node action (see Fails). An NVLink5 XID (144-150) or 154 listed here fails whatever its message says.",
			"warn_xids":              "XIDs that only warn (and fail through the repeat rules); an XID in no list warns too, but for 144-150 and 154, which no list holds by default: their message decides.",
			"ignore_xids":            "XIDs never reported; built in: 63, 106, 107 (IGNORE in both of the catalog's buckets). A list you set takes its XIDs out of the lists left at their built-in values: ignore_xids = [13, 43] alone ignores 13 and 43, which the built-in warn_xids holds, and replaces the built-in ignore_xids. Two lists you set may not share an XID.",
			"reboot_xids":            "The fail_xids only a reboot (or a clear) ends; built in: the catalog's RESTART_BM and RESTART_VM XIDs (79: a GPU reset cannot reach a GPU that fell off the bus; 151 key rotation error).",
			"recent_window":          "How long an XID that does not fail warns after it was seen.",
			"repeat_xid13_same_unit": "Bursts of XID 13 on one GPC/TPC within repeat_window that fail the GPU (NVSentinel RepeatedXID13OnSameGPCAndTPC, bursts 15 s apart); 0 turns the rule off.",
			"repeat_xid31":           "Bursts of XID 31 on one GPU within repeat_window that fail it (NVSentinel RepeatedXID31OnSameGPU, bursts 3 min apart); 0 turns it off.",
			"repeat_any":             "Bursts of any XID but 31 and 45 on one GPU within repeat_window that fail it (NVSentinel RepeatedXIDErrorOnSameGPU, bursts 3 min apart, sticky XIDs 3 h apart); 0 turns it off.",
			"repeat_window":          "The window of the repeat rules.",
		},
		Fix: []string{
			"nodecheck history --gpu BUS: which XIDs, when, which are in force and what would clear them; dmesg -T | grep -i xid for what happened just before (an application's XID 13 or 31 before a 43 or 45 is the application's).",
			"Look the XID up in NVIDIA's catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; docs/xid-catalog.md says what nodecheck does with each) for its immediate action: RESET_GPU (nvidia-smi -r -i N on an idle GPU), RESTART_BM (reboot the node), CONTACT_SUPPORT (a vendor case); for 144-150 its row of the decode sheet by the IntrInfo and Error Status in the message.",
			"Repeated ECC (48, 63, 64, 92, 94, 95), fallen-off-the-bus (79) or NVLink (74) XIDs on the same GPU after a reset point at the hardware: run field diagnostics (dcgmi diag -r 3) and have the board replaced.",
			"A reset or reboot ends a sticky XID by itself; after another fix, nodecheck history clear --gpu BUS --reason \"...\" (logged, and kept in the history as who, when and why). Then run nodecheck run --check xid_errors.",
		},
	}
}
