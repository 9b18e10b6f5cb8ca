package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSinfo(t *testing.T) {
	// As `sinfo -h -N -o '%N|%T|%E'` prints them on Slurm 22.05; gpu02 is in two partitions.
	out := "gpu01|idle|none\ngpu02|drained|nodecheck: ib_ports: mlx5_5/1: state DOWN | see ticket 12\n" +
		"gpu02|drained|nodecheck: ib_ports: mlx5_5/1: state DOWN | see ticket 12\ngpu03|down*|Not responding\n\n" +
		"gpu04|idle~|none\ngpu05|mixed|none\ngpu06|idle*|none\ngpu07|draining|maintenance\n"
	want := []nodeState{
		{name: "gpu01", state: "idle"},
		{name: "gpu02", state: "drained", reason: "nodecheck: ib_ports: mlx5_5/1: state DOWN | see ticket 12"},
		{name: "gpu03", state: "down*", reason: "Not responding"},
		{name: "gpu04", state: "idle~"},
		{name: "gpu05", state: "mixed"},
		{name: "gpu06", state: "idle*"},
		{name: "gpu07", state: "draining", reason: "maintenance"},
	}
	got := parseSinfo(out)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(nodeState{})); diff != "" {
		t.Fatalf("parseSinfo (-want +got):\n%s", diff)
	}
	wantWhy := []string{"", "node drained: nodecheck: ib_ports: mlx5_5/1: state DOWN | see ticket 12", "node down: Not responding",
		"", "", "node idle, not responding", "node draining: maintenance"}
	for i, n := range got {
		t.Run(n.name, func(t *testing.T) {
			if why := n.unavailable(); why != wantWhy[i] {
				t.Errorf("%s %s: unavailable() = %q, want %q", n.name, n.state, why, wantWhy[i])
			}
		})
	}
}

func TestParseSqueue(t *testing.T) {
	// As `squeue -h -t all -O 'JobID:|,State:|,exit_code:|,Reason:|'` printed them on the test
	// bed (Slurm 22.05.8): exit_code is the raw wait status, 768 for `exit 3`.
	out := "41|PENDING|0|Resources|\n42|RUNNING|0|None|\n43|COMPLETED|0|None|\n44|FAILED|768|NonZeroExitCode|\n" +
		"45|PENDING|0|ReqNodeNotAvail, UnavailableNodes:n2|\n46|CANCELLED|9|None|\n47|FAILED|x|None|\n\n"
	want := map[string]jobState{
		"41": {state: "PENDING", reason: "Resources", exitCode: "0:0"},
		"42": {state: "RUNNING", exitCode: "0:0"},
		"43": {state: "COMPLETED", exitCode: "0:0"},
		"44": {state: "FAILED", reason: "NonZeroExitCode", exitCode: "3:0"},
		"45": {state: "PENDING", reason: "ReqNodeNotAvail, UnavailableNodes:n2", exitCode: "0:0"},
		"46": {state: "CANCELLED", exitCode: "0:9"},
		"47": {state: "FAILED"},
	}
	if diff := cmp.Diff(want, parseSqueue(out), cmp.AllowUnexported(jobState{})); diff != "" {
		t.Errorf("parseSqueue (-want +got):\n%s", diff)
	}
	// The same from Slurm 24.11.5 on the test bed, which spells exit_code as scontrol does.
	out = "4|PENDING|0:0|Resources|\n3|RUNNING|0:0|None|\n5|FAILED|3:0|NonZeroExitCode|\n6|FAILED|0:9|RaisedSignal:9(Killed)|\n" +
		"3|CANCELLED|0:15|None|\n7|FAILED|3:x|None|\n8|FAILED|:0|None|\n9|FAILED|256:0|None|\n"
	want = map[string]jobState{
		"4": {state: "PENDING", reason: "Resources", exitCode: "0:0"},
		"5": {state: "FAILED", reason: "NonZeroExitCode", exitCode: "3:0"},
		"6": {state: "FAILED", reason: "RaisedSignal:9(Killed)", exitCode: "0:9"},
		"3": {state: "CANCELLED", exitCode: "0:15"},
		"7": {state: "FAILED"},
		"8": {state: "FAILED"},
		"9": {state: "FAILED"},
	}
	if diff := cmp.Diff(want, parseSqueue(out), cmp.AllowUnexported(jobState{})); diff != "" {
		t.Errorf("parseSqueue, Slurm 24.11 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		state string
		done  bool
	}{{"PENDING", false}, {"RUNNING", false}, {"COMPLETING", false}, {"CONFIGURING", false}, {"REQUEUED", false},
		{"COMPLETED", true}, {"FAILED", true}, {"CANCELLED", true}, {"TIMEOUT", true}, {"NODE_FAIL", true}, {"OUT_OF_MEMORY", true}} {
		if finished(tc.state) != tc.done {
			t.Errorf("finished(%s) = %v", tc.state, !tc.done)
		}
	}
}

func TestParseJobID(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{"42\n", "42", ""},
		{"42;cluster\n", "42", ""},
		{"Submitted batch job 42\n", "", `sbatch --parsable printed "Submitted batch job 42", not a job id`},
		{"", "", `sbatch --parsable printed "", not a job id`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseJobID(tc.in)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Errorf("parseJobID(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLastLine(t *testing.T) {
	if got := lastLine("first\nsecond\n\n  "); got != "second" {
		t.Errorf("lastLine = %q", got)
	}
	if got := lastLine("ok\n\x1b[31mred\x1b[0m\r\n"); got != "?[31mred?[0m" {
		t.Errorf("lastLine of a coloured line = %q", got)
	}
}

// TestSubmitStops: sbatch refusing every job (an account limit, say) costs at most a few calls
// beyond maxSubmitFailures, not one per node; the nodes left say why they got no job. The Slurm
// commands are tiny shell scripts standing in for a controller.
func TestSubmitStops(t *testing.T) {
	bin := t.TempDir()
	var nodes strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&nodes, "g%d|idle|none\n", i)
	}
	scripts := map[string]string{
		"sinfo":  "#!/bin/sh\ncat <<'EOF'\n" + nodes.String() + "EOF\n",
		"sbatch": "#!/bin/sh\necho x >>" + bin + "/sbatch.calls\necho 'sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user'\"'\"'s size and/or time limits)' >&2\nexit 1\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--partition", "gpu", "--slurm-bin", bin, "--out", t.TempDir(), "--format", "json"}, nil, &stdout, &stderr)
	calls, _ := os.ReadFile(filepath.Join(bin, "sbatch.calls"))
	n := strings.Count(string(calls), "x")
	if code != exitError || n < maxSubmitFailures || n >= 2*maxSubmitFailures {
		t.Fatalf("exit %d, %d sbatch calls (want %d to %d)\n%s", code, n, maxSubmitFailures, 2*maxSubmitFailures-1, stderr.String())
	}
	var s summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil || len(s.Missing) != 100 || s.SlurmCalls["sbatch"] != n {
		t.Fatalf("%v: %d missing, calls %v", err, len(s.Missing), s.SlurmCalls)
	}
	stopped := 0
	for _, m := range s.Missing {
		if strings.HasPrefix(m.Reason, "not submitted: sbatch not run: the submission stopped after 8 failures in a row (the last: sbatch: error: Batch job submission failed: Job violates accounting/QOS policy") {
			stopped++
		}
	}
	if stopped != 100-n {
		t.Errorf("%d nodes say the submission stopped, want %d", stopped, 100-n)
	}
}
