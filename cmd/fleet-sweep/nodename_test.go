package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckNodeName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"n1", true},
		{"gpu-001", true},
		{"rack1_node02", true},
		{"node1.cluster.example", true},
		{"1node", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57), true}, // 249
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 58), true}, // 250
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 59), false},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"../../x", false},
		{"..", false},
		{".", false},
		{".hidden", false},
		{"a..b", false},
		{"trailing.", false},
		{"a/b", false},
		{"/abs", false},
		{"-rf", false},
		{"n1 n2", false},
		{"n1\n", false},
		{"n%j", false},
		{"nöde", false},
		{"n1\x00", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkNodeName(tc.name); (err == nil) != tc.ok {
				t.Errorf("checkNodeName(%q) = %v, want ok %v", tc.name, err, tc.ok)
			}
		})
	}
}

// TestShownName: the text summary prints a refused name quoted, without its control
// characters, and cut.
func TestShownName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"n1", "n1"},
		{"../../x", `"../../x"`},
		{"n\x1b[31mred", `"n\x1b[31mred"`},
	} {
		if got := shownName(tc.name); got != tc.want {
			t.Errorf("shownName(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := shownName(strings.Repeat("y/", 100)); len(got) > 44 {
		t.Errorf("a long refused name is shown with %d characters: %s", len(got), got)
	}
}

// TestRefusesHostileNodeNames: a controller whose sinfo lists node names that are paths
// ("../../x", "a/b") or options ("-x") gets no file written outside --out and no job for
// those nodes; each is listed as missing with why, and the plain node beside them is swept.
// The Slurm commands are tiny shell scripts standing in for a controller.
func TestRefusesHostileNodeNames(t *testing.T) {
	top := t.TempDir()
	bin := filepath.Join(top, "bin")
	out := filepath.Join(top, "a", "b", "out")
	hostile := []string{"../../x", "../../../escaped", "a/b", ".hidden", "-x", "..", strings.Repeat("y", 251)}
	var listing strings.Builder
	listing.WriteString("n1|idle|none\n")
	for _, n := range hostile {
		listing.WriteString(n + "|idle|none\n")
	}
	scripts := map[string]string{
		"sinfo": "#!/bin/sh\ncat <<'EOF'\n" + listing.String() + "EOF\n",
		// Records its arguments, one call a line; every job gets id 7.
		"sbatch": "#!/bin/sh\necho \"$*\" >>" + bin + "/sbatch.calls\necho 7\n",
		"squeue": "#!/bin/sh\necho '7|COMPLETED|0|None|'\n",
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--partition", "gpu", "--slurm-bin", bin, "--out", out, "--format", "json",
		"--poll", "10ms", "--output-wait", "0s", "--drain-slow"}, nil, &stdout, &stderr)
	if code != exitUnhealthy {
		t.Errorf("exit %d, want %d\n%s", code, exitUnhealthy, stderr.String())
	}
	// Nothing beside bin/ and the out tree.
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		switch {
		case rel == "." || rel == "a" || rel == filepath.Join("a", "b"):
		case rel == "bin" || strings.HasPrefix(rel, "bin"+string(filepath.Separator)):
		case rel == filepath.Join("a", "b", "out") || strings.HasPrefix(rel, filepath.Join("a", "b", "out")+string(filepath.Separator)):
			if name := filepath.Base(rel); d.Type().IsRegular() && name != "n1.sh" && rel != filepath.Join("a", "b", "out", "report.html") {
				t.Errorf("%s written in --out: only n1 is a plain node name (and the sweep's report.html)", rel)
			}
		default:
			t.Errorf("%s written outside --out", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(bin, "sbatch.calls"))
	if n := strings.Count(string(calls), "\n"); n != 1 || !strings.Contains(string(calls), "--nodelist=n1 ") {
		t.Errorf("sbatch calls, want one for n1:\n%s", calls)
	}
	var s summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	why := map[string]string{}
	for _, m := range s.Missing {
		why[m.Node] = m.Reason
	}
	for _, n := range hostile {
		if r := why[n]; !strings.HasPrefix(r, "not submitted: refused: the node name is not a plain host name (") {
			t.Errorf("node %q: missing reason %q", n, r)
		}
	}
	if s.Nodes != len(hostile)+1 || len(s.Missing) != len(hostile)+1 || s.SlurmCalls["scontrol"] != 0 || len(s.Drains) != 0 {
		t.Errorf("%d nodes, %d missing, calls %v, drains %+v", s.Nodes, len(s.Missing), s.SlurmCalls, s.Drains)
	}
	if !strings.Contains(stderr.String(), `fleet-sweep: node "../../x": refused: the node name is not a plain host name`) {
		t.Errorf("stderr does not name the refused node:\n%s", stderr.String())
	}
}
