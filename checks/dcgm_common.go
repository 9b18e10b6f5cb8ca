package checks

// What dcgm_health and dcgm_diag share: how they reach the site's DCGM host engine through
// dcgmi, what they do when it is not there, how DCGM's GPU ids become nodecheck's GPUs, and how
// DCGM's severities become statuses and remedies (docs/dcgm.md).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

// dcgmConn is how a DCGM check reaches the host engine: its [checks.<id>] keys of the same
// names.
type dcgmConn struct {
	dcgmi    string // dcgmi, by absolute path
	host     string // dcgmi's --host: "localhost" (port 5555), "HOST:PORT" or "unix:///PATH"
	required bool   // absent DCGM is an error, not a skip
}

// dcgmDefaultHost is dcgmi's own default (--host, "[default = localhost]", port 5555):
// nv-hostengine's default listening address.
const dcgmDefaultHost = "localhost"

// dcgmAnswerMargin is kept of a check's deadline for saying which host engine did not answer
// (a fifth of what is left, at most a second): a dcgmi call runs until then, so that a host
// engine that never answers is the check's error naming it, not the runner's "timed out".
const dcgmAnswerMargin = time.Second

// validateDCGMConn holds the keys both checks share to their rules.
func validateDCGMConn(dcgmi, host string, modes []string) []config.Problem {
	var errs []config.Problem
	if !strings.HasPrefix(dcgmi, "/") {
		errs = append(errs, config.Problemf("dcgmi", " = %q: give an absolute path, such as \"/usr/bin/dcgmi\": nodecheck runs commands without PATH", dcgmi))
	}
	if h := strings.TrimSpace(host); h == "" || strings.ContainsAny(h, " \t\n") || h == "unix://" {
		errs = append(errs, config.Problemf("host", " = %q: give the host engine's address as dcgmi --host takes it: \"localhost\", \"HOST:PORT\" or \"unix:///run/nvidia-dcgm/nv-hostengine.sock\"", host))
	}
	for _, m := range modes {
		if config.Mode(m).JobHook() {
			errs = append(errs, config.Problemf("modes", ": %q is not allowed for DCGM checks: a %s does not wait for DCGM; use \"health\" or \"manual\"", m, m))
		}
	}
	return errs
}

// dcgmAsk runs argv and classifies the answer. res is what the check returns when ok is
// false: a skip where DCGM is not there to ask (or an error where it is required), an error
// naming the host engine where it did not answer within the check's deadline.
func dcgmAsk(ctx context.Context, env *Env, c dcgmConn, argv []string) (out node.CmdResult, res Result, ok bool) {
	actx := ctx
	if dl, has := ctx.Deadline(); has {
		margin := min(dcgmAnswerMargin, time.Until(dl)/5)
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	start := time.Now()
	out, err := env.Facts.Exec(actx, argv)
	line := strings.Join(argv, " ")
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return out, Result{Status: StatusError, Summary: "interrupted while " + line + " ran", Err: err}, false
	case err != nil && actx.Err() != nil:
		why := fmt.Sprintf("the DCGM host engine at %s did not answer %s within %s", c.host, strings.Join(argv[1:2], ""), time.Since(start).Round(100*time.Millisecond))
		return out, Result{Status: StatusError, Summary: why + ": is nv-hostengine hung? (systemctl status nvidia-dcgm)", Err: err}, false
	case errors.Is(err, fs.ErrNotExist):
		// In a replay: not recorded, which a recording of a node without dcgmi also is, so
		// that the replay says what the live run said.
		return out, dcgmAbsent(c, c.dcgmi+" not installed (DCGM's datacenter-gpu-manager package)"), false
	case err != nil:
		return out, Result{Status: StatusError, Summary: "run " + line + ": " + err.Error(), Err: err}, false
	}
	switch dcgm.Classify(out.Stdout, out.Stderr, out.ExitCode) {
	case dcgm.OutcomeNoHostEngine:
		return out, dcgmAbsent(c, "no DCGM host engine answers at "+c.host+" (nv-hostengine not running, or listening elsewhere: set host)"), false
	case dcgm.OutcomeUsage:
		return out, dcgmAbsent(c, c.dcgmi+" does not know "+line[len(c.dcgmi)+1:]+": a DCGM older than 3.0"+dcgmLastLine(out)), false
	}
	return out, Result{}, true
}

// dcgmAbsent is the result of DCGM not being there to ask: a skip with the reason, or an
// error where the site requires DCGM (undecided, never healthy by not looking).
func dcgmAbsent(c dcgmConn, why string) Result {
	if c.required {
		return Result{Status: StatusError, Summary: why + " (required = true)", Err: errors.New(why)}
	}
	return Result{Status: StatusSkip, Summary: why}
}

// dcgmLastLine is ": <last line of dcgmi's output>", cut, or "".
func dcgmLastLine(out node.CmdResult) string {
	lines := strings.Split(strings.TrimSpace(out.Stdout+"\n"+out.Stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return ": " + text.OneLine(l, 120)
		}
	}
	return ""
}

// dcgmClass is what nodecheck makes of one DCGM finding: its status and which of the check's
// faults it is.
type dcgmClass int

// The classes, in the order of their remedies' cost (remedy.go), so that the most drastic of
// several is the greatest.
const (
	dcgmClassOK           dcgmClass = iota // severity NONE
	dcgmClassMonitor                       // MONITOR, or a code the site lists in warn_codes: warn
	dcgmClassReset                         // RESET: reset_gpu
	dcgmClassReboot                        // a code whose own words ask for a reboot
	dcgmClassTriage                        // TRIAGE: admin
	dcgmClassConfig                        // CONFIG: admin
	dcgmClassUnrecognised                  // UNKNOWN or no code: DCGM's own result decides, admin
	dcgmClassIsolate                       // ISOLATE: service
)

