package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRepairResetTogether: a dry run on an HGX A100 with a reset-class fault and
// fabric_manager turned off (Fabric Manager's state unknown) resets the faulty GPU together
// with its 7 NVLink peers, and says so. The snapshot is a100-healthy (real captures) with two
// invented facts, written here: GPU 0's pending row remap, and an empty process list on each
// GPU (the captures have none recorded).
func TestRunRepairResetTogether(t *testing.T) {
	snap := copySnapshot(t, "a100-healthy")
	path := filepath.Join(snap, "nvml.json")
	var inv map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatal(err)
	}
	for i, d := range inv["devices"].([]any) {
		g := d.(map[string]any)
		g["compute"] = map[string]any{"processes": []any{}}
		g["remapped_rows"] = map[string]any{"correctable": 0, "uncorrectable": 0, "pending": false, "failed": false}
		if i == 0 {
			g["remapped_rows"] = map[string]any{"correctable": 0, "uncorrectable": 4, "pending": true, "failed": false}
		}
	}
	if data, err = json.Marshal(inv); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	show, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", "show-node-drained-nodecheck.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, extra string
		want        []string
		wantNot     string
	}{
		{"Fabric Manager state unknown: the 8 GPUs together", "[checks.fabric_manager]\nenabled = false\n",
			[]string{"would reset GPU 0001:00:00.0 together with its NVLink peers 0002:00:00.0,", "Fabric Manager's state is unknown",
				"would run: /bin/echo reset 0001:00:00.0,0002:00:00.0,0003:00:00.0,0004:00:00.0,000b:00:00.0,000c:00:00.0,000d:00:00.0,000e:00:00.0"}, ""},
		{"Fabric Manager active: the GPU alone", "",
			[]string{"would reset GPU 0001:00:00.0 for gpu_memory_errors@0001:00:00.0", "would run: /bin/echo reset 0001:00:00.0\n"}, "together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, scenario := repairSlurmConfig(t, string(show),
				"[repair]\nenabled = true\ngpu_reset = [\"/bin/echo\", \"reset\", \"{gpus}\"]\nmax_repairing = \"\"\nsqueue = \"FAKE\"\n"+tc.extra)
			out, stderr, _ := runCLI(t, map[string]string{"SLURM_CONF": scenario}, "run", "--config", cfg, "--mode", "health", "--snapshot", snap,
				"--node", "n1", "--drain", "--resume", "--repair", "--test-bed", "--dry-run", "--format", "text")
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, out, stderr)
				}
			}
			if tc.wantNot != "" && strings.Contains(out, tc.wantNot) {
				t.Errorf("output has %q:\n%s", tc.wantNot, out)
			}
		})
	}
}
