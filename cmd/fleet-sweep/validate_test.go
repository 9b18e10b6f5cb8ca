package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestValidateSlurm runs validation sweeps on a real Slurm of 4 nodes, once per version
// (22.05.8, 24.11.5; the 24.11 bed with SchedulerParameters=extra_constraints), about 60 s
// each. The sweep's jobs run the real `nodecheck validate` with its tool stand-ins; where a
// test needs to time the validation (return to service, interrupt) they run
// testdata/nodecheck-validate-standin, which prints a result file the test wrote.
func TestValidateSlurm(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot: repoRoot, TempPrefix: "nodecheck-validate-test-", TempMode: 0o755, Nodes: 4,
		Short:               "the validation sweep's real-Slurm test takes about 60 s per Slurm version",
		SchedulerParameters: "extra_constraints",
	}, func(t *testing.T, b *testbed.Bed) { testValidateSlurm(t, bed{b}) })
}

// validationResult writes a result as nodecheck validate prints it and returns the stand-in's
// arguments for it. 476.5 GB/s is the real 8x H100 all-reduce busbw at 4 GiB that
// testdata/snapshots/h100-nccl-ok replays; a failing node's 150.2 and its test are invented
// (a degraded figure below the 300 floor).
func validationResult(t *testing.T, tb bed, node, verdict string, busbw float64, extra string) string {
	t.Helper()
	r := validation.Result{Node: node, Level: "quick", Model: "NVIDIA H100 80GB HBM3", Started: time.Now().UTC(), DurationS: 2.5, Verdict: verdict,
		Figures: []validation.Figure{{Name: "nccl_busbw", Value: busbw, Unit: "GB/s", Floor: 300, Expected: 360, Source: "SuperBench's NDv4 baseline, scaled", OK: busbw >= 300}},
		Tests:   []validation.Test{{Name: "nccl", Status: "ok"}}}
	if verdict == validation.Failed {
		r.Tests[0] = validation.Test{Name: "nccl", Status: "fail", Summary: "busbw 150.2 GB/s under its floor 300", Remedy: "reset_gpu"}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tb.Tmp, "result-"+node+"-"+verdict+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return node + "=--result " + path + " " + extra
}

// Captures the tool stand-ins of testdata/validate/standins print (files under
// checks/validate/testdata; see its SOURCE): a healthy 8x H100 node, and one whose GPU pair
// 1-0 and NCCL bandwidth are slow (DERIVED- files, made from the real ones).
var (
	capHealthy = map[string]string{
		"dcgmi":           "out ../../node/dcgm/testdata/diag4-r1-pass-8gpu.json\n",
		"nvbandwidth":     "out nvbandwidth/azurehpc-fork-h100x8-nvbw-v04-d2d-read-ce-healthy.txt\nout nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt\n",
		"all_reduce_perf": "out nccl/nccltests-290-h100-1node-8gpu-g8.log\n",
		"nvidia-smi":      "",
	}
	capSlow = map[string]string{
		"dcgmi":           "out ../../node/dcgm/testdata/diag4-r1-pass-8gpu.json\n",
		"nvbandwidth":     "out nvbandwidth/DERIVED-h100x8-d2d-gpu1-to-gpu0-162.txt\nout nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt\n",
		"all_reduce_perf": "out nccl/DERIVED-h100x8-busbw-halved.log\n",
		"nvidia-smi":      "",
	}
)

// realValidate makes node's tools directory of stand-ins with their captures and returns its
// --args-for: `nodecheck validate` run there reads them, records nothing.
func realValidate(t *testing.T, tb bed, node string, captures map[string]string) string {
	t.Helper()
	dir := filepath.Join(tb.Tmp, "tools-"+node)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	standins, err := filepath.Abs(filepath.Join(repoRoot, "testdata", "validate", "standins"))
	if err != nil {
		t.Fatal(err)
	}
	for tool, capture := range captures {
		os.Remove(filepath.Join(dir, tool))
		if err := os.Symlink(filepath.Join(standins, tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
		if capture != "" {
			if err := os.WriteFile(filepath.Join(dir, tool+".capture"), []byte(capture), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return node + "=--node " + node + " --tools-dir " + dir + " --no-record"
}

// slowNodecheck is a wrapper around the bed's nodecheck that writes MARKS/NODE ("started
// SECONDS") when its job starts and waits 2 s before running it.
func slowNodecheck(t *testing.T, tb bed, marks string) string {
	t.Helper()
	p := filepath.Join(tb.Tmp, "nodecheck-held")
	body := "#!/bin/sh\necho \"started $(date +%s)\" >" + marks + "/\"$SLURMD_NODENAME\"\nsleep 2\nexec " + tb.Nodecheck + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func standinPath(t *testing.T) string {
	p, err := filepath.Abs("testdata/nodecheck-validate-standin")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reservations lists the reservations Slurm has.
func reservations(t *testing.T, tb bed) string {
	return strings.TrimSpace(tb.Slurm(t, "scontrol", "show", "reservation"))
}

// sinfoReason is a node's reason as sinfo shows it (no [user@time] stamp, nothing after it).
func sinfoReason(t *testing.T, tb bed, node string) string {
	return strings.TrimSpace(tb.Slurm(t, "sinfo", "-h", "-N", "-n", node, "-o", "%E"))
}

// userJob starts an exclusive user job on node and cancels it when the test ends.
func userJob(t *testing.T, tb bed, node string, args ...string) string {
	t.Helper()
	argv := append([]string{"--parsable", "--exclusive", "-w", node, "-o", "/dev/null"}, args...)
	id := strings.TrimSpace(tb.Slurm(t, "sbatch", append(argv, "--wrap", "sleep 120")...))
	t.Cleanup(func() {
		tb.Slurm(t, "scancel", id)
		testbed.WaitFor(t, "job "+id+" to end", 30*time.Second, func() bool {
			st := jobStateOf(t, tb, id)
			return st != "RUNNING" && st != "COMPLETING" && st != "PENDING"
		})
	})
	return id
}

func jobStateOf(t *testing.T, tb bed, id string) string {
	return strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T"))
}

func testValidateSlurm(t *testing.T, tb bed) {
	t.Cleanup(func() { tb.Reset(t) })
	t.Run("sweep: the node below its floor drained, a busy node never validated, Extra on 24.11", func(t *testing.T) { testValidateSweep(t, tb) })
	t.Run("a node in someone else's reservation is not validated", func(t *testing.T) { testValidateForeignReservation(t, tb) })
	t.Run("return to service: sbatch refused after the resume, the node drained again", func(t *testing.T) { testReturnSbatchRefused(t, tb) })
	t.Run("interrupted: the resumed node is drained again, its reservation removed", func(t *testing.T) { testValidateInterrupted(t, tb) })
	t.Run("return to service only after the validation passes", func(t *testing.T) { testReturnToService(t, tb) })
}

func testValidateSweep(t *testing.T, tb bed) {
	tb.Reset(t)
	busy := userJob(t, tb, "n4")
	testbed.WaitFor(t, "the user job on n4 to run", 20*time.Second, func() bool { return jobStateOf(t, tb, busy) == "RUNNING" })
	out := t.TempDir()
	marks := filepath.Join(tb.Tmp, "marks")
	os.MkdirAll(marks, 0o755)
	state := filepath.Join(t.TempDir(), "validation-state.json")
	before := time.Now()
	// The real `nodecheck validate`, its tools stand-ins printing real captures (healthy 8x
	// H100 outputs; n3 a slow GPU pair and halved NCCL bandwidth, derived from them), behind
	// a wrapper that notes when the job started and holds it 2 s, so that --max-parallel
	// shows.
	stdout, stderr, code := tb.sweepFor(t, 2*time.Minute, "--nodecheck", slowNodecheck(t, tb, marks), "--validate", "quick", "--nodes", "n[1-4]",
		"--max-parallel", "2", "--maint-reservation", "--poll", "200ms", "--slow-min-nodes", "2", "--format", "json", "--out", out,
		"--validation-state", state,
		"--args-for", realValidate(t, tb, "n1", capHealthy), "--args-for", realValidate(t, tb, "n2", capHealthy),
		"--args-for", realValidate(t, tb, "n3", capSlow), "--args-for", realValidate(t, tb, "n4", capHealthy))
	elapsed := time.Since(before)
	if code != exitUnhealthy {
		t.Errorf("exit %d, want %d\n%s", code, exitUnhealthy, stderr)
	}
	var sum valSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	got := map[string]valNode{}
	for _, n := range sum.Results {
		got[n.Node] = n
	}
	if sum.Passed != 2 || sum.Failed != 1 || sum.NotRun != 1 || got["n1"].Verdict != "passed" || got["n2"].Verdict != "passed" {
		t.Errorf("summary: %+v", sum)
	}
	n3 := got["n3"]
	if n3.Verdict != "failed" || n3.Remedy == "" || !strings.HasPrefix(n3.Why, "validate quick: failed: nvbandwidth: d2d_bw GPU 1 162.45 GB/s below floor 335 GB/s") {
		t.Errorf("n3: %+v", n3)
	}
	// The node with a user job: never validated, no job script, no job start.
	if n4 := got["n4"]; n4.Verdict != "not_run" || !strings.HasPrefix(n4.Why, "not idle: allocated") || n4.JobID != "" {
		t.Errorf("n4: %+v", n4)
	}
	for _, p := range []string{filepath.Join(out, "n4.validate.sh"), filepath.Join(marks, "n4")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists: n4 was submitted", p)
		}
	}
	// n3 drained through the drain path, its remedy in the reason.
	reason := drain.FormatReason("nodecheck:", []drain.Failure{{Check: fleetCheck, Summary: n3.Why, Remedy: n3.Remedy}})
	if st, r := tb.SinfoState(t, "n3"), sinfoReason(t, tb, "n3"); st != "drain" || r != reason || !strings.HasSuffix(r, "["+n3.Remedy+"]") {
		t.Errorf("n3 after the sweep: %s %q, want drained with %q", st, r, reason)
	}
	// The HTML report beside the results draws n3's figures below their floors.
	if page, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !strings.Contains(string(page), `<tr class="below" data-node="n3">`) ||
		!strings.Contains(string(page), `<tr data-node="n4" data-verdict="not_run">`) {
		t.Errorf("report.html (%v) lacks n3 below its floor or n4 not run", err)
	}
	// The state keeps the passes and the baselines for the next sweep.
	if st, err := validation.LoadState(state); err != nil || st.Nodes["n1"].PassedAt.IsZero() || st.Nodes["n3"].Verdict != validation.Failed || len(st.Baselines) == 0 {
		t.Errorf("validation state: %+v %v", st, err)
	}
	// At most 2 at a time: the third stand-in started after one of the first two ended.
	starts := []int{}
	for _, n := range []string{"n1", "n2", "n3"} {
		b, err := os.ReadFile(filepath.Join(marks, n))
		f := strings.Fields(string(b))
		if err != nil || len(f) != 2 {
			t.Fatalf("mark %s: %v %q", n, err, b)
		}
		s, _ := strconv.Atoi(f[1])
		starts = append(starts, s)
	}
	if spread := max(starts[0], starts[1], starts[2]) - min(starts[0], starts[1], starts[2]); spread < 2 {
		t.Errorf("three 2 s validations started within %d s with --max-parallel 2", spread)
	}
	if r := reservations(t, tb); r != "No reservations in the system" {
		t.Errorf("reservations left:\n%s", r)
	}
	t.Logf("3 validations (nodecheck validate quick with stand-in tools, held 2 s), 2 at a time, on %s: %s (%d Slurm calls: %s)", tb.Version, elapsed.Round(10*time.Millisecond), sum.SlurmCallsTotal, callsText(sum.SlurmCalls))
	checkExtra(t, tb, sum, before)
}

func testValidateForeignReservation(t *testing.T, tb bed) {
	tb.Reset(t)
	tb.Slurm(t, "scontrol", "create", "reservation", "ReservationName=site-maint", "StartTime=now", "Duration=10", "Nodes=n1", "Users=root", "Flags=MAINT")
	t.Cleanup(func() { tb.Slurm(t, "scontrol", "delete", "ReservationName=site-maint") })
	out := t.TempDir()
	stdout, stderr, code := tb.sweepFor(t, time.Minute, "--validate", "quick", "--nodes", "n1", "--maint-reservation", "--poll", "200ms",
		"--format", "json", "--out", out, "--args-for", realValidate(t, tb, "n1", capHealthy))
	var sum valSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	// sinfo shows the node idle, and Slurm lets a MAINT reservation overlap another (both
	// versions): the list of active reservations is what keeps the sweep off it.
	if code != exitHealthy || sum.NotRun != 1 || len(sum.Results) != 1 || sum.Results[0].JobID != "" ||
		sum.Results[0].Why != "not submitted: in reservation site-maint, not this sweep's" {
		t.Errorf("exit %d, %+v\n%s", code, sum, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "n1.validate.sh")); err == nil {
		t.Error("n1 was submitted")
	}
	if r := reservations(t, tb); strings.Contains(r, "nodecheck-validate") {
		t.Errorf("the sweep's reservation is left:\n%s", r)
	}
}

func testReturnSbatchRefused(t *testing.T, tb bed) {
	tb.Reset(t)
	tb.Slurm(t, "scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=nodecheck: repaired: GPU 3 replaced")
	tb.WaitState(t, "n2", "drain")
	stdout, _, code := tb.sweepFor(t, time.Minute, "--nodecheck", standinPath(t), "--validate", "quick", "--return-to-service",
		"--nodes", "n2", "--poll", "200ms", "--out", t.TempDir(), "--sbatch-args", "--partition=no-such-partition",
		"--args-for", validationResult(t, tb, "n2", validation.Passed, 476.5, ""))
	tb.WaitState(t, "n2", "drain") // drain* for a moment after the resume
	if st, why := tb.SinfoState(t, "n2"), sinfoReason(t, tb, "n2"); code != exitUnhealthy || st != "drain" ||
		!strings.HasPrefix(why, "nodecheck: fleet: validate quick: not run: sbatch: error: ") {
		t.Errorf("exit %d, n2 %s %q\n%s", code, st, why, stdout)
	}
	if r := reservations(t, tb); r != "No reservations in the system" {
		t.Errorf("reservations left:\n%s", r)
	}
}

func testValidateInterrupted(t *testing.T, tb bed) {
	tb.Reset(t)
	tb.Slurm(t, "scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=nodecheck: repaired: GPU 3 replaced")
	tb.WaitState(t, "n2", "drain")
	mark := filepath.Join(tb.Tmp, "rts-interrupted")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--slurm-bin", tb.SlurmBin, "--nodecheck", standinPath(t), "--validate", "quick", "--return-to-service",
			"--nodes", "n2", "--poll", "200ms", "--out", t.TempDir(),
			"--args-for", validationResult(t, tb, "n2", validation.Passed, 476.5, "--sleep 60 --mark "+mark)},
			[]string{"SLURM_CONF=" + tb.Conf, "PATH=/usr/bin:/bin"}, &out, &errb)
	}()
	testbed.WaitFor(t, "the validation to start", 90*time.Second, func() bool { _, err := os.Stat(mark); return err == nil })
	if r := reservations(t, tb); !strings.Contains(r, "ReservationName=nodecheck-validate-n2-") || !strings.Contains(r, "Flags=MAINT") {
		t.Errorf("while validating, reservations:\n%s", r)
	}
	cancel() // as SIGINT does
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted sweep did not end within 30 s")
	}
	t.Logf("exit %d\n%s%s", code, out.String(), errb.String())
	if code != exitUnhealthy || !strings.Contains(out.String(), "UNDECIDED  n2  job ") {
		t.Errorf("exit %d\n%s", code, out.String())
	}
	// Drained at once (drng while the cancelled job ends, then drain).
	if st := tb.SinfoState(t, "n2"); st != "drng" && st != "drain" {
		t.Errorf("n2 right after the interrupt: %s", st)
	}
	tb.WaitState(t, "n2", "drain")
	if st, why := tb.SinfoState(t, "n2"), sinfoReason(t, tb, "n2"); st != "drain" || !strings.HasPrefix(why, "nodecheck: fleet: validate quick: undecided: job ") || !strings.Contains(why, "cancelled (interrupted)") {
		t.Errorf("n2 after the interrupt: %s %q", st, why)
	}
	if r := reservations(t, tb); r != "No reservations in the system" {
		t.Errorf("reservations left:\n%s", r)
	}
}

func testReturnToService(t *testing.T, tb bed) {
	tb.Reset(t)
	for _, c := range []struct {
		verdict string
		busbw   float64
	}{{validation.Passed, 476.5}, {validation.Failed, 150.2}} {
		tb.Slurm(t, "scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=nodecheck: repaired: GPU 3 replaced")
		tb.WaitState(t, "n2", "drain")
		mark := filepath.Join(tb.Tmp, "rts-"+c.verdict)
		var (
			wg     sync.WaitGroup
			stdout string
			code   int
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdout, _, code = tb.sweepFor(t, 2*time.Minute, "--nodecheck", standinPath(t), "--validate", "quick", "--return-to-service",
				"--nodes", "n2", "--poll", "200ms", "--out", t.TempDir(),
				"--args-for", validationResult(t, tb, "n2", c.verdict, c.busbw, "--sleep 4 --mark "+mark))
		}()
		testbed.WaitFor(t, "the validation to start", 90*time.Second, func() bool { _, err := os.Stat(mark); return err == nil })
		// While it validates, the node is resumed but held by the reservation: a user
		// job asking for it waits.
		user := strings.TrimSpace(tb.Slurm(t, "sbatch", "--parsable", "-w", "n2", "-o", "/dev/null", "--wrap", "true"))
		time.Sleep(time.Second)
		if st := jobStateOf(t, tb, user); st != "PENDING" {
			t.Errorf("%s: a user job on n2 during its validation is %s, want PENDING", c.verdict, st)
		}
		wg.Wait()
		st, why := tb.SinfoState(t, "n2"), sinfoReason(t, tb, "n2")
		if c.verdict == validation.Passed {
			if code != exitHealthy || !strings.Contains(stdout, "SERVICE    n2  returned to service: validate quick passed") || st == "drain" || st == "drng" {
				t.Errorf("passed: exit %d, n2 %s %q\n%s", code, st, why, stdout)
			}
			// In service: the user job that waited runs now (the node may read mix already).
			testbed.WaitFor(t, "the user job to run after the pass", 20*time.Second, func() bool { return jobStateOf(t, tb, user) == "COMPLETED" })
		} else {
			const reason = "nodecheck: fleet: validate quick: failed: nccl: busbw 150.2 GB/s under its floor 300 (+1 more) [reset_gpu]"
			if code != exitUnhealthy || st != "drain" || why != reason {
				t.Errorf("failed: exit %d, n2 %s %q, want drained with %q\n%s", code, st, why, reason, stdout)
			}
			if tb.Series == testbed.Slurm2411 {
				// The pass before published its validation; the failure withdrew it.
				if extra := tb.Slurm(t, "scontrol", "show", "node", "n2"); strings.Contains(extra, "validated_") {
					t.Errorf("n2 failed but still carries a validation:\n%s", extra)
				}
			}
			time.Sleep(time.Second)
			if st := jobStateOf(t, tb, user); st != "PENDING" {
				t.Errorf("a user job on n2 after its failed validation is %s, want PENDING", st)
			}
			tb.Slurm(t, "scancel", user)
		}
		if r := reservations(t, tb); r != "No reservations in the system" {
			t.Errorf("reservations left:\n%s", r)
		}
	}
}

// checkExtra checks what the sweep published: on 24.11 the passed nodes' Extra, and jobs that
// ask for it with --extra; on 22.05 why nothing was.
func checkExtra(t *testing.T, tb bed, sum valSummary, before time.Time) {
	if tb.Series != testbed.Slurm2411 {
		if !strings.HasPrefix(sum.Extra, "not published: Slurm 22.05.8 has no Extra constraints") {
			t.Errorf("Extra on 22.05: %q", sum.Extra)
		}
		return
	}
	if sum.Extra != "published on 2 nodes (n1,n2); withdrawn from the failed n3" {
		t.Errorf("Extra: %q", sum.Extra)
	}
	for _, n := range []string{"n1", "n2"} {
		extra := tb.Slurm(t, "scontrol", "show", "node", n)
		if !strings.Contains(extra, `"validated_level":"quick","validated_rank":1`) {
			t.Errorf("%s's Extra:\n%s", n, extra)
		}
	}
	// Jobs that ask for a validation: one the published values meet runs, one they do
	// not stays pending.
	since := strconv.FormatInt(before.Add(-time.Second).Unix(), 10)
	match := strings.TrimSpace(tb.Slurm(t, "sbatch", "--parsable", "-o", "/dev/null", "--extra", "validated_at>="+since+"&nccl_busbw>=470&h2d_bw>=30", "--wrap", "true"))
	nomatch := strings.TrimSpace(tb.Slurm(t, "sbatch", "--parsable", "-o", "/dev/null", "--extra", "validated_rank>=2", "--wrap", "true"))
	t.Cleanup(func() { tb.Slurm(t, "scancel", nomatch) })
	testbed.WaitFor(t, "the matching job to complete", 20*time.Second, func() bool { return jobStateOf(t, tb, match) == "COMPLETED" })
	if node := strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-t", "all", "-j", match, "-o", "%N")); node != "n1" && node != "n2" {
		t.Errorf("the job asking for validated_at>=%s ran on %q", since, node)
	}
	if st := strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-t", "all", "-j", nomatch, "-o", "%T %r")); st != "PENDING Constraints" {
		t.Errorf("the job asking for validated_rank>=2: %q, want PENDING Constraints", st)
	}
}
