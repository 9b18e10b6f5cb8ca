package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNCCLAllReduceConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    *Config
		wantErr string
	}{
		{
			name: "health mode on idle nodes, with a threshold per group",
			toml: `[checks.nccl_allreduce]
timeout = "45s"
modes = ["health", "manual"]
args = ["-b", "1M", "-e", "4G", "-f", "4"]
min_busbw_gbps = 400.0
[[group]]
nodes = "a100-[01-04]"
[group.checks.nccl_allreduce]
min_busbw_gbps = 200.0
`,
			want: tomlWant(func(c *Config) {
				n := &c.Checks.NCCLAllReduce
				n.Timeout, n.Modes, n.Args, n.MinBusBWGBps = 45*time.Second, []string{"health", "manual"}, []string{"-b", "1M", "-e", "4G", "-f", "4"}, 400
				c.Groups = []Group{{Nodes: "a100-[01-04]", Checks: map[string]map[string]any{"nccl_allreduce": {"min_busbw_gbps": 200.0}}}}
			}),
		},
		{
			name:    "never in a prolog",
			toml:    "[checks.nccl_allreduce]\ntimeout = \"5s\"\nmodes = [\"prolog\", \"manual\"]\n",
			wantErr: `nodecheck.toml:3: checks.nccl_allreduce.modes: "prolog" is not allowed for nccl_allreduce: it occupies every GPU for tens of seconds before the job; use "health" (it then runs only on idle nodes) or "manual"`,
		},
		{
			name: "prolog listed but the check is off",
			toml: "[checks.nccl_allreduce]\nenabled = false\ntimeout = \"5s\"\nmodes = [\"prolog\"]\n",
			want: tomlWant(func(c *Config) {
				n := &c.Checks.NCCLAllReduce
				n.Enabled, n.Timeout, n.Modes = false, 5*time.Second, []string{"prolog"}
			}),
		},
		{
			name:    "relative binary",
			toml:    "[checks.nccl_allreduce]\nbinary = \"all_reduce_perf\"\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.binary = "all_reduce_perf": give an absolute path: Slurm hooks run without PATH`,
		},
		{
			name:    "empty nvidia_smi",
			toml:    "[checks.nccl_allreduce]\nnvidia_smi = \"\"\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.nvidia_smi = "": give an absolute path: Slurm hooks run without PATH`,
		},
		{
			name:    "negative threshold",
			toml:    "[checks.nccl_allreduce]\nmin_busbw_gbps = -1.0\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.min_busbw_gbps = -1: give a bus bandwidth in GB/s of 0 (the built-in table) or more, such as 390 for 8 H100 SXM`,
		},
		{
			name:    "negative threshold in a group",
			toml:    "[[group]]\nnodes = \"gpu01\"\n[group.checks.nccl_allreduce]\nmin_busbw_gbps = -5.0\n",
			wantErr: `nodecheck.toml:4: group[0].checks.nccl_allreduce.min_busbw_gbps = -5: give a bus bandwidth in GB/s of 0 (the built-in table) or more, such as 390 for 8 H100 SXM`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.toml), "nodecheck.toml")
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("no error, want %s", tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestNCCLAllReduceGroupThreshold: a group sets min_busbw_gbps for its nodes only.
func TestNCCLAllReduceGroupThreshold(t *testing.T) {
	cfg, err := ParseConfig([]byte("[[group]]\nnodes = \"a100-[01-04]\"\n[group.checks.nccl_allreduce]\nmin_busbw_gbps = 200.0\n"), "nodecheck.toml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node string
		want float64
	}{{"a100-02", 200}, {"h100-01", 0}}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			eff, err := cfg.ForNode(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if got := eff.Checks.NCCLAllReduce.MinBusBWGBps; got != tc.want {
				t.Errorf("min_busbw_gbps %v, want %v", got, tc.want)
			}
		})
	}
}
