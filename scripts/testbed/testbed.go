// Package testbed runs scripts/slurm-testbed.sh for tests that need a real Slurm: slurmctld
// and N slurmd (nodes n1 and n2 by default) with munge, on free ports, in a temporary
// directory. Two versions: Debian 12's Slurm 22.05 on the host, and Debian 13's 24.11 in a
// Debian 13 root that the script builds once (about 30 s) and caches in
// /var/cache/nodecheck-testbed; each 24.11 bed runs in its own overlay of it, and every Slurm
// program and every program Slurm starts (the hooks, nodecheck) runs in there.
//
// Tests run once per version with ForEachVersion (subtests named by the version slurmctld -V
// prints: TestSlurm/22.05.8/..., TestSlurm/24.11.5/...), or against one with Start:
//
//	testbed.ForEachVersion(t, testbed.Options{RepoRoot: "../.."}, func(t *testing.T, b *testbed.Bed) { ... })
//	b := testbed.Start(t, testbed.Options{RepoRoot: "../..", Slurm: testbed.Slurm2411, Nodes: 256, NodeWidth: 3})
//
// Commands run as on the bed's nodes with b.Command and b.Slurm (in the root for 24.11);
// b.SlurmBin is a directory of wrappers for a program that takes one (fleet-sweep --slurm-bin).
//
// With Options.Reboot, `scontrol reboot` "reboots" a node: its slurmd starts again with a later
// boot time and the node gets a new boot id (reboot.go). InstallNvidiaSMIStandin and
// Bed.NvidiaSMIStandin put in place a simulated `nvidia-smi --gpu-reset` (nvsmi.go).
//
// A test bed needs root, and Debian's Slurm packages (scripts/slurm-testbed.sh install) or, for
// 24.11, mmdebstrap and a Debian mirror (install --slurm 24.11). Without them Start skips the
// test, except in CI (CI=true), where a test bed that cannot start fails it; under -short it
// always skips. NODECHECK_TESTBED_SLURM ("22.05", "24.11" or both, comma-separated) limits the
// versions ForEachVersion runs; by default it runs both. A bed stops and its files go when its
// test ends, passed or failed; NODECHECK_TESTBED_KEEP=1 keeps the files.
package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Slurm versions a test bed runs.
const (
	Slurm2205 = "22.05" // Debian 12's slurm-wlm 22.05.8, installed on the host
	Slurm2411 = "24.11" // Debian 13's slurm-wlm 24.11.5, in a cached Debian 13 root
)

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
	// Slurm is the version: Slurm2205 (the default) or Slurm2411. ForEachVersion sets it.
	Slurm string
	// Nodes is the number of slurmd (default 2), named NodePrefix (default "n") and the
	// number, zero-padded to NodeWidth digits (n001 with 3).
	Nodes      int
	NodePrefix string
	NodeWidth  int
	// HealthInterval is slurm.conf's HealthCheckInterval in seconds (default 2, or 60 above 16
	// nodes: 256 idle nodes would run 128 hooks a second).
	HealthInterval int
	// Reboot sets RebootProgram to the bed's slurmd-reboot: `scontrol reboot` restarts that
	// node's slurmd with a later boot time and a new boot id (see reboot.go).
	Reboot bool
	// ReturnToService is slurm.conf's ReturnToService: 1 or 2; 0 means the bed's default, 2.
	ReturnToService int
	// ResumeTimeout is slurm.conf's ResumeTimeout, how long Slurm waits for a rebooted node
	// (whole seconds; 0: Slurm's default, 60 s).
	ResumeTimeout time.Duration
	// SchedulerParameters is slurm.conf's SchedulerParameters ("" for none): extra_constraints
	// makes 23.11+ filter nodes on their Extra for --extra.
	SchedulerParameters string
	// ExtraConf is appended to the bed's slurm.conf (PreemptType, more partitions); empty
	// for none.
	ExtraConf string
	// ExtraConfFor adds lines for one version (Slurm2205 or Slurm2411) after ExtraConf in
	// ForEachVersion: keys one version refuses (PreemptParameters is 23.02 and later).
	ExtraConfFor map[string]string
	// Topology is written to topology.conf beside slurm.conf before Slurm starts; empty for
	// none.
	Topology string
	// Accounting (Slurm 22.05 only) runs a private MariaDB and slurmdbd with the bed
	// (NODECHECK_TESTBED_ACCOUNTING=1, scripts/testbed/accounting.sh): slurm.conf's
	// AccountingStorageType is accounting_storage/slurmdbd, and the cluster, an account
	// "testbed" and the user root exist, so a test can make QOS with b.Slurm(t, "sacctmgr", "-i", ...).
	// Two more ports: slurmdbd's and MariaDB's, after the nodes'.
	Accounting bool
}

