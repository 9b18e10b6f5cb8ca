package checks

import (
	"context"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// Cgroup lines as Slurm's cgroup plugins lay them out (src/plugins/cgroup/v1/xcgroup.c
// "%s/uid_%u" and "%s/job_%u"; src/plugins/cgroup/v2/cgroup_v2.c "%s/%s.scope" with
// slurmstepd, "/job_%u" or the job's SLUID); no node with proctrack/cgroup could be captured
// here (the test beds run proctrack/linuxproc), so the lines are written from those formats.
const (
	cgV2Job     = "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"
	cgV2Extern  = "0::/system.slice/slurmstepd.scope/job_4243/step_extern/user/task_special"
	cgV2Stepd   = "0::/system.slice/slurmstepd.scope/system"
	cgV2Multi   = "0::/system.slice/gpu01_slurmstepd.scope/job_77/step_batch/user/task_0"
	cgV2SLUID   = "0::/system.slice/slurmstepd.scope/s5EXAMPLE0SLUID/step_0/user/task_0"
	cgV1Job     = "4:freezer:/slurm/uid_1001/job_4242/step_0/task_0"
	cgV1Multi   = "5:devices:/slurm_gpu01/uid_1001/job_77/step_0"
	cgUser      = "0::/user.slice/user-1002.slice/session-4.scope"
	cgV1Session = "4:freezer:/user.slice/user-1002.slice/session-4.scope"
)

func TestSlurmJobOf(t *testing.T) {
	for line, want := range map[string]string{
		cgV2Job: "4242", cgV2Extern: "4243", cgV2Stepd: "", cgV2Multi: "77", cgV2SLUID: "s5EXAMPLE0SLUID",
		cgV1Job: "4242", cgV1Multi: "77", cgUser: "", cgV1Session: "", "garbage": "", "0::/": "",
		"0::/system.slice/slurmstepd.scope": "", "4:freezer:/slurm/uid_1001": "",
	} {
		if got := slurmJobOf(line); got != want {
			t.Errorf("slurmJobOf(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestMaxSystemUID(t *testing.T) {
	for defs, want := range map[string]int{
		"":                                   99,
		"UID_MIN 1000\nUID_MAX 60000\n":      999,
		"#SYS_UID_MAX 999\nUID_MIN\t\t 1000": 999,
		"SYS_UID_MAX 499\nUID_MIN 1000":      499,
		"UID_MIN 500":                        499,
		"UID_MIN x":                          99,
	} {
		if got := maxSystemUID(defs); got != want {
			t.Errorf("maxSystemUID(%q) = %d, want %d", defs, got, want)
		}
	}
}

func TestJudgeStrayProcesses(t *testing.T) {
	proc := func(pid, uid int, user, comm, cg string) node.ProcessInfo {
		return node.ProcessInfo{PID: pid, UID: uid, User: user, Comm: comm, Argv0: comm, Cgroup: cg}
	}
	base := []node.ProcessInfo{
		proc(1, 0, "root", "systemd", "0::/init.scope"),
		proc(900, 0, "root", "slurmstepd", cgV2Stepd),
		proc(950, 110, "munge", "munged", "0::/system.slice/munge.service"),
	}
	tests := []struct {
		name    string
		f       strayFacts
		status  Status
		summary string
	}{
		{"only system accounts", strayFacts{Procs: node.Processes{Processes: base, CgroupsRead: true}}, StatusOK, "no process of an ordinary user outside a Slurm job"},
		{"a job's processes", strayFacts{Procs: node.Processes{Processes: append(base, proc(1000, 1001, "alice", "python3", cgV2Job)), CgroupsRead: true}}, StatusOK, ""},
		{"a login of a user with a job", strayFacts{Procs: node.Processes{Processes: append(base,
			proc(1000, 1001, "alice", "python3", cgV2Job), proc(1100, 1001, "alice", "bash", cgUser)), CgroupsRead: true}}, StatusOK, ""},
		{"a login without a job warns", strayFacts{Procs: node.Processes{Processes: append(base,
			proc(1200, 1002, "bob", "bash", cgUser), proc(1201, 1002, "bob", "python3", cgUser)), CgroupsRead: true}}, StatusWarn,
			"bob: 2 processes outside every Slurm job, and no job here (1200 bash, 1201 python3)"},
		{"fail = true fails", strayFacts{FailOnStray: true, Procs: node.Processes{Processes: append(base, proc(1200, 1002, "", "miner", cgV1Session)), CgroupsRead: true}}, StatusFail,
			"uid 1002: 1 process outside every Slurm job, and no job here (1200 miner)"},
		{"the ending job authorizes no one in its epilog", strayFacts{EndingJob: "4242", FailOnStray: true, Procs: node.Processes{Processes: append(base,
			proc(1000, 1001, "alice", "python3", cgV2Job), proc(1100, 1001, "alice", "daemon", cgUser)), CgroupsRead: true}}, StatusFail,
			"alice: 1 process outside every Slurm job, and no job here (1100 daemon)"},
		{"allowed, ignored and vanished processes", strayFacts{Allow: []string{"svc", "1500"}, Ignore: []string{"dbus-daemon"}, Procs: node.Processes{Processes: append(base,
			proc(1300, 1003, "svc", "agent", cgUser), proc(1301, 1500, "", "x", cgUser), proc(1302, 1004, "eve", "dbus-daemon", cgUser), proc(1303, 1004, "eve", "sh", "")), CgroupsRead: true}}, StatusOK, ""},
		{"a user squeue lists with a job here (mpirun's ssh, a second node of salloc)", strayFacts{FailOnStray: true, JobUIDs: map[int]bool{1002: true}, Procs: node.Processes{Processes: append(base,
			proc(1200, 1002, "bob", "orted", cgUser)), CgroupsRead: true}}, StatusOK, ""},
		{"squeue could not answer: undecided, never a drain", strayFacts{FailOnStray: true, JobUIDsErr: "squeue --nodelist=gpu01: timed out", Procs: node.Processes{Processes: append(base,
			proc(1200, 1002, "bob", "orted", cgUser)), CgroupsRead: true}}, StatusError, "squeue could not say whose jobs are here: squeue --nodelist=gpu01: timed out"},
		{"a directory user named by getent and allowed", strayFacts{Allow: []string{"root", "svcacct"}, Names: map[int]string{70001: "svcacct"}, Procs: node.Processes{Processes: append(base,
			proc(1300, 70001, "", "agent", cgUser)), CgroupsRead: true}}, StatusOK, ""},
		{"a directory user getent could not name", strayFacts{Allow: []string{"root", "svcacct"}, NamesErr: "getent passwd 70001: not installed", Procs: node.Processes{Processes: append(base,
			proc(1300, 70001, "", "agent", cgUser)), CgroupsRead: true}}, StatusError, "getent could not name it"},
		{"a directory user getent named, not allowed", strayFacts{Allow: []string{"root", "svcacct"}, Names: map[int]string{70002: "eve"}, Procs: node.Processes{Processes: append(base,
			proc(1300, 70002, "", "miner", cgUser)), CgroupsRead: true}}, StatusWarn, "eve: 1 process outside every Slurm job"},
		{"a list recorded without cgroups cannot be judged", strayFacts{Procs: node.Processes{Processes: base}}, StatusError, "the process list has no cgroups"},
		{"no cgroup tracking: skip", strayFacts{Proctrack: "proctrack/linuxproc", Procs: node.Processes{Processes: base, CgroupsRead: true}}, StatusSkip, "ProctrackType=proctrack/linuxproc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f.Proctrack == "" {
				tc.f.Proctrack = "proctrack/cgroup"
			}
			if tc.f.MaxSysUID == 0 {
				tc.f.MaxSysUID = 999
			}
			if tc.f.Allow == nil {
				tc.f.Allow = []string{"root", "nobody"}
			}
			res := judgeStrayProcesses(tc.f)
			if res.Status != tc.status || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("%s %q, want %s containing %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			if res.Status == StatusFail && res.Details[0].Remedy != RemedyAdmin {
				t.Errorf("remedy %q, want admin", res.Details[0].Remedy)
			}
		})
	}
}

// TestStrayProcessesRun: squeue is asked only where processes remain outside every job, the
// node's jobs but the one an epilog ends.
func TestStrayProcessesRun(t *testing.T) {
	const squeueAsk = "/usr/bin/squeue --noheader --nodelist=gpu01 --states=RUNNING,SUSPENDED,COMPLETING,CONFIGURING --format=%i %U"
	procs := node.Processes{CgroupsRead: true, Processes: []node.ProcessInfo{
		{PID: 1000, UID: 1001, User: "alice", Comm: "python3", Cgroup: cgV2Job},
		{PID: 1100, UID: 1001, User: "alice", Comm: "bash", Cgroup: cgUser},
		{PID: 1200, UID: 1002, User: "bob", Comm: "orted", Cgroup: cgUser},
	}}
	run := func(mode config.Mode, job, squeueOut string) (Result, []string) {
		f := &execFacts{fakeFacts: &fakeFacts{files: map[string]string{"/etc/slurm/slurm.conf": "ProctrackType=proctrack/cgroup\nNodeName=gpu01\n", "/etc/login.defs": "UID_MIN 1000\n"},
			facts: map[string]any{node.ProcessesFact.Name: procs}}, cmds: map[string]node.CmdResult{squeueAsk: {Stdout: squeueOut}}}
		env := &Env{Facts: f, Config: config.Default(Schema()), Mode: mode, Node: "gpu01", Job: Job{ID: job},
			Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
		return strayProcesses{}.Run(context.Background(), env), f.ran
	}
	res, asks := run(config.ModeHealth, "", "4242 1001\n4250 1002\n")
	if res.Status != StatusOK || len(asks) != 1 || asks[0] != squeueAsk {
		t.Errorf("health: %s %q, asked %q", res.Status, res.Summary, asks)
	}
	// In bob's epilog his only job ends: his process outside it is stray.
	res, _ = run(config.ModeEpilog, "4250", "4242 1001\n4250 1002\n")
	if res.Status != StatusWarn || !strings.HasPrefix(res.Summary, "bob: 1 process") {
		t.Errorf("epilog: %s %q", res.Status, res.Summary)
	}
	res, _ = run(config.ModeHealth, "", "garbage\n")
	if res.Status != StatusError || !strings.Contains(res.Summary, "is not JOBID UID") {
		t.Errorf("squeue garbage: %s %q", res.Status, res.Summary)
	}
}
