package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGPUHealthChecksConfig: the keys of gpu_memory_errors and nvlink have their defaults,
// decode, reach a node through a group, and bad values name their line and the fix.
func TestGPUHealthChecksConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		node    string
		want    func(c *Checks) any
		wantVal any
		wantErr string
	}{
		{
			name: "gpu_memory_errors defaults",
			want: func(c *Checks) any {
				m := c.GPUMemoryErrors
				return []any{m.ECCOff, m.ECCOffModels, m.Pending, m.RetiredPagesLimit}
			},
			wantVal: []any{"fail", []string{"geforce", "titan", "quadro", "rtx"}, "fail", 63},
		},
		{
			name: "gpu_memory_errors keys",
			toml: "[checks.gpu_memory_errors]\necc_off = \"warn\"\necc_off_models = [\"rtx a6000\"]\npending = \"warn\"\nretired_pages_limit = 60\n",
			want: func(c *Checks) any {
				m := c.GPUMemoryErrors
				return []any{m.ECCOff, m.ECCOffModels, m.Pending, m.RetiredPagesLimit}
			},
			wantVal: []any{"warn", []string{"rtx a6000"}, "warn", 60},
		},
		{
			name:    "nvlink defaults",
			want:    func(c *Checks) any { return []any{c.NVLink.ExpectedLinks, c.NVLink.Exclude} },
			wantVal: []any{[]string(nil), []string(nil)},
		},
		{
			name:    "nvlink keys",
			toml:    "[checks.nvlink]\nexpected_links = [\"h100 pcie=12\", \"v100 sxm2=6\"]\nexclude = [\"0000:3b:00.0\", \"0000:4c:00.0/3\"]\n",
			want:    func(c *Checks) any { return []any{c.NVLink.ExpectedLinks, c.NVLink.Exclude} },
			wantVal: []any{[]string{"h100 pcie=12", "v100 sxm2=6"}, []string{"0000:3b:00.0", "0000:4c:00.0/3"}},
		},
		{
			name:    "group accepts ECC off on its nodes",
			toml:    "[[group]]\nnodes = \"ws[01-04]\"\n[group.checks.gpu_memory_errors]\necc_off = \"ok\"\n",
			node:    "ws02",
			want:    func(c *Checks) any { return c.GPUMemoryErrors.ECCOff },
			wantVal: "ok",
		},
		{
			name:    "group excludes an NVLink",
			toml:    "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.nvlink]\nexclude = [\"0000:db:00.0/17\"]\n",
			node:    "gpu04",
			want:    func(c *Checks) any { return c.NVLink.Exclude },
			wantVal: []string{"0000:db:00.0/17"},
		},
		{
			name:    "ecc_off not a verdict",
			toml:    "[checks.gpu_memory_errors]\necc_off = \"drain\"\n",
			wantErr: `nodecheck.toml:2: checks.gpu_memory_errors.ecc_off = "drain": give "fail", "warn" or "ok": what a GPU with ECC off gives`,
		},
		{
			name:    "pending cannot be ok",
			toml:    "[checks.gpu_memory_errors]\npending = \"ok\"\n",
			wantErr: `nodecheck.toml:2: checks.gpu_memory_errors.pending = "ok": give "fail" or "warn": what a row remapping or page retirement waiting for a GPU reset gives`,
		},
		{
			name:    "ecc_off_models with an empty entry",
			toml:    "[checks.gpu_memory_errors]\necc_off_models = [\"geforce\", \" - \"]\n",
			wantErr: `nodecheck.toml:2: checks.gpu_memory_errors.ecc_off_models: " - " names no words; give words of NVML GPU names, such as "geforce" or "rtx a6000"`,
		},
		{
			name:    "retired_pages_limit beyond what a GPU retires",
			toml:    "[checks.gpu_memory_errors]\nretired_pages_limit = 65\n",
			wantErr: `nodecheck.toml:2: checks.gpu_memory_errors.retired_pages_limit = 65: give a page count from 1 to 64 (a GPU retires at most 64 pages), such as 63 as NVIDIA's DCGM uses`,
		},
		{
			name:    "retired_pages_limit zero",
			toml:    "[checks.gpu_memory_errors]\nretired_pages_limit = 0\n",
			wantErr: `nodecheck.toml:2: checks.gpu_memory_errors.retired_pages_limit = 0: give a page count from 1 to 64 (a GPU retires at most 64 pages), such as 63 as NVIDIA's DCGM uses`,
		},
		{
			name: "expected_links rules",
			toml: "[checks.nvlink]\nexpected_links = [\"a100 sxm4\", \"=12\", \"h100=19\", \"h100=x\"]\n",
			wantErr: `nodecheck.toml:2: checks.nvlink.expected_links: "a100 sxm4" is not a rule: write words of the NVML name, '=' and the number of NVLinks, such as "a100 sxm4=12", or "h100 pcie=0" where NVLink is optional` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "=12" names no words of an NVML name before '='` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "h100=19": the number of NVLinks must be from 0 to 18 (0: NVLink optional, not judged)` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "h100=x": the number of NVLinks must be from 0 to 18 (0: NVLink optional, not judged)`,
		},
		{
			name: "exclude entries",
			toml: "[checks.nvlink]\nexclude = [\"00000000:3B:00.0\", \"0000:3b:00.0/18\", \"0000:3b:00.0/\"]\n",
			wantErr: `nodecheck.toml:2: checks.nvlink.exclude: "00000000:3B:00.0": "00000000:3B:00.0" is not a PCI address; write it as sysfs does, such as "0000:3b:00.0", or "0000:3b:00.0/3" for its link 3` + "\n" +
				`nodecheck.toml:2: checks.nvlink.exclude: "0000:3b:00.0/18": the link after '/' must be a number from 0 to 17, as nvidia-smi nvlink -s numbers them` + "\n" +
				`nodecheck.toml:2: checks.nvlink.exclude: "0000:3b:00.0/": the link after '/' must be a number from 0 to 17, as nvidia-smi nvlink -s numbers them`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseSectionCase(t, tc.toml, tc.node, tc.wantErr)
			if cfg == nil {
				return
			}
			if diff := cmp.Diff(tc.wantVal, tc.want(&cfg.Checks)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNVLinkRule(t *testing.T) {
	tests := []struct {
		in    string
		words []string
		links int
		ok    bool
	}{
		{"a100 sxm4=12", []string{"a100", "sxm4"}, 12, true},
		{"H100 80GB HBM3 = 18", []string{"h100", "80gb", "hbm3"}, 18, true},
		{"nvidia_h100_nvl=0", []string{"nvidia", "h100", "nvl"}, 0, true},
		{"h100=18=1", nil, 0, false},
		{"h100=-1", nil, 0, false},
		{"h100", nil, 0, false},
		{"", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			w, n, err := ParseNVLinkRule(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNVLinkRule(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if diff := cmp.Diff(tc.words, w); diff != "" || n != tc.links {
				t.Errorf("ParseNVLinkRule(%q) = %v, %d; want %v, %d", tc.in, w, n, tc.words, tc.links)
			}
		})
	}
}

func TestParseNVLinkExclude(t *testing.T) {
	tests := []struct {
		in   string
		addr string
		link int
		ok   bool
	}{
		{"0000:3b:00.0", "0000:3b:00.0", -1, true},
		{"0000:3b:00.0/0", "0000:3b:00.0", 0, true},
		{"0007:00:00.0/17", "0007:00:00.0", 17, true},
		{"0000:3b:00.0/18", "", 0, false},
		{"0000:3b:00.0/03", "", 0, false},
		{"0000:3b:00.0/+3", "", 0, false},
		{"0000:3B:00.0", "", 0, false},
		{"gpu3", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			a, l, err := ParseNVLinkExclude(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNVLinkExclude(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if a != tc.addr || l != tc.link {
				t.Errorf("ParseNVLinkExclude(%q) = %q, %d; want %q, %d", tc.in, a, l, tc.addr, tc.link)
			}
		})
	}
}
