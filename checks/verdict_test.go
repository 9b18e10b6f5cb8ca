package checks

import (
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeRun(t *testing.T) {
	r := func(st ...Status) []Result {
		var out []Result
		for _, s := range st {
			out = append(out, Result{Status: s})
		}
		return out
	}
	tests := []struct {
		name           string
		results        []Result
		errorIsFailure bool
		interrupted    bool
		want           Verdict
	}{
		{"ok, warn and skip decided", r(StatusOK, StatusWarn, StatusSkip), false, false, VerdictHealthy},
		{"every check skipped still decided", r(StatusSkip, StatusSkip), false, false, VerdictHealthy},
		{"a failure", r(StatusOK, StatusFail), false, false, VerdictUnhealthy},
		{"a failure wins over an error", r(StatusError, StatusFail), false, false, VerdictUnhealthy},
		{"an error alone: undecided", r(StatusOK, StatusError), false, false, VerdictUndecided},
		{"every check could not decide: never healthy", r(StatusError, StatusError, StatusError), false, false, VerdictUndecided},
		{"error_is_failure", r(StatusOK, StatusError), true, false, VerdictUnhealthy},
		{"interrupted after all ok", r(StatusOK), false, true, VerdictUndecided},
		{"interrupted with a failure is unhealthy", r(StatusFail), false, true, VerdictUnhealthy},
		{"a status this version does not know", r(StatusOK, "odd"), false, false, VerdictUndecided},
		{"no check at all decided nothing wrong", nil, false, false, VerdictHealthy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeRun(tc.results, tc.errorIsFailure, tc.interrupted); got != tc.want {
				t.Errorf("judgeRun = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExitCode is the exit code table of docs/output.md, one row per verdict and mode.
func TestExitCode(t *testing.T) {
	tests := []struct {
		verdict                      Verdict
		prolog, epilog, health, manu int
	}{
		{VerdictHealthy, 0, 0, 0, 0},
		{VerdictUnhealthy, 1, 1, 1, 1},
		{VerdictUndecided, 0, 0, 3, 3},
	}
	for _, tc := range tests {
		for _, m := range []struct {
			mode config.Mode
			want int
		}{{config.ModeProlog, tc.prolog}, {config.ModeEpilog, tc.epilog}, {config.ModeHealth, tc.health}, {config.ModeManual, tc.manu}} {
			if got := ExitCode(tc.verdict, m.mode); got != m.want {
				t.Errorf("ExitCode(%s, %s) = %d, want %d", tc.verdict, m.mode, got, m.want)
			}
		}
	}
}

func TestConfigErrorExitCode(t *testing.T) {
	tests := []struct {
		mode       config.Mode
		failClosed bool
		want       int
	}{
		{config.ModeProlog, false, ExitHealthy},
		{config.ModeEpilog, false, ExitHealthy},
		{config.ModeProlog, true, ExitCannotRun},
		{config.ModeEpilog, true, ExitCannotRun},
		{config.ModeHealth, false, ExitCannotRun},
		{config.ModeManual, false, ExitCannotRun},
	}
	for _, tc := range tests {
		if got := ConfigErrorExitCode(tc.mode, tc.failClosed); got != tc.want {
			t.Errorf("ConfigErrorExitCode(%s, fail_closed=%v) = %d, want %d", tc.mode, tc.failClosed, got, tc.want)
		}
	}
}
