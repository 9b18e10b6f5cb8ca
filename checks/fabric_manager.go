package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idFabricManager = "fabric_manager"

// The ways fabric_manager fails: its rows of the remedy table (Faults).
const (
	faultFMNotInstalled fault = "fabric_manager/not_installed"
	faultFMVersion      fault = "fabric_manager/version"
	faultFMService      fault = "fabric_manager/service"
	faultFMFabric       fault = "fabric_manager/fabric"
	faultFMFabricHealth fault = "fabric_manager/fabric_health"
	faultFMFabricConfig fault = "fabric_manager/fabric_config"
)

// srcADR050 is the source of the rows of a service or fabric that is down.
const srcADR050 = "NVIDIA NVSentinel ADR-050 (docs/designs/050-system-services-monitor-scope.md): FabricManagerServiceDown and FabricStateUnhealthy -> RESTART_BM, the cheapest first try"

// Package managers asked for the Fabric Manager package when the binary is absent.
const (
	dpkgQuery = "/usr/bin/dpkg-query"
	rpmQuery  = "/usr/bin/rpm"
)

// NVML fabric vocabulary (nvml.h NVML_GPU_FABRIC_STATE_*, nvmlReturn_t) as node.Fabric holds it.
const (
	fabricCompleted    = "COMPLETED"
	fabricNotSupported = "NOT_SUPPORTED"
	fabricUnknown      = "UNKNOWN" // the query failed; Status holds its error name
)

// summaryFMNotInstalled is the summary of a node with NVSwitches but no Fabric Manager.
const summaryFMNotInstalled = "Fabric Manager not installed (no %s, no nvidia-fabricmanager package): install nvidia-fabricmanager-%s for driver %s"

// fabricManager checks, on NVSwitch systems, what CUDA needs before a job can use NVLink:
// Fabric Manager at exactly the driver's version (a mismatch keeps FM from starting and CUDA
// fails with error 802, "system not yet initialized"), its service active, and every GPU's
// fabric registration COMPLETED with status SUCCESS where NVML reports one (Hopper and later;
// A100 has no fabric state, which is not a failure).
type fabricManager struct{}

func (fabricManager) ID() string { return idFabricManager }

func (fabricManager) Description() string {
	return "on NVSwitch nodes: Fabric Manager version = driver version, service active, GPU fabric COMPLETED/SUCCESS"
}

// GPUFields implements gpuFactsUser: the driver version, and each GPU's model (traits), bus id and fabric state.
func (fabricManager) GPUFields() node.GPUFields {
	return node.GPUDriverVersion | node.GPUName | node.GPUPCIBusID | node.GPUFabric
}

// fabricManagerConfig is [checks.fabric_manager].
type fabricManagerConfig struct {
	config.CheckCommon
	// Force runs the check even where no NVSwitch is on the PCI bus.
	Force bool `toml:"force"`
	// Binary is nv-fabricmanager, asked for its version.
	Binary string `toml:"binary"`
	// Systemctl asks for the service state.
	Systemctl string `toml:"systemctl"`
	// Service is the Fabric Manager unit.
	Service string `toml:"service"`
}

func (fabricManager) Section() config.Section {
	return &fabricManagerConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()},
		Binary:      "/usr/bin/nv-fabricmanager",
		Systemctl:   "/usr/bin/systemctl",
		Service:     "nvidia-fabricmanager",
	}
}

// ValidateSection implements config.SectionValidator.
func (fm *fabricManagerConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	for _, kv := range []struct{ key, val string }{{"binary", fm.Binary}, {"systemctl", fm.Systemctl}} {
		if !strings.HasPrefix(kv.val, "/") {
			errs = append(errs, config.Problemf(kv.key, " = %q: give an absolute path: Slurm starts prologs and health checks without PATH", kv.val))
		}
	}
	if strings.TrimSpace(fm.Service) == "" || strings.ContainsAny(fm.Service, " \t\n/") {
		errs = append(errs, config.Problemf("service", " = %q: give the systemd unit of Fabric Manager, such as \"nvidia-fabricmanager\"", fm.Service))
	}
	return errs
}

