package slurm

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/scripts/gen-fabric/fabricgen"
)

// generateFabric is fabricgen.Generate into byte slices: a fat tree with leaf groups of
// leafSize nodes, each leaf on spines spines, rails adapters a node, every swapEvery-th node
// recabled. scripts/gen-fabric writes the same files for timing the binary.
func generateFabric(tb testing.TB, nodes, leafSize, spines, rails, swapEvery int) (topo, fabric []byte, moved []string) {
	var t, f bytes.Buffer
	moved, err := fabricgen.Generate(fabricgen.Params{Nodes: nodes, LeafSize: leafSize, Spines: spines, Rails: rails, SwapEvery: swapEvery}, &t, &f)
	if err != nil {
		tb.Fatal(err)
	}
	return t.Bytes(), f.Bytes(), moved
}

// lintGenerated runs the whole of `nodecheck lint --topology --ibnetdiscover` on generated
// files: parse all four, lint, merge, render as JSON.
func lintGenerated(tb testing.TB, slurm, gres, topo, fabric []byte, out io.Writer) Report {
	sc, err := ParseSlurmConf(slurm, "slurm.conf", nil)
	if err != nil {
		tb.Fatal(err)
	}
	gc, err := ParseGresConf(gres, "gres.conf", nil)
	if err != nil {
		tb.Fatal(err)
	}
	tc, err := ParseTopologyConf(bytes.NewReader(topo), "topology.conf", nil)
	if err != nil {
		tb.Fatal(err)
	}
	fab, err := ParseIBNetDiscover(bytes.NewReader(fabric), "ibnetdiscover.txt")
	if err != nil {
		tb.Fatal(err)
	}
	r := Lint(sc, gc)
	MergeTopology(&r, LintTopology(TopologyInput{Slurm: sc, Topology: tc, Fabric: fab}))
	if err := r.WriteJSON(out); err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestLintTopologyGenerated checks a generated 10,000-node fabric, one adapter a node and
// eight: exactly the recabled nodes are named.
func TestLintTopologyGenerated(t *testing.T) {
	for _, rails := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d rails", rails), func(t *testing.T) {
			nodes := 10_000
			if rails > 1 || testing.Short() {
				nodes = 2_000
			}
			slurm, gres := generateCluster(nodes, 32, eight)
			topo, fabric, moved := generateFabric(t, nodes, 32, 16, rails, 500)
			r := lintGenerated(t, slurm, gres, topo, fabric, io.Discard)
			if len(r.Problems) != len(moved) {
				t.Errorf("%d problems for %d moved nodes:\n%s", len(r.Problems), len(moved), dumpProblems(r.Problems))
			}
			var got []string
			for _, p := range r.Problems {
				if p.Nodes != "" {
					got = append(got, p.Nodes)
				}
			}
			slices.Sort(got)
			if len(moved) == 0 || strings.Join(got, " ") != strings.Join(moved, " ") {
				t.Errorf("named %v, want %v", got, moved)
			}
			railed := strings.Contains(fmt.Sprint(r.Notes), "rail-optimized fabric")
			if railed != (rails > 1) {
				t.Errorf("rail-optimized note %v, want %v: %v", railed, rails > 1, r.Notes)
			}
		})
	}
}

func benchmarkLintTopology(b *testing.B, nodes, rails int) {
	slurm, gres := generateCluster(nodes, 32, eight)
	topo, fabric, _ := generateFabric(b, nodes, 32, 16, rails, 500)
	b.SetBytes(int64(len(slurm) + len(gres) + len(topo) + len(fabric)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lintGenerated(b, slurm, gres, topo, fabric, io.Discard)
	}
}

// BenchmarkLintTopology10k is BenchmarkLint10k with --topology and --ibnetdiscover: a
// 10,000-node fat tree, one adapter a node (about 4 MiB of ibnetdiscover output).
func BenchmarkLintTopology10k(b *testing.B) { benchmarkLintTopology(b, 10_000, 1) }

// BenchmarkLintTopology10kRails8 is the same fleet with eight adapters a node on eight rails
// (about 30 MiB of ibnetdiscover output).
func BenchmarkLintTopology10kRails8(b *testing.B) { benchmarkLintTopology(b, 10_000, 8) }

// BenchmarkParseIBNetDiscover10k parses the one-adapter capture alone.
func BenchmarkParseIBNetDiscover10k(b *testing.B) {
	_, fabric, _ := generateFabric(b, 10_000, 32, 16, 1, 500)
	b.SetBytes(int64(len(fabric)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ParseIBNetDiscover(bytes.NewReader(fabric), "ibnetdiscover.txt"); err != nil {
			b.Fatal(err)
		}
	}
}
