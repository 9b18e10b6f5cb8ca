package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartNodes starts a 16-node test bed of each version with a prefix and zero-padded names,
// checks what Slurm made of it (names, one port each, two GPUs each, the version's own clients,
// programs run in the root on 24.11), leaves a job running, then checks that stopping it left
// nothing behind: no daemon, munged, job or slurmstepd of the bed, no mount, root, munge socket
// directory or temporary directory.
func TestStartNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real Slurm")
	}
	for _, v := range Versions() {
		t.Run(v, func(t *testing.T) {
			var b *Bed
			var pids []string
			var mungeDir string
			t.Run("running", func(t *testing.T) {
				b = Start(t, Options{RepoRoot: "../..", TempPrefix: "nodecheck-testbed-test-", Short: "starts a real Slurm",
					Slurm: v, Nodes: 16, NodePrefix: "gpu", NodeWidth: 2})
				pids = b.pids(t)
				if len(pids) < 18 {
					t.Errorf("PIDs recorded: %v, want slurmctld's, 16 slurmd's and munged's", pids)
				}
				if v == Slurm2205 {
					sock, err := b.state("MUNGE_SOCKET")
					if err != nil || !strings.HasPrefix(sock, "/run/nodecheck-testbed/") {
						t.Errorf("the bed's own munge socket: %q (%v)", sock, err)
					}
					mungeDir = filepath.Dir(sock)
				}
				checkRunning(t, b)
				// A job still running when the bed stops: its slurmstepd and its processes
				// must not outlive the bed.
				job := strings.TrimSpace(b.Slurm(t, "sbatch", "--parsable", "-w", "gpu01", "-o", "/dev/null", "--wrap", "sleep 300"))
				WaitFor(t, "the job to run", 20*time.Second, func() bool {
					return strings.TrimSpace(b.Slurm(t, "squeue", "-h", "-j", job, "-o", "%T")) == "RUNNING"
				})
				if left := bedProcesses(b.Dir, b.Conf); len(left) == 0 {
					t.Errorf("no process of job %s found by its SLURM_CONF or its files: the check below would find nothing", job)
				}
			})
			if b == nil || t.Failed() {
				return
			}
			// The inner test's cleanups have stopped the bed and removed its files.
			if _, err := os.Stat(b.Tmp); !os.IsNotExist(err) {
				t.Errorf("the temporary directory %s is left after the test (%v)", b.Tmp, err)
			}
			if mungeDir != "" {
				if _, err := os.Stat(mungeDir); !os.IsNotExist(err) {
					t.Errorf("the bed's munge directory %s is left after stop (%v)", mungeDir, err)
				}
			}
			for _, p := range bedProcesses(b.Dir, b.Conf) {
				t.Errorf("a process of the test bed runs after stop: %s", p)
			}
			// The inner test's cleanups have stopped the bed.
			if b.Root != "" {
				if m := mountsUnder(filepath.Dir(b.Root)); len(m) > 0 {
					t.Errorf("mounted after stop: %v", m)
				}
				if _, err := os.Stat(filepath.Dir(b.Root)); !os.IsNotExist(err) {
					t.Errorf("%s is left after stop (%v)", filepath.Dir(b.Root), err)
				}
			}
			for _, pid := range pids {
				// A zombie has ended: this machine's init reaps orphans late.
				if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
					if _, rest, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(rest, "Z") {
						t.Errorf("process %s of the test bed runs after stop: %s", pid, stat)
					}
				}
			}
		})
	}
}

