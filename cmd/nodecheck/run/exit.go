package run

import (
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
)

// Exit codes of `nodecheck run`, one table (docs: exit codes).
const (
	ExitHealthy   = 0 // healthy (and, in prolog and epilog, undecided or an unusable config)
	ExitUnhealthy = 1 // a check failed
	ExitCannotRun = 2 // usage error, a named path that does not exist, an unusable config
	ExitUndecided = 3 // no check failed but one could not decide (Nagios' UNKNOWN)
)

// ExitCode is the exit code for a run's verdict in mode m, before any drain action: a
// prolog or epilog that could not decide exits 0, since a non-zero exit would make Slurm
// drain the node for a fault nobody saw (and, were the cause a nodecheck bug or a fleet-wide
// outage of what it reads, every node); the run says so in its log line, report and
// metrics. Every other mode exits 3. error_is_failure turns the errors into failures
// before this (checks.VerdictUnhealthy).
func ExitCode(v checks.Verdict, m config.Mode) int {
	switch v {
	case checks.VerdictHealthy:
		return ExitHealthy
	case checks.VerdictUnhealthy:
		return ExitUnhealthy
	}
	if m.JobHook() {
		return ExitHealthy
	}
	return ExitUndecided
}

// ConfigErrorExitCode is the exit code when nodecheck.toml (or a Slurm file it names) cannot
// be used and no check runs: a prolog or epilog exits 0 unless the file says fail_closed
// (read leniently), so that one bad config pushed to the fleet fails no job; elsewhere
// nodecheck could not run (2).
func ConfigErrorExitCode(m config.Mode, failClosed bool) int {
	if m.JobHook() && !failClosed {
		return ExitHealthy
	}
	return ExitCannotRun
}
