package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestSlurmJobLeftovers runs job_leftovers as a real Slurm runs it: two jobs share node n1 of a
// test bed (scripts/testbed), each with one of its two fake GPUs (char 195:0 and 195:1, made by
// mknod, listed in gres.conf as File=DIR/dev/nvidia[0-1]), and n1's Prolog= and Epilog= record
// the environment slurmd gives them and run the built nodecheck with it on a snapshot of n1.
//
// The snapshot holds what Slurm has for real (slurm.conf and gres.conf at their absolute paths,
// the fake GPUs' device nodes as stat(2) reads them) and an NVML view that is INVENTED, since
// there is no GPU here: both GPUs run a compute process (variant busy), or only GPU 1 does
// (variant gpu0-clean). Each hook replays both variants, so one pair of jobs covers them.
//
// It checks what SLURM_JOB_GPUS each job gets, that each job's report names its own GPU and
// process and never the other job's, and that a job whose GPU is clean passes while the other
// job's GPU still has a process. The hook exits 0 whatever nodecheck says, so n1 never drains
// and the jobs run as usual.
//
// It runs once per Slurm version (testbed.ForEachVersion), the hooks and nodecheck in the 24.11
// test bed's root there.
func TestSlurmJobLeftovers(t *testing.T) {
	requireReplayedProcesses(t)
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-slurm-jobs-test-",
		Short:      "the real-Slurm job test takes about 10 s per Slurm version",
	}, testSlurmJobLeftovers)
}

