package run

import (
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
)

// TestExitCode is the README's exit code table, one row per verdict and mode.
func TestExitCode(t *testing.T) {
	tests := []struct {
		verdict                      checks.Verdict
		prolog, epilog, health, manu int
	}{
		{checks.VerdictHealthy, 0, 0, 0, 0},
		{checks.VerdictUnhealthy, 1, 1, 1, 1},
		{checks.VerdictUndecided, 0, 0, 3, 3},
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
