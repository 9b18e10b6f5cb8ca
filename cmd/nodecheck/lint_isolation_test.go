package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintCgroupConf: lint reads cgroup.conf beside slurm.conf, or --cgroup-conf.
func TestLintCgroupConf(t *testing.T) {
	site := filepath.Join("..", "..", "config", "slurm", "testdata", "cgroup")
	tests := []struct {
		name       string
		o          lintOptions
		wantCode   int
		wantOut    string // "" for no isolation warning
		wantStderr string
	}{
		{"beside slurm.conf, unconstrained", lintOptions{SlurmConf: filepath.Join(site, "inigo-gpuops-lab-4x4", "slurm.conf")}, exitHealthy,
			"warning  cgroup.conf GPU isolation: gpu-[1-4] have GPUs", ""},
		{"beside slurm.conf, constrained", lintOptions{SlurmConf: filepath.Join(site, "pal-goedel-rtx3090x8", "slurm.conf")}, exitHealthy, "", ""},
		{"--cgroup-conf of a constrained site", lintOptions{SlurmConf: filepath.Join(site, "brdarji-linux1-1gpu", "slurm.conf"),
			CgroupConf: filepath.Join(site, "inigo-gpuops-lab-4x4", "cgroup.conf")}, exitHealthy, "add ConstrainDevices=yes to cgroup.conf", ""},
		{"--cgroup-conf missing", lintOptions{SlurmConf: filepath.Join(site, "pal-goedel-rtx3090x8", "slurm.conf"), CgroupConf: "/nonexistent/cgroup.conf"},
			exitCannotRun, "", "/nonexistent/cgroup.conf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runLint(context.Background(), &out, &errb, tc.o)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s%s", code, tc.wantCode, out.String(), errb.String())
			}
			if got := strings.Contains(out.String(), "GPU isolation"); got != (tc.wantOut != "") || !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output (want %q):\n%s", tc.wantOut, out.String())
			}
			if !strings.Contains(errb.String(), tc.wantStderr) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.wantStderr)
			}
		})
	}
}
