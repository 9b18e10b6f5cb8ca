package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/metrics")

const metricsGoldenDir = "../../../testdata/golden/metrics"

var started = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// metricsCases are the reports the goldens render: one per kind of run the textfile must
// describe.
var metricsCases = []struct {
	name string
	rep  checks.Report
	opts MetricsOptions
}{
	{
		name: "health-healthy",
		rep: checks.Report{Node: "gpu01", Mode: config.ModeHealth, Verdict: checks.VerdictHealthy, Healthy: true, StartedAt: started, Duration: 412345 * time.Microsecond,
			Results: []checks.Result{
				{Check: "gres_devices", Status: checks.StatusOK, Duration: 1200 * time.Microsecond},
				{Check: "gpu_count", Status: checks.StatusOK, Duration: 250 * time.Millisecond},
				{Check: "pcie_link", Status: checks.StatusOK, Duration: 3 * time.Millisecond},
				{Check: "fabric_manager", Status: checks.StatusOK, Duration: 150 * time.Millisecond},
				{Check: "ib_ports", Status: checks.StatusWarn, Duration: 800 * time.Microsecond},
				{Check: "nccl_allreduce", Status: checks.StatusSkip},
			}},
		opts: MetricsOptions{DrainAction: drain.ActionNone, Version: "1.2.0"},
	},
	{
		name: "prolog-drained",
		rep: checks.Report{Node: "gpu02", Mode: config.ModeProlog, Verdict: checks.VerdictUnhealthy, StartedAt: started, Duration: 2 * time.Second,
			Results: []checks.Result{
				{Check: "gres_devices", Status: checks.StatusOK, Duration: time.Millisecond},
				{Check: "gpu_count", Status: checks.StatusError, Duration: 5 * time.Millisecond},
				{Check: "ib_ports", Status: checks.StatusFail, Summary: "mlx5_2 port 1: state DOWN, want ACTIVE", Remedy: checks.RemedyService, Duration: 2 * time.Millisecond},
			}},
		opts: MetricsOptions{DrainAction: drain.ActionDrained, Version: "1.2.0",
			Drain: &DrainMetrics{Drained: true, Check: "ib_ports", Remedy: "service", Since: started}},
	},
	{
		name: "health-held",
		rep: checks.Report{Node: "gpu03", Mode: config.ModeHealth, Verdict: checks.VerdictUnhealthy, StartedAt: started, Duration: time.Second,
			Results: []checks.Result{{Check: "fabric_manager", Status: checks.StatusFail, Remedy: checks.RemedyAdmin, Duration: 40 * time.Millisecond}}},
		opts: MetricsOptions{DrainAction: drain.ActionHeld, Version: "1.2.0", Drain: &DrainMetrics{},
			HealthInterval: 300 * time.Second, HealthIntervalKnown: true},
	},
	{
		// The run that could not use nodecheck.toml: no check ran, no drain, undecided.
		name: "prolog-config-error",
		rep: checks.Report{Node: "gpu04", Mode: config.ModeProlog, Verdict: checks.VerdictUndecided, StartedAt: started,
			ConfigError: `nodecheck.toml:3: unknown key "checks.ib_ports.min_rate_gpbs"`},
		opts: MetricsOptions{Version: "1.2.0"},
	},
	{
		// A manual run without --drain: the run may not act, every action is 0. The node
		// name and version exercise the label escapes (Slurm allows none of these).
		name: "manual-escaping",
		rep: checks.Report{Node: "odd\"node\\name\nx", Mode: config.ModeManual, Verdict: checks.VerdictHealthy, Healthy: true, StartedAt: started, Duration: 90 * time.Second,
			Results: []checks.Result{{Check: "nccl_allreduce", Status: checks.StatusOK, Duration: 89500 * time.Millisecond}}},
		opts: MetricsOptions{Version: `devel-"x"\`},
	},
	{
		// A health run whose checks could not read their GPUs: undecided, so neither healthy
		// nor unhealthy, and nothing drained.
		name: "health-undecided",
		rep: checks.Report{Node: "gpu05", Mode: config.ModeHealth, Verdict: checks.VerdictUndecided, StartedAt: started, Duration: 30 * time.Millisecond,
			Results: []checks.Result{
				{Check: "gres_devices", Status: checks.StatusOK, Duration: time.Millisecond},
				{Check: "gpu_count", Status: checks.StatusError, Duration: 2 * time.Millisecond},
			}},
		opts: MetricsOptions{DrainAction: drain.ActionNone, Version: "1.2.0"},
	},
	{
		// [repair] enabled, a health run that reset a GPU: the step, and the record's counts
		// for the node and for each GPU (one earlier reset of 0000:9b:00.0 and this one).
		name: "health-repair-reset",
		rep: checks.Report{Node: "gpu06", Mode: config.ModeHealth, Verdict: checks.VerdictUnhealthy, StartedAt: started, Duration: 600 * time.Millisecond,
			Results: []checks.Result{
				{Check: "gpu_count", Status: checks.StatusOK, Duration: 2 * time.Millisecond},
				{Check: "gpu_memory_errors", Status: checks.StatusFail, Remedy: checks.RemedyResetGPU, Duration: 3 * time.Millisecond},
			}},
		opts: MetricsOptions{DrainAction: drain.ActionKept, Version: "1.2.0", Repair: &RepairMetrics{Step: repair.StepReset,
			Counts: &repair.Counts{Node: 2, GPUs: []repair.GPUCount{{Bus: "0000:19:00.0"}, {Bus: "0000:9b:00.0", N: 2}}, UnderWay: started}},
			Drain:          &DrainMetrics{Drained: true, Check: "gpu_memory_errors", Remedy: "reset_gpu", Since: started.Add(-10 * time.Minute)},
			HealthInterval: 300 * time.Second, HealthIntervalKnown: true},
	},
	{
		// [repair] enabled, repairs stopped: the node waits for a person under nodecheck's
		// "service" reason; slurm.conf sets no HealthCheckInterval.
		name: "health-escalated",
		rep: checks.Report{Node: "gpu08", Mode: config.ModeHealth, Verdict: checks.VerdictUnhealthy, StartedAt: started, Duration: 500 * time.Millisecond,
			Results: []checks.Result{{Check: "gpu_memory_errors", Status: checks.StatusFail, Remedy: checks.RemedyResetGPU, Duration: 3 * time.Millisecond}}},
		opts: MetricsOptions{DrainAction: drain.ActionKept, Version: "1.2.0", Repair: &RepairMetrics{Step: repair.StepEscalate, Counts: &repair.Counts{Node: 5}},
			Drain: &DrainMetrics{Drained: true, Check: "service", Remedy: "service", Since: started.Add(-26 * time.Hour)}, HealthIntervalKnown: true},
	},
	{
		// [repair] enabled, a prolog: prologs never repair, so every step is 0 and the record,
		// which a prolog does not read, gives no counts.
		name: "prolog-repair-on",
		rep: checks.Report{Node: "gpu07", Mode: config.ModeProlog, Verdict: checks.VerdictHealthy, Healthy: true, StartedAt: started, Duration: 80 * time.Millisecond,
			Results: []checks.Result{{Check: "gpu_count", Status: checks.StatusOK, Duration: 2 * time.Millisecond}}},
		opts: MetricsOptions{DrainAction: drain.ActionNone, Version: "1.2.0", Repair: &RepairMetrics{}},
	},
}

func TestWriteMetricsGolden(t *testing.T) {
	for _, tc := range metricsCases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteMetrics(&buf, tc.rep, tc.opts); err != nil {
				t.Fatal(err)
			}
			goldenMetrics(t, tc.name+".prom", buf.String())
		})
	}
}

func goldenMetrics(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(metricsGoldenDir, name)
	if *update {
		if err := os.MkdirAll(metricsGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./cmd/nodecheck/report -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test ./cmd/nodecheck/report -update and review the diff:\n%s", path, diff)
	}
}

// series is one parsed sample, flattened for comparison.
type series struct {
	labels map[string]string
	value  float64
}

// parseMetrics reads text with Prometheus' own parser and checks what every family must be:
// a gauge with help.
func parseMetrics(t *testing.T, text string) map[string][]series {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt cannot parse the textfile: %v\n%s", err, text)
	}
	out := map[string][]series{}
	for name, f := range fams {
		if f.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s is a %s, want a gauge", name, f.GetType())
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.GetMetric() {
			s := series{labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// value finds the one series of name whose labels include want.
func value(t *testing.T, fams map[string][]series, name string, want map[string]string) float64 {
	t.Helper()
	var found []float64
	for _, s := range fams[name] {
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			found = append(found, s.value)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

// TestWriteMetricsParses reads each case's output back with expfmt and checks what it says
// against the report it came from.
func TestWriteMetricsParses(t *testing.T) {
	wantFamilies := []string{
		"nodecheck_check_duration_seconds", "nodecheck_check_remedy", "nodecheck_check_status", "nodecheck_config_error",
		"nodecheck_drain_action", "nodecheck_last_run_timestamp_seconds", "nodecheck_node_healthy",
		"nodecheck_run_duration_seconds", "nodecheck_run_info", "nodecheck_verdict",
	}
	for _, tc := range metricsCases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteMetrics(&buf, tc.rep, tc.opts); err != nil {
				t.Fatal(err)
			}
			fams := parseMetrics(t, buf.String())
			wantFamilies := append(slices.Clone(wantFamilies), optionalFamilies(tc.opts)...)
			slices.Sort(wantFamilies)
			if m := tc.opts.Repair; m != nil {
				checkRepairMetrics(t, fams, *m)
			}
			checkDrainMetrics(t, fams, tc.opts)
			var names []string
			for n := range fams {
				names = append(names, n)
			}
			slices.Sort(names)
			if len(tc.rep.Results) == 0 {
				// No check ran: the per-check families have no series, so expfmt never sees them.
				wantFamilies := slices.DeleteFunc(slices.Clone(wantFamilies), func(n string) bool { return strings.HasPrefix(n, "nodecheck_check_") })
				if diff := cmp.Diff(wantFamilies, names); diff != "" {
					t.Errorf("families (-want +got):\n%s", diff)
				}
			} else if diff := cmp.Diff(wantFamilies, names); diff != "" {
				t.Errorf("families (-want +got):\n%s", diff)
			}
			for name, ss := range fams {
				for _, s := range ss {
					if s.labels["node"] != tc.rep.Node {
						t.Errorf("%s%v: node label %q, want %q", name, s.labels, s.labels["node"], tc.rep.Node)
					}
				}
			}
			node := map[string]string{"node": tc.rep.Node}
			for _, res := range tc.rep.Results {
				sum := 0.0
				for _, st := range []string{"ok", "warn", "fail", "skip", "error"} {
					v := value(t, fams, "nodecheck_check_status", map[string]string{"check": res.Check, "status": st})
					sum += v
					if want := boolValue(st == string(res.Status)); v != want {
						t.Errorf("%s status %s = %v, want %v", res.Check, st, v, want)
					}
				}
				if sum != 1 {
					t.Errorf("%s: statuses sum to %v, want 1 (one-hot)", res.Check, sum)
				}
				remedies := 0.0
				for _, r := range checks.Remedies() {
					v := value(t, fams, "nodecheck_check_remedy", map[string]string{"check": res.Check, "remedy": string(r)})
					remedies += v
					if want := boolValue(r == res.Remedy); v != want {
						t.Errorf("%s remedy %s = %v, want %v", res.Check, r, v, want)
					}
				}
				if want := boolValue(res.Remedy != ""); remedies != want {
					t.Errorf("%s: remedies sum to %v, want %v (one-hot for a failing check, else all 0)", res.Check, remedies, want)
				}
				if got, want := value(t, fams, "nodecheck_check_duration_seconds", map[string]string{"check": res.Check}), res.Duration.Seconds(); got != want {
					t.Errorf("%s duration %v, want %v", res.Check, got, want)
				}
			}
			if got := len(fams["nodecheck_check_status"]); got != 5*len(tc.rep.Results) {
				t.Errorf("%d check_status series, want 5 per check", got)
			}
			if got := len(fams["nodecheck_check_remedy"]); got != len(checks.Remedies())*len(tc.rep.Results) {
				t.Errorf("%d check_remedy series, want %d per check", got, len(checks.Remedies()))
			}
			for _, a := range drain.Actions() {
				if got, want := value(t, fams, "nodecheck_drain_action", map[string]string{"action": string(a)}), boolValue(a == tc.opts.DrainAction); got != want {
					t.Errorf("drain action %s = %v, want %v", a, got, want)
				}
			}
			checkValue := func(name string, want float64) {
				t.Helper()
				if got := value(t, fams, name, node); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			checkValue("nodecheck_node_healthy", boolValue(tc.rep.Verdict == checks.VerdictHealthy))
			sum := 0.0
			for _, v := range checks.Verdicts() {
				got := value(t, fams, "nodecheck_verdict", map[string]string{"verdict": string(v)})
				sum += got
				if want := boolValue(v == tc.rep.Verdict); got != want {
					t.Errorf("verdict %s = %v, want %v", v, got, want)
				}
			}
			if sum != 1 {
				t.Errorf("verdicts sum to %v, want 1 (one-hot)", sum)
			}
			checkValue("nodecheck_config_error", boolValue(tc.rep.ConfigError != ""))
			checkValue("nodecheck_last_run_timestamp_seconds", float64(tc.rep.StartedAt.UnixMilli())/1000)
			checkValue("nodecheck_run_duration_seconds", tc.rep.Duration.Seconds())
			checkValue("nodecheck_run_info", 1)
			info := fams["nodecheck_run_info"][0].labels
			if diff := cmp.Diff(map[string]string{"mode": string(tc.rep.Mode), "node": tc.rep.Node, "version": tc.opts.Version}, info); diff != "" {
				t.Errorf("run_info labels (-want +got):\n%s", diff)
			}
		})
	}
}

// checkRepairMetrics checks the repair families against what they were written from: the
// step one-hot (all 0 without a step), and the counts.
func checkRepairMetrics(t *testing.T, fams map[string][]series, m RepairMetrics) {
	t.Helper()
	sum := 0.0
	for _, st := range append(repair.Steps(), repair.StepSkipped) {
		v := value(t, fams, "nodecheck_repair_step", map[string]string{"step": string(st)})
		sum += v
		if want := boolValue(st == m.Step); v != want {
			t.Errorf("repair step %s = %v, want %v", st, v, want)
		}
	}
	if want := boolValue(m.Step != ""); sum != want {
		t.Errorf("repair steps sum to %v, want %v", sum, want)
	}
	if m.Counts == nil {
		return
	}
	if got := value(t, fams, "nodecheck_repairs_in_window", map[string]string{"scope": "node"}); got != float64(m.Counts.Node) {
		t.Errorf("node repairs %v, want %d", got, m.Counts.Node)
	}
	for _, g := range m.Counts.GPUs {
		if got := value(t, fams, "nodecheck_repairs_in_window", map[string]string{"scope": "gpu", "gpu": g.Bus}); got != float64(g.N) {
			t.Errorf("GPU %s repairs %v, want %d", g.Bus, got, g.N)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestWriteMetricsEdges(t *testing.T) {
	tests := []struct {
		name    string
		rep     checks.Report
		opts    MetricsOptions
		wantErr string
		want    []string // lines the output must have
	}{
		{
			name:    "two results for one check",
			rep:     checks.Report{Results: []checks.Result{{Check: "ib_ports", Status: checks.StatusOK}, {Check: "ib_ports", Status: checks.StatusFail}}},
			wantErr: `write metrics: check "ib_ports" has two results in the report`,
		},
		{
			name: "an unknown status is kept as a series of its own",
			rep:  checks.Report{Node: "n1", Results: []checks.Result{{Check: "ib_ports", Status: "odd"}}},
			want: []string{`nodecheck_check_status{check="ib_ports",node="n1",status="odd"} 1`, `nodecheck_check_status{check="ib_ports",node="n1",status="ok"} 0`},
		},
		{
			name: "an unknown drain action is kept as a series of its own",
			rep:  checks.Report{Node: "n1"},
			opts: MetricsOptions{DrainAction: "new"},
			want: []string{`nodecheck_drain_action{action="new",node="n1"} 1`, `nodecheck_drain_action{action="none",node="n1"} 0`},
		},
		{
			name: "no start time is 0, not year 1",
			rep:  checks.Report{Node: "n1"},
			want: []string{`nodecheck_last_run_timestamp_seconds{node="n1"} 0`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteMetrics(&buf, tc.rep, tc.opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if buf.Len() != 0 {
					t.Errorf("wrote %q before the error", buf.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parseMetrics(t, buf.String())
			lines := strings.Split(buf.String(), "\n")
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("no line %q in:\n%s", w, buf.String())
				}
			}
		})
	}
}

func TestWriteMetricsFile(t *testing.T) {
	rep := metricsCases[0].rep
	var want bytes.Buffer
	if err := WriteMetrics(&want, rep, metricsCases[0].opts); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "nodecheck.prom")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetricsFile(path, rep, metricsCases[0].opts); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o644 {
		t.Errorf("mode %s, want -rw-r--r-- (node_exporter need not run as root)", fi.Mode())
	}
	assertOnlyFile(t, dir, "nodecheck.prom")
}

func TestWriteMetricsFileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "isdir.prom"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"missing directory", filepath.Join(dir, "absent", "nodecheck.prom"), "write metrics file " + filepath.Join(dir, "absent", "nodecheck.prom") + ": open "},
		{"path is a directory", filepath.Join(dir, "isdir.prom"), "write metrics file " + filepath.Join(dir, "isdir.prom") + ": rename "},
		{"path ends in a slash", dir + "/", "write metrics file " + dir + "/: the path names a directory, not a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteMetricsFile(tc.path, metricsCases[0].rep, MetricsOptions{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
			}
		})
	}
	// No temporary file is left behind by the failed rename.
	assertOnlyFile(t, dir, "isdir.prom")
}

func assertOnlyFile(t *testing.T, dir, name string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{name}, names); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}
}

// TestWriteMetricsFileAtomic: a reader polling the file while it is rewritten many times, with
// outputs of different lengths, only ever sees one whole output or the other.
func TestWriteMetricsFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodecheck.prom")
	a, b := metricsCases[0], metricsCases[1] // different lengths: a torn file would show
	var wa, wb bytes.Buffer
	if err := WriteMetrics(&wa, a.rep, a.opts); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetrics(&wb, b.rep, b.opts); err != nil {
		t.Fatal(err)
	}
	if wa.Len() == wb.Len() {
		t.Fatal("the two outputs have the same length; pick cases that differ")
	}
	if err := WriteMetricsFile(path, a.rep, a.opts); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	reads, bad := 0, []string(nil)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			got, err := os.ReadFile(path)
			if err != nil {
				bad = append(bad, "read: "+err.Error())
				continue
			}
			reads++
			if s := string(got); s != wa.String() && s != wb.String() {
				bad = append(bad, strconv.Quote(s))
			}
		}
	}()
	const writes = 500
	for i := range writes {
		c := metricsCases[i%2]
		if err := WriteMetricsFile(path, c.rep, c.opts); err != nil {
			t.Error(err)
		}
	}
	cancel()
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("the reader saw %d partial or missing files of %d reads; first: %s", len(bad), reads, bad[0])
	}
	if reads == 0 {
		t.Error("the reader never read the file")
	}
	assertOnlyFile(t, dir, "nodecheck.prom")
}

// TestPromtool runs Prometheus' own linter on every golden, where promtool is installed
// (Debian: apt-get install --no-install-recommends prometheus).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found in PATH (Debian package prometheus): the goldens are not linted")
	}
	for _, tc := range metricsCases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(metricsGoldenDir, tc.name+".prom"))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(data)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if err != nil || len(out) > 0 {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}
