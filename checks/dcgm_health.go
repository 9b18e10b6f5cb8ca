package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idDCGMHealth = "dcgm_health"

// The ways dcgm_health fails: its rows of the remedy table (Faults), one per DCGM severity.
const (
	faultDCGMHealthReset        fault = "dcgm_health/reset"
	faultDCGMHealthReboot       fault = "dcgm_health/reboot"
	faultDCGMHealthIsolate      fault = "dcgm_health/isolate"
	faultDCGMHealthTriage       fault = "dcgm_health/triage"
	faultDCGMHealthConfig       fault = "dcgm_health/config"
	faultDCGMHealthUnrecognised fault = "dcgm_health/unrecognised"
)

// dcgmHealth reads the incidents of the site's DCGM health watches (`dcgmi health -c -j`):
// what the host engine saw over the last minutes that a one-shot NVML read cannot (PCIe
// replay rates, NVLink and NVSwitch errors, memory, thermal and power incidents, the
// driver's recovery actions, ConnectX and IMEX on DCGM 4). It makes sure the watches it
// needs are set, and judges each incident by DCGM's own severity of its code. It reads the
// running host engine and never starts one: the PCIe, thermal and power watches need about a
// minute of samples, which an engine started for the run would not have.
type dcgmHealth struct{}

func (dcgmHealth) ID() string { return idDCGMHealth }

func (dcgmHealth) Description() string {
	return "DCGM's health watches (dcgmi health -c): each incident a finding on its GPU, NVSwitch or HCA, judged by DCGM's severity"
}

// GPUFields implements gpuFactsUser: the facts that name a GPU, for DCGM's GPU ids.
func (dcgmHealth) GPUFields() node.GPUFields { return dcgmGPUFields }

// dcgmHealthConfig is [checks.dcgm_health].
type dcgmHealthConfig struct {
	config.CheckCommon
	// DCGMI is dcgmi, by absolute path.
	DCGMI string `toml:"dcgmi"`
	// Host is the host engine's address as dcgmi --host takes it.
	Host string `toml:"host"`
	// Group is the DCGM group whose watches are set and read: "a" (every entity).
	Group string `toml:"group"`
	// Required makes absent DCGM an error instead of a skip.
	Required bool `toml:"required"`
	// SetWatches sets the watches nodecheck needs where they are off (dcgmi health -s a).
	SetWatches bool `toml:"set_watches"`
	// WarnCodes are DCGM failure codes reported as warnings whatever their severity.
	WarnCodes []int `toml:"warn_codes"`
}

func (dcgmHealth) Section() config.Section {
	return &dcgmHealthConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		DCGMI:       "/usr/bin/dcgmi",
		Host:        dcgmDefaultHost,
		Group:       "a",
		SetWatches:  true,
	}
}

// ValidateSection implements config.SectionValidator.
func (c *dcgmHealthConfig) ValidateSection() []config.Problem {
	errs := validateDCGMConn(c.DCGMI, c.Host, c.Modes)
	if g := c.Group; g == "" || !(slices.Contains([]string{"a", "g", "s"}, g) || strings.Trim(g, "0123456789") == "") {
		errs = append(errs, config.Problemf("group", " = %q: give a DCGM group as dcgmi -g takes it: \"a\" (every entity), \"g\" (GPUs), \"s\" (NVSwitches) or a group's number", g))
	}
	return append(errs, validateWarnCodes(c.WarnCodes)...)
}

func validateWarnCodes(codes []int) []config.Problem {
	for _, c := range codes {
		if _, ok := dcgm.Lookup(c); !ok {
			return []config.Problem{config.Problemf("warn_codes", ": %d is no DCGM failure code (dcgm_errors.h: 1 to 132)", c)}
		}
	}
	return nil
}

func (c *dcgmHealthConfig) conn() dcgmConn {
	return dcgmConn{dcgmi: c.DCGMI, host: c.Host, required: c.Required}
}