func (fabricManager) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*fabricManagerConfig](env.Config, idFabricManager)
	pci, err := env.Facts.PCIDevices(ctx)
	if err != nil && (!cfg.Force || ctx.Err() != nil) {
		return factsError(ctx, "list PCI devices", err)
	}
	switches, gpus := countNVSwitchesGPUs(pci)
	if switches == 0 && gpus == 0 && !cfg.Force {
		return Result{Status: StatusSkip, Summary: "no NVSwitch and no NVIDIA GPU on the PCI bus"}
	}
	var inv node.GPUInventory
	if switches == 0 || cfg.Force {
		// Without NVSwitches the GPUs may still be on an NVLink fabric: a multi-node NVLink
		// compute tray (GB200, GB300 NVL), whose switches sit in other trays.
		if inv, err = env.Facts.GPUs(ctx); err != nil && ctx.Err() != nil {
			return factsError(ctx, "query NVML", err)
		}
		if err == nil && switches == 0 && !cfg.Force && fabricWithoutNVSwitch(inv) {
			return runFabricWithoutNVSwitch(ctx, env, cfg, inv)
		}
		if switches == 0 && !cfg.Force {
			return Result{Status: StatusSkip, Summary: "no NVSwitch on the PCI bus" + noFabricWhy(inv, err)}
		}
	}
	if inv.Init == "" {
		if inv, err = env.Facts.GPUs(ctx); err != nil {
			return factsError(ctx, "query NVML", err)
		}
	}
	where := countNoun(switches, "NVSwitch", "NVSwitches")
	if switches == 0 {
		where = "no NVSwitch on the PCI bus, forced by config"
	}
	if inv.Init != node.InitSuccess || inv.DriverVersion == "" {
		why := "NVML init: " + inv.Init
		if inv.Init == node.InitSuccess {
			why = "NVML gave no driver version"
		}
		return Result{Status: StatusFail, Observed: why, Expected: "NVML driver version", Remedy: remedyOf(nvmlInitFault(inv.Init)),
			Summary: fmt.Sprintf("%s: cannot read the driver version to compare with Fabric Manager (%s)", why, where)}
	}
	fmv := fmVersion(ctx, env, cfg.Binary, inv.DriverVersion)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out asking for the Fabric Manager version", Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
	}
	svc := fmService(ctx, env, cfg.Systemctl, cfg.Service)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out asking systemd for " + cfg.Service, Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
	}
	return judgeFabricManager(inv, switches > 0, fmv, svc, cfg.Service, where)
}

// judgeFabricManager combines the verdicts on Fabric Manager's version (fmv) and service
// (svc) with the GPUs' fabric registration; switches says the node has NVSwitches (it may
// run forced without).
func judgeFabricManager(inv node.GPUInventory, switches bool, fmv, svc Detail, service, where string) Result {
	driver := inv.DriverVersion
	res := Result{Status: StatusOK, Details: []Detail{fmv, svc}}
	var bad []Detail
	for _, d := range []Detail{fmv, svc} {
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
	}
	details, problems, withFabric := judgeFabric(inv.Devices, switches)
	res.Details = append(res.Details, details...)
	bad = append(bad, problems...)
	res.Observed = fmt.Sprintf("driver %s, Fabric Manager %s, service %s", driver, orUnknown(fmv.Observed), orUnknown(svc.Observed))
	res.Expected = fmt.Sprintf("Fabric Manager %s, service active", driver)
	if len(bad) > 0 {
		// The summary names the worst problem first; among fails, the order above is the
		// order of causes: a version mismatch stops FM, and a stopped FM leaves the fabric
		// unregistered.
		slices.SortStableFunc(bad, func(a, b Detail) int { return b.Status.rank() - a.Status.rank() })
		res.Status = bad[0].Status
		res.Summary, res.Subject = bad[0].Message+moreSuffix(len(bad)-1), bad[0].Subject
		for _, b := range bad {
			if b.Status == StatusError && res.Err == nil {
				res.Err = errors.New(b.Message)
			}
		}
		return res
	}
	fabric := "no GPU reports fabric state (before Hopper)"
	if withFabric > 0 {
		fabric = fmt.Sprintf("fabric COMPLETED on %d GPUs", withFabric) + fabricHealthSuffix(inv.Devices)
	}
	res.Summary = fmt.Sprintf("driver and Fabric Manager %s, %s active, %s (%s)", driver, service, fabric, where)
	return res
}

