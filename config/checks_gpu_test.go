package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGPUChecksConfig: the keys of gpu_count, pcie_link and fabric_manager decode, reach the
// effective config of a node through a group, and bad values name their line and the fix.
func TestGPUChecksConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		node    string
		want    func(c *Checks) any
		wantVal any
		wantErr string
	}{
		{
			name:    "pcie_link keys",
			toml:    "[checks.pcie_link]\nmin_width = 8\nexclude_devices = [\"0000:1a:00.0\", \"10000:01:00.1\"]\n",
			want:    func(c *Checks) any { return []any{c.PCIeLink.MinWidth, c.PCIeLink.ExcludeDevices} },
			wantVal: []any{8, []string{"0000:1a:00.0", "10000:01:00.1"}},
		},
		{
			name: "fabric_manager keys",
			toml: "[checks.fabric_manager]\nforce = true\nbinary = \"/opt/nvidia/bin/nv-fabricmanager\"\nservice = \"nvidia-fabricmanager.service\"\n",
			want: func(c *Checks) any {
				return []any{c.FabricManager.Force, c.FabricManager.Binary, c.FabricManager.Systemctl, c.FabricManager.Service}
			},
			wantVal: []any{true, "/opt/nvidia/bin/nv-fabricmanager", "/usr/bin/systemctl", "nvidia-fabricmanager.service"},
		},
		{
			name:    "group sets exclude_devices for its nodes",
			toml:    "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.pcie_link]\nexclude_devices = [\"0000:1b:00.0\"]\n",
			node:    "gpu03",
			want:    func(c *Checks) any { return c.PCIeLink.ExcludeDevices },
			wantVal: []string{"0000:1b:00.0"},
		},
		{
			name:    "min_width out of range",
			toml:    "[checks.pcie_link]\nmin_width = 64\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.min_width = 64: give a lane count from 1 to 32, such as 8 or 16, or 0 to expect each device's max width`,
		},
		{
			name:    "negative min_width",
			toml:    "[checks.pcie_link]\nmin_width = -1\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.min_width = -1: give a lane count from 1 to 32, such as 8 or 16, or 0 to expect each device's max width`,
		},
		{
			name: "addresses not as sysfs writes them",
			toml: "[checks.pcie_link]\nexclude_devices = [\"00000000:1A:00.0\", \"1a:00.0\"]\n",
			wantErr: `nodecheck.toml:2: checks.pcie_link.exclude_devices: "00000000:1A:00.0" is not a PCI address; write it as sysfs does, such as "0000:1a:00.0"` + "\n" +
				`nodecheck.toml:2: checks.pcie_link.exclude_devices: "1a:00.0" is not a PCI address; write it as sysfs does, such as "0000:1a:00.0"`,
		},
		{
			name:    "relative binary",
			toml:    "[checks.fabric_manager]\nbinary = \"nv-fabricmanager\"\n",
			wantErr: `nodecheck.toml:2: checks.fabric_manager.binary = "nv-fabricmanager": give an absolute path: Slurm starts prologs and health checks without PATH`,
		},
		{
			name:    "empty service",
			toml:    "[checks.fabric_manager]\nservice = \"\"\n",
			wantErr: `nodecheck.toml:2: checks.fabric_manager.service = "": give the systemd unit of Fabric Manager, such as "nvidia-fabricmanager"`,
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

func TestValidPCIAddress(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"0000:1a:00.0", true}, {"0000:db:00.0", true}, {"10000:01:00.1", true}, {"0000:1b:1f.7", true},
		{"0000:1A:00.0", false}, {"00000000:1a:00.0", false}, {"000000000:1a:00.0", false}, {"1a:00.0", false},
		{"0000:1a:00", false}, {"0000:1a:20.0", false}, {"0000:1a:00.8", false}, {"0000:1a:00:0", false}, {"", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			if got := ValidPCIAddress(tc.addr); got != tc.want {
				t.Errorf("ValidPCIAddress(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

// parseSectionCase parses a section test's TOML as nodecheck.toml and gives the settings
// of node (the base ones when node is ""). A case that expects an error compares it and
// gets nil: the caller stops there.
func parseSectionCase(t *testing.T, toml, node, wantErr string) *Config {
	t.Helper()
	cfg, err := ParseConfig([]byte(toml), "nodecheck.toml")
	if wantErr != "" {
		got := ""
		if err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(wantErr, got); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if node != "" {
		if cfg, err = cfg.ForNode(node); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}
