package checks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idStrayProcesses = "stray_processes"

const faultStrayProcess fault = "stray_processes/process"

// strayProcesses finds processes of ordinary users that run outside every Slurm job on the
// node: a user who logged in without a job (no pam_slurm_adopt), or a daemon a job left
// behind that escaped its cgroup. They take CPU, memory and GPUs the scheduler believes free.
// A job's processes are told first by the cgroup slurmstepd puts them in (Slurm's cgroup/v1
// plugin: SLURMROOT/uid_U/job_J, xcgroup.c; cgroup/v2: SLICE/slurmstepd.scope/job_J, or the
// job's SLUID on newer Slurm, cgroup_v2.c), which needs no call to slurmctld. Only where
// processes remain outside every job does it ask squeue which users have a job allocated on
// the node, as NHC's check_ps_unauth_users does: such a user may run other processes there
// (mpirun's ssh to a node of its allocation, a login), and no process of theirs is stray.
type strayProcesses struct{}

func (strayProcesses) ID() string { return idStrayProcesses }

func (strayProcesses) Description() string {
	return "no process of an ordinary user outside every Slurm job on the node (NHC's check_ps_unauth_users)"
}

// strayProcessesConfig is [checks.stray_processes].
type strayProcessesConfig struct {
	config.CheckCommon
	// AllowUsers may run processes without a job (names or uids): NHC_AUTH_USERS.
	AllowUsers []string `toml:"allow_users"`
	// IgnoreCommands are processes never judged, by the kernel's name or argv[0].
	IgnoreCommands []string `toml:"ignore_commands"`
	// MaxSystemUID is the highest uid of a system account, never judged; 0 reads
	// /etc/login.defs as NHC does (SYS_UID_MAX, else UID_MIN-1, else 99).
	MaxSystemUID int `toml:"max_system_uid"`
	// Fail makes a stray process fail the check (and drain the node); otherwise it warns.
	Fail bool `toml:"fail"`
	// Squeue and Getent are absolute paths: hooks have no PATH.
	Squeue string `toml:"squeue"`
	Getent string `toml:"getent"`
}

func (strayProcesses) Section() config.Section {
	return &strayProcessesConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		AllowUsers:  []string{"root", "nobody"},
		Squeue:      "/usr/bin/squeue",
		Getent:      "/usr/bin/getent",
	}
}

// ValidateSection implements config.SectionValidator.
func (c *strayProcessesConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	if c.MaxSystemUID < 0 {
		out = append(out, config.Problemf("max_system_uid", " = %d: give 0 (read /etc/login.defs) or a uid", c.MaxSystemUID))
	}
	for _, k := range []struct{ key, v string }{{"squeue", c.Squeue}, {"getent", c.Getent}} {
		if !strings.HasPrefix(k.v, "/") {
			out = append(out, config.Problemf(k.key, " = %q: give an absolute path: hooks have no PATH", k.v))
		}
	}
	for i, u := range c.AllowUsers {
		if strings.TrimSpace(u) == "" || strings.ContainsAny(u, " \t:") {
			out = append(out, config.Problemf("allow_users", "[%d] = %q: give a user name or uid", i, u))
		}
	}
	return out
}

// strayFacts is what the judge reads.
type strayFacts struct {
	Procs       node.Processes
	MaxSysUID   int
	Proctrack   string // slurm.conf's ProctrackType
	EndingJob   string // the job an epilog runs for: it authorizes no one any more
	Allow       []string
	Ignore      []string
	FailOnStray bool
	// JobUIDs are the users squeue says have a job allocated on the node (the ending job's
	// aside); asked only where processes remain outside every job's cgroup. JobUIDsErr says
	// why squeue could not tell.
	JobUIDs    map[int]bool
	JobUIDsErr string
	// Names are user names getent gave for uids /etc/passwd does not hold (directory
	// users), asked only for such processes where allow_users names users; NamesErr says why
	// getent could not tell.
	Names    map[int]string
	NamesErr string
}

