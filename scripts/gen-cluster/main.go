// Command gen-cluster writes a slurm.conf and a gres.conf for a generated GPU cluster, to time
// `nodecheck lint` at scale:
//
//	go run ./scripts/gen-cluster -nodes 100000 -out /tmp/cluster
//	/usr/bin/time -v nodecheck lint --slurm-conf /tmp/cluster/slurm.conf --format json >/dev/null
//
// Nodes are gpu00001..., one NodeName line per rack (Gres=gpu:h100:8) and one gres.conf line per
// rack (File=/dev/nvidia[0-7]); -short-every N makes every Nth rack one GPU short in gres.conf,
// so the report has problems to group. config/slurm/lint_bench_test.go generates the same files.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	nodes := flag.Int("nodes", 10000, "number of nodes")
	rack := flag.Int("rack", 32, "nodes per slurm.conf and gres.conf line")
	shortEvery := flag.Int("short-every", 100, "every Nth rack has 7 GPUs in gres.conf instead of 8 (0: none)")
	out := flag.String("out", ".", "directory to write slurm.conf and gres.conf into")
	flag.Parse()
	if err := generate(*out, *nodes, *rack, *shortEvery); err != nil {
		fmt.Fprintf(os.Stderr, "gen-cluster: %v\n", err)
		os.Exit(1)
	}
}

func generate(dir string, nodes, rack, shortEvery int) error {
	if nodes < 1 || rack < 1 {
		return fmt.Errorf("-nodes and -rack must be at least 1")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	s, err := os.Create(filepath.Join(dir, "slurm.conf"))
	if err != nil {
		return fmt.Errorf("create slurm.conf: %w", err)
	}
	defer s.Close()
	g, err := os.Create(filepath.Join(dir, "gres.conf"))
	if err != nil {
		return fmt.Errorf("create gres.conf: %w", err)
	}
	defer g.Close()
	sw, gw := bufio.NewWriter(s), bufio.NewWriter(g)
	fmt.Fprintf(sw, "ClusterName=generated\nGresTypes=gpu\nNodeName=DEFAULT CPUs=64 RealMemory=512000\n")
	fmt.Fprintf(gw, "AutoDetect=off\n")
	for first, r := 1, 0; first <= nodes; first, r = first+rack, r+1 {
		last := min(first+rack-1, nodes)
		gpus := 8
		if shortEvery > 0 && r%shortEvery == 7%shortEvery {
			gpus = 7
		}
		fmt.Fprintf(sw, "NodeName=gpu[%05d-%05d] Gres=gpu:h100:8 Feature=h100,rack%d\n", first, last, r)
		fmt.Fprintf(gw, "NodeName=gpu[%05d-%05d] Name=gpu Type=h100 File=/dev/nvidia[0-%d] Cores=0-63\n", first, last, gpus-1)
	}
	fmt.Fprintf(sw, "PartitionName=gpu Nodes=gpu[%05d-%05d] Default=YES\n", 1, nodes)
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("write slurm.conf: %w", err)
	}
	if err := gw.Flush(); err != nil {
		return fmt.Errorf("write gres.conf: %w", err)
	}
	return nil
}
