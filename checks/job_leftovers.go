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
	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

const idJobLeftovers = "job_leftovers"

// The ways job_leftovers fails: its rows of the remedy table (Faults).
const (
	faultLeftProcess fault = "job_leftovers/process"
	faultLeftMemory  fault = "job_leftovers/memory"
)

// maxJobGPUIndex bounds an index in SLURM_JOB_GPUS: a node has at most a few hundred GPU
// device files (config's own bound on File= is 65536), so a larger one is garbage, and a
// range up to it would allocate for nothing.
const maxJobGPUIndex = 1 << 16

// maxListedProcesses is how many processes of one GPU a message names; the rest are counted.
const maxListedProcesses = 4

// jobLeftovers judges the GPUs Slurm gave the job a prolog or epilog runs for, and only
// those: other jobs may share the node, and their GPUs are none of this run's business.
//
// The job's GPUs are found as slurmd numbers them: SLURM_JOB_GPUS holds indices into the
// node's gres.conf gpu device files in file order (File= ranges expanded; Slurm 22.05
// gres_common_prep_set_env writes gres_device->index, and the test bed shows
// File=.../nvidia[2-3] giving 0 and 1), never /dev numbers nor NVML indices. Each index leads
// to a gres.conf file, the file to its device node's minor number (the stat, as slurmd's
// cgroup device rules use, not the digits in its name: a symlink /dev/gpu0 -> nvidia3 is
// GPU minor 3), and the minor to the NVML device with that minor number.
//
// There is no grace period for processes still exiting as the epilog starts. The facts are
// read once per run (node.Memo keeps the one NVML reading), so waiting inside the check would
// only judge the same reading again; a re-check needs a fresh reading, which only the caller
// can make (run the check again with new facts). It is also less needed than it looks:
// slurmd starts the epilog after the job's steps are over, and a step ends only once
// slurmstepd has seen every process it tracks exit (proctrack); what is left on a GPU then
// escaped the tracking, and does not go away by itself in a second or two.
type jobLeftovers struct{}

func (jobLeftovers) ID() string { return idJobLeftovers }

func (jobLeftovers) Description() string {
	return "the job's GPUs (SLURM_JOB_GPUS) carry no compute process and no held memory: after the job in the epilog, before it in the prolog"
}

// GPUFields implements gpuFactsUser: the job's GPUs by minor number, their bus ids, memory and processes.
func (jobLeftovers) GPUFields() node.GPUFields {
	return node.GPUMinorNumber | node.GPUName | node.GPUPCIBusID | node.GPUMemory | node.GPUCompute
}

// jobLeftoversConfig is [checks.job_leftovers].
type jobLeftoversConfig struct {
	config.CheckCommon
	// MemoryUsedMaxMiB is the most framebuffer memory, in MiB, a GPU of the job may show as
	// used (NVML nvmlDeviceGetMemoryInfo) once no process runs on it. The default leaves room
	// for the older NVML call, whose "used" includes the driver's reserve (about 550 MiB on an
	// idle H100), while the newer one reads 0 to 4 MiB on an idle GPU.
	MemoryUsedMaxMiB int `toml:"memory_used_max_mib"`
}

// defaultMemoryUsedMaxMiB is memory_used_max_mib's default. Idle GPUs in the captures under
// shared/corpus/nvsmi report, with nvmlDeviceGetMemoryInfo_v2 (nvidia-smi -q "FB Memory
// Usage", which leaves the reserve out): H100 80GB Used 0 MiB with Reserved 551 MiB (drivers
// 535.161.08 and 535.183.01), A10 Used 4 MiB with Reserved 512 MiB, and the 550.90.07 table
// shows 1MiB on each of 8 idle H100s. The v1 call adds the reserve to Used, so an idle H100
// reads about 551 MiB there. 1024 MiB passes an idle GPU under either call, and still fails
// a GPU that holds a CUDA context's worth of memory or more (several hundred MiB on H100
// under v2, and any real allocation).
const defaultMemoryUsedMaxMiB = 1024

// maxMemoryUsedMaxMiB bounds memory_used_max_mib: no GPU has more than a few hundred GiB, so
// a larger value is a unit mistake (bytes, or KiB) that would turn the memory test off.
const maxMemoryUsedMaxMiB = 1 << 20

