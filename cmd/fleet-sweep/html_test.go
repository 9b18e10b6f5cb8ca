package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sweepNodes is the 256-node sweep the HTML tests draw: n001..n256 under 16 leaf switches of
// 16 nodes (leaf01..leaf16, a topology.conf read with the sweep's own parser), every node's
// report a real one, nodecheck's JSON report of a snapshot replay (the goldens under
// testdata/golden/run, which cmd/nodecheck's tests hold to the binary), with the node's name
// put in:
//   - failing: the replays of five failing snapshots, on nodes under five leaves;
//   - missing: one node drained before the sweep (no job), one whose report never came;
//   - slow: two nodes whose nccl_allreduce busbw is set to 405 and 420 GB/s;
//   - healthy: h100-nccl-ok's replay, its busbw of 476.5 GB/s spread by up to +-6 GB/s from
//     node to node, as a fleet's figures spread. The spread and the slow values are invented
//     (no capture of 256 nodes exists); everything else is as replayed.
var sweepFailing = map[string]string{
	"n007": "h100-ib-port-down", "n042": "h100-gpu-lost", "n100": "h100-pcie-x8", "n150": "h100-remap-failed", "n201": "h100-fm-down",
}

var sweepSlow = map[string]float64{"n033": 405, "n177": 420}

const sweepMissingDrained, sweepMissingNoReport = "n064", "n128"