// judgeFabric judges each GPU's fabric registration: COMPLETED with SUCCESS where NVML
// reports a state, and then healthy where the driver reports a health (fabric_health.go). On a node with NVSwitches a Hopper or later GPU always has one
// (gpuTraits), so a state it does not report, or could not read, was not looked at: an
// error for it, as for a GPU NVML lost. A100 reports none, which is fine. problems holds
// one detail for the GPUs not registered, one for those unhealthy, one for those not read
// and one for those whose health was not understood.
func judgeFabric(gpus []node.GPU, switches bool) (details, problems []Detail, withFabric int) {
	var notDone, unread, unhealthy, notUnderstood []string
	var unreadGPU Subject // the GPU not read, where only one is
	failed := 0
	for _, g := range gpus {
		label, subject := gpuLabel(g.Index, sysfsBusID(g.PCIBusID)), gpuSubject(g, "")
		tr, model := traitsOf(g.Name)
		noState := g.Fabric == nil || g.Fabric.State == fabricNotSupported || g.Fabric.State == ""
		switch {
		case g.Error != "" && switches:
			unread, unreadGPU = append(unread, label+" "+g.Error), subject
			details = append(details, Detail{Device: label, Status: StatusError, Observed: g.Error, Expected: "COMPLETED/SUCCESS",
				Message: "NVML: " + g.Error + ": fabric state not read", Subject: subject})
			continue
		case g.Error != "":
			continue
		case noState && tr.fabric && switches:
			unread, unreadGPU = append(unread, label), subject
			details = append(details, Detail{Device: label, Status: StatusError, Expected: "COMPLETED/SUCCESS",
				Message: fmt.Sprintf("fabric state not reported by NVML (%s GPUs register with Fabric Manager on NVSwitch nodes)", model), Subject: subject})
			continue
		case noState:
			continue // no fabric state before Hopper
		case g.Fabric.State == fabricUnknown:
			unread, unreadGPU = append(unread, label+" "+g.Fabric.Status), subject
			details = append(details, Detail{Device: label, Status: StatusError, Observed: fabricUnknown + "/" + g.Fabric.Status, Expected: "COMPLETED/SUCCESS",
				Message: "fabric state could not be read: " + g.Fabric.Status, Subject: subject})
			continue
		}
		withFabric++
		d := Detail{Device: label, Status: StatusOK, Observed: g.Fabric.State + "/" + g.Fabric.Status, Expected: "COMPLETED/SUCCESS",
			Message: "fabric " + g.Fabric.State + "/" + g.Fabric.Status, Subject: subject}
		switch {
		case g.Fabric.State != fabricCompleted:
			// NVML: the status "must be checked only if state returns complete".
			failDetail(&d, faultFMFabric)
			d.Observed, d.Message = g.Fabric.State, "fabric "+g.Fabric.State+", want COMPLETED"
			notDone = append(notDone, label+" "+g.Fabric.State)
		case g.Fabric.Status != node.InitSuccess:
			failDetail(&d, faultFMFabric)
			d.Message = "fabric COMPLETED with " + g.Fabric.Status + ", want SUCCESS"
			notDone = append(notDone, label+" COMPLETED with "+g.Fabric.Status)
			failed++
		default:
			// Registered: judged by the health the driver reports with it (fabric_health.go).
			problem, unknown := fabricHealthDetail(&d, fabricCompleted+"/"+g.Fabric.Status, g.Fabric.Health)
			if problem != "" {
				unhealthy = append(unhealthy, label+" "+problem)
			}
			if unknown != "" {
				notUnderstood = append(notUnderstood, label+" "+unknown)
			}
		}
		details = append(details, d)
	}
	if len(notDone) > 0 {
		what := "fabric not completed"
		if failed > 0 {
			what = "fabric registration failed or not completed"
		}
		problems = append(problems, Detail{Device: "fabric", Status: StatusFail, Remedy: remedyOf(faultFMFabric),
			Message: fmt.Sprintf("%s on %d of %d GPUs: %s", what, len(notDone), withFabric, listSome(notDone, 2))})
	}
	if len(unhealthy) > 0 {
		problems = append(problems, Detail{Device: "fabric", Status: StatusFail, Remedy: remedyOf(faultFMFabricHealth),
			Message: fmt.Sprintf("fabric unhealthy on %d of %s: %s", len(unhealthy), countNoun(withFabric, "GPU", "GPUs"), listSome(unhealthy, 2))})
	}
	if len(unread) > 0 {
		// The failing one above is the fabric's: each GPU's own detail fails with it and names
		// the GPU. This one, which the summary of an error speaks of, names the GPU where it
		// is only one.
		if len(unread) > 1 {
			unreadGPU = Subject{}
		}
		problems = append(problems, Detail{Device: "fabric", Status: StatusError, Subject: unreadGPU,
			Message: fmt.Sprintf("fabric state not read on %s: %s", countNoun(len(unread), "GPU", "GPUs"), listSome(unread, 2))})
	}
	if len(notUnderstood) > 0 {
		problems = append(problems, Detail{Device: "fabric", Status: StatusError,
			Message: fmt.Sprintf("fabric health not understood on %s: %s", countNoun(len(notUnderstood), "GPU", "GPUs"), listSome(notUnderstood, 2))})
	}
	return details, problems, withFabric
}