// Section runs the check in prolog and epilog only: outside a job nodecheck cannot tell
// which GPUs belong to whom.
func (jobLeftovers) Section() config.Section {
	return &jobLeftoversConfig{
		CheckCommon:      config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"prolog", "epilog"}},
		MemoryUsedMaxMiB: defaultMemoryUsedMaxMiB,
	}
}

// ValidateSection implements config.SectionValidator.
func (jl *jobLeftoversConfig) ValidateSection() []config.Problem {
	if jl.MemoryUsedMaxMiB < 0 || jl.MemoryUsedMaxMiB > maxMemoryUsedMaxMiB {
		return []config.Problem{config.Problemf("memory_used_max_mib", " = %d: give MiB from 0 to %d, such as %d (not bytes)", jl.MemoryUsedMaxMiB, maxMemoryUsedMaxMiB, defaultMemoryUsedMaxMiB)}
	}
	return nil
}

// Summaries said from more than one place.
const (
	summaryNotInJob  = "runs only in a prolog or epilog: outside a job nodecheck cannot tell which GPUs are whose"
	summaryNoJobGPUs = "the job has no GPUs on this node (no SLURM_JOB_GPUS)"
)

// jobGPU is one entry of SLURM_JOB_GPUS on its way to an NVML device.
type jobGPU struct {
	index      int    // the entry of SLURM_JOB_GPUS
	file       string // the gres.conf File= it names
	where      string // gres.conf:LINE
	minor      int    // of file's device node
	autoDetect string // gres.conf's AutoDetect for the node; "" when off or not set
	gpu        *node.GPU
	// verdict is set where the entry could not be followed to a GPU (an error) or is not
	// judged (a skip); the GPU is then not looked at.
	verdict *Detail
}

func (t *jobGPU) stop(status Status, format string, args ...any) {
	t.verdict = &Detail{Device: fmt.Sprintf("SLURM_JOB_GPUS index %d", t.index), Status: status, Observed: t.file,
		Message: fmt.Sprintf(format, args...), Subject: Subject{File: t.file}}
}

func (jobLeftovers) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*jobLeftoversConfig](env.Config, idJobLeftovers)
	if !env.Mode.JobHook() {
		return Result{Status: StatusSkip, Summary: summaryNotInJob + " (mode " + string(env.Mode) + ")"}
	}
	if strings.TrimSpace(env.Job.GPUs) == "" {
		return Result{Status: StatusSkip, Summary: summaryNoJobGPUs}
	}
	indices, err := parseJobGPUs(env.Job.GPUs)
	if err != nil {
		return Result{Status: StatusError, Summary: text.OneLine(err.Error(), 200), Err: err}
	}
	gpus, res, done := mapJobGPUs(ctx, env, indices)
	if done {
		return res
	}
	if slices.ContainsFunc(gpus, func(t jobGPU) bool { return t.verdict == nil }) {
		inv, err := env.Facts.GPUs(ctx)
		if err != nil {
			return factsError(ctx, "query NVML", err)
		}
		if inv.Init != node.InitSuccess {
			init := inv.Init
			if init == "" {
				init = "no result"
			}
			return Result{Status: StatusError, Observed: "NVML " + init, Err: fmt.Errorf("NVML init: %s", init),
				Summary: fmt.Sprintf("cannot list the processes on the job's GPUs (SLURM_JOB_GPUS=%s): NVML %s", env.Job.GPUs, init)}
		}
		findNVMLDevices(gpus, inv)
	}

	jobUID := -1
	if u, err := strconv.Atoi(env.Job.UID); err == nil && u >= 0 {
		jobUID = u
	}
	return judgeJobLeftovers(gpus, env.Mode, cfg.MemoryUsedMaxMiB, jobUID, env.Job)
}

