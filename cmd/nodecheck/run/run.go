// Package run is one `nodecheck run`, from start to end, in one place: the environment (the
// node's facts, nodecheck.toml, Slurm's files, the node's name, the job, the budget and the
// state directory, opened once), the checks, the node's history, drain, the repair step and
// the metrics, in that order. The CLI parses flags into Options, calls Run and prints the
// Outcome; nothing here parses a flag or writes a report to the terminal.
package run

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/report"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
	"github.com/rs/zerolog"
)

// Options are what the command line and the process say about one run.
type Options struct {
	EnvOptions
	// Partial says --check named the checks: such a run never counts as clean, and never
	// repairs.
	Partial bool
	// Drain, Resume and Repair are --drain, --resume and --repair: what a manual run or a
	// replay may do to the live node besides reporting (drain.Permissions, repair.Permitted).
	Drain, Resume, Repair bool
	// TestBed is --test-bed: a replay of another host's snapshot may repair this host (a test
	// bed whose GPUs are stand-ins). Without it such a replay repairs nothing.
	TestBed bool
	// PromFile is --prom-file: where the metrics go, instead of prom_file.
	PromFile string
	// Drill marks every series of the metrics with drill="1" (nodecheck drill's own file).
	Drill bool
	// Version is nodecheck's version, for the metrics.
	Version string
	// Logger makes the run's logger once the config says where logs go; nil logs nowhere.
	Logger func(config.LogConfig) (zerolog.Logger, func())
	// Arm is told the run's budget and fail_closed once the config has been read (or found
	// unusable): the CLI's watchdog ends the process when the run overstays. Nil: no watchdog.
	Arm func(mode config.Mode, budget time.Duration, failClosed bool)
}

// Outcome is what a run did: what the CLI prints, and the code it exits with.
type Outcome struct {
	Report checks.Report
	// Drain is drain's outcome; nil when the run may not act on the node (a manual run
	// without --drain or --resume). Repair likewise for the repair step.
	Drain  *drain.Outcome
	Repair *repair.Outcome
	// Exit is the process's exit code.
	Exit int
	// Err is set when nodecheck could not run (a usage error, a named path that does not
	// exist, an unusable config outside a hook): nothing else is to be printed but Err.
	Err error
}

// Run runs the checks as o says and acts on their verdict; see the package comment.
func Run(ctx context.Context, o Options) Outcome {
	log := zerolog.Nop()
	mode := o.Mode
	if mode == "" {
		mode = DetectMode(o.environ(), o.Argv0)
		o.Mode = mode
	}
	o.arm(mode, config.DefaultBudget().For(mode), false)
	env, setup, err := NewEnv(ctx, o.EnvOptions)
	var cfgErr *ConfigError
	if errors.As(err, &cfgErr) {
		o.arm(mode, config.DefaultBudget().For(mode), cfgErr.FailClosed)
		return o.configFailure(cfgErr, setup)
	}
	if err != nil {
		return Outcome{Exit: ExitCannotRun, Err: err}
	}
	defer setup.State.Close()
	o.arm(mode, env.Budget.Run, env.Config.FailClosed)
	if o.Logger != nil {
		var closeLog func()
		log, closeLog = o.Logger(env.Config.Log)
		defer closeLog()
	}
	replay := setup.Snapshot != nil
	list := o.Checks
	if list == nil {
		list = checks.All()
	}

	rep := checks.Run(ctx, env, list, env.RunOptions())
	logHistory(log, rep.History)
	if mode.Unattended() {
		// A person at a terminal reads the table; logs are for the hooks' unattended runs.
		logResults(log, rep)
	}
	// Drain before the report is written, which says what was done; and in a prolog before
	// exiting, so that the node carries nodecheck's reason rather than Slurm's "Prolog error".
	// One client for drain and repair: it asks scontrol its version once.
	client := drain.ClientFrom(env.Config, slurmConfForClients(ctx, o.environ(), env.Slurm, replay))
	out := Outcome{Report: rep}
	out.Drain, out.Exit = o.applyDrain(ctx, log, rep, env.Config, setup, client, ExitCode(rep.Verdict, mode))
	// Repairs act on what drain left: a node nodecheck drained (docs/repairs.md).
	out.Repair = o.applyRepair(ctx, log, rep, env, setup, client, out.Drain)
	writeMetrics(log, o.promFile(env.Config.PromFile, replay), rep, o.metricsOptions(env.Config, setup, out.Drain, out.Repair))
	return out
}

// arm tells the watchdog the run's budget, when there is one.
func (o Options) arm(mode config.Mode, budget time.Duration, failClosed bool) {
	if o.Arm != nil {
		o.Arm(mode, budget, failClosed)
	}
}

// configFailure ends a run whose config is unusable (a *ConfigError): no check ran, so the run
// is undecided. It is logged as an error (to stderr: the config's [log] is what failed),
// reported, and written to the metrics when there is a path for them (--prom-file, or
// prom_file read leniently from the broken file), so that a bad config pushed to the fleet
// shows on a dashboard. The exit code is ConfigErrorExitCode's: a prolog or epilog passes
// unless fail_closed says otherwise.
func (o Options) configFailure(e *ConfigError, setup Setup) Outcome {
	log := zerolog.Nop()
	if o.Logger != nil {
		var closeLog func()
		log, closeLog = o.Logger(config.LogConfig{Level: "info"})
		defer closeLog()
	}
	code := ConfigErrorExitCode(e.Mode, e.FailClosed)
	log.Error().Err(e.Err).Str("mode", string(e.Mode)).Str("verdict", string(checks.VerdictUndecided)).
		Bool("fail_closed", e.FailClosed).Int("exit", code).Msg("config is unusable; no check ran")
	rep := ConfigErrorReport(e, setup.StartedAt)
	writeMetrics(log, o.promFile(e.PromFile, o.SnapshotDir != ""), rep, report.MetricsOptions{Version: o.Version, Drill: o.Drill})
	out := Outcome{Report: rep, Exit: code}
	if code == ExitCannotRun {
		out.Err = e
	}
	return out
}

// ConfigErrorReport is the report of a run that could not use its config (a *ConfigError
// from NewEnv): no check ran, so it is undecided, never healthy.
func ConfigErrorReport(e *ConfigError, startedAt time.Time) checks.Report {
	return checks.Report{Node: e.Node, Mode: e.Mode, Verdict: checks.VerdictUndecided, StartedAt: startedAt, ConfigError: e.Err.Error()}
}

// promFile is where the run writes its metrics: --prom-file, else prom_file from the config,
// which a snapshot replay and a dry run leave alone (they must not write to this machine
// unless told to). "" writes none.
func (o Options) promFile(configured string, replay bool) string {
	if o.PromFile != "" {
		return o.PromFile
	}
	if replay || o.DryRun {
		return ""
	}
	return configured
}

// Discard is a logger factory that logs nowhere, for callers that only want the outcome.
func Discard(config.LogConfig) (zerolog.Logger, func()) { return zerolog.New(io.Discard), func() {} }
