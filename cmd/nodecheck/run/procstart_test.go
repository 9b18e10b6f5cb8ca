package run

import (
	"testing"
	"time"
)

func TestParseStatStartTime(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want uint64
		ok   bool
	}{
		{"27266 (cat) R 27264 27264 8506 0 -1 4194304 126 0 0 0 0 0 0 0 20 0 1 0 944407 3133440 386", 944407, true},
		{"42 (a (b) c) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123 0 0", 123, true}, // a name with ") "
		{"42 (x) S 1 2 3", 0, false},
		{"no parenthesis", 0, false},
		{"42 (x) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 -5 0 0", 0, false},
	} {
		got, ok := parseStatStartTime([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStatStartTime(%q) = %d, %v; want %d, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// TestProcessStart: this test process started before now, and not long before (a test
// binary starts in well under a minute); the answer has /proc's 10 ms resolution.
func TestProcessStart(t *testing.T) {
	now := time.Now()
	start := ProcessStart(now)
	if start.After(now) || now.Sub(start) > 10*time.Minute {
		t.Errorf("processStart = %s before now, want a moment ago", now.Sub(start))
	}
	t.Logf("this test process started %s ago", now.Sub(start).Round(time.Millisecond))
}