// dcgmRebootCodes are the codes whose remedy is a reboot whatever their severity says: the
// driver's recovery action NODE_REBOOT (DCGM_FR_GPU_RECOVERY_REBOOT: "GPU %u fault may have
// left the OS in an inconsistent state. Recovery action: %ld (NODE_REBOOT)", ISOLATE in
// dcgm_errors.c), and a GPU fallen off the bus (DCGM_FR_FALLEN_OFF_BUS, XID 79, whose
// catalog action is a node reboot: the XID catalog's RESTART_BM).
var dcgmRebootCodes = [...]int{120, 126}

// dcgmClassify classifies a finding of code e with DCGM's severity sev; failed says DCGM
// itself calls it a failure (a health incident's Failure, a diagnostic's Fail), which decides
// only where the code is not DCGM's or its severity is UNKNOWN.
func dcgmClassify(e dcgm.ErrorInfo, known bool, sev dcgm.Severity, failed bool, warnCodes []int) dcgmClass {
	if known && slices.Contains(warnCodes, e.Code) {
		return dcgmClassMonitor
	}
	if known && slices.Contains(dcgmRebootCodes[:], e.Code) {
		return dcgmClassReboot
	}
	switch {
	case !known || sev == dcgm.SeverityUnknown:
		if failed {
			return dcgmClassUnrecognised
		}
		return dcgmClassMonitor
	case sev == dcgm.SeverityNone:
		return dcgmClassOK
	case sev == dcgm.SeverityMonitor:
		return dcgmClassMonitor
	case sev == dcgm.SeverityReset:
		return dcgmClassReset
	case sev == dcgm.SeverityIsolate:
		return dcgmClassIsolate
	case sev == dcgm.SeverityTriage:
		return dcgmClassTriage
	case sev == dcgm.SeverityConfig:
		return dcgmClassConfig
	}
	if failed {
		return dcgmClassUnrecognised
	}
	return dcgmClassMonitor
}

// dcgmGPUs ties DCGM's GPU ids to NVML's GPUs. DCGM numbers the GPUs in NVML's order when the
// host engine starts (DcgmCacheManager::AttachGpus: gpuId = NVML index) and keeps a GPU's id
// by its UUID when it attaches again, so DCGM GPU i is NVML's GPU i; where DCGM gives the
// GPU's serial (a diagnostic's entity_groups) and NVML's GPU i has another, the GPU is found
// by its serial instead.
type dcgmGPUs struct {
	inv node.GPUInventory
	ok  bool
}

// dcgmGPUFields are the NVML facts that name a GPU: what a DCGM finding's subject carries.
const dcgmGPUFields = node.GPUPCIBusID | node.GPUUUID | node.GPUSerial

func readDCGMGPUs(ctx context.Context, env *Env) dcgmGPUs {
	inv, err := env.Facts.GPUs(ctx)
	return dcgmGPUs{inv: inv, ok: err == nil && inv.Init == node.InitSuccess}
}

// gpu returns the subject and the label of DCGM GPU id, serial being DCGM's serial of it
// ("" where DCGM gave none).
func (m dcgmGPUs) gpu(id int, serial string) (Subject, string) {
	if m.ok {
		if serial != "" {
			for _, g := range m.inv.Devices {
				if g.Serial == serial {
					return gpuSubject(g, ""), gpuLabel(g.Index, sysfsBusID(g.PCIBusID))
				}
			}
		}
		for _, g := range m.inv.Devices {
			if g.Index == id && (serial == "" || g.Serial == "") {
				return gpuSubject(g, ""), gpuLabel(g.Index, sysfsBusID(g.PCIBusID))
			}
		}
	}
	// NVML does not know the GPU (or could not be read): its DCGM id is all there is, and
	// it is NVML's index by DCGM's numbering.
	s := Subject{GPU: GPURef{Index: id, HasIndex: true, Serial: serial}}
	return s, gpuLabel(id, "")
}

// dcgmEntity is the subject and label of a DCGM entity: a GPU through NVML, an NVSwitch, an
// HCA or a CPU by DCGM's id (their PCI address is not in dcgmi's output).
func (m dcgmGPUs) entity(group string, id int, serial string) (Subject, string) {
	switch group {
	case dcgm.GroupGPU, "":
		return m.gpu(id, serial)
	case dcgm.GroupSwitch:
		return Subject{}, "nvswitch " + strconv.Itoa(id)
	case dcgm.GroupConnectX:
		return Subject{}, "connectx " + strconv.Itoa(id)
	}
	return Subject{}, strings.ToLower(group) + " " + strconv.Itoa(id)
}

// dcgmCodeNote is how a detail names DCGM's code and severity: "DCGM_FR_PCI_REPLAY_RATE (3),
// ISOLATE".
func dcgmCodeNote(e dcgm.ErrorInfo, known bool, sev dcgm.Severity) string {
	if !known {
		return "no DCGM code matched"
	}
	return e.Label() + ", " + sev.String()
}

// dcgmSource is where the severities and codes come from, for the remedy rows.
const dcgmSource = "DCGM's dcgm_errors.h (dcgmErrorSeverity_t) and dcgm_errors.c (dcgmErrorMeta, each code's severity)"
