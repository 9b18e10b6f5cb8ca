package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/report"
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
	promFile   string

	// Set by `nodecheck snapshot` (snapshot.go), never by flags: wrapFacts wraps the node's
	// facts (in a node.Recorder), and afterRun sees the run's environment and report.
	wrapFacts func(node.Facts) node.Facts
	afterRun  func(*checks.Env, checks.Report)
}

func newRunCmd(g *globals) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the checks and report; exit 0 healthy, 1 unhealthy, 2 could not run",
		Long: `Run the checks in their fixed order, each under its timeout and all within the mode's
budget (prolog 5s, epilog 30s, health 50s, manual none by default), and report every result.

The mode comes from --mode, else from SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd) as
slurmd sets it for Prolog= and Epilog=, else health when started as nodecheck-health or by
slurmd with only SLURMD_NODENAME set, else manual.
The node name comes from --node, else SLURMD_NODENAME, else the snapshot's node_name, else
the slurm.conf NodeName whose NodeHostname (or name) is this host's name.

Without --all or --check, every check that runs in the mode runs (the same as --all).

When a check fails, prolog, epilog and health runs drain the node through scontrol with the
reason "nodecheck: CHECK: SUMMARY"; health runs resume a node nodecheck drained once it passes
resume_after_passes runs in a row ([drain] in nodecheck.toml, README "Draining"). Manual runs
and snapshot replays only report, unless given --drain or --resume (a replay also needs --node).`,
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
	f.BoolVar(&o.dryRun, "dry-run", false, "decide as usual, but print the scontrol commands a drain or resume would run, and run none")
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
	if o.format != "text" && o.format != "json" {
		fmt.Fprintf(g.stderr, "nodecheck: --format %q: use text or json\n", o.format)
		return exitCannotRun
	}
	mode := checks.DetectMode(g.getenv, g.argv0)
	if o.mode != "" {
		m, err := config.ParseMode(o.mode)
		if err != nil {
			fmt.Fprintf(g.stderr, "nodecheck: --mode: %v\n", err)
			return exitCannotRun
		}
		mode = m
	}
	list := checks.All()
	if len(o.checkIDs) > 0 {
		if o.all {
			fmt.Fprintln(g.stderr, "nodecheck: --all and --check exclude each other")
			return exitCannotRun
		}
		sel, err := checks.Select(o.checkIDs)
		if err != nil {
			fmt.Fprintf(g.stderr, "nodecheck: --check: %v\n", err)
			return exitCannotRun
		}
		list = sel
	}

	facts, snap, err := openFacts(o.snapshot)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	if o.wrapFacts != nil {
		facts = o.wrapFacts(facts)
	}
	facts = node.NewMemo(facts)
	if err := checkDrainFlags(o, mode, snap != nil); err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	getenv := g.getenv
	if snap != nil {
		// A replay must not pick up this machine's Slurm environment.
		getenv = func(string) string { return "" }
	}

	cfg, raw, cfgErr := loadRunConfig(ctx, facts, snap != nil, o.configPath)
	if cfgErr != nil {
		name := o.nodeName
		if name == "" {
			name = getenv("SLURMD_NODENAME")
		}
		return configFailure(g, log, mode, o, cfgErr, config.PeekFailClosed(raw), name, promFilePath(o, config.PeekPromFile(raw), snap != nil))
	}
	log, closeLog := newLogger(g.stderr, cfg.Log)
	defer closeLog()

	slurmConf := o.slurmConf
	if slurmConf == "" {
		slurmConf = cfg.SlurmConf
	}
	if slurmConf == "" && snap != nil {
		slurmConf = snap.Meta().SlurmConf // where the recorded run found it
	}
	slurm := checks.NewSlurmFiles(facts, slurmConf, getenv)
	nodeName, err := checks.ResolveNodeName(ctx, checks.NodeNameSources{
		Flag: o.nodeName, Getenv: getenv, Snapshot: snapshotNodeName(snap), Facts: facts, Slurm: slurm,
	})
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	eff, err := cfg.ForNode(nodeName)
	if err != nil {
		return configFailure(g, log, mode, o, err, cfg.FailClosed, nodeName, promFilePath(o, cfg.PromFile, snap != nil))
	}
	env := &checks.Env{
		Facts: facts, Config: eff, Mode: mode, Node: nodeName, Slurm: slurm,
		// The job comes from this process's environment even in a replay: like the mode
		// (DetectMode above), it says which invocation this is, not what the node holds, so
		// a prolog or epilog that replays a snapshot still judges its own job's GPUs.
		Job: checks.Job{
			ID: g.getenv("SLURM_JOB_ID"), GPUs: g.getenv("SLURM_JOB_GPUS"),
			UID: g.getenv("SLURM_JOB_UID"), User: g.getenv("SLURM_JOB_USER"),
		},
		// A replay must not write to this machine, nor may a dry run write anywhere.
		ReadOnly: snap != nil || o.dryRun,
	}
	rep := checks.Run(ctx, env, list, checks.RunOptions{
		Budget:             eff.Budget.For(mode),
		StopOnFirstFailure: eff.StopOnFirstFailure,
		ErrorIsFailure:     eff.ErrorIsFailure,
	})
	if o.afterRun != nil {
		o.afterRun(env, rep)
	}
	if mode != config.ModeManual {
		// A person at a terminal reads the table; logs are for the hooks' unattended runs.
		logResults(log, rep)
	}
	// Drain before writing the report, which says what was done; and in a prolog before
	// exiting, so that the node carries nodecheck's reason rather than Slurm's "Prolog error".
	code := exitHealthy
	if !rep.Healthy {
		code = exitUnhealthy
	}
	outcome, code := applyDrain(ctx, log, rep, eff, mode, o, snap != nil, slurmConfForClients(ctx, g, slurm, snap != nil), code)
	werr := writeReport(g.stdout, rep, o, outcome)
	writeMetrics(log, promFilePath(o, eff.PromFile, snap != nil), rep, outcome)
	if werr != nil {
		fmt.Fprintf(g.stderr, "nodecheck: write report: %v\n", werr)
		return exitCannotRun
	}
	return code
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
func writeMetrics(log zerolog.Logger, path string, rep checks.Report, d *drain.Outcome) {
	if path == "" {
		return
	}
	mo := report.MetricsOptions{Version: versionString()}
	if d != nil {
		mo.DrainAction = string(d.Action)
	}
	if err := report.WriteMetricsFile(path, rep, mo); err != nil {
		log.Error().Err(err).Msg("metrics not written; the exit code is unchanged")
	}
}

