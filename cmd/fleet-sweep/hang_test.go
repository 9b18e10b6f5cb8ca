package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunLimit(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		times []time.Duration
		floor time.Duration
		want  time.Duration
	}{
		{"no completed run: no limit", nil, time.Minute, 0},
		{"3 x a short run is under the floor", []time.Duration{10 * s}, time.Minute, time.Minute},
		{"3 x the run equals the floor", []time.Duration{20 * s}, time.Minute, time.Minute},
		{"3 x the run just over the floor", []time.Duration{21 * s}, time.Minute, 63 * s},
		{"the median, not the slowest", []time.Duration{90 * s, 20 * s, 25 * s}, 10 * s, 75 * s},
		{"an even count: the mean of the middle two", []time.Duration{10 * s, 40 * s, 20 * s, 30 * s}, 10 * s, 75 * s},
		{"runs seen only ended (0 s) keep the floor", []time.Duration{0, 0}, 2 * time.Minute, 2 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := runLimit(tc.times, tc.floor); got != tc.want {
				t.Errorf("runLimit(%v, %s) = %s, want %s", tc.times, tc.floor, got, tc.want)
			}
		})
	}
}

func TestJobLimitObserve(t *testing.T) {
	l := &jobLimit{floor: time.Second}
	for _, r := range []nodeRun{
		{State: "COMPLETED", ExitCode: "0:0", RunTime: 4 * time.Second},
		{State: "FAILED", ExitCode: "1:0", RunTime: 100 * time.Second},   // a failure: not a run time
		{State: "CANCELLED", ExitCode: "0:15", RunTime: 9 * time.Second}, // cancelled: neither
		{State: "COMPLETED", ExitCode: "", RunTime: 6 * time.Second},     // exit code unknown: Slurm says completed
	} {
		l.observe(&r)
	}
	if got := l.limit(); got != 15*time.Second {
		t.Errorf("limit after round 1 = %s, want 3 x 5 s", got)
	}
	l.fixed = true
	l.observe(&nodeRun{State: "COMPLETED", ExitCode: "0:0", RunTime: time.Hour})
	if got := l.limit(); got != 15*time.Second {
		t.Errorf("a run of round 2 changed the limit to %s", got)
	}
	if why := l.why(); why != "3 x the median run 5.0 s of round 1's 2 completed jobs, at least --multinode-min-job-limit 1s" {
		t.Errorf("why: %s", why)
	}
	var none *jobLimit
	if none.limit() != 0 {
		t.Error("a nil jobLimit has a limit")
	}
}

// fakeSlurm writes tiny shell scripts standing in for a controller that runs each batch job at
// once, on this host, in its own process group: sbatch starts the script with
// SLURM_JOB_NODELIST set and its output where --output and --error say; squeue says RUNNING
// until the script has exited (COMPLETED or FAILED by its status), CANCELLED once scancel has
// killed its process group; srun runs its program. The test's cleanup kills every group left.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	st := filepath.Join(bin, "state")
	if err := os.Mkdir(st, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"sbatch": `#!/bin/sh
st=` + st + `
id=$$
for a; do
  case $a in
  --nodelist=*) nl=${a#--nodelist=} ;;
  --output=*) o=${a#--output=} ;;
  --error=*) e=${a#--error=} ;;
  esac
  script=$a
done
SLURM_JOB_NODELIST=$nl SLURM_JOB_ID=$id setsid /bin/sh -c '/bin/sh "$1" >"$2" 2>"$3"; echo $? >"$4.tmp"; mv "$4.tmp" "$4.rc"' sh "$script" "$o" "$e" "$st/$id" </dev/null >/dev/null 2>&1 &
echo $! >"$st/$id.pid"
echo $id
`,
		"squeue": `#!/bin/sh
st=` + st + `
while [ $# -gt 0 ]; do [ "$1" = -j ] && ids=$2; shift; done
IFS=,
for id in $ids; do
  if [ -e "$st/$id.cancelled" ]; then echo "$id|CANCELLED|0:15|None|"
  elif [ -e "$st/$id.rc" ]; then
    rc=$(cat "$st/$id.rc")
    if [ "$rc" = 0 ]; then echo "$id|COMPLETED|0:0|None|"; else echo "$id|FAILED|$rc:0|NonZeroExitCode|"; fi
  else echo "$id|RUNNING|0:0|None|"
  fi
done
`,
		"scancel": `#!/bin/sh
st=` + st + `
for id; do
  : >"$st/$id.cancelled"
  kill -s TERM -- "-$(cat "$st/$id.pid")" 2>/dev/null
done
exit 0
`,
		"srun": "#!/bin/sh\nwhile case $1 in --*) true ;; *) false ;; esac; do shift; done\nexec \"$@\"\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(st, "*.pid"))
		for _, f := range pids {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(-pid, syscall.SIGKILL) // the job's process group, if any is left
			}
		}
	})
	return bin
}

