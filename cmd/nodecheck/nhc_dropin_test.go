package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dropInNode is a live node for the nhc drop-in: an nhc.conf, a slurm.conf naming n1, and a
// nodecheck.toml whose scontrol is a stand-in that logs its calls and answers `show node`
// with the real scontrol 22.05.8 output of an idle node (drain/testdata/slurm-22.05).
type dropInNode struct {
	dir, conf, cfg string
	sysconfig      string // SYSCONFIGDIR: where the sysconfig file "nhc" goes, empty at first
}

// nhcTestConf is an nhc.conf: lines for every host, for other hosts, one for n[1-3] that
// nodecheck cannot translate (check_file_stat), and a /regex/ line.
const nhcTestConf = `# nhc.conf for TestNHCDropIn
* || check_fs_mount_rw -f /
* || check_ps_service -u root -S nodecheck-test-no-such-daemon
otherhost || check_fs_mount_rw -f /nodecheck-test-not-mounted
{n[1-3]} || check_file_stat -u root /etc/passwd
/^n[0-9]$/ || check_hw_physmem 1kb 1024tb
`

func newDropInNode(t *testing.T) dropInNode {
	t.Helper()
	dir := t.TempDir()
	show, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", "show-node-idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := dropInNode{dir: dir, conf: filepath.Join(dir, "nhc.conf"), cfg: filepath.Join(dir, "nodecheck.toml"), sysconfig: filepath.Join(dir, "sysconfig")}
	if err := os.Mkdir(n.sysconfig, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\n# stand-in for scontrol: logs its arguments; show node prints a real 22.05.8 capture\n" +
		"{ printf '[%s]' \"$@\"; echo; } >>" + filepath.Join(dir, "argv.log") + "\n" +
		"case \"$1\" in --version) echo 'slurm-wlm 22.05.8' ;; show) cat " + filepath.Join(dir, "show.out") + " ;; esac\n"
	files := map[string]string{
		"nhc.conf":   nhcTestConf,
		"show.out":   string(show),
		"slurm.conf": "ClusterName=t\nSlurmctldHost=localhost\nNodeName=n[1-2],otherhost CPUs=1\nPartitionName=p Nodes=ALL\n",
		"nodecheck.toml": "slurm_conf = \"" + filepath.Join(dir, "slurm.conf") + "\"\n[drain]\nscontrol = \"" + filepath.Join(dir, "scontrol") +
			"\"\nsinfo = \"" + filepath.Join(dir, "scontrol") + "\"\nmax_drained = \"\"\n[state]\ndir = \"" + filepath.Join(dir, "state") + "\"\n",
		"scontrol": fake,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "scontrol"), 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n dropInNode) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	argv := append([]string{"/usr/sbin/nhc", "-c", n.conf, "NODECHECK_CONFIG=" + n.cfg, "SYSCONFIGDIR=" + n.sysconfig}, args...)
	code = execute(context.Background(), argv, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return out.String(), errb.String(), code
}

func (n dropInNode) calls() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "argv.log"))
	return string(b)
}

