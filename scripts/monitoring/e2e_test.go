package monitoring

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// forDiv is how much the end-to-end test shortens the rules' `for:` (ScaleFor): the shipped
// NodecheckNodeUnhealthy's 10 minutes become 3 s.
const forDiv = 200

// TestAlertsEndToEnd breaks a node for real and watches the alert come and go through the real
// parts: on the Slurm test bed (22.05 and 24.11), nodecheck replays a failing snapshot
// (h100-ib-port-down) as n1's health check with --drain, writing its textfile into the
// directory a real node_exporter reads; a real Prometheus scrapes it every second with the
// shipped rules loaded (every `for:` divided by forDiv) and must list NodecheckNodeUnhealthy
// for n1 firing, through its HTTP API, within the rule's `for` and three intervals (scrape,
// evaluation, and the evaluation that turns pending into firing), plus slack for a loaded
// machine; the drain series must say what Slurm says. Then a healthy replay resumes n1
// (resume_after_passes = 1), and the alert must be gone within two intervals.
func TestAlertsEndToEnd(t *testing.T) {
	Require(t)
	shipped, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ScaleFor(shipped, forDiv)
	if err != nil {
		t.Fatal(err)
	}
	const interval = time.Second
	forUnhealthy := 10 * time.Minute / forDiv
	testbed.ForEachVersion(t, testbed.Options{RepoRoot: "../..", TempPrefix: "nodecheck-alerts-",
		Short: "starts a Slurm test bed, Prometheus and node_exporter (about 20 s per Slurm version)"}, func(t *testing.T, b *testbed.Bed) {
		st := Start(t, Options{Rules: rules, Interval: interval})
		prom := filepath.Join(st.TextfileDir, "nodecheck.prom")
		cfg := b.Config(t, "[drain]\nmax_drained = \"\"\nresume_after_passes = 1\n")
		n1 := map[string]string{"node": "n1", "check": "ib_ports"}

		before := time.Now()
		runNodecheck(t, b, 1, "--snapshot", b.Snapshot(t, "h100-ib-port-down"), "--config", cfg, "--prom-file", prom)
		written := time.Now()
		if st := strings.TrimSpace(b.Slurm(t, "sinfo", "-h", "-N", "-n", "n1", "-o", "%t %E")); !strings.HasPrefix(st, "drain nodecheck: ib_ports: ") {
			t.Fatalf("n1 after the failing replay: %q, want drained by nodecheck's ib_ports", st)
		}
		_, pendingAt := st.WaitAlert(t, 30*time.Second, "NodecheckNodeUnhealthy", n1, "pending or firing",
			func(a Alert, listed bool) bool { return listed })
		a, firingAt := st.WaitAlert(t, 60*time.Second, "NodecheckNodeUnhealthy", n1, "firing",
			func(a Alert, listed bool) bool { return listed && a.State == "firing" })
		latency := firingAt.Sub(written)
		t.Logf("NodecheckNodeUnhealthy for n1: listed %s and firing %s after the textfile was written (for: %s, interval %s)",
			pendingAt.Sub(written).Round(10*time.Millisecond), latency.Round(10*time.Millisecond), forUnhealthy, interval)
		if limit := forUnhealthy + 3*interval + 5*time.Second; latency > limit {
			t.Errorf("the alert fired %s after the textfile was written, want within %s", latency, limit)
		}
		if got := a.Annotations["command"]; got != "nodecheck run --check ib_ports   # on n1" {
			t.Errorf("command annotation %q", got)
		}
		if !strings.Contains(a.Annotations["description"], "(remedy admin)") {
			t.Errorf("description annotation %q, want the remedy admin", a.Annotations["description"])
		}
		checkDrainSeries(t, st, before, written)
		checkDashboardLive(t, st)

		runNodecheck(t, b, 0, "--snapshot", b.Snapshot(t, "h100-healthy"), "--config", cfg, "--prom-file", prom)
		resumed := time.Now()
		b.WaitState(t, "n1", "idle")
		_, goneAt := st.WaitAlert(t, 30*time.Second, "NodecheckNodeUnhealthy", n1, "gone",
			func(a Alert, listed bool) bool { return !listed })
		t.Logf("NodecheckNodeUnhealthy for n1 resolved %s after the healthy run resumed n1", goneAt.Sub(resumed).Round(10*time.Millisecond))
		if limit := 2*interval + 5*time.Second; goneAt.Sub(resumed) > limit {
			t.Errorf("the alert resolved %s after the resume, want within %s", goneAt.Sub(resumed), limit)
		}
		if v := queryOne(t, st, `nodecheck_drained{node="n1"}`); v != 0 {
			t.Errorf("nodecheck_drained for n1 after the resume: %v, want 0", v)
		}
	})
}

// checkDrainSeries: Prometheus has n1's drain as nodecheck recorded it: drained for ib_ports
// with remedy admin, since the failing run.
func checkDrainSeries(t *testing.T, st *Stack, before, after time.Time) {
	t.Helper()
	if v := queryOne(t, st, `nodecheck_drained{node="n1",check="ib_ports",remedy="admin"}`); v != 1 {
		t.Errorf("nodecheck_drained for n1: %v, want 1", v)
	}
	since := queryOne(t, st, `nodecheck_drain_started_timestamp_seconds{node="n1"}`)
	if at := time.UnixMilli(int64(since * 1000)); at.Before(before.Add(-time.Second)) || at.After(after.Add(time.Second)) {
		t.Errorf("nodecheck_drain_started_timestamp_seconds for n1: %s, want between %s and %s", at, before, after)
	}
}

// checkDashboardLive runs every expression of the shipped dashboard against the live
// Prometheus while n1 is drained: each must evaluate, and the drained-nodes table must list
// n1 with its check and remedy.
func checkDashboardLive(t *testing.T, st *Stack) {
	t.Helper()
	data, err := os.ReadFile(DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	qs, problems := dashboardQueries(data)
	if len(problems) > 0 {
		t.Fatalf("dashboard: %v", problems)
	}
	for _, q := range qs {
		res, err := st.Query(context.Background(), q.expr)
		if err != nil {
			t.Errorf("%s: %s: %v", q.where, q.expr, err)
			continue
		}
		if strings.Contains(q.where, "Nodes drained by nodecheck") {
			if len(res) != 1 || res[0].Metric["node"] != "n1" || res[0].Metric["check"] != "ib_ports" || res[0].Metric["remedy"] != "admin" {
				t.Errorf("%s: %v, want n1 drained for ib_ports, remedy admin", q.where, res)
			}
		}
	}
}

// queryOne is the value of the one series expr selects.
func queryOne(t *testing.T, st *Stack, expr string) float64 {
	t.Helper()
	res, err := st.Query(context.Background(), expr)
	if err != nil || len(res) != 1 {
		t.Fatalf("query %s: %v, %d series: %v", expr, err, len(res), res)
	}
	s, _ := res[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", expr, res[0].Value, err)
	}
	return v
}

// runNodecheck runs n1's health check as a replay with --drain and --resume where the bed's
// nodes run programs, and checks its exit code.
func runNodecheck(t *testing.T, b *testbed.Bed, wantCode int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := b.Command(ctx, b.Nodecheck, append([]string{"run", "--format", "json", "--mode", "health", "--node", "n1", "--drain", "--resume"}, args...)...)
	cmd.Env = []string{"SLURM_CONF=" + b.Conf, "PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run nodecheck: %v", err)
	}
	if code != wantCode {
		t.Fatalf("nodecheck %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, wantCode, stderr.String())
	}
}
