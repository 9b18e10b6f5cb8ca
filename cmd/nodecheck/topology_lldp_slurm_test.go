package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestGeneratedTopologyOnSlurm has the real slurmctld (22.05 and 24.11, topology/tree) start
// with a topology.conf that `nodecheck topology generate` wrote from LLDP captures of the
// bed's nodes, n1 on leaf01 and n2 on leaf02 (slurmctld refuses to start on one it cannot
// read): `scontrol show topology` shows the two leaves under the top switch.
func TestGeneratedTopologyOnSlurm(t *testing.T) {
	topo := generatedTopology(t, "tree")
	testbed.ForEachVersion(t, testbed.Options{RepoRoot: repoRoot, TempPrefix: "nodecheck-topo-", TempMode: 0o755,
		Short: "starts a real Slurm", ExtraConf: "TopologyPlugin=topology/tree\n", Topology: topo,
	}, func(t *testing.T, b *testbed.Bed) {
		shown := b.Slurm(t, "scontrol", "show", "topology")
		for _, want := range []string{"SwitchName=leaf01", "SwitchName=leaf02", "SwitchName=top"} {
			if !strings.Contains(shown, want) {
				t.Errorf("scontrol show topology lacks %s:\n%s\ntopology.conf:\n%s", want, shown, topo)
			}
		}
		t.Logf("Slurm %s runs with the generated topology.conf; scontrol show topology:\n%s", b.Version, shown)
	})
}

// TestGeneratedBlockTopologyOnSlurm has the real slurmctld 24.11 (topology/block, Slurm 23.11
// and later; the 22.05 bed has no such plugin) start with the block form `nodecheck topology
// generate --form block` wrote from the same captures: `scontrol show topology` lists a block
// per leaf.
func TestGeneratedBlockTopologyOnSlurm(t *testing.T) {
	topo := generatedTopology(t, "block")
	b := testbed.Start(t, testbed.Options{RepoRoot: repoRoot, TempPrefix: "nodecheck-topo-block-", TempMode: 0o755, Slurm: testbed.Slurm2411,
		Short: "starts a real Slurm", ExtraConf: "TopologyPlugin=topology/block\n", Topology: topo})
	shown := b.Slurm(t, "scontrol", "show", "topology")
	for _, want := range []string{"BlockName=leaf01", "BlockName=leaf02", "Nodes=n1", "Nodes=n2"} {
		if !strings.Contains(shown, want) {
			t.Errorf("scontrol show topology lacks %s:\n%s\ntopology.conf:\n%s", want, shown, topo)
		}
	}
	t.Logf("Slurm %s runs with the generated block topology.conf; scontrol show topology:\n%s", b.Version, shown)
}

// generatedTopology is what `nodecheck topology generate --form FORM` writes from LLDP
// captures of the beds' two nodes, n1 cabled to leaf01 and n2 to leaf02.
func generatedTopology(t *testing.T, form string) string {
	t.Helper()
	dir := t.TempDir()
	for i, n := range []string{"n1", "n2"} {
		c := slurm.LLDPCapture{Host: n, Source: "lldpd", Interfaces: []string{"ens1f0"},
			Neighbors: []slurm.LLDPNeighbor{{Interface: "ens1f0", SysName: []string{"leaf01", "leaf02"}[i], PortID: "ifname swp1"}}}
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := generateTopology(context.Background(), &out, &errb, generateOptions{LLDP: dir, Form: form, Top: "top"}); code != exitHealthy {
		t.Fatalf("generate: exit %d: %s", code, errb.String())
	}
	return out.String()
}
