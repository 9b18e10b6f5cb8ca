package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idXIDErrors = "xid_errors"

// xidErrors reads the NVIDIA XID events in the kernel log since boot (dmesg) and judges them
// by number: those NVIDIA's XID catalog resolves with a GPU reset or a reboot fail the node,
// the others warn (see defaultFailXIDs). The kernel log belongs to the node, not to a
// job: an XID stays there until the next boot, so the check runs in health and manual mode
// only, where a failure drains the node until it is rebooted, and never blames the next job's
// prolog for what an earlier job met.
type xidErrors struct{}

func (xidErrors) ID() string { return idXIDErrors }

func (xidErrors) Description() string {
	return "no NVIDIA XID in the kernel log since boot that needs a GPU reset or reboot (fail_xids); other XIDs warn"
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

// Section runs the check in health and manual modes only: the kernel log is the node's,
// not a job's.
func (xidErrors) Section() config.Section {
	return &xidErrorsConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		Dmesg:       "/usr/bin/dmesg",
		FailXIDs:    defaultFailXIDs(),
		WarnXIDs:    defaultWarnXIDs(),
	}
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
		{"ignore_xids", xe.IgnoreXIDs, StatusSkip, len(xe.IgnoreXIDs) > 0},
	}
}

// xidVerdicts maps each listed XID to its status: StatusFail, StatusWarn, or StatusSkip for
// an ignored one; an XID not in the map warns. A list the admin set wins over one left at
// its built-in default; ValidateSection refuses an XID in two lists the admin set.
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
	inv, invErr := env.Facts.GPUs(ctx)
	if invErr == nil && inv.Init == nvmlNoLibrary {
		return Result{Status: StatusSkip, Summary: "no NVIDIA driver here (NVML " + nvmlNoLibrary + "): no XIDs to read"}
	}
	out, res, ok := readKernelLog(ctx, env, cfg.Dmesg)
	if !ok {
		return res
	}
	var labels map[string]string
	if invErr == nil {
		labels = xidGPULabels(inv)
	}
	return judgeXIDs(history.ScanKernelLog(out.Stdout).XIDs, out.Truncated, len(out.Stdout), cfg.xidVerdicts(), labels)
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
		return out, Result{Status: StatusSkip, Summary: "cannot read the kernel log: " + text.OneLine(err.Error(), 160) +
			" (install util-linux or set checks.xid_errors.dmesg)", Err: err}, false
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
// xidVerdicts: ignored ones are left out, XIDs in no list warn); truncated says the log was
// cut at size bytes, so later XIDs are not seen. labels names GPUs by the driver's bus id.
func judgeXIDs(xids []history.XIDLine, truncated bool, size int, verdicts map[int]Status, labels map[string]string) Result {
	var counts []xidCount
	for _, ev := range xids {
		if verdicts[ev.XID] == StatusSkip {
			continue
		}
		i := slices.IndexFunc(counts, func(c xidCount) bool { return c.bus == ev.Bus && c.xid == ev.XID })
		if i >= 0 {
			counts[i].n++
			continue
		}
		st := StatusWarn
		if verdicts[ev.XID] == StatusFail {
			st = StatusFail
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
		dev := "gpu " + c.bus
		if l, ok := labels[c.bus]; ok {
			dev = l
		}
		msg := fmt.Sprintf("XID %d on %s", c.xid, dev)
		if c.n > 1 {
			msg += fmt.Sprintf(" (%d times)", c.n)
		}
		if c.message != "" {
			msg += ": " + text.OneLine(c.message, 100)
		}
		d := Detail{Device: dev, Status: c.status, Message: msg, Observed: "XID " + strconv.Itoa(c.xid), Expected: "no XID"}
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
	cut := ""
	if truncated {
		cut = "; the kernel log was cut at " + strconv.Itoa(size>>10) + " KiB, later XIDs not read"
	}
	switch {
	case fails > 0:
		res.Status = StatusFail
		res.Summary = res.Details[0].Message + moreSuffix(len(counts)-1)
	case warns > 0:
		res.Status = StatusWarn
		res.Summary = res.Details[0].Message + moreSuffix(len(counts)-1) + cut
	case truncated:
		res.Status = StatusWarn
		res.Summary = "no NVIDIA XID in what was read" + cut
	default:
		res.Status = StatusOK
		res.Summary = "no NVIDIA XID in the kernel log since boot"
	}
	return res
}

// xidGPULabels maps the driver's bus ids ("0000:9b:00") to "gpu 4 (0000:9b:00.0)" where NVML
// can say; NVML being unavailable only leaves the bus ids as they are.
func xidGPULabels(inv node.GPUInventory) map[string]string {
	if inv.Init != node.InitSuccess {
		return nil
	}
	m := map[string]string{}
	for _, g := range inv.Devices {
		addr := sysfsBusID(g.PCIBusID)
		if bus, _, ok := strings.Cut(addr, "."); ok && addr != "" {
			m[bus] = gpuLabel(g.Index, addr)
		}
	}
	return m
}

// Explain is what `nodecheck explain xid_errors` says.
func (xidErrors) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The kernel log since boot: dmesg --kernel --nopager (the first 64 KiB of its output), its \"NVRM: Xid (PCI:0000:9b:00): 79, ...\" lines.",
			"NVML, where available: the GPUs' indices and bus ids, to name the GPU of each XID.",
		},
		Passes: "The kernel log holds no NVIDIA XID message (none but ignore_xids).",
		Warns:  "The kernel log holds an XID not in fail_xids: by default the application-caused ones (13 graphics engine exception, 31 memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor exception) and any XID in no list. Also when the kernel log is longer than what is read (64 KiB): later XIDs are then not seen.",
		Fails:  "The kernel log holds an XID in fail_xids: by default those NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors) resolves with a GPU reset or a reboot: 48 double-bit ECC, 61 and 62 micro-controller halt, 63 and 64 page retirement or row remapping pending or failed, 74 NVLink error, 79 GPU fallen off the bus, 92 high single-bit ECC rate, 94 and 95 contained and uncontained ECC error, 119 and 120 GSP timeout and error, 140 unrecovered ECC, 154 recovery action changed. The summary names the XID, the GPU by index and bus id, and the driver's message. An XID stays in the kernel log until the next boot, so the node stays failed until it is rebooted (or the log is cleared with dmesg --clear after a GPU reset). Only health and manual mode by default: the kernel log is the node's, not a job's.",
		Skips:  "NVML finds no NVIDIA driver library (ERROR_LIBRARY_NOT_FOUND): a node without NVIDIA GPUs. Or, replaying a snapshot, dmesg's output was not recorded.",
		Errors: "dmesg is missing, or cannot read the kernel log (kernel.dmesg_restrict=1 and not root: \"Operation not permitted\").",
		Keys: map[string]string{
			"dmesg":       "util-linux dmesg, run as \"dmesg --kernel --nopager\". Absolute path.",
			"fail_xids":   "XIDs that fail the node.",
			"warn_xids":   "XIDs that only warn; an XID in no list warns too.",
			"ignore_xids": "XIDs never reported. A list you set takes its XIDs out of the lists left at their built-in values: ignore_xids = [13, 43] alone ignores 13 and 43, which the built-in warn_xids holds. Two lists you set may not share an XID.",
		},
		Fix: []string{
			"dmesg -T | grep -i xid: which GPU (bus id), which XID, what happened just before (an application's XID 13 or 31 before a 43 or 45 is the application's)?",
			"Look the XID up in NVIDIA's catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) for its immediate action: RESET_GPU (nvidia-smi -r -i N on an idle GPU) or RESTART_BM (reboot the node).",
			"Repeated ECC (48, 63, 64, 92, 94, 95), fallen-off-the-bus (79) or NVLink (74) XIDs on the same GPU after a reset point at the hardware: run field diagnostics (dcgmi diag -r 3) and have the board replaced.",
			"After the fix, reboot (or dmesg --clear after a GPU reset) so that the old XIDs leave the kernel log, and run nodecheck run --check xid_errors.",
		},
	}
}