func (dcgmHealth) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*dcgmHealthConfig](env.Config, idDCGMHealth)
	if env.Mode.JobHook() {
		return Result{Status: StatusSkip, Summary: "not run in " + string(env.Mode) + " mode: a " + string(env.Mode) + " does not wait for DCGM"}
	}
	conn := cfg.conn()
	out, res, ok := dcgmAsk(ctx, env, conn, dcgm.HealthWatchesArgv(cfg.DCGMI, cfg.Host, cfg.Group))
	if !ok {
		return res
	}
	watches, err := dcgm.ParseWatches([]byte(out.Stdout))
	if err != nil {
		return Result{Status: StatusError, Summary: "cannot read the health watches" + dcgmLastLine(out) + ": " + err.Error(), Err: err}
	}
	w := dcgmWatchState{missing: watches.Missing()}
	if len(w.missing) > 0 && cfg.SetWatches && !env.ReadOnly {
		set, res, ok := dcgmAsk(ctx, env, conn, dcgm.HealthSetArgv(cfg.DCGMI, cfg.Host, cfg.Group))
		if !ok {
			return res
		}
		if set.ExitCode != 0 {
			return Result{Status: StatusError, Summary: fmt.Sprintf("dcgmi health -s a exited %d%s", set.ExitCode, dcgmLastLine(set))}
		}
		w.setNow = true
	}
	out, res, ok = dcgmAsk(ctx, env, conn, dcgm.HealthCheckArgv(cfg.DCGMI, cfg.Host, cfg.Group))
	if !ok {
		return res
	}
	if dcgm.Classify(out.Stdout, out.Stderr, out.ExitCode) == dcgm.OutcomeWatchesOff {
		return dcgmAbsent(conn, "no DCGM health watch is set on group "+cfg.Group+" (set_watches = false, or a read-only run): dcgmi health -s a sets them")
	}
	rep, err := dcgm.ParseHealthCheck([]byte(out.Stdout))
	if err != nil {
		return Result{Status: StatusError, Summary: fmt.Sprintf("cannot read dcgmi health -c (exit %d)%s: %s", out.ExitCode, dcgmLastLine(out), err), Err: err}
	}
	return judgeDCGMHealth(rep, w, readDCGMGPUs(ctx, env), cfg.WarnCodes, conn)
}

// dcgmWatchState is what the run found of the watches: the ones off, and whether nodecheck
// set them now (and so the minute-long watches have no data yet).
type dcgmWatchState struct {
	missing []string
	setNow  bool
}

// judgeDCGMHealth judges the incidents: each is a detail on its entity, classified by DCGM's
// severity of its code (dcgmClassify). No incident is ok where the watches were set before
// this run; where they were not, it says nothing yet, and the result says so (a skip, or an
// error where DCGM is required).
func judgeDCGMHealth(rep dcgm.HealthReport, w dcgmWatchState, gpus dcgmGPUs, warnCodes []int, conn dcgmConn) Result {
	res := Result{Status: StatusOK, Observed: "DCGM overall health " + orUnknown(rep.Overall), Expected: "no incident DCGM rates above MONITOR"}
	var bad []Detail
	for _, inc := range rep.Incidents {
		d := dcgmIncidentDetail(inc, gpus, warnCodes)
		res.Details = append(res.Details, d)
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		summarizeWorst(&res, bad)
		res.Summary = text.OneLine(res.Summary, 200)
		return res
	}
	switch {
	case w.setNow:
		r := dcgmAbsent(conn, fmt.Sprintf("the DCGM health watches %s were off; nodecheck set them now (dcgmi health -s a): PCIe, memory, thermal, power and NVLink need a minute of samples, the next run judges", strings.Join(w.missing, ", ")))
		r.Details = res.Details
		return r
	case len(w.missing) > 0:
		res.Details = append(res.Details, Detail{Device: "watches", Status: StatusWarn,
			Message: "DCGM health watches off: " + strings.Join(w.missing, ", ") + " (set_watches = false, or a read-only run): their incidents are not seen"})
		res.Status = StatusWarn
		res.Summary = "DCGM " + orUnknown(rep.Overall) + ", but watches off: " + strings.Join(w.missing, ", ")
		return res
	}
	res.Summary = "DCGM health " + orUnknown(rep.Overall) + ": no incident"
	return res
}

