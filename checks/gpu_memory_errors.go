package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idGPUMemoryErrors = "gpu_memory_errors"

// The ways gpu_memory_errors fails: its rows of the remedy table (Faults).
const (
	faultRemapFailed     fault = "gpu_memory_errors/remap_failed"
	faultRetiredLimit    fault = "gpu_memory_errors/retired_pages_limit"
	faultUncorrectable   fault = "gpu_memory_errors/uncorrectable"
	faultRemapPending    fault = "gpu_memory_errors/remap_pending"
	faultRetirePending   fault = "gpu_memory_errors/retirement_pending"
	faultECCOff          fault = "gpu_memory_errors/ecc_off"
	faultECCOnAfterReset fault = "gpu_memory_errors/ecc_on_after_reset"
)

// gpuMemoryErrors judges each GPU's memory error state as NVML reports it: ECC mode,
// uncorrectable ECC errors since the driver loaded, row remapping (Ampere and later) and
// dynamic page retirement (before Ampere). What each state gives, and why:
//
//   - Row remapping failed: fail, replace the GPU. NVIDIA's RMA policy: "the RMA criteria is
//     met when the row-remapping failure flag is set" (and validated by the field diagnostic),
//     https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html.
//   - Retired pages at or above retired_pages_limit (63): fail, replace the GPU. NVIDIA's DCGM
//     fails a GPU there (DCGM_LIMIT_MAX_RETIRED_PAGES, common/DcgmGPUHardwareLimits.h: "updated
//     to match the field diag", the tool that qualifies a board for RMA); the InfoROM holds 64
//     retirements (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html).
//   - Uncorrectable (volatile, since the driver loaded) ECC errors: fail, reset the GPU. DCGM's
//     health watch fails on any (DCGM_FR_VOLATILE_DBE_DETECTED: "Drain the GPU and reset it or
//     reboot the node"); a reset clears the counter.
//   - Row remapping or page retirement pending: fail by default (pending = "warn" to only
//     warn), reset the GPU. A remap "will happen at the next GPU reset"
//     (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html),
//     a retirement at the next driver reload or GPU reset (the row-remapping page above).
//     NVIDIA says new work can still start on an Ampere or Hopper GPU with a remap pending, so
//     this is a drain (running jobs finish) that gets the GPU its reset, not an emergency;
//     before Ampere a page retired after a double-bit error keeps new contexts off the GPU
//     until then (https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html, use case 1).
//   - ECC off on a GPU that has ECC: fail by default (ecc_off), since errors then go
//     undetected; NVIDIA ships data-centre GPUs with ECC on (A100: "ECC is enabled by default",
//     https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html). GPUs named in
//     ecc_off_models (GeForce, TITAN, Quadro, RTX workstation boards) ship with it off and are
//     not judged on it.
//   - ECC mode to change at the next reset: warn.
//   - More than 15 pages retired after double-bit errors, below the limit: warn. DCGM's soft
//     limit (DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT) fails only when more than one such page
//     was retired in the last week, which a one-shot run cannot tell; fewer retired pages are
//     what page retirement is for ("improve the longevity of an otherwise good board",
//     dynamic-page-retirement above) and are reported in the details only.
//   - Aggregate (lifetime) uncorrectable errors and remapped row counts are reported, not
//     judged: past errors the GPU has already remapped or retired are not a fault, and judging
//     them would drain the node for good.
//
// A GPU NVML lost (Error set) cannot be judged: its detail is an error, and the result is
// never ok while one is (gpu_count fails the node for it).
type gpuMemoryErrors struct{}

func (gpuMemoryErrors) ID() string { return idGPUMemoryErrors }

func (gpuMemoryErrors) Description() string {
	return "each GPU: ECC on, no uncorrectable ECC error since driver load, no row remapping or page retirement pending or failed, retired pages under NVIDIA's limit"
}

// GPUFields implements gpuFactsUser: each GPU's model (traits), bus id, ECC, remapped rows and retired pages.
func (gpuMemoryErrors) GPUFields() node.GPUFields {
	return node.GPUName | node.GPUPCIBusID | node.GPUECC | node.GPURemappedRows | node.GPURetiredPages
}

// gpuMemoryErrorsConfig is [checks.gpu_memory_errors].
type gpuMemoryErrorsConfig struct {
	config.CheckCommon
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
	verdictFail = "fail"
	verdictWarn = "warn"
	verdictOK   = "ok"
)

