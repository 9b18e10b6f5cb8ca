package drill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/monitoring"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

const ibReason = "nodecheck: ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp [admin]"

// TestDrillSlurm drills a node of the real Slurm test bed (22.05 and 24.11) with a real
// node_exporter and Prometheus (the shipped rules, every `for:` divided by 200): the replay of
// h100-ib-port-down drains n1 for ib_ports with remedy admin, the drill's textfile says so, the
// series is scraped, NodecheckNodeUnhealthy goes pending and fires for n1 with drill="1", the
// node is resumed, the textfile removed and the alert resolves; every step passes and n1 ends
// idle. A node drained by someone else is left alone, and a healthy snapshot drains nothing.
func TestDrillSlurm(t *testing.T) {
	monitoring.Require(t)
	shipped, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "monitoring", monitoring.RulesFile))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := monitoring.ScaleFor(shipped, 200)
	if err != nil {
		t.Fatal(err)
	}
	testbed.ForEachVersion(t, testbed.Options{RepoRoot: "../../..", TempPrefix: "nodecheck-drill-test-",
		Short: "starts a Slurm test bed, Prometheus and node_exporter (about 20 s per Slurm version)"}, func(t *testing.T, b *testbed.Bed) {
		st := monitoring.Start(t, monitoring.Options{Rules: rules, Interval: time.Second})
		cfg := b.Config(t, "[drain]\nmax_drained = \"\"\nscontrol = \""+b.SlurmBin+"/scontrol\"\nsinfo = \""+b.SlurmBin+"/sinfo\"\n")
		opts := func(node, snap string) Options {
			return Options{Node: node, Snapshot: b.Snapshot(t, snap), ConfigPath: cfg, PromFile: filepath.Join(st.TextfileDir, TextfileName),
				Getenv: func(k string) string { return map[string]string{"SLURM_CONF": b.Conf}[k] }, Poll: 200 * time.Millisecond, AlertTimeout: time.Minute}
		}

		t.Run("a failing replay drains, alerts and is put back", func(t *testing.T) {
			o := opts("n1", "h100-ib-port-down")
			o.Prometheus = st.URL
			res := Run(context.Background(), o)
			logSteps(t, res)
			want := []string{"preflight", "replay and drain", "metrics written", "series scraped", "alert pending", "alert firing", "resume", "metrics removed", "alert resolved"}
			if got := stepNames(res); strings.Join(got, ",") != strings.Join(want, ",") || !res.OK {
				t.Errorf("steps %q (ok %v), want %q all ok", got, res.OK, want)
			}
			if res.Check != "ib_ports" || res.Remedy != "admin" || res.Reason != ibReason {
				t.Errorf("check %q, remedy %q, reason %q; want ib_ports, admin, %q", res.Check, res.Remedy, res.Reason, ibReason)
			}
			b.WaitState(t, "n1", "idle") // right after a resume a node reads idle* for a moment
			if _, err := os.Stat(o.PromFile); !os.IsNotExist(err) {
				t.Errorf("the drill's textfile is still there: %v", err)
			}
		})

		t.Run("a node drained by someone else is left alone", func(t *testing.T) {
			b.Slurm(t, "scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=maintenance")
			defer b.Reset(t)
			res := Run(context.Background(), opts("n2", "h100-ib-port-down"))
			logSteps(t, res)
			if res.OK || len(res.Steps) != 1 || !strings.Contains(res.Steps[0].Detail, "leaves this one alone") {
				t.Errorf("drill of a drained node: %+v, want the preflight to refuse", res.Steps)
			}
			if out := strings.TrimSpace(b.Slurm(t, "sinfo", "-h", "-N", "-n", "n2", "-o", "%t %E")); out != "drain maintenance" {
				t.Errorf("n2 after the drill: %q, want still drained for maintenance", out)
			}
		})

		t.Run("a healthy snapshot drains nothing", func(t *testing.T) {
			res := Run(context.Background(), opts("n1", "h100-healthy"))
			logSteps(t, res)
			if res.OK || res.Steps[1].OK || !strings.Contains(res.Steps[1].Detail, "not unhealthy") {
				t.Errorf("drill with a healthy snapshot: %+v, want the replay step to fail", res.Steps)
			}
			if st := b.SinfoState(t, "n1"); st != "idle" {
				t.Errorf("n1: %s, want idle, untouched", st)
			}
		})
	})
}

func stepNames(res Result) []string {
	var out []string
	for _, s := range res.Steps {
		out = append(out, s.Name)
	}
	return out
}

func logSteps(t *testing.T, res Result) {
	t.Helper()
	for _, s := range res.Steps {
		t.Logf("%-17s ok=%-5v at %6.2fs took %6.2fs  %s", s.Name, s.OK, s.AtS, s.TookS, s.Detail)
	}
}
