package monitoring

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// promtool finds Debian's promtool (package prometheus); without it the test skips, except
// under CI=true, where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: promtool is not installed (apt-get install --no-install-recommends prometheus): %v", err)
		}
		t.Skipf("promtool is not installed (apt-get install --no-install-recommends prometheus): %v", err)
	}
	return p
}

// runPromtool runs promtool with args in dir, within a minute.
func runPromtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRulesPromtool: the shipped rules pass `promtool check rules`, and their unit tests
// (nodecheck.rules_test.yml: a healthy fleet, a failing, an undecided, a long-drained, a stale
// node, repairs, more failures than max_drained, a drill) pass `promtool test rules`.
func TestRulesPromtool(t *testing.T) {
	start := time.Now()
	if out, err := runPromtool(t, ".", "check", "rules", RulesFile); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", RulesFile, err, out)
	}
	if out, err := runPromtool(t, ".", "test", "rules", RulesTestFile); err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", RulesTestFile, err, out)
	}
	t.Logf("promtool check rules and test rules passed in %s", time.Since(start).Round(time.Millisecond))
}

// TestRulesTestsCatchMutations: the unit tests can fail. Each mutation changes one comparison,
// duration or guard of the shipped rules (the file still passes `promtool check rules`), and
// `promtool test rules` must then fail.
func TestRulesTestsCatchMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 13 runs of promtool test rules take about 30 s")
	}
	rules, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(RulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	mutations := []struct{ name, old, new string }{
		{"unhealthy waits longer", "for: 10m", "for: 11m"},
		{"unhealthy on the wrong status", `nodecheck_check_status{status="fail"} == 1`, `nodecheck_check_status{status="error"} == 1`},
		{"undecided also on a config error", ` unless ignoring (verdict) nodecheck_config_error == 1`, ""},
		{"config error waits longer", "for: 5m", "for: 10m"},
		{"drained threshold later", "> 12 * 3600", "> 13 * 3600"},
		{"drained without bridging a stale sample", "last_over_time(nodecheck_drain_started_timestamp_seconds[1h])", "nodecheck_drain_started_timestamp_seconds"},
		{"escalated without bridging a stale sample", "last_over_time(nodecheck_repair_escalated[1h])", "nodecheck_repair_escalated"},
		{"repair stuck later", "> 2 * 3600", "> 3 * 3600"},
		{"repair held waits longer", "for: 2h", "for: 3h"},
		{"stale at four intervals", "> 2 * (nodecheck_health_check_interval_seconds > 0)", "> 4 * (nodecheck_health_check_interval_seconds > 0)"},
		{"stale fallback too tight (a healthy node fires)", "> 600 unless", "> 60 unless"},
		{"stale fallback too loose", "> 600 unless", "> 900 unless"},
		{"drain limit needs more held nodes", `(nodecheck_drain_action{action="held"}) > 0`, `(nodecheck_drain_action{action="held"}) > 2`},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			if bytes.Count(rules, []byte(m.old)) < 1 {
				t.Fatalf("%q is not in %s: the mutation is stale", m.old, RulesFile)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, RulesFile), bytes.ReplaceAll(rules, []byte(m.old), []byte(m.new)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, RulesTestFile), tests, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := runPromtool(t, dir, "check", "rules", RulesFile); err != nil {
				t.Fatalf("the mutated rules do not even load: %v\n%s", err, out)
			}
			if out, err := runPromtool(t, dir, "test", "rules", RulesTestFile); err == nil {
				t.Errorf("promtool test rules passed with %q replaced by %q:\n%s", m.old, m.new, out)
			}
		})
	}
}

// rulesDoc is the part of a rules file these tests read.
type rulesDoc struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestRulesContent: every alert says what to do (summary, description, runbook, command) and
// how bad it is (severity), and names only metrics nodecheck writes, in its expression and in
// the queries of its annotations.
func TestRulesContent(t *testing.T) {
	data, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc rulesDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	known := writtenMetrics(t)
	var alerts []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, a := range []string{"summary", "description", "runbook", "command"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			names := MetricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric found in %q", r.Alert, r.Expr)
			}
			for _, a := range r.Annotations {
				names = append(names, nodecheckNames().FindAllString(a, -1)...)
			}
			for _, n := range names {
				if !known[n] {
					t.Errorf("%s names %s, which nodecheck does not write (testdata/golden/metrics)", r.Alert, n)
				}
			}
		}
	}
	want := []string{"NodecheckNodeUnhealthy", "NodecheckNodeUndecided", "NodecheckConfigError", "NodecheckDrainedTooLong",
		"NodecheckRepairEscalated", "NodecheckRepairStuck", "NodecheckRepairHeld", "NodecheckStale", "NodecheckDrainLimitHeld"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v (docs/alerts.md lists them)", alerts, want)
	}
}

var nodecheckNames = func() func() *regexp.Regexp {
	re := regexp.MustCompile(`\bnodecheck_[a-z_]+\b`)
	return func() *regexp.Regexp { return re }
}()

// writtenMetrics are the metric names nodecheck writes: the families of the metrics writer's
// goldens (testdata/golden/metrics, which cmd/nodecheck/report's tests hold to the writer).
func writtenMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "metrics", "*.prom"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no metrics goldens: %v", err)
	}
	known := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
				known[strings.Fields(rest)[0]] = true
			}
		}
	}
	if len(known) < 15 {
		t.Fatalf("only %d metric families in the goldens", len(known))
	}
	return known
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`nodecheck_check_status{status="fail"} == 1`, []string{"nodecheck_check_status"}},
		{`time() - last_over_time(nodecheck_drain_started_timestamp_seconds[1h]) > 12 * 3600`, []string{"nodecheck_drain_started_timestamp_seconds"}},
		{`sum without (instance, job, node) (nodecheck_drain_action{action="held"}) > 0`, []string{"nodecheck_drain_action"}},
		{`count by (check, remedy) (nodecheck_drained{node=~"n(1|2)"} == 1) or on(node) group_left(x) up`, []string{"nodecheck_drained", "up"}},
		{`a unless ignoring (verdict) b offset 5m and bool c`, []string{"a", "b", "c"}},
		{`{__name__="x"}`, nil},
	}
	for _, tc := range tests {
		if got := MetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("MetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}
