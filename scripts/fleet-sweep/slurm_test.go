package main

import (
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
	out := "41|PENDING|Resources\n42|RUNNING|None\n43|COMPLETED|None\n44|FAILED|NonZeroExitCode\n45|PENDING|ReqNodeNotAvail, UnavailableNodes:n2\n"
	want := map[string]jobState{
		"41": {state: "PENDING", reason: "Resources"},
		"42": {state: "RUNNING"},
		"43": {state: "COMPLETED"},
		"44": {state: "FAILED", reason: "NonZeroExitCode"},
		"45": {state: "PENDING", reason: "ReqNodeNotAvail, UnavailableNodes:n2"},
	}
	if diff := cmp.Diff(want, parseSqueue(out), cmp.AllowUnexported(jobState{})); diff != "" {
		t.Errorf("parseSqueue (-want +got):\n%s", diff)
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

func TestParseShowJob(t *testing.T) {
	// A real `scontrol show job -o` line from the test bed (Slurm 22.05), shortened.
	line := "JobId=5 JobName=nodecheck-sweep UserId=root(0) JobState=CANCELLED Reason=None Dependency=(null) " +
		"Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:15:00 " +
		"NodeList=n2 BatchHost=n2 Command=/tmp/out dir/n2.sh WorkDir=/ StdErr=/tmp/out/n2.err\n"
	f := parseShowJob(line)
	for k, want := range map[string]string{"JobId": "5", "JobState": "CANCELLED", "Reason": "None", "ExitCode": "0:0", "NodeList": "n2"} {
		if f[k] != want {
			t.Errorf("%s = %q, want %q", k, f[k], want)
		}
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
