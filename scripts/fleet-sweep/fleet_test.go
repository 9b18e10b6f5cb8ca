package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	healthy := snapshot(t, "h100-healthy")
	ibDown := snapshot(t, "h100-ib-port-down")
	ncclOK := snapshot(t, "h100-nccl-ok")
	ncclLow := snapshot(t, "h100-nccl-low-busbw")
	const ibSummary = "ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp"

	t.Run("partition: one healthy, one failing with its first failing check", func(t *testing.T) {
		tb.reset(t)
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
		if err != nil || !strings.Contains(string(script), "\nexec "+shellQuote(tb.bin)+" run --all --format json --mode manual --snapshot "+shellQuote(ibDown)+" --node n2\n") ||
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
		tb.reset(t)
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
		tb.reset(t)
		// The cluster's prolog (nodecheck itself) finds n2 broken before the sweep's job
		// runs: Slurm cancels the job (--no-requeue), and the summary says why.
		cfg := tb.config(t)
		tb.hook(t, "n2", "prolog", tb.bin, "run", "--snapshot", ibDown, "--node", "n2", "--drain", "--config", cfg)
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
		tb.reset(t)
		busy := strings.TrimSpace(tb.slurm(t, "sbatch", "--parsable", "--exclusive", "-w", "n2", "-o", "/dev/null", "--wrap", "sleep 120"))
		t.Cleanup(func() {
			// Cancel the blocker while slurmd still runs: a job left behind when the test bed
			// stops leaves its slurmstepd waiting for a controller that is gone.
			tb.slurm(t, "scancel", busy)
			tb.waitFor(t, "the blocking job to end", 30*time.Second, func() bool {
				st := tb.slurm(t, "squeue", "-h", "-t", "all", "-j", busy, "-o", "%T")
				return !strings.Contains(st, "RUNNING") && !strings.Contains(st, "COMPLETING") && !strings.Contains(st, "PENDING")
			})
		})
		tb.waitFor(t, "the blocking job to run", 20*time.Second, func() bool {
			return strings.Contains(tb.slurm(t, "squeue", "-h", "-j", busy, "-o", "%T"), "RUNNING")
		})
		tb.slurm(t, "scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=fleet test: bad fan")
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
		if st := strings.TrimSpace(tb.slurm(t, "squeue", "-h", "-t", "all", "-j", f[1], "-o", "%T")); st != "CANCELLED" {
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

// testbed is a running scripts/slurm-testbed.sh and a nodecheck binary built for it.
type testbed struct {
	dir  string // NODECHECK_TESTBED_DIR
	conf string // its slurm.conf
	bin  string // nodecheck, built with CGO_ENABLED=0
}

// startTestbed builds nodecheck and starts a test bed for t and its subtests, stopped when t
// ends (as cmd/nodecheck's TestSlurm does).
func startTestbed(t *testing.T) *testbed {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Slurm test bed cannot start in CI: %s", msg)
		}
		t.Skipf("no real Slurm here (%s): run as root after `scripts/slurm-testbed.sh install`; CI runs this test", msg)
	}
	if testing.Short() {
		t.Skip("-short: the fleet sweep's real-Slurm test takes about 20 s")
	}
	if os.Geteuid() != 0 {
		unavailable("not root")
	}
	if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil && os.Getenv("CI") != "true" {
		unavailable("Slurm is not installed")
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "slurm-testbed.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "nodecheck-fleet-test-")
	if err != nil {
		t.Fatal(err)
	}
	// The jobs run as root but read the snapshots and write the reports in here, and slurmd
	// runs nodecheck from here.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(tmp)
		} else {
			t.Logf("test bed files kept in %s", tmp)
		}
	})
	tb := &testbed{dir: filepath.Join(tmp, "testbed"), bin: filepath.Join(tmp, "nodecheck")}
	tb.conf = filepath.Join(tb.dir, "etc", "slurm.conf")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // apt-get, in CI
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", tb.bin, "./cmd/nodecheck")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nodecheck: %v\n%s", err, out)
	}

	port, err := freePorts(3)
	if err != nil {
		unavailable("no free ports: %v", err)
	}
	env := append(os.Environ(), "NODECHECK_TESTBED_DIR="+tb.dir, "NODECHECK_TESTBED_NODES=n1 n2", "NODECHECK_TESTBED_PORT="+strconv.Itoa(port))
	start := exec.CommandContext(ctx, script, "start")
	start.Env = env
	start.WaitDelay = time.Second
	out, err := start.CombinedOutput()
	t.Cleanup(func() {
		stop := exec.Command(script, "stop")
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("stop the test bed: %v\n%s", err, out)
		}
		if t.Failed() {
			for _, f := range []string{"slurmctld.log", "slurmd-n1.log", "slurmd-n2.log"} {
				data, _ := os.ReadFile(filepath.Join(tb.dir, "log", f))
				lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
				t.Logf("%s, last lines:\n%s", f, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	})
	if err != nil {
		unavailable("scripts/slurm-testbed.sh start: %v\n%s", err, out)
	}
	return tb
}

// freePorts finds n consecutive free TCP ports on the loopback address.
func freePorts(n int) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := base+n <= 65535
		for i := 1; ok && i < n; i++ {
			li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			li.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no run of free ports found")
}

func snapshot(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "testdata", "snapshots", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "meta.json")); err != nil {
		t.Skipf("snapshot %s is not here (module cache?): %v", name, err)
	}
	return p
}

