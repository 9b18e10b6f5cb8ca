package checks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idDCGMDiag = "dcgm_diag"

// The ways dcgm_diag fails: its rows of the remedy table (Faults), one per DCGM severity.
const (
	faultDCGMDiagReset        fault = "dcgm_diag/reset"
	faultDCGMDiagReboot       fault = "dcgm_diag/reboot"
	faultDCGMDiagIsolate      fault = "dcgm_diag/isolate"
	faultDCGMDiagTriage       fault = "dcgm_diag/triage"
	faultDCGMDiagConfig       fault = "dcgm_diag/config"
	faultDCGMDiagUnrecognised fault = "dcgm_diag/unrecognised"
)

// dcgmDiag runs DCGM's diagnostic (`dcgmi diag -r LEVEL -j`) on the site's host engine and
// judges each failing test on its GPU by DCGM's severity of its errors. It runs when an admin
// asks (manual mode, the default); where a site adds health to its modes, health runs run
// level 1 (deployment and software checks, no load on the GPUs) when the run's budget leaves
// room for it, since the longer levels load the GPUs for minutes. Never in a prolog or epilog.
type dcgmDiag struct{}

func (dcgmDiag) ID() string { return idDCGMDiag }

func (dcgmDiag) Description() string {
	return "DCGM's diagnostic (dcgmi diag -r LEVEL; manual runs, and level 1 in health runs where configured): each failing test a finding on its GPU, judged by DCGM's severity"
}

// GPUFields implements gpuFactsUser: the facts that name a GPU, for DCGM's GPU ids.
func (dcgmDiag) GPUFields() node.GPUFields { return dcgmGPUFields }

// dcgmDiagConfig is [checks.dcgm_diag].
type dcgmDiagConfig struct {
	config.CheckCommon
	DCGMI    string `toml:"dcgmi"`
	Host     string `toml:"host"`
	Required bool   `toml:"required"`
	// Level is dcgmi diag's run level, 1 to 4.
	Level int `toml:"level"`
	// MinBudget is the time the run must have left for the diagnostic to start in a health
	// run: about what the level takes.
	MinBudget time.Duration `toml:"min_budget"`
	// WarnCodes are DCGM failure codes reported as warnings whatever their severity.
	WarnCodes []int `toml:"warn_codes"`
}

// Section runs the diagnostic in manual mode by default. A health run runs level 1 once
// "health" is in modes, with a timeout under budget.health (config refuses a longer one): a
// default timeout a diagnostic fits in would make every config whose budget.health is shorter
// invalid, DCGM or not.
func (dcgmDiag) Section() config.Section {
	return &dcgmDiagConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 60 * time.Second, Modes: []string{"manual"}},
		DCGMI:       "/usr/bin/dcgmi",
		Host:        dcgmDefaultHost,
		Level:       1,
		MinBudget:   30 * time.Second,
	}
}

// ValidateSection implements config.SectionValidator.
func (c *dcgmDiagConfig) ValidateSection() []config.Problem {
	errs := validateDCGMConn(c.DCGMI, c.Host, c.Modes)
	if c.Level < 1 || c.Level > 4 {
		errs = append(errs, config.Problemf("level", " = %d: give a dcgmi diag run level, 1 to 4 (1 in health runs: the others load the GPUs for minutes)", c.Level))
	}
	if c.MinBudget < 0 {
		errs = append(errs, config.Problemf("min_budget", " = %s: give a duration of 0 or more, such as \"30s\"", c.MinBudget))
	}
	return append(errs, validateWarnCodes(c.WarnCodes)...)
}

func (c *dcgmDiagConfig) conn() dcgmConn {
	return dcgmConn{dcgmi: c.DCGMI, host: c.Host, required: c.Required}
}

func (dcgmDiag) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*dcgmDiagConfig](env.Config, idDCGMDiag)
	if res, ok := dcgmDiagGate(env, cfg, time.Now()); !ok {
		return res
	}
	out, res, ok := dcgmAsk(ctx, env, cfg.conn(), dcgm.DiagArgv(cfg.DCGMI, cfg.Host, cfg.Level))
	if !ok {
		return res
	}
	rep, err := dcgm.ParseDiag([]byte(out.Stdout))
	if err != nil {
		return Result{Status: StatusError, Summary: fmt.Sprintf("cannot read dcgmi diag -r %d (exit %d)%s: %s", cfg.Level, out.ExitCode, dcgmLastLine(out), err), Err: err}
	}
	return judgeDCGMDiag(rep, cfg.Level, readDCGMGPUs(ctx, env), cfg.WarnCodes)
}