// sweep256 builds the sweep's runs and topology, and summarizes them as the sweep does.
func sweep256(t *testing.T) (summary, htmlInput) {
	t.Helper()
	golden := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", "run", name+".json"))
		if err != nil {
			t.Skipf("golden %s is not here (module cache?): %v", name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var topo strings.Builder
	var runs []nodeRun
	for i := 1; i <= 256; i++ {
		node := fmt.Sprintf("n%03d", i)
		if (i-1)%16 == 0 {
			fmt.Fprintf(&topo, "SwitchName=leaf%02d Nodes=n[%03d-%03d]\n", (i-1)/16+1, i, i+15)
		}
		r := nodeRun{Node: node, JobID: fmt.Sprint(1000 + i), State: "COMPLETED", OutputPath: "/shared/sweep/" + node + ".json"}
		var rep map[string]any
		switch {
		case node == sweepMissingDrained:
			runs = append(runs, nodeRun{Node: node, Skipped: "node drained: maintenance [root@2026-12-01T09:00:00]"})
			continue
		case node == sweepMissingNoReport:
			r.State, r.ExitCode, r.OutputErr = "FAILED", "1:0", os.ErrNotExist
			runs = append(runs, r)
			continue
		case sweepFailing[node] != "":
			rep = golden(sweepFailing[node])
		default:
			rep = golden("h100-nccl-ok")
			bw := 476.5 + float64((i*37)%13-6)
			if v, ok := sweepSlow[node]; ok {
				bw = v
			}
			setBusBW(t, rep, bw)
		}
		rep["node"] = node
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		r.Output = b
		runs = append(runs, r)
	}
	s := summarize(runs, defaultRule)
	s.OutDir, s.ElapsedS = "/shared/sweep", 31.2
	leaf, err := parseTopologyLeaves([]byte(topo.String()), "/etc/slurm/topology.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := htmlInput{Summary: s, Leaf: leaf, Topology: "/etc/slurm/topology.conf", Nodecheck: "/usr/sbin/nodecheck", SlurmBin: "/usr/bin"}
	for _, r := range runs {
		in.Nodes = append(in.Nodes, r.Node)
	}
	return s, in
}

// setBusBW sets nccl_allreduce's observed busbw in a report.
func setBusBW(t *testing.T, rep map[string]any, gbps float64) {
	t.Helper()
	for _, r := range rep["results"].([]any) {
		res := r.(map[string]any)
		if res["check"] == "nccl_allreduce" {
			res["observed"] = fmt.Sprintf("%.1f GB/s at 4 GiB", gbps)
			return
		}
	}
	t.Fatal("the report has no nccl_allreduce result")
}

// TestSweep256Summary: the 256-node sweep judges as built: the failing, slow and missing nodes
// exactly, every other node healthy.
func TestSweep256Summary(t *testing.T) {
	s, _ := sweep256(t)
	var failing, slow, missing []string
	for _, f := range s.Failing {
		failing = append(failing, f.Node)
		if f.Check == "" || f.Remedy == "" {
			t.Errorf("failing %s: check %q, remedy %q; want both from its report", f.Node, f.Check, f.Remedy)
		}
	}
	for _, m := range s.Missing {
		missing = append(missing, m.Node)
	}
	slow = s.slowNodes()
	if fmt.Sprint(failing) != "[n007 n042 n100 n150 n201]" || fmt.Sprint(slow) != "[n033 n177]" ||
		fmt.Sprint(missing) != "[n064 n128]" || len(s.Healthy) != 256-9 {
		t.Errorf("failing %v, slow %v, missing %v, %d healthy", failing, slow, missing, len(s.Healthy))
	}
}

// TestWriteHTML: the report is one file that fetches nothing, shows every node once in its
// leaf's grid with the summary's verdict, and lists the failing nodes with reason, remedy and
// commands; names from the cluster are escaped.
func TestWriteHTML(t *testing.T) {
	s, in := sweep256(t)
	// A missing node whose name is hostile markup (the sweep refuses such names and lists
	// them as missing): it must come out as text.
	const hostile = `n<img src=x onerror=alert(1)>`
	in.Nodes = append(in.Nodes, hostile)
	in.Summary.Missing = append(in.Summary.Missing, missing{Node: hostile, Reason: "not submitted: not a plain host name"})
	in.Summary.Nodes++
	var b bytes.Buffer
	if err := writeHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<img") {
		t.Errorf("a node's name came out as markup")
	}
	// Nothing to fetch: no src or href attribute, no CSS url() or @import. The SVG namespace
	// (xmlns) is a name, not a fetch.
	bare := regexp.MustCompile(`"[^"]*"`).ReplaceAllString(page, `""`) // attribute values and strings out
	for _, re := range []string{`(?i)<[^>]*\s(src|href)\s*=`, `(?i)url\(`, `(?i)@import`} {
		if m := regexp.MustCompile(re).FindString(bare); m != "" {
			t.Errorf("the page may fetch something: %q", m)
		}
	}
	cells := regexp.MustCompile(`<div class="node (\w+)" data-node="([^"]*)" data-verdict="(\w+)"`).FindAllStringSubmatch(page, -1)
	if len(cells) != 257 {
		t.Fatalf("%d cells, want 257", len(cells))
	}
	verdicts := map[string]int{}
	for _, c := range cells {
		if c[1] != c[3] {
			t.Errorf("cell %s: class %s, data-verdict %s", c[2], c[1], c[3])
		}
		verdicts[c[3]]++
	}
	if verdicts[verdictFailing] != 5 || verdicts[verdictSlow] != 2 || verdicts[verdictMissing] != 3 || verdicts[verdictHealthy] != 247 {
		t.Errorf("verdicts %v", verdicts)
	}
	if n := strings.Count(page, `<section class="leaf"`); n != 17 {
		t.Errorf("%d leaf sections, want 16 leaves and the nodes under none", n)
	}
	for _, f := range s.Failing {
		row := regexp.MustCompile(`<tr data-node="` + f.Node + `" data-check="` + f.Check + `" data-remedy="` + f.Remedy + `">.*srun -w ` + f.Node + ` --exclusive /usr/sbin/nodecheck run --check ` + f.Check)
		if !row.MatchString(page) {
			t.Errorf("no row for failing %s (%s, %s) with its command", f.Node, f.Check, f.Remedy)
		}
	}
	for _, want := range []string{`class="median">median `, `class="threshold" text-anchor="end">slow below `, `class="slowlabel">n033<`,
		`id="validation"`, "is not built yet", `<script type="application/json" id="sweep-summary">{"schema":2`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestGroupCellsNoTopology: without topology.conf every node is in one group, in sweep order.
func TestGroupCellsNoTopology(t *testing.T) {
	in := htmlInput{Nodes: []string{"b", "a", "c"}}
	g := groupCells(in, map[string]string{"a": verdictFailing, "b": verdictHealthy}, map[string]string{"a": "ib_ports: down"})
	if len(g) != 1 || g[0].Name != "all nodes (no topology.conf)" || g[0].Counts != "3 nodes: 1 healthy, 1 failing, 1 missing" {
		t.Fatalf("groups %+v", g)
	}
	if got := fmt.Sprint(g[0].Cells); got != "[{b healthy b: healthy} {a failing a: failing: ib_ports: down} {c missing c: missing}]" {
		t.Errorf("cells %s", got)
	}
}