// Bed is a running scripts/slurm-testbed.sh.
type Bed struct {
	Tmp       string   // the temporary directory: the test bed and the nodecheck binary
	Dir       string   // NODECHECK_TESTBED_DIR, in Tmp
	Conf      string   // its slurm.conf
	Nodecheck string   // nodecheck (./cmd/nodecheck), built with CGO_ENABLED=0, in Tmp
	Env       []string // the environment slurm-testbed.sh runs with
	RepoRoot  string   // Options.RepoRoot
	Series    string   // Slurm2205 or Slurm2411
	Version   string   // what slurmctld -V prints: "slurm-wlm 24.11.5"
	Nodes     []string // the nodes, all in partition debug
	// Root is where the bed's Slurm runs: "" for the host, else its Debian 13 root (an overlay
	// mount), where the host's temporary directory and the repository (read-only) appear at the
	// same paths, so that every path a test passes means the same there.
	Root string
	// SlurmBin holds sbatch, squeue, sinfo, scontrol, scancel, srun...: wrappers that run the
	// bed's own clients from the host (in Root for 24.11).
	SlurmBin string
	script   string
}

// Versions are the Slurm versions ForEachVersion runs: NODECHECK_TESTBED_SLURM if set ("22.05",
// "24.11", "22.05,24.11"), else both.
func Versions() []string {
	env := strings.FieldsFunc(os.Getenv("NODECHECK_TESTBED_SLURM"), func(r rune) bool { return r == ',' || r == ' ' })
	if len(env) == 0 {
		return []string{Slurm2205, Slurm2411}
	}
	return env
}

// ForEachVersion runs fn in one subtest per version (Versions), named by the version its
// slurmctld -V prints ("22.05.8"), each with its own test bed (Start, with opts.Slurm set).
// The versions run one after the other: the machines these tests run on have 2 cores.
func ForEachVersion(t *testing.T, opts Options, fn func(t *testing.T, b *Bed)) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + opts.Short)
	}
	for _, v := range Versions() {
		start := time.Now()
		version, err := prepare(opts.RepoRoot, v)
		name := v
		if f := strings.Fields(version); err == nil && len(f) > 0 {
			name = f[len(f)-1]
		}
		t.Run(name, func(t *testing.T) {
			if err != nil {
				unavailable(t, "Slurm %s: %v", v, err)
			}
			t.Logf("slurmctld -V: %s (ready after %s)", version, time.Since(start).Round(time.Millisecond))
			o := opts
			o.Slurm = v
			o.ExtraConf += opts.ExtraConfFor[v]
			fn(t, Start(t, o))
		})
	}
}

// unavailable skips t for want of a real Slurm, or fails it in CI.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Slurm test bed cannot start in CI: %s", msg)
	}
	t.Skipf("no real Slurm here (%s): run as root after `scripts/slurm-testbed.sh install [--slurm 24.11]`; CI runs this test", msg)
}

// scriptEnv is the environment slurm-testbed.sh runs with: off CI, it never runs apt-get.
func scriptEnv(extra ...string) []string {
	env := os.Environ()
	if os.Getenv("CI") != "true" {
		env = append(env, "NODECHECK_TESTBED_NO_APT=1")
	}
	return append(env, extra...)
}

