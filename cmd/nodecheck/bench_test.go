package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRunPrologHealthy is a whole prolog-mode run of the fast checks on the recorded
// healthy 8-GPU H100 node: config, snapshot, slurm.conf and gres.conf, every check, the JSON
// report. The job holds all eight GPUs, so job_leftovers maps and judges each of them.
// Process start-up is measured separately (docs/speed.md).
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

// BenchmarkReplayAll replays every bundled snapshot once per iteration, in prolog mode, as
// an admin replays an archive to test a rule change: one process, each snapshot opened and
// run in turn. Snapshots whose meta.json stalls reads on purpose (delay_ms: h100-ib-hang)
// are left out, as their time is the stall's. Any exit code is accepted: most snapshots
// record a fault.
func BenchmarkReplayAll(b *testing.B) {
	root := filepath.Join(repoRoot, "testdata", "snapshots")
	ents, err := os.ReadDir(root)
	if err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		meta, err := os.ReadFile(filepath.Join(root, e.Name(), "meta.json"))
		if err != nil || bytes.Contains(meta, []byte(`"delay_ms"`)) {
			continue
		}
		dirs = append(dirs, filepath.Join(root, e.Name()))
	}
	if len(dirs) < 20 {
		b.Fatalf("found %d snapshots under %s, want the bundled ones", len(dirs), root)
	}
	env := map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7"}
	getenv := func(k string) string { return env[k] }
	b.ReportAllocs()
	for b.Loop() {
		for _, dir := range dirs {
			argv := []string{"nodecheck", "run", "--snapshot", dir, "--format", "json"}
			if code := execute(context.Background(), argv, strings.NewReader(""), io.Discard, io.Discard, getenv); code == exitCannotRun {
				b.Fatalf("%s: exit code %d", dir, code)
			}
		}
	}
	b.ReportMetric(float64(len(dirs)), "snapshots")
}