// dcgmIncidentDetail is one incident as a detail on its entity.
func dcgmIncidentDetail(inc dcgm.Incident, gpus dcgmGPUs, warnCodes []int) Detail {
	subject, label := gpus.entity(inc.Group, inc.Entity, "")
	sev := inc.Error.Severity
	class := dcgmClassify(inc.Error, inc.Known, sev, inc.Health == dcgm.HealthFailure, warnCodes)
	system := inc.System
	if system == "" {
		system = "DCGM"
	}
	d := Detail{Device: label, Status: StatusOK, Subject: subject, Observed: inc.Health,
		Message: fmt.Sprintf("%s: %s: %s (%s; DCGM: %s)", label, system, text.OneLine(inc.Message, 160), dcgmCodeNote(inc.Error, inc.Known, sev), orUnknown(inc.Health))}
	switch class {
	case dcgmClassMonitor:
		d.Status = StatusWarn
	case dcgmClassReset:
		failDetail(&d, faultDCGMHealthReset)
	case dcgmClassReboot:
		failDetail(&d, faultDCGMHealthReboot)
	case dcgmClassIsolate:
		failDetail(&d, faultDCGMHealthIsolate)
	case dcgmClassTriage:
		failDetail(&d, faultDCGMHealthTriage)
	case dcgmClassConfig:
		failDetail(&d, faultDCGMHealthConfig)
	case dcgmClassUnrecognised:
		failDetail(&d, faultDCGMHealthUnrecognised)
	}
	return d
}

// Faults declares the check's own rows of the remedy table: one per DCGM severity.
func (dcgmHealth) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultDCGMHealthReset, "a DCGM health incident of severity RESET (pending page retirements or row remaps, the driver's GPU_RESET, DRAIN_P2P or DRAIN_AND_RESET recovery actions)", RemedyResetGPU,
			dcgmSource + ": DCGM_ERROR_RESET \"Drain and reset GPU\""},
		{faultDCGMHealthReboot, "a DCGM health incident whose code asks for a reboot: DCGM_FR_GPU_RECOVERY_REBOOT (the driver's NODE_REBOOT recovery action) or DCGM_FR_FALLEN_OFF_BUS (XID 79)", RemedyReboot,
			"dcgm_errors.h: GPU_RECOVERY_REBOOT \"Node requires reboot due to GPU fault\"; " + srcXIDCatalog + " (XID 79: RESTART_BM)"},
		{faultDCGMHealthIsolate, "a DCGM health incident of severity ISOLATE (a PCIe replay rate over DCGM's limit, double-bit ECC errors, retired pages over the limit, NVLink errors over threshold, NVSwitch fatal errors, IMEX unhealthy)", RemedyService,
			dcgmSource + ": DCGM_ERROR_ISOLATE \"Cannot perform workload. GPU should be isolated.\": hardware to replace or a vendor case once isolated"},
		{faultDCGMHealthTriage, "a DCGM health incident of severity TRIAGE (a corrupt InfoROM, an NVLink down, an XID DCGM rates for triage)", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_TRIAGE \"This error should be triaged\" (TRIAGE_RUN_FIELD_DIAG_MSG: run a field diagnostic): a person decides"},
		{faultDCGMHealthConfig, "a DCGM health incident of severity CONFIG", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_CONFIG \"This error can be configured\""},
		{faultDCGMHealthUnrecognised, "a DCGM health incident DCGM itself rates Failure whose message matches no DCGM code nodecheck knows (a newer DCGM's), or of severity UNKNOWN", RemedyAdmin,
			dcgmSource + ": DCGM_ERROR_UNKNOWN \"This error code is not recognized\": a person reads it"},
	}}
}

