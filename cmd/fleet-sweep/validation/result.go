// Package validation is the fleet's side of active validation: the levels and their time
// budgets as Slurm jobs, reading one node's `nodecheck validate --json` result, the order in
// which nodes are validated (stalest first), the fleet's baselines (each GPU model's P50 per
// figure) and the nodes slow against them, the summary a failing node is drained with, and the
// node Extra data that Slurm's --extra constraints filter on. It decides; cmd/fleet-sweep runs
// the jobs and the Slurm commands.
package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Verdicts of a validation, as `nodecheck validate` prints them.
const (
	Passed    = "passed"
	Failed    = "failed"
	Undecided = "undecided"
)

// Figure is one measured figure of a validation: a bandwidth, with the floor it was judged
// against and where the floor comes from.
type Figure struct {
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Floor    float64 `json:"floor"`
	Expected float64 `json:"expected"`
	Source   string  `json:"source"`
	Device   string  `json:"device"`
	OK       bool    `json:"ok"`
}

// higherIsBetter says which way the figure goes: a floor below the expected value (a
// bandwidth) wants more; a limit above it (a latency) wants less.
func (f Figure) higherIsBetter() bool { return f.Floor <= f.Expected }

// Test is one test of the level and how it ended.
type Test struct {
	Name    string `json:"name"`
	Status  string `json:"status"` // ok, fail, warn, skip, error
	Summary string `json:"summary"`
	Remedy  string `json:"remedy"` // reset_gpu, reboot, service, admin, ""
}

// Result is one node's `nodecheck validate --level L --json`.
type Result struct {
	Node      string    `json:"node"`
	Level     string    `json:"level"`
	Model     string    `json:"model"`
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"`
	Verdict   string    `json:"verdict"`
	Figures   []Figure  `json:"figures"`
	Tests     []Test    `json:"tests"`
	// Refused is why the node would not validate (a job on the node, its GPUs busy, a prolog):
	// the verdict is then undecided.
	Refused string `json:"refused,omitempty"`
}

// maxNameLen bounds a figure or test name: they become Extra keys and reason words.
const maxNameLen = 64

// Parse reads one node's result and checks that it is about that node and level, with a
// verdict it knows and figures it can compare. A result that fails any of that is no result:
// the node is undecided, never passed.
func Parse(data []byte, node, level string) (Result, error) {
	var r Result
	if len(bytes.TrimSpace(data)) == 0 {
		return r, errors.New("empty")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("not a validation result: %w", err)
	}
	switch {
	case r.Node != node:
		return r, fmt.Errorf("about node %q, not %q", clip(r.Node), node)
	case r.Level != level:
		return r, fmt.Errorf("level %q, not %q", clip(r.Level), level)
	case r.Verdict != Passed && r.Verdict != Failed && r.Verdict != Undecided:
		return r, fmt.Errorf("verdict %q: want passed, failed or undecided", clip(r.Verdict))
	}
	for i, f := range r.Figures {
		if !validName(f.Name) {
			return r, fmt.Errorf("figure %d: name %q: want 1 to %d letters, digits or _.-", i, clip(f.Name), maxNameLen)
		}
		for _, v := range []float64{f.Value, f.Floor, f.Expected} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return r, fmt.Errorf("figure %s: not a finite number", f.Name)
			}
		}
	}
	for i, t := range r.Tests {
		if !validName(t.Name) {
			return r, fmt.Errorf("test %d: name %q: want 1 to %d letters, digits or _.-", i, clip(t.Name), maxNameLen)
		}
	}
	return r, nil
}

// validName is a name that is safe as an Extra key (none of Slurm's operator characters
// ,&|<>=!() nor a blank) and in a drain reason.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// FailSummary is what a failed validation drains its node with (after "nodecheck: fleet: "):
// the level, the first failing test, else the first figure under its floor, and how many
// more. The remedy goes separately, to the drain path, which puts it in the reason. The text
// is sanitized there (one line of printable ASCII, bounded).
func FailSummary(r Result) (summary, remedy string) {
	var whys []string
	for _, t := range r.Tests {
		if t.Status == "fail" {
			why := t.Name
			if t.Summary != "" {
				why += ": " + t.Summary
			}
			whys = append(whys, why)
			if remedy == "" {
				remedy = t.Remedy
			}
		}
	}
	for _, f := range r.Figures {
		if !f.OK {
			whys = append(whys, FigureText(f))
		}
	}
	summary = "validate " + r.Level + ": failed"
	if len(whys) > 0 {
		summary += ": " + whys[0]
		if len(whys) > 1 {
			summary += fmt.Sprintf(" (+%d more)", len(whys)-1)
		}
	}
	if remedy == "" {
		remedy = "admin" // a figure below its floor with no test naming a remedy: a person looks
	}
	return summary, remedy
}

// FigureText is one figure against its floor: "nccl_busbw 150.2 GB/s, floor 300".
func FigureText(f Figure) string {
	s := f.Name
	if f.Device != "" {
		s += " " + f.Device
	}
	rel := "floor"
	if !f.higherIsBetter() {
		rel = "limit"
	}
	return fmt.Sprintf("%s %s %s, %s %s", s, num(f.Value), f.Unit, rel, num(f.Floor))
}

// num prints a figure with one decimal, without a trailing ".0".
func num(v float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}
