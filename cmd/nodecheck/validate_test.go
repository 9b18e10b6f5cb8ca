package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/validate"
)

// validateTools makes a tools directory of stand-ins (testdata/validate/standins), each told
// what to print by captures: tool -> lines of its .capture file. A tool left out of captures
// is not installed.
func validateTools(t *testing.T, captures map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	standins, err := filepath.Abs(filepath.Join(repoRoot, "testdata", "validate", "standins"))
	if err != nil {
		t.Fatal(err)
	}
	for tool, capture := range captures {
		if err := os.Symlink(filepath.Join(standins, tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
		if capture == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, tool+".capture"), []byte(capture), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Captures of a healthy 8x H100 node: the real H100 outputs in checks/validate/testdata.
const (
	capDCGMPass     = "out ../../node/dcgm/testdata/diag4-r1-pass-8gpu.json\n"
	capNVBHealthy   = "out nvbandwidth/azurehpc-fork-h100x8-nvbw-v04-d2d-read-ce-healthy.txt\nout nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt\n"
	capNVBSlow      = "out nvbandwidth/DERIVED-h100x8-d2d-gpu1-to-gpu0-162.txt\nout nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt\n"
	capNCCLHealthy  = "out nccl/nccltests-290-h100-1node-8gpu-g8.log\nlog\n"
	capNCCLSlow     = "out nccl/DERIVED-h100x8-busbw-halved.log\n"
	capIBHealthy    = "out perftest/dgxspark-cx7-roce-ib_write_bw-run-infinitely-2rails-92-97gbps.txt\nlog\n"
	capIBSlow       = "out perftest/DERIVED-cx7-ib_write_bw-18gbps.txt\n"
	capBurnHealthy  = "out gpuburn/gpuburn-48-gtx1080x2-docker-healthy-temps-to-83C-excerpt.txt\nlog\n"
	capBurnErrors   = "out gpuburn/DERIVED-gtx1080x2-gpu1-gemm-errors.txt\n"
	capBurnSlowGPU1 = "out gpuburn/DERIVED-gtx1080x2-gpu1-20pct-slow.txt\n"
)

func runValidateCLI(t *testing.T, env map[string]string, args ...string) (validate.Report, string, int) {
	t.Helper()
	stdout, stderr, code := runCLI(t, env, append([]string{"validate", "--json", "--node", "n1"}, args...)...)
	var rep validate.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s\nstderr: %s", err, stdout, stderr)
	}
	return rep, stderr, code
}

func testStatus(rep validate.Report, name string) (validate.Test, bool) {
	for _, tt := range rep.Tests {
		if tt.Name == name {
			return tt, true
		}
	}
	return validate.Test{}, false
}

// TestValidateQuick runs the quick level end to end through the CLI against stand-ins printing
// real captures: healthy H100 outputs pass; a slow node fails naming the figure and its floor;
// with every tool missing the level is undecided, never passed.
func TestValidateQuick(t *testing.T) {
	tests := []struct {
		name     string
		captures map[string]string
		code     int
		verdict  validate.Verdict
		want     map[string]string // test -> words its summary holds
	}{
		{"healthy H100", map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy},
			0, validate.VerdictPassed, map[string]string{"nccl_allreduce": "busbw 476.53 GB/s at 4 GiB on 8 GPUs", "nvbandwidth": "d2d_bw 370.26-370.77"}},
		{"slow H100", map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBSlow, "all_reduce_perf": capNCCLSlow},
			1, validate.VerdictFailed, map[string]string{
				"nvbandwidth":    "d2d_bw GPU 1 162.45 GB/s below floor 335 GB/s (expected 370); slowest peer of GPU 1: GPU 0 (162.45 GB/s)",
				"nccl_allreduce": "nccl_busbw 238.26 GB/s below floor 390 GB/s (expected 460)"}},
		{"all tools missing", map[string]string{}, 3, validate.VerdictUndecided, map[string]string{
			"dcgm_diag": "not installed: install DCGM", "nvbandwidth": "not installed: build nvbandwidth", "nccl_allreduce": "cannot count the GPUs"}},
		{"DCGM fails a GPU", map[string]string{"dcgmi": "out ../../node/dcgm/testdata/diag4-r2-memory-fail-gpu1-clocks-monitor-gpu0.json\nexit 205\n",
			"nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy}, 1, validate.VerdictFailed, map[string]string{"dcgm_diag": "GPU 1"}},
		{"no host engine", map[string]string{"dcgmi": "out ../../node/dcgm/testdata/no-host-engine.txt\nexit 235\n", "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy},
			0, validate.VerdictPassed, map[string]string{"dcgm_diag": "no DCGM host engine answers at localhost"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := validateTools(t, tc.captures)
			rep, stderr, code := runValidateCLI(t, nil, "--level", "quick", "--tools-dir", dir, "--no-record")
			if code != tc.code || rep.Verdict != tc.verdict {
				t.Errorf("exit %d verdict %s, want %d %s; stderr: %s; tests: %+v", code, rep.Verdict, tc.code, tc.verdict, stderr, rep.Tests)
			}
			if rep.Node != "n1" || rep.Level != validate.LevelQuick || rep.Started.IsZero() {
				t.Errorf("report head: %+v", rep)
			}
			for name, words := range tc.want {
				tt, ok := testStatus(rep, name)
				if !ok || !strings.Contains(tt.Summary, words) {
					t.Errorf("test %s: %+v, want its summary to hold %q", name, tt, words)
				}
			}
		})
	}
}

// TestValidateRefuses: never in a prolog or epilog, never on a node whose GPUs run compute
// processes; both exit 2 with the reason in the report, and nothing is recorded.
func TestValidateRefuses(t *testing.T) {
	dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy + "log\n"})
	state := t.TempDir()
	rep, _, code := runValidateCLI(t, map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "7"}, "--level", "quick", "--tools-dir", dir, "--state-dir", state)
	if code != exitCannotRun || rep.Verdict != validate.VerdictUndecided || !strings.Contains(rep.Refused, "never runs in a prolog") || len(rep.Tests) != 0 {
		t.Errorf("prolog: exit %d, %+v", code, rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "all_reduce_perf.capture.log")); err == nil {
		t.Error("a refused validation ran all_reduce_perf")
	}

	busyDir := validateTools(t, map[string]string{"nvidia-smi": "out nvidia-smi-compute-apps-two-pids.txt\n", "nvbandwidth": capNVBHealthy})
	rep, _, code = runValidateCLI(t, nil, "--level", "quick", "--tools-dir", busyDir, "--state-dir", state)
	if code != exitCannotRun || !strings.Contains(rep.Refused, "node busy: 2 compute processes on the GPUs (pid 4242, 4243)") {
		t.Errorf("busy: exit %d, %+v", code, rep)
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "history")); len(entries) > 0 {
		t.Errorf("a refused validation was recorded: %v", entries)
	}
}

