package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config/files"
)

// Issue 12 item 5: a FIFO, a device or an oversized file in each place nodecheck reads must
// not hold a run past its budget; a run that blocks anyway is ended by the watchdog; SIGTERM
// ends a blocked run promptly. These tests run the built binary as a process, as slurmd does.

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// nodecheckBinary builds the nodecheck binary once per test process and returns its path.
func nodecheckBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "nodecheck-bin")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "nodecheck")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		// go-nvml's header marks calls deprecated; gcc's warnings about them are noise here.
		cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is one finished nodecheck process.
type proc struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (p proc) output() string { return p.stdout + p.stderr }

// env for each mode, as slurmd sets it (no PATH: hooks get none).
var modeEnv = map[string][]string{
	"prolog": {"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_ID=42", "SLURMD_NODENAME=gpu-h100-01"},
	"epilog": {"SLURM_SCRIPT_CONTEXT=epilog_slurmd", "SLURM_JOB_ID=42", "SLURMD_NODENAME=gpu-h100-01"},
	"health": {"SLURMD_NODENAME=gpu-h100-01"},
	"manual": {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
}

// startNodecheck starts the binary in mode with args; stdout may be nil (a buffer).
func startNodecheck(t *testing.T, mode string, stdout *os.File, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(nodecheckBinary(t), args...)
	cmd.Env = modeEnv[mode]
	var out, errb bytes.Buffer
	if stdout != nil {
		cmd.Stdout = stdout
	} else {
		cmd.Stdout = &out
	}
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the process does not outlive the test.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out, &errb
}

// runNodecheck runs the binary in mode to its end, or kills it after 30 s.
func runNodecheck(t *testing.T, mode string, args ...string) proc {
	t.Helper()
	nodecheckBinary(t) // built before the clock starts
	start := time.Now()
	cmd, out, errb := startNodecheck(t, mode, nil, args...)
	return waitNodecheck(t, cmd, out, errb, start)
}

func waitNodecheck(t *testing.T, cmd *exec.Cmd, out, errb *bytes.Buffer, start time.Time) proc {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("nodecheck %v still running after 30 s; stderr:\n%s", cmd.Args, errb)
	}
	p := proc{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		p.code = ee.ExitCode()
	default:
		t.Fatalf("nodecheck %v: %v; stderr:\n%s", cmd.Args, err, p.stderr)
	}
	return p
}

// badFile is a kind of file a read that expects a regular one must refuse at once.
type badFile struct {
	name string
	make func(t *testing.T, path string, limit int64)
	says string // in the error
}

var badFiles = []badFile{
	{"fifo", func(t *testing.T, p string, _ int64) { makeFIFO(t, p, false) }, "is a named pipe (FIFO), not a regular file"},
	{"fifo-with-silent-writer", func(t *testing.T, p string, _ int64) { makeFIFO(t, p, true) }, "is a named pipe (FIFO), not a regular file"},
	{"char-device", makeCharDevice, "is a character device, not a regular file"},
	{"oversized", func(t *testing.T, p string, limit int64) { makeSparse(t, p, limit+1) }, "file too large"},
}

// makeFIFO replaces path with a FIFO; with writer, the test holds a writer end that never
// writes, so that a read which opened it would block for ever (as on a hung NFS mount).
func makeFIFO(t *testing.T, path string, writer bool) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if writer {
		w, err := os.OpenFile(path, os.O_RDWR, 0) // O_CLOEXEC: nodecheck does not inherit it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
}

// makeCharDevice replaces path with a character device 1:5, the numbers of /dev/zero.
func makeCharDevice(t *testing.T, path string, _ int64) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
		t.Skipf("mknod needs root: %v", err)
	}
}

// makeSparse replaces path with a file of size bytes that takes no disk.
func makeSparse(t *testing.T, path string, size int64) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// copySnapshot copies testdata/snapshots/NAME (links kept) to a new directory.
func copySnapshot(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", filepath.Join(repoRoot, "testdata", "snapshots", name), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	return dst
}

