package main

import (
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
)

// TestExplain checks `nodecheck explain` for every check, and the list without an argument,
// against the goldens under testdata/golden/explain.
func TestExplain(t *testing.T) {
	for _, id := range append([]string{""}, checks.IDs()...) {
		name := id
		args := []string{"explain"}
		if id == "" {
			name = "index"
		} else {
			args = append(args, id)
		}
		t.Run(name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, args...)
			if code != exitHealthy || stderr != "" {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			golden(t, "explain/"+name+".txt", out)
		})
	}
}

func TestExplainErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"unknown check", []string{"explain", "ib_port"},
			"nodecheck explain: unknown check \"ib_port\": known checks are " + strings.Join(checks.IDs(), ", ") + "\n"},
		{"two checks", []string{"explain", "ib_ports", "gpu_count"}, "nodecheck: accepts at most 1 arg(s), received 2\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, tc.args...)
			if code != exitCannotRun {
				t.Errorf("exit code %d, want %d", code, exitCannotRun)
			}
			if out != "" {
				t.Errorf("stdout %q, want none", out)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q, want %q", stderr, tc.wantStderr)
			}
		})
	}
}