// validateConfig writes a nodecheck.toml for a test, readable as root reads configs.
func validateConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nodecheck.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateFull: ib_write_bw in loopback on each configured HCA, with GPUDirect from the
// GPU of the same index, judged against the site's floor (the DGX Spark guide's 80 Gb/s per
// rail for this capture); a slow HCA fails naming it; the network-path NCCL run goes through
// /usr/bin/env with P2P and shared memory off.
func TestValidateFull(t *testing.T) {
	cfg := validateConfig(t, "[validate]\nhcas = [\"mlx5_0\", \"mlx5_1\"]\n[validate.floors]\nib_write_gbps = 80.0\nnccl_net_busbw_gbps = 300.0\n")
	for _, tc := range []struct {
		name, ib string
		code     int
		words    string
	}{
		{"healthy", capIBHealthy, 0, "95.14-95.14 Gb/s on 2 HCAs"},
		{"slow", capIBSlow, 1, "ib_write_bw mlx5_0 18.51 Gb/s below floor 80 Gb/s (+1 more below the floor)"},
		{"cannot connect", "out perftest/COMPOSED-ib_write_bw-client-couldnt-connect.txt\nexit 1\n", 1, "mlx5_0: ib_write_bw loopback measured nothing: Couldn't connect to localhost:18515"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy, "ib_write_bw": tc.ib})
			rep, stderr, code := runValidateCLI(t, nil, "--level", "full", "--tools-dir", dir, "--no-record", "--config", cfg)
			tt, ok := testStatus(rep, "ib_write_bw")
			if code != tc.code || !ok || !strings.Contains(tt.Summary, tc.words) {
				t.Errorf("exit %d, ib_write_bw %+v; want exit %d and %q; stderr %s", code, tt, tc.code, tc.words, stderr)
			}
		})
	}
	dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy, "ib_write_bw": capIBHealthy})
	runValidateCLI(t, nil, "--level", "full", "--tools-dir", dir, "--no-record", "--config", cfg)
	log, err := os.ReadFile(filepath.Join(dir, "ib_write_bw.capture.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-d mlx5_0 -F --report_gbits -D 10 -p 18515 --use_cuda=0\n",
		"-d mlx5_0 -F --report_gbits -D 10 -p 18515 --use_cuda=0 localhost\n",
		"-d mlx5_1 -F --report_gbits -D 10 -p 18516 --use_cuda=1 localhost\n",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("ib_write_bw was not run as %q:\n%s", want, log)
		}
	}
	if nlog, _ := os.ReadFile(filepath.Join(dir, "all_reduce_perf.capture.log")); !strings.Contains(string(nlog), "-b 1G -e 8G -f 2 -g 8\n") {
		t.Errorf("all_reduce_perf's arguments:\n%s", nlog)
	}
}

