package validate

import (
	"encoding/json"
	"io"
	"time"

	"github.com/nodecheck/nodecheck/checks"
)

// Verdict is a validation's outcome.
type Verdict string

// The verdicts. Undecided is never passed: a level whose tests could not run (every tool
// missing, a tool that could not be read) has shown nothing.
const (
	VerdictPassed    Verdict = "passed"
	VerdictFailed    Verdict = "failed"
	VerdictUndecided Verdict = "undecided"
)

// Report is one validation, and the JSON `nodecheck validate --json` prints (docs/validation.md).
// The keys only ever grow.
type Report struct {
	Node  string `json:"node"`
	Level Level  `json:"level"`
	// Model is the GPUs' model as NVML (else the tools' own output) names it; "" unknown.
	Model     string    `json:"model"`
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"`
	Verdict   Verdict   `json:"verdict"`
	Figures   []Figure  `json:"figures"`
	Tests     []Test    `json:"tests"`
	// Refused says why validation did not start (a prolog, a busy node); Verdict is then
	// undecided and Tests empty.
	Refused string `json:"refused,omitempty"`
}

// Figure is one measured figure and how it was judged.
type Figure struct {
	Name  string  `json:"name"`  // nccl_busbw, nccl_net_busbw, h2d_bw, d2h_bw, d2d_bw, ib_write_bw, gemm_gflops
	Value float64 `json:"value"` // the measurement, in Unit
	Unit  string  `json:"unit"`  // "GB/s", "Gb/s", "Gflop/s"
	// Floor is the least Value that passes; 0: no floor is known, and the figure is only
	// reported (its test warns).
	Floor float64 `json:"floor"`
	// Expected is what a healthy node of the model measures; 0 unknown.
	Expected float64 `json:"expected"`
	// Source is where Floor and Expected come from.
	Source string `json:"source"`
	// Device is the GPU ("GPU 3") or HCA ("mlx5_0") measured; "" for the whole node.
	Device string `json:"device"`
	OK     bool   `json:"ok"`
}

// Test is one test of the level and its result.
type Test struct {
	Name    string        `json:"name"`
	Status  checks.Status `json:"status"` // ok, warn, fail, skip, error
	Summary string        `json:"summary"`
	// Remedy is what a failing test calls for (reset_gpu, reboot, service, admin); "" else.
	Remedy checks.Remedy `json:"remedy"`
	// DurationS is how long the test ran.
	DurationS float64 `json:"duration_s"`
}

// WriteJSON writes r as indented JSON, with a final newline.
func WriteJSON(w io.Writer, r Report) error {
	if r.Figures == nil {
		r.Figures = []Figure{}
	}
	if r.Tests == nil {
		r.Tests = []Test{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// judge is the level's verdict from its tests: failed when one failed; undecided when none
// failed but one could not decide (error), or none ran at all (all skipped); else passed.
func judge(tests []Test) Verdict {
	ran, undecided := 0, false
	for _, t := range tests {
		switch t.Status {
		case checks.StatusFail:
			return VerdictFailed
		case checks.StatusError:
			undecided = true
		case checks.StatusOK, checks.StatusWarn:
			ran++
		}
	}
	if undecided || ran == 0 {
		return VerdictUndecided
	}
	return VerdictPassed
}
