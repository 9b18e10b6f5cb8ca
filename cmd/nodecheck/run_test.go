package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nodecheck/nodecheck/checks"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const repoRoot = "../.."

// run calls the binary's own entry point with a clean environment plus env.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
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

// snapshotExitCodes is the exit code each bundled snapshot replays with; a snapshot added
// without an expectation fails TestRunSnapshots.
var snapshotExitCodes = map[string]int{
	// Undecided: its captures hold no ECC or remapped rows, which every A100 reports, so
	// gpu_memory_errors cannot judge them (never healthy by not looking).
	"a100-healthy":                3,
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
	// gres_affinity warns on a wrong gres.conf map; a warning never makes a node unhealthy.
	"h100-gres-cores-wrong-socket": 0,
	"h100-gres-links-islands":      0,
	// job_leftovers judges only in a prolog or epilog: TestRunEpilogLeftovers.
	"h100-leftover-process": 0,
	// The NVML signals.
	"h100-signals":        0,
	"h100-power-brake":    1,
	"h100-recovery-reset": 1,
	// DCGM's health watches: the injected PCIe replay (TestDCGMInjectedPCIeReplayDrains).
	"h100-dcgm-pcie-replay": 1,
}

// TestRunSnapshots replays every recorded node through the binary's entry point and checks the
// exit code (snapshotExitCodes) and both outputs against the goldens.
func TestRunSnapshots(t *testing.T) {
	wantCode := snapshotExitCodes
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
			out, stderr, code := runCLI(t, nil, "run", "--all", "--snapshot", dir, "--format", "json")
			if code != want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, want, stderr)
			}
			golden(t, "run/"+name+".json", normalize(out))
			checkSnapshotRemedies(t, name, out)
			if name == "h100-ib-hang" {
				return // the text form adds nothing but another 2 s wait
			}
			out, _, _ = runCLI(t, nil, "run", "--all", "--snapshot", dir)
			golden(t, "run/"+name+".txt", normalize(out))
		})
	}
}

// snapshotRemedies is the remedy each failing check of a failing snapshot names, as
// docs/remedies.md documents it: every failing snapshot is listed, and every check that
// fails in it.
var snapshotRemedies = map[string]map[string]checks.Remedy{
	"h100-dev-missing":            {"gres_devices": checks.RemedyReboot},   // the driver did not create /dev/nvidia5
	"h100-dev-regular-file":       {"gres_devices": checks.RemedyAdmin},    // someone made a file there
	"h100-dev-wrong-minor":        {"gres_devices": checks.RemedyAdmin},    // a mknod typo
	"h100-fabric-in-progress":     {"fabric_manager": checks.RemedyReboot}, // NVSentinel ADR-050
	"h100-fm-down":                {"fabric_manager": checks.RemedyReboot},
	"h100-fm-version-mismatch":    {"fabric_manager": checks.RemedyAdmin},
	"h100-gpu-lost":               {"gpu_count": checks.RemedyReboot}, // lost from NVML, on the PCI bus
	"h100-gres-count-high":        {"gpu_count": checks.RemedyAdmin},  // slurm.conf counts 9, gres.conf and the node 8
	"h100-nvml-driver-not-loaded": {"gpu_count": checks.RemedyReboot, "fabric_manager": checks.RemedyReboot},
	"h100-pcie-x8":                {"pcie_link": checks.RemedyService},
	"h100-ib-hang":                {"ib_ports": checks.RemedyReboot}, // a read that does not return
	"h100-ib-port-down":           {"ib_ports": checks.RemedyAdmin},  // InfiniBand port Disabled
	"h100-ib-port-missing":        {"ib_ports": checks.RemedyService},
	"h100-ib-port-polling":        {"ib_ports": checks.RemedyService},
	"h100-ib-slow-rate":           {"ib_ports": checks.RemedyService},
	"h100-nccl-low-busbw":         {"nccl_allreduce": checks.RemedyService},
	"h100-nccl-wrong":             {"nccl_allreduce": checks.RemedyService},
	"h100-nccl-cuda-init-failure": {"nccl_allreduce": checks.RemedyResetGPU},
	"h100-ecc-uncorrectable":      {"gpu_memory_errors": checks.RemedyResetGPU},
	"h100-remap-pending":          {"gpu_memory_errors": checks.RemedyResetGPU},
	"h100-remap-failed":           {"gpu_memory_errors": checks.RemedyService},
	"h100-nvlink-down":            {"nvlink": checks.RemedyResetGPU},
	"a100-nvlink-all-inactive":    {"nvlink": checks.RemedyResetGPU},
	"h100-power-brake":            {"gpu_clocks": checks.RemedyService},           // the power supply asserts the brake
	"h100-dcgm-pcie-replay":       {"dcgm_health": checks.RemedyService},          // DCGM_FR_PCI_REPLAY_RATE is ISOLATE
	"h100-recovery-reset":         {"gpu_recovery_action": checks.RemedyResetGPU}, // the driver asks for GPU_RESET
}

