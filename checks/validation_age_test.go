package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
)

// TestJudgeValidationAge: the expiry itself is still fresh, a second past it warns; never
// validated warns; a failure after the last pass warns.
func TestJudgeValidationAge(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	expiry := 7 * 24 * time.Hour
	at := func(d time.Duration, verdict string) history.Validation {
		return history.Validation{Level: "quick", Started: now.Add(-d).Unix(), Verdict: verdict}
	}
	tests := []struct {
		name    string
		pass    history.Validation
		hasPass bool
		last    history.Validation
		status  Status
		words   string
	}{
		{"at the expiry", at(expiry, "passed"), true, at(expiry, "passed"), StatusOK, "validated 7d ago (quick passed 2026-11-28T12:00:00Z)"},
		{"a second past it", at(expiry+time.Second, "passed"), true, at(expiry+time.Second, "passed"), StatusWarn, "not validated since 2026-11-28T11:59:59Z (quick passed 7d ago; [validate] expiry 7d)"},
		{"never validated", history.Validation{}, false, history.Validation{}, StatusWarn, "not validated: no passing validation"},
		{"failed after passing", at(time.Hour, "passed"), true, at(time.Minute, "failed"), StatusWarn, "did not pass"},
		{"only failures", history.Validation{}, false, at(time.Minute, "failed"), StatusWarn, "the last validation, quick failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeValidationAge(tc.pass, tc.hasPass, tc.last, now, expiry)
			if res.Status != tc.status || !strings.Contains(res.Summary, tc.words) {
				t.Errorf("got %s %q, want %s with %q", res.Status, res.Summary, tc.status, tc.words)
			}
		})
	}
}