// judgeJobLeftovers judges the job's GPUs, each followed to its NVML device or stopped on
// the way with its verdict. jobUID is the job's owner (-1: unknown).
func judgeJobLeftovers(gpus []jobGPU, mode config.Mode, maxMiB, jobUID int, job Job) Result {
	res := Result{Expected: fmt.Sprintf("no compute process and at most %d MiB used on the job's GPUs (SLURM_JOB_GPUS=%s)", maxMiB, job.GPUs)}
	var judged, bad []Detail
	var labels []string
	leftovers := 0
	for _, t := range gpus {
		d := t.verdict
		if d == nil {
			j := judgeJobGPU(t, mode, maxMiB, jobUID, job.User)
			d = &j
			labels = append(labels, j.Device)
		}
		res.Details = append(res.Details, *d)
		if d.Status != StatusSkip {
			judged = append(judged, *d)
		}
		if d.Status != StatusOK && d.Status != StatusSkip {
			bad = append(bad, *d)
		}
		if d.Status == StatusFail {
			leftovers++
		}
	}
	if len(judged) == 0 {
		// Every GPU of the job is one the check does not judge (MIG instances).
		first := res.Details[0]
		res.Status, res.Expected = StatusSkip, ""
		res.Summary, res.Subject = first.Device+": "+first.Message+moreSuffix(len(res.Details)-1), first.Subject
		return res
	}
	res.Status = worstOf(judged)
	if len(labels) > 0 {
		res.Observed = fmt.Sprintf("%d of %d GPUs with leftovers", leftovers, len(labels))
	}
	if len(bad) > 0 {
		// Name a GPU with leftovers before one that could not be read.
		first := bad[0]
		for _, d := range bad {
			if d.Status == StatusFail {
				first = d
				break
			}
		}
		res.Summary, res.Subject = first.Device+": "+first.Message+moreSuffix(len(bad)-1), first.Subject
		return res
	}
	gpusText := countNoun(len(labels), "GPU", "GPUs") + " (" + strings.Join(labels, ", ") + ")"
	if mode == config.ModeEpilog {
		res.Summary = "no compute process left and memory released on the job's " + gpusText
	} else {
		res.Summary = "no process and no held memory on the job's " + gpusText + " before it starts"
	}
	return res
}