// TestValidateBurnIn: gpu_burn's GEMM compared across GPUs: healthy passes, errors on one GPU
// fail it as silent data corruption (service), a GPU 20% below its peer fails.
func TestValidateBurnIn(t *testing.T) {
	cfg := validateConfig(t, "[validate]\nburn_in = \"2s\"\nnccl_repeats = 2\n")
	for _, tc := range []struct {
		name, burn string
		code       int
		status     string
		words      string
	}{
		{"healthy", capBurnHealthy, 0, "ok", "2 GPUs, no GEMM errors, 6485-6981 Gflop/s"},
		{"GEMM errors", capBurnErrors, 1, "fail", "GEMM results differ from the reference (silent data corruption): GPU 1: 148 errors"},
		{"GPU 1 slow", capBurnSlowGPU1, 1, "fail", "gemm_gflops GPU 1 5188.00 Gflop/s below floor 5476.05 Gflop/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy, "gpu_burn": tc.burn})
			rep, stderr, code := runValidateCLI(t, nil, "--level", "burn-in", "--tools-dir", dir, "--no-record", "--config", cfg)
			tt, ok := testStatus(rep, "gpu_burn")
			if code != tc.code || !ok || string(tt.Status) != tc.status || !strings.Contains(tt.Summary, tc.words) {
				t.Errorf("exit %d, gpu_burn %+v; want exit %d, %s, %q; stderr %s", code, tt, tc.code, tc.status, tc.words, stderr)
			}
			if tc.name != "healthy" {
				return
			}
			if blog, _ := os.ReadFile(filepath.Join(dir, "gpu_burn.capture.log")); string(blog) != "-c "+filepath.Join(dir, "compare.ptx")+" 2\n" {
				t.Errorf("gpu_burn's arguments: %q", blog)
			}
			n := 0
			for _, tt := range rep.Tests {
				if tt.Name == "nccl_allreduce" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("NCCL ran %d times, want nccl_repeats = 2", n)
			}
		})
	}
}