// writeConfig writes a root-owned, 0644 nodecheck.toml with body into dir and returns its path.
func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "nodecheck.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A place is where nodecheck reads a file it does not own: setup returns the file to spoil,
// its size limit, and the command line; the run must end by the mode's budget plus 1 s,
// with code, saying what the file is.
type place struct {
	name  string
	mode  string
	setup func(t *testing.T, dir string) (file string, limit int64, args []string)
	code  int // -1: any code but 1 (the node is not judged unhealthy for nodecheck's own input)
	says  string
}

const (
	mib           = 1 << 20
	configLimit   = 1 * mib  // config.maxConfigSize
	nodeFileLimit = 4 * mib  // node.DefaultMaxFileSize
	snapJSONLimit = 64 * mib // node.snapshotJSONLimit
)

// liveSlurmDir writes a slurm.conf (with gres.conf beside it) for a node of this machine's
// host name into dir and returns the slurm.conf path; extra lines are appended.
func liveSlurmDir(t *testing.T, dir, extra string) string {
	t.Helper()
	conf := filepath.Join(dir, "slurm.conf")
	body := "ClusterName=t\nSlurmctldHost=localhost\nGresTypes=gpu\nNodeName=gpu-h100-01 Gres=gpu:h100:1 CPUs=1 State=UNKNOWN\n" + extra
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("Name=gpu Type=h100 File=/dev/nvidia0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

var places = []place{
	{"config-flag-prolog", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		p := filepath.Join(dir, "nodecheck.toml")
		return p, configLimit, []string{"run", "--config", p, "--snapshot", copySnapshot(t, "h100-healthy")}
	}, exitHealthy, "CONFIG ERROR"},
	{"config-flag-manual", "manual", func(t *testing.T, dir string) (string, int64, []string) {
		p := filepath.Join(dir, "nodecheck.toml")
		return p, configLimit, []string{"run", "--config", p, "--slurm-conf", liveSlurmDir(t, dir, "")}
	}, exitCannotRun, "read nodecheck config"},
	{"config-check", "manual", func(t *testing.T, dir string) (string, int64, []string) {
		p := filepath.Join(dir, "nodecheck.toml")
		return p, configLimit, []string{"config", "check", p}
	}, exitCannotRun, "read nodecheck config"},
	{"config-default-path-in-snapshot", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "fs/etc/nodecheck/nodecheck.toml"), nodeFileLimit, []string{"run", "--snapshot", s}
	}, exitHealthy, "CONFIG ERROR"},
	{"slurm.conf-live", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		conf := liveSlurmDir(t, dir, "")
		return conf, nodeFileLimit, []string{"run", "--slurm-conf", conf, "--node", "gpu-h100-01", "--check", "gpu_count", "--config", writeConfig(t, t.TempDir(), "[drain]\nenabled = false\n")}
	}, -1, "slurm.conf: "},
	{"slurm.conf-snapshot", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "fs/etc/slurm/slurm.conf"), nodeFileLimit, []string{"run", "--snapshot", s}
	}, -1, "/etc/slurm/slurm.conf: "},
	{"gres.conf-live", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		conf := liveSlurmDir(t, dir, "")
		return filepath.Join(dir, "gres.conf"), nodeFileLimit, []string{"run", "--slurm-conf", conf, "--node", "gpu-h100-01", "--check", "gres_devices", "--config", writeConfig(t, t.TempDir(), "[drain]\nenabled = false\n")}
	}, -1, "gres.conf: "},
	{"gres.conf-snapshot", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "fs/etc/slurm/gres.conf"), nodeFileLimit, []string{"run", "--snapshot", s}
	}, -1, "/etc/slurm/gres.conf: "},
	{"include-live", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		extra := filepath.Join(dir, "nodes.conf")
		conf := liveSlurmDir(t, dir, "Include "+extra+"\n")
		return extra, nodeFileLimit, []string{"run", "--slurm-conf", conf, "--node", "gpu-h100-01", "--check", "gpu_count", "--config", writeConfig(t, t.TempDir(), "[drain]\nenabled = false\n")}
	}, -1, "nodes.conf: "},
	{"meta.json", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "meta.json"), snapJSONLimit, []string{"run", "--snapshot", s}
	}, exitCannotRun, "read meta.json: "},
	{"nvml.json", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "nvml.json"), snapJSONLimit, []string{"run", "--snapshot", s}
	}, exitCannotRun, "read nvml.json: "},
	{"devices.json", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "devices.json"), snapJSONLimit, []string{"run", "--snapshot", s}
	}, exitCannotRun, "read devices.json: "},
	{"commands.json", "manual", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		return filepath.Join(s, "commands.json"), snapJSONLimit, []string{"run", "--snapshot", s}
	}, exitCannotRun, "read commands.json: "},
	{"snapshot-fs-sysfs-attribute", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		s := copySnapshot(t, "h100-healthy")
		ports, err := filepath.Glob(filepath.Join(s, "fs/sys/class/infiniband/*/ports/1/state"))
		if err != nil || len(ports) == 0 {
			t.Fatalf("no IB port state in the snapshot: %v", err)
		}
		return ports[0], 4096, []string{"run", "--snapshot", s, "--check", "ib_ports"}
	}, -1, "/ports/1/state: "},
	{"drain.json", "health", func(t *testing.T, dir string) (string, int64, []string) {
		state := filepath.Join(dir, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, t.TempDir(), fmt.Sprintf("[drain]\nscontrol = %q\nsinfo = %q\n[state]\ndir = %q\n", "/nonexistent/scontrol", "/nonexistent/sinfo", state))
		return filepath.Join(state, "drain.json"), 1 * mib, []string{"run", "--snapshot", copySnapshot(t, "h100-healthy"), "--config", cfg, "--resume", "--node", "gpu-h100-01"}
	}, -1, "drain.json: "},
	{"nccl-state", "prolog", func(t *testing.T, dir string) (string, int64, []string) {
		state := filepath.Join(dir, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, t.TempDir(), fmt.Sprintf("[drain]\nenabled = false\n[state]\ndir = %q\n", state))
		return filepath.Join(state, "nccl_allreduce.json"), nodeFileLimit, []string{"run", "--config", cfg, "--slurm-conf", liveSlurmDir(t, dir, ""), "--node", "gpu-h100-01", "--check", "nccl_allreduce"}
	}, -1, "nccl_allreduce.json: "},
}

