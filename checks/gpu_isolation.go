package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idGPUIsolation = "gpu_isolation"

// The ways gpu_isolation fails: its rows of the remedy table (Faults).
const (
	faultIsoForeign   fault = "gpu_isolation/foreign_gpu"
	faultIsoOwnDenied fault = "gpu_isolation/own_gpu_denied"
)

// Summaries gpu_isolation emits from more than one place.
const (
	isoNoJob       = "no job: gpu_isolation judges what one job may open; it runs in the prolog, or by hand inside a job (SLURM_JOB_ID set)"
	isoNotRecorded = "the GPU device access of nodecheck's process is not recorded in this snapshot (no device_access.json)"
)

// gpuIsolation confirms, from inside the job's cgroup, that the job may open its own GPUs
// and no other. It asks the kernel the question the job would: access(2) on each
// /dev/nvidiaN, which the device cgroup answers (v1's devices rules and v2's eBPF program
// both sit in inode_permission), without opening a GPU.
//
// Where nodecheck runs decides whether that is observable. Slurm's slurmd runs the prolog
// itself, before it starts the job's extern step, even with PrologFlags=Contain
// (src/slurmd/slurmd/req.c: _rpc_prolog calls run_prolog, then _spawn_prolog_stepd); the
// job's cgroups, and its device rules, are made by that step's task/cgroup plugin
// (src/slurmd/slurmstepd/mgr.c: _spawn_job_container calls task_g_pre_setuid;
// src/plugins/task/cgroup/task_cgroup_devices.c: task_cgroup_devices_create). So a prolog
// normally runs in slurmd's cgroup, and what it may open says nothing of the job. With
// PrologFlags=RunInJob (Slurm 24.05 and later) the extern step runs the prolog after making
// those cgroups (mgr.c: _run_prolog_epilog after task_g_pre_setuid), so the prolog is inside
// the job's device cgroup; the check judges then, and skips, saying why, otherwise.
//
// The v1 devices.list file cannot stand in for the probe: Slurm writes devices.allow and
// devices.deny per GRES device file into a cgroup that allows by default
// (src/plugins/cgroup/v1/cgroup_v1.c: cgroup_p_constrain_set), and the kernel lists such a
// cgroup as "a *:* rwm" whatever it denies (security/device_cgroup.c: devcgroup_seq_show).
type gpuIsolation struct{}

func (gpuIsolation) ID() string { return idGPUIsolation }

func (gpuIsolation) Description() string {
	return "the job may open its own GPUs (SLURM_JOB_GPUS) and no other, seen from inside its device cgroup (PrologFlags=RunInJob)"
}

// gpuIsolationConfig is [checks.gpu_isolation]. It has no keys of its own.
type gpuIsolationConfig struct {
	config.CheckCommon
}

// Section runs the check in the prolog, where a job is about to start, and by hand inside a
// job. It costs a listing of /dev, an access(2) per GPU and two small files.
func (gpuIsolation) Section() config.Section {
	return &gpuIsolationConfig{config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: []string{"prolog", "manual"}}}
}

// isolationFacts is what the judge needs.
type isolationFacts struct {
	JobID   string
	JobGPUs string // SLURM_JOB_GPUS, as given
	// Own is the job's GPUs, each followed to its device minor or stopped on the way
	// (mapJobGPUs); empty for a job without GPUs here.
	Own    []jobGPU
	Access node.GPUAccess
}

func (gpuIsolation) Run(ctx context.Context, env *Env) Result {
	if strings.TrimSpace(env.Job.ID) == "" {
		return Result{Status: StatusSkip, Summary: isoNoJob}
	}
	acc, err := node.Read(ctx, env.Facts, node.DeviceAccessFact)
	switch {
	case err != nil && ctx.Err() != nil:
		return factsError(ctx, "read the GPU device nodes this process may open", err)
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: isoNotRecorded}
	case err != nil:
		return Result{Status: StatusError, Summary: text.OneLine("read the GPU device nodes this process may open: "+err.Error(), 200), Err: err}
	}
	if res, ok := isoNotObservable(env.Job.ID, acc); !ok {
		return res
	}
	f := isolationFacts{JobID: env.Job.ID, JobGPUs: env.Job.GPUs, Access: acc}
	if strings.TrimSpace(env.Job.GPUs) != "" {
		indices, err := parseJobGPUs(env.Job.GPUs)
		if err != nil {
			return Result{Status: StatusError, Summary: text.OneLine(err.Error(), 200), Err: err}
		}
		gpus, res, done := mapJobGPUs(ctx, env, indices)
		if done {
			return res
		}
		f.Own = gpus
	}
	return judgeGPUIsolation(f)
}

