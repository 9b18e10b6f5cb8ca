package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// captureOutputLimit bounds what `nodecheck topology capture` keeps of ibnetdiscover's
// output: a 10,000-node fabric with eight adapters a node prints about 30 MiB.
const captureOutputLimit = 512 << 20

// captureOptions are the inputs of `nodecheck topology capture`.
type captureOptions struct {
	Program string        // --ibnetdiscover-path: the program, an absolute path
	Out     string        // --out: file to write; "" or "-" for standard output
	Timeout time.Duration // --timeout
	CA      string        // --ca: the local adapter to discover from (ibnetdiscover -C)
	Port    int           // --port: its port (ibnetdiscover -P); 0 for ibnetdiscover's choice
	Ports   bool          // --ports: the ports report (ibnetdiscover -p) instead of the topology file
	// OutputLimit bounds the output kept; 0 is captureOutputLimit.
	OutputLimit int

	// Exec runs the program; nil runs it on this node (node.Live.Exec).
	Exec func(ctx context.Context, argv []string) (node.CmdResult, error)
}

func newTopologyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Work with the InfiniBand fabric topology.conf describes",
	}
	o := captureOptions{Program: "/usr/sbin/ibnetdiscover", Timeout: 2 * time.Minute}
	lo := lldpOptions{LLDPCli: "/usr/sbin/lldpcli", LLDPTool: "/usr/sbin/lldptool", Timeout: 10 * time.Second, Sys: "/sys"}
	var lldp bool
	capture := &cobra.Command{
		Use:   "capture [--out FILE]",
		Short: "Save the fabric as ibnetdiscover shows it (or this node's LLDP neighbours), for nodecheck lint",
		Long: `capture runs ibnetdiscover (infiniband-diags, on any node of the fabric; root or a user
with access to /dev/infiniband/umad*) without a shell, with a deadline, keeps its output
up to 512 MiB, checks that it is ibnetdiscover output, and saves it to --out (written
whole or not at all) or prints it. Then:

  nodecheck lint --topology /etc/slurm/topology.conf --ibnetdiscover FILE

With --lldp (RoCE and other Ethernet fabrics, where there is no ibnetdiscover) it records
this node's LLDP neighbours instead: the switch (system name, chassis id) and switch port
each of its RDMA-capable Ethernet ports (and each --interface) is cabled to, from lldpd
(lldpcli -f json show neighbors), or from lldpad's lldptool where lldpcli is not installed,
and says which it used. Save one file a node in one directory, then:

  nodecheck lint --topology /etc/slurm/topology.conf --lldp DIR

Exit codes: 0 saved, 2 ibnetdiscover is missing, failed, ran past --timeout, printed too
much or something that is not a fabric, or the file could not be written.`,
		Example: `  nodecheck topology capture --out /var/tmp/fabric.txt
  nodecheck topology capture --ca mlx5_0 --port 1 --timeout 5m --out fabric.txt
  nodecheck topology capture | nodecheck lint --topology /etc/slurm/topology.conf --ibnetdiscover -
  nodecheck topology capture --lldp --out /shared/lldp/$(hostname -s).json`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.watch.Listen() // a signal cancels the context, which kills ibnetdiscover rather than leaving it running
			if lldp {
				lo.Out = o.Out
				if cmd.Flags().Changed("timeout") {
					lo.Timeout = o.Timeout
				}
				if code := captureLLDP(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), lo); code != exitHealthy {
					return exitError{code}
				}
				return nil
			}
			if code := captureTopology(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := capture.Flags()
	f.StringVar(&o.Out, "out", "", "file to save the capture to (default: standard output)")
	f.StringVar(&o.Program, "ibnetdiscover-path", o.Program, "ibnetdiscover to run (an absolute path)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long ibnetdiscover may run")
	f.StringVar(&o.CA, "ca", "", "local adapter to discover from (ibnetdiscover -C), e.g. mlx5_0")
	f.IntVar(&o.Port, "port", 0, "port of --ca to discover from (ibnetdiscover -P)")
	f.BoolVar(&o.Ports, "ports", false, "save the ports report (ibnetdiscover -p) instead of the topology file")
	f.BoolVar(&lldp, "lldp", false, "record this node's LLDP neighbours (RoCE/Ethernet) instead of running ibnetdiscover")
	f.StringVar(&lo.LLDPCli, "lldpcli-path", lo.LLDPCli, "lldpcli to ask lldpd with (an absolute path)")
	f.StringVar(&lo.LLDPTool, "lldptool-path", lo.LLDPTool, "lldptool to ask lldpad with where lldpcli is not installed")
	f.StringVar(&lo.Socket, "lldpd-socket", "", "lldpd's control socket (lldpcli -u); default: lldpd's own")
	f.StringSliceVar(&lo.Ifaces, "interface", nil, "with --lldp, a port to record besides the RDMA-capable Ethernet ones (repeat or comma-separate)")
	f.StringVar(&lo.Host, "host", "", "with --lldp, the host name recorded (default: this machine's short name)")
	cmd.AddCommand(capture, newTopologyGenerateCmd())
	return cmd
}