// Explain is what `nodecheck explain dcgm_health` says.
func (dcgmHealth) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"dcgmi health --host HOST -g GROUP -f -j: which health watches the site's DCGM host engine keeps; where one nodecheck needs is off (PCIe, NVLink with IMEX, memory, InfoROM, thermal, power, driver, NVSwitch fatal and non-fatal, ConnectX on DCGM 4) and set_watches = true, dcgmi health -s a sets them (not in a replay or a dry run). DCGM has no SM watch: its health module implements none.",
			"dcgmi health --host HOST -g GROUP -c -j: the incidents. dcgmi prints each incident's message, not its code: the code is the DCGM message format (dcgm_errors.h) the message matches, and its severity DCGM's table's (dcgm_errors.c).",
			"NVML's GPUs (bus id, UUID, serial), to name DCGM's GPU ids: DCGM numbers GPUs in NVML's order.",
			"Never in a prolog or epilog, and never from a host engine of its own: the PCIe, thermal and power watches need about a minute of samples, which only the site's running nv-hostengine has.",
		},
		Passes: "DCGM reports no incident, or only incidents of severity MONITOR (or codes in warn_codes), which warn.",
		Fails:  "An incident of severity RESET (reset_gpu), ISOLATE (service), TRIAGE or CONFIG (admin), a code whose words ask for a reboot (reboot), or one DCGM rates Failure that matches no code (admin). Each is a detail on the GPU, NVSwitch or HCA it names, with DCGM's code, severity and message. A PCIe replay incident, such as the one `dcgmi test --inject --gpuid 0 -f 202` injects, is DCGM_FR_PCI_REPLAY_RATE, ISOLATE, though DCGM reports it as a Warning: it fails.",
		Skips:  "DCGM is not there: dcgmi not installed, no host engine answering at host, a dcgmi older than 3.0; or the watches were off and nodecheck has just set them, so they have no data yet (an incident found anyway still fails). Also in prolog and epilog mode.",
		Errors: "The host engine did not answer within the check's timeout (the summary names it), dcgmi's output cannot be read, or DCGM is absent or unprimed where required = true.",
		Keys: map[string]string{
			"dcgmi":       "dcgmi, by absolute path.",
			"host":        "The host engine's address, as dcgmi --host takes it: \"localhost\" (nv-hostengine's default, port 5555), \"HOST:PORT\", or \"unix:///PATH\" for an engine started with -d (unix socket).",
			"group":       "The DCGM group whose watches are set and read: \"a\" every entity (GPUs, NVSwitches, ConnectX, CPUs), \"g\" the GPUs, \"s\" the NVSwitches, or a group's number.",
			"required":    "Absent DCGM (no dcgmi, no host engine, an old version) and watches with no data yet are an error (undecided) instead of a skip.",
			"set_watches": "Set the watches nodecheck needs where they are off (dcgmi health -s a, which persists in the host engine). false: only read, and warn that some are off.",
			"warn_codes":  "DCGM failure codes (dcgm_errors.h, e.g. 29 for DCGM_FR_PERSISTENCE_MODE) reported as warnings whatever their severity.",
		},
		Fix: []string{
			"dcgmi health -c (as nodecheck runs it, with --host): the incidents in DCGM's words; dcgmi health -f: the watches.",
			"systemctl status nvidia-dcgm (or nv-hostengine's service): the host engine must run for the health watches to gather data.",
			"RESET: once the node is drained and idle, nvidia-smi -r -i N resets the GPU (nodecheck's repairs do it when enabled). ISOLATE: keep the GPU out, run dcgmi diag -r 3 on it, and open a vendor case with nvidia-bug-report.sh.",
			"nodecheck explain dcgm_diag: DCGM's active diagnostic.",
		},
	}
}
