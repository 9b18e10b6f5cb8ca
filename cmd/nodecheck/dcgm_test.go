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

// TestDCGMInjectedPCIeReplayDrains: the recorded ClusterMAX fault injection (`dcgmi test
// --inject --gpuid 0 -f 202`, testdata/snapshots/h100-dcgm-pcie-replay) in a health run with
// --drain drains the node through scontrol with dcgm_health's finding on GPU 0 and the remedy
// the table gives DCGM_FR_PCI_REPLAY_RATE's severity, ISOLATE: service. A prolog never asks
// DCGM, so the same snapshot's prolog is h100-healthy's: healthy, nothing drained.
func TestDCGMInjectedPCIeReplayDrains(t *testing.T) {
	snap := filepath.Join(repoRoot, "testdata", "snapshots", "h100-dcgm-pcie-replay")
	b, err := os.ReadFile(filepath.Join(repoRoot, "drain", "testdata", "slurm-22.05", "show-node-idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const reason = "Reason=nodecheck: dcgm_health: gpu 0 (0000:19:00.0): PCIe system: Detected more than 31 PCIe replays per minute for GPU 0 : 99999 (DCGM_FR_PCI_REPLAY_RATE (3), ISOLATE; DCGM: Warning) [service]"
	for _, tc := range []struct {
		name      string
		mode      string
		wantCode  int
		wantCalls []string
	}{
		{"health run drains", "health", exitUnhealthy,
			[]string{"[--version]", "[show][node][-o][--future][n1]", "[update][NodeName=n1][State=DRAIN][" + reason + "]"}},
		{"prolog never asks DCGM", "prolog", exitHealthy, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, scenario := fakeSlurmConfig(t, map[string]string{"version.out": "slurm-wlm 22.05.8\n", "show.out": string(b)}, "", "")
			out, stderr, code := runCLI(t, map[string]string{"SLURM_CONF": scenario},
				"run", "--config", cfg, "--mode", tc.mode, "--snapshot", snap, "--node", "n1", "--drain", "--format", "json")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s\n%s", code, tc.wantCode, stderr, out)
			}
			var rep struct {
				Results []struct {
					Check, Status, Summary, Remedy string
				} `json:"results"`
				Drain *drain.Outcome `json:"drain"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			for _, r := range rep.Results {
				if r.Check != "dcgm_health" {
					continue
				}
				wantStatus := "fail"
				if tc.mode == "prolog" {
					wantStatus = "skip"
				}
				if r.Status != wantStatus || (wantStatus == "fail" && r.Remedy != "service") {
					t.Errorf("dcgm_health: %s %q remedy %q, want %s", r.Status, r.Summary, r.Remedy, wantStatus)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, fakeCalls(t, scenario)); diff != "" {
				t.Errorf("scontrol calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDCGMStandin runs dcgm_health and dcgm_diag live against testdata/bin/dcgmi-standin, a
// real process printing dcgmi's outputs: the answers, the watches set where they are off, a
// host engine that is not there, and one that never answers (killed at the check's deadline,
// an error naming it, the manual run undecided).
func TestDCGMStandin(t *testing.T) {
	standin, err := filepath.Abs(filepath.Join(repoRoot, "testdata", "bin", "dcgmi-standin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		state    string
		check    string
		wantCode int
		want     string // in the check's summary
		wantLog  []string
	}{
		{"injected PCIe replay", "health health-c-j-pcie-replay-gpu0.json\n", "dcgm_health", exitUnhealthy,
			"PCIe system: Detected more than 31 PCIe replays per minute for GPU 0 : 99999 (DCGM_FR_PCI_REPLAY_RATE (3), ISOLATE; DCGM: Warning)",
			[]string{"health --host localhost -g a -f -j", "health --host localhost -g a -c -j"}},
		{"watches off: set, no data yet", "watches off\nhealth health-c-j-healthy.json\n", "dcgm_health", exitHealthy,
			"nodecheck set them now",
			[]string{"health --host localhost -g a -f -j", "health --host localhost -g a -s a", "health --host localhost -g a -c -j"}},
		{"no host engine", "no-host-engine\n", "dcgm_health", exitHealthy, "no DCGM host engine answers at localhost", nil},
		{"host engine hangs", "hang\n", "dcgm_health", exitUndecided, "the DCGM host engine at localhost did not answer health within", nil},
		{"diagnostic: faulty memory", "diag diag4-r2-memory-fail-gpu1-clocks-monitor-gpu0.json\ndiag-exit 205\n", "dcgm_diag", exitUnhealthy,
			"Hardware/memory Fail: Found 12 faulty memory elements on GPU 1 (DCGM_FR_FAULTY_MEMORY (52), ISOLATE)",
			[]string{"diag --host localhost -r 1 -j"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dcgmi := filepath.Join(dir, "dcgmi")
			if err := os.Symlink(standin, dcgmi); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dcgmi+".state", []byte(tc.state), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, dir, "[drain]\nenabled = false\n[checks.dcgm_health]\ndcgmi = \""+dcgmi+"\"\ntimeout = \"2s\"\n[checks.dcgm_diag]\ndcgmi = \""+dcgmi+"\"\n")
			start := time.Now()
			out, stderr, code := runCLI(t, nil, "run", "--config", cfg, "--slurm-conf", liveSlurmDir(t, dir, ""), "--node", "gpu-h100-01",
				"--check", tc.check, "--format", "json")
			if time.Since(start) > 10*time.Second {
				t.Errorf("the run took %s: a hung dcgmi must cost no more than the check's timeout", time.Since(start))
			}
			if code != tc.wantCode || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, tc.want, out, stderr)
			}
			if tc.wantLog != nil {
				b, err := os.ReadFile(dcgmi + ".state.log")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantLog, strings.Split(strings.TrimSpace(string(b)), "\n")); diff != "" {
					t.Errorf("dcgmi calls (-want +got):\n%s", diff)
				}
			}
		})
	}
}
