package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/drain"
)

func TestVerdictLine(t *testing.T) {
	res := func(id string, st checks.Status) checks.Result { return checks.Result{Check: id, Status: st} }
	tests := []struct {
		name string
		rep  checks.Report
		want string
	}{
		{"healthy", checks.Report{Verdict: checks.VerdictHealthy, Results: []checks.Result{res("a", checks.StatusOK), res("b", checks.StatusSkip)}},
			"HEALTHY (2 checks)"},
		{"unhealthy", checks.Report{Verdict: checks.VerdictUnhealthy, Results: []checks.Result{res("a", checks.StatusFail)}},
			"UNHEALTHY (1 check)"},
		{"undecided names the checks that could not decide", checks.Report{Verdict: checks.VerdictUndecided,
			Results: []checks.Result{res("gres_devices", checks.StatusError), res("ib_ports", checks.StatusOK), res("gpu_count", checks.StatusError)}},
			"UNDECIDED: 2 checks could not decide (gres_devices, gpu_count) (3 checks)"},
		{"interrupted", checks.Report{Verdict: checks.VerdictUndecided, Interrupted: true,
			Results: []checks.Result{res("a", checks.StatusOK), res("b", checks.StatusError)}},
			"UNDECIDED: interrupted, 1 check could not decide (b) (2 checks)"},
		{"config error: no check ran, never HEALTHY (0 checks)", checks.Report{Verdict: checks.VerdictUndecided, ConfigError: "nodecheck.toml:2: x"},
			"UNDECIDED: the config is unusable, no check ran"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tc.rep, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("verdict line %q, want %q", got, tc.want)
			}
			if strings.Contains(b.String(), "HEALTHY") && tc.rep.Verdict != checks.VerdictHealthy && !strings.Contains(b.String(), "UNHEALTHY") {
				t.Errorf("a %s run printed HEALTHY:\n%s", tc.rep.Verdict, b.String())
			}
		})
	}
}

// TestTextDetailsBudget: --details says which budget the run used and which Slurm limit
// bounded it, and which slurm.conf it read.
func TestTextDetailsBudget(t *testing.T) {
	rep := checks.Report{Node: "gpu01", Mode: config.ModeProlog, Verdict: checks.VerdictHealthy, SlurmConf: "/etc/slurm/slurm.conf (SLURM_CONF)",
		Budget: checks.BudgetFor(config.ModeProlog, config.Budget{Prolog: 5 * time.Second}, "/etc/nodecheck/nodecheck.toml",
			slurm.Hooks{PrologEpilogTimeout: time.Minute, Set: map[string]slurm.Pos{"PrologEpilogTimeout": {File: "/etc/slurm/slurm.conf", Line: 12}}})}
	var b bytes.Buffer
	if err := WriteText(&b, rep, TextOptions{Details: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"budget 5s (budget.prolog, /etc/nodecheck/nodecheck.toml; Slurm PrologEpilogTimeout 1m0s (slurm.conf:12))\n",
		"slurm.conf /etc/slurm/slurm.conf (SLURM_CONF)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("details lack %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteText(&b, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "budget") {
		t.Errorf("the budget line is for --details only:\n%s", b.String())
	}
}

// TestJSONVerdict: "verdict" says all three; "healthy" is kept for old readers and is true
// only for a healthy run; the budget says which Slurm limit it used; drain is drain's own
// Outcome.
func TestJSONVerdict(t *testing.T) {
	for _, v := range checks.Verdicts() {
		rep := checks.Report{Node: "gpu01", Mode: config.ModeEpilog, Verdict: v, Interrupted: v == checks.VerdictUndecided,
			Budget: checks.BudgetFor(config.ModeEpilog, config.Budget{Epilog: 30 * time.Second}, "",
				slurm.Hooks{EpilogTimeout: 20 * time.Second, Set: map[string]slurm.Pos{"EpilogTimeout": {File: "/etc/slurm/slurm.conf", Line: 3}}})}
		var b bytes.Buffer
		if err := WriteJSON(&b, rep, WithDrain(&drain.Outcome{Action: drain.ActionNone, Node: "gpu01"})); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Verdict     string `json:"verdict"`
			Healthy     bool   `json:"healthy"`
			Interrupted bool   `json:"interrupted"`
			Budget      struct {
				Seconds           float64 `json:"seconds"`
				ConfiguredSeconds float64 `json:"configured_seconds"`
				From              string  `json:"from"`
				SlurmLimit        string  `json:"slurm_limit"`
				SlurmLimitSeconds float64 `json:"slurm_limit_seconds"`
				SetAt             string  `json:"slurm_limit_set_at"`
				Capped            bool    `json:"capped_by_slurm_limit"`
			} `json:"budget"`
			Drain struct {
				Action string `json:"action"`
			} `json:"drain"`
		}
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%v:\n%s", err, b.String())
		}
		if got.Verdict != string(v) || got.Healthy != (v == checks.VerdictHealthy) || got.Interrupted != (v == checks.VerdictUndecided) {
			t.Errorf("verdict %q healthy %v interrupted %v for a %s run", got.Verdict, got.Healthy, got.Interrupted, v)
		}
		b2 := got.Budget
		if b2.Seconds != 18 || b2.ConfiguredSeconds != 30 || b2.From != "budget.epilog, built-in default" || b2.SlurmLimit != "EpilogTimeout" ||
			b2.SlurmLimitSeconds != 20 || b2.SetAt != "/etc/slurm/slurm.conf:3" || !b2.Capped {
			t.Errorf("budget %+v", b2)
		}
		if got.Drain.Action != "none" {
			t.Errorf("drain %+v", got.Drain)
		}
	}
}
