package checks

import (
	"context"
	"errors"
)

// Verdict is what a whole run says about the node (docs/output.md): never two values,
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
