package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The parsers of outside input: squeue's output, a node's report, topology.conf. Each must
// return (never panic) on any input, and what it accepts must hold together.

func FuzzParseSqueue(f *testing.F) {
	f.Add("41|PENDING|0|Resources|\n44|FAILED|768|NonZeroExitCode|\n")
	f.Add("45|PENDING|0|ReqNodeNotAvail, UnavailableNodes:n2|\n|||\n")
	f.Add("5|FAILED|3:0|NonZeroExitCode|\n6|FAILED|0:9|RaisedSignal:9(Killed)|\n")
	f.Fuzz(func(t *testing.T, out string) {
		for id, j := range parseSqueue(out) {
			if id == "" || strings.Contains(id, "|") || j.state == "" && !strings.Contains(out, id+"||") {
				t.Fatalf("job %q: %+v", id, j)
			}
			if st, sig, ok := strings.Cut(j.exitCode, ":"); j.exitCode != "" && (!ok || !digits(st) || !digits(sig)) {
				t.Fatalf("job %q: exit code %q, want STATUS:SIGNAL", id, j.exitCode)
			}
		}
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"schema": 1, "node": "n1", "healthy": true, "results": [{"check": "gpu_models", "observed": "8x NVIDIA H100 80GB HBM3 (h100)"}]}`), "n1")
	f.Add([]byte(`{"schema": 2, "node": "n1", "healthy": true}`), "n1")
	f.Add([]byte(`{"schema": 1, "node": "n1", "healthy": false, "results": [{"check": "nccl_allreduce", "status": "ok", "observed": "476.5 GB/s at 4 GiB"}, {"check": "ib_ports", "status": "ok", "details": [{"device": "mlx5_0/1", "observed": "ACTIVE/LinkUp 400 Gb/sec (4X NDR)"}]}]}`), "n1")
	f.Fuzz(func(t *testing.T, b []byte, node string) {
		r, err := parseReport(b, node)
		if err != nil {
			return
		}
		if r.Healthy == nil || r.Schema == nil || *r.Schema != reportSchema || node != "" && r.Node != node {
			t.Fatalf("accepted %q as %+v", b, r)
		}
		for _, fg := range figuresOf(node, modelOf(r), r) {
			if fg.Value < 0 || fg.Metric == "" {
				t.Fatalf("figure %+v from %q", fg, b)
			}
		}
	})
}

func FuzzParseTopologyLeaves(f *testing.F) {
	f.Add("SwitchName=s0 Nodes=gpu[01-04]\nSwitchName=s1 Switches=s0 # spine\n")
	f.Add("switchname=a nodes=n[1-3,7] linkspeed=100\n")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return // a hostlist can expand to many names: keep each case quick
		}
		leaf, err := parseTopologyLeaves([]byte(text), "topology.conf", nil)
		if err != nil {
			return
		}
		for n, l := range leaf {
			if n == "" || l == "" {
				t.Fatalf("%q -> %q", n, l)
			}
		}
	})
}

// TestREADMEFlags: the manual's fleet sweep page (docs/fleet-sweep.md) names every flag of the
// command.
func TestREADMEFlags(t *testing.T) {
	const page = repoRoot + "/docs/fleet-sweep.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("read the fleet sweep's page: %v", err)
	}
	section := string(b)
	fs := flag.NewFlagSet("fleet-sweep", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	defineFlags(fs, &o, &rawFlags{})
	fs.VisitAll(func(fl *flag.Flag) {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(fl.Name) + `\b`).MatchString(section) {
			t.Errorf("%s does not mention --%s (%s)", page, fl.Name, fl.Usage)
		}
	})
}

// BenchmarkSummarize4096 judges 4,096 reports: the sweep's own work after the jobs, which
// grows linearly with the nodes.
func BenchmarkSummarize4096(b *testing.B) {
	var runs []nodeRun
	for i := range 4096 {
		n := fmt.Sprintf("gpu%04d", i)
		runs = append(runs, nodeRun{Node: n, JobID: fmt.Sprint(i), State: "COMPLETED",
			Output: rep(n, true, modelsH100, ibRates, ncclAt(476.5-float64(i%7)))})
	}
	b.ResetTimer()
	for b.Loop() {
		if s := summarize(runs, defaultRule); len(s.Healthy)+len(s.slowNodes()) != 4096 {
			b.Fatal(len(s.Healthy))
		}
	}
}

// BenchmarkLocate4096 narrows down one bad node among 4,096 in pairs, without Slurm.
func BenchmarkLocate4096(b *testing.B) {
	nodes := nodeNames(4096)
	opts := testOpts
	opts.Group = 2
	for b.Loop() {
		f := &fakeNet{bad: map[string]bool{"n2049": true}}
		if res := locate(context.Background(), nodes, opts, f.run); len(res.Culprits) != 1 {
			b.Fatal(res.Culprits)
		}
	}
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