// openFacts gives the live node, or a recorded one when dir is set.
func openFacts(dir string) (node.Facts, *node.Snapshot, error) {
	if dir != "" {
		s, err := node.OpenSnapshot(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("--snapshot: %w", err)
		}
		return s, s, nil
	}
	// newGPUSource is the NVML adapter in a cgo build, and a source that says NVML is
	// unavailable in a CGO_ENABLED=0 build (nvml_cgo.go, nvml_nocgo.go).
	live, err := node.NewLive(node.DefaultPaths(), node.WithGPUSource(newGPUSource()))
	if err != nil {
		return nil, nil, err
	}
	return live, nil, nil
}

func snapshotNodeName(s *node.Snapshot) string {
	if s == nil {
		return ""
	}
	return s.Meta().NodeName
}

// loadRunConfig reads nodecheck.toml. On the live node it is read from disk with the
// permission check; in a replay the default path is looked up inside the snapshot, so a
// recorded node carries its own policy. An absent file at the default path means defaults.
// On error it also returns the file's bytes, when they could be read, for PeekFailClosed.
func loadRunConfig(ctx context.Context, facts node.Facts, replay bool, path string) (*config.Config, []byte, error) {
	explicit := path != ""
	if !explicit {
		path = config.DefaultConfigPath
	}
	if replay && !explicit {
		data, err := facts.ReadFile(ctx, path)
		if isNotExist(err) {
			return config.Default(), nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s in the snapshot: %w", path, err)
		}
		cfg, err := config.ParseConfig(data, path)
		return cfg, data, err
	}
	if _, err := os.Stat(path); !explicit && isNotExist(err) {
		return config.Default(), nil, nil
	}
	cfg, err := config.LoadConfig(path)
	if err != nil {
		data, _ := os.ReadFile(path)
		return nil, data, err
	}
	return cfg, nil, nil
}

// configFailure applies the rule for an unusable nodecheck.toml: in prolog and epilog a
// broken config must not fail every job on the fleet, so nodecheck logs it, reports it and
// exits 0 without running checks, unless the file says fail_closed = true (read leniently,
// since the file is broken). Elsewhere nodecheck cannot run (exit 2). In every mode the
// metrics, when there is a path for them (--prom-file, or prom_file read as leniently), say
// nodecheck_config_error 1, so that a bad config pushed to the fleet shows on a dashboard.
func configFailure(g *globals, log zerolog.Logger, mode config.Mode, o runOpts, err error, failClosed bool, nodeName, promPath string) int {
	log.Error().Err(err).Str("mode", string(mode)).Bool("fail_closed", failClosed).Msg("config is unusable; no check ran")
	rep := checks.Report{Node: nodeName, Mode: mode, Healthy: true, StartedAt: time.Now(), ConfigError: err.Error()}
	writeMetrics(log, promPath, rep, nil)
	if (mode == config.ModeProlog || mode == config.ModeEpilog) && !failClosed {
		_ = writeReport(g.stdout, rep, o, nil)
		return exitHealthy
	}
	fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
	return exitCannotRun
}

func writeReport(w io.Writer, rep checks.Report, o runOpts, d *drain.Outcome) error {
	if o.format == "json" {
		var opts []report.JSONOption
		if d != nil {
			opts = append(opts, report.WithDrain(d))
		}
		return report.WriteJSON(w, rep, opts...)
	}
	if err := report.WriteText(w, rep, report.TextOptions{Color: isTerminal(w), Details: o.details, Timing: true}); err != nil {
		return err
	}
	return writeDrainText(w, d)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
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
		if r.Err != nil {
			ev = ev.AnErr("cause", r.Err)
		}
		ev.Msg(r.Summary)
	}
	log.Info().Str("node", rep.Node).Str("mode", string(rep.Mode)).Bool("healthy", rep.Healthy).
		Int("failed", len(rep.Failed())).Dur("duration", rep.Duration).Msg("run finished")
}
