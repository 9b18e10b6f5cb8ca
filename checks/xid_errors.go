package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idXIDErrors = "xid_errors"

// xidErrors reads the NVIDIA XID events in the kernel log since boot (dmesg) and judges them
// by number: those NVIDIA's XID catalog resolves with a GPU reset or a reboot fail the node,
// the others warn (see config.defaultFailXIDs). The kernel log belongs to the node, not to a
// job: an XID stays there until the next boot, so the check runs in health and manual mode
// only, where a failure drains the node until it is rebooted, and never blames the next job's
// prolog for what an earlier job met.
type xidErrors struct{}

func (xidErrors) ID() string { return idXIDErrors }

func (xidErrors) Description() string {
	return "no NVIDIA XID in the kernel log since boot that needs a GPU reset or reboot (fail_xids); other XIDs warn"
}

func (xidErrors) Settings(cfg *config.Config) config.CheckCommon {
	return cfg.Checks.XIDErrors.CheckCommon
}

// xidEvent is one "NVRM: Xid" line of the kernel log.
type xidEvent struct {
	// Bus is the GPU as the driver names it, domain:bus:device without the function
	// ("0000:9b:00"), lower case.
	Bus string
	XID int
	// Message is the text after the XID number: "pid=1896, GPU has fallen off the bus."
	Message string
}

// xidMarker starts the driver's XID message, "NVRM: Xid (PCI:0000:9b:00): 79, ..."
// (open-gpu-kernel-modules, nv_report_error; older drivers print the bus without "PCI:").
const xidMarker = "NVRM: Xid ("

// nvmlNoLibrary is GPUInventory.Init on a node without the NVIDIA driver's libnvidia-ml.
const nvmlNoLibrary = "ERROR_LIBRARY_NOT_FOUND"

// parseXidLine reads one kernel log line. Whatever precedes the marker (a "[ 123.456]"
// timestamp, a syslog or journal prefix) is ignored. ok is false for a line that is not an
// XID message or whose bus id or number cannot be read.
func parseXidLine(line string) (ev xidEvent, ok bool) {
	i := strings.Index(line, xidMarker)
	if i < 0 {
		return xidEvent{}, false
	}
	rest := line[i+len(xidMarker):]
	bus, rest, found := strings.Cut(rest, "):")
	if !found {
		return xidEvent{}, false
	}
	bus = strings.ToLower(strings.TrimPrefix(bus, "PCI:"))
	if !validXIDBus(bus) {
		return xidEvent{}, false
	}
	rest = strings.TrimLeft(rest, " ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 4 {
		return xidEvent{}, false
	}
	x, _ := strconv.Atoi(rest[:n])
	msg := strings.TrimLeft(strings.TrimPrefix(rest[n:], ","), " ")
	return xidEvent{Bus: bus, XID: x, Message: strings.TrimRight(msg, " \r\n")}, true
}

// validXIDBus accepts domain:bus:device in hex, "0000:9b:00", "0019:01:00".
func validXIDBus(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || len(parts[0]) < 4 || len(parts[0]) > 8 || len(parts[1]) != 2 || len(parts[2]) != 2 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 16, 32); err != nil {
			return false
		}
	}
	return true
}

// xidCount is the events of one XID on one GPU.
type xidCount struct {
	bus     string
	xid     int
	n       int
	message string // of the first event
	status  Status
}

func (xidErrors) Run(ctx context.Context, env *Env) Result {
	cfg := env.Config.Checks.XIDErrors
	inv, invErr := env.Facts.GPUs(ctx)
	if invErr == nil && inv.Init == nvmlNoLibrary {
		return Result{Status: StatusSkip, Summary: "no NVIDIA driver here (NVML " + nvmlNoLibrary + "): no XIDs to read"}
	}
	argv := []string{cfg.Dmesg, "--kernel", "--nopager"}
	out, err := env.Facts.Exec(ctx, argv)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Status: StatusFail, Summary: "timed out reading the kernel log with " + cfg.Dmesg, Err: err}
		}
		if errors.Is(err, fs.ErrNotExist) {
			// Live: dmesg is not installed there; a snapshot: its output was not recorded.
			// Like a missing nv-fabricmanager or all_reduce_perf, the check does not apply:
			// a skip that says so, never an ok.
			return Result{Status: StatusSkip, Summary: "cannot read the kernel log: " + text.OneLine(err.Error(), 160) +
				" (install util-linux or set checks.xid_errors.dmesg)", Err: err}
		}
		return Result{Status: StatusError, Summary: "run " + cfg.Dmesg + ": " + text.OneLine(err.Error(), 160), Err: err}
	}
	if out.ExitCode != 0 {
		why := text.OneLine(out.Stderr, 160)
		if why == "" {
			why = "no message"
		}
		err := fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), out.ExitCode, why)
		// dmesg: read kernel buffer failed: Operation not permitted (kernel.dmesg_restrict=1
		// and not root).
		return Result{Status: StatusError, Summary: fmt.Sprintf("cannot read the kernel log: %s exited %d: %s", cfg.Dmesg, out.ExitCode, why), Err: err}
	}

	var counts []xidCount
	for line := range strings.Lines(out.Stdout) {
		ev, ok := parseXidLine(line)
		if !ok || slices.Contains(cfg.IgnoreXIDs, ev.XID) {
			continue
		}
		i := slices.IndexFunc(counts, func(c xidCount) bool { return c.bus == ev.Bus && c.xid == ev.XID })
		if i >= 0 {
			counts[i].n++
			continue
		}
		st := StatusWarn
		if slices.Contains(cfg.FailXIDs, ev.XID) {
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

	var labels map[string]string
	if invErr == nil {
		labels = xidGPULabels(inv)
	}
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
		res.Details = append(res.Details, Detail{Device: dev, Status: c.status, Message: msg,
			Observed: "XID " + strconv.Itoa(c.xid), Expected: "no XID"})
		if c.status == StatusFail {
			fails++
		} else {
			warns++
		}
	}
	cut := ""
	if out.Truncated {
		cut = "; the kernel log was cut at " + strconv.Itoa(len(out.Stdout)>>10) + " KiB, later XIDs not read"
	}
	switch {
	case fails > 0:
		res.Status = StatusFail
		res.Summary = res.Details[0].Message + moreSuffix(len(counts)-1)
	case warns > 0:
		res.Status = StatusWarn
		res.Summary = res.Details[0].Message + moreSuffix(len(counts)-1) + cut
	case out.Truncated:
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
	if inv.Init != nvmlSuccess {
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
