package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
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
// It needs root and Debian's Slurm packages (scripts/slurm-testbed.sh install). Without them
// it skips, except in CI (CI=true), where a test bed that cannot start fails the test.
func TestFleetSweepSlurm(t *testing.T) {
	tb := startTestbed(t)
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
			"nodecheck fleet sweep: 2 nodes, 1 healthy, 1 failing, 0 missing",
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
		if l := lines["n2"]; !strings.Contains(l, " CANCELLED, no n2.json; ") || !strings.HasSuffix(l, "; now node drained: nodecheck: "+ibSummary) {
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

// startTestbed builds nodecheck and starts a test bed for t and its subtests, stopped when t
// ends (as cmd/nodecheck's TestSlurm does).
func startTestbed(t *testing.T) bed {
	t.Helper()
	return bed{testbed.Start(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-fleet-test-",
		Short:      "the fleet sweep's real-Slurm test takes about 20 s",
		// The jobs run as root but read the snapshots and write the reports in here, and
		// slurmd runs nodecheck from here.
		TempMode: 0o755,
	})}
}

// sweep runs the command in-process against the test bed, as an admin on the submit host
// would: the test bed's SLURM_CONF, quick polling.
func (tb bed) sweep(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	args = append([]string{"--nodecheck", tb.Nodecheck, "--poll", "100ms", "--timeout", "45s"}, args...)
	code = run(ctx, args, []string{"SLURM_CONF=" + tb.Conf, "PATH=/usr/bin:/bin"}, &out, &errb)
	t.Logf("fleet-sweep %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}
