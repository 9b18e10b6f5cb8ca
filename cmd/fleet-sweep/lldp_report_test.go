package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// lldpRun is a node's run whose job left the real capture testdata/lldp/FILE (see SOURCE
// there), as collect reads it back.
func lldpRun(t *testing.T, node, file string) nodeRun {
	t.Helper()
	r := nodeRun{Node: node, JobID: "1", State: "COMPLETED", ExitCode: "0:0", OutputPath: filepath.Join("/out/lldp", node+".json")}
	r.Output, r.OutputErr = os.ReadFile(filepath.Join("testdata", "lldp", file))
	if r.OutputErr != nil {
		t.Fatal(r.OutputErr)
	}
	return r
}

func parseTopo(t *testing.T, text string) *slurm.TopologyConf {
	t.Helper()
	tc, err := slurm.ParseTopologyConf(strings.NewReader(text), "/etc/slurm/topology.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestSummarizeLLDP judges the captures a sweep read back: each node's leaf, the nodes
// without one and why, and topology.conf against the map by lint's own comparison.
func TestSummarizeLLDP(t *testing.T) {
	swmap := map[string]string{"leaf01": "s1", "leaf02": "s2"}
	// n5's job failed as it does where lldpd is not running (the test bed's stderr, observed).
	n5 := nodeRun{Node: "n5", JobID: "5", State: "FAILED", ExitCode: "2:0", OutputPath: "/out/lldp/n5.json", OutputErr: fs.ErrNotExist,
		Stderr: "nodecheck topology capture --lldp: /usr/sbin/lldpcli exited 1: 2026-12-06T03:08:44 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory"}
	all := func(t *testing.T) []nodeRun {
		return []nodeRun{lldpRun(t, "n1", "n1.json"), lldpRun(t, "n2", "n2.json"), lldpRun(t, "n3", "n3.json"), lldpRun(t, "n4", "n4.json"), n5}
	}
	base := lldpInputs{lldpDir: "/out/lldp", nodecheck: "/usr/sbin/nodecheck", switchMap: swmap, mapFile: "/etc/switches.map"}
	withTopo := func(text string) lldpInputs {
		in := base
		in.topoPath, in.topology = "/etc/slurm/topology.conf", parseTopo(t, text)
		return in
	}
	lintCmd := "/usr/sbin/nodecheck lint --topology /etc/slurm/topology.conf --lldp /out/lldp --lldp-switch-map /etc/switches.map"
	tests := []struct {
		name     string
		runs     func(t *testing.T) []nodeRun
		in       lldpInputs
		failed   bool
		want     []string // in the text summary
		problems string   // the nodes each topology problem names
	}{
		{"the test bed's fabric: n2 and n3 off topology.conf, n4 no neighbour, n5 no capture", all,
			withTopo("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-5]\nSwitchName=top Switches=s[1-2]\n"), true,
			[]string{
				"nodecheck fleet sweep --lldp: 5 nodes, 3 on a leaf switch (1 on several), 1 without a neighbour, 1 missing (captures in /out/lldp)\n",
				"\nLEAF     n1  s1  (ens1f0 -> leaf01 ifname swp1)\n",
				"\nLEAVES   n3  s1,s2  (ens1f0 -> leaf01 ifname swp3; ens1f1 -> leaf02 ifname swp3)\n",
				"\nNO LLDP  n4  no LLDP neighbour on ens1f0 (lldpd answered)",
				"\nMISSING  n5  job 5 FAILED (exit 2:0), no n5.json; stderr: nodecheck topology capture --lldp: /usr/sbin/lldpcli exited 1: ",
				"\ntopology.conf /etc/slurm/topology.conf: 0 errors, 3 warnings against the captures\n",
				": move n2 to SwitchName=s2\n",
				"no slurm.conf found here",
				"\nFollow up: " + lintCmd + "\n",
			}, "n2 n3 n3"},
		{"topology.conf as cabled", func(t *testing.T) []nodeRun {
			return []nodeRun{lldpRun(t, "n1", "n1.json"), lldpRun(t, "n2", "n2.json")}
		}, withTopo("SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n2\nSwitchName=top Switches=s[1-2]\n"), false,
			[]string{"2 nodes, 2 on a leaf switch (0 on several), 0 without a neighbour, 0 missing", "topology.conf /etc/slurm/topology.conf: matches the captures\n"}, ""},
		{"no topology.conf: the map alone, and generate to follow", func(t *testing.T) []nodeRun {
			return []nodeRun{lldpRun(t, "n1", "n1.json"), lldpRun(t, "n3", "n3.json")}
		}, lldpInputs{lldpDir: "/out/lldp", nodecheck: "/usr/sbin/nodecheck"}, false,
			[]string{"\nLEAF     n1  leaf01  (ens1f0 -> leaf01 ifname swp1)\n", "\nLEAVES   n3  leaf01,leaf02  (",
				"topology.conf: none given or found (--topology)", "\nFollow up: /usr/sbin/nodecheck topology generate --lldp /out/lldp\n"}, ""},
		{"a drained node has no job; a copied capture is not the node's", func(t *testing.T) []nodeRun {
			return []nodeRun{lldpRun(t, "n1", "n1.json"), {Node: "n2", Skipped: "node drained: fan"}, lldpRun(t, "n9", "n2.json")}
		}, lldpInputs{lldpDir: "/out/lldp", nodecheck: "/usr/sbin/nodecheck"}, true,
			[]string{"\nMISSING  n2  node drained: fan\n", `MISSING  n9  job 1 COMPLETED, n9.json: the capture is about host "n2": a stale or copied file, or --host in --args`}, ""},
		{"topology.conf unreadable", func(t *testing.T) []nodeRun { return []nodeRun{lldpRun(t, "n1", "n1.json")} },
			lldpInputs{lldpDir: "/out/lldp", nodecheck: "/usr/sbin/nodecheck", topoPath: "/etc/slurm/topology.conf", topoErr: errors.New("read topology.conf: permission denied")}, true,
			[]string{"topology.conf /etc/slurm/topology.conf: not compared: read topology.conf: permission denied\n"}, ""},
		{"a switch map problem", func(t *testing.T) []nodeRun { return []nodeRun{lldpRun(t, "n1", "n1.json")} },
			lldpInputs{lldpDir: "/out/lldp", nodecheck: "/usr/sbin/nodecheck", mapProbs: []slurm.Problem{{Severity: slurm.SeverityError, Message: "switches.map:3: leaf01 is mapped to s1 and to s9: keep one"}}}, true,
			[]string{"\nmap: error switches.map:3: leaf01 is mapped to s1 and to s9: keep one\n"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := summarizeLLDP(tc.runs(t), tc.in)
			var b bytes.Buffer
			if err := writeLLDPText(&b, s); err != nil {
				t.Fatal(err)
			}
			if s.failed() != tc.failed {
				t.Errorf("failed %v, want %v", s.failed(), tc.failed)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			var named []string
			if s.Topology != nil {
				for _, p := range s.Topology.Problems {
					named = append(named, p.Nodes)
				}
			}
			if strings.Join(named, " ") != tc.problems {
				t.Errorf("topology problems name %q, want %q:\n%s", named, tc.problems, b.String())
			}
			if s.Nodes != len(s.Mapped)+len(s.NoNeighbour)+len(s.Missing) {
				t.Errorf("%d nodes, %d + %d + %d judged", s.Nodes, len(s.Mapped), len(s.NoNeighbour), len(s.Missing))
			}
		})
	}
}

// TestNoNeighbourReason: the reason comes from the capture's own fields.
func TestNoNeighbourReason(t *testing.T) {
	for _, tc := range []struct {
		c    slurm.LLDPCapture
		want string
	}{
		{slurm.LLDPCapture{Source: "lldpd", Interfaces: []string{"ens1f0"}}, "no LLDP neighbour on ens1f0 (lldpd answered)"},
		{slurm.LLDPCapture{Source: "lldpd"}, "no RDMA-capable Ethernet port found and none named (--args --interface): lldpd was asked about every port"},
		{slurm.LLDPCapture{Source: "lldptool", Interfaces: []string{"ens2f0", "ens2f1"}}, "no LLDP neighbour on ens2f0,ens2f1 (lldptool answered)"},
		{slurm.LLDPCapture{Source: "lldpd", Neighbors: []slurm.LLDPNeighbor{{Interface: "eth0"}}}, "lldpd reports 1 neighbours with neither a system name nor a chassis id"},
	} {
		if got := noNeighbourReason(tc.c); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