// defaultRetiredPagesLimit is retired_pages_limit's default: DCGM_LIMIT_MAX_RETIRED_PAGES in
// NVIDIA's DCGM (common/DcgmGPUHardwareLimits.h, "Max retired pages updated to match the
// field diag"), which its health watch and diagnostic fail at.
const defaultRetiredPagesLimit = 63

// maxRetiredPages is how many page retirements a GPU's InfoROM holds
// (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html: "a maximum of
// 64 retirements for the frame buffer").
const maxRetiredPages = 64

// defaultECCOffModels are the NVML name words of the GPUs NVIDIA ships with ECC off, or
// without ECC: GeForce, TITAN, Quadro and the RTX workstation boards ("NVIDIA RTX A6000").
// "ECC is off by default for Geforce and Quadro(RTX) cards, but for Tesla cards, it is turned
// on by default" (Chaos support, https://support.chaos.com/hc/en-us/articles/24886637113617);
// the RTX 4090 capture (corpus nvsmi/gpud-q-rtx4090x8-535.154.05.txt) reads "ECC Mode Current
// Disabled", the A10 and H100 captures "Enabled".
func defaultECCOffModels() []string { return []string{"geforce", "titan", "quadro", "rtx"} }

func (gpuMemoryErrors) Section() config.Section {
	return &gpuMemoryErrorsConfig{
		CheckCommon:       config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()},
		ECCOff:            verdictFail,
		ECCOffModels:      defaultECCOffModels(),
		Pending:           verdictFail,
		RetiredPagesLimit: defaultRetiredPagesLimit,
	}
}

// ValidateSection implements config.SectionValidator.
func (me *gpuMemoryErrorsConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	add := func(key, format string, args ...any) { errs = append(errs, config.Problemf(key, format, args...)) }
	switch me.ECCOff {
	case verdictFail, verdictWarn, verdictOK:
	default:
		add("ecc_off", " = %q: give \"fail\", \"warn\" or \"ok\": what a GPU with ECC off gives", me.ECCOff)
	}
	for _, m := range me.ECCOffModels {
		if len(modelWords(m)) == 0 {
			add("ecc_off_models", ": %q names no words; give words of NVML GPU names, such as \"geforce\" or \"rtx a6000\"", m)
		}
	}
	switch me.Pending {
	case verdictFail, verdictWarn:
	default:
		add("pending", " = %q: give \"fail\" or \"warn\": what a row remapping or page retirement waiting for a GPU reset gives", me.Pending)
	}
	if me.RetiredPagesLimit < 1 || me.RetiredPagesLimit > maxRetiredPages {
		add("retired_pages_limit", " = %d: give a page count from 1 to %d (a GPU retires at most %d pages), such as %d as NVIDIA's DCGM uses",
			me.RetiredPagesLimit, maxRetiredPages, maxRetiredPages, defaultRetiredPagesLimit)
	}
	return errs
}

// retiredDBEPagesWarn is DCGM's soft limit on pages retired after double-bit errors
// (DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT, common/DcgmGPUHardwareLimits.h): above it, warn.
const retiredDBEPagesWarn = 15

// summaryNoMemoryCounters is the skip of a node whose GPUs have no ECC at all.
const summaryNoMemoryCounters = "no GPU reports memory error counters (no ECC, row remapping or page retirement)"

// memFinding is one problem of one GPU, with what to do about it.
type memFinding struct {
	status Status
	msg    string // "row remapping failed: replace the GPU"
	fault  fault  // what brings the GPU back, for a failing finding
}

func (gpuMemoryErrors) Run(ctx context.Context, env *Env) Result {
	inv, res, ok := nvmlGPUs(ctx, env, "memory error counters")
	if !ok {
		return res
	}
	return judgeGPUMemory(inv.Devices, settings[*gpuMemoryErrorsConfig](env.Config, idGPUMemoryErrors))
}

// memJudged is the verdict on one GPU: its detail, and its findings worst first (none for
// an ok or skipped GPU).
type memJudged struct {
	detail   Detail
	findings []memFinding
}