// TestValidateHistory: a validation is kept in the node's history, and the health check's
// validation_age judges its age against [validate] expiry: fresh is ok, older warns "not
// validated since", no expiry skips.
func TestValidateHistory(t *testing.T) {
	state := t.TempDir()
	cfg := validateConfig(t, "[validate]\nexpiry = \"168h\"\n")
	dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy})
	rep, stderr, code := runValidateCLI(t, nil, "--level", "quick", "--tools-dir", dir, "--state-dir", state, "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(state, "history", "n1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Validations []struct {
			Level, Verdict string
			Started        int64
			Figures        []struct {
				N string  `json:"n"`
				V float64 `json:"v"`
			}
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Validations) != 1 || file.Validations[0].Level != "quick" || file.Validations[0].Verdict != "passed" || file.Validations[0].Started != rep.Started.Unix() {
		t.Fatalf("history: %s", data)
	}
	var names []string
	for _, f := range file.Validations[0].Figures {
		names = append(names, f.N)
	}
	if strings.Join(names, ",") != "h2d_bw,d2h_bw,d2d_bw,nccl_busbw" {
		t.Errorf("kept figures %v, want the worst of each name", names)
	}

	hist, _, _ := runCLI(t, nil, "history", "--node", "n1", "--state-dir", state, "--config", cfg)
	if !strings.Contains(hist, "validation  validation quick passed in ") {
		t.Errorf("nodecheck history does not list the validation:\n%s", hist)
	}
	out, _, code := runCLI(t, nil, "run", "--check", "validation_age", "--node", "n1", "--state-dir", state, "--config", cfg)
	if code != 0 || !strings.Contains(out, "OK     validation_age  validated ") {
		t.Errorf("fresh: exit %d\n%s", code, out)
	}
	old := `{"format":1,"node":"n1","validations":[{"level":"full","started":1764590400,"duration":2400,"verdict":"passed"}]}`
	if err := os.WriteFile(filepath.Join(state, "history", "n1.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, nil, "run", "--check", "validation_age", "--node", "n1", "--state-dir", state, "--config", cfg)
	if code != 0 || !strings.Contains(out, "WARN   validation_age  not validated since 2025-12-01T12:00:00Z (full passed") {
		t.Errorf("expired: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, nil, "run", "--check", "validation_age", "--node", "n1", "--state-dir", state)
	if !strings.Contains(out, "SKIP   validation_age  validation does not expire here") {
		t.Errorf("no expiry:\n%s", out)
	}
}

// TestValidateSlurmJobs: a Slurm job on the node other than validation's own (SLURM_JOB_ID)
// refuses it; its own job does not; squeue failing refuses too (the node's jobs unknown).
func TestValidateSlurmJobs(t *testing.T) {
	for _, tc := range []struct {
		name, squeue, own string
		code              int
		refused           string
	}{
		{"another job", "out squeue-two-jobs.txt\n", "", exitCannotRun, "node busy: 2 Slurm jobs on the node (1234|RUNNING, 5678|COMPLETING)"},
		{"its own job and another", "out squeue-two-jobs.txt\n", "1234", exitCannotRun, "node busy: 1 Slurm job on the node (5678|COMPLETING)"},
		{"its own job only", "out squeue-one-job.txt\n", "1234", 0, ""},
		{"squeue fails", "exit 1\n", "", exitCannotRun, "cannot tell whether a Slurm job runs on the node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := validateTools(t, map[string]string{"dcgmi": capDCGMPass, "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy, "squeue": tc.squeue})
			rep, stderr, code := runValidateCLI(t, map[string]string{"SLURM_JOB_ID": tc.own}, "--level", "quick", "--tools-dir", dir, "--no-record")
			if code != tc.code || !strings.Contains(rep.Refused, tc.refused) || (tc.refused == "") != (rep.Refused == "") {
				t.Errorf("exit %d refused %q, want %d %q; stderr %s", code, rep.Refused, tc.code, tc.refused, stderr)
			}
		})
	}
}

// TestValidateDeadline: a tool that never ends is killed with its process group at the
// level's budget; its test fails, and the tests after it say they were not run.
func TestValidateDeadline(t *testing.T) {
	cfg := validateConfig(t, "[validate.budget]\nquick = \"2s\"\n")
	dir := validateTools(t, map[string]string{"dcgmi": "hang\n", "nvbandwidth": capNVBHealthy, "all_reduce_perf": capNCCLHealthy})
	start := time.Now()
	rep, stderr, code := runValidateCLI(t, nil, "--level", "quick", "--tools-dir", dir, "--no-record", "--config", cfg)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s with a 2s budget", took)
	}
	dcgm, _ := testStatus(rep, "dcgm_diag")
	nvb, _ := testStatus(rep, "nvbandwidth")
	if code != exitUnhealthy || dcgm.Status != "fail" || !strings.Contains(dcgm.Summary, "dcgmi did not finish within its deadline") ||
		nvb.Status != "error" || !strings.Contains(nvb.Summary, "not run: the level's budget of 2s was used up") {
		t.Errorf("exit %d, tests %+v; stderr %s", code, rep.Tests, stderr)
	}
}
