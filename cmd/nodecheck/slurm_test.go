package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestSlurm runs nodecheck against a real Slurm: scripts/slurm-testbed.sh starts slurmctld and
// two slurmd (nodes n1 and n2) with munge, on ports of their own, in a temporary directory,
// and nodecheck is built and run as Slurm runs it (Prolog=, Epilog=, HealthCheckProgram=) and
// as an admin does. One test bed serves every subtest; each subtest starts from idle nodes, no
// jobs and no hooks (reset).
//
// It runs once per Slurm version (testbed.ForEachVersion: TestSlurm/22.05.8/...,
// TestSlurm/24.11.5/...); on 24.11 Slurm, its clients, the hooks and nodecheck all run in the
// test bed's Debian 13 root. It needs root and Debian's Slurm packages (scripts/slurm-testbed.sh
// install [--slurm 24.11]). Without them it skips, except in CI (CI=true), where a test bed that
// cannot start fails the test.
func TestSlurm(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-slurm-test-",
		Short:      "the real-Slurm tests take about a minute per Slurm version",
	}, func(t *testing.T, b *testbed.Bed) { testSlurm(t, newBed(t, b)) })
}

func testSlurm(t *testing.T, tb *bed) {
	healthy := tb.Snapshot(t, "h100-healthy")
	ibDown := tb.Snapshot(t, "h100-ib-port-down")
	const ibReason = "nodecheck: ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp [admin]"

	t.Run("health run drains a failing node", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained || rep.Drain.Reason != ibReason {
			t.Errorf("drain = %+v, want drained with %q", rep.Drain, ibReason)
		}
		n := tb.node(t, "n1")
		if !n.Drained() || n.Reason != ibReason {
			t.Errorf("n1 is %s %q, want drained with %q", n, n.Reason, ibReason)
		}
		// sinfo -R shows the first 20 characters: exactly the prefix and the check id.
		if out := tb.Slurm(t, "sinfo", "-R", "-h", "-n", "n1"); !strings.HasPrefix(out, "nodecheck: ib_ports: ") {
			t.Errorf("sinfo -R:\n%s", out)
		}
		if out := tb.Slurm(t, "sinfo", "-h", "-N", "-n", "n1", "-o", "%E"); strings.TrimSpace(out) != ibReason {
			t.Errorf("sinfo %%E: %q, want %q", out, ibReason)
		}
	})

	t.Run("two clean runs resume, one does not", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--resume", "--config", cfg)
		rep, _ := tb.runJSON(t, exitHealthy, "--mode", "health", "--snapshot", healthy, "--node", "n1", "--drain", "--resume", "--config", cfg)
		if rep.Drain.Action != drain.ActionWaiting || rep.Drain.Passes != 1 {
			t.Errorf("first clean run: drain = %+v, want waiting after 1 pass", rep.Drain)
		}
		if n := tb.node(t, "n1"); !n.Drained() || n.Reason != ibReason {
			t.Fatalf("after one clean run n1 is %s %q, want still drained", n, n.Reason)
		}
		rep, _ = tb.runJSON(t, exitHealthy, "--mode", "health", "--snapshot", healthy, "--node", "n1", "--drain", "--resume", "--config", cfg)
		if rep.Drain.Action != drain.ActionResumed {
			t.Errorf("second clean run: drain = %+v, want resumed", rep.Drain)
		}
		tb.WaitState(t, "n1", "idle")
		// Slurm 24.11 keeps a node's reason when it is resumed (observed with 24.11.5: State=IDLE
		// and the drain's Reason, in scontrol show node, its --json and sinfo %E; RESUME with
		// Reason="" keeps it too); 22.05.8 clears it.
		wantReason := ""
		if tb.Series == testbed.Slurm2411 {
			wantReason = ibReason
		}
		if n := tb.node(t, "n1"); n.Drained() || n.Reason != wantReason {
			t.Errorf("after two clean runs n1 is %s %q, want idle with reason %q", n, n.Reason, wantReason)
		}
	})

	t.Run("admin drain is never resumed and its reason kept", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		tb.Slurm(t, "scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=maintenance")
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--resume", "--config", cfg)
		if rep.Drain.Action != drain.ActionKept {
			t.Errorf("failing run: drain = %+v, want kept", rep.Drain)
		}
		for i := range 3 {
			rep, _ = tb.runJSON(t, exitHealthy, "--mode", "health", "--snapshot", healthy, "--node", "n1", "--drain", "--resume", "--config", cfg)
			if rep.Drain.Action != drain.ActionKept {
				t.Errorf("clean run %d: drain = %+v, want kept", i+1, rep.Drain)
			}
		}
		if n := tb.node(t, "n1"); !n.Drained() || n.Reason != "maintenance" {
			t.Errorf("n1 is %s %q, want drained with the admin's reason", n, n.Reason)
		}
	})

	t.Run("a check that cannot read its GPU does not resume the node it drained", func(t *testing.T) {
		tb.Reset(t)
		// gpu_count off: it fails for a GPU NVML cannot read, and this run must have no
		// failure, only a check that could not look.
		cfg := tb.Config(t, "[checks.gpu_count]\nenabled = false\n")
		remapFailed := tb.Snapshot(t, "h100-remap-failed")
		unreadable := unreadableGPUSnapshot(t, healthy)
		const reason = "nodecheck: gpu_memory_errors: gpu 7 (0000:db:00.0): row remapping failed: replace the GPU [service]"
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", remapFailed, "--node", "n1", "--drain", "--resume", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained || rep.Drain.Reason != reason {
			t.Fatalf("failing run: drain = %+v, want drained with %q", rep.Drain, reason)
		}
		for i := range 3 {
			// No check fails; gpu_memory_errors says error (GPU 7 not read). The exit code is
			// the run's verdict's, which this test does not judge.
			rep, _ = tb.runJSON(t, -1, "--mode", "health", "--snapshot", unreadable, "--node", "n1", "--drain", "--resume", "--config", cfg)
			if rep.Drain.Action != drain.ActionWaiting || rep.Drain.Passes != 0 ||
				!strings.Contains(rep.Drain.Message, "gpu_memory_errors, which drained the node, could not look (error: gpu 7") {
				t.Errorf("run %d without GPU 7: drain = %+v, want waiting at 0 passes", i+1, rep.Drain)
			}
		}
		if n := tb.node(t, "n1"); !n.Drained() || n.Reason != reason {
			t.Fatalf("after 3 runs that could not read GPU 7, n1 is %s %q, want still drained", n, n.Reason)
		}
		for i, want := range []drain.Action{drain.ActionWaiting, drain.ActionResumed} {
			rep, _ = tb.runJSON(t, exitHealthy, "--mode", "health", "--snapshot", healthy, "--node", "n1", "--drain", "--resume", "--config", cfg)
			if rep.Drain.Action != want || rep.Drain.Passes != i+1 {
				t.Errorf("clean run %d: drain = %+v, want %s after %d passes", i+1, rep.Drain, want, i+1)
			}
		}
		tb.WaitState(t, "n1", "idle")
	})

	t.Run("a fleet sweep's drain is not resumed by the node's health runs", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		const reason = "nodecheck: fleet: slow: busbw 405.1 GB/s at 4 GiB, 8.1% below the h100 median 440.8"
		tb.Slurm(t, "scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason="+reason)
		for i := range 3 {
			rep, _ := tb.runJSON(t, exitHealthy, "--mode", "health", "--snapshot", healthy, "--node", "n1", "--drain", "--resume", "--config", cfg)
			if rep.Drain.Action != drain.ActionKept || !strings.Contains(rep.Drain.Message, "resume it by hand") {
				t.Errorf("clean run %d: drain = %+v, want kept, resume by hand", i+1, rep.Drain)
			}
		}
		if n := tb.node(t, "n1"); !n.Drained() || n.Reason != reason {
			t.Errorf("n1 is %s %q, want drained with the sweep's reason", n, n.Reason)
		}
	})

	t.Run("a resumed node's leftover reason counts for nothing", func(t *testing.T) {
		tb.Reset(t)
		// On 24.11 n2 keeps "nodecheck: ..." after its resume; max_drained = "1" must still let
		// n1 drain, and n2's leftover reason must not stop a drain of n2 either.
		cfg := tb.Config(t, "[drain]\nmax_drained = \"1\"\n")
		tb.Slurm(t, "scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=nodecheck: gpu_count: 7 of 8 GPUs")
		tb.Slurm(t, "scontrol", "update", "NodeName=n2", "State=RESUME")
		tb.WaitState(t, "n2", "idle")
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained {
			t.Errorf("n1: drain = %+v, want drained", rep.Drain)
		}
		tb.Slurm(t, "scontrol", "update", "NodeName=n1", "State=RESUME")
		tb.WaitState(t, "n1", "idle")
		tb.Slurm(t, "scontrol", "update", "NodeName=n2", "Reason=maintenance done")
		rep, _ = tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n2", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained {
			t.Errorf("n2: drain = %+v, want drained", rep.Drain)
		}
	})

	t.Run("prolog drains with nodecheck's reason and the job is requeued held", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		tb.Hook(t, "n1", "prolog", tb.Nodecheck, "run", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		job := tb.sbatch(t, "-w", "n1", "--wrap", "/bin/true")
		testbed.WaitFor(t, "the job to be requeued and held", 30*time.Second, func() bool {
			s := tb.Slurm(t, "scontrol", "show", "job", "-o", job)
			return strings.Contains(s, "JobState=PENDING") && strings.Contains(s, "Reason=launch_failed_requeued_held")
		})
		n := tb.node(t, "n1")
		if !n.Drained() || n.Reason != ibReason {
			t.Errorf("n1 is %s %q, want drained with %q (not Slurm's \"Prolog error\")", n, n.Reason, ibReason)
		}
		if out := tb.hookOutput(t, "n1", "prolog"); !strings.HasPrefix(out, "node n1, mode prolog\n") {
			t.Errorf("prolog output:\n%s", out)
		}
		if logs := tb.HookFile("n1", "prolog.err"); !strings.Contains(logs, `"action":"drained"`) {
			t.Errorf("prolog logs:\n%s", logs)
		}
	})

	t.Run("epilog drains with nodecheck's reason and the job stays completed", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		tb.Hook(t, "n1", "epilog", tb.Nodecheck, "run", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		job := tb.sbatch(t, "-w", "n1", "--wrap", "/bin/true")
		// The job reads COMPLETING until the epilog has ended.
		testbed.WaitFor(t, "the job to complete", 30*time.Second, func() bool {
			return strings.Contains(tb.Slurm(t, "scontrol", "show", "job", "-o", job), "JobState=COMPLETED ")
		})
		// Slurm drains for a failed epilog too ("Epilog error"), but keeps a reason it finds.
		if n := tb.node(t, "n1"); !n.Drained() || n.Reason != ibReason {
			t.Errorf("n1 is %s %q, want drained with %q (not Slurm's \"Epilog error\")", n, n.Reason, ibReason)
		}
		if out := tb.hookOutput(t, "n1", "epilog"); !strings.HasPrefix(out, "node n1, mode epilog\n") {
			t.Errorf("epilog output:\n%s", out)
		}
	})

	t.Run("node with a running job drains after the job", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		job := tb.sbatch(t, "-w", "n1", "--wrap", "/bin/sleep 60")
		testbed.WaitFor(t, "the job to run", 30*time.Second, func() bool {
			return strings.TrimSpace(tb.Slurm(t, "squeue", "-h", "-j", job, "-o", "%t")) == "R"
		})
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained {
			t.Errorf("drain = %+v, want drained", rep.Drain)
		}
		if st := tb.SinfoState(t, "n1"); st != "drng" {
			t.Errorf("sinfo state %q with the job running, want drng", st)
		}
		if n := tb.node(t, "n1"); n.String() != "MIXED+DRAIN" && n.String() != "ALLOCATED+DRAIN" {
			t.Errorf("scontrol state %s, want MIXED+DRAIN", n)
		}
		tb.Slurm(t, "scancel", job)
		tb.WaitState(t, "n1", "drain")
	})

	t.Run("controller stopped: runs end within their budget", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "[budget]\nhealth = \"4s\"\n")
		tb.stopController(t)
		defer tb.contController(t)
		for _, tc := range []struct {
			mode   string
			budget time.Duration
		}{{"prolog", 5 * time.Second}, {"health", 4 * time.Second}} {
			rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", tc.mode, "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
			if rep.Drain.Action != drain.ActionUnreachable {
				t.Errorf("%s: drain = %+v, want unreachable", tc.mode, rep.Drain)
			}
			t.Logf("%s run with slurmctld stopped: %s (budget %s)", tc.mode, rep.elapsed.Round(time.Millisecond), tc.budget)
			// The budget, plus the process's own start and exit.
			if el := rep.elapsed; el > tc.budget+time.Second {
				t.Errorf("%s run took %s, budget %s", tc.mode, el.Round(time.Millisecond), tc.budget)
			}
		}
	})

	t.Run("safety limit holds a drain back", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "[drain]\nmax_drained = \"50%\"\n")
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n2", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionDrained {
			t.Fatalf("n2: drain = %+v, want drained (0 of 2 nodes drained before)", rep.Drain)
		}
		rep, stderr := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionHeld || !strings.Contains(rep.Drain.Message, "1 of 2 nodes already carry nodecheck's drain (n2)") {
			t.Errorf("n1: drain = %+v, want held", rep.Drain)
		}
		if !strings.Contains(stderr, `"level":"error"`) || !strings.Contains(stderr, `"action":"held"`) {
			t.Errorf("the held drain is not logged at error level:\n%s", stderr)
		}
		if n := tb.node(t, "n1"); n.Drained() {
			t.Errorf("n1 is %s %q, want not drained", n, n.Reason)
		}
	})

	t.Run("overlapping runs take turns on the lock", func(t *testing.T) {
		tb.Reset(t)
		// The shortest prolog budget the default check timeouts allow (3s): the last run waits
		// for all of it.
		cfg := tb.Config(t, "[budget]\nprolog = \"3s\"\n")
		// Hold the lock, as a slow run would, while two runs start; both wait, then one
		// drains and the other finds the node drained.
		if err := os.MkdirAll(filepath.Join(filepath.Dir(cfg), "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		l := flock.New(filepath.Join(filepath.Dir(cfg), "state", "lock"))
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		actions := make([]drain.Action, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
				actions[i] = rep.Drain.Action
			}()
		}
		time.Sleep(500 * time.Millisecond)
		_ = l.Unlock()
		wg.Wait()
		if !(actions[0] == drain.ActionDrained && actions[1] == drain.ActionKept || actions[0] == drain.ActionKept && actions[1] == drain.ActionDrained) {
			t.Errorf("actions %v, want one drained and one kept", actions)
		}
		// A run whose budget ends while another holds the lock takes no action.
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		rep, _ := tb.runJSON(t, exitUnhealthy, "--mode", "prolog", "--snapshot", ibDown, "--node", "n1", "--drain", "--config", cfg)
		if rep.Drain.Action != drain.ActionLocked || !strings.Contains(rep.Drain.Message, "another nodecheck run holds the lock") {
			t.Errorf("drain = %+v, want locked", rep.Drain)
		}
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		out, _, code := tb.run(t, "run", "--mode", "health", "--snapshot", ibDown, "--node", "n1", "--drain", "--dry-run", "--config", cfg)
		if code != exitUnhealthy || !strings.Contains(out, "would run: /usr/bin/scontrol update NodeName=n1 State=DRAIN 'Reason="+ibReason+"'") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
		if n := tb.node(t, "n1"); n.Drained() {
			t.Errorf("n1 is %s after a dry run", n)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "state")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a dry run created the state directory: %v", err)
		}
	})

	t.Run("hooks: mode from Slurm's environment, no arguments", func(t *testing.T) {
		tb.Reset(t)
		cfg := tb.Config(t, "")
		// HealthCheckProgram: slurmd gives it only SLURMD_NODENAME. A replay without --drain
		// never acts, so this run only shows how the mode is detected.
		tb.Hook(t, "n2", "health", tb.Nodecheck, "run", "--snapshot", healthy, "--format", "json", "--config", cfg)
		testbed.WaitFor(t, "slurmd to run the health check", 15*time.Second, func() bool {
			return strings.Contains(tb.hookOutput(t, "n2", "health"), `"mode": "health"`)
		})
		env := tb.hookEnv(t, "n2", "health")
		if strings.Contains(env, "\nPATH=") || !strings.Contains(env, "SLURMD_NODENAME=n2") || strings.Contains(env, "SLURM_JOB_ID") || !strings.Contains(env, "cwd=/ hook_args=0") {
			t.Errorf("health check environment:\n%s", env)
		}

		// HealthCheckProgram as installed: the nodecheck-health link, no arguments. Its
		// scontrol gets no SLURM_CONF and would read /etc/slurm/slurm.conf: where one exists,
		// it belongs to a real cluster, which this test must not touch.
		if _, err := os.Stat(tb.Path("/etc/slurm/slurm.conf")); err == nil {
			t.Log("zero-argument health check not run: /etc/slurm/slurm.conf exists here")
		} else {
			link := filepath.Join(filepath.Dir(tb.Nodecheck), "nodecheck-health")
			if err := os.Symlink(tb.Nodecheck, link); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
			tb.Hook(t, "n1", "health", link)
			testbed.WaitFor(t, "slurmd to run nodecheck-health", 15*time.Second, func() bool {
				return strings.HasPrefix(tb.hookOutput(t, "n1", "health"), "node n1, mode health\n")
			})
		}

		// Prolog: nodecheck itself, no arguments, on the live test bed node (no config file:
		// the built-in defaults, state in /var/lib/nodecheck, as on a fresh install).
		tb.Hook(t, "n2", "prolog", tb.Nodecheck)
		job := tb.sbatch(t, "-w", "n2", "--wrap", "/bin/true")
		testbed.WaitFor(t, "the prolog to run", 30*time.Second, func() bool {
			return strings.Contains(tb.hookOutput(t, "n2", "prolog"), "HEALTHY")
		})
		out := tb.hookOutput(t, "n2", "prolog")
		if !strings.HasPrefix(out, "node n2, mode prolog\n") {
			t.Errorf("prolog output:\n%s", out)
		}
		env = tb.hookEnv(t, "n2", "prolog")
		if strings.Contains(env, "\nPATH=") || !strings.Contains(env, "SLURM_SCRIPT_CONTEXT=prolog_slurmd") || !strings.Contains(env, "--- exec "+tb.Nodecheck+" with 0 arguments") {
			t.Errorf("prolog environment:\n%s", env)
		}
		// Whatever the live checks found here (a CGO_ENABLED=0 build sees no GPU through
		// NVML), a failing prolog leaves nodecheck's reason, never "Prolog error".
		if strings.Contains(out, "UNHEALTHY") {
			testbed.WaitFor(t, "the job to be requeued", 30*time.Second, func() bool {
				return strings.Contains(tb.Slurm(t, "scontrol", "show", "job", "-o", job), "JobState=PENDING")
			})
			if n := tb.node(t, "n2"); !n.Drained() || !strings.HasPrefix(n.Reason, "nodecheck: ") {
				t.Errorf("n2 is %s %q, want drained with nodecheck's reason", n, n.Reason)
			}
		}
	})
}

