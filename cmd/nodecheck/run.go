package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/report"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

type runOpts struct {
	all        bool
	checkIDs   []string
	mode       string
	configPath string
	snapshot   string
	nodeName   string
	slurmConf  string
	format     string
	details    bool
	dryRun     bool
	drain      bool
	resume     bool
	repair     bool
	testBed    bool
	promFile   string
	stateDir   string
}

func newRunCmd(g *globals) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the checks and report; exit 0 healthy, 1 unhealthy, 2 could not run, 3 undecided",
		Long: `Run the checks in their fixed order, each under its timeout and all within the mode's
budget (prolog 5s, epilog 30s, health 50s, manual none by default), and report every result.

The mode comes from --mode, else from SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd) as
slurmd sets it for Prolog= and Epilog=, else health when started as nodecheck-health or by
slurmd with only SLURMD_NODENAME set, else manual.
The node name comes from --node, else SLURMD_NODENAME, else the snapshot's node_name, else
the slurm.conf NodeName whose NodeHostname (or name) is this host's name.

Without --all or --check, every check that runs in the mode runs (the same as --all).

slurm.conf is --slurm-conf, else slurm_conf in nodecheck.toml, else SLURM_CONF, else where
the installed Slurm looks: the file the parent slurmd was started with (-f), the default
compiled into the Slurm programs found (PREFIX/etc/slurm.conf; /etc/slurm for /usr), the
configless cache /run/slurm/conf, then /usr/local/etc and /opt/slurm/etc. A path named with
--slurm-conf, --config, --snapshot or SLURM_CONF must exist; a relative one is relative to
the working directory.

The verdict is HEALTHY when every check that applies decided (ok, warn, skip) and none
failed, UNHEALTHY when one failed, and UNDECIDED when none failed but one could not decide
(error), the run was interrupted, or the config was unusable. Exit codes: 0 healthy, 1
unhealthy, 2 could not run (usage, a named path that does not exist, an unusable config),
3 undecided. A prolog or epilog exits 0 when undecided, and when its config is unusable
unless fail_closed is set, so that a fault of nodecheck's own never drains the cluster: it
logs the reason as an error and the metrics say nodecheck_verdict{verdict="undecided"}.

When a check fails, prolog, epilog and health runs drain the node through scontrol with the
reason "nodecheck: CHECK: SUMMARY"; health runs resume a node nodecheck drained once it passes
resume_after_passes runs in a row ([drain] in nodecheck.toml;
/usr/share/doc/nodecheck/docs/draining.md). Manual runs
and snapshot replays only report, unless given --drain or --resume (a replay also needs --node).

With [repair] enabled in nodecheck.toml, a health run on a node nodecheck drained that runs no
job then repairs it, cheapest remedy first: it resets the failing GPUs, or asks Slurm to reboot
the node (scontrol reboot ASAP nextstate=DOWN), keeps it out of service until passes_to_resume
clean runs, and after too many repairs marks it "nodecheck: service: ..."
(/usr/share/doc/nodecheck/docs/repairs.md). --dry-run prints each step instead; a replay repairs only with --repair and --node.`,
		Example: `  nodecheck run --all
  nodecheck run --check ib_ports --format json
  nodecheck run --snapshot testdata/snapshots/h100-healthy --all
  nodecheck run --mode prolog --node gpu01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code := runChecks(cmd.Context(), g, o)
			if code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "run every check (the default when --check is not given)")
	f.StringSliceVar(&o.checkIDs, "check", nil, "run only these checks (comma-separated ids; see nodecheck list)")
	f.StringVar(&o.mode, "mode", "", "prolog, epilog, health or manual (default: detected from Slurm's environment)")
	f.StringVar(&o.configPath, "config", "", "nodecheck.toml to use (default "+config.DefaultConfigPath+"; inside the snapshot with --snapshot)")
	f.StringVar(&o.snapshot, "snapshot", "", "replay a recorded node from this directory instead of reading the live one")
	f.StringVar(&o.nodeName, "node", "", "the node's Slurm name (default: SLURMD_NODENAME, then slurm.conf host name matching)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "slurm.conf to read (default: SLURM_CONF, slurmd's configless cache, /etc/slurm/slurm.conf)")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	f.BoolVar(&o.details, "details", false, "text format: list every device, not only the bad ones")
	f.BoolVar(&o.drain, "drain", false, "drain the node if a check fails, also in a manual run or (with --node) a snapshot replay")
	f.BoolVar(&o.resume, "resume", false, "resume the node if nodecheck drained it and it passed resume_after_passes clean runs in a row, also in a manual run or (with --node) a snapshot replay")
	f.BoolVar(&o.repair, "repair", false, "with [repair] enabled, repair the live node (--node) from a snapshot replay in health mode, as a live health run does")
	f.BoolVar(&o.testBed, "test-bed", false, "with --repair and --snapshot: this host is a test bed, which a replay may repair though the snapshot was recorded on another host")
	f.BoolVar(&o.dryRun, "dry-run", false, "decide as usual, but print the commands a drain, resume or repair would run, and run none")
	f.StringVar(&o.stateDir, "state-dir", "", "keep the node's history (and nothing else of the state) in this directory instead of [state] dir; a snapshot replay keeps history only when given this flag, so that a sequence of snapshots replays in order into it")
	f.StringVar(&o.promFile, "prom-file", "", "write Prometheus metrics of the run to this file for node_exporter's textfile collector (default: prom_file in nodecheck.toml; a snapshot replay or dry run writes them only when given this flag)")
	_ = cmd.RegisterFlagCompletionFunc("check", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return checks.IDs(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"prolog", "epilog", "health", "manual"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// runChecks is `nodecheck run` without the flag parsing: it returns the exit code.
func runChecks(ctx context.Context, g *globals, o runOpts) int {
	mode, list, err := parseRunFlags(g, o)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	out := run.Run(ctx, run.Options{
		EnvOptions: run.EnvOptions{
			Mode: mode, Argv0: g.argv0, ConfigPath: o.configPath, SnapshotDir: o.snapshot, NodeName: o.nodeName,
			SlurmConf: o.slurmConf, Getenv: g.getenv, DryRun: o.dryRun, GPUSource: newGPUSource(), Checks: list,
			StateDir: o.stateDir,
			Start:    g.watch.Start(), // the process's creation: the budget and the watchdog count from one moment
		},
		Partial: len(o.checkIDs) > 0, Drain: o.drain, Resume: o.resume, Repair: o.repair, TestBed: o.testBed,
		PromFile: o.promFile, Version: versionString(),
		Logger: func(lc config.LogConfig) (zerolog.Logger, func()) { return newLogger(g.stderr, lc) },
		Arm:    g.watch.Arm,
	})
	if out.Err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", out.Err)
		return out.Exit
	}
	if err := writeReport(g.stdout, out, o); err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: write report: %v\n", err)
		return exitCannotRun
	}
	return out.Exit
}

// parseRunFlags checks the flags that need no config: the format, the mode (else detected
// from Slurm's environment), the checks to run, and what the run may do to the node.
func parseRunFlags(g *globals, o runOpts) (config.Mode, []checks.Check, error) {
	if o.format != "text" && o.format != "json" {
		return "", nil, fmt.Errorf("--format %q: use text or json", o.format)
	}
	mode := run.DetectMode(g.getenv, g.argv0)
	if o.mode != "" {
		m, err := config.ParseMode(o.mode)
		if err != nil {
			return "", nil, fmt.Errorf("--mode: %w", err)
		}
		mode = m
	}
	list := checks.All()
	if len(o.checkIDs) > 0 {
		if o.all {
			return "", nil, errors.New("--all and --check exclude each other")
		}
		sel, err := checks.Select(o.checkIDs)
		if err != nil {
			return "", nil, fmt.Errorf("--check: %w", err)
		}
		list = sel
	}
	flags := drain.Flags{Drain: o.drain, Resume: o.resume, Repair: o.repair}
	if err := drain.CheckFlags(mode, flags, o.snapshot != "", o.nodeName != ""); err != nil {
		return "", nil, err
	}
	if o.testBed && !(o.repair && o.snapshot != "") {
		return "", nil, errors.New("--test-bed goes with --repair and --snapshot: it lets a replay repair a host the snapshot was not recorded on")
	}
	return mode, list, nil
}

func writeReport(w io.Writer, out run.Outcome, o runOpts) error {
	if o.format == "json" {
		var opts []report.JSONOption
		if out.Drain != nil {
			opts = append(opts, report.WithDrain(out.Drain))
		}
		if out.Repair != nil {
			opts = append(opts, report.WithRepair(out.Repair))
		}
		return report.WriteJSON(w, out.Report, opts...)
	}
	if err := report.WriteText(w, out.Report, report.TextOptions{Color: isTerminal(w), Details: o.details, Timing: true}); err != nil {
		return err
	}
	return report.WriteActions(w, out.Drain, out.Repair)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
