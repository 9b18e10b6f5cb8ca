package checks

import (
	"context"
	"errors"

	"github.com/nodecheck/nodecheck/config"
)

// Verdict is what a whole run says about the node (DESIGN.md section 5): never two values,
// so that "could not look" is never read as healthy.
type Verdict string

// The verdicts.
const (
	// VerdictHealthy: every check that applies decided (ok, warn or skip) and none failed.
	VerdictHealthy Verdict = "healthy"
	// VerdictUnhealthy: a check failed (or, with error_is_failure, could not decide).
	VerdictUnhealthy Verdict = "unhealthy"
	// VerdictUndecided: none failed, but a check could not decide (error), the run was
	// interrupted, or nodecheck.toml was unusable and no check ran.
	VerdictUndecided Verdict = "undecided"
)

// Verdicts lists every verdict, in the order metrics and docs list them.
func Verdicts() []Verdict { return []Verdict{VerdictHealthy, VerdictUnhealthy, VerdictUndecided} }

// judgeRun is the verdict of a run's results: unhealthy when one failed (or errored, with
// errorIsFailure), else undecided when one errored or the run was interrupted, else healthy.
func judgeRun(results []Result, errorIsFailure, interrupted bool) Verdict {
	undecided := interrupted
	for _, r := range results {
		switch r.Status {
		case StatusFail:
			return VerdictUnhealthy
		case StatusOK, StatusWarn, StatusSkip:
		case StatusError:
			if errorIsFailure {
				return VerdictUnhealthy
			}
			undecided = true
		default: // a status this version does not know is not a decision
			undecided = true
		}
	}
	if undecided {
		return VerdictUndecided
	}
	return VerdictHealthy
}

// interrupted reports whether ctx ended because nodecheck was told to stop (SIGINT,
// SIGTERM), not because the budget ran out.
func interrupted(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }

// Exit codes of `nodecheck run`, one table (docs/output.md).
const (
	ExitHealthy   = 0 // healthy (and, in prolog and epilog, undecided or an unusable config)
	ExitUnhealthy = 1 // a check failed
	ExitCannotRun = 2 // usage error, a named path that does not exist, an unusable config
	ExitUndecided = 3 // no check failed but one could not decide (Nagios' UNKNOWN)
)

// isJobHook reports whether m runs around a job, where a non-zero exit makes slurmctld drain
// the node ("Prolog error", "Epilog error") and requeue the job.
func isJobHook(m config.Mode) bool { return m == config.ModeProlog || m == config.ModeEpilog }

// ExitCode is the exit code for a run's verdict in mode m, before any drain action: a
// prolog or epilog that could not decide exits 0, since a non-zero exit would make Slurm
// drain the node for a fault nobody saw (and, were the cause a nodecheck bug or a fleet-wide
// outage of what it reads, every node); the run says so in its log line, report and
// metrics. Every other mode exits 3. error_is_failure turns the errors into failures
// before this (VerdictUnhealthy).
func ExitCode(v Verdict, m config.Mode) int {
	switch v {
	case VerdictHealthy:
		return ExitHealthy
	case VerdictUnhealthy:
		return ExitUnhealthy
	}
	if isJobHook(m) {
		return ExitHealthy
	}
	return ExitUndecided
}

// ConfigErrorExitCode is the exit code when nodecheck.toml (or a Slurm file it names) cannot
// be used and no check runs: a prolog or epilog exits 0 unless the file says fail_closed
// (read leniently), so that one bad config pushed to the fleet fails no job; elsewhere
// nodecheck could not run (2).
func ConfigErrorExitCode(m config.Mode, failClosed bool) int {
	if isJobHook(m) && !failClosed {
		return ExitHealthy
	}
	return ExitCannotRun
}