// bed is a running test bed (scripts/testbed) and slurmctld's pid, to freeze it.
type bed struct {
	*testbed.Bed
	ctld int // slurmctld's pid
}

// newBed wraps a test bed started by testbed.ForEachVersion.
func newBed(t *testing.T, b *testbed.Bed) *bed {
	t.Helper()
	tb := &bed{Bed: b}
	pid, err := os.ReadFile(filepath.Join(tb.Dir, "run", "slurmctld.child"))
	if err != nil {
		t.Fatal(err)
	}
	tb.ctld, err = strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// stopController freezes slurmctld (SIGSTOP): clients then connect but get no answer, the
// worst case for a caller with a deadline (a killed controller refuses connections, and the
// clients retry for about 9 s). contController thaws it.
func (tb *bed) stopController(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(tb.ctld, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop slurmctld: %v", err)
	}
}

func (tb *bed) contController(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(tb.ctld, syscall.SIGCONT); err != nil {
		t.Errorf("continue slurmctld: %v", err)
	}
}

// node reads a node's state through drain's own parser.
func (tb *bed) node(t *testing.T, name string) drain.NodeState {
	t.Helper()
	n, err := drain.ParseShowNode(strings.NewReader(tb.Slurm(t, "scontrol", "show", "node", "-o", name)), name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (tb *bed) hookOutput(t *testing.T, node, context string) string {
	return tb.HookFile(node, context+".out")
}

func (tb *bed) hookEnv(t *testing.T, node, context string) string {
	return tb.HookFile(node, context+".env")
}

func (tb *bed) sbatch(t *testing.T, args ...string) string {
	t.Helper()
	return strings.TrimSpace(tb.Slurm(t, "sbatch", append([]string{"--parsable", "-o", "/dev/null"}, args...)...))
}

// run runs the nodecheck binary as an admin on a node would, with the test bed's SLURM_CONF
// (in the test bed's root on 24.11, where its scontrol is that version's).
func (tb *bed) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := tb.Command(ctx, tb.Nodecheck, args...)
	cmd.Env = []string{"SLURM_CONF=" + tb.Conf, "PATH=/usr/bin:/bin"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run nodecheck: %v", err)
	}
	return out.String(), errb.String(), code
}

// runReport is the part of the JSON report these tests read.
type runReport struct {
	Mode    string        `json:"mode"`
	Drain   drain.Outcome `json:"drain"`
	elapsed time.Duration // how long the process ran
}

// runJSON runs `nodecheck run --format json ARGS`, checks the exit code (unless wantCode is -1),
// and returns the report and the logs.
func (tb *bed) runJSON(t *testing.T, wantCode int, args ...string) (runReport, string) {
	t.Helper()
	start := time.Now()
	out, stderr, code := tb.run(t, append([]string{"run", "--format", "json"}, args...)...)
	elapsed := time.Since(start)
	if wantCode >= 0 && code != wantCode {
		t.Errorf("nodecheck %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, wantCode, stderr)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("nodecheck %s: report: %v\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	rep.elapsed = elapsed
	return rep, stderr
}

// unreadableGPUSnapshot is a copy of the healthy snapshot in which NVML could not read GPU 7
// (ERROR_TIMEOUT on its handle): invented for this test, as no capture has a GPU that stops
// answering alone. The checks that read it then say error for it.
func unreadableGPUSnapshot(t *testing.T, healthy string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h100-gpu7-unreadable")
	if out, err := exec.Command("cp", "-R", "-P", healthy, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v: %s", healthy, err, out)
	}
	path := filepath.Join(dir, "nvml.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	devices, _ := doc["devices"].([]any)
	if len(devices) != 8 {
		t.Fatalf("%s: %d devices, want 8", path, len(devices))
	}
	devices[7].(map[string]any)["error"] = "ERROR_TIMEOUT"
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
