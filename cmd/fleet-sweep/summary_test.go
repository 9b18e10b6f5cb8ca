package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rep builds a nodecheck JSON report as `nodecheck run --format json` prints it.
func rep(node string, healthy bool, results ...check) []byte {
	type res struct {
		Check    string   `json:"check"`
		Status   string   `json:"status"`
		Summary  string   `json:"summary"`
		Remedy   string   `json:"remedy,omitempty"`
		Observed string   `json:"observed,omitempty"`
		Expected string   `json:"expected,omitempty"`
		Details  []detail `json:"details,omitempty"`
	}
	r := struct {
		Schema  int    `json:"schema"`
		Node    string `json:"node"`
		Mode    string `json:"mode"`
		Healthy bool   `json:"healthy"`
		Results []res  `json:"results"`
	}{Schema: 1, Node: node, Mode: "manual", Healthy: healthy, Results: []res{}}
	for _, c := range results {
		r.Results = append(r.Results, res(c))
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

var (
	okIB      = check{Check: "ib_ports", Status: "ok", Summary: "8 ports ACTIVE/LinkUp"}
	ibDown    = check{Check: "ib_ports", Status: "fail", Summary: "mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp"}
	pcieX8    = check{Check: "pcie_link", Status: "fail", Summary: "gpu 3 (0000:3b:00.0) PCIe x8, expected x16"}
	gpuErr    = check{Check: "gpu_count", Status: "error", Summary: "cannot tell how many GPUs Slurm expects"}
	ncclSkip  = check{Check: "nccl_allreduce", Status: "skip", Summary: "/usr/bin/all_reduce_perf not installed"}
	ncclFast  = check{Check: "nccl_allreduce", Status: "ok", Summary: "busbw 476.5 GB/s at 4 GiB, at least 390", Observed: "476.5 GB/s at 4 GiB", Expected: ">= 390 GB/s"}
	ncclSlow  = check{Check: "nccl_allreduce", Status: "fail", Summary: "busbw 212.0 GB/s at 4 GiB, want at least 390", Observed: "212 GB/s at 4 GiB", Expected: ">= 390 GB/s"}
	ncclWarn  = check{Check: "nccl_allreduce", Status: "warn", Summary: "busbw 301.2 GB/s at 512 MiB; no threshold", Observed: "301.2 GB/s at 512 MiB"}
	ncclExit  = check{Check: "nccl_allreduce", Status: "fail", Summary: "all_reduce_perf exited 1: ...", Observed: "exit code 1", Expected: "exit code 0"}
	ncclWrong = check{Check: "nccl_allreduce", Status: "fail", Summary: "data corruption: 12 wrong elements at 1 GiB", Observed: "12 wrong elements, 0 out of bounds values"}
)

func notExist(path string) error {
	return &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name  string
		runs  []nodeRun
		want  summary
		wantT []string // lines the text summary must contain
	}{
		{
			name: "all healthy: one hostlist",
			runs: []nodeRun{
				{Node: "gpu01", JobID: "1", State: "COMPLETED", Output: rep("gpu01", true, okIB, ncclSkip)},
				{Node: "gpu02", JobID: "2", State: "COMPLETED", Output: rep("gpu02", true, okIB, ncclSkip)},
				{Node: "gpu03", JobID: "3", State: "COMPLETED", Output: rep("gpu03", true, okIB)},
				{Node: "gpu05", JobID: "4", State: "COMPLETED", Output: rep("gpu05", true, okIB)},
			},
			want: summary{Nodes: 4, AllHealthy: true, Healthy: []string{"gpu01", "gpu02", "gpu03", "gpu05"},
				HealthyHostlist: "gpu[01-03,05]"},
			wantT: []string{"nodecheck fleet sweep: 4 nodes, 4 healthy, 0 slow, 0 failing, 0 missing\n", "HEALTHY  gpu[01-03,05]\n"},
		},
		{
			name: "failing: first failing check and how many more",
			runs: []nodeRun{
				{Node: "n1", JobID: "7", State: "FAILED", StateReason: "NonZeroExitCode", Output: rep("n1", false, okIB, pcieX8, ibDown, ncclSkip)},
				{Node: "n2", JobID: "8", State: "FAILED", Output: rep("n2", false, ibDown)},
			},
			want: summary{Nodes: 2, Healthy: []string{}, Failing: []failing{
				{Node: "n1", JobID: "7", Check: "pcie_link", Status: "fail", Summary: pcieX8.Summary, More: 1},
				{Node: "n2", JobID: "8", Check: "ib_ports", Status: "fail", Summary: ibDown.Summary},
			}},
			wantT: []string{
				"FAILING  n1  pcie_link: gpu 3 (0000:3b:00.0) PCIe x8, expected x16 (+1 more)\n",
				"FAILING  n2  ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp\n",
			},
		},
		{
			name: "unhealthy through an error status only; healthy despite one",
			runs: []nodeRun{
				{Node: "n1", JobID: "1", State: "FAILED", Output: rep("n1", false, gpuErr, okIB)},
				{Node: "n2", JobID: "2", State: "COMPLETED", Output: rep("n2", true, gpuErr, okIB)},
				{Node: "n3", JobID: "3", State: "FAILED", Output: rep("n3", false, okIB)},
			},
			want: summary{Nodes: 3, Healthy: []string{"n2"}, HealthyHostlist: "n2", Failing: []failing{
				{Node: "n1", JobID: "1", Check: "gpu_count", Status: "error", Summary: gpuErr.Summary},
				{Node: "n3", JobID: "3", Status: "unhealthy", Summary: "report says unhealthy, with no failing check"},
			}},
			wantT: []string{"FAILING  n1  gpu_count (error): cannot tell", "FAILING  n3  report says unhealthy, with no failing check\n"},
		},
		{
			name: "missing output: the job ran and wrote nothing here",
			runs: []nodeRun{
				{Node: "n1", JobID: "5", State: "COMPLETED", OutputPath: "/out/n1.json", OutputErr: notExist("/out/n1.json")},
			},
			want: summary{Nodes: 1, Healthy: []string{}, Missing: []missing{
				{Node: "n1", JobID: "5", State: "COMPLETED", Reason: "job 5 COMPLETED, no n1.json (is --out on a filesystem the nodes share?)"},
			}},
			wantT: []string{"MISSING  n1  job 5 COMPLETED, no n1.json (is --out"},
		},
		{
			name: "missing output: nodecheck not installed, stderr says so",
			runs: []nodeRun{
				{Node: "n1", JobID: "5", State: "FAILED", ExitCode: "127:0", OutputPath: "/out/n1.json", Output: []byte{},
					Stderr: "/var/spool/slurmd/job00005/slurm_script: 4: exec: /usr/sbin/nodecheck: not found"},
			},
			want: summary{Nodes: 1, Healthy: []string{}, Missing: []missing{
				{Node: "n1", JobID: "5", State: "FAILED", Reason: "job 5 FAILED (exit 127:0), n1.json: empty; stderr: /var/spool/slurmd/job00005/slurm_script: 4: exec: /usr/sbin/nodecheck: not found"},
			}},
		},
		{
			name: "invalid JSON, and JSON that is not a report",
			runs: []nodeRun{
				{Node: "n1", JobID: "5", State: "CANCELLED", OutputPath: "/out/n1.json", Output: []byte(`{"schema": 1, "node": "n1", "resu`),
					NodeNow: "now node drained: Prolog error"},
				{Node: "n2", JobID: "6", State: "COMPLETED", OutputPath: "/out/n2.json", Output: []byte(`{"hello": "world"}`)},
				{Node: "n3", JobID: "7", State: "COMPLETED", OutputPath: "/out/n3.json", Output: []byte("run --all --format json\n")},
			},
			want: summary{Nodes: 3, Healthy: []string{}, Missing: []missing{
				{Node: "n1", JobID: "5", State: "CANCELLED", Reason: "job 5 CANCELLED, n1.json: invalid JSON (cut short?): unexpected end of JSON input; now node drained: Prolog error"},
				{Node: "n2", JobID: "6", State: "COMPLETED", Reason: `job 6 COMPLETED, n2.json: not a nodecheck report: no "schema" or "healthy" key`},
				{Node: "n3", JobID: "7", State: "COMPLETED", Reason: "job 7 COMPLETED, n3.json: invalid JSON (cut short?): invalid character 'r' looking for beginning of value"},
			}},
		},
		{
			name: "not submitted, pending and running at the deadline, interrupted, gone, state unknown, not cancelled",
			runs: []nodeRun{
				{Node: "n1", Skipped: "node drained: bad fan"},
				{Node: "n2", Skipped: "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified (exit status 1)"},
				{Node: "n3", JobID: "9", State: "PENDING", StateReason: "Resources", Cancelled: "deadline", OutputPath: "/out/n3.json", OutputErr: notExist("/out/n3.json")},
				{Node: "n4", JobID: "10", State: "RUNNING", Cancelled: "deadline", OutputPath: "/out/n4.json", Output: []byte(`{"schema": 1,`),
					Stderr: "slurmstepd: error: *** JOB 10 ON n4 CANCELLED AT 2026-12-02T15:58:56 ***"},
				{Node: "n5", JobID: "11", State: "PENDING", StateReason: "Priority", Cancelled: "interrupted"},
				{Node: "n6", JobID: "12", Gone: true, OutputPath: "/out/n6.json", OutputErr: notExist("/out/n6.json")},
				{Node: "n7", JobID: "13", OutputPath: "/out/n7.json", OutputErr: errors.New("larger than 16 MiB")},
				{Node: "n8", JobID: "14", State: "PENDING", StateReason: "Resources", Cancelled: "deadline",
					CancelErr: "scancel: no answer within 30s (slurmctld unreachable?)"},
			},
			want: summary{Nodes: 8, Healthy: []string{}, Missing: []missing{
				{Node: "n1", Reason: "not submitted: node drained: bad fan"},
				{Node: "n2", Reason: "not submitted: sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified (exit status 1)"},
				{Node: "n3", JobID: "9", State: "PENDING", Reason: "job 9 still PENDING (Resources) at the deadline: cancelled"},
				{Node: "n4", JobID: "10", State: "RUNNING", Reason: "job 10 still RUNNING at the deadline: cancelled, n4.json: invalid JSON (cut short?): unexpected end of JSON input; stderr: slurmstepd: error: *** JOB 10 ON n4 CANCELLED AT 2026-12-02T15:58:56 ***"},
				{Node: "n5", JobID: "11", State: "PENDING", Reason: "job 11 PENDING (Priority) when the sweep was interrupted: cancelled"},
				{Node: "n6", JobID: "12", Reason: "job 12 gone from squeue, no n6.json"},
				{Node: "n7", JobID: "13", Reason: "job 13 in an unknown state, n7.json: larger than 16 MiB"},
				{Node: "n8", JobID: "14", State: "PENDING", Reason: "job 14 still PENDING (Resources) at the deadline: not cancelled (scancel: no answer within 30s (slurmctld unreachable?)): scancel 14 by hand"},
			}},
		},
		{
			name: "busbw slowest first, ties in node order; no figure from a failed run or a skip",
			runs: []nodeRun{
				{Node: "n1", JobID: "1", State: "COMPLETED", Output: rep("n1", true, okIB, ncclFast)},
				{Node: "n2", JobID: "2", State: "FAILED", Output: rep("n2", false, okIB, ncclSlow)},
				{Node: "n3", JobID: "3", State: "COMPLETED", Output: rep("n3", true, okIB, ncclWarn)},
				{Node: "n4", JobID: "4", State: "FAILED", Output: rep("n4", false, ibDown, ncclFast)},
				{Node: "n5", JobID: "5", State: "FAILED", Output: rep("n5", false, okIB, ncclExit)},
				{Node: "n6", JobID: "6", State: "FAILED", Output: rep("n6", false, okIB, ncclWrong)},
				{Node: "n7", JobID: "7", State: "COMPLETED", Output: rep("n7", true, okIB, ncclSkip)},
			},
			want: summary{Nodes: 7, Healthy: []string{"n1", "n3", "n7"}, HealthyHostlist: "n[1,3,7]",
				Failing: []failing{
					{Node: "n2", JobID: "2", Check: "nccl_allreduce", Status: "fail", Summary: ncclSlow.Summary},
					{Node: "n4", JobID: "4", Check: "ib_ports", Status: "fail", Summary: ibDown.Summary},
					{Node: "n5", JobID: "5", Check: "nccl_allreduce", Status: "fail", Summary: ncclExit.Summary},
					{Node: "n6", JobID: "6", Check: "nccl_allreduce", Status: "fail", Summary: ncclWrong.Summary},
				},
				BusBW: []busBW{
					{Node: "n2", GBps: 212, At: "4 GiB", Status: "fail", Expected: ">= 390 GB/s"},
					{Node: "n3", GBps: 301.2, At: "512 MiB", Status: "warn"},
					{Node: "n1", GBps: 476.5, At: "4 GiB", Status: "ok", Expected: ">= 390 GB/s"},
					{Node: "n4", GBps: 476.5, At: "4 GiB", Status: "ok", Expected: ">= 390 GB/s"},
				},
				// No gpu_models result in these reports: no model to compare within.
				NotCompared: []string{"n1", "n3"}},
			wantT: []string{
				"nccl_allreduce busbw, slowest first:\n" +
					"  n2   212.0 GB/s at 4 GiB  FAIL  (want >= 390 GB/s)\n" +
					"  n3   301.2 GB/s at 512 MiB  WARN\n" +
					"  n1   476.5 GB/s at 4 GiB  OK  (want >= 390 GB/s)\n" +
					"  n4   476.5 GB/s at 4 GiB  OK  (want >= 390 GB/s)\n",
			},
		},
		{
			name: "mixed: healthy, failing, missing",
			runs: []nodeRun{
				{Node: "gpu1", JobID: "1", State: "COMPLETED", Output: rep("gpu1", true, okIB, ncclFast)},
				{Node: "gpu2", JobID: "2", State: "FAILED", Output: rep("gpu2", false, ibDown, ncclSkip)},
				{Node: "gpu3", JobID: "3", State: "PENDING", StateReason: "Resources", Cancelled: "deadline", OutputPath: "/o/gpu3.json", OutputErr: notExist("/o/gpu3.json")},
				{Node: "gpu4", JobID: "4", State: "COMPLETED", Output: rep("gpu4", true, okIB, ncclFast)},
				{Node: "gpu10", Skipped: "node down*: Not responding"},
			},
			want: summary{Nodes: 5, Healthy: []string{"gpu1", "gpu4"}, HealthyHostlist: "gpu[1,4]",
				Failing: []failing{{Node: "gpu2", JobID: "2", Check: "ib_ports", Status: "fail", Summary: ibDown.Summary}},
				Missing: []missing{
					{Node: "gpu3", JobID: "3", State: "PENDING", Reason: "job 3 still PENDING (Resources) at the deadline: cancelled"},
					{Node: "gpu10", Reason: "not submitted: node down*: Not responding"},
				},
				BusBW: []busBW{
					{Node: "gpu1", GBps: 476.5, At: "4 GiB", Status: "ok", Expected: ">= 390 GB/s"},
					{Node: "gpu4", GBps: 476.5, At: "4 GiB", Status: "ok", Expected: ">= 390 GB/s"},
				},
				NotCompared: []string{"gpu1", "gpu4"}},
			wantT: []string{
				"nodecheck fleet sweep: 5 nodes, 2 healthy, 0 slow, 1 failing, 2 missing\n" +
					"HEALTHY  gpu[1,4]\n" +
					"FAILING  gpu2   ib_ports: mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp\n" +
					"MISSING  gpu3   job 3 still PENDING (Resources) at the deadline: cancelled\n" +
					"MISSING  gpu10  not submitted: node down*: Not responding\n",
			},
		},
		{
			name: "no nodes is not all healthy",
			want: summary{Healthy: []string{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.runs, defaultRule)
			want := tc.want
			want.Schema = schemaVersion
			want = withEmpty(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("summarize (-want +got):\n%s", diff)
			}
			var text bytes.Buffer
			if err := writeText(&text, got); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantT {
				if !strings.Contains(text.String(), w) {
					t.Errorf("text summary lacks %q:\n%s", w, text.String())
				}
			}
			var js bytes.Buffer
			if err := writeJSON(&js, got); err != nil {
				t.Fatal(err)
			}
			var back summary
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatalf("JSON summary does not read back: %v\n%s", err, js.String())
			}
			if diff := cmp.Diff(got, back); diff != "" {
				t.Errorf("JSON round trip (-summarize +read back):\n%s", diff)
			}
		})
	}
}

