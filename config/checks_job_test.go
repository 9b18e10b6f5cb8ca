package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJobLeftoversConfig: memory_used_max_mib decodes with its default, reaches a node through
// a group, and a value that cannot be MiB names its line and the fix.
func TestJobLeftoversConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		node    string
		want    JobLeftoversConfig
		wantErr string
	}{
		{
			name: "defaults",
			toml: "",
			want: JobLeftoversConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: defaultJobLeftovers().Timeout, Modes: []string{"prolog", "epilog"}}, MemoryUsedMaxMiB: 1024},
		},
		{
			name: "memory_used_max_mib and modes",
			toml: "[checks.job_leftovers]\nmemory_used_max_mib = 64\nmodes = [\"epilog\"]\n",
			want: JobLeftoversConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: defaultJobLeftovers().Timeout, Modes: []string{"epilog"}}, MemoryUsedMaxMiB: 64},
		},
		{
			name: "zero: any memory in use fails",
			toml: "[checks.job_leftovers]\nmemory_used_max_mib = 0\n",
			want: JobLeftoversConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: defaultJobLeftovers().Timeout, Modes: []string{"prolog", "epilog"}}, MemoryUsedMaxMiB: 0},
		},
		{
			name: "group sets the max for its nodes",
			toml: "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.job_leftovers]\nmemory_used_max_mib = 2048\n",
			node: "gpu02",
			want: JobLeftoversConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: defaultJobLeftovers().Timeout, Modes: []string{"prolog", "epilog"}}, MemoryUsedMaxMiB: 2048},
		},
		{
			name:    "negative",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = -1\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib = -1: give MiB from 0 to 1048576, such as 1024 (not bytes)",
		},
		{
			name:    "bytes instead of MiB",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = 1073741824\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib = 1073741824: give MiB from 0 to 1048576, such as 1024 (not bytes)",
		},
		{
			name:    "not a number",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = \"1G\"\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib: want a whole number, got the string \"1G\"",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseSectionCase(t, tc.toml, tc.node, tc.wantErr)
			if cfg == nil {
				return
			}
			if diff := cmp.Diff(tc.want, cfg.Checks.JobLeftovers); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
