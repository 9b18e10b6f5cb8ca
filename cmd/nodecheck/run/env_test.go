package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

const snapshotsDir = "../../../testdata/snapshots"

// writeFile writes data at dir/rel, making the directories.
func writeFile(t *testing.T, dir, rel, data string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// miniSnapshot writes a snapshot holding only meta.json and the given files under fs/.
// Written for these tests; the slurm.conf lines follow slurm.conf(5).
func miniSnapshot(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "meta.json", `{"format": 1, "hostname": "gpu01", "node_name": "gpu01", "taken_at": "2025-01-01T00:00:00Z", "nodecheck_version": "test"}`)
	for p, d := range files {
		writeFile(t, dir, filepath.Join("fs", p), d)
	}
	return dir
}

// noInstall is an InstallProbe that finds no Slurm: these tests must not depend on the
// Slurm installed where they run.
func noInstall(t *testing.T) InstallProbe {
	return InstallProbe{Proc: t.TempDir(), PPID: 1, Programs: []string{}}
}

func TestNewEnv(t *testing.T) {
	live := t.TempDir()
	liveConf := writeFile(t, live, "etc/slurm.conf", "NodeName=gpu[01-04] Gres=gpu:h100:8\nNodeName=cpu01\nPrologEpilogTimeout=3\n")
	writeFile(t, live, "etc/big/slurm.conf", strings.Repeat("#\n", 3<<20)) // over the 4 MiB read bound
	badCfg := writeFile(t, live, "bad.toml", "[checks.ib_ports]\nmin_rate_gpbs = 400\n")
	closedCfg := writeFile(t, live, "closed.toml", "fail_closed = true\nprom_file = \"/x/n.prom\"\n[checks.ib_ports]\nmin_rate_gpbs = 400\n")
	missingConfCfg := writeFile(t, live, "missing-conf.toml", "slurm_conf = \"/nonexistent/slurm.conf\"\n")
	goodCfg := writeFile(t, live, "good.toml", "[budget]\nprolog = \"10s\"\n")
	healthy := filepath.Join(snapshotsDir, "h100-healthy")
	timeouts := miniSnapshot(t, map[string]string{
		"/etc/slurm/slurm.conf": "NodeName=gpu01 Gres=gpu:8\nPrologTimeout=4\nEpilogTimeout=UNLIMITED\n",
	})
	escaping := miniSnapshot(t, nil)
	if err := os.MkdirAll(filepath.Join(escaping, "fs/etc/slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(liveConf, filepath.Join(escaping, "fs/etc/slurm/slurm.conf")); err != nil {
		t.Fatal(err)
	}
	prolog := func(k string) string {
		return map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1"}[k]
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}

	tests := []struct {
		name string
		o    EnvOptions
		// want, when the env is built
		node, target, nodeFrom, slurmConf string
		mode                              config.Mode
		budget                            time.Duration
		readOnly                          bool
		job                               checks.Job
		// or the error
		configErr  bool // a *ConfigError
		failClosed bool
		errHas     []string
	}{
		{name: "replay: node, config and slurm.conf from the snapshot", o: EnvOptions{SnapshotDir: healthy, Mode: config.ModeManual},
			node: "gpu-h100-01", nodeFrom: "the snapshot", slurmConf: "/etc/slurm/slurm.conf (packaged default)", mode: config.ModeManual, readOnly: true},
		{name: "replay in a prolog: the job is this process's, the node the snapshot's", o: EnvOptions{SnapshotDir: healthy, Getenv: prolog},
			node: "gpu-h100-01", nodeFrom: "the snapshot", mode: config.ModeProlog, budget: 5 * time.Second, readOnly: true, job: checks.Job{ID: "7", GPUs: "0,1"}},
		{name: "replay: PrologTimeout in the snapshot's slurm.conf caps the prolog budget", o: EnvOptions{SnapshotDir: timeouts, Mode: config.ModeProlog},
			node: "gpu01", mode: config.ModeProlog, budget: 3 * time.Second, readOnly: true},
		{name: "replay: EpilogTimeout=UNLIMITED leaves the epilog budget", o: EnvOptions{SnapshotDir: timeouts, Mode: config.ModeEpilog},
			node: "gpu01", mode: config.ModeEpilog, budget: 30 * time.Second, readOnly: true},
		{name: "replay with --node: judged as the recorded node, acting for the named one", o: EnvOptions{SnapshotDir: healthy, NodeName: "n1", Mode: config.ModeHealth},
			node: "gpu-h100-01", target: "n1", nodeFrom: "the snapshot, acting for --node", mode: config.ModeHealth, budget: 50 * time.Second, readOnly: true},
		{name: "replay: a slurm.conf symlink that leaves the snapshot is refused as such, not missing", o: EnvOptions{SnapshotDir: escaping, Mode: config.ModeManual},
			node: "gpu01", mode: config.ModeManual, readOnly: true, slurmConf: "none: find slurm.conf: /etc/slurm/slurm.conf (packaged default) cannot be used: read /etc/slurm/slurm.conf: "},
		{name: "replay: a relative --slurm-conf names nothing in a snapshot", o: EnvOptions{SnapshotDir: healthy, SlurmConf: "etc/slurm/slurm.conf"},
			errHas: []string{"--slurm-conf etc/slurm/slurm.conf", "absolute"}},
		{name: "replay: --slurm-conf not in the snapshot is a usage error", o: EnvOptions{SnapshotDir: healthy, SlurmConf: "/nonexistent/slurm.conf"},
			errHas: []string{"--slurm-conf /nonexistent/slurm.conf does not exist"}},
		{name: "a control character in --node is refused, quoted", o: EnvOptions{SnapshotDir: healthy, NodeName: "gpu01\nx"},
			errHas: []string{`node name "gpu01\nx" (from --node)`, "no Slurm node name"}},
		{name: "a newline in SLURMD_NODENAME is refused too", o: EnvOptions{SlurmConf: liveConf, Getenv: env("SLURMD_NODENAME", "gpu01\n"), Install: noInstall(t)},
			errHas: []string{`"gpu01\n" (from SLURMD_NODENAME)`}},
		{name: "a --snapshot that does not exist", o: EnvOptions{SnapshotDir: filepath.Join(live, "nosnap")},
			errHas: []string{"--snapshot", "nosnap"}},
		{name: "--config that does not exist is a config error naming it", o: EnvOptions{SnapshotDir: healthy, ConfigPath: filepath.Join(live, "absent.toml")},
			configErr: true, errHas: []string{"--config " + filepath.Join(live, "absent.toml") + " does not exist"}},
		{name: "a broken --config in a prolog is a config error, fail_closed read leniently", o: EnvOptions{SnapshotDir: healthy, ConfigPath: badCfg, Getenv: prolog},
			configErr: true, errHas: []string{"bad.toml:2"}},
		{name: "fail_closed is read from the broken file", o: EnvOptions{SnapshotDir: healthy, ConfigPath: closedCfg, Getenv: prolog},
			configErr: true, failClosed: true, errHas: []string{"closed.toml:4"}},
		{name: "live: a relative --slurm-conf is relative to the working directory", o: EnvOptions{SlurmConf: "etc/slurm.conf", WorkDir: live, NodeName: "gpu02", Install: noInstall(t), Mode: config.ModeManual},
			node: "gpu02", nodeFrom: "--node", slurmConf: liveConf + " (--slurm-conf)", mode: config.ModeManual},
		{name: "live: a --slurm-conf that does not exist is a usage error naming it", o: EnvOptions{SlurmConf: "live/slurm.conf", WorkDir: live, NodeName: "gpu01", Install: noInstall(t)},
			errHas: []string{"--slurm-conf " + filepath.Join(live, "live/slurm.conf") + " does not exist"}},
		{name: "live: a slurm.conf over the read bound says so, not that it is missing", o: EnvOptions{SlurmConf: filepath.Join(live, "etc/big/slurm.conf"), NodeName: "gpu01", Install: noInstall(t), Mode: config.ModeManual},
			node: "gpu01", nodeFrom: "--node", slurmConf: "none: find slurm.conf: " + filepath.Join(live, "etc/big/slurm.conf") + " (--slurm-conf) cannot be used: read " + filepath.Join(live, "etc/big/slurm.conf") + ": file too large", mode: config.ModeManual},
		{name: "live: a relative SLURM_CONF that does not exist is a config error", o: EnvOptions{Getenv: env("SLURM_CONF", "nowhere/slurm.conf", "SLURMD_NODENAME", "gpu01"), WorkDir: live, Install: noInstall(t)},
			configErr: true, errHas: []string{"SLURM_CONF=" + filepath.Join(live, "nowhere/slurm.conf") + " does not exist"}},
		{name: "live: slurm_conf in nodecheck.toml that does not exist is a config error", o: EnvOptions{ConfigPath: missingConfCfg, NodeName: "gpu01", Install: noInstall(t)},
			configErr: true, errHas: []string{"slurm_conf in " + missingConfCfg + " /nonexistent/slurm.conf does not exist"}},
		{name: "live: --node that slurm.conf does not define is a usage error", o: EnvOptions{SlurmConf: liveConf, NodeName: "nosuch", Install: noInstall(t)},
			errHas: []string{"--node nosuch: no NodeName line of " + liveConf, "its nodes: gpu[01-04],cpu01"}},
		{name: "live: SLURM_CONF relative, PrologEpilogTimeout caps the prolog budget, config's budget applies", o: EnvOptions{ConfigPath: goodCfg, WorkDir: live,
			Getenv: env("SLURM_CONF", "etc/slurm.conf", "SLURMD_NODENAME", "cpu01", "SLURM_SCRIPT_CONTEXT", "prolog_slurmd"), Install: noInstall(t)},
			node: "cpu01", nodeFrom: "SLURMD_NODENAME", slurmConf: liveConf + " (SLURM_CONF)", mode: config.ModeProlog, budget: 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, setup, err := NewEnv(context.Background(), tc.o)
			if len(tc.errHas) > 0 {
				if err == nil {
					t.Fatalf("NewEnv built node %q, want an error", e.Node)
				}
				var ce *ConfigError
				if errors.As(err, &ce) != tc.configErr {
					t.Errorf("error %v: *ConfigError %v, want %v", err, !tc.configErr, tc.configErr)
				}
				if ce != nil && ce.FailClosed != tc.failClosed {
					t.Errorf("FailClosed = %v, want %v", ce.FailClosed, tc.failClosed)
				}
				for _, w := range tc.errHas {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Node != tc.node || e.Target != tc.target || (tc.nodeFrom != "" && setup.NodeFrom != tc.nodeFrom) {
				t.Errorf("node %q (target %q) from %q, want %q (%q) from %q", e.Node, e.Target, setup.NodeFrom, tc.node, tc.target, tc.nodeFrom)
			}
			if e.Mode != tc.mode || e.Budget.Run != tc.budget || e.ReadOnly != tc.readOnly || e.Job != tc.job {
				t.Errorf("mode %s budget %s readOnly %v job %+v; want %s %s %v %+v", e.Mode, e.Budget.Run, e.ReadOnly, e.Job, tc.mode, tc.budget, tc.readOnly, tc.job)
			}
			if tc.budget > 0 && !e.Budget.Deadline.Equal(setup.StartedAt.Add(tc.budget)) {
				t.Errorf("deadline %v, want start %v + %s", e.Budget.Deadline, setup.StartedAt, tc.budget)
			}
			if tc.slurmConf != "" {
				if got := e.Slurm.Describe(); !strings.HasPrefix(got, tc.slurmConf) {
					t.Errorf("slurm.conf %q\nwant      %q", got, tc.slurmConf)
				}
			}
		})
	}
}

// TestNewEnvInstalledSlurm: with nothing named, slurm.conf is found where the installed
// Slurm's compiled-in default puts it (a source build under a prefix here), before the
// packaged default and the configless cache; and slurmd's -f, read from /proc of the parent,
// comes before that.
func TestNewEnvInstalledSlurm(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "opt/slurm-23.11/sbin/slurmd", "#!/bin/true\n")
	conf := writeFile(t, root, "opt/slurm-23.11/etc/slurm.conf", "NodeName=gpu01 Gres=gpu:8\n")
	probe := InstallProbe{Proc: t.TempDir(), PPID: 1, Programs: []string{filepath.Join(root, "opt/slurm-23.11/sbin/slurmd")}}
	e, _, err := NewEnv(context.Background(), EnvOptions{Mode: config.ModeHealth, Getenv: slurmdNodename("gpu01"), Install: probe})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Slurm.Describe(), conf+" (default of "+filepath.Join(root, "opt/slurm-23.11/sbin/slurmd")+")"; got != want {
		t.Errorf("slurm.conf %q, want %q", got, want)
	}

	// The parent is slurmd started with -f: that file wins.
	daemonConf := writeFile(t, root, "srv/slurm.conf", "NodeName=gpu01\n")
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "opt/slurm-23.11/sbin/slurmd"), filepath.Join(proc, "4242", "exe")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, proc, "4242/cmdline", "/opt/slurm-23.11/sbin/slurmd\x00-D\x00-f\x00"+daemonConf+"\x00")
	probe = InstallProbe{Proc: proc, PPID: 4242, Programs: []string{}}
	e, _, err = NewEnv(context.Background(), EnvOptions{Mode: config.ModeHealth, Getenv: slurmdNodename("gpu01"), Install: probe})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Slurm.Describe(), daemonConf+" (slurmd -f, pid 4242)"; got != want {
		t.Errorf("slurm.conf %q, want %q", got, want)
	}
}

func TestSlurmdConfFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"/usr/sbin/slurmd", "-D", "-f", "/etc/x.conf"}, "/etc/x.conf"},
		{[]string{"/usr/sbin/slurmd", "-f/etc/y.conf"}, "/etc/y.conf"},
		{[]string{"/usr/sbin/slurmd", "-D", "-s"}, ""},
		{[]string{"/usr/sbin/slurmd", "--", "-f", "x"}, ""},
		{[]string{"/usr/sbin/slurmd", "-f"}, ""},
	}
	for _, tc := range tests {
		if got := slurmdConfFlag(tc.args); got != tc.want {
			t.Errorf("slurmdConfFlag(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestProbeInstallBounded: a probe that cannot finish (a program path under a hung mount,
// here a FIFO it would read as /proc's cmdline) gives up at its timeout.
func TestProbeInstallBounded(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/sbin/slurmd", filepath.Join(proc, "9", "exe")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(proc, "9", "cmdline")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	start := time.Now()
	r := probeInstall(context.Background(), InstallProbe{Proc: proc, PPID: 9, Programs: []string{}, Timeout: 100 * time.Millisecond}, nil, nil)
	if d := time.Since(start); d > time.Second {
		t.Errorf("probe took %s, want about its 100ms timeout", d)
	}
	if r.daemon != (slurm.Candidate{}) {
		t.Errorf("daemon %+v from a probe that did not finish", r.daemon)
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// slurmdNodename is the environment slurmd gives HealthCheckProgram: SLURMD_NODENAME alone.
func slurmdNodename(name string) func(string) string {
	return func(k string) string {
		if k == "SLURMD_NODENAME" {
			return name
		}
		return ""
	}
}

// BenchmarkProbeInstall is the cost the health check pays to learn where the installed Slurm
// keeps slurm.conf (this machine's /proc and Slurm programs).
func BenchmarkProbeInstall(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		probeInstall(ctx, InstallProbe{}, func(string) string { return "" }, []string{"/usr/bin/scontrol", "/usr/bin/sinfo"})
	}
}

// BenchmarkNewEnvReplay is building a run's environment for a recorded node: config,
// slurm.conf, node name and budget.
func BenchmarkNewEnvReplay(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(snapshotsDir, "h100-healthy")
	for b.Loop() {
		if _, _, err := NewEnv(ctx, EnvOptions{SnapshotDir: dir, Mode: config.ModeProlog}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNewEnvStart: the budget counts from EnvOptions.Start (the process's creation, from
// which the CLI's watchdog counts too), and from NewEnv's own start without one.
func TestNewEnvStart(t *testing.T) {
	healthy := filepath.Join(snapshotsDir, "h100-healthy")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name  string
		start time.Time
		want  time.Time
	}{
		{"process start", now.Add(-30 * time.Millisecond), now.Add(-30 * time.Millisecond)},
		{"none given", time.Time{}, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, setup, err := NewEnv(context.Background(), EnvOptions{Mode: config.ModeProlog, SnapshotDir: healthy, Now: clock, Start: tc.start})
			if err != nil {
				t.Fatal(err)
			}
			if !setup.StartedAt.Equal(tc.want) {
				t.Errorf("StartedAt = %s, want %s", setup.StartedAt, tc.want)
			}
			if want := tc.want.Add(env.Budget.Run); env.Budget.Run <= 0 || !env.Budget.Deadline.Equal(want) {
				t.Errorf("Budget = %+v, want a deadline of %s (the run's start + %s)", env.Budget, want, env.Budget.Run)
			}
		})
	}
}