// judgeGPUMemory judges the memory error state of every GPU NVML listed.
func judgeGPUMemory(gpus []node.GPU, cfg *gpuMemoryErrorsConfig) Result {
	offModels := make([][]string, 0, len(cfg.ECCOffModels))
	for _, m := range cfg.ECCOffModels {
		offModels = append(offModels, modelWords(m))
	}
	var judged []memJudged
	var without, eccOffAllowed int
	for _, g := range gpus {
		nameWords := modelWords(g.Name)
		allowOff := cfg.ECCOff == verdictOK || slices.ContainsFunc(offModels, func(w []string) bool { return containsWords(nameWords, w) })
		j := judgeGPUMemoryOne(g, cfg, allowOff)
		switch {
		case j.detail.Status == StatusSkip:
			without++
		case g.Error == "" && g.ECC != nil && !g.ECC.Enabled && allowOff:
			eccOffAllowed++
		}
		judged = append(judged, j)
	}
	return memSummary(judged, cfg, without, eccOffAllowed)
}

// judgeGPUMemoryOne judges one GPU. A lost GPU cannot be judged: error. A GPU that reports
// no memory error state at all is skipped, unless its model always reports some (gpuTraits):
// then what NVML left out is an error, as it is beside other findings.
func judgeGPUMemoryOne(g node.GPU, cfg *gpuMemoryErrorsConfig, allowOff bool) memJudged {
	label, subject := gpuLabel(g.Index, sysfsBusID(g.PCIBusID)), gpuSubject(g, "")
	if g.Error != "" {
		msg := g.Error + ": memory error state not read"
		return memJudged{detail: Detail{Device: label, Status: StatusError, Message: "NVML: " + msg, Observed: g.Error, Expected: "usable in NVML", Subject: subject},
			findings: []memFinding{{status: StatusError, msg: msg}}}
	}
	missing := memMissing(g)
	if g.ECC == nil && g.RemappedRows == nil && g.RetiredPages == nil && len(missing) == 0 {
		return memJudged{detail: Detail{Device: label, Status: StatusSkip, Subject: subject,
			Message: "no ECC, row remapping or page retirement reported (" + orUnknownName(g.Name) + ")"}}
	}
	f := append(memFindings(g, cfg, allowOff), missing...)
	// What needs the GPU replaced or reset comes before what could not be read.
	slices.SortStableFunc(f, func(a, b memFinding) int { return b.status.rank() - a.status.rank() })
	d := Detail{Device: label, Status: StatusOK, Observed: memObserved(g), Expected: memExpected(cfg), Subject: subject}
	if len(f) == 0 {
		d.Message = "no memory error that needs a GPU reset or replacement"
		return memJudged{detail: d}
	}
	d.Status = f[0].status
	msgs := make([]string, len(f))
	for i, x := range f {
		msgs[i] = x.msg
		if x.status == StatusFail {
			// The GPU passes only once every failing finding is fixed: it needs the most
			// drastic of their remedies (a failed remap's service, not its pending reset).
			d.Remedy = MostDrastic(d.Remedy, remedyOf(x.fault))
		}
	}
	d.Message = strings.Join(msgs, "; ")
	return memJudged{detail: d, findings: f}
}

// memMissing lists, as errors, the memory error state NVML did not report although g's model
// always has it, and the uncorrectable error count where ECC is on.
func memMissing(g node.GPU) []memFinding {
	tr, model := traitsOf(g.Name)
	var f []memFinding
	add := func(format string, args ...any) {
		f = append(f, memFinding{status: StatusError, msg: fmt.Sprintf(format, args...)})
	}
	if tr.ecc && g.ECC == nil {
		add("ECC mode not reported by NVML (%s GPUs have ECC): memory errors not judged", model)
	}
	if e := g.ECC; e != nil && e.Enabled && e.VolatileUncorrected == nil {
		add("ECC on, but NVML reported no uncorrectable ECC error count: not judged")
	}
	if tr.rowRemapping && g.RemappedRows == nil {
		add("remapped rows not reported by NVML (%s GPUs remap rows): a pending or failed remap not judged", model)
	}
	if tr.pageRetirement && g.RetiredPages == nil {
		add("retired pages not reported by NVML (%s GPUs retire pages): not judged", model)
	}
	return f
}

