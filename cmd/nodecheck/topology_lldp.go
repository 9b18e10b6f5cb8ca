package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// lldpOptions are the inputs of `nodecheck topology capture --lldp`.
type lldpOptions struct {
	LLDPCli  string        // --lldpcli-path
	LLDPTool string        // --lldptool-path: lldpad's tool, used where lldpcli is not installed
	Socket   string        // --lldpd-socket: lldpd's control socket (lldpcli -u); "" for its default
	Ifaces   []string      // --interface: ports to record besides the RDMA-capable Ethernet ones
	Out      string        // --out
	Timeout  time.Duration // --timeout, for each command
	Host     string        // --host: the name recorded; "" for this machine's short host name
	Sys      string        // sysfs root, for the RDMA ports ("/sys")

	Exec func(ctx context.Context, argv []string) (node.CmdResult, error)
	Now  func() time.Time
}

// lldpOutputLimit bounds what lldpcli or lldptool may print: a node has a few dozen ports.
const lldpOutputLimit = 4 << 20

// rdmaEthernetPorts returns the network interfaces of RDMA devices whose port's link layer
// is Ethernet (RoCE), from sys: /sys/class/infiniband/DEV/ports/N/link_layer and
// /sys/class/infiniband/DEV/device/net/IFACE. None is no error: the node has no RoCE port.
func rdmaEthernetPorts(sys string) []string {
	var out []string
	devs, _ := os.ReadDir(filepath.Join(sys, "class", "infiniband"))
	for _, d := range devs {
		base := filepath.Join(sys, "class", "infiniband", d.Name())
		ports, _ := os.ReadDir(filepath.Join(base, "ports"))
		eth := false
		for _, p := range ports {
			b, err := files.Read(context.Background(), filepath.Join(base, "ports", p.Name(), "link_layer"), files.Limits{MaxBytes: 64, FollowSymlinks: true})
			eth = eth || err == nil && strings.TrimSpace(string(b)) == "Ethernet"
		}
		if !eth {
			continue
		}
		nets, _ := os.ReadDir(filepath.Join(base, "device", "net"))
		for _, n := range nets {
			if !slices.Contains(out, n.Name()) {
				out = append(out, n.Name())
			}
		}
	}
	slices.Sort(out)
	return out
}

// captureLLDP records this node's LLDP neighbours on its RDMA-capable Ethernet ports (and
// the ports named) from lldpd, or from lldpad's lldptool where lldpcli is not installed, and
// saves them as a slurm.LLDPCapture; it returns the exit code.
func captureLLDP(ctx context.Context, stdout, stderr io.Writer, o lldpOptions) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "nodecheck topology capture --lldp: "+format+"\n", args...)
		return exitCannotRun
	}
	for _, p := range []string{o.LLDPCli, o.LLDPTool} {
		if !filepath.IsAbs(p) {
			return fail("%q is not an absolute path: give the full path (hooks and cron have no PATH)", p)
		}
	}
	if o.Timeout <= 0 {
		return fail("--timeout %s: want a positive duration", o.Timeout)
	}
	run := o.Exec
	if run == nil {
		live, err := node.NewLive(node.DefaultPaths(), node.WithOutputLimit(lldpOutputLimit))
		if err != nil {
			return fail("%v", err)
		}
		run = live.Exec
	}
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return fail("host name: %v", err)
		}
		o.Host, _, _ = strings.Cut(h, ".")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	want := slices.Clone(o.Ifaces)
	for _, p := range rdmaEthernetPorts(o.Sys) {
		if !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	c := slurm.LLDPCapture{Host: o.Host, Source: "lldpd", TakenAt: o.Now().UTC().Format(time.RFC3339), Interfaces: want}
	ns, err := lldpFromLLDPd(ctx, run, o)
	if errors.Is(err, os.ErrNotExist) {
		c.Source = "lldptool"
		if len(want) == 0 {
			return fail("%s is not installed and no RDMA-capable Ethernet port or --interface names a port to ask %s about", o.LLDPCli, o.LLDPTool)
		}
		ns, err = lldpFromLLDPTool(ctx, run, o, want)
		if errors.Is(err, os.ErrNotExist) {
			return fail("neither %s (lldpd) nor %s (lldpad) is installed: install lldpd", o.LLDPCli, o.LLDPTool)
		}
	}
	if err != nil {
		return fail("%v", err)
	}
	for _, n := range ns {
		if len(want) == 0 || slices.Contains(want, n.Interface) {
			c.Neighbors = append(c.Neighbors, n)
		}
	}
	if c.Neighbors == nil {
		c.Neighbors = []slurm.LLDPNeighbor{}
	}
	if c.Interfaces == nil {
		c.Interfaces = []string{}
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fail("%v", err)
	}
	data = append(data, '\n')
	where := "standard output"
	if o.Out == "" || o.Out == "-" {
		if _, err := stdout.Write(data); err != nil {
			return fail("write: %v", err)
		}
	} else {
		if err := files.WriteAtomic(o.Out, data, 0o644); err != nil {
			return fail("write %s: %v", o.Out, err)
		}
		where = o.Out
	}
	asked := "every port lldpd knows (no RDMA-capable Ethernet port found, none named)"
	if len(want) > 0 {
		asked = strings.Join(want, ",")
	}
	fmt.Fprintf(stderr, "nodecheck topology capture --lldp: %s: %d neighbours on %s, from %s, saved to %s\n", c.Host, len(c.Neighbors), asked, c.Source, where)
	return exitHealthy
}