// budgets are the default budget of each mode; manual has none, and its runs must be prompt
// all the same.
var budgets = map[string]time.Duration{"prolog": 5 * time.Second, "epilog": 30 * time.Second, "health": 50 * time.Second, "manual": 5 * time.Second}

// TestBadFilesEndInBudget runs nodecheck with a FIFO, a FIFO with a writer that never writes,
// a character device and an oversized file in each place it reads a file it does not own.
func TestBadFilesEndInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, pl := range places {
		for _, bf := range badFiles {
			t.Run(pl.name+"/"+bf.name, func(t *testing.T) {
				dir := t.TempDir()
				file, limit, args := pl.setup(t, dir)
				bf.make(t, file, limit)
				p := runNodecheck(t, pl.mode, args...)
				t.Logf("%s run ended after %s, exit %d", pl.mode, p.took.Round(time.Millisecond), p.code)
				if limit := budgets[pl.mode] + time.Second; p.took > limit {
					t.Errorf("the run took %s, over the %s budget plus 1 s", p.took, budgets[pl.mode])
				}
				if pl.code >= 0 && p.code != pl.code || pl.code < 0 && p.code == exitUnhealthy {
					t.Errorf("exit code %d, want %d (-1: not 1); output:\n%s", p.code, pl.code, p.output())
				}
				for _, want := range []string{pl.says, bf.says} {
					if !strings.Contains(p.output(), want) {
						t.Errorf("output lacks %q:\n%s", want, p.output())
					}
				}
				for _, line := range strings.Split(p.output(), "\n") {
					if strings.Contains(line, filepath.Base(file)) && (strings.Contains(line, "does not exist") || strings.Contains(line, "no such file")) {
						t.Errorf("%s, which is there, is reported missing: %s", file, line)
					}
				}
			})
		}
	}
}