// TestNHCDropIn runs nodecheck as nhc (argv[0] .../nhc) on this machine: the lines of
// nhc.conf whose target matches the host are judged natively, the others are not, a line
// for the host with no translation makes the run say so, and the node is drained through the
// usual path, or not at all with MARK_OFFLINE=0.
func TestNHCDropIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the state directory must be root's, as on a node")
	}
	t.Run("drains n1 for the missing daemon, and names the line it did not run", func(t *testing.T) {
		n := newDropInNode(t)
		out, stderr, code := n.run(t, "-m", "n1")
		if code != exitUnhealthy {
			t.Fatalf("exit %d, want %d:\n%s\n%s", code, exitUnhealthy, out, stderr)
		}
		for _, want := range []string{
			"node n1, mode health",
			"FAIL   services             nodecheck-test-no-such-daemon: not running (as root)",
			"ERROR  nhc_conf             1 line of nhc.conf not run (no translation): " + n.conf + ":5",
			"check_file_stat not run: check_file_stat has no native nodecheck equivalent",
			"drain: drained",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "nodecheck-test-not-mounted") {
			t.Errorf("the line for otherhost was judged on n1:\n%s", out)
		}
		if !strings.Contains(stderr, "5 check lines, 3 for n1 translated, 1 for n1 not run") {
			t.Errorf("stderr lacks the count of lines:\n%s", stderr)
		}
		if !strings.Contains(n.calls(), "[update][NodeName=n1][State=DRAIN][Reason=nodecheck: services: nodecheck-test-no-such-daemon: not running (as root) [admin]]") {
			t.Errorf("scontrol calls:\n%s", n.calls())
		}
	})
	t.Run("MARK_OFFLINE=0 reports only", func(t *testing.T) {
		n := newDropInNode(t)
		out, _, code := n.run(t, "-m", "n1", "MARK_OFFLINE=0")
		if code != exitUnhealthy || strings.Contains(n.calls(), "update") || strings.Contains(out, "drain:") {
			t.Errorf("exit %d, scontrol calls %q:\n%s", code, n.calls(), out)
		}
	})
	t.Run("MARK_OFFLINE=0 in the sysconfig file reports only", func(t *testing.T) {
		n := newDropInNode(t)
		if err := os.WriteFile(filepath.Join(n.sysconfig, "nhc"), []byte("# /etc/default/nhc\nexport MARK_OFFLINE=0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, code := n.run(t, "-m", "n1")
		if code != exitUnhealthy || strings.Contains(n.calls(), "update") || strings.Contains(out, "drain:") {
			t.Errorf("exit %d, scontrol calls %q:\n%s", code, n.calls(), out)
		}
	})
	t.Run("a sysconfig file it cannot read stops it", func(t *testing.T) {
		n := newDropInNode(t)
		if err := os.WriteFile(filepath.Join(n.sysconfig, "nhc"), []byte("MARK_OFFLINE=$(site-policy)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := n.run(t, "-m", "n1"); code != exitCannotRun || !strings.Contains(stderr, filepath.Join(n.sysconfig, "nhc")+":1:") || n.calls() != "" {
			t.Errorf("exit %d, scontrol calls %q:\n%s", code, n.calls(), stderr)
		}
	})
	t.Run("another host runs the lines for it", func(t *testing.T) {
		n := newDropInNode(t)
		out, _, _ := n.run(t, "-m", "otherhost", "NHC_RM=none")
		for _, want := range []string{"/nodecheck-test-not-mounted: not mounted", "OK     nhc_conf             every line of nhc.conf for this host is translated"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "memory within") {
			t.Errorf("the /^n[0-9]$/ line was judged on otherhost:\n%s", out)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"an option it cannot honour", []string{"-e", "check_fs_mount /"}, "nhc option -e: not supported"},
		{"an RM it does not drain through", []string{"-r", "pbs"}, "NHC_RM=pbs: nodecheck drains through Slurm only"},
		{"no nhc.conf", []string{"-c", "/nonexistent/nhc.conf"}, "read /nonexistent/nhc.conf:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newDropInNode(t)
			_, stderr, code := n.run(t, tc.args...)
			if code != exitCannotRun || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, exitCannotRun, tc.says, stderr)
			}
		})
	}
}

// TestNHCDropInLink starts the built binary through a link named nhc, as slurmd starts
// HealthCheckProgram=/usr/sbin/nhc once the packages' alternative points there.
func TestNHCDropInLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the state directory must be root's, as on a node")
	}
	n := newDropInNode(t)
	link := filepath.Join(n.dir, "nhc")
	if err := os.Symlink(nodecheckBinary(t), link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, link, "-c", n.conf, "NODECHECK_CONFIG="+n.cfg, "SYSCONFIGDIR="+n.sysconfig, "-m", "n1", "MARK_OFFLINE=0")
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUnhealthy {
		t.Fatalf("%v, want exit %d:\n%s", err, exitUnhealthy, out)
	}
	if !strings.Contains(string(out), "FAIL   services") || !strings.Contains(string(out), "ERROR  nhc_conf") {
		t.Errorf("output:\n%s", out)
	}
}