// lldpFromLLDPd asks lldpd through lldpcli; an error wrapping os.ErrNotExist means lldpcli is
// not installed.
func lldpFromLLDPd(ctx context.Context, run func(context.Context, []string) (node.CmdResult, error), o lldpOptions) ([]slurm.LLDPNeighbor, error) {
	argv := []string{o.LLDPCli}
	if o.Socket != "" {
		argv = append(argv, "-u", o.Socket)
	}
	argv = append(argv, "-f", "json", "show", "neighbors")
	out, err := runBounded(ctx, run, argv, o.Timeout)
	if err != nil {
		return nil, err
	}
	return slurm.ParseLLDP([]byte(out), o.LLDPCli, "")
}

// lldpFromLLDPTool asks lldpad about each port (lldptool -t -n -i IFACE: the neighbour's TLVs).
func lldpFromLLDPTool(ctx context.Context, run func(context.Context, []string) (node.CmdResult, error), o lldpOptions, ifaces []string) ([]slurm.LLDPNeighbor, error) {
	var out []slurm.LLDPNeighbor
	for _, ifc := range ifaces {
		text, err := runBounded(ctx, run, []string{o.LLDPTool, "-t", "-n", "-i", ifc}, o.Timeout)
		if err != nil {
			return nil, err
		}
		ns, err := slurm.ParseLLDP([]byte(text), o.LLDPTool+" -i "+ifc, ifc)
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	return out, nil
}

// runBounded runs argv with its own deadline and returns its stdout, or an error naming the
// program; os.ErrNotExist when it is not installed.
func runBounded(ctx context.Context, run func(context.Context, []string) (node.CmdResult, error), argv []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := run(ctx, argv)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s: %w", argv[0], os.ErrNotExist)
	case errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("%s ran past --timeout %s and was killed", argv[0], timeout)
	case err != nil:
		return "", err
	case res.Truncated:
		return "", fmt.Errorf("%s printed more than %d bytes", argv[0], lldpOutputLimit)
	case res.ExitCode != 0:
		return "", fmt.Errorf("%s exited %d: %s", argv[0], res.ExitCode, firstLine(res.Stderr))
	}
	return res.Stdout, nil
}

// maxLLDPFiles bounds the captures read from a directory: one a node.
const maxLLDPFiles = 200000

