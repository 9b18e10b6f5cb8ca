package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const h100 = "8x NVIDIA H100 80GB HBM3 (h100)"

func bwFigs(model string, vals ...float64) []figure {
	var out []figure
	for i, v := range vals {
		out = append(out, figure{Node: fmt.Sprintf("n%d", i+1), Model: model, Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: v})
	}
	return out
}

func TestJudgeFleet(t *testing.T) {
	approx := cmpopts.EquateApprox(0, 0.001)
	tests := []struct {
		name       string
		figs       []figure
		rule       slowRule
		wantGroups []fleetGroup
		wantSlow   []slowFinding
	}{
		{
			name: "identical fleet: MAD 0, the 5% floor alone decides",
			figs: bwFigs(h100, 476.5, 476.5, 476.5, 476.5, 405, 476.5, 455),
			rule: slowRule{MAD: 3, FloorPct: 5, MinNodes: 5},
			wantGroups: []fleetGroup{{Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 7,
				Median: 476.5, MAD: 0, SlowBelow: 452.675, Judged: true}},
			// 455 is 4.5% below: not slow; 405 is 15% below.
			wantSlow: []slowFinding{{Node: "n5", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s",
				Value: 405, Median: 476.5, BelowPct: 15.0052, RobustZ: -1}},
		},
		{
			name: "spread fleet: the MAD rule is wider than the floor",
			// median 460; deviations 20,10,0,10,20,0,100 -> MAD 10; 3 x 1.4826 x 10 = 44.5 > 5% (23)
			figs: bwFigs(h100, 440, 450, 460, 470, 480, 460, 360),
			rule: slowRule{MAD: 3, FloorPct: 5, MinNodes: 5},
			wantGroups: []fleetGroup{{Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 7,
				Median: 460, MAD: 10, SlowBelow: 415.522, Judged: true}},
			wantSlow: []slowFinding{{Node: "n7", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s",
				Value: 360, Median: 460, BelowPct: 21.739, RobustZ: 6.7449}},
		},
		{
			name: "too few nodes: reported, not judged",
			figs: bwFigs(h100, 476.5, 300, 476.5, 476.5),
			rule: slowRule{MAD: 3, FloorPct: 5, MinNodes: 5},
			wantGroups: []fleetGroup{{Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 4,
				Median: 476.5, MAD: 0}},
		},
		{
			name: "models and sizes are separate fleets; above the median is never slow",
			figs: append(append(bwFigs(h100, 476.5, 476.5, 476.5, 476.5, 476.5, 600),
				bwFigs("8x NVIDIA A100-SXM4-80GB (a100)", 230, 231, 229, 230, 230)...),
				figure{Node: "x1", Model: h100, Metric: "busbw", At: "16 GiB", Unit: "GB/s", Value: 200}),
			rule: slowRule{MAD: 3, FloorPct: 5, MinNodes: 5},
			wantGroups: []fleetGroup{
				{Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 6, Median: 476.5, SlowBelow: 452.675, Judged: true},
				{Model: "8x NVIDIA A100-SXM4-80GB (a100)", ModelName: "a100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 5, Median: 230, SlowBelow: 218.5, Judged: true},
				{Model: h100, ModelName: "h100", Metric: "busbw", At: "16 GiB", Unit: "GB/s", Nodes: 1, Median: 200},
			},
		},
		{
			name: "several slow: furthest below first",
			figs: bwFigs(h100, 476.5, 420, 476.5, 476.5, 476.5, 300, 476.5, 476.5),
			rule: slowRule{MAD: 3, FloorPct: 5, MinNodes: 5},
			wantGroups: []fleetGroup{{Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Nodes: 8,
				Median: 476.5, SlowBelow: 452.675, Judged: true}},
			wantSlow: []slowFinding{
				{Node: "n6", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: 300, Median: 476.5, BelowPct: 37.0409, RobustZ: -1},
				{Node: "n2", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: 420, Median: 476.5, BelowPct: 11.8573, RobustZ: -1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			groups, slow := judgeFleet(tc.figs, tc.rule)
			if diff := cmp.Diff(tc.wantGroups, groups, approx); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSlow, slow, approx); diff != "" {
				t.Errorf("slow (-want +got):\n%s", diff)
			}
		})
	}
}

func TestModelName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{h100, "h100"},
		{"8x NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"},
		{"4x NVIDIA GH200 120GB (gh200), 4x NVIDIA H100 80GB HBM3 (h100)", "4x NVIDIA GH200 120GB (gh200), 4x NVIDIA H100 80GB HBM3 (h100)"},
	} {
		if got := modelName(tc.in); got != tc.want {
			t.Errorf("modelName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

var (
	modelsH100 = check{Check: "gpu_models", Status: "error", Summary: "cannot tell the GPU models slurm.conf gives n1 ...", Observed: h100}
	ibRates    = check{Check: "ib_ports", Status: "ok", Summary: "2 ports ACTIVE/LinkUp", Details: []detail{
		{Device: "mlx5_0/1", Status: "ok", Observed: "ACTIVE/LinkUp 400 Gb/sec (4X NDR)"},
		{Device: "mlx5_1/1", Status: "ok", Observed: "ACTIVE/LinkUp 200 Gb/sec (4X HDR)"},
	}}
)

func TestFiguresOf(t *testing.T) {
	var r nodecheckReport
	if err := json.Unmarshal(rep("n1", true, modelsH100, ibRates, ncclFast), &r); err != nil {
		t.Fatal(err)
	}
	model := modelOf(r)
	want := []figure{
		{Node: "n1", Model: h100, Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: 476.5},
		{Node: "n1", Model: h100, Metric: "mlx5_0/1 rate", Unit: "Gb/s", Value: 400},
		{Node: "n1", Model: h100, Metric: "mlx5_1/1 rate", Unit: "Gb/s", Value: 200},
	}
	if diff := cmp.Diff(want, figuresOf("n1", model, r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func ncclAt(v float64) check {
	return check{Check: "nccl_allreduce", Status: "ok", Summary: "busbw ...", Observed: fmt.Sprintf("%.1f GB/s at 4 GiB", v), Expected: ">= 390 GB/s"}
}

// TestSummarizeSlow: healthy nodes far below their model's median are slow, listed first, and
// out of the healthy list; failing nodes and reports that are no reports (another schema, cut,
// another node, none) are never slow or healthy, and do not enter the median.
func TestSummarizeSlow(t *testing.T) {
	var runs []nodeRun
	for i := 1; i <= 8; i++ {
		n := fmt.Sprintf("n%d", i)
		bw := 476.5
		switch i {
		case 3:
			bw = 405 // slow, yet above the absolute 390
		case 6:
			bw = 430
		}
		runs = append(runs, nodeRun{Node: n, JobID: fmt.Sprint(i), State: "COMPLETED", Output: rep(n, true, modelsH100, okIB, ncclAt(bw))})
	}
	other := bytes.Replace(rep("n9", true, modelsH100, ncclAt(100)), []byte(`"schema": 1`), []byte(`"schema": 2`), 1)
	runs = append(runs,
		nodeRun{Node: "n9", JobID: "9", State: "COMPLETED", OutputPath: "/o/n9.json", Output: other},
		nodeRun{Node: "n10", JobID: "10", State: "COMPLETED", OutputPath: "/o/n10.json", Output: rep("n10", true, modelsH100, ncclAt(100))[:200]},
		nodeRun{Node: "n11", JobID: "11", State: "COMPLETED", OutputPath: "/o/n11.json", Output: rep("n3", true, modelsH100, ncclAt(100))},
		nodeRun{Node: "n12", JobID: "12", State: "COMPLETED", OutputPath: "/o/n12.json", OutputErr: notExist("/o/n12.json")},
		nodeRun{Node: "n13", JobID: "13", State: "FAILED", Output: rep("n13", false, modelsH100, ibDown, ncclAt(100))},
	)
	s := summarize(runs, defaultRule)
	if diff := cmp.Diff([]string{"n3", "n6"}, s.slowNodes()); diff != "" {
		t.Errorf("slow nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"n1", "n2", "n4", "n5", "n7", "n8"}, s.Healthy); diff != "" {
		t.Errorf("healthy (-want +got):\n%s", diff)
	}
	var miss []string
	for _, m := range s.Missing {
		miss = append(miss, m.Node+": "+m.Reason)
	}
	wantMiss := []string{
		"n9: job 9 COMPLETED, n9.json: report schema 2, this fleet-sweep reads schema 1: nodecheck on the node is another version; install the same version on the nodes and here",
		"n10: job 10 COMPLETED, n10.json: invalid JSON (cut short?): unexpected end of JSON input",
		`n11: job 11 COMPLETED, n11.json: the report is about node "n3": a stale or copied file, or --node in --args`,
		"n12: job 12 COMPLETED, no n12.json (is --out on a filesystem the nodes share?)",
	}
	if diff := cmp.Diff(wantMiss, miss); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if len(s.Failing) != 1 || s.Failing[0].Node != "n13" || s.AllHealthy {
		t.Errorf("failing %+v, all healthy %v", s.Failing, s.AllHealthy)
	}
	if len(s.Fleet) != 1 || s.Fleet[0].Nodes != 8 || s.Fleet[0].Median != 476.5 {
		t.Errorf("fleet %+v: want the 8 healthy nodes only", s.Fleet)
	}
	var text bytes.Buffer
	if err := writeText(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"nodecheck fleet sweep: 13 nodes, 6 healthy, 2 slow, 1 failing, 4 missing\n" +
			"SLOW     n3   busbw 405.0 GB/s at 4 GiB, 15.0% below the h100 median 476.5\n" +
			"SLOW     n6   busbw 430.0 GB/s at 4 GiB, 9.8% below the h100 median 476.5\n" +
			"HEALTHY  n[1-2,4-5,7-8]\n",
		"fleet medians (healthy nodes, by GPU model):\n  h100 busbw at 4 GiB: median 476.5 GB/s over 8 nodes, MAD 0.0: slow below 452.7\n",
		"  n13   100.0 GB/s at 4 GiB  OK  (want >= 390 GB/s)  -79.0% vs h100 median\n",
		"  n3    405.0 GB/s at 4 GiB  OK  (want >= 390 GB/s)  -15.0% vs h100 median\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestSlowDrains(t *testing.T) {
	slow := []slowFinding{
		{Node: "n6", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: 300, Median: 476.5, BelowPct: 37.04},
		{Node: "n6", Model: h100, ModelName: "h100", Metric: "mlx5_1/1 rate", Unit: "Gb/s", Value: 200, Median: 400, BelowPct: 50},
		{Node: "n2", Model: h100, ModelName: "h100", Metric: "busbw", At: "4 GiB", Unit: "GB/s", Value: 420, Median: 476.5, BelowPct: 11.86},
	}
	want := []drainItem{
		{Node: "n6", Summary: "slow: busbw 300.0 GB/s at 4 GiB, 37.0% below the h100 median 476.5 (+1 more slow figures)"},
		{Node: "n2", Summary: "slow: busbw 420.0 GB/s at 4 GiB, 11.9% below the h100 median 476.5"},
	}
	if diff := cmp.Diff(want, slowDrains(slow), cmp.AllowUnexported(drainItem{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