// captureTopology runs ibnetdiscover, checks its output and saves it; it returns the exit code.
func captureTopology(ctx context.Context, stdout, stderr io.Writer, o captureOptions) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "nodecheck topology capture: "+format+"\n", args...)
		return exitCannotRun
	}
	if !filepath.IsAbs(o.Program) {
		return fail("--ibnetdiscover-path %q is not an absolute path: give the full path (hooks and cron have no PATH)", o.Program)
	}
	if o.Timeout <= 0 {
		return fail("--timeout %s: want a positive duration", o.Timeout)
	}
	argv := []string{o.Program}
	if o.Ports {
		argv = append(argv, "-p")
	}
	if o.CA != "" {
		argv = append(argv, "-C", o.CA)
	}
	if o.Port > 0 {
		argv = append(argv, "-P", strconv.Itoa(o.Port))
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = captureOutputLimit
	}
	run := o.Exec
	if run == nil {
		live, err := node.NewLive(node.DefaultPaths(), node.WithOutputLimit(o.OutputLimit))
		if err != nil {
			return fail("%v", err)
		}
		run = live.Exec
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res, err := run(ctx, argv)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fail("%s is not installed (infiniband-diags): install it or give --ibnetdiscover-path", o.Program)
	case errors.Is(err, context.DeadlineExceeded):
		return fail("%s ran past --timeout %s and was killed: nothing saved; give a longer --timeout", o.Program, o.Timeout)
	case err != nil:
		return fail("%v", err)
	case res.Truncated:
		return fail("%s printed more than %d bytes: nothing saved", o.Program, o.OutputLimit)
	case res.ExitCode != 0:
		return fail("%s exited %d: %s", o.Program, res.ExitCode, firstLine(res.Stderr))
	}
	fab, err := slurm.ParseIBNetDiscover(strings.NewReader(res.Stdout), o.Program)
	if err != nil {
		return fail("%v: nothing saved", err)
	}
	if res.Stderr != "" {
		fmt.Fprintf(stderr, "nodecheck topology capture: %s said on stderr (not saved): %s\n", o.Program, firstLine(res.Stderr))
	}
	where := "standard output"
	if o.Out == "" || o.Out == "-" {
		if _, err := io.WriteString(stdout, res.Stdout); err != nil {
			return fail("write: %v", err)
		}
	} else {
		if err := files.WriteAtomic(o.Out, []byte(res.Stdout), 0o644); err != nil {
			return fail("write %s: %v", o.Out, err)
		}
		where = o.Out
	}
	sw, ca := 0, 0
	for _, n := range fab.Nodes {
		switch n.Type {
		case slurm.FabricSwitch:
			sw++
		case slurm.FabricCA:
			ca++
		}
	}
	fmt.Fprintf(stderr, "nodecheck topology capture: %d switches, %d channel adapters, %d links in %s (%s) saved to %s\n",
		sw, ca, len(fab.Links), res.Duration.Round(time.Millisecond), fab.Format, where)
	return exitHealthy
}

// firstLine returns the first non-blank line of s, trimmed, for a one-line message.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "(nothing on stderr)"
}