// fmVersion finds the installed Fabric Manager version, from the binary or else the package,
// and compares it with the driver's. Observed is the version found; empty when none.
func fmVersion(ctx context.Context, env *Env, binary, driver string) Detail {
	d := Detail{Device: "fabric manager", Status: StatusOK, Expected: driver}
	branch, _, _ := strings.Cut(driver, ".")
	var version, from string
	out, err := env.Facts.Exec(ctx, []string{binary, "--version"})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v, src, perr := packageVersion(ctx, env, branch)
		if perr != nil {
			d.Status, d.Message = StatusError, "ask the package manager for Fabric Manager: "+perr.Error()
			return d
		}
		if v == "" {
			failDetail(&d, faultFMNotInstalled)
			d.Observed = "not installed"
			d.Message = fmt.Sprintf(summaryFMNotInstalled, binary, branch, driver)
			return d
		}
		version, from = v, src
	case err != nil:
		d.Status, d.Message = StatusError, fmt.Sprintf("run %s --version: %v", binary, err)
		return d
	default:
		v, perr := parseFabricManagerVersion(out.Stdout + "\n" + out.Stderr)
		if perr != nil {
			d.Status = StatusError
			d.Message = fmt.Sprintf("read the version from %s --version (exit %d): %v", binary, out.ExitCode, perr)
			return d
		}
		version, from = v, binary+" --version"
	}
	d.Observed = version
	if version != driver {
		failDetail(&d, faultFMVersion)
		d.Message = fmt.Sprintf("driver %s but Fabric Manager %s: install nvidia-fabricmanager %s and restart it (a mismatch gives CUDA error 802)", driver, version, driver)
		return d
	}
	d.Message = fmt.Sprintf("Fabric Manager %s (%s) = driver %s", version, from, driver)
	return d
}

