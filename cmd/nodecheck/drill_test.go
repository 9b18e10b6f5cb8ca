package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrillCLI: the drill's usage errors exit 2 with usage; a drill whose preflight cannot
// read the node (scontrol is /bin/false here) did nothing, says why, and exits 2 too.
func TestDrillCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "nodecheck.toml")
	body := "prom_file = \"" + filepath.Join(dir, "nodecheck.prom") + "\"\n[drain]\nscontrol = \"/bin/false\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-ib-port-down")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no node", []string{"drill", "--snapshot", snap}, exitCannotRun, "", "give --node and --snapshot"},
		{"bad format", []string{"drill", "--node", "n1", "--snapshot", snap, "--format", "yaml"}, exitCannotRun, "", `--format "yaml"`},
		{"https", []string{"drill", "--node", "n1", "--snapshot", snap, "--config", cfg, "--prometheus", "https://p:9090"}, exitCannotRun, "speaks no TLS", ""},
		{"node unreadable", []string{"drill", "--node", "n1", "--snapshot", snap, "--config", cfg}, exitCannotRun, "preflight         FAIL", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "nodecheck-drill.prom")); err == nil {
				t.Error("a drill that did nothing wrote its textfile")
			}
		})
	}
}