// readLLDPDir reads every regular file in dir as one node's capture (its host is the file's
// name less its extension, for raw lldpcli output) and joins them, switch names mapped by
// the map file (none when "").
func readLLDPDir(dir, mapFile string, read slurm.ReadFileFunc) (slurm.LLDPMap, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return slurm.LLDPMap{}, fmt.Errorf("read --lldp: %w", err)
	}
	if len(ents) > maxLLDPFiles {
		return slurm.LLDPMap{}, fmt.Errorf("read --lldp %s: more than %d files", dir, maxLLDPFiles)
	}
	var caps []slurm.LLDPCapture
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := read(p)
		if err != nil {
			return slurm.LLDPMap{}, fmt.Errorf("read --lldp: %w", err)
		}
		c, err := slurm.ParseLLDPCapture(data, p, strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
		if err != nil {
			return slurm.LLDPMap{}, fmt.Errorf("read --lldp: %w", err)
		}
		caps = append(caps, c)
	}
	if len(caps) == 0 {
		return slurm.LLDPMap{}, fmt.Errorf("read --lldp %s: no capture in it (nodecheck topology capture --lldp --out %s/HOST.json on each node)", dir, dir)
	}
	var swmap map[string]string
	var probs []slurm.Problem
	if mapFile != "" {
		data, err := read(mapFile)
		if err != nil {
			return slurm.LLDPMap{}, fmt.Errorf("read --lldp-switch-map: %w", err)
		}
		if swmap, probs, err = slurm.ParseSwitchMap(bytes.NewReader(data), mapFile); err != nil {
			return slurm.LLDPMap{}, err
		}
	}
	m := slurm.BuildLLDPMap(caps, swmap)
	m.Problems = append(m.Problems, probs...)
	return m, nil
}

// generateOptions are the inputs of `nodecheck topology generate`.
type generateOptions struct {
	LLDP, SwitchMap, Form, Top, Out string
}

func newTopologyGenerateCmd() *cobra.Command {
	o := generateOptions{Form: "tree", Top: "top"}
	cmd := &cobra.Command{
		Use:   "generate --lldp DIR [--out FILE]",
		Short: "Write a topology.conf from the nodes' LLDP captures",
		Long: `generate reads the LLDP captures in --lldp (one a node, from "nodecheck topology capture
--lldp") and writes a topology.conf that puts each node under the leaf switch its ports are
cabled to (the leaf most of its ports reach), switch names mapped by --lldp-switch-map. The
tree form adds a switch (--top) over the leaves: LLDP from the nodes does not see the spines,
and without a common parent Slurm cannot place a job across leaves. The block form
(topology/block, Slurm 23.11 and later) writes one BlockName= per leaf.

Exit codes: 0 written, 2 the captures or the map could not be read, or the file written.`,
		Example:       `  nodecheck topology generate --lldp /var/tmp/lldp --lldp-switch-map switches.map --out topology.conf`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := generateTopology(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.LLDP, "lldp", "", "directory of LLDP captures, one a node")
	f.StringVar(&o.SwitchMap, "lldp-switch-map", "", "file of \"LLDP-NAME TOPOLOGY-NAME\" lines naming the switches")
	f.StringVar(&o.Form, "form", o.Form, "tree or block")
	f.StringVar(&o.Top, "top", o.Top, "name of the switch over the leaves (tree form)")
	f.StringVar(&o.Out, "out", "", "file to write (default: standard output)")
	return cmd
}

func generateTopology(ctx context.Context, stdout, stderr io.Writer, o generateOptions) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "nodecheck topology generate: "+format+"\n", args...)
		return exitCannotRun
	}
	if o.LLDP == "" {
		return fail("--lldp DIR is required")
	}
	read := func(p string) ([]byte, error) {
		return files.Read(ctx, p, files.Limits{MaxBytes: node.DefaultMaxFileSize, FollowSymlinks: true})
	}
	m, err := readLLDPDir(o.LLDP, o.SwitchMap, read)
	if err != nil {
		return fail("%v", err)
	}
	for _, p := range m.Problems {
		fmt.Fprintf(stderr, "nodecheck topology generate: %s\n", p)
	}
	var b bytes.Buffer
	if err := m.GenerateTopology(&b, o.Form, o.Top); err != nil {
		return fail("%v", err)
	}
	if o.Out == "" || o.Out == "-" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			return fail("write: %v", err)
		}
		return exitHealthy
	}
	if err := files.WriteAtomic(o.Out, b.Bytes(), 0o644); err != nil {
		return fail("write %s: %v", o.Out, err)
	}
	return exitHealthy
}