// prepare installs version v where it may (CI: packages and the root; elsewhere: only the root,
// where mmdebstrap is installed) and returns what its slurmctld -V prints.
func prepare(repoRoot, v string) (string, error) {
	if v != Slurm2205 && v != Slurm2411 {
		return "", fmt.Errorf("NODECHECK_TESTBED_SLURM: unknown version %q, want %s or %s", v, Slurm2205, Slurm2411)
	}
	if os.Geteuid() != 0 {
		return "", errors.New("not root")
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "slurm-testbed.sh"))
	if err != nil {
		return "", err
	}
	var out []byte
	for _, cmd := range []string{"install", "version"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // apt-get, mmdebstrap
		c := exec.CommandContext(ctx, script, cmd, "--slurm", v)
		c.Env = scriptEnv()
		c.WaitDelay = time.Second
		out, err = c.CombinedOutput()
		cancel()
		if err != nil {
			return "", fmt.Errorf("slurm-testbed.sh %s --slurm %s: %v\n%s", cmd, v, err, out)
		}
	}
	return strings.TrimSpace(string(out)), nil
}

// fill sets the defaults of the options a test left zero.
func (o *Options) fill() {
	if o.Slurm == "" {
		o.Slurm = Slurm2205
	}
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	if o.NodePrefix == "" {
		o.NodePrefix = "n"
	}
}

// tempDir makes the bed's temporary directory, removed when t ends, passed or failed (the
// daemons' last log lines are logged on failure, see stop), unless NODECHECK_TESTBED_KEEP=1
// asks to keep it, or something is mounted under it.
func tempDir(t *testing.T, opts Options) string {
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
		if os.Getenv("NODECHECK_TESTBED_KEEP") == "1" {
			t.Logf("test bed files kept in %s (NODECHECK_TESTBED_KEEP=1): remove them when done", tmp)
			return
		}
		// The bed's root is mounted outside tmp; never remove through a mount all the same.
		if m := mountsUnder(tmp); len(m) > 0 {
			t.Errorf("not removing %s: mounted there: %v", tmp, m)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			t.Errorf("remove the test bed's files: %v", err)
		}
		if t.Failed() {
			t.Logf("test bed files in %s removed; NODECHECK_TESTBED_KEEP=1 keeps them", tmp)
		}
	})
	return tmp
}

// stop stops the bed's daemons and, when t failed, logs the last lines of their logs.
func (b *Bed) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // 256 slurmd, jobs left
	defer cancel()
	if out, err := b.runScript(ctx, "stop"); err != nil {
		t.Errorf("stop the test bed: %v\n%s", err, out)
	}
	if t.Failed() {
		logs := []string{"slurmctld.log"}
		for _, n := range b.Nodes[:min(len(b.Nodes), 4)] {
			logs = append(logs, "slurmd-"+n+".log")
		}
		for _, f := range logs {
			data, _ := os.ReadFile(filepath.Join(b.Dir, "log", f))
			t.Logf("%s, last lines:\n%s", f, tail(string(data), 15))
		}
	}
}

// buildNodecheck builds the nodecheck binary the bed's hooks and tests run, without cgo.
func buildNodecheck(t *testing.T, repoRoot, dest string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", dest, "./cmd/nodecheck")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nodecheck: %v\n%s", err, out)
	}
}

// confEnv is the environment that tells slurm-testbed.sh the options shaping slurm.conf: the
// health check interval, reboots, SchedulerParameters, and the extra slurm.conf lines and the
// topology.conf, which it writes to files in tmp for the script to read.
func (o Options) confEnv(tmp string) ([]string, error) {
	var env []string
	if o.HealthInterval != 0 {
		env = append(env, "NODECHECK_TESTBED_HEALTH_INTERVAL="+strconv.Itoa(o.HealthInterval))
	}
	env = append(env, rebootEnv(o)...)
	if o.SchedulerParameters != "" {
		env = append(env, "NODECHECK_TESTBED_SCHEDULER_PARAMETERS="+o.SchedulerParameters)
	}
	for _, f := range []struct{ text, file, key string }{
		{o.ExtraConf, "extra.conf", "NODECHECK_TESTBED_EXTRA_CONF"},
		{o.Topology, "topology.conf", "NODECHECK_TESTBED_TOPOLOGY"},
	} {
		if f.text == "" {
			continue
		}
		path := filepath.Join(tmp, f.file)
		if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
			return nil, err
		}
		env = append(env, f.key+"="+path)
	}
	return env, nil
}