// packageVersion asks dpkg, then rpm, for an installed Fabric Manager package. Debian and
// Ubuntu (NVIDIA's CUDA repository) name it nvidia-fabricmanager-<branch>; RHEL names it
// nvidia-fabric-manager. A package manager that is not installed is passed over; version
// is empty when neither knows the package.
func packageVersion(ctx context.Context, env *Env, branch string) (version, from string, err error) {
	queries := [][]string{
		{dpkgQuery, "-W", "-f=${db:Status-Abbrev}\t${Package}\t${Version}\n", "nvidia-fabricmanager-" + branch, "nvidia-fabricmanager"},
		{rpmQuery, "-q", "--qf", "ii\t%{NAME}\t%{VERSION}\n", "nvidia-fabric-manager", "nvidia-fabricmanager-" + branch},
	}
	for _, q := range queries {
		out, err := env.Facts.Exec(ctx, q)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("run %s: %w", q[0], err)
		}
		// Both exit non-zero when one of the names is unknown; the lines of the known ones
		// are still printed, so the output decides, not the exit code.
		if pkg, v, ok := parsePackageQuery(out.Stdout); ok {
			return v, "package " + pkg, nil
		}
	}
	return "", "", nil
}

// parsePackageQuery reads the lines the queries of packageVersion print: "STATUS\tNAME\tVERSION"
// with dpkg's status abbreviation (dpkg-query(1) db:Status-Abbrev: "ii " installed, "rc "
// removed with its configuration kept) or the literal "ii" of the rpm query. It returns the first installed package, its version without
// a Debian epoch ("1:") or revision ("-1"). Lines of other shapes ("package X is not
// installed", rpm's answer on stdout) are passed over.
func parsePackageQuery(out string) (pkg, version string, ok bool) {
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
		// The status's second letter is the package's state: i installed (ii, hi), c only
		// configuration files left (rc), n not installed (un).
		if len(f) != 3 || len(f[0]) < 2 || f[0][1] != 'i' {
			continue
		}
		v := strings.TrimSpace(f[2])
		if _, after, ok := strings.Cut(v, ":"); ok {
			v = after
		}
		if i := strings.LastIndexByte(v, '-'); i > 0 {
			v = v[:i]
		}
		if v == "" || versionRE().FindString(v) != v {
			continue
		}
		return strings.TrimSpace(f[1]), v, true
	}
	return "", "", false
}

// versionRE is a driver-style version: "535.161.08", "550.54.15", "570.86.15".
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]+(\.[0-9]+)+`) })

// fmVersionLine finds "Fabric Manager version" and what follows it.
var fmVersionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)fabric\s*manager\s+version\b\s*(?:is\b)?\s*:?\s*([0-9]+(?:\.[0-9]+)+)`)
})

// parseFabricManagerVersion reads the version from `nv-fabricmanager --version`, which prints
// blank lines, a TAB and "Fabric Manager version is : 535.161.08" (gpud's capture, corpus
// fabricmanager/gpud-nv-fabricmanager-version-535.161.08.txt). It also takes the form of
// Fabric Manager's log ("Fabric Manager version 535.161.08 is running ..."), a colon without
// "is", and output that is nothing but a version.
func parseFabricManagerVersion(out string) (string, error) {
	if m := fmVersionLine().FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	if t := strings.TrimSpace(out); t != "" && versionRE().FindString(t) == t {
		return t, nil
	}
	return "", fmt.Errorf("no \"Fabric Manager version\" in %q", text.OneLine(out, 60))
}

// fmService asks systemd whether the Fabric Manager unit is active: `systemctl is-active`
// prints the state and exits 0 only for "active" (3 for inactive, failed or unknown units).
func fmService(ctx context.Context, env *Env, systemctl, service string) Detail {
	return serviceActive(ctx, env, systemctl, service, idFabricManager, faultFMService)
}

