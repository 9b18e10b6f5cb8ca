package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/drain"
)

// fakeSlurmConfig writes a nodecheck.toml whose scontrol and sinfo are drain's fake
// (drain/testdata/bin/fake-slurm) and returns it with the fake's scenario directory, which
// the run passes to the fake as SLURM_CONF.
func fakeSlurmConfig(t *testing.T, files map[string]string, maxDrained, extra string) (cfg, scenario string) {
	t.Helper()
	fake, err := filepath.Abs(filepath.Join(repoRoot, "drain", "testdata", "bin", "fake-slurm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scenario = filepath.Join(dir, "scenario")
	if err := os.Mkdir(scenario, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(scenario, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(dir, "nodecheck.toml")
	body := "[drain]\nscontrol = \"" + fake + "\"\nsinfo = \"" + fake + "\"\nmax_drained = \"" + maxDrained + "\"\n[state]\ndir = \"" + filepath.Join(dir, "state") + "\"\n" + extra
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, scenario
}

func fakeCalls(t *testing.T, scenario string) []string {
	data, err := os.ReadFile(filepath.Join(scenario, "argv.log"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestRunDrainWiring runs the CLI against the fake scontrol: which runs act on Slurm, with
// which commands, and what the report says. The real-Slurm behaviour is TestSlurm's.
func TestRunDrainWiring(t *testing.T) {
	snaps := filepath.Join(repoRoot, "testdata", "snapshots")
	down := filepath.Join(snaps, "h100-ib-port-down")
	healthy := filepath.Join(snaps, "h100-healthy")
	// scontrol's answers as Slurm 22.05 printed them on the test bed (drain/testdata/capture.sh).
	capture := func(name string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	idle, ours := capture("show-node-idle.txt"), capture("show-node-drained-nodecheck.txt")
	const reason = "Reason=nodecheck: ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp [admin]"
	tests := []struct {
		name       string
		show       string
		sinfo      string // sinfo's output; with it, max_drained = "1"
		args       []string
		wantCode   int
		wantAction drain.Action // "" for no "drain" key
		wantCalls  []string
		wantOut    string
	}{
		{"replay without flags never acts", idle, "", []string{"--mode", "health", "--snapshot", down}, 1, "", nil, ""},
		{"manual run only reports", idle, "", []string{"--snapshot", down, "--node", "n1"}, 1, "", nil, ""},
		{"replay --drain --node drains", idle, "", []string{"--mode", "health", "--snapshot", down, "--node", "n1", "--drain"}, 1, drain.ActionDrained,
			[]string{"[--version]", "[show][node][-o][--future][n1]", "[update][NodeName=n1][State=DRAIN][" + reason + "]"}, ""},
		{"healthy prolog calls nothing", idle, "", []string{"--mode", "prolog", "--snapshot", healthy, "--node", "n1", "--drain"}, 0, drain.ActionNone, nil, ""},
		{"clean health run waits", ours, "", []string{"--mode", "health", "--snapshot", healthy, "--node", "n1", "--resume"}, 0, drain.ActionWaiting,
			[]string{"[--version]", "[show][node][-o][--future][n1]"}, ""},
		{"dry run prints and runs no update", idle, "", []string{"--mode", "health", "--snapshot", down, "--node", "n1", "--drain", "--dry-run", "--format", "text"}, 1, "",
			[]string{"[--version]", "[show][node][-o][--future][n1]"},
			"drain: drained: dry run, would drain: nodecheck: ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp [admin]\n  would run: /"},
		{"max_drained holds a prolog's drain back, and the prolog passes", idle, "n2|idle+drain|1796286612|nodecheck: gpu_count: x\nn1|idle|Unknown|none\nn3|idle|Unknown|none\n",
			[]string{"--mode", "prolog", "--snapshot", down, "--node", "n1", "--drain"}, 0, drain.ActionHeld,
			[]string{"[--version]", "[show][node][-o][--future][n1]", "[--all][--noheader][--Node][-O][NodeList:0|,StateComplete:0|,Timestamp:0|,Reason:0]"}, ""},
		{"max_drained holds a health check's drain back", idle, "n2|idle+drain|1796286612|nodecheck: gpu_count: x\nn1|idle|Unknown|none\nn3|idle|Unknown|none\n",
			[]string{"--mode", "health", "--snapshot", down, "--node", "n1", "--drain"}, 1, drain.ActionHeld, nil, ""},
		{"process SLURM_CONF reaches scontrol in a replay", idle, "", []string{"--mode", "epilog", "--snapshot", down, "--node", "n1", "--drain"}, 1, drain.ActionDrained, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"version.out": "slurm-wlm 22.05.8\n", "show.out": tc.show}
			limit := ""
			if tc.sinfo != "" {
				files["sinfo.out"] = tc.sinfo
				limit = "1"
			}
			cfg, scenario := fakeSlurmConfig(t, files, limit, "")
			env := map[string]string{"SLURM_CONF": scenario}
			args := append([]string{"run", "--config", cfg}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--format") {
				args = append(args, "--format", "json")
			}
			out, stderr, code := runCLI(t, env, args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if tc.wantOut != "" {
				if !strings.Contains(out, tc.wantOut) {
					t.Errorf("output lacks %q:\n%s", tc.wantOut, out)
				}
			} else {
				var rep struct {
					Drain *drain.Outcome `json:"drain"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("%v:\n%s", err, out)
				}
				switch {
				case tc.wantAction == "" && rep.Drain != nil:
					t.Errorf("report has drain %+v, want none", rep.Drain)
				case tc.wantAction != "" && (rep.Drain == nil || rep.Drain.Action != tc.wantAction):
					t.Errorf("report drain %+v, want action %q", rep.Drain, tc.wantAction)
				}
			}
			if tc.wantCalls != nil || tc.wantAction == "" || tc.wantAction == drain.ActionNone {
				if diff := cmp.Diff(tc.wantCalls, fakeCalls(t, scenario)); diff != "" {
					t.Errorf("scontrol calls (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestRunDrainWithinBudget: a prolog whose scontrol hangs still ends within the prolog
// budget, exits 1 (Slurm then drains the node itself), and says the controller did not answer.
func TestRunDrainWithinBudget(t *testing.T) {
	cfg, scenario := fakeSlurmConfig(t, map[string]string{"version.out": "slurm-wlm 22.05.8\n", "show.sleep": "60"}, "", "[budget]\nprolog = \"3s\"\n")
	down := filepath.Join(repoRoot, "testdata", "snapshots", "h100-ib-port-down")
	start := time.Now()
	out, stderr, code := runCLI(t, map[string]string{"SLURM_CONF": scenario, "SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "7"},
		"run", "--config", cfg, "--snapshot", down, "--node", "n1", "--drain", "--format", "json")
	if el := time.Since(start); el > 3500*time.Millisecond {
		t.Errorf("took %s, budget 3s", el)
	}
	if code != exitUnhealthy {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(out, `"action": "unreachable"`) || !strings.Contains(out, "no answer within") {
		t.Errorf("report:\n%s", out)
	}
	if !strings.Contains(stderr, "exiting non-zero, so Slurm drains the node itself") {
		t.Errorf("logs:\n%s", stderr)
	}
}

func TestDrainFlagErrors(t *testing.T) {
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"replay --drain without --node", nil, []string{"run", "--snapshot", snap, "--drain"}, "with --snapshot need --node"},
		{"replay --resume without --node", nil, []string{"run", "--snapshot", snap, "--resume"}, "with --snapshot need --node"},
		{"--resume in a prolog", nil, []string{"run", "--mode", "prolog", "--resume", "--snapshot", snap, "--node", "n1"}, "--resume: prolog runs never resume a node"},
		{"--resume in a detected epilog", map[string]string{"SLURM_SCRIPT_CONTEXT": "epilog_slurmd"}, []string{"run", "--resume"}, "--resume: epilog runs never resume a node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.env, tc.args...)
			if code != exitCannotRun || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
