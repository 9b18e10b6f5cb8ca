// Command gen-fabric writes a topology.conf and the matching ibnetdiscover output for the
// cluster scripts/gen-cluster generates (nodes gpu00001...), to time
// `nodecheck lint --topology --ibnetdiscover` at scale:
//
//	go run ./scripts/gen-cluster -nodes 10000 -out /tmp/cluster
//	go run ./scripts/gen-fabric -nodes 10000 -out /tmp/cluster > /tmp/cluster/moved.txt
//	/usr/bin/time -v nodecheck lint --slurm-conf /tmp/cluster/slurm.conf \
//	    --topology /tmp/cluster/topology.conf --ibnetdiscover /tmp/cluster/ibnetdiscover.txt --format json >/dev/null
//
// It prints the nodes it recabled (those lint must name), one a line. The fabric is a
// two-level fat tree: leaf groups of -leaf nodes, -rails adapters a node, -spines spines.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodecheck/nodecheck/scripts/gen-fabric/fabricgen"
)

func main() {
	var p fabricgen.Params
	flag.IntVar(&p.Nodes, "nodes", 10000, "number of nodes")
	flag.IntVar(&p.LeafSize, "leaf", 32, "nodes a leaf switch (at most 32)")
	flag.IntVar(&p.Spines, "spines", 16, "spine switches (at most 32)")
	flag.IntVar(&p.Rails, "rails", 1, "adapters a node, each on its own rail")
	flag.IntVar(&p.SwapEvery, "swap-every", 500, "every Nth node trades cables with one on the next leaf (0: none)")
	out := flag.String("out", ".", "directory to write topology.conf and ibnetdiscover.txt into")
	flag.Parse()
	if err := generate(*out, p); err != nil {
		fmt.Fprintf(os.Stderr, "gen-fabric: %v\n", err)
		os.Exit(1)
	}
}

func generate(dir string, p fabricgen.Params) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	t, err := os.Create(filepath.Join(dir, "topology.conf"))
	if err != nil {
		return err
	}
	defer t.Close()
	f, err := os.Create(filepath.Join(dir, "ibnetdiscover.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	moved, err := fabricgen.Generate(p, t, f)
	if err != nil {
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	for _, m := range moved {
		fmt.Fprintln(w, m)
	}
	return w.Flush()
}