// serviceActive asks systemd whether service is active, for the check id (whose section
// has the systemctl key): ok when it is, fail with inactive's remedy when systemd says
// another state, error when systemd cannot be asked.
func serviceActive(ctx context.Context, env *Env, systemctl, service, id string, inactive fault) Detail {
	d := Detail{Device: "service " + service, Status: StatusOK, Expected: "active", Subject: Subject{Service: service}}
	out, err := env.Facts.Exec(ctx, []string{systemctl, "is-active", service})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.Status = StatusError
		d.Message = fmt.Sprintf("cannot ask systemd whether %s runs: %s not found; set systemctl in [checks.%s]", service, systemctl, id)
		return d
	case err != nil:
		d.Status, d.Message = StatusError, fmt.Sprintf("run %s is-active %s: %v", systemctl, service, err)
		return d
	}
	state := text.OneLine(out.Stdout, 40)
	d.Observed = state
	if out.ExitCode == 0 && state == "active" {
		d.Message = service + " active"
		return d
	}
	if state == "" {
		// is-active prints the unit's state whenever it can ask systemd ("inactive",
		// "failed", "unknown"); nothing printed is systemctl failing to ask (no D-Bus,
		// inside a container): the service was not looked at.
		d.Status, d.Observed = StatusError, fmt.Sprintf("exit %d", out.ExitCode)
		d.Message = fmt.Sprintf("cannot ask systemd whether %s runs: %s is-active exited %d: %s", service, systemctl, out.ExitCode, text.OneLine(out.Stderr, 60))
		return d
	}
	failDetail(&d, inactive)
	d.Message = fmt.Sprintf("%s service %s, want active: see journalctl -u %s, then systemctl restart %s", service, state, service, service)
	return d
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (fabricManager) Faults() Faults {
	return Faults{
		shared: []fault{faultNVMLDriver, faultNVMLMissing},
		own: []remedyRow{
			{faultFMNotInstalled, "Fabric Manager is not installed on a node with NVSwitches", RemedyAdmin,
				"Fabric Manager user guide, Installation: NVSwitch systems need the nvidia-fabricmanager package of the driver's version"},
			{faultFMVersion, "Fabric Manager and the driver have different versions", RemedyAdmin,
				"Fabric Manager user guide: FM must match the driver's version exactly, else it refuses to start (CUDA error 802)"},
			{faultFMService, "the Fabric Manager service is not active", RemedyReboot, srcADR050},
			{faultFMFabric, "a GPU's fabric registration is not COMPLETED, or completed with an error", RemedyReboot,
				srcADR050 + "; on HGX the GPUs and NVSwitches are set up together when FM starts, which a reboot redoes"},
			{faultFMFabricHealth, "a registered GPU's fabric health is not good: summary UNHEALTHY or LIMITED_CAPACITY, bandwidth degraded, a route unhealthy, a route or access timeout recovery in progress, or a configuration INSUFFICIENT_NVLINKS or GPU_STATE_INVALID", RemedyResetGPU,
				"NVIDIA DCGM's health watch fails each of these conditions of the fabric health mask (modules/health/DcgmHealthWatch.cpp, MonitorFabricFields) as DCGM_FR_FIELD_VIOLATION, whose next step begins \"Reset GPU\" (dcgm_errors.h, SYSTEM_TRIAGE_MSG); nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*, NVML_GPU_FABRIC_HEALTH_SUMMARY_*"},
			{faultFMFabricConfig, "a GPU's fabric configuration is incorrect: INCORRECT_SYSGUID, INCORRECT_CHASSIS_SN, NO_PARTITION, INCOMPATIBLE_GPU_FW or INVALID_LOCATION", RemedyAdmin,
				"nvml.h NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_*: the rack's identity (system GUID, chassis serial number, location), the GPU's NVLink partition or its firmware, which a person sets; no reset or reboot of this node changes them"},
		},
	}
}

