package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nccl", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseMultinodeLogs: nodecheck's nccl-tests parser on real multi-node logs, as the sweep's
// multi-node jobs print them: ranks on two and four hosts, MPI's warnings and help-message
// lines in between, the mpirun command line on top.
func TestParseMultinodeLogs(t *testing.T) {
	tests := []struct {
		file      string
		hosts     []string
		ranks     int
		busbw     float64
		size      int64
		wrong     int64
		oob       int64
		failures  int
		completed bool
	}{
		{"nccltests-309-h100-2node-16gpu-mpi.log", []string{"bm-h100-01", "bm-h100-02"}, 16, 469.21, 16 << 30, 0, 0, 0, true},
		{"nccltests-309-h100-4node-32gpu-mpi.log", []string{"pt01", "spt01", "spt02", "pt02"}, 32, 365.84, 16 << 30, 0, 0, 0, true},
		{"nccltests-369-gh200-2node-wrong-nonzero-failed.log", []string{"gpu-1-1", "gpu-1-7"}, 2, 22.87, 128 << 20, 128, 4, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			run, err := checks.ParseNCCLTests(bytes.NewReader(readTestdata(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			bw, size := run.LargeBusBW()
			var wrong int64
			for _, r := range run.Rows {
				wrong += max(r.OutOfPlace.Wrong, 0) + max(r.InPlace.Wrong, 0)
			}
			if diff := cmp.Diff(tc.hosts, run.Hosts()); diff != "" || len(run.Ranks) != tc.ranks || bw != tc.busbw || size != tc.size ||
				wrong != tc.wrong || run.OutOfBounds != tc.oob || len(run.Failures) != tc.failures || run.Completed() != tc.completed {
				t.Errorf("hosts (-want +got) %s; ranks %d, busbw %v at %d, wrong %d, oob %d, failures %q, completed %v",
					diff, len(run.Ranks), bw, size, wrong, run.OutOfBounds, run.Failures, run.Completed())
			}
		})
	}
}

func TestJudgeMultinode(t *testing.T) {
	good := readTestdata(t, "nccltests-309-h100-2node-16gpu-mpi.log")
	bad := readTestdata(t, "nccltests-369-gh200-2node-wrong-nonzero-failed.log")
	lines := strings.Split(string(good), "\n")
	cut := strings.Join(lines[:60], "\n") // killed mid-run: rows, no summary
	tests := []struct {
		name string
		run  nodeRun
		err  string
		want setOutcome
	}{
		{"healthy pair", nodeRun{JobID: "7", State: "COMPLETED", ExitCode: "0:0", OutputPath: "/o/r1-s1.out", Output: good}, "",
			setOutcome{JobID: "7", BusBW: 469.21, At: "16 GiB"}},
		{"wrong data", nodeRun{JobID: "8", State: "FAILED", ExitCode: "1:0", OutputPath: "/o/r1-s2.out", Output: bad}, "",
			setOutcome{JobID: "8", Failed: "wrong data: 128 wrong elements, 4 out of bounds values (exit 1:0)"}},
		{"exit without a failure line", nodeRun{JobID: "9", State: "FAILED", ExitCode: "137:0", OutputPath: "/o/r1-s3.out", Output: good},
			"srun: error: n2: task 1: Killed", setOutcome{JobID: "9", Failed: "job 9 FAILED (exit 137:0); stderr: srun: error: n2: task 1: Killed"}},
		{"cut short", nodeRun{JobID: "10", State: "COMPLETED", ExitCode: "0:0", OutputPath: "/o/r1-s4.out", Output: []byte(cut)}, "",
			setOutcome{JobID: "10", Failed: "job 10 COMPLETED: output stops before nccl-tests' summary (after 15 rows)"}},
		{"no output: srun could not start it", nodeRun{JobID: "11", State: "FAILED", ExitCode: "2:0", OutputPath: "/o/r1-s5.out", Output: []byte{}},
			"srun: error: MPI: Cannot create context for mpi/pmix", setOutcome{JobID: "11", Failed: "job 11 FAILED (exit 2:0); stderr: srun: error: MPI: Cannot create context for mpi/pmix"}},
		{"killed at its run limit after its header", nodeRun{JobID: "13", State: "CANCELLED", ExitCode: "0:15", OutputPath: "/o/r2-s1.out",
			Output: []byte(strings.Join(lines[:45], "\n")), Killed: 61200 * time.Millisecond, Limit: time.Minute}, "slurmstepd: error: *** JOB 13 ON n1 CANCELLED AT 2025-06-01T10:00:00 ***",
			setOutcome{JobID: "13", Failed: "job 13 hung after its header (no result row): killed at 61.2 s, past its run limit of 60.0 s"}},
		{"killed at its run limit mid-run", nodeRun{JobID: "14", State: "CANCELLED", OutputPath: "/o/r2-s2.out", Output: []byte(cut),
			Killed: 90 * time.Second, Limit: time.Minute}, "",
			setOutcome{JobID: "14", Failed: "job 14 hung after 15 result rows, before nccl-tests' summary: killed at 90.0 s, past its run limit of 60.0 s"}},
		{"no file", nodeRun{JobID: "12", State: "COMPLETED", OutputPath: "/o/r1-s6.out", OutputErr: notExist("/o/r1-s6.out")}, "",
			setOutcome{JobID: "12", Failed: "job 12 COMPLETED, r1-s6.out: open /o/r1-s6.out: file does not exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, judgeMultinode(tc.run, tc.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStandIn builds the all_reduce_perf stand-in and checks that what it prints is the real
// log, parsed as such, with only the bandwidth scaled when a chosen node is in the job.
func TestStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a program")
	}
	bin := filepath.Join(t.TempDir(), "standin")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/allreduce-standin").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	log, _ := filepath.Abs(filepath.Join("testdata", "nccl", "nccltests-309-h100-2node-16gpu-mpi.log"))
	for _, tc := range []struct {
		nodelist string
		want     float64
	}{{"n[1-2]", 469.21 * 0.5}, {"n[1,3]", 469.21}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bin, "-log", log, "-slow", "n2,n9", "-factor", "0.5", "--", "-b", "1G")
		cmd.Env = []string{"SLURM_JOB_NODELIST=" + tc.nodelist, "SLURM_PROCID=0"}
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		o := judgeMultinode(nodeRun{JobID: "1", State: "COMPLETED", ExitCode: "0:0", OutputPath: "x.out", Output: out}, "")
		if o.Failed != "" || o.BusBW < tc.want-0.01 || o.BusBW > tc.want+0.01 || !strings.HasPrefix(string(out), "# all_reduce_perf STAND-IN") {
			t.Errorf("%s: %+v\n%s", tc.nodelist, o, out)
		}
	}
}

func TestParseTopologyLeaves(t *testing.T) {
	conf := `# topology.conf, as slurm's topology.conf(5) example shapes it
SwitchName=s0 Nodes=gpu[01-04] LinkSpeed=400
switchname=s1 nodes=gpu[05-08]   # lower-case keys
SwitchName=s2 Switches=s[0-1]
SwitchName=s3 Nodes=gpu04,gpu09
`
	got, err := parseTopologyLeaves([]byte(conf), "topology.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gpu01": "s0", "gpu02": "s0", "gpu03": "s0", "gpu04": "s0", "gpu05": "s1", "gpu06": "s1",
		"gpu07": "s1", "gpu08": "s1", "gpu09": "s3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseTopologyLeaves([]byte("SwitchName=s0 Nodes=gpu[01-\n"), "topology.conf", nil); err == nil || !strings.HasPrefix(err.Error(), "topology.conf:1: SwitchName=s0 Nodes=gpu[01-: ") {
		t.Errorf("bad hostlist: %v", err)
	}
	// The shared parser's syntax: blanks around '=', a continued line, Include, blocks.
	inc := map[string]string{"/etc/slurm/leaves.conf": "SwitchName = s1 \\ # second leaf\n  Nodes=gpu[03-04]\n"}
	read := func(p string) ([]byte, error) {
		if v, ok := inc[p]; ok {
			return []byte(v), nil
		}
		return nil, os.ErrNotExist
	}
	got, err = parseTopologyLeaves([]byte("SwitchName=s0 Nodes=gpu[01-02]\nInclude leaves.conf\nSwitchName=top Switches=s[0-1]\n"), "/etc/slurm/topology.conf", read)
	if diff := cmp.Diff(map[string]string{"gpu01": "s0", "gpu02": "s0", "gpu03": "s1", "gpu04": "s1"}, got); err != nil || diff != "" {
		t.Errorf("Include and continuation: %v (-want +got):\n%s", err, diff)
	}
	got, err = parseTopologyLeaves([]byte("BlockName=b1 Nodes=gpu[01-02]\nBlockName=b2 Nodes=gpu[03-04]\n"), "topology.conf", nil)
	if diff := cmp.Diff(map[string]string{"gpu01": "b1", "gpu02": "b1", "gpu03": "b2", "gpu04": "b2"}, got); err != nil || diff != "" {
		t.Errorf("blocks: %v (-want +got):\n%s", err, diff)
	}
	if _, err := parseTopologyLeaves([]byte("SwitchName=s0 Nodes=gpu[1-3000000]\n"), "topology.conf", nil); err == nil || !strings.Contains(err.Error(), "past 1048576 names") {
		t.Errorf("huge range: %v", err)
	}
}

func TestArrange(t *testing.T) {
	leaf := map[string]string{"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "c1": "C"}
	nodes := []string{"a1", "b1", "a2", "c1", "b2", "a3", "x1"}
	tests := []struct {
		name  string
		leaf  map[string]string
		cross bool
		want  []string
	}{
		{"no topology: as given", nil, true, nodes},
		{"same leaf: each leaf's nodes together, unknown last", leaf, false, []string{"a1", "a2", "a3", "b1", "b2", "c1", "x1"}},
		{"cross leaf: dealt one leaf at a time", leaf, true, []string{"a1", "b1", "c1", "x1", "a2", "b2", "a3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := arrange(nodes, tc.leaf, tc.cross)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.cross && tc.leaf != nil {
				// Round 1's pairs cross leaves.
				for _, p := range chunk(got, 2) {
					if len(p) == 2 && leaf[p[0]] == leaf[p[1]] && leaf[p[0]] != "" {
						t.Errorf("pair %v under one leaf", p)
					}
				}
			}
		})
	}
}

func TestWriteMultinodeText(t *testing.T) {
	f := &fakeNet{bad: map[string]bool{"n3": true}}
	opts := testOpts
	opts.Group = 2
	res := locate(context.Background(), nodeNames(6), opts, f.run)
	m := &multinodeSummary{Nodes: nodeNames(6), Group: 2, Rounds: res.Rounds, Jobs: res.Jobs, Threshold: res.Threshold,
		ThresholdWhy: res.ThresholdWhy, Culprits: res.Culprits, Runs: res.Runs, ElapsedS: 12.5}
	for _, r := range res.Runs {
		if r.Round == 1 {
			m.First = append(m.First, r)
		}
	}
	var b strings.Builder
	writeMultinodeText(&b, m)
	want := "multinode all_reduce_perf (pairs): 6 nodes, 5 jobs in 2 rounds, 12.5s\n" +
		"  bad: a failed run (failures only: fewer than 4 sets completed in round 1 for a fleet median, and no --multinode-min-busbw)\n" +
		"  n[3-4]                   BAD: failed: Test NCCL failure common.cu:1179 'remote process exited or there was a network error'\n" +
		"  n[1-2]                   400.0 GB/s at 4 GiB\n" +
		"  n[5-6]                   400.0 GB/s at 4 GiB\n" +
		"  CULPRIT NODE n3: failed: Test NCCL failure common.cu:1179 'remote process exited or there was a network error' with reference n1\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		conf time.Duration
		n    int
		want time.Duration
	}{{0, 2, 2004 * time.Millisecond}, {0, 256, 2512 * time.Millisecond}, {0, 4096, 10 * time.Second}, {100 * time.Millisecond, 4096, 100 * time.Millisecond}} {
		if got := pollInterval(tc.conf, tc.n); got != tc.want {
			t.Errorf("pollInterval(%s, %d) = %s, want %s", tc.conf, tc.n, got, tc.want)
		}
	}
}
