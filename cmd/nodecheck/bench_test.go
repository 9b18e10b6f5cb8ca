package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRunPrologHealthy is a whole prolog-mode run of the fast checks on the recorded
// healthy 8-GPU H100 node: config, snapshot, slurm.conf and gres.conf, every check, the JSON
// report. The job holds all eight GPUs, so job_leftovers maps and judges each of them.
// Process start-up is measured separately (README, "Speed").
func BenchmarkRunPrologHealthy(b *testing.B) {
	dir := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	env := map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42",
		"SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7", "SLURMD_NODENAME": "gpu-h100-01"}
	getenv := func(k string) string { return env[k] }
	argv := []string{"nodecheck", "run", "--snapshot", dir, "--format", "json"}
	b.ReportAllocs()
	for b.Loop() {
		if code := execute(context.Background(), argv, strings.NewReader(""), io.Discard, io.Discard, getenv); code != 0 {
			b.Fatalf("exit code %d", code)
		}
	}
}