// dcgmDiagGate says whether the diagnostic may run in this run: never in a prolog or epilog;
// in a health run only level 1, and only where the run's budget has min_budget left.
func dcgmDiagGate(env *Env, cfg *dcgmDiagConfig, now time.Time) (Result, bool) {
	switch {
	case env.Mode.JobHook():
		return Result{Status: StatusSkip, Summary: "not run in " + string(env.Mode) + " mode: a " + string(env.Mode) + " does not wait for DCGM's diagnostic"}, false
	case env.Mode == config.ModeHealth && cfg.Level > 1:
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("level %d not run in health mode: levels 2-4 load the GPUs for minutes; health runs run level 1, manual runs (and validation) the longer levels", cfg.Level)}, false
	case env.Mode == config.ModeHealth && !env.Budget.Deadline.IsZero() && env.Budget.Deadline.Sub(now) < cfg.MinBudget:
		left := max(env.Budget.Deadline.Sub(now), 0).Round(time.Second)
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("not run: the run has %s of its budget left, a level %d diagnostic needs about %s (min_budget)", left, cfg.Level, cfg.MinBudget)}, false
	}
	return Result{}, true
}

// judgeDCGMDiag judges a diagnostic: each result that is not a pass or a skip is a detail on
// its GPU (or the node), classified by the most drastic of DCGM's severities of its errors
// (dcgmClassify). dcgmi prints a test that only warned as "Fail" (Diag::HelperDisplayDiagResult
// without DDR_DISPLAY_WARN), so the severities decide, not the word: a result whose errors are
// all MONITOR warns.
func judgeDCGMDiag(rep dcgm.DiagReport, level int, gpus dcgmGPUs, warnCodes []int) Result {
	res := Result{Status: StatusOK, Expected: "every test Pass (or Skip), or only MONITOR errors"}
	version := ""
	if rep.Version != "" {
		version = " (DCGM " + rep.Version + ")"
	}
	if rep.RuntimeError != "" && len(rep.Tests) == 0 {
		res.Status, res.Summary = StatusError, text.OneLine(fmt.Sprintf("DCGM's level %d diagnostic did not run%s: %s", level, version, rep.RuntimeError), 200)
		res.Err = fmt.Errorf("%s", rep.RuntimeError)
		return res
	}
	var bad []Detail
	counts := map[string]int{}
	for _, t := range rep.Tests {
		for _, r := range t.Results {
			counts[r.Status]++
			d, ok := dcgmResultDetail(t, r, rep.Serials[r.Entity], gpus, warnCodes)
			if !ok {
				continue
			}
			res.Details = append(res.Details, d)
			if d.Status != StatusOK && d.Status != StatusSkip {
				bad = append(bad, d)
			}
		}
	}
	res.Observed = fmt.Sprintf("%d pass, %d fail, %d skip", counts[dcgm.DiagPass], counts[dcgm.DiagFail]+counts[dcgm.DiagWarn], counts[dcgm.DiagSkip])
	if len(bad) > 0 {
		summarizeWorst(&res, bad)
		res.Summary = text.OneLine(res.Summary, 200)
		return res
	}
	res.Summary = fmt.Sprintf("DCGM level %d diagnostic%s: %d tests passed", level, version, counts[dcgm.DiagPass])
	if n := counts[dcgm.DiagSkip]; n > 0 {
		res.Summary += fmt.Sprintf(", %d skipped", n)
	}
	return res
}

