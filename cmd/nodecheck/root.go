package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/nhcdrop"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/spf13/cobra"
)

// Exit codes, one table for every verb (docs/output.md); run's come from the checks
// library, which decides them per verdict and mode (checks.ExitCode).
const (
	exitHealthy   = run.ExitHealthy   // healthy, or nothing wrong found
	exitUnhealthy = run.ExitUnhealthy // a check failed (lint: an error-severity problem)
	exitCannotRun = run.ExitCannotRun // usage error, unreadable or invalid input, nodecheck could not run
	exitUndecided = run.ExitUndecided // run: no check failed, but one could not decide
)

// exitError carries an exit code out of a cobra RunE.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are what every verb may need from the process.
type globals struct {
	argv0  string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// watch ends the process when the run overstays its budget (nil in tests: no watchdog).
	watch *run.Watchdog
}

// execute runs nodecheck with argv and returns the exit code. With no arguments (as slurmd
// starts Prolog=, Epilog= and HealthCheckProgram=) it runs the checks for the detected mode.
func execute(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return executeWith(ctx, nil, argv, stdin, stdout, stderr, getenv)
}

// executeWith is execute with the process's watchdog (main.go), which the run arms once it
// knows its mode and budget.
func executeWith(ctx context.Context, wd *run.Watchdog, argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	g := &globals{argv0: argv[0], stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, watch: wd}
	if nhcdrop.IsNHC(argv[0]) {
		return runAsNHC(ctx, g, argv[1:])
	}
	args := argv[1:]
	if len(args) == 0 || filepath.Base(argv[0]) == "nodecheck-health" && (len(args) == 0 || args[0] != "help") {
		args = append([]string{"run"}, args...)
	}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck: %v\n", err)
		return exitCannotRun
	}
	return exitHealthy
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "nodecheck",
		Short: "Health checks for Slurm GPU nodes; drains a node with an actionable reason",
		Long: `nodecheck decides whether a Slurm GPU node is fit to run jobs: it compares what the
node should have (slurm.conf, gres.conf, nodecheck.toml) with what it has (device files,
InfiniBand ports, GPUs) in a fixed order of fast checks, and reports every result.

In slurm.conf:
  Prolog=/usr/sbin/nodecheck               (mode from SLURM_SCRIPT_CONTEXT)
  Epilog=/usr/sbin/nodecheck
  HealthCheckProgram=/usr/sbin/nodecheck-health

By hand:
  nodecheck run --all                      every check, as a table
  nodecheck run --snapshot DIR             replay a recorded node
  nodecheck lint                           slurm.conf against gres.conf

Exit codes: 0 healthy, 1 unhealthy (a check failed), 2 nodecheck could not run,
3 undecided (no check failed, but one could not look; a prolog or epilog exits 0 then).

The admin's guide is /usr/share/doc/nodecheck/README.md; the manual by topic starts at
/usr/share/doc/nodecheck/docs/README.md.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.AddCommand(newRunCmd(g), newListCmd(g), newLintCmd(), newSnapshotCmd(g), newVersionCmd(g), newConfigCmd(g), newExplainCmd(g))
	root.AddCommand(buildTimeCommands()...)
	root.AddCommand(newImportNvidiaSMICmd(g))
	root.AddCommand(newImportNHCCmd(g))
	root.AddCommand(newTopologyCmd(g))
	root.AddCommand(newHistoryCmd(g))
	root.AddCommand(newDrillCmd(g))
	root.AddCommand(newValidateCmd(g))
	root.AddCommand(newPreemptWindowCmd(g))
	return root
}

// usageError marks an error as the user's: cobra prints usage only for these.
func usageError(cmd *cobra.Command, format string, a ...any) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "nodecheck: "+format+"\n", a...)
	fmt.Fprintf(cmd.ErrOrStderr(), "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitError{exitCannotRun}
}
