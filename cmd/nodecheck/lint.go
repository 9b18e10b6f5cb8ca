package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// lintOptions are the inputs of `nodecheck lint`. The function fields default to the real
// environment and file system; tests replace them.
type lintOptions struct {
	SlurmConf string // --slurm-conf; empty: found as Slurm does (FindSlurmConf)
	GresConf  string // --gres-conf; empty: gres.conf beside slurm.conf, if there is one
	// CgroupConf is --cgroup-conf; empty: cgroup.conf beside slurm.conf (none there is
	// Slurm's defaults: devices not constrained).
	CgroupConf string
	Format     string // --format: text or json

	// Topology is --topology: topology.conf to check; IBNetDiscover is --ibnetdiscover, a
	// capture to check it against ("-" for Stdin); IBGUIDMap and IBHostRegexp are
	// --ib-guid-map and --ib-host-regexp, how adapters are named to hosts.
	Topology      string
	IBNetDiscover string
	IBGUIDMap     string
	IBHostRegexp  string
	// LLDP is --lldp, a directory of LLDP captures (one a node) to check --topology against
	// instead of an ibnetdiscover capture; LLDPSwitchMap is --lldp-switch-map.
	LLDP          string
	LLDPSwitchMap string

	// Config is --config: the nodecheck.toml whose budgets slurm.conf's hook limits are held
	// against; empty: nodecheck's built-in budgets. CheckpointWindow is --checkpoint-window,
	// the GraceTime preempted jobs need (zero: slurm.DefaultCheckpointWindow).
	Config           string
	CheckpointWindow time.Duration

	Getenv   func(string) string
	ReadFile slurm.ReadFileFunc
	Exists   func(string) bool
	Open     func(string) (io.ReadCloser, error)
	Stdin    io.Reader

	lint []slurm.LintOption // built by runLint from Config and CheckpointWindow
}

// lintHookMargin is the least margin a run keeps below the limit slurmd puts on its hook (a
// tenth of the limit when that is more), as nodecheck run does when it fits its budget under
// Slurm's limit (checks.BudgetFor); lint warns where that leaves less than the budget.
const lintHookMargin = time.Second

