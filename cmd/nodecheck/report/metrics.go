package report

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// The Prometheus textfile (docs/metrics.md) describes the last run only: every metric is a
// gauge that the next run overwrites, in whatever mode it runs. Nothing is accumulated across
// runs: a counter kept in a file node_exporter reads would reset whenever the file is lost,
// and drains are already counted where they happen, in slurmctld. The series are stable
// from run to run, so that an alert's `for:` holds across a prolog, an epilog and a health
// check: statuses and drain actions are one-hot (one series per value, 1 for the one that
// holds), and the run's mode, which changes from run to run, is a label of one info metric
// only (nodecheck_run_info), never of the series alerts watch.

// Metric names, each with the unit suffix Prometheus' naming guide asks for.
const (
	metricCheckStatus   = "nodecheck_check_status"
	metricCheckRemedy   = "nodecheck_check_remedy"
	metricCheckDuration = "nodecheck_check_duration_seconds"
	metricNodeHealthy   = "nodecheck_node_healthy"
	metricVerdict       = "nodecheck_verdict"
	metricLastRun       = "nodecheck_last_run_timestamp_seconds"
	metricRunDuration   = "nodecheck_run_duration_seconds"
	metricRunInfo       = "nodecheck_run_info"
	metricConfigError   = "nodecheck_config_error"
	metricDrainAction   = "nodecheck_drain_action"
	metricRepairStep    = "nodecheck_repair_step"
	metricRepairs       = "nodecheck_repairs_in_window"
	// The drain as the run leaves it, and what the alert rules measure staleness by.
	metricDrained        = "nodecheck_drained"
	metricDrainStarted   = "nodecheck_drain_started_timestamp_seconds"
	metricHealthInterval = "nodecheck_health_check_interval_seconds"
	metricEscalated      = "nodecheck_repair_escalated"
	metricRepairStarted  = "nodecheck_repair_started_timestamp_seconds"
)

// checkStatuses are the values of nodecheck_check_status's status label, one series each.
var checkStatuses = []checks.Status{checks.StatusOK, checks.StatusWarn, checks.StatusFail, checks.StatusSkip, checks.StatusError}

// MetricsOptions adds to the textfile what the report does not hold.
type MetricsOptions struct {
	// DrainAction is what the run did to the node in Slurm (in a dry run what it would have
	// done). Empty when the run may not act (a manual run without --drain or --resume, a
	// config error): every nodecheck_drain_action series is then 0.
	DrainAction drain.Action
	// Version is nodecheck's version, for nodecheck_run_info.
	Version string
	// Repair is the repair step's part, nil when repairs are off ([repair] enabled = false):
	// the file then has no repair family at all.
	Repair *RepairMetrics
	// Drain is nodecheck's drain of the node as the run leaves it; nil when the run did not
	// read the node's state (a run that may not act, a healthy prolog's fast path, a
	// controller that did not answer): the file then has no drain-state series, rather than
	// a guess.
	Drain *DrainMetrics
	// HealthInterval is slurm.conf's HealthCheckInterval as the run read it (0: not set,
	// slurmd runs the health check only at its start); HealthIntervalKnown is false when the
	// run read no slurm.conf, and the file then has no such series.
	HealthInterval      time.Duration
	HealthIntervalKnown bool
	// Drill marks every series with drill="1": a drill's file (nodecheck drill), beside the
	// node's own, whose series must not collide with the node's.
	Drill bool
}

// DrainMetrics is nodecheck's drain of the node after the run (drain.Current, with the repair
// step's change of reason applied).
type DrainMetrics struct {
	Drained bool
	// Check and Remedy are the drain reason's check id and remedy (drain.ReasonCheck,
	// drain.ReasonRemedy); "" when not drained or when the reason names none.
	Check, Remedy string
	// Since is when the drain began; zero when not drained, or not known.
	Since time.Time
}

// RepairMetrics is what the textfile says of repairs where [repair] is enabled.
type RepairMetrics struct {
	// Step is what the run's repair step did (in a dry run what it would have done); ""
	// when the run did not repair (not a health run, a replay without --repair): every
	// nodecheck_repair_step series is then 0.
	Step repair.Step
	// Counts are the repair record's counts after the run; nil when the run did not read the
	// record (no nodecheck_repairs_in_window series then).
	Counts *repair.Counts
}

