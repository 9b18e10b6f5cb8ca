package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// TestLLDPNamespaceFabric builds two leaves and six nodes, n[1-3] cabled to leaf01 and
// n[4-6] to leaf02, except n3, which topology.conf puts with n[1-2] but is cabled to leaf02:
// `topology capture --lldp` on each node, then `lint --topology --lldp` names n3 and nothing
// else, and `topology generate` writes a topology.conf that lints clean.
func TestLLDPNamespaceFabric(t *testing.T) {
	f := testbed.NewLLDPFabric(t)
	leafOf := map[string]string{"n1": "sw1", "n2": "sw1", "n3": "sw2", "n4": "sw2", "n5": "sw2", "n6": "sw2"}
	names := map[string]string{"sw1": "leaf01", "sw2": "leaf02"}
	for _, sw := range []string{"sw1", "sw2"} {
		f.AddNS(sw)
	}
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	for i, n := range nodes {
		f.AddNS(n)
		f.Cable(n, "ens1f0", leafOf[n], i+1)
	}
	for _, sw := range []string{"sw1", "sw2"} {
		f.StartSwitch(sw, names[sw])
	}
	socks := map[string]string{}
	for _, n := range nodes {
		socks[n] = f.StartLLDPd(n, "ens1f0", n, "configure lldp tx-interval 1")
	}
	caps := filepath.Join(f.Dir, "lldp")
	if err := os.Mkdir(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		o := lldpOptions{LLDPCli: "/usr/sbin/lldpcli", LLDPTool: "/usr/sbin/lldptool", Socket: socks[n], Ifaces: []string{"ens1f0"},
			Out: filepath.Join(caps, n+".json"), Timeout: 5 * time.Second, Host: n, Sys: t.TempDir()}
		var stderr bytes.Buffer
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			stderr.Reset()
			code := captureLLDP(context.Background(), &bytes.Buffer{}, &stderr, o)
			if code != exitHealthy {
				t.Fatalf("capture %s: exit %d: %s", n, code, stderr.String())
			}
			if strings.Contains(stderr.String(), ": 1 neighbours on ens1f0, from lldpd") {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("capture %s: no neighbour after 20 s: %s\n%s", n, stderr.String(), f.Describe(n, leafOf[n]))
			}
		}
	}
	conf := filepath.Join(f.Dir, "etc")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(conf, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	slurmConf := write("slurm.conf", "NodeName=n[1-6] CPUs=1\nPartitionName=p Nodes=ALL OverSubscribe=EXCLUSIVE\n")
	topo := write("topology.conf", "SwitchName=s1 Nodes=n[1-3]\nSwitchName=s2 Nodes=n[4-6]\nSwitchName=top Switches=s[1-2]\n")
	swmap := write("switches.map", "leaf01 s1\nleaf02 s2\n")

	var out, errb bytes.Buffer
	code := runLint(context.Background(), &out, &errb, lintOptions{SlurmConf: slurmConf, Topology: topo, LLDP: caps, LLDPSwitchMap: swmap, Format: "json"})
	if code != exitHealthy {
		t.Fatalf("lint exit %d: %s%s", code, out.String(), errb.String())
	}
	for _, n := range nodes {
		named := strings.Contains(out.String(), fmt.Sprintf(`"nodes":"%s"`, n))
		if named != (n == "n3") {
			t.Errorf("lint names %s: %v, want %v:\n%s", n, named, n == "n3", out.String())
		}
	}
	if !strings.Contains(out.String(), "move n3 to SwitchName=s2") {
		t.Errorf("lint does not say to move n3 to s2:\n%s", out.String())
	}

	gen := filepath.Join(conf, "generated.conf")
	if code := generateTopology(context.Background(), &out, &errb, generateOptions{LLDP: caps, SwitchMap: swmap, Form: "tree", Top: "top", Out: gen}); code != exitHealthy {
		t.Fatalf("generate exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-6]\n") {
		t.Errorf("generated:\n%s", b)
	}
	out.Reset()
	if code := runLint(context.Background(), &out, &errb, lintOptions{SlurmConf: slurmConf, Topology: gen, LLDP: caps, LLDPSwitchMap: swmap}); code != exitHealthy || !strings.Contains(out.String(), "0 errors, 0 warnings") {
		t.Errorf("the generated topology.conf lints with exit %d:\n%s", code, out.String())
	}
}

// TestCaptureLLDPFallback: where lldpcli is not installed the capture asks lldptool about
// each RDMA-capable Ethernet port (a sysfs fixture: mlx5_0 port 1 link_layer Ethernet, netdev
// ens2f0) and says so; with neither, it says to install lldpd.
func TestCaptureLLDPFallback(t *testing.T) {
	sys := t.TempDir()
	for p, v := range map[string]string{
		"class/infiniband/mlx5_0/ports/1/link_layer":  "Ethernet\n",
		"class/infiniband/mlx5_0/device/net/ens2f0/x": "",
		"class/infiniband/mlx5_1/ports/1/link_layer":  "InfiniBand\n",
		"class/infiniband/mlx5_1/device/net/ib0/x":    "",
	} {
		if err := os.MkdirAll(filepath.Join(sys, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sys, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Real lldptool output (config/slurm/testdata/lldp/SOURCE).
	tool, err := os.ReadFile(filepath.Join("..", "..", "config", "slurm", "testdata", "lldp", "openlldp-39-lldptool-t-ens2f0-excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var asked [][]string
	exec := func(hasTool bool) func(context.Context, []string) (node.CmdResult, error) {
		return func(_ context.Context, argv []string) (node.CmdResult, error) {
			asked = append(asked, argv)
			if argv[0] == "/usr/sbin/lldptool" && hasTool {
				return node.CmdResult{Stdout: string(tool)}, nil
			}
			return node.CmdResult{}, fmt.Errorf("run %s: %w", argv[0], os.ErrNotExist)
		}
	}
	o := lldpOptions{LLDPCli: "/usr/sbin/lldpcli", LLDPTool: "/usr/sbin/lldptool", Timeout: time.Second, Host: "bigdata2", Sys: sys,
		Now: func() time.Time { return time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC) }, Exec: exec(true)}
	var out, errb bytes.Buffer
	if code := captureLLDP(context.Background(), &out, &errb, o); code != exitHealthy {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "bigdata2: 1 neighbours on ens2f0, from lldptool") || !strings.Contains(out.String(), `"sys_name": "HB1-BJ1-BigData-002"`) ||
		!strings.Contains(out.String(), `"source": "lldptool"`) {
		t.Errorf("stderr %q\nstdout %s", errb.String(), out.String())
	}
	if got := fmt.Sprint(asked); got != "[[/usr/sbin/lldpcli -f json show neighbors] [/usr/sbin/lldptool -t -n -i ens2f0]]" {
		t.Errorf("ran %s", got)
	}
	o.Exec = exec(false)
	errb.Reset()
	if code := captureLLDP(context.Background(), &out, &errb, o); code != exitCannotRun || !strings.Contains(errb.String(), "install lldpd") {
		t.Errorf("neither installed: exit %d: %s", code, errb.String())
	}
}