// isoScope is where in the job a cgroup path lies.
type isoScope int

const (
	isoOutside isoScope = iota // not the job's cgroup
	isoJob                     // the job's, or a step Slurm does not narrow (extern, batch, interactive)
	isoStep                    // a numbered step, whose devices may be narrower than the job's
)

// jobScope finds job_<id> among the components of cgroup (v1 ".../job_42/step_extern", v2
// ".../job_42/step_extern/slurm") and what follows it. task/cgroup sets no step-level device
// rules for the extern, batch and interactive steps (task_cgroup_devices_create), so those
// see what the job sees.
func jobScope(cgroup, jobID string) isoScope {
	parts := strings.Split(cgroup, "/")
	for i, p := range parts {
		if p != "job_"+jobID {
			continue
		}
		if i+1 == len(parts) {
			return isoJob
		}
		switch parts[i+1] {
		case "step_extern", "step_batch", "step_interactive", "slurm", "user":
			return isoJob
		}
		if strings.HasPrefix(parts[i+1], "step_") {
			return isoStep
		}
		return isoJob
	}
	return isoOutside
}

// isoNotObservable is the skip where nodecheck's process is not in the job's cgroup; ok is
// true where it is.
func isoNotObservable(jobID string, acc node.GPUAccess) (Result, bool) {
	if jobScope(acc.Cgroup, jobID) != isoOutside {
		return Result{}, true
	}
	where := "cgroup " + acc.Cgroup
	if acc.Cgroup == "" {
		where = "no device cgroup (/proc/self/cgroup lists none)"
	}
	v := ""
	if acc.CgroupVersion > 0 {
		v = fmt.Sprintf(" (cgroup v%d)", acc.CgroupVersion)
	}
	return Result{Status: StatusSkip, Observed: acc.Cgroup, Summary: text.OneLine(fmt.Sprintf(
		"not observable: nodecheck runs in %s%s, not in job %s's (slurmd makes it after the prolog unless PrologFlags=RunInJob, Slurm 24.05+); nodecheck lint checks ConstrainDevices instead",
		where, v, jobID), 400)}, false
}

// judgeGPUIsolation is the verdict on what the job may open: fail where it may open a GPU
// that is not its own (another job's, or a free one another job will get), or may not open
// one of its own; error where a GPU's access could not be read or a GPU of the job could
// not be followed to its device (then an allowed GPU may be that one, and is not called
// foreign); ok where the job may open exactly its GPUs.
func judgeGPUIsolation(f isolationFacts) Result {
	scope := jobScope(f.Access.Cgroup, f.JobID)
	own := map[uint32]jobGPU{}
	var res Result
	unresolved := 0
	for _, t := range f.Own {
		if t.verdict != nil {
			unresolved++
			res.Details = append(res.Details, *t.verdict)
			continue
		}
		own[uint32(t.minor)] = t
	}
	res.Expected = fmt.Sprintf("job %s may open its GPUs (SLURM_JOB_GPUS=%s) and no other", f.JobID, jobGPUsText(f.JobGPUs))
	if len(f.Access.GPUs) == 0 && len(f.Own) == 0 {
		return Result{Status: StatusSkip, Summary: "no GPU device node (/dev/nvidiaN, char 195) on this node: nothing to isolate"}
	}
	probed := map[uint32]bool{}
	var allowed, foreign, ownDenied int
	for _, g := range f.Access.GPUs {
		probed[g.Minor] = true
		t, mine := own[g.Minor]
		d := isoDetail(f.JobID, g, t, mine, scope, unresolved)
		if g.Allowed {
			allowed++
		}
		if d.Status == StatusFail {
			if mine {
				ownDenied++
			} else {
				foreign++
			}
		}
		res.Details = append(res.Details, d)
	}
	for minor, t := range own {
		if !probed[minor] {
			res.Details = append(res.Details, Detail{Device: t.file, Status: StatusError, Subject: Subject{File: t.file},
				Message: fmt.Sprintf("the job's GPU %s (SLURM_JOB_GPUS index %d, minor %d) has no /dev/nvidia%d: its access was not probed", t.file, t.index, minor, minor)})
		}
	}
	if foreign > 0 && allowed == len(f.Access.GPUs) && len(f.Access.GPUs) > 1 {
		// Every GPU open to the job: devices are not constrained at all, which is the site's
		// configuration (cgroup.conf), the same on every node, not this node's fault. Failing
		// would drain every node that shares GPUs between jobs, one prolog at a time; it warns,
		// and nodecheck lint names the setting.
		for i := range res.Details {
			if res.Details[i].Status == StatusFail && !ownGPU(own, res.Details[i].Subject.File) {
				res.Details[i].Status, res.Details[i].Remedy = StatusWarn, ""
			}
		}
	}
	res.Status = worstOf(res.Details)
	res.Observed = fmt.Sprintf("job %s may open %d of %s", f.JobID, allowed, countNoun(len(f.Access.GPUs), "GPU", "GPUs"))
	res.Summary = isoSummary(f, res, allowed, foreign, ownDenied)
	return res
}