// TestSummarizeGoldens reads nodecheck's own JSON reports (the goldens of every snapshot): each
// parses, a healthy report makes a healthy node, and an unhealthy one a failing node named by
// its first failing check; nccl_allreduce's figure is found where the check measured one.
func TestSummarizeGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "run", "*.json"))
	if err != nil || len(files) == 0 {
		t.Skipf("no goldens under testdata/golden/run (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ Node string }
			_ = json.Unmarshal(b, &head)
			r, err := parseReport(b, head.Node)
			if err != nil {
				t.Fatalf("parseReport: %v", err)
			}
			s := summarize([]nodeRun{{Node: r.Node, JobID: "1", State: "COMPLETED", Output: b}}, defaultRule)
			if *r.Healthy != (len(s.Healthy) == 1) || len(s.Healthy)+len(s.Failing) != 1 {
				t.Fatalf("healthy %v, summary %+v", *r.Healthy, s)
			}
			if !*r.Healthy {
				first := ""
				for _, c := range r.Results {
					if c.Status == "fail" {
						first = c.Check
						break
					}
				}
				if first != "" && s.Failing[0].Check != first {
					t.Errorf("first failing check %q, want %q", s.Failing[0].Check, first)
				}
			}
			measured := false
			for _, c := range r.Results {
				measured = measured || c.Check == "nccl_allreduce" && strings.Contains(c.Observed, " GB/s")
			}
			if measured != (len(s.BusBW) == 1) {
				t.Errorf("nccl_allreduce measured %v, busbw %+v", measured, s.BusBW)
			}
		})
	}
}

