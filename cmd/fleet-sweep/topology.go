package main

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// maxLeafNodes bounds the node names read from topology.conf: far beyond any cluster, it
// stops a typo such as Nodes=gpu[1-99999999] from filling memory.
const maxLeafNodes = 1 << 21

// parseTopologyLeaves reads topology.conf (data, read from path) with nodecheck's parser
// (config/slurm, the one `nodecheck lint --topology` uses) and maps each node to its leaf:
// the SwitchName= whose Nodes= lists it, or in the block form the BlockName= that lists it.
// Spines (Switches=) and LinkSpeed do not matter for pairing. A node listed twice keeps the
// first. read serves Include lines. What Slurm would refuse in the file is an error naming
// the first such line.
func parseTopologyLeaves(data []byte, path string, read slurm.ReadFileFunc) (map[string]string, error) {
	t, err := slurm.ParseTopologyConf(bytes.NewReader(data), path, read)
	if err != nil {
		return nil, err
	}
	var errs []slurm.Problem
	for _, p := range t.Problems {
		if p.Severity == slurm.SeverityError {
			errs = append(errs, p)
		}
	}
	if len(errs) > 0 {
		more := ""
		if len(errs) > 1 {
			more = fmt.Sprintf(" (and %d more; nodecheck lint --topology %s lists them)", len(errs)-1, path)
		}
		return nil, fmt.Errorf("%s%s", errs[0].Message, more)
	}
	leaf := map[string]string{}
	count := 0
	add := func(group string, nodes *slurm.Hostlist) {
		if nodes == nil || count > maxLeafNodes {
			return
		}
		if count += nodes.Len(); count > maxLeafNodes {
			return
		}
		nodes.Each(func(n string) bool {
			if _, ok := leaf[n]; !ok {
				leaf[n] = group
			}
			return true
		})
	}
	for _, s := range t.Switches {
		add(s.Name, s.Nodes)
	}
	for _, b := range t.Blocks {
		add(b.Name, b.Nodes)
	}
	if count > maxLeafNodes {
		return nil, fmt.Errorf("%s: leaves name more than %d nodes: check Nodes= for a typo", path, maxLeafNodes)
	}
	return leaf, nil
}

// arrange orders nodes for round 1, whose sets are consecutive runs of this order. Without
// leaf information the order is kept. Otherwise nodes are grouped by leaf switch (leaves in the
// order their first node comes): same-leaf puts each leaf's nodes together, so a pair's
// traffic stays under its leaf and a bad result points at the nodes; crossLeaf deals them out
// one leaf at a time (A1 B1 C1 A2 B2 ...), so consecutive nodes sit under different leaves
// and every pair crosses the spine links. Nodes under no known leaf come last.
func arrange(nodes []string, leaf map[string]string, crossLeaf bool) []string {
	if len(leaf) == 0 {
		return slices.Clone(nodes)
	}
	var names []string
	by := map[string][]string{}
	for _, n := range nodes {
		l, ok := leaf[n]
		if !ok {
			l = "\x00none" // sorts nowhere: appended last below
		}
		if _, seen := by[l]; !seen && ok {
			names = append(names, l)
		}
		by[l] = append(by[l], n)
	}
	if _, ok := by["\x00none"]; ok {
		names = append(names, "\x00none")
	}
	var out []string
	if !crossLeaf {
		for _, l := range names {
			out = append(out, by[l]...)
		}
		return out
	}
	for i := 0; len(out) < len(nodes); i++ {
		for _, l := range names {
			if i < len(by[l]) {
				out = append(out, by[l][i])
			}
		}
	}
	return out
}