// sample is one line of the textfile: its labels as name, value pairs sorted by name.
type sample struct {
	labels [][2]string
	value  float64
}

type family struct {
	name, help string
	samples    []sample
}

// WriteMetrics writes the report in the Prometheus text exposition format (version 0.0.4),
// as node_exporter's textfile collector reads it: HELP and TYPE lines, families sorted by
// name, series by label values. Every series has the node label (the Slurm node name, which
// need not be the scrape target's host name); a report with two results for one check is an
// error, as it would give a file node_exporter refuses.
func WriteMetrics(w io.Writer, r checks.Report, o MetricsOptions) error {
	nodeL := [2]string{"node", r.Node}
	status, remedy, duration, err := checkFamilies(r, nodeL)
	if err != nil {
		return err
	}
	actions := drain.Actions()
	if o.DrainAction != "" && !slices.Contains(actions, o.DrainAction) {
		actions = append(actions, o.DrainAction)
	}
	var verdicts []string
	for _, v := range checks.Verdicts() {
		verdicts = append(verdicts, string(v))
	}
	var lastRun float64
	if !r.StartedAt.IsZero() {
		lastRun = unixSeconds(r.StartedAt)
	}
	fams := []family{
		status, remedy, duration,
		oneHot(metricDrainAction, "What the last run did to the node in Slurm: 1 for its action, 0 for the others; all 0 when the run could not act.",
			"action", actions, o.DrainAction, nodeL),
		oneHot(metricVerdict, "The last run's verdict: 1 for it, 0 for the others (healthy: every check decided and none failed; unhealthy: a check failed; undecided: none failed but a check could not decide, the run was interrupted, or nodecheck.toml was unusable).",
			"verdict", verdicts, string(r.Verdict), nodeL),
		{name: metricNodeHealthy, help: "1 if the last run found the node healthy (every check decided, none failed), else 0: a check failed, could not decide, the run was interrupted, or nodecheck.toml was unusable (nodecheck_verdict says which).",
			samples: []sample{{labels: [][2]string{nodeL}, value: bit(r.Verdict == checks.VerdictHealthy)}}},
		{name: metricLastRun, help: "Unix time the last run started, in seconds.",
			samples: []sample{{labels: [][2]string{nodeL}, value: lastRun}}},
		{name: metricRunDuration, help: "Time the checks of the last run took, in seconds.",
			samples: []sample{{labels: [][2]string{nodeL}, value: seconds(r.Duration)}}},
		{name: metricConfigError, help: "1 if nodecheck.toml could not be used in the last run (no check ran), else 0.",
			samples: []sample{{labels: [][2]string{nodeL}, value: bit(r.ConfigError != "")}}},
		{name: metricRunInfo, help: "Always 1; the labels say in which mode the last run ran and which nodecheck version ran it.",
			samples: []sample{{labels: [][2]string{{"mode", string(r.Mode)}, nodeL, {"version", o.Version}}, value: 1}}},
	}
	if o.Repair != nil {
		fams = append(fams, repairFamilies(*o.Repair, o.Drain, nodeL)...)
	}
	fams = append(fams, drainFamilies(o.Drain, nodeL)...)
	if o.HealthIntervalKnown {
		fams = append(fams, family{name: metricHealthInterval, help: "slurm.conf's HealthCheckInterval as the last run read it, in seconds; 0 when not set (slurmd runs the health check only when it starts). The stale-textfile alert allows twice this.",
			samples: []sample{{labels: [][2]string{nodeL}, value: seconds(o.HealthInterval)}}})
	}
	if o.Drill {
		for i := range fams {
			fams[i].samples = withLabel(fams[i].samples, [2]string{"drill", "1"})
		}
	}
	_, err = io.WriteString(w, formatFamilies(fams))
	return err
}

