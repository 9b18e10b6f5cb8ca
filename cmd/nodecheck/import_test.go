package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// nvsmiCaptures holds the real nvidia-smi captures the node package tests with (SOURCE there).
var nvsmiCaptures = filepath.Join(repoRoot, "checks", "node", "testdata", "nvsmi")

func capture(name string) string { return filepath.Join(nvsmiCaptures, name) }

// TestImportNvidiaSMIReproducesSnapshot: importing h100-healthy's source capture gives its
// nvml.json, except for the NVLinks (written for the fixture, see its SOURCE).
func TestImportNvidiaSMIReproducesSnapshot(t *testing.T) {
	snapFile := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy", "nvml.json")
	b, err := os.ReadFile(snapFile)
	if os.IsNotExist(err) {
		t.Skip("no repository snapshots here: they exist only in a checkout")
	}
	if err != nil {
		t.Fatal(err)
	}
	var want node.GPUInventory
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for i := range want.Devices {
		want.Devices[i].NVLinks = nil
	}
	stdout, stderr, code := runCLI(t, nil, "import-nvidia-smi", "--query", capture("gpud-q-h100x8-535.161.08.txt"))
	if code != exitHealthy || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got node.GPUInventory
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%.300s", err, stdout)
	}
	// h100-healthy holds the facts nodecheck read when it was made (no "fields"): the import
	// also holds the signals the capture prints, which the snapshot leaves out.
	got = got.Only(node.LegacyGPUFields)
	got.Fields = want.Fields
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("import of gpud-q-h100x8-535.161.08.txt against h100-healthy/nvml.json without NVLinks (-want +got):\n%s", diff)
	}
}

func TestImportNvidiaSMIOutAndNVLinks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "nvml.json")
	// The A100 nvlink capture and an nvidia-smi -q of the same GPUs: a -q document written
	// here with the UUIDs of gpud-nvlink-status-a100.txt, since the corpus has no A100 -q.
	var q strings.Builder
	q.WriteString("==============NVSMI LOG==============\nDriver Version : 535.161.08\nCUDA Version : 12.2\nAttached GPUs : 2\n")
	q.WriteString("GPU 00000001:00:00.0\n    GPU UUID : GPU-5269b708-678a-b1a8-60f0-c90406537486\n")
	q.WriteString("GPU 00000002:00:00.0\n    GPU UUID : GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4\n")
	qFile := filepath.Join(t.TempDir(), "q.txt")
	if err := os.WriteFile(qFile, []byte(q.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// gpud-nvlink-status-a100.txt names 8 GPUs, 6 of which this -q lacks: refused.
	_, stderr, code := runCLI(t, nil, "import-nvidia-smi", "--query", qFile, "--nvlink-status", capture("gpud-nvlink-status-a100.txt"), "--out", out)
	if code != exitCannotRun || !strings.Contains(stderr, "gpud-nvlink-status-a100.txt: nvlink status names GPU ") || !strings.Contains(stderr, "(+3 more), which the nvidia-smi -q capture does not list: not the same node") {
		t.Errorf("foreign UUIDs: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("--out written despite the error")
	}

	// The first two GPUs of the capture, as nvidia-smi -i 0,1 would print them.
	nvl, err := os.ReadFile(capture("gpud-nvlink-status-a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(nvl), "\n")
	nvlFile := filepath.Join(t.TempDir(), "nvlink.txt")
	if err := os.WriteFile(nvlFile, []byte(strings.Join(lines[:26], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, nil, "import-nvidia-smi", "--query", qFile, "--nvlink-status", nvlFile, "--out", out)
	if code != exitHealthy || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	snap, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got node.GPUInventory
	if err := json.Unmarshal(snap, &got); err != nil {
		t.Fatal(err)
	}
	for _, g := range got.Devices {
		if len(g.NVLinks) != 12 || !g.NVLinks[11].Active {
			t.Errorf("gpu %d: nvlinks %v, want 12 active", g.Index, g.NVLinks)
		}
	}
}

func TestImportNvidiaSMIStdin(t *testing.T) {
	in, err := os.ReadFile(capture("azurehpc-bad_nvsmi8_output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"nodecheck", "import-nvidia-smi", "--query", "-"}, bytes.NewReader(in), &out, &errb, func(string) string { return "" })
	if code != exitHealthy {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var got node.GPUInventory
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.DeviceCount != 8 || got.Devices[5].RetiredPages == nil || *got.Devices[5].RetiredPages != (node.RetiredPages{SingleBit: 20, DoubleBit: 45, Pending: true}) {
		t.Errorf("import of azurehpc-bad_nvsmi8_output.txt from stdin: %+v", got)
	}

	// A parse error on stdin names <stdin> and the line.
	out.Reset()
	errb.Reset()
	code = execute(context.Background(), []string{"nodecheck", "import-nvidia-smi", "--query", "-"}, strings.NewReader("hello\n"), &out, &errb, func(string) string { return "" })
	if code != exitCannotRun || !strings.HasPrefix(errb.String(), `nodecheck: import-nvidia-smi: <stdin>:1: "hello": want the`) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestImportNvidiaSMIErrors: every refusal exits 2 and names the file and, where there is
// one, the line.
func TestImportNvidiaSMIErrors(t *testing.T) {
	truncated := capture("gpud-q-h100-535.183.01-truncated-invalid.txt")
	table := capture("gpud-table-550.90.07.txt")
	query := capture("gpud-q-a10-535.129.03.txt")
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no query", nil, "nodecheck: --query FILE is required"},
		{"both stdin", []string{"--query", "-", "--nvlink-status", "-"}, "nodecheck: only one of --query, --nvlink-status and --nvlink-errors can read stdin"},
		{"errors and query on stdin", []string{"--query", "-", "--nvlink-errors", "-"}, "nodecheck: only one of --query, --nvlink-status and --nvlink-errors can read stdin"},
		{"truncated capture", []string{"--query", truncated},
			"nodecheck: import-nvidia-smi: " + truncated + `:91: end of input after 1 GPU block, but "Attached GPUs : 8" (line 7) announced 8: the output is cut short`},
		{"table, not -q", []string{"--query", table},
			"nodecheck: import-nvidia-smi: " + table + `:1: "Mon Jan 20 10:18:26 2025": want the "==============NVSMI LOG==============" banner`},
		{"-q given as nvlink status", []string{"--query", query, "--nvlink-status", query},
			"nodecheck: import-nvidia-smi: " + query + `:1: "==============NVSMI LOG==============": want "GPU N: NAME (UUID: ...)"`},
		{"missing file", []string{"--query", "/nonexistent/q.txt"}, "nodecheck: import-nvidia-smi: read /nonexistent/q.txt: no such file or directory"},
		{"unwritable out", []string{"--query", query, "--out", "/nonexistent/dir/nvml.json"},
			"nodecheck: import-nvidia-smi: write /nonexistent/dir/nvml.json: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, append([]string{"import-nvidia-smi"}, tc.args...)...)
			if code != exitCannotRun || stdout != "" || !strings.HasPrefix(stderr, tc.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and stderr starting %q", code, stdout, stderr, exitCannotRun, tc.wantStderr)
			}
		})
	}
}
