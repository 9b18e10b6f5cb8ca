package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// parseTopologyLeaves reads the leaf switches of a Slurm topology.conf (topology/tree): every
// line "SwitchName=NAME Nodes=HOSTLIST" maps those nodes to that switch. It reads only what
// pairing needs: SwitchName and Nodes; spine lines (Switches= without Nodes=), LinkSpeed and
// the rest are ignored, and so is Include. Keys are case-insensitive, "#" starts a comment.
// A node named by two leaves keeps the first. This is a stand-in, local to the sweep, for the
// shared topology.conf parser config/slurm is to get.
func parseTopologyLeaves(text string) (map[string]string, error) {
	leaf := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		var name, nodes string
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			switch strings.ToLower(k) {
			case "switchname":
				name = v
			case "nodes":
				nodes = v
			}
		}
		if name == "" || nodes == "" {
			continue
		}
		names, err := slurm.ExpandHostlist(nodes)
		if err != nil {
			return nil, fmt.Errorf("topology.conf:%d: Nodes=%s: %w", i+1, nodes, err)
		}
		for _, n := range names {
			if _, ok := leaf[n]; !ok {
				leaf[n] = name
			}
		}
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