// drainFamilies are the drain's state after the run: drained or not, with the reason's check
// and remedy as labels, and when the drain began. None when d is nil (not read).
func drainFamilies(d *DrainMetrics, nodeL [2]string) []family {
	if d == nil {
		return nil
	}
	drained := family{name: metricDrained, help: "1 while the node is out of service (drained, draining or down) under nodecheck's reason, labelled with the reason's check and remedy; a single series 0 when it is not."}
	started := family{name: metricDrainStarted, help: "Unix time nodecheck's current drain of the node began (its record in drain.json: kept through a repair's reason changes), in seconds; 0 when the node is not drained by nodecheck; no series when the start is not known."}
	if !d.Drained {
		drained.samples = []sample{{labels: [][2]string{nodeL}, value: 0}}
		started.samples = []sample{{labels: [][2]string{nodeL}, value: 0}}
		return []family{drained, started}
	}
	var labels [][2]string
	if d.Check != "" {
		labels = append(labels, [2]string{"check", d.Check})
	}
	labels = append(labels, nodeL)
	if d.Remedy != "" {
		labels = append(labels, [2]string{"remedy", d.Remedy})
	}
	drained.samples = []sample{{labels: labels, value: 1}}
	if !d.Since.IsZero() {
		started.samples = []sample{{labels: [][2]string{nodeL}, value: unixSeconds(d.Since)}}
	}
	return []family{drained, started}
}

