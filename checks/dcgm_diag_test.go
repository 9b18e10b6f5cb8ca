package checks

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeDCGMDiag(t *testing.T) {
	gpus := dcgmGPUs{inv: dcgmTestGPUs(), ok: true}
	for _, tc := range []struct {
		name       string
		file       string
		level      int
		warnCodes  []int
		status     Status
		remedy     Remedy
		summary    string
		failingBus []string
		warns      []string
	}{
		{name: "DCGM 4, level 1, all pass", file: "diag4-r1-pass-8gpu.json", level: 1, status: StatusOK,
			summary: "DCGM level 1 diagnostic (DCGM 4.4.2): 8 tests passed"},
		// Persistence mode off: dcgmi prints the warning as "Fail"; its severity is CONFIG.
		{name: "persistence mode off is CONFIG: admin", file: "diag4-r1-persistence-off-gpu0.json", level: 1, status: StatusFail, remedy: RemedyAdmin,
			summary: "gpu 0 (0000:18:00.0): Deployment/software Fail: Persistence Mode: Persistence mode for GPU 0 is disabled.", failingBus: []string{"0000:18:00.0"}},
		{name: "... or a warning where the site says so", file: "diag4-r1-persistence-off-gpu0.json", level: 1, warnCodes: []int{29}, status: StatusWarn,
			warns: []string{"gpu 0 (0000:18:00.0)"}},
		// GPU 1 by its serial; the MONITOR "Fail" on GPU 0 only warns.
		{name: "faulty memory on GPU 1 is ISOLATE: service; a MONITOR Fail warns", file: "diag4-r2-memory-fail-gpu1-clocks-monitor-gpu0.json", level: 2,
			status: StatusFail, remedy: RemedyService, summary: "gpu 1 (0000:28:00.0): Hardware/memory Fail: Found 12 faulty memory elements on GPU 1 (DCGM_FR_FAULTY_MEMORY (52), ISOLATE)",
			failingBus: []string{"0000:28:00.0"}, warns: []string{"gpu 0 (0000:18:00.0)"}},
		{name: "a runtime error is undecided", file: "diag4-runtime-error-already-running.json", level: 1, status: StatusError,
			summary: "DCGM's level 1 diagnostic did not run (DCGM 4.4.2): Error: Unable to complete diagnostic for group 2147483647. Return: (-39)"},
		{name: "DCGM 3, per-GPU results", file: "diag3-r2-memory-mismatch-gpu2.json", level: 2, status: StatusFail, remedy: RemedyService,
			summary: "gpu 2 (0000:38:00.0): Hardware/GPU Memory Fail: A memory mismatch was detected on GPU 2", failingBus: []string{"0000:38:00.0"}},
		// An older DCGM's Deployment results name no GPU and carry no code: a failure DCGM
		// explains no further is admin, its "Warn" a warning.
		{name: "DCGM 3, node-level Fail and Warn", file: "diag3-j-persistence-fail-env-warn.json", level: 1, status: StatusFail, remedy: RemedyAdmin,
			summary: "node: Deployment/Persistence Mode Fail: no message (no DCGM error given)", failingBus: []string{""}, warns: []string{"node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := dcgm.ParseDiag([]byte(dcgmFixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			res := judgeDCGMDiag(rep, tc.level, gpus, tc.warnCodes)
			settleRemedy(&res)
			assertRemedies(t, res)
			if res.Status != tc.status || res.Remedy != tc.remedy || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("got %s %q remedy %q; want %s containing %q, remedy %q", res.Status, res.Summary, res.Remedy, tc.status, tc.summary, tc.remedy)
			}
			var failing, warns []string
			for _, d := range res.Details {
				switch d.Status {
				case StatusFail:
					failing = append(failing, d.Subject.GPU.Bus)
				case StatusWarn:
					warns = append(warns, d.Device)
				}
			}
			if !slices.Equal(failing, tc.failingBus) || !slices.Equal(warns, tc.warns) {
				t.Errorf("failing buses %q, warning devices %q; want %q, %q", failing, warns, tc.failingBus, tc.warns)
			}
		})
	}
}

func TestDCGMDiagGate(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		mode  config.Mode
		level int
		left  time.Duration // 0: no budget
		run   bool
		want  string
	}{
		{"health, level 1, room", config.ModeHealth, 1, 31 * time.Second, true, ""},
		{"health, level 1, exactly min_budget", config.ModeHealth, 1, 30 * time.Second, true, ""},
		{"health, level 1, a second short", config.ModeHealth, 1, 29 * time.Second, false, "has 29s of its budget left"},
		{"health, level 2", config.ModeHealth, 2, time.Hour, false, "level 2 not run in health mode"},
		{"manual, level 3, no budget", config.ModeManual, 3, 0, true, ""},
		{"prolog", config.ModeProlog, 1, time.Hour, false, "not run in prolog mode"},
		{"epilog", config.ModeEpilog, 1, time.Hour, false, "not run in epilog mode"},
	} {
		cfg := dcgmDiag{}.Section().(*dcgmDiagConfig)
		cfg.Level = tc.level
		env := &Env{Mode: tc.mode}
		if tc.left > 0 {
			env.Budget.Deadline = now.Add(tc.left)
		}
		res, run := dcgmDiagGate(env, cfg, now)
		if run != tc.run || !strings.Contains(res.Summary, tc.want) {
			t.Errorf("%s: run %v %q, want %v %q", tc.name, run, res.Summary, tc.run, tc.want)
		}
	}
}

func TestDCGMDiagRun(t *testing.T) {
	const diag1 = "diag --host localhost -r 1 -j"
	for _, tc := range []struct {
		name    string
		answers map[string]node.CmdResult
		hang    string
		status  Status
		summary string
	}{
		{"no dcgmi", nil, "", StatusSkip, "not installed"},
		{"no host engine", map[string]node.CmdResult{diag1: {Stdout: dcgmFixture(t, "no-host-engine.txt"), ExitCode: dcgm.ExitConnectionInvalid}}, "", StatusSkip, "no DCGM host engine answers at localhost"},
		{"the diagnostic never ends", nil, "diag", StatusError, "the DCGM host engine at localhost did not answer diag within"},
		{"failing GPU, dcgmi exits ISOLATE", map[string]node.CmdResult{diag1: {Stdout: dcgmFixture(t, "diag4-r2-memory-fail-gpu1-clocks-monitor-gpu0.json"), ExitCode: dcgm.ExitNVVSIsolate}}, "",
			StatusFail, "Found 12 faulty memory elements on GPU 1"},
		{"pass", map[string]node.CmdResult{diag1: {Stdout: dcgmFixture(t, "diag4-r1-pass-8gpu.json")}}, "", StatusOK, "8 tests passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &dcgmExecFacts{fakeFacts: &fakeFacts{gpus: dcgmTestGPUs()}, answers: tc.answers, hang: tc.hang}
			env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeManual}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			res := dcgmDiag{}.Run(ctx, env)
			if res.Status != tc.status || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s containing %q", res.Status, res.Summary, tc.status, tc.summary)
			}
		})
	}
}