// Start builds nodecheck and starts a test bed for t and its subtests, stopped when t ends.
func Start(t *testing.T, opts Options) *Bed {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + opts.Short)
	}
	if os.Geteuid() != 0 {
		unavailable(t, "not root")
	}
	opts.fill()
	if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil && opts.Slurm == Slurm2205 && os.Getenv("CI") != "true" {
		unavailable(t, "Slurm is not installed")
	}
	script, err := filepath.Abs(filepath.Join(opts.RepoRoot, "scripts", "slurm-testbed.sh"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(opts.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := tempDir(t, opts)
	b := &Bed{Tmp: tmp, Dir: filepath.Join(tmp, "testbed"), Nodecheck: filepath.Join(tmp, "nodecheck"),
		RepoRoot: opts.RepoRoot, Series: opts.Slurm, script: script}
	b.Conf = filepath.Join(b.Dir, "etc", "slurm.conf")
	b.SlurmBin = filepath.Join(b.Dir, "slurm-bin")
	for i := 1; i <= opts.Nodes; i++ {
		b.Nodes = append(b.Nodes, fmt.Sprintf("%s%0*d", opts.NodePrefix, opts.NodeWidth, i))
	}

	buildNodecheck(t, opts.RepoRoot, b.Nodecheck)

	acctEnv := accountingEnv(t, opts) // before the lock: it may skip t
	unlock, err := lockPorts()
	if err != nil {
		t.Fatal(err)
	}
	port, err := FreePorts(opts.Nodes + 1 + accountingPorts(opts))
	if err != nil {
		unlock()
		unavailable(t, "no free ports: %v", err)
	}
	b.Env = scriptEnv("NODECHECK_TESTBED_DIR="+b.Dir, "NODECHECK_TESTBED_SLURM="+opts.Slurm,
		"NODECHECK_TESTBED_NODES="+strings.Join(b.Nodes, " "), "NODECHECK_TESTBED_PORT="+strconv.Itoa(port),
		// In the 24.11 root: the nodecheck binary, the test's temporary files and the
		// repository's snapshots, at the paths the test knows them by.
		"NODECHECK_TESTBED_BIND="+os.TempDir()+" "+repo+":ro")
	confEnv, err := opts.confEnv(tmp)
	if err != nil {
		unlock()
		t.Fatal(err)
	}
	b.Env = append(append(b.Env, acctEnv...), confEnv...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // apt-get or the root, in CI
	defer cancel()
	started := time.Now()
	out, err := b.runScript(ctx, "start")
	unlock() // the daemons have bound their ports, or failed
	t.Cleanup(func() { b.stop(t) })
	if err != nil {
		unavailable(t, "scripts/slurm-testbed.sh start: %v\n%s", err, out)
	}
	if b.Root, err = b.state("MERGED"); err != nil {
		t.Fatal(err)
	}
	if out, err := b.runScript(ctx, "version"); err != nil {
		t.Fatalf("slurm-testbed.sh version: %v\n%s", err, out)
	} else {
		b.Version = strings.TrimSpace(out)
	}
	t.Logf("Slurm %s test bed (%s), %d nodes, up after %s", b.Series, b.Version, len(b.Nodes), time.Since(started).Round(time.Millisecond))
	return b
}

// script_ runs slurm-testbed.sh CMD for this bed.
func (b *Bed) runScript(ctx context.Context, cmd string) (string, error) {
	c := exec.CommandContext(ctx, b.script, cmd)
	c.Env = b.Env
	c.WaitDelay = time.Second
	out, err := c.CombinedOutput()
	return string(out), err
}

// state reads KEY from what slurm-testbed.sh start recorded.
func (b *Bed) state(key string) (string, error) {
	data, err := os.ReadFile(filepath.Join(b.Dir, "run", "testbed.state"))
	if err != nil {
		return "", fmt.Errorf("the test bed's state: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("the test bed's state has no %s:\n%s", key, data)
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"(cannot read /proc/self/mountinfo: " + err.Error() + ")"}
	}
	var m []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			p := strings.ReplaceAll(f[4], `\040`, " ")
			if p == dir || strings.HasPrefix(p, dir+"/") {
				m = append(m, p)
			}
		}
	}
	return m
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreePorts finds n consecutive free TCP ports on the loopback address and returns the first.
// They lie below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), where
// no outgoing connection can take one between this check and the daemon's bind: with 256
// slurmd connecting to slurmctld, one in the range did, and that slurmd died.
func FreePorts(n int) (int, error) {
	const floor = 10000
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	if low-floor <= n {
		return 0, fmt.Errorf("no room for %d ports between %d and the ephemeral range at %d", n, floor, low)
	}
	for range 50 {
		base := floor + rand.IntN(low-floor-n)
		ok := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no run of free ports found")
}

// lockPorts serialises choosing ports and starting a test bed on them among the test beds of
// this machine (go test runs packages in parallel), so that two never pick the same free ports
// before either binds them. The returned func unlocks.
func lockPorts() (func(), error) {
	if err := os.MkdirAll("/run/nodecheck-testbed", 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile("/run/nodecheck-testbed/ports.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
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

// Command runs path (an absolute path) where the bed's nodes run programs: on the host for
// 22.05, in the bed's root for 24.11, from / either way.
func (b *Bed) Command(ctx context.Context, path string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if b.Root == "" {
		cmd = exec.CommandContext(ctx, path, args...)
	} else {
		cmd = exec.CommandContext(ctx, "/usr/sbin/chroot", append([]string{b.Root, path}, args...)...)
	}
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	return cmd
}

// Path is where the host finds path as the bed's programs see it (in Root for 24.11).
func (b *Bed) Path(path string) string {
	return filepath.Join(b.Root, path)
}

// Slurm runs the bed's own Slurm client prog (/usr/bin/PROG, in the root for 24.11) against
// the test bed, from /, and returns its stdout; a failure fails t.
func (b *Bed) Slurm(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := b.Command(ctx, "/usr/bin/"+prog, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+b.Conf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (Slurm %s): %v: %s", prog, strings.Join(args, " "), b.Series, err, stderr.String())
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

// Reset brings the test bed back to idle nodes without jobs, drains, pending reboots or hooks,
// with one Slurm call per step for all nodes. Slurm 24.11 keeps a reason on a resumed node
// (observed: `State=RESUME` leaves it, sinfo %E shows it), so there an idle node may still
// carry the last one.
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
	b.resetReboots(t)
	var resume []string
	for n, st := range b.States(t) {
		if strings.HasPrefix(st, "drain") || strings.HasPrefix(st, "down") {
			resume = append(resume, n)
		}
	}
	if len(resume) > 0 {
		b.Slurm(t, "scontrol", "update", "NodeName="+strings.Join(resume, ","), "State=RESUME")
	}
	// A node that does not respond yet (idle*) is skipped by the sweep and fails a job.
	var st map[string]string
	WaitFor(t, "every node to be idle", 20*time.Second, func() bool {
		st = b.States(t)
		for _, n := range b.Nodes {
			if st[n] != "idle" {
				return false
			}
		}
		return true
	})
}

// States maps each node to its long state as sinfo prints it ("idle", "drained", "idle*"), in
// one call for all nodes.
func (b *Bed) States(t *testing.T) map[string]string {
	t.Helper()
	st := map[string]string{}
	for _, line := range strings.Split(b.Slurm(t, "sinfo", "-h", "-N", "-o", "%N %T"), "\n") {
		if n, s, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			st[n] = s
		}
	}
	return st
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

// accountingPorts is how many ports Options.Accounting takes after the nodes': slurmdbd's
// (PORT+N+1) and MariaDB's (PORT+N+2).
func accountingPorts(opts Options) int {
	if opts.Accounting {
		return 2
	}
	return 0
}

// accountingEnv is the script's environment for Options.Accounting; where slurmdbd or MariaDB
// is not installed (off CI, where the script never runs apt-get), t skips.
func accountingEnv(t *testing.T, opts Options) []string {
	t.Helper()
	if !opts.Accounting {
		return nil
	}
	if opts.Slurm != Slurm2205 {
		t.Fatalf("Options.Accounting: only with Slurm %s, not %s", Slurm2205, opts.Slurm)
	}
	if os.Getenv("CI") != "true" {
		for _, p := range []string{"/usr/sbin/slurmdbd", "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db"} {
			if _, err := os.Stat(p); err != nil {
				unavailable(t, "accounting: %s is not installed (apt-get install slurmdbd mariadb-server)", p)
			}
		}
	}
	return []string{"NODECHECK_TESTBED_ACCOUNTING=1"}
}