func checkRunning(t *testing.T, b *Bed) {
	t.Helper()
	if len(b.Nodes) != 16 || b.Nodes[0] != "gpu01" || b.Nodes[15] != "gpu16" {
		t.Fatalf("nodes %v, want gpu01..gpu16", b.Nodes)
	}
	var want []string
	for _, n := range b.Nodes {
		want = append(want, n+" gpu:2 idle")
	}
	if got := strings.Fields(strings.ReplaceAll(b.Slurm(t, "sinfo", "-h", "-N", "-o", "%N|%G|%T"), "|", " ")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sinfo:\n%v\nwant\n%v", got, want)
	}
	ports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(b.Slurm(t, "scontrol", "show", "node", "-o")), "\n") {
		var name, port, version string
		for _, f := range strings.Fields(line) {
			k, val, _ := strings.Cut(f, "=")
			switch k {
			case "NodeName":
				name = val
			case "Port":
				port = val
			case "Version":
				version = val
			}
		}
		if other, dup := ports[port]; dup || port == "" {
			t.Errorf("node %s: port %q, also %s's", name, port, other)
		}
		ports[port] = name
		if !strings.HasSuffix(b.Version, " "+version) {
			t.Errorf("node %s: slurmd %s, want %s", name, version, b.Version)
		}
	}
	if len(ports) != 16 {
		t.Errorf("%d ports for 16 nodes", len(ports))
	}
	// The version's clients, from the host's wrappers, where the nodes run programs, and from
	// the wrappers there (a job script of fleet-sweep --multinode runs SlurmBin's srun).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []*exec.Cmd{exec.CommandContext(ctx, filepath.Join(b.SlurmBin, "sinfo"), "--version"),
		b.Command(ctx, "/usr/bin/sinfo", "--version"), b.Command(ctx, filepath.Join(b.SlurmBin, "sinfo"), "--version")} {
		c.Env = append(os.Environ(), "SLURM_CONF="+b.Conf)
		out, err := c.CombinedOutput()
		if f := strings.Fields(string(out)); err != nil || len(f) != 2 || !strings.HasSuffix(b.Version, " "+f[1]) {
			t.Errorf("%s: %q (%v), want %s", c, out, err, b.Version)
		}
	}
	if (b.Series == Slurm2411) != (b.Root != "") {
		t.Errorf("Slurm %s with root %q", b.Series, b.Root)
	}
	if b.Root != "" {
		// A Debian 13 root: not the host's /etc/os-release.
		rel, err := b.Command(ctx, "/bin/sh", "-c", ". /etc/os-release; echo $VERSION_ID").Output()
		if err != nil || strings.TrimSpace(string(rel)) != "13" {
			t.Errorf("VERSION_ID in the root: %q (%v), want 13", rel, err)
		}
	}
	t.Logf("%s: %d nodes on %d ports, root %q", b.Version, len(b.Nodes), len(ports), b.Root)
}

// bedProcesses lists the live processes (not zombies) that belong to the bed in dir by what
// they hold: SLURM_CONF=conf in their environment (jobs, hooks, srun), or a file under dir
// open (slurmstepd keeps its node's log open), as "PID command line". The test's own process
// and its ancestors are left out: a test may set SLURM_CONF for itself.
func bedProcesses(dir, conf string) []string {
	self := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !self[pid]; {
		self[pid] = true
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		_, rest, _ := strings.Cut(string(st), ") ")
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || self[pid] {
			continue
		}
		if st, err := os.ReadFile(p + "/stat"); err != nil {
			continue
		} else if _, rest, _ := strings.Cut(string(st), ") "); strings.HasPrefix(rest, "Z") {
			continue
		}
		ours := false
		if env, err := os.ReadFile(p + "/environ"); err == nil {
			for _, kv := range strings.Split(string(env), "\x00") {
				if kv == "SLURM_CONF="+conf {
					ours = true
				}
			}
		}
		fds, _ := os.ReadDir(p + "/fd")
		for _, fd := range fds {
			if target, err := os.Readlink(p + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, dir+"/") {
				ours = true
			}
		}
		if ours {
			cmd, _ := os.ReadFile(p + "/cmdline")
			out = append(out, fmt.Sprintf("%d %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))))
		}
	}
	return out
}

// pids lists the PIDs the test bed recorded for its daemons (and munged in a 24.11 root).
func (b *Bed) pids(t *testing.T) []string {
	t.Helper()
	var pids []string
	files, _ := filepath.Glob(filepath.Join(b.Dir, "run", "*.child"))
	files = append(files, filepath.Join(b.Dir, "run", "munged.pid"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			pids = append(pids, strings.TrimSpace(string(data)))
		}
	}
	return pids
}