// ownGPU says whether the device file is one of the job's GPUs.
func ownGPU(own map[uint32]jobGPU, file string) bool {
	for _, t := range own {
		if t.file == file || fmt.Sprintf("/dev/nvidia%d", t.minor) == file {
			return true
		}
	}
	return false
}

// isoDetail is the verdict on one GPU device node: t is the job's GPU it is, where mine.
func isoDetail(jobID string, g node.GPUDeviceAccess, t jobGPU, mine bool, scope isoScope, unresolved int) Detail {
	d := Detail{Device: g.Path, Status: StatusOK, Subject: Subject{File: g.Path}}
	switch {
	case mine:
		d.Expected = "allowed"
	default:
		d.Expected = "denied"
	}
	d.Observed = "denied"
	if g.Allowed {
		d.Observed = "allowed"
	}
	which := "not one of its GPUs"
	if mine {
		which = fmt.Sprintf("its GPU, SLURM_JOB_GPUS index %d", t.index)
	}
	switch {
	case g.Error != "":
		d.Status, d.Observed = StatusError, g.Error
		d.Message = fmt.Sprintf("access(2) of %s failed with %s, not the device cgroup's EPERM: cannot tell whether job %s may open it", g.Path, g.Error, jobID)
	case mine && g.Allowed:
		d.Message = fmt.Sprintf("job %s may open %s (%s)", jobID, g.Path, which)
	case mine && scope == isoStep:
		d.Message = fmt.Sprintf("this step of job %s may not open %s (%s): a step may hold fewer GPUs than its job, so this is not judged", jobID, g.Path, which)
	case mine:
		failDetail(&d, faultIsoOwnDenied)
		d.Message = fmt.Sprintf("job %s may not open its own GPU %s (SLURM_JOB_GPUS index %d): its device cgroup denies it", jobID, g.Path, t.index)
	case g.Allowed && unresolved > 0:
		d.Status = StatusError
		d.Message = fmt.Sprintf("job %s may open %s, and %s of its GPUs could not be followed to a device: cannot tell whether it is one of them", jobID, g.Path, countNoun(unresolved, "one", "some"))
	case g.Allowed:
		failDetail(&d, faultIsoForeign)
		d.Message = fmt.Sprintf("job %s may open %s, %s: another job's GPU, or one another job will get", jobID, g.Path, which)
	default:
		d.Message = fmt.Sprintf("job %s may not open %s (%s)", jobID, g.Path, which)
	}
	return d
}

// isoSummary is the result's one line: the first failure (a foreign GPU before a denied
// own one), else the first error, else what the job may open.
func isoSummary(f isolationFacts, res Result, allowed, foreign, ownDenied int) string {
	n := len(f.Access.GPUs)
	if foreign > 0 && allowed == n && n > 1 {
		return fmt.Sprintf("job %s may open all %d GPUs, holding %s (SLURM_JOB_GPUS=%s): its devices are not constrained (cgroup.conf ConstrainDevices=yes, TaskPlugin task/cgroup)",
			f.JobID, n, countNoun(len(f.Own), "GPU", "GPUs"), jobGPUsText(f.JobGPUs))
	}
	var bad []Detail
	for _, d := range res.Details {
		if d.Status == res.Status && d.Status != StatusOK && d.Status != StatusSkip {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		first := bad[0].Message
		if !strings.Contains(first, bad[0].Device) {
			first = bad[0].Device + ": " + first // a SLURM_JOB_GPUS index mapJobGPUs stopped
		}
		return first + moreSuffix(len(bad)-1)
	}
	if len(f.Own) == 0 {
		return fmt.Sprintf("job %s holds no GPU here and may open none of the %s", f.JobID, countNoun(n, "GPU", "GPUs"))
	}
	others := n - allowed
	if others == 0 {
		return fmt.Sprintf("job %s may open its %s, every GPU of the node", f.JobID, countNoun(allowed, "GPU", "GPUs"))
	}
	return fmt.Sprintf("job %s may open its %s and none of the other %d", f.JobID, countNoun(allowed, "GPU", "GPUs"), others)
}

// jobGPUsText is SLURM_JOB_GPUS as a message shows it: "none" where unset.
func jobGPUsText(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}

// Faults declares the check's own rows of the remedy table, and the shared faults it gives.
func (gpuIsolation) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultIsoForeign, "the job may open a GPU that is not one of its own", RemedyAdmin,
				"Slurm fences a job's GPUs only with cgroup.conf ConstrainDevices=yes and TaskPlugin task/cgroup (cgroup.conf(5); src/plugins/task/cgroup/task_cgroup_devices.c), and only the GPU files gres.conf names: set them, or name every GPU in gres.conf"},
			{faultIsoOwnDenied, "the job may not open one of its own GPUs", RemedyAdmin,
				"SLURM_JOB_GPUS numbers gres.conf's GPU files in order, and task/cgroup allows exactly those files: a gres.conf File= order that does not match the device minors, or a site's own device rule, gives the job the wrong GPU (CUDA finds no device, or another job's)"},
		},
	}
}

