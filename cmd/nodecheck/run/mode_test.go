package run

import (
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

func TestDetectMode(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		argv0 string
		want  config.Mode
	}{
		{"prolog", map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7"}, "/usr/sbin/nodecheck", config.ModeProlog},
		{"epilog", map[string]string{"SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7"}, "/usr/sbin/nodecheck", config.ModeEpilog},
		{"health by link name", map[string]string{}, "/usr/sbin/nodecheck-health", config.ModeHealth},
		{"health by slurmd environment", map[string]string{"SLURMD_NODENAME": "n1"}, "/usr/sbin/nodecheck", config.ModeHealth},
		{"manual", map[string]string{}, "nodecheck", config.ModeManual},
		{"srun task prolog context is not ours", map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_task", "SLURM_JOB_ID": "7"}, "nodecheck", config.ModeManual},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DetectMode(func(k string) string { return tc.env[k] }, tc.argv0); got != tc.want {
				t.Errorf("DetectMode = %q, want %q", got, tc.want)
			}
		})
	}
}
