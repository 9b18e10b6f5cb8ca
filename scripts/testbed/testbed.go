// Package testbed runs scripts/slurm-testbed.sh for tests that need a real Slurm: slurmctld
// and two slurmd (nodes n1 and n2) with munge, on free ports, in a temporary directory.
//
// A test bed needs root and Debian's Slurm packages (scripts/slurm-testbed.sh install).
// Without them Start skips the test, except in CI (CI=true), where a test bed that cannot
// start fails it; under -short it always skips.
package testbed

import (
	"bytes"
	"context"
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

// Nodes are the test bed's nodes, all in partition debug.
var Nodes = []string{"n1", "n2"}

// Options say what a test needs besides the test bed itself.
type Options struct {
	// RepoRoot is the repository's root, relative to the test's package directory.
	RepoRoot string
	// TempPrefix names the temporary directory (os.MkdirTemp's pattern).
	TempPrefix string
	// Short is why the test skips under -short.
	Short string
	// TempMode, if not 0, is the temporary directory's mode (os.MkdirTemp makes it 0700).
	TempMode os.FileMode
}

// Bed is a running scripts/slurm-testbed.sh.
type Bed struct {
	Tmp       string   // the temporary directory: the test bed and the nodecheck binary
	Dir       string   // NODECHECK_TESTBED_DIR, in Tmp
	Conf      string   // its slurm.conf
	Nodecheck string   // nodecheck (./cmd/nodecheck), built with CGO_ENABLED=0, in Tmp
	Env       []string // the environment slurm-testbed.sh runs with
	RepoRoot  string   // Options.RepoRoot
}

// Start builds nodecheck and starts a test bed for t and its subtests, stopped when t ends.
func Start(t *testing.T, opts Options) *Bed {
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
		t.Skip("-short: " + opts.Short)
	}
	if os.Geteuid() != 0 {
		unavailable("not root")
	}
	if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil && os.Getenv("CI") != "true" {
		unavailable("Slurm is not installed")
	}
	script, err := filepath.Abs(filepath.Join(opts.RepoRoot, "scripts", "slurm-testbed.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", opts.TempPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if opts.TempMode != 0 {
		if err := os.Chmod(tmp, opts.TempMode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(tmp)
		} else {
			t.Logf("test bed files kept in %s", tmp)
		}
	})
	b := &Bed{Tmp: tmp, Dir: filepath.Join(tmp, "testbed"), Nodecheck: filepath.Join(tmp, "nodecheck"), RepoRoot: opts.RepoRoot}
	b.Conf = filepath.Join(b.Dir, "etc", "slurm.conf")

	build := exec.Command("go", "build", "-o", b.Nodecheck, "./cmd/nodecheck")
	build.Dir = opts.RepoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nodecheck: %v\n%s", err, out)
	}

	port, err := FreePorts(3)
	if err != nil {
		unavailable("no free ports: %v", err)
	}
	b.Env = append(os.Environ(), "NODECHECK_TESTBED_DIR="+b.Dir, "NODECHECK_TESTBED_NODES="+strings.Join(Nodes, " "), "NODECHECK_TESTBED_PORT="+strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // apt-get, in CI
	defer cancel()
	start := exec.CommandContext(ctx, script, "start")
	start.Env = b.Env
	start.WaitDelay = time.Second
	out, err := start.CombinedOutput()
	t.Cleanup(func() {
		stop := exec.Command(script, "stop")
		stop.Env = b.Env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("stop the test bed: %v\n%s", err, out)
		}
		if t.Failed() {
			logs := []string{"slurmctld.log"}
			for _, n := range Nodes {
				logs = append(logs, "slurmd-"+n+".log")
			}
			for _, f := range logs {
				data, _ := os.ReadFile(filepath.Join(b.Dir, "log", f))
				t.Logf("%s, last lines:\n%s", f, tail(string(data), 15))
			}
		}
	})
	if err != nil {
		unavailable("scripts/slurm-testbed.sh start: %v\n%s", err, out)
	}
	return b
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreePorts finds n consecutive free TCP ports on the loopback address and returns the first.
func FreePorts(n int) (int, error) {
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

// Snapshot returns the absolute path of testdata/snapshots/NAME; where it is missing (a
// module cache), t skips.
func (b *Bed) Snapshot(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(b.RepoRoot, "testdata", "snapshots", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "meta.json")); err != nil {
		t.Skipf("snapshot %s is not here (module cache?): %v", name, err)
	}
	return p
}

// Slurm runs a Slurm client against the test bed, from /, and returns its stdout; a failure
// fails t.
func (b *Bed) Slurm(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/"+prog, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+b.Conf)
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", prog, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// WaitFor polls cond every 100 ms until it holds; after timeout it fails t.
func WaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SinfoState is a node's short state as sinfo prints it ("idle", "drain", "drng").
func (b *Bed) SinfoState(t *testing.T, node string) string {
	t.Helper()
	return strings.TrimSpace(b.Slurm(t, "sinfo", "-h", "-N", "-n", node, "-o", "%t"))
}

// WaitState waits for a node's short state; right after a resume a node reads "idle*" for a
// moment.
func (b *Bed) WaitState(t *testing.T, node, state string) {
	t.Helper()
	WaitFor(t, node+" to be "+state, 20*time.Second, func() bool { return b.SinfoState(t, node) == state })
}

// Reset brings the test bed back to idle nodes without jobs, drains, reasons or hooks.
func (b *Bed) Reset(t *testing.T) {
	t.Helper()
	hooks, _ := filepath.Glob(filepath.Join(b.Dir, "hooks", "*"))
	for _, h := range hooks {
		if err := os.Remove(h); err != nil {
			t.Fatal(err)
		}
	}
	b.Slurm(t, "scancel", "--full", "--partition=debug")
	WaitFor(t, "no jobs", 30*time.Second, func() bool { return strings.TrimSpace(b.Slurm(t, "squeue", "-h")) == "" })
	for _, n := range Nodes {
		st := strings.TrimSpace(b.Slurm(t, "sinfo", "-h", "-N", "-n", n, "-o", "%T"))
		if strings.HasPrefix(st, "drain") || strings.HasPrefix(st, "down") {
			b.Slurm(t, "scontrol", "update", "NodeName="+n, "State=RESUME")
		}
	}
	// A node that does not respond yet (idle*) is skipped by the sweep and fails a job.
	for _, n := range Nodes {
		b.WaitState(t, n, "idle")
	}
}

// Config writes a nodecheck.toml with its state directory beside it, plus extra, and returns
// its path. Unless extra has a [drain] table, it sets no limit on drained nodes: with two
// test nodes the default 10% would hold back every drain after the first.
func (b *Bed) Config(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "nodecheck.toml")
	body := fmt.Sprintf("[state]\ndir = %q\n", filepath.Join(dir, "state"))
	if !strings.Contains(extra, "[drain]") {
		body += "[drain]\nmax_drained = \"\"\n"
	}
	if err := os.WriteFile(path, []byte(body+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Hook makes Slurm's hook for node and context ("prolog", "epilog", "health") run argv (see
// scripts/nodecheck-hook); Reset removes it.
func (b *Bed) Hook(t *testing.T, node, context string, argv ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.Dir, "hooks", node+"."+context), []byte(strings.Join(argv, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// HookFile reads what a hook wrote: NODE.CONTEXT.out (stdout), .err (logs), .env; "" if
// nothing.
func (b *Bed) HookFile(node, name string) string {
	data, _ := os.ReadFile(filepath.Join(b.Dir, "hooks", node+"."+name))
	return string(data)
}