// withLabel adds l to every sample, keeping each sample's labels sorted by name.
func withLabel(samples []sample, l [2]string) []sample {
	out := make([]sample, len(samples))
	for i, s := range samples {
		labels := slices.Clone(s.labels)
		at, _ := slices.BinarySearchFunc(labels, l, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		out[i] = sample{labels: slices.Insert(labels, at, l), value: s.value}
	}
	return out
}

// unixSeconds is t as Unix time in seconds, to the millisecond.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// repairFamilies are the repair step's families: its step, one-hot; the repair record's
// counts (docs/repairs.md: escalation at node_repairs in node_window, gpu_repairs in
// gpu_window), one series for the node and one per GPU by bus id, and when the repair under
// way began; and, where the run read the node's state (d), whether repairs stopped in an
// escalation.
func repairFamilies(m RepairMetrics, d *DrainMetrics, nodeL [2]string) []family {
	steps := append(repair.Steps(), repair.StepSkipped)
	if m.Step != "" && !slices.Contains(steps, m.Step) {
		steps = append(steps, m.Step) // never drop what the step said
	}
	fams := []family{oneHot(metricRepairStep, "What the last run's repair step did ([repair] enabled): 1 for its step, 0 for the others (none, waiting, reset, reboot, escalate, resume, held, busy, skipped); all 0 when the run did not repair (not a health run).",
		"step", steps, m.Step, nodeL)}
	if c := m.Counts; c != nil {
		f := family{name: metricRepairs, help: "Repairs (GPU resets and reboots) in the node's repair record within its window: scope node within node_window, scope gpu per GPU (by bus id) within gpu_window; nodecheck stops repairing at node_repairs or gpu_repairs."}
		f.samples = append(f.samples, sample{labels: [][2]string{nodeL, {"scope", "node"}}, value: float64(c.Node)})
		for _, g := range c.GPUs {
			f.samples = append(f.samples, sample{labels: [][2]string{{"gpu", g.Bus}, nodeL, {"scope", "gpu"}}, value: float64(g.N)})
		}
		fams = append(fams, f)
		under := 0.0
		if !c.UnderWay.IsZero() {
			under = unixSeconds(c.UnderWay)
		}
		fams = append(fams, family{name: metricRepairStarted, help: "Unix time the repair under way started (a GPU reset or reboot whose clean runs are not yet enough), in seconds; 0 when none is under way.",
			samples: []sample{{labels: [][2]string{nodeL}, value: under}}})
	}
	if d != nil {
		fams = append(fams, family{name: metricEscalated, help: "1 while the node is drained under nodecheck's escalation (\"nodecheck: service: ...\"): repairs stopped after too many, a person must take over; else 0.",
			samples: []sample{{labels: [][2]string{nodeL}, value: bit(d.Drained && d.Check == repair.ServiceCheck)}}})
	}
	return fams
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// checkFamilies are the per-check families: each check's status, one-hot; the remedy of a
// failing check, one-hot (every series 0 for a check that did not fail, so that the series
// stay the same from run to run); and its duration. A report with two results for one
// check is an error, as it would give a file node_exporter refuses.
func checkFamilies(r checks.Report, nodeL [2]string) (status, remedy, duration family, err error) {
	status = family{name: metricCheckStatus,
		help: "Status of each check in the last run: 1 for the status it had, 0 for the others (ok, warn, fail, skip, error)."}
	remedy = family{name: metricCheckRemedy,
		help: "Remedy of each check that failed in the last run: 1 for the remedy it names (the most drastic its failing devices need), 0 for the others (reset_gpu, reboot, admin, service); all 0 for a check that did not fail."}
	duration = family{name: metricCheckDuration,
		help: "Time each check of the last run took, in seconds; 0 for a check that was not run."}
	seen := map[string]bool{}
	for _, res := range r.Results {
		if seen[res.Check] {
			return status, remedy, duration, fmt.Errorf("write metrics: check %q has two results in the report", res.Check)
		}
		seen[res.Check] = true
		statuses := checkStatuses
		if !slices.Contains(statuses, res.Status) {
			statuses = append(slices.Clip(statuses), res.Status) // never drop what a check said
		}
		for _, s := range statuses {
			status.samples = append(status.samples, sample{
				labels: [][2]string{{"check", res.Check}, nodeL, {"status", string(s)}},
				value:  bit(res.Status == s),
			})
		}
		remedies := checks.Remedies()
		if res.Remedy != "" && !slices.Contains(remedies, res.Remedy) {
			remedies = append(remedies, res.Remedy) // never drop what a check said
		}
		for _, rm := range remedies {
			remedy.samples = append(remedy.samples, sample{
				labels: [][2]string{{"check", res.Check}, nodeL, {"remedy", string(rm)}},
				value:  bit(res.Remedy == rm),
			})
		}
		duration.samples = append(duration.samples, sample{
			labels: [][2]string{{"check", res.Check}, nodeL},
			value:  seconds(res.Duration),
		})
	}
	return status, remedy, duration, nil
}

// oneHot is a family with one series per value of label, 1 for the value that holds.
func oneHot[T ~string](name, help, label string, values []T, holds T, nodeL [2]string) family {
	f := family{name: name, help: help}
	for _, v := range values {
		labels := [][2]string{{label, string(v)}, nodeL}
		if label > nodeL[0] {
			labels = [][2]string{nodeL, {label, string(v)}}
		}
		f.samples = append(f.samples, sample{labels: labels, value: bit(v == holds)})
	}
	return f
}

// formatFamilies writes the families in the text format, sorted by name, their series by
// label values.
func formatFamilies(fams []family) string {
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue // no check ran: a family without series says nothing
		}
		slices.SortStableFunc(f.samples, func(x, y sample) int {
			for i := range min(len(x.labels), len(y.labels)) {
				if c := strings.Compare(x.labels[i][1], y.labels[i][1]); c != 0 {
					return c
				}
			}
			return len(x.labels) - len(y.labels)
		})
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, escapeHelp(f.help), f.name)
		for _, s := range f.samples {
			b.WriteString(f.name)
			b.WriteByte('{')
			for i, l := range s.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(l[0] + `="` + escapeLabelValue(l[1]) + `"`)
			}
			b.WriteString("} " + strconv.FormatFloat(s.value, 'f', -1, 64) + "\n")
		}
	}
	return b.String()
}

// seconds is a duration in seconds with microsecond precision, so that the file shows
// 0.012345 rather than 0.012345678000000001.
func seconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1e6 }

// labelEscaper and helpEscaper apply the text format's escapes: in label values backslash,
// double quote and line feed; in HELP text backslash and line feed.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabelValue(s string) string { return labelEscaper.Replace(s) }

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// metricsFileMode lets node_exporter, which need not run as root, read the file.
const metricsFileMode fs.FileMode = 0o644

// WriteMetricsFile writes the report's metrics (WriteMetrics) to path, atomically: into a
// temporary file in the same directory, which is flushed to disk, given mode 0644 and renamed
// over path, so that node_exporter, reading at any moment, sees the previous file or the
// new one, never a part. The temporary file's name starts with a dot and does not end in
// .prom, so the textfile collector never reads it, not even one left by a crash. The
// directory must exist: nodecheck does not create node_exporter's directories.
func WriteMetricsFile(path string, r checks.Report, o MetricsOptions) error {
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, r, o); err != nil {
		return err
	}
	if err := files.WriteAtomic(path, buf.Bytes(), metricsFileMode); err != nil {
		return fmt.Errorf("write metrics file %s: %w", path, err)
	}
	return nil
}
