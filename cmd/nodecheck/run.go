package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/report"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
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
	log, _ := newLogger(g.stderr, config.LogConfig{Level: "info"})
	mode, list, err := parseRunFlags(g, o)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	// The watchdog's first arming: the mode's default budget, until the config is read (which
	// may itself block on a hung file system).
	g.watch.Arm(mode, config.DefaultBudget().For(mode), false)
	env, setup, err := checks.NewEnv(ctx, checks.EnvOptions{
		Mode: mode, ConfigPath: o.configPath, SnapshotDir: o.snapshot, NodeName: o.nodeName,
		SlurmConf: o.slurmConf, Getenv: g.getenv, DryRun: o.dryRun, GPUSource: newGPUSource(), Checks: list,
		StateDir: o.stateDir,
		Start:    g.watch.Start(), // the process's creation: the budget and the watchdog count from one moment
	})
	var cfgErr *checks.ConfigError
	if errors.As(err, &cfgErr) {
		g.watch.Arm(mode, config.DefaultBudget().For(mode), cfgErr.FailClosed)
		return configFailure(g, log, o, cfgErr, setup)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	g.watch.Arm(mode, env.Budget.Run, env.Config.FailClosed)
	replay := setup.Snapshot != nil
	log, closeLog := newLogger(g.stderr, env.Config.Log)
	defer closeLog()

	rep := checks.Run(ctx, env, list, env.RunOptions())
	logHistory(log, rep.History)
	if mode != config.ModeManual {
		// A person at a terminal reads the table; logs are for the hooks' unattended runs.
		logResults(log, rep)
	}
	// Drain before writing the report, which says what was done; and in a prolog before
	// exiting, so that the node carries nodecheck's reason rather than Slurm's "Prolog error".
	code := checks.ExitCode(rep.Verdict, mode)
	// One client for drain and repair: it asks scontrol its version once.
	client := drain.ClientFrom(env.Config, slurmConfForClients(ctx, g, env.Slurm, replay))
	outcome, code := applyDrain(ctx, log, rep, env.Config, mode, o, replay, client, code)
	// Repairs act on what drain left: a node nodecheck drained (docs/repairs.md).
	fix := applyRepair(ctx, log, rep, env, o, replay, client, outcome)
	werr := writeReport(g.stdout, rep, o, outcome, fix)
	writeMetrics(log, promFilePath(o, env.Config.PromFile, replay), rep, outcome, repairMetrics(env.Config, fix))
	if werr != nil {
		fmt.Fprintf(g.stderr, "nodecheck: write report: %v\n", werr)
		return exitCannotRun
	}
	return code
}

// parseRunFlags checks the flags that need no config: the format, the mode (else detected
// from Slurm's environment), the checks to run, and the drain flags.
func parseRunFlags(g *globals, o runOpts) (config.Mode, []checks.Check, error) {
	if o.format != "text" && o.format != "json" {
		return "", nil, fmt.Errorf("--format %q: use text or json", o.format)
	}
	mode := checks.DetectMode(g.getenv, g.argv0)
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
	if err := checkDrainFlags(o, mode, o.snapshot != ""); err != nil {
		return "", nil, err
	}
	return mode, list, nil
}

// promFilePath is where the run writes its metrics: --prom-file, else prom_file from the
// config, which a snapshot replay and a dry run leave alone (they must not write to this
// machine unless told to). "" writes none.
func promFilePath(o runOpts, configured string, replay bool) string {
	if o.promFile != "" {
		return o.promFile
	}
	if replay || o.dryRun {
		return ""
	}
	return configured
}

// writeMetrics writes the run's Prometheus textfile when path is set. A failure is logged and
// never changes the exit code: metrics describe the run, they do not judge the node.
func writeMetrics(log zerolog.Logger, path string, rep checks.Report, d *drain.Outcome, fix *report.RepairMetrics) {
	if path == "" {
		return
	}
	mo := report.MetricsOptions{Version: versionString(), Repair: fix}
	if d != nil {
		mo.DrainAction = d.Action
	}
	if err := report.WriteMetricsFile(path, rep, mo); err != nil {
		log.Error().Err(err).Msg("metrics not written; the exit code is unchanged")
	}
}

