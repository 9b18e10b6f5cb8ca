package checks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// extern is a cgroup v2 path of a prolog run inside job 42 (PrologFlags=RunInJob):
// slurmstepd's leaf under the extern step (src/plugins/cgroup/v2/cgroup_v2.c).
const extern = "/system.slice/slurmstepd.scope/job_42/step_extern/slurm"

// gpuAccess is n GPUs /dev/nvidia0..n-1, those in allowed may be opened.
func gpuAccess(cgroup string, n int, allowed ...int) node.GPUAccess {
	a := node.GPUAccess{CgroupVersion: 2, Cgroup: cgroup}
	for i := range n {
		g := node.GPUDeviceAccess{Path: fmt.Sprintf("/dev/nvidia%d", i), Minor: uint32(i)}
		for _, j := range allowed {
			g.Allowed = g.Allowed || i == j
		}
		a.GPUs = append(a.GPUs, g)
	}
	return a
}

// own is the job's GPUs as mapJobGPUs leaves them: SLURM_JOB_GPUS index i at minor m.
func own(pairs ...int) []jobGPU {
	var out []jobGPU
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, jobGPU{index: pairs[i], minor: pairs[i+1], file: fmt.Sprintf("/dev/nvidia%d", pairs[i+1])})
	}
	return out
}

func TestJudgeGPUIsolation(t *testing.T) {
	unmapped := jobGPU{index: 1}
	unmapped.stop(StatusError, "gres.conf lists 1 GPU device file for gpu01: cannot tell which GPU it is")
	eacces := gpuAccess(extern, 2, 0)
	eacces.GPUs[1].Error = "EACCES"
	tests := []struct {
		name    string
		f       isolationFacts
		status  Status
		summary string
		fails   []string // devices of failing details
	}{
		{"exactly its GPUs", isolationFacts{JobID: "42", JobGPUs: "0,1", Own: own(0, 0, 1, 1), Access: gpuAccess(extern, 4, 0, 1)},
			StatusOK, "job 42 may open its 2 GPUs and none of the other 2", nil},
		{"all GPUs of the node are its own", isolationFacts{JobID: "42", JobGPUs: "0-3", Own: own(0, 0, 1, 1, 2, 2, 3, 3), Access: gpuAccess(extern, 4, 0, 1, 2, 3)},
			StatusOK, "job 42 may open its 4 GPUs, every GPU of the node", nil},
		// The neighbour of "exactly": one foreign GPU more.
		{"one foreign GPU", isolationFacts{JobID: "42", JobGPUs: "0,1", Own: own(0, 0, 1, 1), Access: gpuAccess(extern, 4, 0, 1, 3)},
			StatusFail, "job 42 may open /dev/nvidia3, not one of its GPUs", []string{"/dev/nvidia3"}},
		// Every GPU open: the site's cgroup.conf, not this node: warn, or every shared node drains.
		{"devices not constrained", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 0), Access: gpuAccess(extern, 4, 0, 1, 2, 3)},
			StatusWarn, "job 42 may open all 4 GPUs, holding 1 GPU (SLURM_JOB_GPUS=0): its devices are not constrained", nil},
		{"a job without GPUs may open none", isolationFacts{JobID: "42", Access: gpuAccess(extern, 2)},
			StatusOK, "job 42 holds no GPU here and may open none of the 2 GPUs", nil},
		{"a job without GPUs may open one", isolationFacts{JobID: "42", Access: gpuAccess(extern, 2, 1)},
			StatusFail, "job 42 may open /dev/nvidia1, not one of its GPUs", []string{"/dev/nvidia1"}},
		// gres.conf File=/dev/nvidia[2-3]: SLURM_JOB_GPUS=0 is minor 2.
		{"indices are not minors", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 2), Access: gpuAccess(extern, 4, 2)},
			StatusOK, "job 42 may open its 1 GPU and none of the other 3", nil},
		{"own GPU denied, another allowed (File= order swapped)", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 2), Access: gpuAccess(extern, 4, 0)},
			StatusFail, "job 42 may open /dev/nvidia0, not one of its GPUs: another job's GPU, or one another job will get (+1 more)", []string{"/dev/nvidia0", "/dev/nvidia2"}},
		{"own GPU denied", isolationFacts{JobID: "42", JobGPUs: "0,1", Own: own(0, 0, 1, 1), Access: gpuAccess(extern, 2, 0)},
			StatusFail, "job 42 may not open its own GPU /dev/nvidia1 (SLURM_JOB_GPUS index 1)", []string{"/dev/nvidia1"}},
		// A numbered step may hold fewer GPUs than its job: its own denied is not judged,
		// a GPU beyond the job's still is.
		{"step narrower than its job", isolationFacts{JobID: "42", JobGPUs: "0,1", Own: own(0, 0, 1, 1), Access: gpuAccess("/slurm/uid_1000/job_42/step_0/task_0", 2, 0)},
			StatusOK, "job 42 may open its 1 GPU and none of the other 1", nil},
		{"step with a foreign GPU, every GPU open", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 0), Access: gpuAccess("/slurm/uid_1000/job_42/step_3", 2, 0, 1)},
			StatusWarn, "job 42 may open all 2 GPUs, holding 1 GPU", nil},
		{"step with a foreign GPU, another denied", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 0), Access: gpuAccess("/slurm/uid_1000/job_42/step_3", 3, 0, 1)},
			StatusFail, "job 42 may open /dev/nvidia1, not one of its GPUs", []string{"/dev/nvidia1"}},
		{"probe error", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 0), Access: eacces},
			StatusError, "access(2) of /dev/nvidia1 failed with EACCES", nil},
		// An index not followed to a device: an allowed GPU may be that one.
		{"unmapped index", isolationFacts{JobID: "42", JobGPUs: "0,1", Own: append(own(0, 0), unmapped), Access: gpuAccess(extern, 2, 0, 1)},
			StatusError, "SLURM_JOB_GPUS index 1: gres.conf lists 1 GPU device file", nil},
		{"own GPU without a device node", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 5), Access: gpuAccess(extern, 2)},
			StatusError, "the job's GPU /dev/nvidia5 (SLURM_JOB_GPUS index 0, minor 5) has no /dev/nvidia5", nil},
		{"the job's GPU, and no GPU device node at all", isolationFacts{JobID: "42", JobGPUs: "0", Own: own(0, 0), Access: gpuAccess(extern, 0)},
			StatusError, "the job's GPU /dev/nvidia0 (SLURM_JOB_GPUS index 0, minor 0) has no /dev/nvidia0", nil},
		{"no GPU device nodes", isolationFacts{JobID: "42", Access: gpuAccess(extern, 0)},
			StatusSkip, "no GPU device node", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUIsolation(tc.f)
			assertRemedies(t, got)
			if got.Status != tc.status || !strings.Contains(got.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Summary, tc.status, tc.summary)
			}
			var fails []string
			for _, d := range got.Details {
				if d.Status == StatusFail {
					fails = append(fails, d.Device)
					if d.Subject.File != d.Device {
						t.Errorf("failing detail %s names subject %+v, want its file", d.Device, d.Subject)
					}
				}
			}
			if strings.Join(fails, ",") != strings.Join(tc.fails, ",") {
				t.Errorf("failing devices %q, want %q", fails, tc.fails)
			}
		})
	}
}