// parseJobGPUs reads SLURM_JOB_GPUS: a comma-separated list of indices (slurm.ParseRangeList).
// Slurm 22.05's slurmd writes "0" and "0,1" (observed in the test bed, with --gres=gpu:1 and
// gpu:2); ranges ("0-3"), which Slurm's bitmap printer writes elsewhere, are read too.
// Duplicates are dropped; the order is kept.
func parseJobGPUs(s string) ([]int, error) {
	bad := func(why string) error {
		return fmt.Errorf("SLURM_JOB_GPUS=%q: %s; want indices into gres.conf's GPU files such as \"0,1\"", s, why)
	}
	// slurmd writes no blanks; blanks around an index (a variable set by hand) are forgiven.
	parts := strings.Split(strings.TrimSpace(s), ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	list := strings.Join(parts, ",")
	if list == "NoDevFiles" {
		// What Slurm writes when gres.conf gives the GPUs no File=.
		return nil, bad("Slurm knows no device files for the job's GPUs (gres.conf has no File= for them)")
	}
	ranges, err := slurm.ParseRangeList(list, maxJobGPUIndex-1)
	if err != nil || len(ranges) == 0 {
		elem := list
		if re := (*slurm.RangeListError)(nil); errors.As(err, &re) {
			elem = re.Elem
		}
		return nil, bad(fmt.Sprintf("%q is not an index", elem))
	}
	var out []int
	seen := map[int]bool{}
	for _, r := range ranges {
		for i := r.First; i <= r.Last; i++ {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// gresGPUFile is one GPU device slurmd numbers: a File= file of a Name=gpu line, or a whole
// MultipleFiles= line (one GRES, a MIG instance with its GPU, spread over several files).
type gresGPUFile struct {
	file     string
	multiple []string // set for a MultipleFiles= line
	where    string
}

// mapJobGPUs follows each SLURM_JOB_GPUS index to its gres.conf file and that file's device
// minor, one jobGPU per index; done is set, with a whole result, where gres.conf itself
// cannot be used.
func mapJobGPUs(ctx context.Context, env *Env, indices []int) (gpus []jobGPU, res Result, done bool) {
	gresPath, err := env.Slurm.GresPath(ctx)
	if err != nil {
		return nil, slurmFilesError(ctx, "find slurm.conf to read gres.conf", err), true
	}
	gc, err := env.Slurm.Gres(ctx)
	if isNotExist(err) {
		return nil, Result{Status: StatusError, Err: err,
			Summary: fmt.Sprintf("no gres.conf at %s: cannot tell which GPUs SLURM_JOB_GPUS=%s names", gresPath, env.Job.GPUs)}, true
	}
	if err != nil {
		return nil, slurmFilesError(ctx, "read gres.conf", err), true
	}
	ng := gc.ForNode(env.Node)
	auto := ng.AutoDetect
	if auto == "off" {
		auto = ""
	}
	var files []gresGPUFile
	for _, l := range ng.Lines {
		if !strings.EqualFold(l.Name, "gpu") {
			continue
		}
		switch {
		case len(l.Files) > 0:
			for _, f := range l.Files {
				files = append(files, gresGPUFile{file: f, where: l.Pos.String()})
			}
		case len(l.MultipleFiles) > 0:
			files = append(files, gresGPUFile{multiple: l.MultipleFiles, where: l.Pos.String()})
		}
		// A gpu line without files (Count= only) gives slurmd no device to number.
	}
	if len(files) == 0 {
		why := fmt.Sprintf("%s has no gres.conf GPU line with File= in %s", env.Node, gresPath)
		if auto != "" {
			why = fmt.Sprintf("gres.conf uses AutoDetect=%s for %s without File= lines, and then Slurm numbers the GPUs in an order nodecheck does not know", auto, env.Node)
		}
		return nil, Result{Status: StatusError, Err: errors.New(why),
			Summary: fmt.Sprintf("cannot tell which GPUs SLURM_JOB_GPUS=%s names: %s", env.Job.GPUs, why)}, true
	}

	for _, i := range indices {
		t := jobGPU{index: i, autoDetect: auto}
		gpus = append(gpus, t)
		tp := &gpus[len(gpus)-1]
		if i >= len(files) {
			tp.stop(StatusError, "gres.conf lists %s for %s: cannot tell which GPU it is", countNoun(len(files), "GPU device file", "GPU device files"), env.Node)
			continue
		}
		f := files[i]
		tp.file, tp.where = f.file, f.where
		if f.multiple != nil {
			tp.stop(StatusSkip, "a MultipleFiles= GPU (%s, %s): a MIG instance, and NVML lists processes per GPU, not per instance, so its GPU is not judged", strings.Join(f.multiple, ","), f.where)
			continue
		}
		dn, err := env.Facts.DevNode(ctx, f.file)
		if ctx.Err() != nil {
			return nil, Result{Status: StatusFail, Summary: "timed out reading " + f.file, Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}, true
		}
		why := ""
		switch {
		case err != nil:
			why = "cannot stat it: " + err.Error()
		case dn.Missing:
			why = "it is missing"
		case dn.Type != "char":
			why = "it is a " + typeName(dn.Type) + ", not a character device"
		case dn.Major != nvidiaMajor || dn.Minor >= nvidiactlMinor:
			why = fmt.Sprintf("it is char %d:%d, not an NVIDIA GPU (%d:N, N below %d)", dn.Major, dn.Minor, nvidiaMajor, nvidiactlMinor)
		}
		if why != "" {
			tp.stop(StatusError, "gres.conf File=%s (%s): %s: cannot tell which GPU it is", f.file, f.where, why)
			continue
		}
		tp.minor = int(dn.Minor)
	}
	return gpus, Result{}, false
}

// findNVMLDevices finds the NVML device of each jobGPU still to judge, by minor number; a
// minor no NVML device has stops it with an error. Where gres.conf uses AutoDetect, slurmd
// numbers the GPUs as it detected them (NVML's order) after matching gres.conf's files to
// them, so the file order is trusted only where the two agree: the file at position i is
// the GPU at NVML index i.
func findNVMLDevices(gpus []jobGPU, inv node.GPUInventory) {
	for k := range gpus {
		t := &gpus[k]
		if t.verdict != nil {
			continue
		}
		i := slices.IndexFunc(inv.Devices, func(g node.GPU) bool { return g.MinorNumber == t.minor })
		if i < 0 {
			t.stop(StatusError, "gres.conf File=%s (%s) is GPU minor %d, which none of the %s NVML lists has: cannot tell which GPU it is",
				t.file, t.where, t.minor, countNoun(len(inv.Devices), "GPU", "GPUs"))
			continue
		}
		g := &inv.Devices[i]
		if t.autoDetect != "" && g.Index != t.index {
			t.stop(StatusError, "gres.conf (%s, AutoDetect=%s) puts %s at position %d but NVML at index %d, and slurmd may number either way: cannot tell which GPU it is",
				t.where, t.autoDetect, t.file, t.index, g.Index)
			continue
		}
		t.gpu = g
	}
}

// judgeJobGPU is the verdict on one of the job's GPUs.
func judgeJobGPU(t jobGPU, mode config.Mode, maxMiB, jobUID int, jobUser string) Detail {
	g := t.gpu
	d := Detail{Device: gpuLabel(g.Index, sysfsBusID(g.PCIBusID)), Status: StatusOK, Subject: gpuSubject(*g, ""),
		Expected: fmt.Sprintf("no process, at most %d MiB used", maxMiB)}
	where := fmt.Sprintf("SLURM_JOB_GPUS index %d, %s", t.index, t.file)
	if g.Error != "" {
		d.Status, d.Observed = StatusError, g.Error
		d.Message = fmt.Sprintf("NVML: %s: cannot list its processes (%s)", g.Error, where)
		return d
	}
	if g.Compute == nil {
		d.Status = StatusError
		d.Message = fmt.Sprintf("NVML could not list its compute processes (%s)", where)
		return d
	}
	procs := g.Compute.Processes
	used := ""
	if g.Memory != nil {
		used = fmt.Sprintf(", %d MiB used", g.Memory.UsedMiB)
	}
	d.Observed = countNoun(len(procs), "process", "processes") + used
	if len(procs) > 0 {
		descs := make([]string, len(procs))
		for k, p := range procs {
			descs[k] = describeProcess(p, mode == config.ModeProlog && ownedByJobUser(p, jobUID, jobUser))
		}
		failDetail(&d, faultLeftProcess)
		what := "left"
		if mode == config.ModeProlog {
			// Nothing of this job runs yet: whoever owns it, the process would share the GPU.
			what = "before the job starts"
		}
		d.Message = fmt.Sprintf("%s %s: %s", countNoun(len(procs), "process", "processes"), what, listSome(descs, maxListedProcesses))
		return d
	}
	if g.Memory == nil {
		d.Status = StatusError
		d.Message = fmt.Sprintf("NVML could not read its memory use (%s)", where)
		return d
	}
	if g.Memory.UsedMiB > uint64(max(maxMiB, 0)) {
		failDetail(&d, faultLeftMemory)
		verb := "memory not released"
		if mode == config.ModeProlog {
			verb = "memory held before the job starts"
		}
		d.Message = fmt.Sprintf("%s: %d MiB used with no process, max %d MiB", verb, g.Memory.UsedMiB, maxMiB)
		return d
	}
	d.Message = fmt.Sprintf("no process, %d MiB used (%s)", g.Memory.UsedMiB, where)
	return d
}

// ownedByJobUser tells whether a process belongs to the job's user.
func ownedByJobUser(p node.Process, jobUID int, jobUser string) bool {
	return (jobUID >= 0 && p.UID == jobUID) || (jobUser != "" && p.User == jobUser)
}

// describeProcess is "pid 4242 (alice, python)": the owner's name, else "uid N", else
// "owner unknown" (the process was gone from /proc when read), then the command if known.
func describeProcess(p node.Process, jobsOwnUser bool) string {
	owner := "owner unknown"
	switch {
	case p.User != "":
		owner = text.OneLine(p.User, 32)
	case p.UID >= 0:
		owner = "uid " + strconv.Itoa(p.UID)
	}
	parts := []string{owner}
	if p.Command != "" {
		parts = append(parts, text.OneLine(p.Command, 32))
	}
	if jobsOwnUser {
		parts = append(parts, "the job's own user")
	}
	return fmt.Sprintf("pid %d (%s)", p.PID, strings.Join(parts, ", "))
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (jobLeftovers) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultLeftProcess, "a process still on one of the job's GPUs after it (or before it, in a prolog)", RemedyReboot,
				"it escaped or outlived slurmstepd's kill (slurm.conf(5) UnkillableStepTimeout drains a node whose processes do not die), and nvidia-smi(1) -r refuses a GPU a process still uses: the repair that always clears it is a reboot (a person may kill it first)"},
			{faultLeftMemory, "GPU memory held with no process on the GPU", RemedyResetGPU,
				"nvidia-smi(1) -r resets the GPU and frees its memory once nothing uses it"},
		},
	}
}

// Explain is what `nodecheck explain job_leftovers` says.
func (jobLeftovers) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The job's environment as slurmd gives it to Prolog= and Epilog=: SLURM_JOB_GPUS (indices into this node's gres.conf GPU device files, in file order), SLURM_JOB_UID and SLURM_JOB_USER.",
			"gres.conf beside slurm.conf: the File= (and MultipleFiles=) entries of this node's Name=gpu lines, in order, and AutoDetect.",
			"Each of the job's device files (stat only): its character major and minor, which name the GPU.",
			"NVML: each GPU's minor number, its compute processes (nvmlDeviceGetComputeRunningProcesses) and its framebuffer memory in use (nvmlDeviceGetMemoryInfo).",
			"For each process on the live node: its real uid (/proc/PID/status), its command (/proc/PID/comm) and the user name of that uid in /etc/passwd (never NSS: a directory server cannot stall the hook).",
		},
		Passes: "Epilog: no compute process is left on any GPU the job had, and each shows at most memory_used_max_mib MiB in use. Prolog: the GPUs Slurm gives the job carry no compute process and no more memory in use than that. Other GPUs of the node, which may belong to other jobs, are never looked at.",
		Fails:  "Epilog: a process still runs on one of the job's GPUs (a process that escaped the job's cgroup or process tracking, a daemon the job started, a process stuck in the driver), named with its PID, owner and command; or the GPU holds more memory than memory_used_max_mib with no process (memory the driver did not release). Prolog: a process already runs on a GPU the job is about to get, whoever owns it, even the job's own user (the job has not started, so it is another job's or a leftover): it would share the GPU with the job; or memory is held there.",
		Skips:  "Outside a prolog or epilog (only they know whose GPUs are whose), a job without GPUs on this node (no SLURM_JOB_GPUS), or a job whose GPUs are all MIG instances (MultipleFiles=): NVML lists processes per GPU, so judging the whole GPU would judge other jobs' instances.",
		Errors: "The job's GPUs cannot be told for certain: SLURM_JOB_GPUS does not parse, gres.conf is missing or has no File= for this node (AutoDetect alone), an index goes beyond gres.conf's GPU files, a file is missing or not an NVIDIA character device, no NVML device has its minor number, or with AutoDetect the gres.conf order and NVML's order disagree. Or NVML is unavailable, a GPU is lost, or NVML cannot list a GPU's processes or read its memory. nodecheck never fails a node for its own confusion.",
		Keys: map[string]string{
			"memory_used_max_mib": "The most framebuffer memory, in MiB, one of the job's GPUs may show in use with no process on it. An idle GPU reads 0 to 4 MiB with nvmlDeviceGetMemoryInfo_v2, which newer drivers have, but about 550 MiB on an H100 with the older call, whose \"used\" includes the driver's reserve; the default passes both. 0: any memory in use fails.",
		},
		Fix: []string{
			"nvidia-smi --query-compute-apps=pid,used_memory --format=csv on the node: the processes still on the GPUs; ps -o pid,user,lstart,cmd -p PID says whose and since when.",
			"Kill them (kill PID, then kill -9 PID). A process that does not die is stuck in the driver (state D in ps): the GPU needs a reset or the node a reboot.",
			"Find out how it escaped the job: with ProctrackType=proctrack/cgroup and the job's cgroup, slurmstepd kills every process of the job before the epilog; check slurmd's log for the job (\"Kill task failed\", UnkillableStepTimeout) and whether the process was started outside the job's cgroup (a daemon, an ssh session not adopted by pam_slurm_adopt).",
			"Memory in use with no process listed: nvidia-smi -q -d MEMORY; if it stays held, reset the GPU with nvidia-smi -r -i INDEX (nothing may be using it) or reboot the node.",
			"Resume the node once the GPU is clean: scontrol update NodeName=NODE State=RESUME.",
		},
	}
}