func (strayProcesses) Run(ctx context.Context, env *Env) Result {
	set := settings[*strayProcessesConfig](env.Config, idStrayProcesses)
	procs, err := node.Read(ctx, env.Facts, node.ProcessesFact)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "processes not recorded in this snapshot"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not list the processes", Err: err}
	}
	conf, err := env.Slurm.Conf(ctx)
	if err != nil {
		return Result{Status: StatusError, Summary: "read slurm.conf, for ProctrackType: " + err.Error(), Err: err}
	}
	f := strayFacts{Procs: procs, MaxSysUID: set.MaxSystemUID, Allow: set.AllowUsers, Ignore: set.IgnoreCommands, FailOnStray: set.Fail}
	if s, ok := conf.Setting("ProctrackType"); ok {
		f.Proctrack = strings.TrimSpace(s.Value)
	}
	if env.Mode == config.ModeEpilog {
		f.EndingJob = env.Job.ID
	}
	if f.MaxSysUID == 0 {
		b, err := env.Facts.ReadFile(ctx, "/etc/login.defs")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Result{Status: StatusError, Summary: "read /etc/login.defs, for the system uids", Err: err}
		}
		f.MaxSysUID = maxSystemUID(string(b))
	}
	loose := looseProcesses(f)
	if len(loose) == 0 {
		return judgeStrayProcesses(f)
	}
	f.JobUIDs, f.JobUIDsErr = jobUsers(ctx, env, set.Squeue)
	var unnamed []string
	for _, p := range loose {
		if p.User == "" && !slices.Contains(unnamed, strconv.Itoa(p.UID)) && slices.ContainsFunc(f.Allow, isUserName) {
			unnamed = append(unnamed, strconv.Itoa(p.UID))
		}
	}
	if len(unnamed) > 0 {
		f.Names, f.NamesErr = userNames(ctx, env, set.Getent, unnamed)
	}
	return judgeStrayProcesses(f)
}

// isUserName is an allow_users entry that names a user rather than a uid.
func isUserName(s string) bool {
	_, err := strconv.Atoi(s)
	return err != nil
}

// jobUsers asks squeue for the users of the jobs allocated on the node, in the states that
// hold it (running, suspended, completing, configuring), but the job an epilog ends.
func jobUsers(ctx context.Context, env *Env, squeue string) (map[int]bool, string) {
	res, err := env.Facts.Exec(ctx, []string{squeue, "--noheader", "--nodelist=" + env.Node,
		"--states=RUNNING,SUSPENDED,COMPLETING,CONFIGURING", "--format=%i %U"})
	if err != nil {
		return nil, fmt.Sprintf("squeue --nodelist=%s: %v", env.Node, err)
	}
	out := map[int]bool{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		uid, err := strconv.Atoi(f[len(f)-1])
		if len(f) != 2 || err != nil {
			return nil, fmt.Sprintf("squeue --nodelist=%s: line %q is not JOBID UID", env.Node, text.OneLine(line, 80))
		}
		if env.Mode == config.ModeEpilog && f[0] == env.Job.ID {
			continue
		}
		out[uid] = true
	}
	return out, ""
}

// userNames asks getent (NSS: LDAP, SSSD) for the names of uids /etc/passwd does not hold.
func userNames(ctx context.Context, env *Env, getent string, uids []string) (map[int]string, string) {
	res, err := env.Facts.Exec(ctx, append([]string{getent, "passwd"}, uids...))
	// getent exits 2 when one of the keys is not found: what it printed still counts.
	if err != nil && res.Stdout == "" {
		return nil, fmt.Sprintf("getent passwd %s: %v", strings.Join(uids, " "), err)
	}
	out := map[int]string{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(f[2]); err == nil {
			out[uid] = f[0]
		}
	}
	return out, ""
}

