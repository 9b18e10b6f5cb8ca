package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// TestArchitectureWords: every architecture the GPU model table gives is one repair.ResetSet
// knows (checks and drain/repair never import each other; the CLI hands the words over).
func TestArchitectureWords(t *testing.T) {
	for _, a := range checks.GPUArchitectures() {
		if !slices.Contains(repair.Architectures(), a) {
			t.Errorf("checks gives architecture %q, which repair.Architectures does not list", a)
		}
	}
}

// TestRepairFacts: the facts the repair step hands ResetSet, from the bundled snapshots' own
// readings: architecture, NVLinks (GPU 6 of a100-nvlink-all-inactive has all 12 inactive),
// NVSwitches and Fabric Manager's state as fabric_manager read it.
func TestRepairFacts(t *testing.T) {
	for _, tc := range []struct {
		snap          string
		gpu           int
		arch          string
		links, active int
		switches      int
		fm            string
	}{
		{"h100-healthy", 0, repair.ArchHopper, 18, 18, 4, "active"},
		{"a100-healthy", 0, repair.ArchAmpere, 12, 12, 6, "active"},
		{"a100-nvlink-all-inactive", 6, repair.ArchAmpere, 12, 0, 6, "active"},
		{"h100-fm-down", 0, repair.ArchHopper, 18, 18, 4, "inactive"},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			snap, err := node.OpenSnapshot(filepath.Join(repoRoot, "testdata", "snapshots", tc.snap))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			gpus, ok := repairGPUs(ctx, snap)
			if !ok || len(gpus) != 8 {
				t.Fatalf("%d GPUs, known %v", len(gpus), ok)
			}
			if g := gpus[tc.gpu]; g.Arch != tc.arch || g.Links != tc.links || g.ActiveLinks != tc.active {
				t.Errorf("GPU %s: arch %q, %d links, %d active; want %q, %d, %d", g.Bus, g.Arch, g.Links, g.ActiveLinks, tc.arch, tc.links, tc.active)
			}
			fm := checks.All()
			i := slices.IndexFunc(fm, func(c checks.Check) bool { return c.ID() == "fabric_manager" })
			env := &checks.Env{Facts: snap, Config: config.Default(checks.Schema()), Mode: config.ModeHealth}
			res := fm[i].Run(ctx, env)
			res.Check = "fabric_manager"
			f := repairFabric(ctx, snap, checks.Report{Results: []checks.Result{res}})
			if f.NVSwitches != tc.switches || f.FabricManager != tc.fm {
				t.Errorf("fabric %+v, want %d NVSwitches, Fabric Manager %q", f, tc.switches, tc.fm)
			}
		})
	}
}

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
			out, stderr, _ := run(t, map[string]string{"SLURM_CONF": scenario}, "run", "--config", cfg, "--mode", "health", "--snapshot", snap,
				"--node", "n1", "--drain", "--resume", "--repair", "--dry-run", "--format", "text")
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