func newLintCmd() *cobra.Command {
	o := lintOptions{Format: "text"}
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check slurm.conf and gres.conf against each other for every node",
		Long: `lint reads slurm.conf and gres.conf and checks them against each other for every node
slurm.conf defines, as slurmd and slurmctld will: GPU counts that differ (nodes then register
with fewer GPUs, go INVAL, and jobs stay PENDING), types in one file and not the other,
duplicate device files, Cores=/CPUs= beyond the node's cores, gres.conf lines that match no node,
GRES missing from GresTypes, unknown keys and broken hostlists. With cgroup.conf (beside
slurm.conf, or --cgroup-conf) it warns where GPU nodes can run several jobs at once
(partitions without OverSubscribe=EXCLUSIVE) while jobs are not fenced to their GPUs
(ConstrainDevices=yes, TaskPlugin=task/cgroup, ProctrackType=proctrack/cgroup). Each problem names the file
and line, the nodes (as one hostlist), and what to change.

slurm.conf is found as Slurm finds it (--slurm-conf, SLURM_CONF, slurmd's configless cache,
/etc/slurm/slurm.conf); gres.conf defaults to the one beside it.

--topology checks topology.conf (tree or block form) as Slurm's topology plugins will, and
against slurm.conf: nodes it omits, names it does not know, empty switches. With
--ibnetdiscover (a saved capture, see "nodecheck topology capture", or - for standard input)
it also checks topology.conf against the fabric: every node topology.conf puts under a leaf
switch other than the one its adapters are cabled to is named, with where it is cabled and
where to move it. Adapters are named to nodes by their node description ("gpu001 mlx5_0"),
or by --ib-guid-map / --ib-host-regexp where sites describe them otherwise. Without a
slurm.conf (none found and none given) --topology still runs, on topology.conf's names.
On RoCE and other Ethernet fabrics, --lldp DIR (the nodes' LLDP captures, see "nodecheck
topology capture --lldp") stands for --ibnetdiscover: each node's ports are named to it by
their capture, the leaves by their LLDP system name (mapped by --lldp-switch-map), and
nodes topology.conf puts under another leaf are named the same way.

It also reports the scheduling pitfalls of a GPU cluster (each once, at its line, with the
fix): SchedulerType other than backfill; a backfill window (bf_window) shorter than the
longest MaxTime/DefaultTime; several partitions without multifactor priority; multifactor
priority with no PriorityWeightFairshare on a cluster with slurmdbd accounting; a
node whose Gres= mixes GPU models; GPU nodes whose Feature= names no model; GPU nodes without
Gres= among GPU nodes; preemption that kills jobs with a GraceTime under --checkpoint-window;
partitions mixing GPU and CPU-only nodes (a note). And how slurmd runs nodecheck: Prolog=,
Epilog= and HealthCheckProgram= limits below nodecheck's budgets (built in, or --config),
health checks that never reach drained nodes (HealthCheckNodeState without ANY or IDLE, no
HealthCheckInterval), a GPU cluster's Prolog= without PrologFlags=Alloc, and a nodecheck
Prolog= or Epilog= (or [repair] in --config) with no HealthCheckProgram running nodecheck,
which is what resumes drained nodes and runs the repairs; with [repair] reboot, no
RebootProgram or ReturnToService=2.

Exit codes: 0 no error (warnings allowed), 1 errors found, 2 a file could not be read or
the usage is wrong.`,
		Example: `  nodecheck lint
  nodecheck lint --slurm-conf /etc/slurm/slurm.conf --gres-conf /etc/slurm/gres.conf
  nodecheck lint --format json | jq '.problems[] | select(.severity == "error")'
  nodecheck lint --topology /etc/slurm/topology.conf --ibnetdiscover fabric.txt
  ibnetdiscover | nodecheck lint --topology topology.conf --ibnetdiscover -
  nodecheck lint --topology /etc/slurm/topology.conf --lldp /shared/lldp --lldp-switch-map switches.map`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Stdin = cmd.InOrStdin()
			if code := runLint(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.SlurmConf, "slurm-conf", "", "slurm.conf to read (default: as Slurm finds it)")
	f.StringVar(&o.GresConf, "gres-conf", "", "gres.conf to read (default: gres.conf beside slurm.conf)")
	f.StringVar(&o.CgroupConf, "cgroup-conf", "", "cgroup.conf to read (default: cgroup.conf beside slurm.conf)")
	f.StringVar(&o.Format, "format", "text", "output format: text or json")
	f.StringVar(&o.Topology, "topology", "", "topology.conf to check")
	f.StringVar(&o.IBNetDiscover, "ibnetdiscover", "", "ibnetdiscover output to check --topology against (- for standard input)")
	f.StringVar(&o.IBGUIDMap, "ib-guid-map", "", "file of \"GUID host\" lines naming adapters whose description has no host")
	f.StringVar(&o.Config, "config", "", "nodecheck.toml whose budgets the hook limits in slurm.conf are checked against (default: the built-in budgets)")
	f.DurationVar(&o.CheckpointWindow, "checkpoint-window", slurm.DefaultCheckpointWindow, "time a preempted GPU job needs to write a checkpoint; partitions whose GraceTime is shorter are reported")
	f.StringVar(&o.LLDP, "lldp", "", "directory of LLDP captures (nodecheck topology capture --lldp, one a node) to check --topology against")
	f.StringVar(&o.LLDPSwitchMap, "lldp-switch-map", "", "file of \"LLDP-NAME TOPOLOGY-NAME\" lines naming the switches LLDP reports")
	f.StringVar(&o.IBHostRegexp, "ib-host-regexp", "", "regular expression finding the host in a node description (group \"host\", else the first group)")
	return cmd
}

// prepare fills the readers a caller left nil (tests give their own) and refuses options no
// lint can run with; it returns exitHealthy or exitCannotRun.
func (o *lintOptions) prepare(ctx context.Context, stderr io.Writer) int {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ReadFile == nil {
		// As the checks read them (node.Live.ReadFile): regular files only, bounded, given
		// up when ctx is done (Ctrl-C), symlinks followed.
		o.ReadFile = func(p string) ([]byte, error) {
			return files.Read(ctx, p, files.Limits{MaxBytes: node.DefaultMaxFileSize, FollowSymlinks: true})
		}
	}
	if o.Exists == nil {
		o.Exists = func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		}
	}
	if o.Format == "" {
		o.Format = "text"
	}
	if o.Format != "text" && o.Format != "json" {
		fmt.Fprintf(stderr, "nodecheck lint: --format=%s: want text or json\n", o.Format)
		return exitCannotRun
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: %v\n", err)
		return exitCannotRun
	}
	if o.CheckpointWindow < 0 {
		fmt.Fprintf(stderr, "nodecheck lint: --checkpoint-window=%s: want a positive duration\n", o.CheckpointWindow)
		return exitCannotRun
	}
	return exitHealthy
}

