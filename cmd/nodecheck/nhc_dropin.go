package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/nhcdrop"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/rs/zerolog"
)

// runAsNHC is nodecheck started as nhc (a link named nhc, for HealthCheckProgram=/usr/sbin/nhc):
// NHC's command line and nhc.conf, then a run of every check with the generic ones set as
// nhc.conf sets them for this host (package nhcdrop; /usr/share/doc/nodecheck/docs/nhc.md).
// It runs in health mode, as NHC marks a node offline wherever it runs, unless slurmd
// started it as a prolog or epilog.
func runAsNHC(ctx context.Context, g *globals, args []string) int {
	plan, err := nhcdrop.Load(ctx, args, nhcdrop.Host{Hostname: os.Hostname})
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck (as nhc): %v\n", err)
		return exitCannotRun
	}
	for _, n := range plan.Options.Notes {
		fmt.Fprintf(g.stderr, "nodecheck (as nhc): %s\n", n)
	}
	fmt.Fprintln(g.stderr, plan.Describe())
	mode := run.DetectMode(g.getenv, g.argv0)
	if mode == config.ModeManual {
		mode = config.ModeHealth
	}
	out := run.Run(ctx, run.Options{
		EnvOptions: run.EnvOptions{
			Mode: mode, Argv0: g.argv0, NodeName: plan.Options.Hostname, ConfigPath: plan.Options.NodecheckConfig, Getenv: g.getenv,
			GPUSource: newGPUSource(), Checks: append(checks.All(), plan.Check()),
			Adjust: plan.Adjust, Start: g.watch.Start(),
		},
		Version: versionString(),
		Logger:  func(lc config.LogConfig) (zerolog.Logger, func()) { return newLogger(g.stderr, lc) },
		Arm:     g.watch.Arm,
	})
	if out.Err != nil {
		fmt.Fprintf(g.stderr, "nodecheck (as nhc): %v\n", out.Err)
		return out.Exit
	}
	if err := writeReport(g.stdout, out, runOpts{format: "text"}); err != nil {
		fmt.Fprintf(g.stderr, "nodecheck (as nhc): write report: %v\n", err)
		return exitCannotRun
	}
	return out.Exit
}
