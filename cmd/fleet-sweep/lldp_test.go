package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestLLDPSweepSlurm gathers the node -> leaf map of a RoCE fabric with `fleet-sweep --lldp`
// on a real Slurm (the test bed, five nodes), the jobs running the real `nodecheck topology
// capture --lldp`, which asks a real lldpd over lldpcli.
//
// What is real: slurmctld and slurmd, the exclusive batch jobs, nodecheck, lldpcli, and an
// lldpd per node and per leaf switch (testbed.LLDPFabric) exchanging LLDP frames over veth
// pairs in network namespaces, each leaf's lldpd sending its switch's system name. What stands
// in: the bed's slurmd all run on this machine, so each node's lldpd has its own control
// socket, and each node's job is given it with --args-for NODE='--lldpd-socket SOCK' where a
// real node would ask its one lldpd; and, with no RDMA device here, the ports are named with
// --interface where the capture would find the RDMA-capable Ethernet ones in sysfs.
//
// The fabric: n1 on leaf01; n2 on leaf02, which topology.conf (s1 = leaf01, s2 = leaf02 by the
// switch map) puts under s1; n3 with ens1f0 on leaf01 and ens1f1 on leaf02; n4 cabled to a
// switch that sends no LLDP; n5 with no lldpd at all. The sweep names each node's leaf, n2
// away from its topology.conf leaf, n3 on two leaves, n4 without a neighbour and n5 without a
// capture, with lldpcli's own error, and exits 1; `nodecheck lint` as it prints it agrees.
func TestLLDPSweepSlurm(t *testing.T) {
	f := testbed.NewLLDPFabric(t)
	for _, n := range []string{"sw1", "sw2", "sw3", "n1", "n2", "n3", "n4", "n5"} {
		f.AddNS(n)
	}
	f.Cable("n1", "ens1f0", "sw1", 1)
	f.Cable("n2", "ens1f0", "sw2", 2)
	f.Cable("n3", "ens1f0", "sw1", 3)
	f.Cable("n3", "ens1f1", "sw2", 3)
	f.Cable("n4", "ens1f0", "sw3", 4) // sw3 runs no lldpd: a port with LLDP off
	f.StartSwitch("sw1", "leaf01")
	f.StartSwitch("sw2", "leaf02")
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		f.StartLLDPd(n, "ens1f*", n, "configure lldp tx-interval 1")
	}
	f.WaitNeighbours("n1", 1, 20*time.Second, "sw1")
	f.WaitNeighbours("n2", 1, 20*time.Second, "sw2")
	f.WaitNeighbours("n3", 2, 20*time.Second, "sw1", "sw2")

	topo := "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-5]\nSwitchName=top Switches=s[1-2]\n"
	testbed.ForEachVersion(t, testbed.Options{RepoRoot: repoRoot, TempPrefix: "nodecheck-lldp-sweep-", TempMode: 0o755, Nodes: 5,
		Short: "starts a real Slurm", ExtraConf: "TopologyPlugin=topology/tree\n", Topology: topo,
	}, func(t *testing.T, b *testbed.Bed) {
		if b.Root != "" {
			if _, err := os.Stat(filepath.Join(b.Root, "usr", "sbin", "lldpcli")); err != nil {
				t.Skipf("Slurm %s runs its jobs in its Debian 13 root, which has no lldpcli (%v): the capture there could only say lldpd is not installed", b.Version, err)
			}
		}
		tb := bed{b}
		swmap := filepath.Join(b.Tmp, "switches.map")
		if err := os.WriteFile(swmap, []byte("leaf01 s1\nleaf02 s2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(b.Tmp, "sweep")
		args := []string{"--lldp", "--partition", "debug", "--out", out, "--lldp-switch-map", swmap, "--output-wait", "500ms",
			"--args", "--interface ens1f0"}
		for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
			extra := ""
			if n == "n3" {
				extra = " --interface ens1f1"
			}
			args = append(args, "--args-for", n+"=--lldpd-socket "+shellQuote(f.Socket(n))+extra)
		}
		stdout, stderr, code := tb.sweep(t, args...)
		if code != exitUnhealthy {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUnhealthy, stderr)
		}
		for _, want := range []string{
			"nodecheck fleet sweep --lldp: 5 nodes, 3 on a leaf switch (1 on several), 1 without a neighbour, 1 missing",
			"\nLEAF     n1  s1  (ens1f0 -> leaf01 ifname swp1)\n",
			"\nLEAF     n2  s2  (ens1f0 -> leaf02 ifname swp2)\n",
			"\nLEAVES   n3  s1,s2  (ens1f0 -> leaf01 ifname swp3; ens1f1 -> leaf02 ifname swp3)\n",
			"\nNO LLDP  n4  no LLDP neighbour on ens1f0 (lldpd answered)",
			"move n2 to SwitchName=s2",
			"n3's adapters reach different leaf switches",
			"move n3 to SwitchName=s1",
			"Follow up: " + shellQuote(b.Nodecheck) + " lint --slurm-conf " + shellQuote(b.Conf) + " --topology " + shellQuote(filepath.Join(filepath.Dir(b.Conf), "topology.conf")) +
				" --lldp " + shellQuote(filepath.Join(out, "lldp")) + " --lldp-switch-map " + shellQuote(swmap) + "\n",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout)
			}
		}
		// n5 has no lldpd: its job fails, and the summary gives the capture's own error.
		if l := missingLines(stdout)["n5"]; !strings.Contains(l, " FAILED (exit 2:0), no n5.json; stderr: nodecheck topology capture --lldp: /usr/sbin/lldpcli exited") {
			t.Errorf("n5: %q\n%s", l, stdout)
		}
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			data, err := os.ReadFile(filepath.Join(out, "lldp", n+".json"))
			t.Logf("%s's capture (%v):\n%s", n, err, data)
		}
		// OUT/lldp holds the captures alone: the jobs' files are beside it.
		ents, _ := os.ReadDir(filepath.Join(out, "lldp"))
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != "n1.json n2.json n3.json n4.json" {
			t.Errorf("OUT/lldp holds %v", got)
		}

		// The JSON summary says the same.
		stdout, _, code = tb.sweep(t, append(args, "--format", "json")...)
		var s lldpSummary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitUnhealthy {
			t.Fatalf("exit %d, summary (%v):\n%s", code, err, stdout)
		}
		if len(s.Mapped) != 3 || s.Mapped[2].Node != "n3" || strings.Join(s.SeveralLeaves, ",") != "n3" || len(s.NoNeighbour) != 1 || len(s.Missing) != 1 ||
			s.Topology == nil || len(s.Topology.Problems) != 3 || s.Topology.SlurmConf != b.Conf {
			t.Errorf("summary:\n%s", stdout)
		}
		if s.Topology != nil {
			var named []string
			for _, p := range s.Topology.Problems {
				named = append(named, p.Nodes)
			}
			// n2 away from its leaf; n3 on two leaves, and its first port away from its leaf.
			if strings.Join(named, " ") != "n2 n3 n3" {
				t.Errorf("the problems name %v, want n2 once and n3 twice: %+v", named, s.Topology.Problems)
			}
		}

		// The follow-up, run as printed, names the same two nodes.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		lint, err := exec.CommandContext(ctx, "/bin/sh", "-c", s.FollowUp).CombinedOutput()
		if !strings.Contains(string(lint), "move n2 to SwitchName=s2") || !strings.Contains(string(lint), "n3's adapters reach different leaf switches") {
			t.Errorf("%s (%v):\n%s", s.FollowUp, err, lint)
		}
	})
}
