package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/nhcdrop"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestNHCDropInOnSlurm runs nodecheck as nhc where slurmd runs its HealthCheckProgram, on the
// real Slurm test beds: slurmd starts the bed's hook every 2 s, and the hook execs a link
// named nhc to the nodecheck binary, as slurmd would exec /usr/sbin/nhc. nodecheck reads an
// nhc.conf, judges this machine's live processes and mounts as node n1, and acts through the
// real scontrol: it drains n1 for a daemon nhc.conf wants and that does not run, resumes n1
// once the daemon it wants runs (after resume_after_passes clean runs), and leaves n1 drained when
// the drain is LBNL NHC's own ("NHC: ..."). Every check that nhc.conf does not set is turned
// off in the nodecheck.toml given (NODECHECK_CONFIG=): this machine has no GPU, and the bed's
// slurm.conf gives its nodes two.
func TestNHCDropInOnSlurm(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{
		RepoRoot:   repoRoot,
		TempPrefix: "nodecheck-nhc-test-",
		TempMode:   0o755,
		Short:      "the real-Slurm nhc drop-in test takes about 20 s per Slurm version",
	}, testNHCDropInOnSlurm)
}

func testNHCDropInOnSlurm(t *testing.T, b *testbed.Bed) {
	tb := newBed(t, b)
	keep := []string{"fs_mounts", "services", nhcdrop.NotRunID}
	var off strings.Builder
	for _, id := range checks.IDs() {
		if !slices.Contains(keep, id) {
			off.WriteString("[checks." + id + "]\nenabled = false\n")
		}
	}
	cfg := tb.Config(t, off.String())
	link := filepath.Join(tb.Tmp, "nhc")
	if err := os.Symlink(tb.Nodecheck, link); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(tb.Tmp, "nhc.conf")
	sysconfig := filepath.Join(tb.Tmp, "sysconfig") // no sysconfig file: whatever this machine's /etc/default/nhc says stays out
	if err := os.Mkdir(sysconfig, 0o755); err != nil {
		t.Fatal(err)
	}
	writeConf := func(text string) {
		t.Helper()
		if err := os.WriteFile(conf+".new", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(conf+".new", conf); err != nil { // never a half-written file for a hook to read
			t.Fatal(err)
		}
	}
	const missing = "nodecheck-test-no-such-daemon"
	const reason = "nodecheck: services: " + missing + ": not running (as root) [admin]"
	writeConf("* || check_fs_mount_rw -f /\n* || check_ps_service -u root -S " + missing + "\n")
	tb.Hook(t, "n1", "health", "SLURM_CONF="+tb.Conf, link, "-c", conf, "-m", "n1", "NODECHECK_CONFIG="+cfg, "SYSCONFIGDIR="+sysconfig)

	testbed.WaitFor(t, "slurmd's health check to drain n1 through nodecheck as nhc", 30*time.Second, func() bool {
		n := tb.node(t, "n1")
		return n.Drained() && n.Reason == reason
	})
	if out := tb.hookOutput(t, "n1", "health"); !strings.Contains(out, "FAIL   services") || !strings.Contains(out, "OK     nhc_conf") {
		t.Errorf("the hook's report:\n%s", out)
	}
	if env := tb.hookEnv(t, "n1", "health"); !strings.Contains(env, "argv0=") {
		t.Errorf("the hook did not run: %s", env)
	}

	// The service is back (nhc.conf now asks for slurmd, which runs): services, which drained
	// the node, says ok. Removing the line instead would leave n1 drained: a resume needs
	// the checks that drained the node to look and say ok.
	writeConf("* || check_fs_mount_rw -f /\n* || check_ps_service -u root -S slurmd\n")
	testbed.WaitFor(t, "two clean runs to resume n1", 30*time.Second, func() bool {
		return !tb.node(t, "n1").Drained()
	})

	const lbnl = "NHC: check_fs_mount:  /scratch not mounted"
	tb.Slurm(t, "scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason="+lbnl)
	runs := strings.Count(tb.hookEnv(t, "n1", "health"), "--- argv0=")
	testbed.WaitFor(t, "three more health runs", 30*time.Second, func() bool {
		return strings.Count(tb.hookEnv(t, "n1", "health"), "--- argv0=") >= runs+3
	})
	if n := tb.node(t, "n1"); !n.Drained() || n.Reason != lbnl {
		t.Errorf("n1 is %s %q after clean runs, want LBNL NHC's drain left as it was", n, n.Reason)
	}
}