// dcgmResultDetail is one result as a detail; ok is false for a pass with nothing to say.
func dcgmResultDetail(t dcgm.DiagTest, r dcgm.DiagResult, serial string, gpus dcgmGPUs, warnCodes []int) (Detail, bool) {
	var subject Subject
	label := "node"
	if r.HasEntity {
		subject, label = gpus.entity(r.Group, r.Entity, serial)
	}
	d := Detail{Device: label, Status: StatusOK, Subject: subject, Observed: r.Status}
	test := t.Category + "/" + t.Name
	switch r.Status {
	case dcgm.DiagPass, dcgm.DiagNotRun:
		return d, false
	case dcgm.DiagSkip:
		d.Status = StatusSkip
		d.Message = fmt.Sprintf("%s: %s skipped%s", label, test, dcgmWarningText(r.Warnings))
		return d, true
	}
	// Fail, Warn, or a word dcgmi does not print: the errors' severities decide.
	failed := r.Status != dcgm.DiagWarn
	class, worst := dcgmClassOK, dcgm.DiagWarning{}
	for _, w := range r.Warnings {
		e := w.Error()
		_, known := dcgm.Lookup(w.Code)
		c := dcgmClassify(e, known && w.Code != 0, w.Severity, failed, warnCodes)
		if c > class {
			class, worst = c, w
		}
	}
	if len(r.Warnings) == 0 {
		class = dcgmClassMonitor
		if failed {
			class = dcgmClassUnrecognised
		}
	}
	note := "no DCGM error given"
	if len(r.Warnings) > 0 {
		note = dcgmCodeNote(worst.Error(), worst.Code != 0, worst.Severity)
	}
	d.Message = fmt.Sprintf("%s: %s %s: %s (%s)", label, test, r.Status, text.OneLine(dcgmFirstMessage(r), 160), note)
	switch class {
	case dcgmClassOK, dcgmClassMonitor:
		d.Status = StatusWarn
	case dcgmClassReset:
		failDetail(&d, faultDCGMDiagReset)
	case dcgmClassReboot:
		failDetail(&d, faultDCGMDiagReboot)
	case dcgmClassIsolate:
		failDetail(&d, faultDCGMDiagIsolate)
	case dcgmClassTriage:
		failDetail(&d, faultDCGMDiagTriage)
	case dcgmClassConfig:
		failDetail(&d, faultDCGMDiagConfig)
	case dcgmClassUnrecognised:
		failDetail(&d, faultDCGMDiagUnrecognised)
	}
	return d, true
}

// dcgmFirstMessage is the result's first error message, or its first info line.
func dcgmFirstMessage(r dcgm.DiagResult) string {
	for _, w := range r.Warnings {
		if w.Message != "" {
			return w.Message
		}
	}
	if len(r.Info) > 0 {
		return r.Info[0]
	}
	return "no message"
}

// dcgmWarningText is ": <first message>" of a skipped result's errors, or "".
func dcgmWarningText(ws []dcgm.DiagWarning) string {
	for _, w := range ws {
		if m := strings.TrimSpace(w.Message); m != "" {
			return ": " + text.OneLine(m, 120)
		}
	}
	return ""
}

// Faults declares the check's own rows of the remedy table: one per DCGM severity.
func (dcgmDiag) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultDCGMDiagReset, "a DCGM diagnostic error of severity RESET (pending row remaps or page retirements, a NCCL error)", RemedyResetGPU,
			dcgmSource + ": DCGM_ERROR_RESET \"Drain and reset GPU\""},
		{faultDCGMDiagReboot, "a DCGM diagnostic error whose code asks for a reboot (DCGM_FR_GPU_RECOVERY_REBOOT, DCGM_FR_FALLEN_OFF_BUS)", RemedyReboot,
			"dcgm_errors.h: GPU_RECOVERY_REBOOT \"Node requires reboot due to GPU fault\"; " + srcXIDCatalog + " (XID 79: RESTART_BM)"},
		{faultDCGMDiagIsolate, "a DCGM diagnostic error of severity ISOLATE (faulty memory, a memory mismatch, double-bit errors, broken P2P, a PCIe replay violation, an EUD test failed)", RemedyService,
			dcgmSource + ": DCGM_ERROR_ISOLATE \"Cannot perform workload. GPU should be isolated.\"; dcgmi diag exits DCGM_ST_NVVS_ISOLATE_ERROR for it"},
		{faultDCGMDiagTriage, "a DCGM diagnostic error of severity TRIAGE (low bandwidth or stress level, a CUDA error, NVLinks down, an XID)", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_TRIAGE \"This error should be triaged\": a person decides"},
		{faultDCGMDiagConfig, "a DCGM diagnostic error of severity CONFIG (persistence mode off, CUDA-limiting environment variables, a denylisted driver, ECC off)", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_CONFIG \"This error can be configured\""},
		{faultDCGMDiagUnrecognised, "a DCGM diagnostic test failed with no DCGM error, or with a code of severity UNKNOWN", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_UNKNOWN; a person reads nvvs.log (/var/log/nvidia-dcgm)"},
	}}
}

