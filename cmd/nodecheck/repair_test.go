package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/drain/repair"
)

// TestRunRepairWiring runs the CLI against drain's fake scontrol, sinfo and squeue
// (drain/testdata/bin/fake-slurm) on the node Slurm 22.05 showed drained by nodecheck, with
// the h100-remap-pending snapshot (a pending row remap: reset_gpu). The reset command is
// /bin/echo: a stand-in that only prints. The real-Slurm behaviour is the test bed's.
func TestRunRepairWiring(t *testing.T) {
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-remap-pending")
	show, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", "show-node-drained-nodecheck.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const on = "[repair]\nenabled = true\ngpu_reset = [\"/bin/echo\", \"reset\", \"{gpus}\"]\nmax_repairing = \"\"\nsqueue = \"FAKE\"\n"
	args := []string{"--mode", "health", "--snapshot", snap, "--node", "n1", "--drain", "--resume"}
	// The snapshot was recorded on another host: this one repairs only as a test bed.
	bed := append(slices.Clone(args), "--test-bed")
	tests := []struct {
		name      string
		repair    string // [repair] section
		args      []string
		want      repair.Step // "" for no "repair" key
		wantCalls int         // calls past drain's two ([--version], show)
		wantOut   string
	}{
		{"[repair] absent, --repair: said, not silently ignored", "", append(slices.Clone(bed), "--repair"), repair.StepSkipped, 0, ""},
		{"[repair] off, --repair: said", "[repair]\nenabled = false\n", append(slices.Clone(bed), "--repair"), repair.StepSkipped, 0, ""},
		{"a replay without --repair does not repair", on, args, "", 0, ""},
		{"another host's snapshot repairs nothing here", on, append(slices.Clone(args), "--repair"), repair.StepSkipped, 0, ""},
		{"dry run prints each step", on, append(slices.Clone(bed), "--repair", "--dry-run", "--format", "text"), "", 2,
			"repair: reset: dry run, would reset GPU 0000:"},
		{"reset", on, append(slices.Clone(bed), "--repair", "--state-dir", "STATE"), repair.StepReset, 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, scenario := repairSlurmConfig(t, string(show), tc.repair)
			state := filepath.Join(filepath.Dir(cfg), "state")
			a := []string{"run", "--config", cfg}
			for _, x := range tc.args {
				a = append(a, strings.ReplaceAll(x, "STATE", state))
			}
			if !slices.Contains(tc.args, "--format") {
				a = append(a, "--format", "json")
			}
			out, stderr, _ := runCLI(t, map[string]string{"SLURM_CONF": scenario}, a...)
			if tc.wantOut != "" {
				if !strings.Contains(out, tc.wantOut) || !strings.Contains(out, "  would run: /bin/echo reset 0000:") {
					t.Errorf("output lacks %q and the reset:\n%s\n%s", tc.wantOut, out, stderr)
				}
			} else {
				var rep struct {
					Repair *repair.Outcome `json:"repair"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("%v:\n%s", err, out)
				}
				if (rep.Repair == nil) != (tc.want == "") || rep.Repair != nil && rep.Repair.Action != tc.want {
					t.Errorf("repair %+v, want %q; stderr:\n%s", rep.Repair, tc.want, stderr)
				}
				if tc.want == repair.StepReset {
					if len(rep.Repair.Commands) != 2 || !strings.HasPrefix(rep.Repair.Commands[1], "/bin/echo reset 0000:") || len(rep.Repair.Warnings) > 0 {
						t.Errorf("commands %q, warnings %q", rep.Repair.Commands, rep.Repair.Warnings)
					}
					// nodecheck history shows what was tried and when.
					hist, stderr, code := runCLI(t, nil, "history", "--state-dir", state, "--node", "gpu-h100-01") // the snapshot's node
					if code != 0 || !strings.Contains(hist, "repair reset_gpu: ok (for gpu_memory_errors@0000:") {
						t.Errorf("nodecheck history (exit %d) lacks the reset:\n%s\n%s", code, hist, stderr)
					}
				}
			}
			calls := fakeCalls(t, scenario)
			if len(calls) != 2+tc.wantCalls {
				t.Errorf("calls %q, want drain's 2 and %d more", calls, tc.wantCalls)
			}
		})
	}
}

// repairSlurmConfig is fakeSlurmConfig for a node Slurm shows as show, with repairSection
// appended to the config; "FAKE" in it becomes the fake Slurm program (for squeue).
func repairSlurmConfig(t *testing.T, show, repairSection string) (cfg, scenario string) {
	t.Helper()
	cfg, scenario = fakeSlurmConfig(t, map[string]string{"version.out": "slurm-wlm 22.05.8\n", "show.out": show}, "", "")
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fake := strings.Split(strings.Split(string(body), "scontrol = \"")[1], "\"")[0]
	if err := os.WriteFile(cfg, append(body, strings.ReplaceAll(repairSection, "FAKE", fake)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, scenario
}

// TestRunRepairMetrics: with [repair] on, a health run that resets a GPU writes the repair
// step and the record's counts into the textfile (golden, promtool-clean where promtool is
// installed): the reset just recorded counts 1 for the node and for the GPU.
func TestRunRepairMetrics(t *testing.T) {
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-remap-pending")
	show, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", "show-node-drained-nodecheck.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, scenario := repairSlurmConfig(t, string(show), "[repair]\nenabled = true\ngpu_reset = [\"/bin/echo\", \"reset\", \"{gpus}\"]\nmax_repairing = \"\"\nsqueue = \"FAKE\"\n")
	state := filepath.Join(filepath.Dir(cfg), "state")
	prom := filepath.Join(t.TempDir(), "nodecheck.prom")
	_, stderr, _ := runCLI(t, map[string]string{"SLURM_CONF": scenario}, "run", "--config", cfg, "--mode", "health", "--snapshot", snap,
		"--node", "n1", "--drain", "--resume", "--repair", "--test-bed", "--state-dir", state, "--prom-file", prom, "--format", "json")
	got, err := os.ReadFile(prom)
	if err != nil {
		t.Fatalf("no metrics: %v\n%s", err, stderr)
	}
	golden(t, filepath.Join("metrics", "run-h100-remap-pending-repair.prom"), normalizeMetrics(string(got)))
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(string(got))
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
	for _, want := range []string{`nodecheck_repair_step{node="n1",step="reset"} 1`, `nodecheck_repairs_in_window{node="n1",scope="node"} 1`,
		`nodecheck_repairs_in_window{gpu="0000:3b:00.0",node="n1",scope="gpu"} 1`, `nodecheck_repairs_in_window{gpu="0000:19:00.0",node="n1",scope="gpu"} 0`} {
		if !strings.Contains(string(got), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, got)
		}
	}
}