// sweep runs the command in-process against the test bed, as an admin on the submit host
// would: the test bed's SLURM_CONF, quick polling.
func (tb *testbed) sweep(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	args = append([]string{"--nodecheck", tb.bin, "--poll", "100ms", "--timeout", "45s"}, args...)
	code = run(ctx, args, []string{"SLURM_CONF=" + tb.conf, "PATH=/usr/bin:/bin"}, &out, &errb)
	t.Logf("fleet-sweep %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

// slurm runs a Slurm client against the test bed and returns its stdout; a failure fails t.
func (tb *testbed) slurm(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/"+prog, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+tb.conf)
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", prog, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func (tb *testbed) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reset brings the test bed back to idle nodes without jobs, drains or hooks.
func (tb *testbed) reset(t *testing.T) {
	t.Helper()
	hooks, _ := filepath.Glob(filepath.Join(tb.dir, "hooks", "*"))
	for _, h := range hooks {
		if err := os.Remove(h); err != nil {
			t.Fatal(err)
		}
	}
	tb.slurm(t, "scancel", "--partition=debug")
	tb.waitFor(t, "no jobs", 30*time.Second, func() bool {
		return strings.TrimSpace(tb.slurm(t, "squeue", "-h")) == ""
	})
	for _, n := range []string{"n1", "n2"} {
		st := strings.TrimSpace(tb.slurm(t, "sinfo", "-h", "-N", "-n", n, "-o", "%T"))
		if strings.HasPrefix(st, "drain") || strings.HasPrefix(st, "down") {
			tb.slurm(t, "scontrol", "update", "NodeName="+n, "State=RESUME")
		}
	}
	// Right after a resume a node reads idle* for a moment; the sweep skips a node that
	// does not respond.
	tb.waitFor(t, "idle nodes", 20*time.Second, func() bool {
		return tb.slurm(t, "sinfo", "-h", "-N", "-o", "%T") == "idle\nidle\n"
	})
}

// config writes a nodecheck.toml for a prolog that drains: its state directory beside it, and
// no limit on drained nodes (the default 10% holds back every drain after the first of two).
func (tb *testbed) config(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "nodecheck.toml")
	body := fmt.Sprintf("[state]\ndir = %q\n[drain]\nmax_drained = \"\"\n", filepath.Join(dir, "state"))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hook makes Slurm's hook for node and context run argv (see scripts/nodecheck-hook).
func (tb *testbed) hook(t *testing.T, node, context string, argv ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tb.dir, "hooks", node+"."+context), []byte(strings.Join(argv, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