func TestJobScope(t *testing.T) {
	tests := []struct {
		cgroup string
		want   isoScope
	}{
		{extern, isoJob},
		{"/slurm/uid_1000/job_42/step_extern", isoJob},
		{"/slurm/uid_1000/job_42/step_batch", isoJob},
		{"/slurm/uid_1000/job_42", isoJob},
		{"/slurm/uid_1000/job_42/step_0", isoStep},
		{"/system.slice/slurmstepd.scope/job_42/step_12/user/task_0", isoStep},
		{"/slurm/uid_1000/job_420/step_extern", isoOutside}, // another job
		{"/slurm/uid_1000/job_4/step_extern", isoOutside},
		{"/system.slice/slurmd.service", isoOutside},
		{"/", isoOutside},
		{"", isoOutside},
	}
	for _, tc := range tests {
		if got := jobScope(tc.cgroup, "42"); got != tc.want {
			t.Errorf("jobScope(%q, 42) = %d, want %d", tc.cgroup, got, tc.want)
		}
	}
}

// isoCase is one run of the whole check on a fake node: gpu01 with gres.conf's GPU files.
type isoCase struct {
	name    string
	mode    config.Mode
	job     Job
	gres    string // gres.conf; "" for none
	access  *node.GPUAccess
	err     error
	status  Status
	summary string
}