// maxSystemUID reads login.defs as NHC's nhc_common_get_max_sys_uid does: SYS_UID_MAX, else
// UID_MIN-1, else 99 (a missing or empty file too).
func maxSystemUID(loginDefs string) int {
	uidMin, sysMax := -1, -1
	for _, line := range strings.Split(loginDefs, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		switch f[0] {
		case "SYS_UID_MAX":
			sysMax = n
		case "UID_MIN":
			uidMin = n
		}
	}
	switch {
	case sysMax > 0:
		return sysMax
	case uidMin > 1:
		return uidMin - 1
	}
	return 99
}

// slurmJobOf is the job a /proc/PID/cgroup line puts the process in ("" for none): the
// component after slurmstepd.scope/ (cgroup v2; "system" is slurmstepd's own), or after
// uid_U/ under a slurm or slurm_NODE root (v1). A job's id is written job_J, or a SLUID.
func slurmJobOf(line string) string {
	parts := strings.SplitN(line, ":", 3)
	if len(parts) != 3 {
		return ""
	}
	comps := strings.Split(parts[2], "/")
	for i, c := range comps {
		if i+1 >= len(comps) {
			break
		}
		if strings.HasSuffix(c, "slurmstepd.scope") {
			if j := comps[i+1]; j != "system" && j != "" {
				return strings.TrimPrefix(j, "job_")
			}
			return ""
		}
		if (c == "slurm" || strings.HasPrefix(c, "slurm_")) && strings.HasPrefix(comps[i+1], "uid_") && i+2 < len(comps) {
			return strings.TrimPrefix(comps[i+2], "job_")
		}
	}
	return ""
}

// looseProcesses are the processes the cgroups do not settle: of ordinary users (above the
// system uids, not allowed by uid or /etc/passwd name, not ignored) in no job's cgroup, whose
// user has no process in one either.
func looseProcesses(f strayFacts) []node.ProcessInfo {
	if !strings.EqualFold(f.Proctrack, "proctrack/cgroup") || !f.Procs.CgroupsRead {
		return nil
	}
	withJob := map[int]bool{}
	var loose []node.ProcessInfo
	for _, p := range f.Procs.Processes {
		if p.UID <= f.MaxSysUID || slices.Contains(f.Allow, p.User) || slices.Contains(f.Allow, strconv.Itoa(p.UID)) ||
			slices.Contains(f.Ignore, p.Comm) || p.Argv0 != "" && slices.Contains(f.Ignore, p.Argv0) || p.Cgroup == "" {
			continue // a system account, allowed, ignored, or gone before its cgroup was read
		}
		switch job := slurmJobOf(p.Cgroup); {
		case job == "":
			loose = append(loose, p)
		case job != f.EndingJob:
			withJob[p.UID] = true
		}
	}
	return slices.DeleteFunc(loose, func(p node.ProcessInfo) bool { return withJob[p.UID] })
}

// judgeStrayProcesses reports, per user, the loose processes whose user squeue does not list
// with a job on the node and allow_users does not name (by the name getent gave, for a
// directory user). Where squeue or getent could not tell, the check cannot either: error.
func judgeStrayProcesses(f strayFacts) Result {
	if !strings.EqualFold(f.Proctrack, "proctrack/cgroup") {
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("Slurm does not keep jobs in cgroups here (ProctrackType=%s): a job's processes cannot be told from others", cmp.Or(f.Proctrack, "unset"))}
	}
	if !f.Procs.CgroupsRead {
		return Result{Status: StatusError, Summary: "the process list has no cgroups (a snapshot recorded by an older nodecheck): cannot tell a job's processes"}
	}
	loose := looseProcesses(f)
	if len(loose) > 0 && f.JobUIDsErr != "" {
		return Result{Status: StatusError, Summary: fmt.Sprintf("%s outside every job's cgroup, and squeue could not say whose jobs are here: %s",
			countNoun(len(loose), "process", "processes"), f.JobUIDsErr)}
	}
	byUser := map[int][]node.ProcessInfo{}
	var uids []int
	for _, p := range loose {
		name := cmp.Or(p.User, f.Names[p.UID])
		if f.JobUIDs[p.UID] || name != "" && slices.Contains(f.Allow, name) {
			continue
		}
		if name == "" && f.NamesErr != "" {
			return Result{Status: StatusError, Summary: fmt.Sprintf("uid %d runs outside every job, and getent could not name it to compare with allow_users: %s", p.UID, f.NamesErr)}
		}
		if byUser[p.UID] == nil {
			uids = append(uids, p.UID)
		}
		byUser[p.UID] = append(byUser[p.UID], p)
	}
	slices.Sort(uids)
	var res Result
	for _, uid := range uids {
		ps := byUser[uid]
		who := cmp.Or(ps[0].User, f.Names[uid], "uid "+strconv.Itoa(uid))
		d := Detail{Device: who, Expected: "no process outside a Slurm job", Observed: strayList(ps),
			Message: fmt.Sprintf("%s outside every Slurm job, and no job here (%s)", countNoun(len(ps), "process", "processes"), strayList(ps))}
		if f.FailOnStray {
			failDetail(&d, faultStrayProcess)
		} else {
			d.Status = StatusWarn
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, "no process of an ordinary user outside a Slurm job")
}