// memSummary makes the result of the GPUs judged: the worst status of a GPU, where ok
// (some GPU judged) beats skip; details in NVML order; the summary names the first GPU of
// the worst status and what to do.
func memSummary(gpus []memJudged, cfg *gpuMemoryErrorsConfig, without, eccOffAllowed int) Result {
	res := Result{Expected: memExpected(cfg)}
	counts := map[Status]int{}
	for _, j := range gpus {
		res.Details = append(res.Details, j.detail)
		counts[j.detail.Status]++
	}
	worst := StatusSkip
	for _, s := range []Status{StatusFail, StatusError, StatusWarn, StatusOK} {
		if counts[s] > 0 {
			worst = s
			break
		}
	}
	var obs []string
	for _, s := range []Status{StatusFail, StatusError, StatusWarn, StatusOK, StatusSkip} {
		if counts[s] > 0 {
			obs = append(obs, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	res.Observed = countNoun(len(gpus), "GPU", "GPUs") + ": " + strings.Join(obs, ", ")
	res.Status = worst
	switch worst {
	case StatusFail, StatusWarn, StatusError:
		first := gpus[slices.IndexFunc(gpus, func(j memJudged) bool { return j.detail.Status == worst })]
		res.Summary = first.detail.Device + ": " + first.findings[0].msg + moreSuffix(counts[worst]-1)
		res.Subject = first.detail.Subject
		if worst == StatusError {
			res.Err = errors.New(res.Summary)
		}
	case StatusSkip:
		res.Summary = summaryNoMemoryCounters
	default:
		ecc := "ECC on"
		if eccOffAllowed > 0 {
			ecc = fmt.Sprintf("ECC off on %d where allowed", eccOffAllowed)
		}
		res.Summary = fmt.Sprintf("%s: no memory error that needs a GPU reset or replacement (%s)", countNoun(counts[StatusOK], "GPU", "GPUs"), ecc)
		if without > 0 {
			res.Summary += fmt.Sprintf("; %d without ECC", without)
		}
	}
	res.Summary = text.OneLine(res.Summary, 160)
	return res
}

// memFindings lists what is wrong with g, worst first: what needs the GPU replaced, then
// what needs a reset, then the ECC mode, then warnings.
func memFindings(g node.GPU, cfg *gpuMemoryErrorsConfig, allowECCOff bool) []memFinding {
	var f []memFinding
	add := func(s Status, ft fault, format string, args ...any) {
		f = append(f, memFinding{status: s, msg: fmt.Sprintf(format, args...), fault: ft})
	}
	pending := StatusFail
	if cfg.Pending == verdictWarn {
		pending = StatusWarn
	}
	smi := "nvidia-smi"
	if g.Index >= 0 {
		smi += " -i " + strconv.Itoa(g.Index)
	}

	if r := g.RemappedRows; r != nil && r.Failed {
		add(StatusFail, faultRemapFailed, "row remapping failed: replace the GPU")
	}
	if p := g.RetiredPages; p != nil && p.SingleBit+p.DoubleBit >= cfg.RetiredPagesLimit {
		add(StatusFail, faultRetiredLimit, "%d retired pages (limit %d): replace the GPU", p.SingleBit+p.DoubleBit, cfg.RetiredPagesLimit)
	}
	if e := g.ECC; e != nil && e.VolatileUncorrected != nil && *e.VolatileUncorrected > 0 {
		add(StatusFail, faultUncorrectable, "%s since driver load: reset the GPU", countNoun(int(min(*e.VolatileUncorrected, 1<<31)), "uncorrectable ECC error", "uncorrectable ECC errors"))
	}
	if r := g.RemappedRows; r != nil && r.Pending && !r.Failed {
		add(pending, faultRemapPending, "row remapping pending: reset the GPU")
	}
	if p := g.RetiredPages; p != nil && p.Pending {
		add(pending, faultRetirePending, "page retirement pending: reset the GPU or reload the driver")
	}
	if e := g.ECC; e != nil {
		switch {
		case !e.Enabled && !allowECCOff && e.PendingEnabled:
			add(eccOffStatus(cfg), faultECCOnAfterReset, "ECC off until the next reset: reset the GPU")
		case !e.Enabled && !allowECCOff:
			add(eccOffStatus(cfg), faultECCOff, "ECC off: turn it on (%s -e 1) and reset the GPU", smi)
		case e.Enabled && !e.PendingEnabled:
			add(StatusWarn, "", "ECC turns off at the next reset: %s -e 1 keeps it on", smi)
		case !e.Enabled && e.PendingEnabled:
			add(StatusWarn, "", "ECC turns on at the next reset")
		}
	}
	if p := g.RetiredPages; p != nil && p.DoubleBit > retiredDBEPagesWarn && p.SingleBit+p.DoubleBit < cfg.RetiredPagesLimit {
		add(StatusWarn, "", "%d pages retired after double-bit errors (over %d): run dcgmi diag -r 3 and watch for more", p.DoubleBit, retiredDBEPagesWarn)
	}
	// ok findings never get here; keep the worst first (a warn on ECC mode can follow a fail).
	slices.SortStableFunc(f, func(a, b memFinding) int { return b.status.rank() - a.status.rank() })
	return f
}

func eccOffStatus(cfg *gpuMemoryErrorsConfig) Status {
	if cfg.ECCOff == verdictWarn {
		return StatusWarn
	}
	return StatusFail
}

// memObserved is what NVML reported for g, one line: "ECC on; uncorrectable ECC errors: 0
// since driver load, 0 lifetime; remapped rows: 0 correctable, 0 uncorrectable, pending no,
// failed no".
func memObserved(g node.GPU) string {
	var parts []string
	if e := g.ECC; e != nil {
		mode := map[[2]bool]string{{true, true}: "ECC on", {false, false}: "ECC off",
			{true, false}: "ECC on, off after reset", {false, true}: "ECC off, on after reset"}[[2]bool{e.Enabled, e.PendingEnabled}]
		parts = append(parts, mode)
		if e.VolatileUncorrected != nil || e.AggregateUncorrected != nil {
			parts = append(parts, "uncorrectable ECC errors: "+eccCounter(e.VolatileUncorrected)+" since driver load, "+eccCounter(e.AggregateUncorrected)+" lifetime")
		}
	} else {
		parts = append(parts, "ECC mode not reported")
	}
	if r := g.RemappedRows; r != nil {
		parts = append(parts, fmt.Sprintf("remapped rows: %d correctable, %d uncorrectable, pending %s, failed %s",
			r.Correctable, r.Uncorrectable, yesNoWord(r.Pending), yesNoWord(r.Failed)))
	}
	if p := g.RetiredPages; p != nil {
		parts = append(parts, fmt.Sprintf("retired pages: %d single-bit, %d double-bit, pending %s", p.SingleBit, p.DoubleBit, yesNoWord(p.Pending)))
	}
	return strings.Join(parts, "; ")
}

func memExpected(cfg *gpuMemoryErrorsConfig) string {
	return fmt.Sprintf("ECC on; 0 uncorrectable ECC errors since driver load; no remap or retirement pending or failed; under %d retired pages", cfg.RetiredPagesLimit)
}

func eccCounter(p *uint64) string {
	if p == nil {
		return "not read"
	}
	return strconv.FormatUint(*p, 10)
}

func yesNoWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orUnknownName(name string) string {
	if name == "" {
		return "unnamed GPU"
	}
	return text.OneLine(name, 60)
}

// Faults declares the check's own rows of the remedy table.
func (gpuMemoryErrors) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultRemapFailed, "row remapping failed", RemedyService,
				"NVIDIA's RMA policy: \"the RMA criteria is met when the row-remapping failure flag is set\", https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html"},
			{faultRetiredLimit, "retired pages at or above retired_pages_limit (63)", RemedyService,
				"DCGM_LIMIT_MAX_RETIRED_PAGES, matched to the field diagnostic; DCGM_FR_RETIRED_PAGES_LIMIT_NEXT: run a field diagnostic (RMA)"},
			{faultUncorrectable, "uncorrectable ECC errors since the driver loaded (volatile)", RemedyResetGPU,
				"DCGM_FR_VOLATILE_DBE_DETECTED_NEXT: \"Drain the GPU and reset it or reboot the node\""},
			{faultRemapPending, "a row remapping pending", RemedyResetGPU,
				"a remap \"will happen at the next GPU reset\", https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html"},
			{faultRetirePending, "a page retirement pending (before Ampere)", RemedyResetGPU,
				"DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS_NEXT: \"Drain the GPU and reset it or reboot the node\"; https://docs.nvidia.com/deploy/dynamic-page-retirement/"},
			{faultECCOff, "ECC off on a GPU that has it, and not set to turn on", RemedyAdmin,
				"DCGM_FR_ECC_DISABLED_NEXT: enable it with nvidia-smi -i N -e 1, then a reset: a setting a person chooses"},
			{faultECCOnAfterReset, "ECC off until the next reset, which turns it on", RemedyResetGPU,
				"nvidia-smi -e takes effect at the next GPU reset (DCGM_FR_ECC_DISABLED_NEXT)"},
		},
	}
}

