// Package report renders a run's results for people (a text table) and for programs (JSON
// with a stable schema, the Prometheus textfile). It only formats: it never decides health.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// SchemaVersion is the "schema" key of the JSON output. It changes only if a key changes
// meaning; new keys may appear at any version (docs/output.md: verdict, interrupted,
// budget and slurm_conf came with the third verdict, and healthy kept its name but is
// false for an undecided run).
const SchemaVersion = 1

type jsonReport struct {
	Schema      int             `json:"schema"`
	Node        string          `json:"node"`
	Mode        config.Mode     `json:"mode"`
	Verdict     checks.Verdict  `json:"verdict"`
	Healthy     bool            `json:"healthy"`
	Interrupted bool            `json:"interrupted,omitempty"`
	StartedAt   string          `json:"started_at"`
	DurationMS  float64         `json:"duration_ms"`
	Budget      *jsonBudget     `json:"budget,omitempty"`
	SlurmConf   string          `json:"slurm_conf,omitempty"`
	ConfigError string          `json:"config_error,omitempty"`
	Results     []jsonResult    `json:"results"`
	Drain       *drain.Outcome  `json:"drain,omitempty"`
	Repair      *repair.Outcome `json:"repair,omitempty"`
}

// jsonBudget is the run's time budget: seconds (0: none), where it comes from, and Slurm's
// limit for the hook it runs as when there is one.
type jsonBudget struct {
	Seconds             float64 `json:"seconds"`
	ConfiguredSeconds   float64 `json:"configured_seconds"`
	From                string  `json:"from"`
	SlurmLimit          string  `json:"slurm_limit,omitempty"`
	SlurmLimitSeconds   float64 `json:"slurm_limit_seconds,omitempty"`
	SlurmLimitSetAt     string  `json:"slurm_limit_set_at,omitempty"`
	CappedBySlurmLimits bool    `json:"capped_by_slurm_limit,omitempty"`
}

func newJSONBudget(b checks.Budget) *jsonBudget {
	if b.Key == "" {
		return nil // a report not built by NewEnv: nothing is known about its budget
	}
	out := &jsonBudget{Seconds: b.Run.Seconds(), ConfiguredSeconds: b.Configured.Seconds(), From: b.From(),
		SlurmLimitSeconds: b.Slurm.Limit.Seconds(), SlurmLimitSetAt: b.Slurm.Pos.String(), CappedBySlurmLimits: b.Capped()}
	if b.Slurm.Limit > 0 || b.Slurm.Key != "" {
		out.SlurmLimit = b.Slurm.Key
		if out.SlurmLimit == "" {
			out.SlurmLimit = "fixed"
		}
	}
	return out
}

// JSONOption adds to the JSON report.
type JSONOption func(*jsonReport)

// WithDrain adds the "drain" key: what the run did to the node's Slurm state. Absent when the
// run could not act.
func WithDrain(d *drain.Outcome) JSONOption { return func(r *jsonReport) { r.Drain = d } }

// WithRepair adds the "repair" key: what the run's repair step did. Absent when repairs are
// off ([repair] enabled = false) or the run may not repair.
func WithRepair(o *repair.Outcome) JSONOption { return func(r *jsonReport) { r.Repair = o } }

