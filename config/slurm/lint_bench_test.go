package slurm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// generateCluster writes a slurm.conf and gres.conf for nodes GPU nodes gpu00001...: one
// NodeName line per rack of rackSize nodes with Gres=gpu:h100:8, and one gres.conf line per rack
// whose File= names gpusInGres(rack) devices. scripts/gen-cluster writes the same files for
// timing the binary.
func generateCluster(nodes, rackSize int, gpusInGres func(rack int) int) (slurm, gres []byte) {
	var s, g bytes.Buffer
	s.WriteString("ClusterName=bench\nGresTypes=gpu\nNodeName=DEFAULT CPUs=64 RealMemory=512000\n")
	g.WriteString("AutoDetect=off\n")
	for first, rack := 1, 0; first <= nodes; first, rack = first+rackSize, rack+1 {
		last := min(first+rackSize-1, nodes)
		fmt.Fprintf(&s, "NodeName=gpu[%05d-%05d] Gres=gpu:h100:8 Feature=h100,rack%d\n", first, last, rack)
		fmt.Fprintf(&g, "NodeName=gpu[%05d-%05d] Name=gpu Type=h100 File=/dev/nvidia[0-%d] Cores=0-63\n", first, last, gpusInGres(rack)-1)
	}
	fmt.Fprintf(&s, "PartitionName=gpu Nodes=gpu[%05d-%05d] Default=YES\n", 1, nodes)
	return s.Bytes(), g.Bytes()
}

func eight(int) int { return 8 }

func benchmarkLint(b *testing.B, nodes int) {
	slurm, gres := generateCluster(nodes, 32, func(rack int) int {
		if rack%100 == 7 {
			return 7 // one rack in a hundred is short of a GPU: a realistic few problems
		}
		return 8
	})
	b.SetBytes(int64(len(slurm) + len(gres)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sc, err := ParseSlurmConf(slurm, "slurm.conf", nil)
		if err != nil {
			b.Fatal(err)
		}
		gc, err := ParseGresConf(gres, "gres.conf", nil)
		if err != nil {
			b.Fatal(err)
		}
		r := Lint(sc, gc)
		if len(r.Nodes) != nodes {
			b.Fatalf("%d nodes, want %d", len(r.Nodes), nodes)
		}
		if err := r.WriteJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLint10k parses, lints and renders as JSON a generated 10,000-node cluster.
func BenchmarkLint10k(b *testing.B) { benchmarkLint(b, 10_000) }

// BenchmarkLint100k is BenchmarkLint10k at 100,000 nodes: it must cost about ten times as
// much, not a hundred.
func BenchmarkLint100k(b *testing.B) { benchmarkLint(b, 100_000) }

// BenchmarkLintText100k renders the 100,000-node report as text.
func BenchmarkLintText100k(b *testing.B) {
	slurm, gres := generateCluster(100_000, 32, eight)
	sc, _ := ParseSlurmConf(slurm, "slurm.conf", nil)
	gc, _ := ParseGresConf(gres, "gres.conf", nil)
	r := Lint(sc, gc)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