// Explain is what `nodecheck explain fabric_manager` says.
func (fabricManager) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The PCI bus: the NVSwitches (NVIDIA bridge devices, class 0x0680).",
			"NVML: the driver version, and each GPU's fabric state and status (Hopper and later), with the fabric health the driver reports beside them (health mask and summary of nvmlGpuFabricInfo v2/v3).",
			"binary --version (nv-fabricmanager); where it is absent, the installed nvidia-fabricmanager package (dpkg-query, then rpm).",
			"systemctl is-active SERVICE (nvidia-fabricmanager).",
		},
		Passes: "Fabric Manager has exactly the driver's version, its service is active, and every GPU that reports a fabric state has registered with the fabric: state COMPLETED, status SUCCESS, and, where the driver reports a fabric health, nothing wrong in it. A100 GPUs report no fabric state, and older drivers no health, which is not a failure. On a node without NVSwitch whose GPUs are on an NVLink fabric (a GB200 or GB300 compute tray, whose NVSwitches sit in the rack's switch trays, or a VM whose host keeps them), every GPU has registered and Fabric Manager, which runs where the NVSwitches are, is not running here.",
		Warns:  "Fabric Manager is active on a node without NVSwitch whose GPUs are on a fabric: it has nothing to manage here.",
		Fails:  "Fabric Manager is not installed or has another version than the driver (it then refuses to start, and CUDA fails with error 802, \"system not yet initialized\"), its service is not active, a GPU's fabric registration has not completed or completed with an error (\"COMPLETED with Insufficient Resources\" on a GB200 tray), a registered GPU's fabric health is not good (summary UNHEALTHY or LIMITED_CAPACITY, bandwidth degraded, a route unhealthy, a route or access timeout recovery in progress, an incorrect configuration: the conditions DCGM's health watch fails; an incorrect setting of the rack wants a person, the rest a GPU reset), or NVML does not give the driver version to compare with.",
		Skips:  "There is no NVSwitch on the PCI bus (PCIe-only systems) and no GPU reports an NVLink fabric state, unless force = true.",
		Errors: "systemctl or the package manager cannot be asked (systemctl printing no state, as without D-Bus, included), or the version cannot be read from binary --version; or, on a node with NVSwitches, a Hopper or later GPU reports no fabric state, its fabric query failed (state UNKNOWN), or NVML lost it: its registration was not looked at; or a GPU's fabric health holds values newer than nodecheck knows.",
		Keys: map[string]string{
			"force":     "Run even where no NVSwitch is on the PCI bus.",
			"binary":    `Asked for its version ("--version"). Where it is absent, the installed package is asked instead (dpkg-query, then rpm).`,
			"systemctl": `Asked whether the service runs ("systemctl is-active SERVICE").`,
			"service":   "The Fabric Manager systemd unit.",
		},
		Fix: []string{
			"Compare the driver version (nvidia-smi) with nv-fabricmanager --version, and install the Fabric Manager of exactly the driver's version (Debian, Ubuntu: nvidia-fabricmanager-BRANCH at the driver's version; RHEL: nvidia-fabric-manager). Hold both packages so that they are upgraded together.",
			"systemctl restart nvidia-fabricmanager; journalctl -u nvidia-fabricmanager and /var/log/fabricmanager.log say why it stopped or would not start.",
			"nvidia-smi -q | grep -i -A 3 fabric: every GPU shows State Completed, Status Success once Fabric Manager runs. If it stays In Progress or fails, reboot the node: a driver upgrade without a reboot leaves the old kernel module loaded.",
			"nvidia-smi -q, Fabric / Health: an unhealthy summary, degraded bandwidth or a route fault is DCGM's \"Reset GPU\" first (nvidia-smi -r -i N once no job uses it), then the NVLink switch trays' logs (NMX, Fabric Manager there) if it comes back; an Incorrect Configuration (No Partition, SysGUID, chassis serial number, location, GPU firmware) is set right where the rack is managed.",
		},
	}
}