// TestDevZeroAsInput: /dev/zero itself (not a copy of its numbers) as the config and as
// slurm.conf is refused at once; it is never read until memory runs out.
func TestDevZeroAsInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := writeConfig(t, t.TempDir(), "[drain]\nenabled = false\n")
	for _, tc := range []struct {
		name string
		mode string
		args []string
		code int
		says string
	}{
		{"run --config", "manual", []string{"run", "--config", "/dev/zero"}, exitCannotRun, "read nodecheck config /dev/zero: is a character device, not a regular file"},
		{"prolog --config", "prolog", []string{"run", "--config", "/dev/zero", "--snapshot", filepath.Join(repoRoot, "testdata/snapshots/h100-healthy")}, exitHealthy, "read nodecheck config /dev/zero: is a character device"},
		{"config check", "manual", []string{"config", "check", "/dev/zero"}, exitCannotRun, "read nodecheck config /dev/zero: is a character device"},
		{"--slurm-conf", "prolog", []string{"run", "--config", cfg, "--slurm-conf", "/dev/zero", "--node", "n1", "--check", "gpu_count"}, -1, "read /dev/zero: is a character device"},
		{"lint", "manual", []string{"lint", "--slurm-conf", "/dev/zero"}, exitCannotRun, "/dev/zero: is a character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runNodecheck(t, tc.mode, tc.args...)
			t.Logf("ended after %s, exit %d", p.took.Round(time.Millisecond), p.code)
			if p.took > budgets[tc.mode]+time.Second {
				t.Errorf("took %s", p.took)
			}
			if tc.code >= 0 && p.code != tc.code || tc.code < 0 && p.code == exitUnhealthy {
				t.Errorf("exit code %d, want %d; output:\n%s", p.code, tc.code, p.output())
			}
			if !strings.Contains(p.output(), tc.says) {
				t.Errorf("output lacks %q:\n%s", tc.says, p.output())
			}
		})
	}
}

// fullPipe returns the write end of a pipe whose buffer is full and that nobody reads: a
// process writing its report there blocks, where no context reaches, as when slurmd (or a
// wrapper) stops reading a hook's stdout.
func fullPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	fd := int(w.Fd()) // Fd puts it in blocking mode; set non-blocking only to fill it
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := syscall.Write(fd, buf); err != nil {
			if err == syscall.EAGAIN {
				break
			}
			t.Fatal(err)
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWatchdog: a run blocked where no deadline reaches (writing its report to a full pipe)
// is ended at its budget plus the margin, with one line on stderr and the mode's exit code.
func TestWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	for _, tc := range []struct {
		name, mode, config string
		budget             time.Duration
		code               int
	}{
		{"prolog fails open", "prolog", "[budget]\nprolog = \"3s\"\n", 3 * time.Second, exitHealthy},
		{"prolog fail_closed", "prolog", "fail_closed = true\n[budget]\nprolog = \"3s\"\n", 3 * time.Second, exitCannotRun},
		{"epilog fails open", "epilog", "[budget]\nepilog = \"3s\"\n", 3 * time.Second, exitHealthy},
		{"health", "health", "[budget]\nhealth = \"3s\"\n", 3 * time.Second, exitCannotRun},
		{"manual with a budget", "manual", "[budget]\nmanual = \"3s\"\n[checks.nccl_allreduce]\ntimeout = \"3s\"\n[checks.dcgm_diag]\ntimeout = \"3s\"\n", 3 * time.Second, exitCannotRun},
		{"default prolog budget", "prolog", "", 5 * time.Second, exitHealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits seconds for its watchdog
			cfg := writeConfig(t, t.TempDir(), tc.config)
			if p := runNodecheck(t, "manual", "config", "check", cfg); p.code != 0 {
				t.Fatalf("the test's config is invalid:\n%s", p.output())
			}
			start := time.Now()
			cmd, out, errb := startNodecheck(t, tc.mode, fullPipe(t), "run", "--snapshot", snap, "--config", cfg)
			p := waitNodecheck(t, cmd, out, errb, start)
			t.Logf("%s with budget %s ended after %s, exit %d", tc.mode, tc.budget, p.took.Round(time.Millisecond), p.code)
			if p.took < tc.budget || p.took > tc.budget+time.Second {
				t.Errorf("ended after %s, want between the budget %s and a second more", p.took, tc.budget)
			}
			if p.code != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", p.code, tc.code, p.stderr)
			}
			if !strings.Contains(p.stderr, "nodecheck: watchdog: the "+tc.mode+" run is still going") {
				t.Errorf("stderr lacks the watchdog's line:\n%s", p.stderr)
			}
		})
	}
}