// configFailure ends a run whose config is unusable (a *checks.ConfigError): no check ran,
// so the run is undecided. It is logged as an error, reported, and written to the metrics
// when there is a path for them (--prom-file, or prom_file read leniently from the broken
// file), so that a bad config pushed to the fleet shows on a dashboard. The exit code is
// checks.ConfigErrorExitCode's: a prolog or epilog passes unless fail_closed says otherwise.
func configFailure(g *globals, log zerolog.Logger, o runOpts, e *checks.ConfigError, setup checks.Setup) int {
	code := checks.ConfigErrorExitCode(e.Mode, e.FailClosed)
	log.Error().Err(e.Err).Str("mode", string(e.Mode)).Str("verdict", string(checks.VerdictUndecided)).
		Bool("fail_closed", e.FailClosed).Int("exit", code).Msg("config is unusable; no check ran")
	rep := checks.ConfigErrorReport(e, setup.StartedAt)
	writeMetrics(log, promFilePath(o, e.PromFile, o.snapshot != ""), rep, nil, nil)
	if code == exitCannotRun {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", e)
		return code
	}
	_ = writeReport(g.stdout, rep, o, nil, nil)
	return code
}

func writeReport(w io.Writer, rep checks.Report, o runOpts, d *drain.Outcome, fix *repair.Outcome) error {
	if o.format == "json" {
		var opts []report.JSONOption
		if d != nil {
			opts = append(opts, report.WithDrain(d))
		}
		if fix != nil {
			opts = append(opts, report.WithRepair(fix))
		}
		return report.WriteJSON(w, rep, opts...)
	}
	if err := report.WriteText(w, rep, report.TextOptions{Color: isTerminal(w), Details: o.details, Timing: true}); err != nil {
		return err
	}
	if err := writeDrainText(w, d); err != nil {
		return err
	}
	return writeRepairText(w, fix)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// logHistory logs what the run could not do with the node's history, and anything it set
// aside: an admin must see that earlier events stopped counting.
func logHistory(log zerolog.Logger, h *checks.RunHistory) {
	if h == nil {
		return
	}
	if h.Err != nil {
		log.Error().Err(h.Err).Msg("the node's history cannot be used: the checks that judge over time say error")
	}
	for _, n := range h.Notes {
		log.Warn().Str("history", h.File).Msg(n)
	}
}

func logResults(log zerolog.Logger, rep checks.Report) {
	for _, r := range rep.Results {
		ev := log.Debug()
		switch r.Status {
		case checks.StatusWarn:
			ev = log.Warn()
		case checks.StatusFail, checks.StatusError:
			ev = log.Error()
		}
		ev = ev.Str("check", r.Check).Str("status", string(r.Status)).Dur("duration", r.Duration)
		if r.Remedy != "" {
			ev = ev.Str("remedy", string(r.Remedy))
		}
		if r.Err != nil {
			ev = ev.AnErr("cause", r.Err)
		}
		ev.Msg(r.Summary)
	}
	ev := log.Info()
	msg := "run finished"
	if rep.Verdict == checks.VerdictUndecided {
		// Undecided exits 0 in a prolog or epilog: this line is where it must be seen.
		ev = log.Error()
		msg = "run finished undecided: a check could not look, nothing is known to be wrong"
		if rep.Interrupted {
			msg = "run interrupted before it could decide"
		}
	}
	ev.Str("node", rep.Node).Str("mode", string(rep.Mode)).Str("verdict", string(rep.Verdict)).Bool("healthy", rep.Healthy).
		Int("failed", len(rep.Failed())).Int("undecided", len(rep.Undecided())).Dur("duration", rep.Duration).
		Dur("budget", rep.Budget.Run).Msg(msg)
}