func testSlurmJobLeftovers(t *testing.T, tb *testbed.Bed) {
	start := time.Now()

	const busy, clean0 = "busy", "gpu0-clean"
	// Invented processes (no GPU here): PIDs, owners and commands only have to be told apart.
	procA := node.Process{PID: 4242, UsedMiB: 1024, UID: 1001, User: "alice", Command: "python"}
	procB := node.Process{PID: 5151, UsedMiB: 2048, UID: 1002, User: "bob", Command: "torchrun"}
	snaps := filepath.Join(tb.Tmp, "snapshots")
	writeJobSnapshot(t, tb, filepath.Join(snaps, busy), []node.Process{procA}, []node.Process{procB})
	writeJobSnapshot(t, tb, filepath.Join(snaps, clean0), nil, []node.Process{procB})

	out := filepath.Join(tb.Tmp, "hook-out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Slurm starts the hook without PATH: builtins and absolute paths only.
	script := filepath.Join(tb.Tmp, "record-and-check")
	body := fmt.Sprintf(`#!/bin/sh
# $1: where to write; $2...: snapshots to replay. Writes CONTEXT-JOBID.env, then per snapshot
# CONTEXT-JOBID.NAME.json (the report), .err and .rc, then CONTEXT-JOBID.done.
out=$1
shift
base=$out/${SLURM_SCRIPT_CONTEXT%%_slurmd}-$SLURM_JOB_ID
/usr/bin/env >"$base.env"
for snap in "$@"; do
	name=${snap##*/}
	%s run --snapshot "$snap" --check %s --format json >"$base.$name.json" 2>"$base.$name.err"
	echo $? >"$base.$name.rc"
done
: >"$base.done"
exit 0
`, tb.Nodecheck, idJobLeftovers)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []string{"prolog", "epilog"} {
		tb.Hook(t, "n1", ctx, script, out, filepath.Join(snaps, busy), filepath.Join(snaps, clean0))
	}

	// Each job holds its GPU until the test lets go, so that both run on n1 at once.
	release := filepath.Join(tb.Tmp, "release")
	wrap := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done", release)
	var jobs []string
	t.Cleanup(func() {
		// Before the test bed stops (cleanups run last first): no job left behind.
		_ = os.WriteFile(release, nil, 0o644)
		for _, j := range jobs {
			tb.Slurm(t, "scancel", j)
		}
	})
	submit := func() string {
		j := strings.TrimSpace(tb.Slurm(t, "sbatch", "--parsable", "-o", "/dev/null", "-w", "n1", "--gres=gpu:1", "--wrap", wrap))
		jobs = append(jobs, j)
		testbed.WaitFor(t, "job "+j+" to run", 15*time.Second, func() bool {
			return strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-j", j, "-o", "%T")) == "RUNNING"
		})
		return j
	}
	jobA := submit() // first: gets the first free GPU
	jobB := submit()
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{jobA, jobB} {
		testbed.WaitFor(t, "the epilog of job "+j, 20*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(out, "epilog-"+j+".done"))
			return err == nil
		})
	}
	t.Logf("both jobs ran and their epilogs finished after %s", time.Since(start).Round(time.Millisecond))

	// What Slurm gave each job, as the hooks saw it.
	gpusOf := map[string]string{}
	for _, j := range []string{jobA, jobB} {
		for _, ctx := range []string{"prolog", "epilog"} {
			env := readHookEnv(t, filepath.Join(out, ctx+"-"+j+".env"))
			t.Logf("job %s %s: SLURM_JOB_GPUS=%q CUDA_VISIBLE_DEVICES=%q SLURM_JOB_USER=%q SLURM_JOB_UID=%q SLURM_SCRIPT_CONTEXT=%q",
				j, ctx, env["SLURM_JOB_GPUS"], env["CUDA_VISIBLE_DEVICES"], env["SLURM_JOB_USER"], env["SLURM_JOB_UID"], env["SLURM_SCRIPT_CONTEXT"])
			if ctx == "epilog" {
				gpusOf[j] = env["SLURM_JOB_GPUS"]
			} else if gpusOf[j] != "" && gpusOf[j] != env["SLURM_JOB_GPUS"] {
				t.Errorf("job %s: SLURM_JOB_GPUS %q in the prolog, %q in the epilog", j, env["SLURM_JOB_GPUS"], gpusOf[j])
			}
		}
	}
	if gpusOf[jobA] != "0" || gpusOf[jobB] != "1" {
		t.Fatalf("SLURM_JOB_GPUS: job A %q, job B %q; want 0 and 1 (the first free GPU, in gres.conf order)", gpusOf[jobA], gpusOf[jobB])
	}

	gpu0 := []string{"gpu 0 ", "0000:19:00.0", "pid 4242", "alice", "python"}
	gpu1 := []string{"gpu 1 ", "0000:3b:00.0", "pid 5151", "bob", "torchrun"}
	tests := []struct {
		ctx, job, snap string
		code           int
		status         checks.Status
		summary        string
		names, never   []string
	}{
		{"epilog", jobA, busy, exitUnhealthy, checks.StatusFail, "gpu 0 (0000:19:00.0): 1 process left: pid 4242 (alice, python)", gpu0, gpu1},
		{"epilog", jobB, busy, exitUnhealthy, checks.StatusFail, "gpu 1 (0000:3b:00.0): 1 process left: pid 5151 (bob, torchrun)", gpu1, gpu0},
		{"epilog", jobA, clean0, exitHealthy, checks.StatusOK, "no compute process left and memory released on the job's 1 GPU (gpu 0 (0000:19:00.0))", gpu0[:2], gpu1},
		{"epilog", jobB, clean0, exitUnhealthy, checks.StatusFail, "gpu 1 (0000:3b:00.0): 1 process left: pid 5151 (bob, torchrun)", gpu1, gpu0},
		{"prolog", jobA, busy, exitUnhealthy, checks.StatusFail, "gpu 0 (0000:19:00.0): 1 process before the job starts: pid 4242 (alice, python)", gpu0, gpu1},
		{"prolog", jobB, busy, exitUnhealthy, checks.StatusFail, "gpu 1 (0000:3b:00.0): 1 process before the job starts: pid 5151 (bob, torchrun)", gpu1, gpu0},
		{"prolog", jobA, clean0, exitHealthy, checks.StatusOK, "no process and no held memory on the job's 1 GPU (gpu 0 (0000:19:00.0)) before it starts", gpu0[:2], gpu1},
	}
	for _, tc := range tests {
		who := "A"
		if tc.job == jobB {
			who = "B"
		}
		t.Run(fmt.Sprintf("%s of job %s, %s", tc.ctx, who, tc.snap), func(t *testing.T) {
			base := filepath.Join(out, tc.ctx+"-"+tc.job+"."+tc.snap)
			raw, err := os.ReadFile(base + ".json")
			if err != nil {
				t.Fatal(err)
			}
			stderr, _ := os.ReadFile(base + ".err")
			rc, _ := os.ReadFile(base + ".rc")
			if got := strings.TrimSpace(string(rc)); got != fmt.Sprint(tc.code) {
				t.Errorf("exit %s, want %d; stderr:\n%s", got, tc.code, stderr)
			}
			var rep struct {
				Node    string `json:"node"`
				Mode    string `json:"mode"`
				Results []struct {
					Check   string          `json:"check"`
					Status  checks.Status   `json:"status"`
					Summary string          `json:"summary"`
					Details []checks.Detail `json:"details"`
				} `json:"results"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatalf("report: %v\n%s\nstderr:\n%s", err, raw, stderr)
			}
			if rep.Node != "n1" || rep.Mode != tc.ctx || len(rep.Results) != 1 || rep.Results[0].Check != idJobLeftovers {
				t.Fatalf("report of node %q, mode %q, results %+v; want n1, %s, one %s result", rep.Node, rep.Mode, rep.Results, tc.ctx, idJobLeftovers)
			}
			r := rep.Results[0]
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("%s %q, want %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for _, s := range tc.names {
				if !strings.Contains(string(raw), s) {
					t.Errorf("the report does not name %q:\n%s", s, raw)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(string(raw), s) {
					t.Errorf("the report names %q, which is the other job's:\n%s", s, raw)
				}
			}
		})
	}
	// The hooks' last file is written just before they exit; slurmd then reports the epilog
	// done, and only then does n1 leave COMPLETING.
	var st string
	testbed.WaitFor(t, "n1 to leave COMPLETING", 10*time.Second, func() bool {
		st = tb.SinfoState(t, "n1")
		return !strings.HasPrefix(st, "comp")
	})
	if st != "idle" && st != "mix" {
		t.Errorf("n1 is %s after the jobs; the hooks exit 0, so it should not drain", st)
	}
	t.Logf("done after %s", time.Since(start).Round(time.Millisecond))
}

// idJobLeftovers is the check's id as the CLI takes it.
const idJobLeftovers = "job_leftovers"

// writeJobSnapshot writes a snapshot of test bed node n1 to dir: its slurm.conf and gres.conf
// at their absolute paths under fs/ (meta.json names that slurm.conf, so the replay finds it
// as SLURM_CONF would), its two fake GPU device nodes as this machine stats them, and an
// INVENTED nvml.json: two H100s with minors 0 and 1 (the bus ids of the 8-GPU node in
// shared/corpus/nvsmi/gpud-table-550.90.07.txt), running on0 and on1.
func writeJobSnapshot(t *testing.T, tb *testbed.Bed, dir string, on0, on1 []node.Process) {
	t.Helper()
	writeFile := func(p string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON := func(name string, v any) {
		t.Helper()
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(filepath.Join(dir, name), append(b, '\n'))
	}
	for _, p := range []string{tb.Conf, filepath.Join(filepath.Dir(tb.Conf), "gres.conf")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(filepath.Join(dir, "fs", p), b)
	}
	host, _ := os.Hostname()
	writeJSON("meta.json", map[string]any{"format": node.SnapshotFormat, "hostname": host, "node_name": "n1",
		"taken_at": time.Now().UTC().Format(time.RFC3339), "nodecheck_version": "test", "slurm_conf": tb.Conf})

	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	var devs []node.DevNode
	for i := range 2 {
		d, err := live.DevNode(context.Background(), filepath.Join(tb.Dir, "dev", fmt.Sprintf("nvidia%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if d.Type != "char" || d.Major != 195 || int(d.Minor) != i {
			t.Fatalf("test bed device %s is %+v, want char 195:%d", d.Path, d, i)
		}
		devs = append(devs, d)
	}
	writeJSON("devices.json", devs)

	inv := node.GPUInventory{Init: node.InitSuccess, DriverVersion: "550.90.07", CUDADriverVersion: 12040, DeviceCount: 2}
	for i, procs := range [][]node.Process{on0, on1} {
		g := node.GPU{Index: i, MinorNumber: i, Name: "NVIDIA H100 80GB HBM3",
			UUID:     fmt.Sprintf("GPU-00000000-0000-0000-0000-00000000000%d", i),
			PCIBusID: []string{"00000000:19:00.0", "00000000:3B:00.0"}[i],
			Memory:   &node.Memory{TotalMiB: 81559, ReservedMiB: 551},
			Compute:  &node.Compute{Processes: append([]node.Process{}, procs...)}}
		for _, p := range procs {
			g.Memory.UsedMiB += p.UsedMiB
		}
		inv.Devices = append(inv.Devices, g)
	}
	writeJSON("nvml.json", inv)
}

// requireReplayedProcesses fails t at once, before a test bed starts, where a snapshot's
// nvml.json does not replay the compute processes and memory this test invents.
func requireReplayedProcesses(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	meta := `{"format": 1, "hostname": "h", "node_name": "n1", "taken_at": "2025-01-20T10:18:26Z", "nodecheck_version": "test"}`
	nvml := `{"init": "SUCCESS", "device_count": 1, "devices": [{"index": 0, "minor_number": 0,
		"memory": {"total_mib": 81559, "used_mib": 1024}, "compute": {"processes": [{"pid": 4242, "used_mib": 1024, "uid": 1001}]}}]}`
	for name, body := range map[string]string{"meta.json": meta, "nvml.json": nvml} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := node.OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := s.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g := inv.Devices[0]; g.Compute == nil || len(g.Compute.Processes) != 1 || g.Memory == nil {
		t.Fatalf("a snapshot's nvml.json does not replay \"compute\" and \"memory\" (checks/node/snapshot.go gpuRecord drops them): got %+v; this test replays invented processes", g)
	}
}

// readHookEnv reads the NAME=value lines /usr/bin/env wrote.
func readHookEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}
