package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/preempt"
)

func newPreemptWindowCmd(g *globals) *cobra.Command {
	o := preempt.Options{Window: preempt.DefaultWindow, SlurmBin: "/usr/bin"}
	var partitions []string
	cmd := &cobra.Command{
		Use:   "preempt-window --partition P --preemptor-partition HP --node NODE --dir DIR",
		Short: "Measure the time a preempted job gets between Slurm's first signal and its end",
		Long: `preempt-window submits, on --node (idle, or in --reservation), a test job in each
--partition (and --qos) that takes the whole node and whose application records every SIGTERM,
SIGCONT and SIGTSTP it receives and leaves a sign of life every 100 ms in --dir (a directory
the node and this host both see), then a job of one CPU (the whole node with
--preemptor-exclusive) in --preemptor-partition (and --preemptor-qos) that preempts it. It
reports the time from the first signal to the application's end (requeue, cancel, or
suspension: SIGSTOP, when the signs of life stop while Slurm says SUSPENDED) beside the grace
time the configuration promises, and fails where the time is less than --window (the
deployment checklist's 180 s by default). Both jobs are its own and are cancelled when it is
done; it never touches other jobs.

Slurm ends a preempted job at its first check of time limits after GraceTime is over
(every 30 s), so the measured window is GraceTime to GraceTime + 30 s, plus KillWait. SUSPEND
sends SIGTSTP, then SIGSTOP after PreemptParameters=suspend_grace_time (2 s by default, and
fixed before Slurm 23.02.5); GraceTime does not apply to it. A line says WARN where the window
is more than 1 s shorter than the configured grace time: with GANG in PreemptMode, a
preempting job that does not take the whole node ends a REQUEUE or CANCEL job without
GraceTime. SUSPEND needs --mem where memory is a consumable resource. See
/usr/share/doc/nodecheck/docs/checklist.md.

Exit codes: 0 every window is long enough, 1 one is short, 2 it could not measure.`,
		Example: `  nodecheck preempt-window --partition low --preemptor-partition high --node gpu001 --dir /shared/tmp
  nodecheck preempt-window --partition suspendable --preemptor-partition high --node gpu001 --dir /shared/tmp --mem 1024
  nodecheck preempt-window --partition gpu --qos scavenger --preemptor-qos normal --node gpu001 --reservation maint --dir /shared/tmp --window 5m`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.watch.Listen() // a signal cancels the context: the test jobs are still cancelled
			if code := runPreemptWindow(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, partitions); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&partitions, "partition", nil, "partition of the job to preempt (repeat or comma-separate to measure several, one after the other)")
	f.StringVar(&o.QOS, "qos", "", "QOS of the job to preempt")
	f.StringVar(&o.PreemptorPartition, "preemptor-partition", "", "partition of the preempting job (default: the same)")
	f.StringVar(&o.PreemptorQOS, "preemptor-qos", "", "QOS of the preempting job")
	f.BoolVar(&o.PreemptorExclusive, "preemptor-exclusive", false, "the preempting job takes the whole node (--exclusive) instead of one CPU")
	f.IntVar(&o.MemMB, "mem", 0, "--mem in MB for both jobs (SUSPEND: both must fit in the node's memory side by side)")
	f.StringVar(&o.Node, "node", "", "node to run both jobs on: idle, or in --reservation")
	f.StringVar(&o.Reservation, "reservation", "", "reservation both jobs run in")
	f.StringVar(&o.Dir, "dir", "", "directory the node and this host both see, for the test job's record")
	f.DurationVar(&o.Window, "window", o.Window, "the least time the application must get between the first signal and its end")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long to wait for one preemption (default 10m)")
	f.StringVar(&o.SlurmBin, "slurm-bin", o.SlurmBin, "directory of sbatch, squeue, scancel and sinfo")
	return cmd
}

// runPreemptWindow measures each partition in turn and prints one line each; it returns the
// exit code.
func runPreemptWindow(ctx context.Context, stdout, stderr io.Writer, o preempt.Options, partitions []string) int {
	if len(partitions) == 0 {
		fmt.Fprintln(stderr, "nodecheck preempt-window: --partition is required")
		return exitCannotRun
	}
	code := exitHealthy
	for _, p := range partitions {
		o.Partition = p
		m, err := preempt.Measure(ctx, o)
		if err != nil {
			fmt.Fprintf(stderr, "nodecheck preempt-window: %s: %v\n", p, err)
			return exitCannotRun
		}
		v := preempt.Judge(m)
		status := "OK  "
		switch {
		case !v.OK:
			status, code = "FAIL", exitUnhealthy
		case v.BelowPromise:
			status = "WARN"
		}
		fmt.Fprintf(stdout, "%s %s (jobs %s and %s on %s; signals %s)\n", status, v.Summary, m.Victim, m.Preemptor, m.Node, strings.Join(m.Signals, ", "))
	}
	return code
}
