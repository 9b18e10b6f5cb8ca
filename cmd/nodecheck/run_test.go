package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const repoRoot = "../.."

// run calls the binary's own entry point with a clean environment plus env.
func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code = execute(context.Background(), append([]string{"nodecheck"}, args...), strings.NewReader(""), &out, &errb, getenv)
	return out.String(), errb.String(), code
}

var (
	timingJSON = regexp.MustCompile(`"(duration_ms|started_at)": [^,\n]+`)
	timingText = regexp.MustCompile(`\b\d+(\.\d+)?(µs|ms|s)\)`)
)

// normalize blanks what changes from run to run: clocks and durations.
func normalize(s string) string {
	s = timingJSON.ReplaceAllString(s, `"$1": "X"`)
	return timingText.ReplaceAllString(s, "T)")
}

// golden compares got with testdata/golden/NAME at the repository root.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenAt(t, filepath.Join(repoRoot, "testdata", "golden", name), got)
}

// goldenAt compares got with the file at path, or rewrites it under -update.
func goldenAt(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./cmd/nodecheck -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test ./cmd/nodecheck -update and review the diff:\n%s", path, diff)
	}
}

// TestRunSnapshots replays every recorded node through the binary's entry point and checks the
// exit code and both outputs against the goldens. The expected exit code is part of the
// golden name's table below, so a snapshot added without an expectation fails the test.
func TestRunSnapshots(t *testing.T) {
	wantCode := map[string]int{
		"a100-healthy":                0,
		"cpu-node-no-gpu-no-ib":       0,
		"h100-healthy":                0,
		"h100-dev-missing":            1,
		"h100-dev-regular-file":       1,
		"h100-dev-wrong-minor":        1,
		"h100-fabric-in-progress":     1,
		"h100-fm-down":                1,
		"h100-fm-version-mismatch":    1,
		"h100-gpu-lost":               1,
		"h100-gres-count-high":        1,
		"h100-nvml-driver-not-loaded": 1,
		"h100-pcie-x8":                1,
		"h100-ib-hang":                1,
		"h100-ib-port-down":           1,
		"h100-ib-port-missing":        1,
		"h100-ib-port-polling":        1,
		"h100-ib-slow-rate":           1,
		"h100-nccl-ok":                0,
		"h100-nccl-low-busbw":         1,
		"h100-nccl-wrong":             1,
		"h100-nccl-cuda-init-failure": 1,
		"h100-ecc-uncorrectable":      1,
		"h100-remap-pending":          1,
		"h100-remap-failed":           1,
		"h100-nvlink-down":            1,
		"a100-nvlink-all-inactive":    1,
		// job_leftovers judges only in a prolog or epilog: TestRunEpilogLeftovers.
		"h100-leftover-process": 0,
	}
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "snapshots", "*", "meta.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no snapshots found: %v", err)
	}
	for _, meta := range dirs {
		dir := filepath.Dir(meta)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, ok := wantCode[name]
			if !ok {
				t.Fatalf("snapshot %s has no expected exit code in this test", name)
			}
			out, stderr, code := run(t, nil, "run", "--all", "--snapshot", dir, "--format", "json")
			if code != want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, want, stderr)
			}
			golden(t, "run/"+name+".json", normalize(out))
			if name == "h100-ib-hang" {
				return // the text form adds nothing but another 2 s wait
			}
			out, _, _ = run(t, nil, "run", "--all", "--snapshot", dir)
			golden(t, "run/"+name+".txt", normalize(out))
		})
	}
}

// TestRunEpilogLeftovers replays h100-leftover-process (a process on GPU 2) as the epilogs of
// jobs that slurmd gave different GPUs: only the job holding GPU 2 fails, and no report
// names another job's GPU.
func TestRunEpilogLeftovers(t *testing.T) {
	dir := filepath.Join(repoRoot, "testdata", "snapshots", "h100-leftover-process")
	tests := []struct {
		name, gpus string
		wantCode   int
	}{
		{"job-on-gpu2", "2", exitUnhealthy},
		{"job-on-gpu0-1", "0,1", exitHealthy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_ID": "42",
				"SLURM_JOB_GPUS": tc.gpus, "SLURM_JOB_UID": "1001", "SLURM_JOB_USER": "alice"}
			out, stderr, code := run(t, env, "run", "--snapshot", dir, "--check", "job_leftovers")
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			golden(t, "run/epilog-leftover-process-"+tc.name+".txt", normalize(out))
		})
	}
}

// TestHangEndsWithinBudget: a snapshot whose InfiniBand reads stall for 60 s ends within the
// prolog budget, with ib_ports failing as timed out.
func TestHangEndsWithinBudget(t *testing.T) {
	dir := filepath.Join(repoRoot, "testdata", "snapshots", "h100-ib-hang")
	start := time.Now()
	out, stderr, code := run(t, map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"},
		"run", "--snapshot", dir, "--format", "json")
	elapsed := time.Since(start)
	if elapsed > 5*time.Second {
		t.Errorf("run took %s, over the prolog budget of 5s", elapsed)
	}
	if code != exitUnhealthy {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, `"mode": "prolog"`) || !strings.Contains(out, "timed out") {
		t.Errorf("want a prolog-mode report with a timed out check, got:\n%s", out)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "nodecheck.toml")
	if err := os.WriteFile(bad, []byte("[checks.ib_ports]\nmin_rate_gpbs = 400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(dir, "closed.toml")
	if err := os.WriteFile(closed, []byte("fail_closed = true\n[checks.ib_ports]\nmin_rate_gpbs = 400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	prolog := map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"}
	tests := []struct {
		name       string
		env        map[string]string
		config     string
		wantCode   int
		wantStderr string
		wantStdout string
	}{
		{"manual mode cannot run", nil, bad, exitCannotRun, "nodecheck.toml:2", ""},
		{"prolog mode logs and passes", prolog, bad, exitHealthy, `"level":"error"`, "CONFIG ERROR"},
		{"prolog mode with fail_closed fails", prolog, closed, exitCannotRun, "closed.toml:3", ""},
		{"missing explicit config", nil, filepath.Join(dir, "absent.toml"), exitCannotRun, "absent.toml", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, tc.env, "run", "--snapshot", snap, "--config", tc.config)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr)
			}
			if !strings.Contains(out, tc.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantStdout, out)
			}
		})
	}
}

// TestExitCodes has one row per line of the README's exit code table.
func TestExitCodes(t *testing.T) {
	snaps := filepath.Join(repoRoot, "testdata", "snapshots")
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"healthy", []string{"run", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 0},
		{"unhealthy", []string{"run", "--snapshot", filepath.Join(snaps, "h100-ib-port-down")}, 1},
		{"unknown check", []string{"run", "--check", "nope", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2},
		{"unknown flag", []string{"run", "--bogus"}, 2},
		{"bad mode", []string{"run", "--mode", "pro", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2},
		{"bad format", []string{"run", "--format", "yaml", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2},
		{"snapshot that is not one", []string{"run", "--snapshot", t.TempDir()}, 2},
		{"version", []string{"version"}, 0},
		{"list", []string{"list"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, stderr, code := run(t, nil, tc.args...); code != tc.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
		})
	}
}

func TestList(t *testing.T) {
	out, _, _ := run(t, nil, "list", "--format", "json")
	golden(t, "list.json", out)
}