// Explain is what `nodecheck explain dcgm_diag` says.
func (dcgmDiag) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"dcgmi diag --host HOST -r LEVEL -j on every GPU, through the site's host engine (the host is always given: a dcgmi diag that cannot reach one would start its own). DCGM 4's layout (\"DCGM Diagnostic\": per-entity results, test_summary, entity_groups with serials) and DCGM 3's (\"DCGM GPU Diagnostic\": per-GPU gpu_id results) are both read.",
			"NVML's GPUs (bus id, UUID, serial), to name DCGM's GPU ids (by serial where DCGM gives one).",
			"The configured level in manual runs (the default modes). With \"health\" in modes (and a timeout under budget.health), level 1 (deployment and software: libraries, permissions, persistence mode, environment, page retirement and row remap, graphics processes, InfoROM, Fabric Manager; no load on the GPUs) in health runs that have min_budget of their budget left. Never in a prolog or epilog.",
		},
		Passes: "Every test passes or is skipped, or the only errors are of severity MONITOR (or in warn_codes), which warn.",
		Fails:  "A test fails on a GPU with an error of severity RESET (reset_gpu), ISOLATE (service), TRIAGE or CONFIG (admin), a code that asks for a reboot (reboot), or with no DCGM error (admin); each is a detail on its GPU with the test, DCGM's code, severity and message. dcgmi's JSON prints a test that only warned as \"Fail\": the severities decide.",
		Skips:  "DCGM is not there (no dcgmi, no host engine at host, a dcgmi older than 3.0); a health run with less than min_budget of its budget left; level 2-4 in a health run; prolog and epilog mode.",
		Errors: "The diagnostic did not finish within the check's timeout (the host engine is named), reported a runtime_error (another diagnostic running, a GPU in use), or printed what cannot be read; DCGM absent where required = true.",
		Keys: map[string]string{
			"dcgmi":      "dcgmi, by absolute path.",
			"host":       "The host engine's address, as dcgmi --host takes it: \"localhost\" (port 5555), \"HOST:PORT\", or \"unix:///PATH\".",
			"required":   "Absent DCGM (no dcgmi, no host engine, an old version) is an error (undecided) instead of a skip.",
			"level":      "dcgmi diag's run level, 1 to 4. Health runs run level 1 only (2-4 load the GPUs for minutes); manual runs run this level. Set timeout to match: level 2 takes minutes, 3 and 4 tens of minutes.",
			"min_budget": "The least time a health run must have left of its budget for the diagnostic to start; about what level 1 takes.",
			"warn_codes": "DCGM failure codes (dcgm_errors.h, e.g. 29 for DCGM_FR_PERSISTENCE_MODE) reported as warnings whatever their severity.",
		},
		Fix: []string{
			"dcgmi diag -r 1 (text) shows the same results for people; nvvs.log in /var/log/nvidia-dcgm has the detail.",
			"CONFIG errors: nvidia-smi -pm 1 (or nvidia-persistenced) for persistence mode; unset CUDA_* variables that limit CUDA in nv-hostengine's environment.",
			"ISOLATE errors: keep the GPU out, run dcgmi diag -r 3 on it, and open a vendor case with nvidia-bug-report.sh.",
			"nodecheck explain dcgm_health: DCGM's passive health watches.",
		},
	}
}

// JudgeDCGMDiagOutput judges the stdout of `dcgmi diag -r LEVEL -j` as dcgm_diag does, for
// `nodecheck validate`: each failing test is a detail on its GPU (by DCGM's GPU id), its
// status and remedy from DCGM's severity. An output that cannot be read is an error result.
func JudgeDCGMDiagOutput(stdout []byte, level int) Result {
	rep, err := dcgm.ParseDiag(stdout)
	if err != nil {
		return Result{Status: StatusError, Summary: fmt.Sprintf("cannot read dcgmi diag -r %d: %s", level, err), Err: err}
	}
	res := judgeDCGMDiag(rep, level, dcgmGPUs{}, nil)
	settleRemedy(&res)
	return res
}