// TestSignals: SIGTERM ends a run promptly even when it is blocked where its context does
// not reach (a full stdout pipe), or waiting on a hung NVML (a snapshot whose NVML reading
// timed out hangs until the run's context is done); a second signal ends it at once.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	hung := copySnapshot(t, "h100-healthy")
	nvml, err := os.ReadFile(filepath.Join(hung, "nvml.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Every NVML reading stalls ten minutes, as a wedged GPU's calls do.
	nvml = bytes.Replace(nvml, []byte("{"), []byte(`{"delay_ms": 600000, `), 1)
	if err := os.WriteFile(filepath.Join(hung, "nvml.json"), nvml, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		mode    string
		snap    string
		stdout  bool // a full pipe as stdout
		signals []os.Signal
		code    int
		says    string
	}{
		{"SIGTERM, report blocked", "manual", snap, true, []os.Signal{syscall.SIGTERM}, exitUndecided, "nodecheck: SIGTERM: the run did not end within 50ms of it; exiting 3 without a verdict"},
		{"SIGINT, report blocked", "manual", snap, true, []os.Signal{os.Interrupt}, exitUndecided, "SIGINT"},
		{"SIGTERM, prolog report blocked", "prolog", snap, true, []os.Signal{syscall.SIGTERM}, exitHealthy, "exiting 0 without a verdict"},
		{"second SIGINT", "manual", snap, true, []os.Signal{os.Interrupt, os.Interrupt}, exitUndecided, "nodecheck: SIGINT again: exiting 3"},
		// The run ends on its own: the signal cancelled the hung NVML reading; it is
		// undecided (interrupted).
		{"SIGTERM, NVML hung", "manual", hung, false, []os.Signal{syscall.SIGTERM}, exitUndecided, ""},
		{"SIGTERM, NVML hung, prolog", "prolog", hung, false, []os.Signal{syscall.SIGTERM}, exitHealthy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout *os.File
			if tc.stdout {
				stdout = fullPipe(t)
			}
			nodecheckBinary(t)
			cmd, out, errb := startNodecheck(t, tc.mode, stdout, "run", "--snapshot", tc.snap)
			time.Sleep(time.Second) // long enough to be blocked: the replay itself takes milliseconds
			sent := time.Now()
			for i, s := range tc.signals {
				if i > 0 {
					// Within the grace: a signal sent at once would merge with the first.
					time.Sleep(10 * time.Millisecond)
				}
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatalf("signal: %v (did nodecheck end before it?)", err)
				}
			}
			p := waitNodecheck(t, cmd, out, errb, sent)
			t.Logf("ended %s after the signal, exit %d", p.took.Round(time.Millisecond), p.code)
			if p.took > 500*time.Millisecond {
				t.Errorf("ended %s after the signal, want about 100 ms", p.took)
			}
			if p.code != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", p.code, tc.code, p.stderr)
			}
			if !strings.Contains(p.stderr, tc.says) {
				t.Errorf("stderr lacks %q:\n%s", tc.says, p.stderr)
			}
		})
	}
}

// TestSignalUnarmed: a verb that never arms the watchdog (here version, blocked writing to a
// full pipe) does not subscribe to signals (run.Watchdog.Listen), so SIGTERM ends it at once by
// the default action, as it ends any program: the deferred subscription costs no promptness.
func TestSignalUnarmed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nodecheckBinary(t)
	cmd, _, errb := startNodecheck(t, "manual", fullPipe(t), "version")
	time.Sleep(time.Second) // blocked on the pipe by now
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal: %v (did nodecheck end before it?)", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("nodecheck version still running 30 s after SIGTERM; stderr:\n%s", errb)
	}
	took := time.Since(sent)
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("nodecheck version after SIGTERM: %v, want killed by SIGTERM; stderr:\n%s", cmd.ProcessState, errb)
	}
	if took > 500*time.Millisecond {
		t.Errorf("ended %s after the signal, want at once", took)
	}
}

