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
)

// SchemaVersion is the "schema" key of the JSON output. It changes only if a key changes
// meaning; new keys may appear at any version.
const SchemaVersion = 1

type jsonReport struct {
	Schema      int          `json:"schema"`
	Node        string       `json:"node"`
	Mode        config.Mode  `json:"mode"`
	Healthy     bool         `json:"healthy"`
	StartedAt   string       `json:"started_at"`
	DurationMS  float64      `json:"duration_ms"`
	ConfigError string       `json:"config_error,omitempty"`
	Results     []jsonResult `json:"results"`
	Drain       any          `json:"drain,omitempty"`
}

// JSONOption adds to the JSON report.
type JSONOption func(*jsonReport)

// WithDrain adds the "drain" key: what the run did to the node's Slurm state (the CLI passes a
// drain.Outcome; report formats it without knowing drain). Absent when the run could not act.
func WithDrain(v any) JSONOption { return func(r *jsonReport) { r.Drain = v } }

type jsonResult struct {
	Check      string          `json:"check"`
	Status     checks.Status   `json:"status"`
	Summary    string          `json:"summary"`
	DurationMS float64         `json:"duration_ms"`
	Observed   string          `json:"observed,omitempty"`
	Expected   string          `json:"expected,omitempty"`
	Details    []checks.Detail `json:"details"`
}

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, r checks.Report, opts ...JSONOption) error {
	out := jsonReport{
		Schema:      SchemaVersion,
		Node:        r.Node,
		Mode:        r.Mode,
		Healthy:     r.Healthy,
		StartedAt:   r.StartedAt.UTC().Format(time.RFC3339Nano),
		DurationMS:  ms(r.Duration),
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
			Observed: res.Observed, Expected: res.Expected, Details: d,
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

// WriteText writes a table: status, check, summary, duration; then the devices that are not
// ok under each check; then one verdict line.
func WriteText(w io.Writer, r checks.Report, o TextOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s, mode %s\n", orDash(r.Node), r.Mode)
	if r.ConfigError != "" {
		fmt.Fprintf(&b, "CONFIG ERROR (running with built-in defaults): %s\n", r.ConfigError)
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
		if o.Timing {
			line += fmt.Sprintf("  (%s)", fmtDuration(res.Duration))
		}
		b.WriteString(line + "\n")
		for _, d := range res.Details {
			if !o.Details && d.Status == checks.StatusOK {
				continue
			}
			fmt.Fprintf(&b, "       %-*s  %-5s %s: %s\n", width, "", strings.ToUpper(string(d.Status)), d.Device, d.Message)
		}
	}
	verdict := "HEALTHY"
	if !r.Healthy {
		verdict = "UNHEALTHY"
	}
	if o.Timing {
		fmt.Fprintf(&b, "%s (%d checks in %s)\n", verdict, len(r.Results), fmtDuration(r.Duration))
	} else {
		fmt.Fprintf(&b, "%s (%d checks)\n", verdict, len(r.Results))
	}
	_, err := io.WriteString(w, b.String())
	return err
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