// Explain is what `nodecheck explain gpu_isolation` says.
func (gpuIsolation) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/proc/self/cgroup: the cgroup nodecheck runs in (the devices hierarchy on cgroup v1, the unified one on v2), and /sys/fs/cgroup to tell v1 from v2.",
			"Each /dev/nvidiaN that is a character device of major 195, and access(2) of it for reading and writing: the kernel asks the device cgroup (v1 devices rules, v2 eBPF program) without opening the GPU. Recorded in snapshots as device_access.json.",
			"SLURM_JOB_ID and SLURM_JOB_GPUS, and gres.conf's GPU files for this node in order, each followed to its device minor (SLURM_JOB_GPUS indexes gres.conf's files, not /dev numbers).",
			"Observable only inside the job's cgroup: slurmd runs the prolog before it starts the job's extern step, which makes the job's cgroups, even with PrologFlags=Contain (Slurm's src/slurmd/slurmd/req.c _rpc_prolog: run_prolog, then _spawn_prolog_stepd). With PrologFlags=RunInJob (Slurm 24.05+) the extern step runs the prolog after task/cgroup set the job's device rules (src/slurmd/slurmstepd/mgr.c _spawn_job_container; src/plugins/task/cgroup/task_cgroup_devices.c), so the prolog may open what the job may.",
			"Not devices.list: Slurm writes per-device allow and deny rules into a cgroup that allows by default (src/plugins/cgroup/v1/cgroup_v1.c), and the kernel lists such a cgroup as \"a *:* rwm\" whatever it denies (security/device_cgroup.c devcgroup_seq_show).",
		},
		Passes: "Inside the job's cgroup, the job may open each of its GPUs and no other GPU of the node.",
		Warns:  "The job may open every GPU of the node, its own and others': devices are not constrained at all (cgroup.conf), the site's configuration rather than this node's fault; nodecheck lint names the setting.",
		Fails:  "The job may open a GPU that is not its own while others are denied (another job's GPU, or one the next job gets: gres.conf's File= names the wrong devices), or may not open one of its own (gres.conf's File= order does not match the devices). Or reading ran out of time.",
		Skips:  "No job (SLURM_JOB_ID unset); nodecheck does not run inside the job's cgroup (the prolog without PrologFlags=RunInJob, or a shell: not observable, and nodecheck lint checks cgroup.conf instead); no GPU device node on the node; the mode is not in modes (prolog and manual by default); or a snapshot replayed has no device_access.json.",
		Errors: "/proc/self/cgroup or /dev cannot be read, access(2) fails for another reason than the device cgroup's refusal, SLURM_JOB_GPUS or gres.conf cannot say which devices the job's GPUs are, or a job's GPU has no /dev/nvidiaN.",
		Fix: []string{
			"A foreign GPU: set ConstrainDevices=yes in cgroup.conf and TaskPlugin=task/cgroup (with task/affinity if used) in slurm.conf, name every GPU in gres.conf File=, restart slurmd; nodecheck lint shows which settings are missing.",
			"An own GPU denied: compare gres.conf File= order with the device minors (ls -l /dev/nvidia*; nodecheck run --check gres_devices) and with any site device rule (cgroup.conf AllowedDevicesFile on old Slurm); fix gres.conf and restart slurmd.",
			"To make the check observable, set PrologFlags=RunInJob in slurm.conf (Slurm 24.05+; it implies Contain and Alloc, and is incompatible with Serial).",
		},
	}
}