// TestHistoryReader: checks/history's Store reads through files.ReadUpTo, the adapter a run
// gives it (config/files imports nothing from the module and checks/history only the
// standard library, so the two meet here): a FIFO history file is an error at once, never a
// hang; an oversized one is set aside as too large, and the run starts a fresh history.
func TestHistoryReader(t *testing.T) {
	dir := t.TempDir()
	store := history.Store{Dir: dir, Read: files.ReadUpTo(context.Background(), false), Write: files.WriteAtomic, Limits: history.DefaultLimits()}
	path, err := store.Path("gpu01")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)

	makeFIFO(t, path, true)
	start := time.Now()
	h, err := store.Load("gpu01", now)
	if time.Since(start) > time.Second || h != nil || !errors.Is(err, files.ErrNotRegular) || !strings.Contains(err.Error(), "is a named pipe (FIFO)") {
		t.Errorf("Load of a FIFO = %v, %v after %s; want no history and the FIFO named", h, err, time.Since(start))
	}

	makeSparse(t, path, 1<<30)
	h, err = store.Load("gpu01", now)
	var bad *history.BadFileError
	if h == nil || !errors.As(err, &bad) || !strings.Contains(err.Error(), "larger than") || bad.KeptAs == "" {
		t.Errorf("Load of a 1 GiB file = %v, %v; want a fresh history and the file set aside as too large", h, err)
	}

	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", path); err != nil {
		t.Fatal(err)
	}
	if h, err := store.Load("gpu01", now); h != nil || !errors.Is(err, files.ErrSymlink) {
		t.Errorf("Load through a symlink = %v, %v; want ErrSymlink", h, err)
	}
}

// TestDefaultConfigPathLive puts a FIFO, /dev/zero's numbers and an oversized file at the
// default config path, /etc/nodecheck/nodecheck.toml, of a live run. So as not to touch this
// machine's /etc, the run gets a private mount namespace (unshare -m) in which /etc is an
// overlay; it needs root and unshare, and skips without them.
func TestDefaultConfigPathLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and unshare(1) for a private /etc: %v", err)
	}
	bin := nodecheckBinary(t)
	slurmConf := liveSlurmDir(t, t.TempDir(), "")
	for _, tc := range []struct{ kind, make, says string }{
		{"fifo", "mkfifo /etc/nodecheck/nodecheck.toml", "is a named pipe (FIFO), not a regular file"},
		{"char-device", "mknod /etc/nodecheck/nodecheck.toml c 1 5", "is a character device, not a regular file"},
		{"oversized", "truncate -s 2G /etc/nodecheck/nodecheck.toml", "file too large: 2 GiB"},
	} {
		for _, mode := range []string{"prolog", "manual"} {
			t.Run(tc.kind+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				script := `set -e
mkdir -p "$D/upper" "$D/work" "$D/etc"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$D/upper,workdir=$D/work" "$D/etc"
mount --bind "$D/etc" /etc
rm -rf /etc/nodecheck && mkdir /etc/nodecheck
` + tc.make + `
exec env -i ` + strings.Join(modeEnv[mode], " ") + ` "$BIN" run --check gpu_count --slurm-conf "$CONF" --node gpu-h100-01
`
				cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script)
				cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "D=" + dir, "BIN=" + bin, "CONF=" + slurmConf}
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				p := waitNodecheck(t, cmd, &out, &errb, start)
				if strings.Contains(p.stderr, "mount:") || strings.Contains(p.stderr, "unshare:") {
					t.Skipf("no private /etc here: %s", p.stderr)
				}
				t.Logf("%s run ended after %s (with unshare and mounts), exit %d", mode, p.took.Round(time.Millisecond), p.code)
				want := exitCannotRun
				if mode == "prolog" {
					want = exitHealthy
				}
				if p.code != want || p.took > budgets[mode]+time.Second {
					t.Errorf("exit %d after %s, want %d within the budget plus 1 s; output:\n%s", p.code, p.took, want, p.output())
				}
				if !strings.Contains(p.output(), "read nodecheck config /etc/nodecheck/nodecheck.toml: "+tc.says) {
					t.Errorf("output lacks the config named as %q:\n%s", tc.says, p.output())
				}
			})
		}
	}
	if fi, err := os.Lstat("/etc/nodecheck/nodecheck.toml"); err == nil && !fi.Mode().IsRegular() {
		t.Errorf("the test left a %s at this machine's /etc/nodecheck/nodecheck.toml", fi.Mode())
	}
}