// runLint lints and writes the report to stdout; it returns the exit code.
func runLint(ctx context.Context, stdout, stderr io.Writer, o lintOptions) int {
	if code := o.prepare(ctx, stderr); code != exitHealthy {
		return code
	}
	cfg := config.Default(checks.Schema())
	if o.Config != "" {
		var err error
		if cfg, _, err = config.LoadConfigData(ctx, o.Config, checks.Schema()); err != nil {
			fmt.Fprintf(stderr, "nodecheck lint: --config %s: %v\n", o.Config, err)
			return exitCannotRun
		}
	}
	o.lint = []slurm.LintOption{
		slurm.WithHookBudgets(slurm.HookBudgets{Prolog: cfg.Budget.For(config.ModeProlog), Epilog: cfg.Budget.For(config.ModeEpilog),
			Health: cfg.Budget.For(config.ModeHealth), Margin: lintHookMargin}),
		slurm.WithCheckpointWindow(o.CheckpointWindow),
		slurm.WithRepairs(cfg.Repair.Enabled, cfg.Repair.Reboot),
	}
	var topo *topologyInputs
	if o.Topology != "" || o.IBNetDiscover != "" || o.IBGUIDMap != "" || o.IBHostRegexp != "" || o.LLDP != "" || o.LLDPSwitchMap != "" {
		var err error
		if topo, err = readTopologyInputs(ctx, o); err != nil {
			fmt.Fprintf(stderr, "nodecheck lint: %v\n", err)
			return exitCannotRun
		}
	}
	path, err := slurm.FindSlurmConf(o.SlurmConf, o.Getenv, o.Exists)
	if err != nil && (topo == nil || o.SlurmConf != "") {
		fmt.Fprintf(stderr, "nodecheck lint: %v\n", err)
		return exitCannotRun
	}
	var r slurm.Report
	if err != nil {
		// --topology without a slurm.conf: check topology.conf on its own names.
		r = slurm.Report{Problems: []slurm.Problem{}, Notes: []slurm.Problem{{Severity: slurm.SeverityInfo, File: o.Topology,
			Message: fmt.Sprintf("%s: no slurm.conf (%v): topology.conf's node names are not checked against it and nodes it omits are not found; give --slurm-conf", filepath.Base(o.Topology), err)}}}
		if o.Format == "text" {
			r.SlurmConf = "(none)" // JSON keeps "", as for gres_conf
		}
	} else {
		var sc *slurm.SlurmConf
		var code int
		if r, sc, code = lintSlurm(path, o, stderr); code != exitHealthy {
			return code
		}
		if topo != nil {
			topo.input.Slurm = sc
		}
	}
	if topo != nil {
		res := slurm.LintTopology(topo.input)
		res.Problems = append(res.Problems, topo.extra...)
		res.Notes = append(res.Notes, topo.notes...)
		slurm.MergeTopology(&r, res)
	}
	if o.Format == "json" {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: write report: %v\n", err)
		return exitCannotRun
	}
	if r.Errors() > 0 {
		return exitUnhealthy
	}
	return exitHealthy
}

// lintSlurm lints slurm.conf at path and the gres.conf beside it (or given). It returns
// exitHealthy or the exit code of a file it cannot read.
func lintSlurm(path string, o lintOptions, stderr io.Writer) (slurm.Report, *slurm.SlurmConf, int) {
	sc, err := slurm.LoadSlurmConf(path, o.ReadFile)
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: %s: %v\n", path, err)
		return slurm.Report{}, nil, exitCannotRun
	}
	gresPath := o.GresConf
	if gresPath == "" {
		gresPath = filepath.Join(filepath.Dir(path), "gres.conf")
	}
	gc, err := slurm.LoadGresConf(gresPath, o.ReadFile)
	switch {
	case err != nil && o.GresConf == "" && errors.Is(err, fs.ErrNotExist):
		// No gres.conf beside slurm.conf is a legal setup (no GRES, or all AutoDetect);
		// Lint then says what that means for nodes that configure GPUs.
		gc = nil
	case err != nil:
		fmt.Fprintf(stderr, "nodecheck lint: %s: %v\n", gresPath, err)
		return slurm.Report{}, nil, exitCannotRun
	}
	cgPath := o.CgroupConf
	if cgPath == "" {
		cgPath = filepath.Join(filepath.Dir(path), "cgroup.conf")
	}
	cg, err := slurm.LoadCgroupConf(cgPath, o.ReadFile)
	switch {
	case err != nil && o.CgroupConf == "" && errors.Is(err, fs.ErrNotExist):
		cg = nil // Slurm's defaults: ConstrainDevices=no
	case err != nil:
		fmt.Fprintf(stderr, "nodecheck lint: %s: %v\n", cgPath, err)
		return slurm.Report{}, nil, exitCannotRun
	}
	opts := append(slices.Clip(o.lint), slurm.WithCgroupConf(cg, cgPath))
	return slurm.Lint(sc, gc, opts...), sc, exitHealthy
}