// strayList names up to maxListedProcesses processes: "1234 python3, 1240 sleep (+3 more)".
func strayList(ps []node.ProcessInfo) string {
	var names []string
	for i, p := range ps {
		if i == maxListedProcesses {
			names = append(names, fmt.Sprintf("+%d more", len(ps)-i))
			break
		}
		names = append(names, fmt.Sprintf("%d %s", p.PID, cmp.Or(p.Comm, p.Argv0)))
	}
	return strings.Join(names, ", ")
}

func (strayProcesses) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultStrayProcess, "a process of an ordinary user runs outside every Slurm job, and its user has no job on the node (fail = true)", RemedyAdmin,
			"NHC check_ps_unauth_users: a login without a job or a daemon that escaped its job; a person ends it and closes the way in (pam_slurm_adopt)"},
	}}
}

// Explain is what `nodecheck explain stray_processes` says.
func (strayProcesses) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/proc/PID/status, comm, cmdline (its first word) and cgroup of every process: owner, name, and the Slurm job cgroup it runs in, if any.",
			"/etc/login.defs (SYS_UID_MAX, else UID_MIN-1), for the system accounts, unless max_system_uid is set.",
			"slurm.conf's ProctrackType: only proctrack/cgroup keeps every process of a job in the job's cgroup.",
			"Only where processes remain outside every job's cgroup: squeue --nodelist=NODE (the users of the jobs allocated on the node, as NHC asks), and getent passwd for uids /etc/passwd does not name when allow_users names users.",
		},
		Passes: "Every process of an ordinary user (uid above the system accounts, not in allow_users) runs in a Slurm job's cgroup, or its user has a job allocated on the node (squeue), in the epilog one other than the ending job.",
		Warns:  "A user with no job on the node has processes outside every job (fail = false, the default).",
		Fails:  "The same, with fail = true.",
		Skips:  "ProctrackType is not proctrack/cgroup; a snapshot without the process list.",
		Errors: "The process list, slurm.conf or /etc/login.defs cannot be read; a recorded process list has no cgroups; processes remain outside every job and squeue (or getent, to name a directory user) cannot answer.",
		Keys: map[string]string{
			"allow_users":     `Users who may run processes without a job, by name or uid (NHC's NHC_AUTH_USERS: "root", "nobody").`,
			"ignore_commands": "Processes never judged, by the kernel's name or the first word of the command line (NHC's -c).",
			"max_system_uid":  "The highest uid of a system account, never judged; 0 reads /etc/login.defs as NHC does.",
			"fail":            "true: a stray process fails the check and drains the node (NHC's default action, die); false: it warns.",
			"squeue":          "squeue's absolute path.",
			"getent":          "getent's absolute path, to name users /etc/passwd does not hold (LDAP, SSSD).",
		},
		Fix: []string{
			"ps -o pid,user,lstat,cgroup,args -u USER shows the processes; end them (kill) once the user is told.",
			"pam_slurm_adopt in sshd's PAM stack keeps ssh sessions in the user's job, and refuses users without one.",
		},
	}
}
