package checks

import (
	"testing"
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
