package checks

import (
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

func TestBudgetFor(t *testing.T) {
	def := config.Default(Schema()).Budget // prolog 5s, epilog 30s, health 50s, manual none
	at := slurm.Pos{File: "/etc/slurm/slurm.conf", Line: 12}
	s := time.Second
	tests := []struct {
		name    string
		mode    config.Mode
		budget  config.Budget
		hooks   slurm.Hooks
		wantRun time.Duration
		wantStr string
	}{
		{name: "prolog with no Slurm limit keeps its budget", mode: config.ModeProlog, budget: def, wantRun: 5 * s,
			wantStr: "budget 5s (budget.prolog, built-in default; no Slurm limit)"},
		{name: "a Slurm limit far above changes nothing", mode: config.ModeProlog, budget: def,
			hooks:   slurm.Hooks{PrologEpilogTimeout: 60 * s, Set: map[string]slurm.Pos{"PrologEpilogTimeout": at}},
			wantRun: 5 * s, wantStr: "budget 5s (budget.prolog, built-in default; Slurm PrologEpilogTimeout 1m0s (slurm.conf:12))"},
		{name: "a Slurm limit below the budget caps it, less a margin", mode: config.ModeEpilog, budget: def,
			hooks:   slurm.Hooks{PrologEpilogTimeout: 20 * s, Set: map[string]slurm.Pos{"PrologEpilogTimeout": at}},
			wantRun: 18 * s, wantStr: "budget 18s (budget.epilog, built-in default: 30s; Slurm PrologEpilogTimeout 20s (slurm.conf:12), less a margin)"},
		{name: "EpilogTimeout (25.05) wins over PrologEpilogTimeout", mode: config.ModeEpilog, budget: def,
			hooks:   slurm.Hooks{PrologEpilogTimeout: 600 * s, EpilogTimeout: 10 * s, Set: map[string]slurm.Pos{"PrologEpilogTimeout": at, "EpilogTimeout": at}},
			wantRun: 9 * s},
		{name: "a limit of a second or less leaves half", mode: config.ModeProlog, budget: def,
			hooks:   slurm.Hooks{PrologTimeout: s, Set: map[string]slurm.Pos{"PrologTimeout": at}},
			wantRun: 500 * time.Millisecond},
		{name: "health stays under the 60s slurmd kills it at", mode: config.ModeHealth, budget: config.Budget{Health: 90 * s},
			wantRun: 54 * s, wantStr: "budget 54s (budget.health, built-in default: 1m30s; Slurm's fixed 1m0s, less a margin)"},
		{name: "the default health budget is already under it", mode: config.ModeHealth, budget: def, wantRun: 50 * s},
		{name: "HealthCheckTimeout where Slurm has it", mode: config.ModeHealth, budget: def,
			hooks:   slurm.Hooks{HealthCheckTimeout: 30 * s, Set: map[string]slurm.Pos{"HealthCheckTimeout": at}},
			wantRun: 27 * s},
		{name: "no budget in a hook still gets Slurm's cap", mode: config.ModeProlog, budget: config.Budget{},
			hooks:   slurm.Hooks{PrologEpilogTimeout: 120 * s, Set: map[string]slurm.Pos{"PrologEpilogTimeout": at}},
			wantRun: 108 * s, wantStr: "budget 1m48s (budget.prolog, built-in default: none; Slurm PrologEpilogTimeout 2m0s (slurm.conf:12), less a margin)"},
		{name: "manual has no Slurm limit", mode: config.ModeManual, budget: def, wantRun: 0,
			wantStr: "budget none (budget.manual, built-in default; no Slurm limit)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := BudgetFor(tc.mode, tc.budget, "", tc.hooks)
			if b.Run != tc.wantRun {
				t.Errorf("Run = %s, want %s", b.Run, tc.wantRun)
			}
			if tc.wantStr != "" && b.String() != tc.wantStr {
				t.Errorf("String = %q\nwant     %q", b.String(), tc.wantStr)
			}
		})
	}
}