// buildStandIn builds the all_reduce_perf stand-in (testdata/allreduce-standin) into dir.
func buildStandIn(t *testing.T, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds a program")
	}
	bin := filepath.Join(dir, "allreduce-standin")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/allreduce-standin").CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	return bin
}

// TestMultinodeHang: a set whose all_reduce_perf prints its header and then nothing (the
// stand-in's -hang) is killed at its run limit and narrowed down like a failing one: the
// hanging node is named, long before the phase's deadline. With one set and nothing to take a
// limit from, the deadline ends it, and the reason says how far its output got.
func TestMultinodeHang(t *testing.T) {
	bin := fakeSlurm(t)
	standin := buildStandIn(t, bin)
	log, _ := filepath.Abs(filepath.Join("testdata", "nccl", "nccltests-309-h100-2node-16gpu-mpi.log"))
	tests := []struct {
		name    string
		nodes   int
		hang    string
		timeout time.Duration
		kind    string // the one culprit's
		nodesIn string
		why     []string
		limit   float64
	}{
		{"pairs: n3 hangs", 6, "n3", 30 * time.Second, "node", "n3",
			[]string{"failed: job ", " hung after its header (no result row): killed at ", " s, past its run limit of 1.0 s with reference n"}, 1},
		{"one set, nothing completes: the deadline", 2, "n2", 3 * time.Second, "unresolved", "n1,n2",
			[]string{"not tested: job ", " still RUNNING at the deadline: cancelled, r1-s1.out: ran ", " s, stopped after its header (no result row)"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options{out: t.TempDir(), poll: 50 * time.Millisecond, outputWait: time.Second, jobName: "test", slow: testOpts.Slow,
				multinode: multinodeOptions{enabled: true, mpi: "none", allreduce: standin, tasksPerNode: 1, group: 2,
					args: []string{"-log", log, "-hang", tc.hang, "-hang-for", "1m", "--", "-b", "1G"}, timeout: tc.timeout, minJobLimit: time.Second}}
			s := &slurmClient{bin: bin, timeout: 10 * time.Second, calls: &callCounter{}}
			var stderr bytes.Buffer
			start := time.Now()
			m := multinode(context.Background(), s, o, nodeNames(tc.nodes), &stderr)
			elapsed := time.Since(start)
			if len(m.Culprits) != 1 || m.Culprits[0].Kind != tc.kind || strings.Join(m.Culprits[0].Nodes, ",") != tc.nodesIn {
				t.Fatalf("culprits %+v, want %s %s\n%s", m.Culprits, tc.kind, tc.nodesIn, stderr.String())
			}
			why := m.Culprits[0].Why
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("the culprit's reason lacks %q: %s", w, why)
				}
			}
			if strings.Contains(why, "no r1-s1.out") {
				t.Errorf("the reason says the output is missing: %s", why)
			}
			if m.RunLimitS != tc.limit {
				t.Errorf("run limit %v s (%s), want %v", m.RunLimitS, m.RunLimitWhy, tc.limit)
			}
			if tc.kind == "node" && elapsed > tc.timeout/2 {
				t.Errorf("took %s: a hung set held the phase toward its deadline of %s", elapsed, tc.timeout)
			}
			t.Logf("%s in %s, %d rounds, %d jobs: %s %v: %s", tc.name, elapsed.Round(time.Millisecond), m.Rounds, m.Jobs, m.Culprits[0].Kind, m.Culprits[0].Nodes, why)
		})
	}
}