// checkSnapshotRemedies holds a snapshot's JSON report to snapshotRemedies: each failing
// result names the remedy listed, and each of its failing details names one.
func checkSnapshotRemedies(t *testing.T, name, out string) {
	t.Helper()
	var rep struct {
		Results []struct {
			Check   string          `json:"check"`
			Status  checks.Status   `json:"status"`
			Remedy  checks.Remedy   `json:"remedy"`
			Details []checks.Detail `json:"details"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("read the JSON report: %v", err)
	}
	got := map[string]checks.Remedy{}
	for _, r := range rep.Results {
		if r.Status != checks.StatusFail {
			if r.Remedy != "" {
				t.Errorf("%s is %s but names remedy %s", r.Check, r.Status, r.Remedy)
			}
			continue
		}
		got[r.Check] = r.Remedy
		for _, d := range r.Details {
			if d.Status == checks.StatusFail && !d.Remedy.Valid() {
				t.Errorf("%s: failing detail %q names no remedy", r.Check, d.Device)
			}
		}
	}
	if diff := cmp.Diff(snapshotRemedies[name], got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("remedies of the failing checks (-want +got):\n%s", diff)
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
			out, stderr, code := runCLI(t, env, "run", "--snapshot", dir, "--check", "job_leftovers")
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
	out, stderr, code := runCLI(t, map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"},
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
		{"prolog mode logs and passes, undecided", prolog, bad, exitHealthy, `"verdict":"undecided"`, "CONFIG ERROR (no check ran): " + bad + ":2"},
		{"prolog mode with fail_closed fails", prolog, closed, exitCannotRun, "closed.toml:3", ""},
		{"missing explicit config", nil, filepath.Join(dir, "absent.toml"), exitCannotRun, "absent.toml", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, tc.env, "run", "--snapshot", snap, "--config", tc.config)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr)
			}
			if !strings.Contains(out, tc.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantStdout, out)
			}
			if regexp.MustCompile(`(?m)^HEALTHY`).MatchString(out) || strings.Contains(out, "built-in defaults") {
				t.Errorf("a run whose config was unusable says it was healthy or ran on defaults:\n%s", out)
			}
			if out != "" && !strings.Contains(out, "UNDECIDED: the config is unusable, no check ran") {
				t.Errorf("the verdict line does not say the run is undecided:\n%s", out)
			}
		})
	}
}

// TestExitCodes has one row per line of the exit code table of docs/output.md.
func TestExitCodes(t *testing.T) {
	snaps := filepath.Join(repoRoot, "testdata", "snapshots")
	undecided := undecidedSnapshot(t)
	dir := t.TempDir()
	slurmConf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurmConf, []byte("NodeName=gpu[01-04] Gres=gpu:8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prolog := map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"}
	epilog := map[string]string{"SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_ID": "42"}
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		want      int
		stderrHas string
	}{
		{"healthy", nil, []string{"run", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 0, ""},
		{"unhealthy", nil, []string{"run", "--snapshot", filepath.Join(snaps, "h100-ib-port-down")}, 1, ""},
		{"undecided manual run", nil, []string{"run", "--snapshot", undecided}, 3, ""},
		{"undecided health run", nil, []string{"run", "--mode", "health", "--snapshot", undecided}, 3, ""},
		{"undecided prolog passes", prolog, []string{"run", "--snapshot", undecided}, 0, `"verdict":"undecided"`},
		{"undecided epilog passes", epilog, []string{"run", "--snapshot", undecided}, 0, `"verdict":"undecided"`},
		{"undecided with error_is_failure is unhealthy", nil, []string{"run", "--snapshot", undecided, "--config", errorIsFailureConfig(t)}, 1, ""},
		{"unknown check", nil, []string{"run", "--check", "nope", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2, "nope"},
		{"unknown flag", nil, []string{"run", "--bogus"}, 2, "bogus"},
		{"bad mode", nil, []string{"run", "--mode", "pro", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2, "pro"},
		{"bad format", nil, []string{"run", "--format", "yaml", "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2, "yaml"},
		{"snapshot that is not one", nil, []string{"run", "--snapshot", t.TempDir()}, 2, "meta.json"},
		{"--snapshot that does not exist", nil, []string{"run", "--snapshot", filepath.Join(dir, "nosnap")}, 2, filepath.Join(dir, "nosnap")},
		{"--slurm-conf that does not exist", nil, []string{"run", "--slurm-conf", "/nonexistent/slurm.conf", "--node", "gpu01"}, 2, "--slurm-conf /nonexistent/slurm.conf does not exist"},
		{"--config that does not exist", nil, []string{"run", "--config", filepath.Join(dir, "absent.toml"), "--snapshot", filepath.Join(snaps, "h100-healthy")}, 2, "absent.toml does not exist"},
		{"SLURM_CONF that does not exist", map[string]string{"SLURM_CONF": "/nonexistent/slurm.conf"}, []string{"run", "--node", "gpu01"}, 2, "SLURM_CONF=/nonexistent/slurm.conf does not exist"},
		{"--node that slurm.conf does not define", nil, []string{"run", "--slurm-conf", slurmConf, "--node", "nosuch"}, 2, "--node nosuch: no NodeName line of " + slurmConf},
		{"a node name with a newline", nil, []string{"run", "--snapshot", filepath.Join(snaps, "h100-healthy"), "--node", "gpu01\nUNHEALTHY"}, 2, `"gpu01\nUNHEALTHY"`},
		{"version", nil, []string{"version"}, 0, ""},
		{"--version", nil, []string{"--version"}, 0, ""},
		{"list", nil, []string{"list"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.env, tc.args...)
			if code != tc.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
			if !strings.Contains(stderr, tc.stderrHas) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderrHas, stderr)
			}
			if strings.Contains(stderr, "\nUNHEALTHY") {
				t.Errorf("a control character from the command line reached stderr raw:\n%s", stderr)
			}
		})
	}
}

// undecidedSnapshot is a recorded node whose checks can decide nothing: no slurm.conf, no
// NVML facts (written for the test: only meta.json). No check fails.
func undecidedSnapshot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	meta := `{"format": 1, "hostname": "gpu01", "node_name": "gpu01", "taken_at": "2025-01-01T00:00:00Z", "nodecheck_version": "test"}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func errorIsFailureConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nodecheck.toml")
	if err := os.WriteFile(p, []byte("error_is_failure = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestList(t *testing.T) {
	out, _, _ := runCLI(t, nil, "list", "--format", "json")
	golden(t, "list.json", out)
}
