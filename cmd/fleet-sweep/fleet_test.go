package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

const repoRoot = "../.."

// TestFleetSweepSlurm sweeps the nodes of a real Slurm: scripts/slurm-testbed.sh starts
// slurmctld and two slurmd (n1, n2) with munge, on free ports, in a temporary directory; the
// sweep submits its jobs there, and nodecheck (built here) replays a recorded node in each job.
//
// It runs once per Slurm version (testbed.ForEachVersion), the sweep with that version's clients
// (--slurm-bin: the test bed's wrappers, which run 24.11's in its root, where the jobs run too).
// It needs root and Debian's Slurm packages (scripts/slurm-testbed.sh install [--slurm 24.11]).
// Without them it skips, except in CI (CI=true), where a test bed that cannot start fails the
// test.
func TestFleetSweepSlurm(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-fleet-test-",
		Short:      "the fleet sweep's real-Slurm test takes about 20 s per Slurm version",
		// The jobs run as root but read the snapshots and write the reports in here, and
		// slurmd runs nodecheck from here.
		TempMode: 0o755,
	}, func(t *testing.T, b *testbed.Bed) { testFleetSweepSlurm(t, bed{b}) })
}

func testFleetSweepSlurm(t *testing.T, tb bed) {
	t.Cleanup(func() { // a node the drain test drained must not outlive its test bed's tests
		tb.Reset(t)
	})
	healthy := tb.Snapshot(t, "h100-healthy")
	ibDown := tb.Snapshot(t, "h100-ib-port-down")
	ncclOK := tb.Snapshot(t, "h100-nccl-ok")
	ncclLow := tb.Snapshot(t, "h100-nccl-low-busbw")
	const ibSummary = "ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp"

	t.Run("partition: one healthy, one failing with its first failing check", func(t *testing.T) {
		tb.Reset(t)
		out := t.TempDir()
		stdout, stderr, code := tb.sweep(t, "--partition", "debug", "--out", out,
			"--args-for", "n1=--snapshot "+shellQuote(healthy)+" --node n1",
			"--args-for", "n2=--snapshot "+shellQuote(ibDown)+" --node n2")
		if code != exitUnhealthy {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnhealthy, stderr)
		}
		for _, want := range []string{
			"nodecheck fleet sweep: 2 nodes, 1 healthy, 0 slow, 1 failing, 0 missing",
			"\nHEALTHY  n1\n",
			"\nFAILING  n2  " + ibSummary + "\n",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout)
			}
		}
		if strings.Contains(stdout, "busbw") {
			t.Errorf("a busbw table without an NCCL run:\n%s", stdout)
		}
		// What each job left: its script, its report, its stderr.
		script, err := os.ReadFile(filepath.Join(out, "n2.sh"))
		if err != nil || !strings.Contains(string(script), "\nexec "+shellQuote(tb.Nodecheck)+" run --all --format json --mode manual --snapshot "+shellQuote(ibDown)+" --node n2\n") ||
			!strings.Contains(string(script), "--nodelist=n2 --nodes=1 --ntasks=1 --exclusive") {
			t.Errorf("n2.sh (%v):\n%s", err, script)
		}
		var rep struct {
			Node, Mode string
		}
		if b, err := os.ReadFile(filepath.Join(out, "n1.json")); err != nil || json.Unmarshal(b, &rep) != nil || rep.Node != "n1" || rep.Mode != "manual" {
			t.Errorf("n1.json (%v): %+v", err, rep)
		}
		// The HTML report, beside them: n2 drawn failing, with its check and remedy.
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		for _, want := range []string{`data-node="n1" data-verdict="healthy"`, `data-node="n2" data-verdict="failing"`,
			`<tr data-node="n2" data-check="ib_ports" data-remedy="admin">`} {
			if err != nil || !strings.Contains(string(page), want) {
				t.Errorf("report.html (%v) lacks %q", err, want)
			}
		}
	})

	t.Run("nodes, JSON: busbw per node, slowest first", func(t *testing.T) {
		tb.Reset(t)
		stdout, stderr, code := tb.sweep(t, "--nodes", "n[1-2]", "--format", "json", "--out", t.TempDir(),
			"--args-for", "n1=--snapshot "+shellQuote(ncclOK)+" --node n1",
			"--args-for", "n2=--snapshot "+shellQuote(ncclLow)+" --node n2")
		if code != exitUnhealthy {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnhealthy, stderr)
		}
		var s summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("summary: %v\n%s", err, stdout)
		}
		if s.Nodes != 2 || s.HealthyHostlist != "n1" || len(s.Failing) != 1 || s.Failing[0].Node != "n2" || s.Failing[0].Check != "nccl_allreduce" || len(s.Missing) != 0 {
			t.Errorf("summary:\n%s", stdout)
		}
		// Both snapshots replay the same real 8x H100 run (476.5 GB/s at 4 GiB); n2's config asks
		// for 480. Equal figures keep the node order.
		if len(s.BusBW) != 2 || s.BusBW[0].Node != "n1" || s.BusBW[0].GBps != 476.5 || s.BusBW[0].At != "4 GiB" || s.BusBW[0].Status != "ok" ||
			s.BusBW[1].Node != "n2" || s.BusBW[1].Status != "fail" || s.BusBW[1].Expected != ">= 480 GB/s" {
			t.Errorf("busbw %+v", s.BusBW)
		}
	})

	t.Run("no report: nodecheck refuses its arguments; a prolog drains the node", func(t *testing.T) {
		tb.Reset(t)
		// The cluster's prolog (nodecheck itself) finds n2 broken before the sweep's job
		// runs: Slurm cancels the job (--no-requeue), and the summary says why.
		cfg := tb.Config(t, "")
		tb.Hook(t, "n2", "prolog", tb.Nodecheck, "run", "--snapshot", ibDown, "--node", "n2", "--drain", "--config", cfg)
		stdout, stderr, code := tb.sweep(t, "--nodes", "n1,n2", "--output-wait", "500ms", "--out", t.TempDir(),
			"--args-for", "n1=--snapshot "+shellQuote(healthy)+" --node n1 --bogus-flag")
		if code != exitUnhealthy {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnhealthy, stderr)
		}
		lines := missingLines(stdout)
		if l := lines["n1"]; !strings.Contains(l, " FAILED (exit 2:0), ") || !strings.Contains(l, ", n1.json: empty; stderr: ") || !strings.Contains(l, "--bogus-flag") {
			t.Errorf("n1: %q\n%s", l, stdout)
		}
		// Slurm 24.11 records exit code 0:54 for a job it cancels after a failed prolog
		// (observed with 24.11.5: scontrol show job says ExitCode=0:54); 22.05.8 records 0:0,
		// which the summary leaves out.
		cancelled := " CANCELLED, no n2.json; "
		if tb.Series == testbed.Slurm2411 {
			cancelled = " CANCELLED (exit 0:54), no n2.json; "
		}
		if l := lines["n2"]; !strings.Contains(l, cancelled) || !strings.HasSuffix(l, "; now node drained: nodecheck: "+ibSummary+" [admin]") {
			t.Errorf("n2: %q\n%s", l, stdout)
		}
	})

	t.Run("a busy node is cancelled at the deadline, a drained one never submitted", func(t *testing.T) {
		tb.Reset(t)
		busy := strings.TrimSpace(tb.Slurm(t, "sbatch", "--parsable", "--exclusive", "-w", "n2", "-o", "/dev/null", "--wrap", "sleep 120"))
		t.Cleanup(func() {
			// Cancel the blocker while slurmd still runs: a job left behind when the test bed
			// stops leaves its slurmstepd waiting for a controller that is gone.
			tb.Slurm(t, "scancel", busy)
			testbed.WaitFor(t, "the blocking job to end", 30*time.Second, func() bool {
				st := tb.Slurm(t, "squeue", "-h", "-t", "all", "-j", busy, "-o", "%T")
				return !strings.Contains(st, "RUNNING") && !strings.Contains(st, "COMPLETING") && !strings.Contains(st, "PENDING")
			})
		})
		testbed.WaitFor(t, "the blocking job to run", 20*time.Second, func() bool {
			return strings.Contains(tb.Slurm(t, "squeue", "-h", "-j", busy, "-o", "%T"), "RUNNING")
		})
		tb.Slurm(t, "scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=fleet test: bad fan")
		start := time.Now()
		stdout, stderr, code := tb.sweep(t, "--partition", "debug", "--timeout", "4s", "--out", t.TempDir(), "--args", "--snapshot "+shellQuote(healthy))
		if elapsed := time.Since(start); elapsed > 15*time.Second {
			t.Errorf("a 4 s sweep took %s", elapsed)
		}
		if code != exitUnhealthy {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnhealthy, stderr)
		}
		lines := missingLines(stdout)
		if l := lines["n1"]; l != "not submitted: node drained: fleet test: bad fan" {
			t.Errorf("n1: %q\n%s", l, stdout)
		}
		l := lines["n2"]
		if !strings.HasSuffix(l, " still PENDING (Resources) at the deadline: cancelled") {
			t.Errorf("n2: %q\n%s", l, stdout)
		}
		f := strings.Fields(l) // job ID still PENDING ...
		if len(f) < 2 {
			t.Fatalf("n2: %q", l)
		}
		if st := strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-t", "all", "-j", f[1], "-o", "%T")); st != "CANCELLED" {
			t.Errorf("the sweep's job %s is %q after the sweep, want CANCELLED", f[1], st)
		}
	})

	t.Run("slow against the fleet: listed, then drained with --drain-slow (dry run first)", func(t *testing.T) {
		tb.Reset(t)
		slow := tb.slowSnapshot(t, 0.85)
		// Two nodes make a fleet only with a lower bar: the median of two is their mean, so a
		// MAD rule of 0.5 (and the default 5% floor) is what tells them apart here.
		args := []string{"--partition", "debug", "--slow-min-nodes", "2", "--slow-mad", "0.5", "--drain-slow",
			"--args-for", "n1=--snapshot " + shellQuote(ncclOK) + " --node n1",
			"--args-for", "n2=--snapshot " + shellQuote(slow) + " --node n2"}
		const line = "SLOW     n2  busbw 405.1 GB/s at 4 GiB, 8.1% below the h100 median 440.8 (robust z 0.7)\n"
		const reason = "nodecheck: fleet: slow: busbw 405.1 GB/s at 4 GiB, 8.1% below the h100 median 440.8"
		stdout, stderr, code := tb.sweep(t, append(args, "--out", t.TempDir(), "--dry-run")...)
		if code != exitUnhealthy || !strings.Contains(stdout, line) || !strings.Contains(stdout, "\nHEALTHY  n1\n") ||
			!strings.Contains(stdout, "  n2  dry run, would drain: "+reason+"\n    would run: "+tb.SlurmBin+"/scontrol update NodeName=n2 State=DRAIN 'Reason="+reason+"'\n") {
			t.Errorf("dry run: exit %d\n%s%s", code, stdout, stderr)
		}
		if st := tb.SinfoState(t, "n2"); st != "idle" {
			t.Errorf("n2 is %s after a dry run", st)
		}
		stdout, stderr, code = tb.sweep(t, append(args, "--out", t.TempDir(), "--format", "json")...)
		var s summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitUnhealthy {
			t.Fatalf("exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		if len(s.Slow) != 1 || s.Slow[0].Node != "n2" || len(s.Drains) != 1 || s.Drains[0].Action != "drained" || s.Drains[0].Reason != reason {
			t.Errorf("slow %+v, drains %+v", s.Slow, s.Drains)
		}
		got := strings.TrimSpace(tb.Slurm(t, "sinfo", "-h", "-N", "-n", "n2", "-o", "%t|%E"))
		if got != "drain|"+reason {
			t.Errorf("n2 in sinfo: %q, want %q", got, "drain|"+reason)
		}
		// The cost: one sinfo to list, one sbatch per node, squeue polls, then drain's reads
		// (scontrol show node, sinfo for max_drained before the drain and again after it) and
		// its one update. No per-node scontrol beyond the drain.
		if s.SlurmCalls["sbatch"] != 2 || s.SlurmCalls["scontrol"] != 2 || s.SlurmCalls["sinfo"] != 3 || s.SlurmCalls["squeue"] < 1 || s.SlurmCallsTotal > 2+2+3+60 {
			t.Errorf("Slurm calls %v (%d)", s.SlurmCalls, s.SlurmCallsTotal)
		}
	})

	t.Run("multinode on the test bed: all_reduce_perf stand-in over the pair", func(t *testing.T) {
		standin := tb.standIn(t)
		log2, _ := filepath.Abs(filepath.Join("testdata", "nccl", "nccltests-309-h100-2node-16gpu-mpi.log"))
		failLog, _ := filepath.Abs(filepath.Join("testdata", "nccl", "nccltests-369-gh200-2node-wrong-nonzero-failed.log"))
		base := []string{"--nodes", "n[1-2]", "--multinode", "--mpi", "none",
			"--args-for", "n1=--snapshot " + shellQuote(healthy) + " --node n1", "--args-for", "n2=--snapshot " + shellQuote(healthy) + " --node n2",
			"--tasks-per-node", "1", "--allreduce", standin, "--multinode-min-busbw", "300", "--multinode-timeout", "40s"}
		topo := filepath.Join(t.TempDir(), "topology.conf")
		if err := os.WriteFile(topo, []byte("SwitchName=leaf1 Nodes=n1\nSwitchName=leaf2 Nodes=n2\nSwitchName=spine Switches=leaf[1-2]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, standinArgs string
			extra             []string
			code              int
			want              []string
		}{
			{"healthy", "", nil, exitHealthy, []string{
				"multinode all_reduce_perf (pairs): 2 nodes, 1 jobs in 1 rounds, ",
				"  bad: a failed run, or busbw under 300.0 GB/s (--multinode-min-busbw 300.0 GB/s)\n  n[1-2]                   469.2 GB/s at 16 GiB\n  no culprit: every set passed\n"}},
			{"across leaf switches", "", []string{"--topology", topo, "--cross-leaf"}, exitHealthy, []string{
				"multinode all_reduce_perf (pairs across leaf switches, topology " + topo + "): 2 nodes, 1 jobs in 1 rounds, "}},
			{"slow: two nodes alone cannot be told apart", "-slow n2 -factor 0.5", nil, exitUnhealthy, []string{
				"  n[1-2]                   BAD: busbw 234.6 GB/s under 300.0\n",
				"  CULPRIT UNRESOLVED n[1-2]: no node passed a test to serve as a reference for n1; no node passed a test to serve as a reference for n2\n"}},
			{"wrong data", "-fail n1 -fail-log " + shellQuote(failLog), nil, exitUnhealthy, []string{
				"  n[1-2]                   BAD: failed: wrong data: 128 wrong elements, 4 out of bounds values (exit 1:0); stderr: srun: error: n1: task 0: Exited with exit code 1\n"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tb.Reset(t)
				args := append(append(append([]string(nil), base...), tc.extra...), "--out", t.TempDir(),
					"--allreduce-args", "-log "+shellQuote(log2)+" "+tc.standinArgs+" -- -b 1G -e 16G -f 2 -g 1")
				stdout, stderr, code := tb.sweep(t, args...)
				if code != tc.code {
					t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(stdout, w) {
						t.Errorf("summary lacks %q:\n%s%s", w, stdout, stderr)
					}
				}
			})
		}
	})
}

// missingLines maps each MISSING node of a text summary to its reason.
func missingLines(summary string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(summary, "\n") {
		if rest, ok := strings.CutPrefix(l, "MISSING  "); ok {
			f := strings.SplitN(strings.TrimSpace(rest), "  ", 2)
			if len(f) == 2 {
				m[f[0]] = strings.TrimSpace(f[1])
			}
		}
	}
	return m
}

// bed is a running test bed (scripts/testbed), with nodecheck built for it.
type bed struct{ *testbed.Bed }

// sweep runs the command in-process against the test bed, as an admin on the submit host
// would: the test bed's SLURM_CONF and Slurm clients, quick polling.
func (tb bed) sweep(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return tb.sweepFor(t, time.Minute, append([]string{"--poll", "100ms", "--timeout", "45s"}, args...)...)
}

// sweepFor runs the command against the test bed within limit, with args as they are.
func (tb bed) sweepFor(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errb bytes.Buffer
	args = append([]string{"--nodecheck", tb.Nodecheck, "--slurm-bin", tb.SlurmBin}, args...)
	code = run(ctx, args, []string{"SLURM_CONF=" + tb.Conf, "PATH=/usr/bin:/bin"}, &out, &errb)
	t.Logf("fleet-sweep %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

// standIn builds the all_reduce_perf stand-in (testdata/allreduce-standin) into the test bed's
// directory, where slurmd can run it.
func (tb bed) standIn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(tb.Tmp, "allreduce-standin")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/allreduce-standin").CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	return bin
}

// slowSnapshot derives a SIMULATED slow node from the real h100-nccl-ok snapshot: a copy whose
// recorded all_reduce_perf stdout (a real 8x H100 log) has its bandwidth scaled by factor, by
// the stand-in. Everything else is the real snapshot; the log's first line says it is a
// stand-in's.
func (tb bed) slowSnapshot(t *testing.T, factor float64) string {
	t.Helper()
	src := tb.Snapshot(t, "h100-nccl-ok")
	dst := filepath.Join(tb.Tmp, fmt.Sprintf("h100-nccl-slow-%.2f", factor))
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy the snapshot: %v\n%s", err, out)
	}
	path := filepath.Join(dst, "commands.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []map[string]any
	if err := json.Unmarshal(b, &cmds); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cmds {
		argv, _ := c["argv"].([]any)
		if len(argv) == 0 || argv[0] != "/usr/bin/all_reduce_perf" {
			continue
		}
		log := filepath.Join(tb.Tmp, "h100-nccl-ok.log")
		if err := os.WriteFile(log, []byte(c["stdout"].(string)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(tb.standIn(t), "-log", log, "-slow", "sim", "-factor", fmt.Sprint(factor))
		cmd.Env = []string{"SLURM_JOB_NODELIST=sim"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("stand-in: %v", err)
		}
		c["stdout"] = string(out)
		found = true
	}
	if !found {
		t.Fatalf("%s records no /usr/bin/all_reduce_perf", path)
	}
	if b, err = json.MarshalIndent(cmds, "", "  "); err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