func TestParseReport(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"report", `{"schema": 1, "node": "n1", "healthy": false, "results": []}`, ""},
		{"empty", "", "empty"},
		{"blank", " \n", "empty"},
		{"cut", `{"schema": 1, "node": "n1", "healthy": true, "resu`, "invalid JSON (cut short?): unexpected end of JSON input"},
		{"two documents", `{"healthy": true} {"healthy": true}`, "invalid JSON (cut short?): invalid character '{' after top-level value"},
		{"no healthy", `{"schema": 1, "node": "n1"}`, `not a nodecheck report: no "healthy" key`},
		{"no schema", `{"node": "n1", "healthy": true, "results": []}`, `not a nodecheck report: no "schema" key`},
		{"neither", `{"hello": "world"}`, `not a nodecheck report: no "schema" or "healthy" key`},
		{"another version", `{"schema": 2, "node": "n1", "healthy": true, "results": []}`,
			"report schema 2, this fleet-sweep reads schema 1: nodecheck on the node is another version; install the same version on the nodes and here"},
		{"another node", `{"schema": 1, "node": "n7", "healthy": true, "results": []}`, `the report is about node "n7": a stale or copied file, or --node in --args`},
		{"array", `[]`, "invalid JSON (cut short?): json: cannot unmarshal array into Go value of type main.nodecheckReport"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseReport([]byte(tc.in), "n1")
			if got := fmt.Sprint(err); (err == nil) != (tc.wantErr == "") || (err != nil && got != tc.wantErr) {
				t.Errorf("parseReport(%q) = %v, want %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

// defaultRule is the command's default slow rule.
var defaultRule = slowRule{MAD: 3, FloorPct: 5, MinNodes: 5}

// withEmpty gives a literal summary the empty lists summarize returns.
func withEmpty(s summary) summary {
	if s.Healthy == nil {
		s.Healthy = []string{}
	}
	if s.Slow == nil {
		s.Slow = []slowFinding{}
	}
	if s.Failing == nil {
		s.Failing = []failing{}
	}
	if s.Missing == nil {
		s.Missing = []missing{}
	}
	if s.BusBW == nil {
		s.BusBW = []busBW{}
	}
	if s.Figures == nil {
		s.Figures = []figure{}
	}
	if s.Fleet == nil {
		s.Fleet = []fleetGroup{}
	}
	if s.NotCompared == nil {
		s.NotCompared = []string{}
	}
	if s.SlurmCalls == nil {
		s.SlurmCalls = map[string]int{}
	}
	return s
}