// Explain is what `nodecheck explain gpu_memory_errors` says.
func (gpuMemoryErrors) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: the ECC mode, current and after the next reset (nvmlDeviceGetEccMode).",
			"NVML: the uncorrectable ECC error counts, since the driver loaded (volatile) and over the GPU's life (aggregate) (nvmlDeviceGetTotalEccErrors).",
			"NVML: row remapping (Ampere and later): rows remapped after correctable and uncorrectable errors, remap pending, remap failed (nvmlDeviceGetRemappedRows).",
			"NVML: dynamic page retirement (before Ampere): pages retired after single- and double-bit errors, retirement pending (nvmlDeviceGetRetiredPages, nvmlDeviceGetRetiredPagesPendingStatus).",
			"The PCI bus, only when NVML is unavailable or lists no GPU: the NVIDIA GPUs on it, to tell a CPU node from a broken one.",
		},
		Passes: "Every GPU that reports memory error state runs with ECC on (or off where ecc_off or ecc_off_models allow it), has had no uncorrectable ECC error since the driver loaded, has no row remapping or page retirement pending or failed, and has fewer than retired_pages_limit retired pages. A few retired pages or remapped rows are what those mechanisms are for: they are shown in the details, not judged. So are the lifetime (aggregate) uncorrectable error counts.",
		Warns:  "The ECC mode changes at the next reset (someone ran nvidia-smi -e), more than 15 pages were retired after double-bit errors (DCGM's soft limit: watch whether more follow), or, with ecc_off = \"warn\" or pending = \"warn\", ECC is off or a remap or retirement waits for a reset.",
		Fails:  "Row remapping failed (no spare row left: NVIDIA's RMA criterion) or retired pages reached retired_pages_limit (DCGM's and the field diagnostic's RMA limit, 63): replace the GPU. An uncorrectable ECC error happened since the driver loaded, or a row remapping or page retirement waits for a GPU reset to take effect: reset the GPU. ECC is off on a GPU that has it (data-centre GPUs ship with ECC on; off, memory corruption goes undetected). The summary names the GPU by index and bus id, and what to do.",
		Skips:  "No GPU reports ECC, row remapping or page retirement (consumer GPUs without ECC), or NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus.",
		Errors: "NVML is unavailable, or lists no GPU, on a node with NVIDIA GPUs on the PCI bus; NVML lost a GPU (ERROR_GPU_IS_LOST) so that its memory state cannot be read (gpu_count fails the node for that); or NVML did not report, for a GPU, what every GPU of its model reports: the remapped rows of A100, A10, A30, A40, H100, H200 and later data-centre GPUs, the ECC mode of data-centre GPUs, the retired pages of V100, P100 and T4, or the uncorrectable error count where ECC is on. The summary names the GPU and what was missing.",
		Keys: map[string]string{
			"ecc_off":             `What a GPU that has ECC but runs with it off gives: "fail", "warn" or "ok".`,
			"ecc_off_models":      `GPUs that may run with ECC off whatever ecc_off says, as words of their NVML names matched like gpu_models rules ("geforce" matches "NVIDIA GeForce RTX 4090"): the workstation and consumer GPUs NVIDIA ships with ECC off.`,
			"pending":             `What a row remapping or page retirement that waits for a GPU reset gives: "fail" drains the node so that running jobs finish and the GPU can be reset; "warn" leaves the reset to a maintenance schedule.`,
			"retired_pages_limit": "Retired pages (single- and double-bit together) at or above which a GPU fails as one to replace. 63 is DCGM's limit, matched to NVIDIA's field diagnostic; a GPU can retire at most 64.",
		},
		Fix: []string{
			"nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i N shows what NVML reports for GPU N: ECC mode (current and pending), the volatile and aggregate error counts, the remapped rows with Pending and Remapping Failure Occurred, and the retired pages.",
			"Uncorrectable errors, or a remap or retirement pending: once the drain has let running jobs finish, reset the GPU (nvidia-smi -r -i N, after stopping what keeps it open, such as nvidia-dcgm or nvidia-persistenced) or reboot the node. The remap or retirement takes effect at the reset: check again that Pending reads No and the volatile counts are 0.",
			"ECC off: nvidia-smi -i N -e 1, then reset the GPU (nvidia-smi -r -i N) or reboot. If the GPU is one that ships with ECC off on purpose, add its model to ecc_off_models instead.",
			"Row remapping failed, or retired pages at the limit: run NVIDIA's diagnostics (dcgmi diag -r 3, or the field diagnostic) and open an RMA case with their output and nvidia-bug-report.sh; keep the node drained until the GPU is replaced.",
			"The same GPU back with new uncorrectable errors soon after a reset points at failing memory: treat it as an RMA case too.",
		},
	}
}