type jsonResult struct {
	Check      string          `json:"check"`
	Status     checks.Status   `json:"status"`
	Summary    string          `json:"summary"`
	DurationMS float64         `json:"duration_ms"`
	Observed   string          `json:"observed,omitempty"`
	Expected   string          `json:"expected,omitempty"`
	Remedy     checks.Remedy   `json:"remedy,omitempty"`
	Details    []checks.Detail `json:"details"`
}

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, r checks.Report, opts ...JSONOption) error {
	out := jsonReport{
		Schema:      SchemaVersion,
		Node:        r.Node,
		Mode:        r.Mode,
		Verdict:     r.Verdict,
		Healthy:     r.Verdict == checks.VerdictHealthy,
		Interrupted: r.Interrupted,
		StartedAt:   r.StartedAt.UTC().Format(time.RFC3339Nano),
		DurationMS:  ms(r.Duration),
		Budget:      newJSONBudget(r.Budget),
		SlurmConf:   r.SlurmConf,
		ConfigError: r.ConfigError,
		Results:     make([]jsonResult, 0, len(r.Results)),
	}
	for _, res := range r.Results {
		d := res.Details
		if d == nil {
			d = []checks.Detail{}
		}
		out.Results = append(out.Results, jsonResult{
			Check: res.Check, Status: res.Status, Summary: res.Summary, DurationMS: ms(res.Duration),
			Observed: res.Observed, Expected: res.Expected, Remedy: res.Remedy, Details: d,
		})
	}
	for _, o := range opts {
		o(&out)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// ms is a duration in milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TextOptions tunes the table.
type TextOptions struct {
	Color   bool // ANSI colours: only when stdout is a terminal
	Details bool // list every device, not only the bad ones
	Timing  bool // print durations (off in golden tests, whose timings vary)
}

// WriteText writes a table: status, check, summary, the remedy of a failing check
// ("[remedy: reset_gpu]"), duration; then the devices that are not ok under each check, a
// failing one with its remedy ("[reset_gpu]"); then one verdict line.
func WriteText(w io.Writer, r checks.Report, o TextOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s, mode %s\n", orDash(r.Node), r.Mode)
	if o.Details && r.Budget.Key != "" {
		fmt.Fprintf(&b, "%s\n", r.Budget)
	}
	if o.Details && r.SlurmConf != "" {
		fmt.Fprintf(&b, "slurm.conf %s\n", r.SlurmConf)
	}
	if r.ConfigError != "" {
		fmt.Fprintf(&b, "CONFIG ERROR (no check ran): %s\n", r.ConfigError)
	}
	width := len("check")
	for _, res := range r.Results {
		width = max(width, len(res.Check))
	}
	for _, res := range r.Results {
		status := fmt.Sprintf("%-5s", strings.ToUpper(string(res.Status)))
		if o.Color {
			status = colour(res.Status) + status + "\x1b[0m"
		}
		line := fmt.Sprintf("%s  %-*s  %s", status, width, res.Check, res.Summary)
		if res.Remedy != "" {
			line += "  [remedy: " + string(res.Remedy) + "]"
		}
		if o.Timing {
			line += fmt.Sprintf("  (%s)", fmtDuration(res.Duration))
		}
		b.WriteString(line + "\n")
		for _, d := range res.Details {
			if !o.Details && d.Status == checks.StatusOK {
				continue
			}
			remedy := ""
			if d.Status == checks.StatusFail && d.Remedy != "" {
				remedy = " [" + string(d.Remedy) + "]"
			}
			fmt.Fprintf(&b, "       %-*s  %-5s %s: %s%s\n", width, "", strings.ToUpper(string(d.Status)), d.Device, d.Message, remedy)
		}
	}
	b.WriteString(verdictLine(r, o.Timing) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictLine is the table's last line: the verdict in capitals, and for an undecided run
// why: "UNDECIDED: 4 checks could not decide (gpu_count, ...) (12 checks in 15ms)".
func verdictLine(r checks.Report, timing bool) string {
	n := len(r.Results)
	count := fmt.Sprintf("(%d %s)", n, text.Plural(n, "check", "checks"))
	if timing {
		count = fmt.Sprintf("(%d %s in %s)", n, text.Plural(n, "check", "checks"), fmtDuration(r.Duration))
	}
	switch r.Verdict {
	case checks.VerdictHealthy:
		return "HEALTHY " + count
	case checks.VerdictUnhealthy:
		return "UNHEALTHY " + count
	}
	if r.ConfigError != "" {
		return "UNDECIDED: the config is unusable, no check ran"
	}
	var why []string
	if r.Interrupted {
		why = append(why, "interrupted")
	}
	if u := r.Undecided(); len(u) > 0 {
		ids := make([]string, 0, len(u))
		for _, res := range u {
			ids = append(ids, res.Check)
		}
		why = append(why, fmt.Sprintf("%d %s could not decide (%s)", len(u), text.Plural(len(u), "check", "checks"), strings.Join(ids, ", ")))
	}
	if len(why) == 0 {
		why = append(why, "a check said what this version does not know")
	}
	return "UNDECIDED: " + strings.Join(why, ", ") + " " + count
}

func colour(s checks.Status) string {
	switch s {
	case checks.StatusOK:
		return "\x1b[32m"
	case checks.StatusWarn:
		return "\x1b[33m"
	case checks.StatusFail, checks.StatusError:
		return "\x1b[31m"
	}
	return "\x1b[90m"
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return d.Round(time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
