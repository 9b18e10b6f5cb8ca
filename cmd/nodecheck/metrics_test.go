package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	metricTiming  = regexp.MustCompile(`(?m)^(nodecheck_\w+_seconds\{[^}]*\}) \S+$`)
	metricVersion = regexp.MustCompile(`version="[^"]*"`)
	// drainActionSet matches a drain action series that is 1.
	drainActionSet = regexp.MustCompile(`(?m)^nodecheck_drain_action\{[^}]*\} 1$`)
)

// normalizeMetrics blanks what changes from run to run: clocks, durations, the version.
func normalizeMetrics(s string) string {
	s = metricTiming.ReplaceAllString(s, "$1 X")
	return metricVersion.ReplaceAllString(s, `version="X"`)
}

// TestRunPromFile: `nodecheck run --prom-file` writes the run's metrics, whatever its outcome,
// and a snapshot replay writes only to a path given on the command line.
func TestRunPromFile(t *testing.T) {
	snaps := filepath.Join(repoRoot, "testdata", "snapshots")
	dir := t.TempDir()
	configured := filepath.Join(dir, "configured.prom")
	cfg := filepath.Join(dir, "nodecheck.toml")
	if err := os.WriteFile(cfg, []byte("prom_file = \""+configured+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		golden   string // "": only check that a file was (or was not) written
		flag     bool   // --prom-file is given
	}{
		{name: "unhealthy replay", args: []string{"--snapshot", filepath.Join(snaps, "h100-ib-port-down")}, wantCode: 1, golden: "run-h100-ib-port-down.prom", flag: true},
		{name: "healthy replay", args: []string{"--snapshot", filepath.Join(snaps, "h100-healthy")}, wantCode: 0, golden: "run-h100-healthy.prom", flag: true},
		{name: "dry run that would drain", args: []string{"--snapshot", filepath.Join(snaps, "h100-ib-port-down"), "--mode", "health", "--node", "n1", "--drain", "--dry-run"}, wantCode: 1, flag: true},
		{name: "replay ignores prom_file of the config", args: []string{"--snapshot", filepath.Join(snaps, "h100-healthy"), "--config", cfg}, wantCode: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(configured)
			path := filepath.Join(t.TempDir(), "nodecheck.prom")
			args := append([]string{"run", "--format", "json"}, tc.args...)
			if tc.flag {
				args = append(args, "--prom-file", path)
			}
			_, stderr, code := runCLI(t, nil, args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if _, err := os.Stat(configured); err == nil {
				t.Errorf("a replay wrote prom_file %s of the config", configured)
			}
			got, err := os.ReadFile(path)
			if !tc.flag {
				if err == nil {
					t.Errorf("wrote %s without --prom-file", path)
				}
				return
			}
			if err != nil {
				t.Fatalf("no metrics written: %v; stderr:\n%s", err, stderr)
			}
			if tc.golden != "" {
				golden(t, filepath.Join("metrics", tc.golden), normalizeMetrics(string(got)))
			}
			if strings.Contains(tc.name, "dry run") && len(drainActionSet.FindAllString(string(got), -1)) != 1 {
				// Which action depends on whether Slurm answers here; that there is one is the point.
				t.Errorf("a dry run's metrics should say the action it would take:\n%s", got)
			}
		})
	}
}

// TestRunPromFileConfigError: a run that cannot use its config still writes metrics, to the
// path read leniently from the broken file, with nodecheck_config_error 1; in a prolog it
// exits 0 and in a health check 2, as without metrics.
func TestRunPromFileConfigError(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "nodecheck.prom")
	bad := filepath.Join(dir, "nodecheck.toml")
	// prom_file comes before the first table, as the example config asks, and the file has a
	// typo further down.
	if err := os.WriteFile(bad, []byte("prom_file = \""+prom+"\"\n[checks.ib_ports]\nmin_rate_gpbs = 400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		wantCode int
	}{
		{"prolog passes", map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": "gpu07", "SLURM_JOB_ID": "42"}, exitHealthy},
		{"health check cannot run", map[string]string{"SLURMD_NODENAME": "gpu07"}, exitCannotRun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(prom)
			// A live run: the config fails before the node is read.
			args := []string{"run", "--config", bad}
			if tc.wantCode == exitCannotRun {
				args = append(args, "--mode", "health")
			}
			_, stderr, code := runCLI(t, tc.env, args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			got, err := os.ReadFile(prom)
			if err != nil {
				t.Fatalf("no metrics written: %v; stderr:\n%s", err, stderr)
			}
			for _, want := range []string{
				`nodecheck_config_error{node="gpu07"} 1`,
				`nodecheck_node_healthy{node="gpu07"} 0`,
				`nodecheck_verdict{node="gpu07",verdict="undecided"} 1`,
				`nodecheck_drain_action{action="none",node="gpu07"} 0`,
			} {
				if !strings.Contains(string(got), want+"\n") {
					t.Errorf("metrics lack %q:\n%s", want, got)
				}
			}
			if strings.Contains(string(got), "nodecheck_check_status") {
				t.Errorf("no check ran, but the metrics have check statuses:\n%s", got)
			}
		})
	}
}

// TestRunPromFileWriteFailure: metrics that cannot be written are logged, and the exit code
// is the node's, not 2.
func TestRunPromFileWriteFailure(t *testing.T) {
	snaps := filepath.Join(repoRoot, "testdata", "snapshots")
	path := filepath.Join(t.TempDir(), "absent", "nodecheck.prom")
	tests := []struct {
		name string
		snap string
		want int
	}{
		{"healthy", "h100-healthy", exitHealthy},
		{"unhealthy", "h100-ib-port-down", exitUnhealthy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, "run", "--snapshot", filepath.Join(snaps, tc.snap), "--prom-file", path)
			if code != tc.want {
				t.Errorf("exit code %d, want %d", code, tc.want)
			}
			if !strings.Contains(stderr, "metrics not written") || !strings.Contains(stderr, "write metrics file "+path) {
				t.Errorf("stderr does not log the failure:\n%s", stderr)
			}
			if !strings.Contains(out, "HEALTHY") {
				t.Errorf("the report is missing:\n%s", out)
			}
		})
	}
}
