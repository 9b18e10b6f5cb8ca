package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// optionalFamilies are the families a textfile has besides those of every run, by what the
// options say the run knew.
func optionalFamilies(o MetricsOptions) []string {
	var out []string
	if m := o.Repair; m != nil {
		out = append(out, "nodecheck_repair_step")
		if m.Counts != nil {
			out = append(out, "nodecheck_repairs_in_window", "nodecheck_repair_started_timestamp_seconds")
		}
		if o.Drain != nil {
			out = append(out, "nodecheck_repair_escalated")
		}
	}
	if d := o.Drain; d != nil {
		out = append(out, "nodecheck_drained")
		if !d.Drained || !d.Since.IsZero() {
			out = append(out, "nodecheck_drain_started_timestamp_seconds")
		}
	}
	if o.HealthIntervalKnown {
		out = append(out, "nodecheck_health_check_interval_seconds")
	}
	return out
}

// checkDrainMetrics checks the drain-state families, the health check interval and the repair
// under way against the options they were written from.
func checkDrainMetrics(t *testing.T, fams map[string][]series, o MetricsOptions) {
	t.Helper()
	one := func(name string, want float64) {
		t.Helper()
		if got := value(t, fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if d := o.Drain; d != nil {
		if len(fams["nodecheck_drained"]) != 1 {
			t.Fatalf("nodecheck_drained: %d series, want 1", len(fams["nodecheck_drained"]))
		}
		got := fams["nodecheck_drained"][0]
		if got.value != boolValue(d.Drained) || got.labels["check"] != d.Check || got.labels["remedy"] != d.Remedy {
			t.Errorf("nodecheck_drained%v = %v, want %v with check %q, remedy %q", got.labels, got.value, boolValue(d.Drained), d.Check, d.Remedy)
		}
		switch {
		case !d.Drained:
			one("nodecheck_drain_started_timestamp_seconds", 0)
		case !d.Since.IsZero():
			one("nodecheck_drain_started_timestamp_seconds", float64(d.Since.UnixMilli())/1000)
		}
		if o.Repair != nil {
			one("nodecheck_repair_escalated", boolValue(d.Drained && d.Check == "service"))
		}
	}
	if o.HealthIntervalKnown {
		one("nodecheck_health_check_interval_seconds", o.HealthInterval.Seconds())
	}
	if o.Repair != nil && o.Repair.Counts != nil {
		want := 0.0
		if u := o.Repair.Counts.UnderWay; !u.IsZero() {
			want = float64(u.UnixMilli()) / 1000
		}
		one("nodecheck_repair_started_timestamp_seconds", want)
	}
}

// TestWriteMetricsDrainStartUnknown: a drained node whose drain start nobody knows has the
// drained series and no start series, never a made-up time (0 would read as drained since
// 1970, and an alert on long drains would fire at once).
func TestWriteMetricsDrainStartUnknown(t *testing.T) {
	rep := checks.Report{Node: "gpu09", Mode: config.ModeHealth, Verdict: checks.VerdictUnhealthy, StartedAt: started,
		Results: []checks.Result{{Check: "ib_ports", Status: checks.StatusFail, Remedy: checks.RemedyAdmin}}}
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, rep, MetricsOptions{DrainAction: drain.ActionKept, Drain: &DrainMetrics{Drained: true, Check: "ib_ports", Remedy: "admin"}}); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, buf.String())
	if got := value(t, fams, "nodecheck_drained", map[string]string{"check": "ib_ports", "remedy": "admin"}); got != 1 {
		t.Errorf("nodecheck_drained = %v, want 1", got)
	}
	if s, ok := fams["nodecheck_drain_started_timestamp_seconds"]; ok {
		t.Errorf("nodecheck_drain_started_timestamp_seconds written without a known start: %v", s)
	}
}

// TestWriteMetricsDrill: a drill's file (nodecheck drill) labels every series drill="1", so
// that node_exporter can read it beside the node's own file without two series alike.
func TestWriteMetricsDrill(t *testing.T) {
	rep := checks.Report{Node: "gpu10", Mode: config.ModeManual, Verdict: checks.VerdictUnhealthy, StartedAt: started, Duration: time.Second,
		Results: []checks.Result{
			{Check: "gres_devices", Status: checks.StatusOK, Duration: time.Millisecond},
			{Check: "ib_ports", Status: checks.StatusFail, Remedy: checks.RemedyAdmin, Duration: 2 * time.Millisecond},
		}}
	o := MetricsOptions{DrainAction: drain.ActionDrained, Version: "1.2.0", Drill: true, Repair: &RepairMetrics{Counts: &repair.Counts{}},
		Drain: &DrainMetrics{Drained: true, Check: "ib_ports", Remedy: "admin", Since: started}, HealthInterval: time.Minute, HealthIntervalKnown: true}
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, rep, o); err != nil {
		t.Fatal(err)
	}
	goldenMetrics(t, "manual-drill.prom", buf.String())
	fams := parseMetrics(t, buf.String())
	n := 0
	for name, ss := range fams {
		for _, s := range ss {
			n++
			if s.labels["drill"] != "1" {
				t.Errorf("%s%v: no drill=\"1\"", name, s.labels)
			}
		}
	}
	if n < 20 {
		t.Errorf("%d series, want every family's", n)
	}
}