func runGPUIsolation(t *testing.T, tc isoCase) Result {
	t.Helper()
	files := map[string]string{"/etc/slurm/slurm.conf": "GresTypes=gpu\nNodeName=gpu[01-04] Gres=gpu:4\n"}
	if tc.gres != "" {
		files["/etc/slurm/gres.conf"] = tc.gres
	}
	f := &fakeFacts{files: files, devs: nvidiaDevs(4), facts: map[string]any{}, factErr: map[string]error{}}
	if tc.access != nil {
		f.facts[node.DeviceAccessFact.Name] = *tc.access
	}
	if tc.err != nil {
		f.factErr[node.DeviceAccessFact.Name] = tc.err
	}
	env := &Env{Facts: f, Config: config.Default(Schema()), Mode: tc.mode, Node: "gpu01", Job: tc.job,
		Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
	return gpuIsolation{}.Run(context.Background(), env)
}

func TestGPUIsolationRun(t *testing.T) {
	gres := "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-3]\n"
	upper := "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[2-3]\n"
	inJob := gpuAccess(extern, 4, 0, 1)
	slurmd := gpuAccess("/system.slice/slurmd.service", 4, 0, 1, 2, 3)
	v1slurmd := gpuAccess("/", 4, 0, 1, 2, 3)
	v1slurmd.CgroupVersion = 1
	upperOK := gpuAccess(extern, 4, 2)
	tests := []isoCase{
		{name: "no job", mode: config.ModeManual, access: &inJob, status: StatusSkip, summary: "no job: "},
		{name: "prolog in slurmd's cgroup", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0,1"}, gres: gres, access: &slurmd,
			status: StatusSkip, summary: "not observable: nodecheck runs in cgroup /system.slice/slurmd.service (cgroup v2), not in job 42's (slurmd makes it after the prolog unless PrologFlags=RunInJob, Slurm 24.05+); nodecheck lint checks ConstrainDevices instead"},
		{name: "v1, slurmd at the root", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, gres: gres, access: &v1slurmd,
			status: StatusSkip, summary: "not observable: nodecheck runs in cgroup / (cgroup v1)"},
		{name: "in the job, its GPUs", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0,1"}, gres: gres, access: &inJob,
			status: StatusOK, summary: "job 42 may open its 2 GPUs and none of the other 2"},
		{name: "in the job, another job's GPU", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, gres: gres, access: &inJob,
			status: StatusFail, summary: "job 42 may open /dev/nvidia1, not one of its GPUs"},
		{name: "indices into File=/dev/nvidia[2-3]", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, gres: upper, access: &upperOK,
			status: StatusOK, summary: "job 42 may open its 1 GPU and none of the other 3"},
		{name: "no gres.conf", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, access: &inJob,
			status: StatusError, summary: "no gres.conf at /etc/slurm/gres.conf"},
		{name: "bad SLURM_JOB_GPUS", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "x"}, gres: gres, access: &inJob,
			status: StatusError, summary: `SLURM_JOB_GPUS="x"`},
		{name: "not recorded", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, gres: gres,
			status: StatusSkip, summary: isoNotRecorded},
		{name: "unreadable", mode: config.ModeProlog, job: Job{ID: "42", GPUs: "0"}, gres: gres, err: errors.New("read /proc/self/cgroup: permission denied"),
			status: StatusError, summary: "read the GPU device nodes this process may open: read /proc/self/cgroup: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runGPUIsolation(t, tc)
			assertRemedies(t, got)
			if got.Status != tc.status || !strings.Contains(got.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Summary, tc.status, tc.summary)
			}
		})
	}
}

// TestGPUIsolationCapture judges the reading captured in a cgroup ruled as Slurm's v1
// plugins rule a job holding the first of two GPUs (testdata/device_access/SOURCE).
func TestGPUIsolationCapture(t *testing.T) {
	b, err := os.ReadFile("testdata/device_access/v1-slurm-rules.json")
	if err != nil {
		t.Fatal(err)
	}
	var acc node.GPUAccess
	if err := json.Unmarshal(b, &acc); err != nil {
		t.Fatal(err)
	}
	if err := node.DeviceAccessFact.Check(acc); err != nil {
		t.Fatal(err)
	}
	gres := "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-1]\n"
	for _, tc := range []isoCase{
		{name: "its GPU", job: Job{ID: "42", GPUs: "0"}, status: StatusOK, summary: "job 42 may open its 1 GPU and none of the other 1"},
		{name: "given the other GPU", job: Job{ID: "42", GPUs: "1"}, status: StatusFail, summary: "job 42 may open /dev/nvidia0, not one of its GPUs: another job's GPU, or one another job will get (+1 more)"},
		{name: "another job", job: Job{ID: "43", GPUs: "0"}, status: StatusSkip, summary: "not in job 43's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.mode, tc.gres, tc.access = config.ModeProlog, gres, &acc
			got := runGPUIsolation(t, tc)
			assertRemedies(t, got)
			if got.Status != tc.status || !strings.Contains(got.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Summary, tc.status, tc.summary)
			}
		})
	}
}
