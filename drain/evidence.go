package drain

import (
	"fmt"
	"slices"
	"strings"
)

// Status is a check's verdict as drain reads it; the words are checks.Status's, so the CLI
// converts one to the other (drain never imports checks).
type Status string

// The statuses.
const (
	StatusOK    Status = "ok"
	StatusWarn  Status = "warn"
	StatusFail  Status = "fail"
	StatusError Status = "error"
	StatusSkip  Status = "skip"
)

// CheckResult is one check's verdict in a run.
type CheckResult struct {
	Check   string // the check id: "ib_ports"
	Status  Status
	Summary string // one line: why
	Remedy  string // a failure's remedy (checks.Remedy's words); empty for none
}

// Failures lists what makes the node unhealthy, in run order: the checks that failed, and
// those that could not decide when errorIsFailure (error_is_failure) says those count.
func Failures(results []CheckResult, errorIsFailure bool) []Failure {
	var out []Failure
	for _, r := range results {
		if r.Status == StatusFail || errorIsFailure && r.Status == StatusError {
			out = append(out, Failure{Check: r.Check, Summary: r.Summary, Remedy: r.Remedy})
		}
	}
	return out
}

// effect is what a run does to a node's count of clean runs.
type effect int

const (
	effectKeep  effect = iota // neither counts nor breaks the row
	effectCount               // one more clean run
	effectReset               // the row is broken: start again from 0
)

// evidence is the judgement of one run for resuming: its effect on the count and why.
type evidence struct {
	Effect effect
	Why    string // for the outcome's message: what this run showed, or failed to
}

// judgeRun is the rule for resuming on evidence. A node nodecheck drained is resumed only
// after resume_after_passes runs in a row in which every check that drained it (drainedBy)
// looked again and found the fault gone. In order:
//
//	the run failed (a failure by the run's own rule)                  -> reset
//	a check in drainedBy said error ("could not look")                -> reset
//	a check in drainedBy said skip ("did not look")                   -> reset
//	a check in drainedBy did not run, in a full run                   -> reset
//	a partial run (--check), whatever it ran                          -> keep (does not count)
//	another check said error: the run is undecided                    -> keep (does not count)
//	otherwise (every check in drainedBy said ok or warn)              -> count
//
// ok and warn both count: a check that warns looked and judged the node below the level that
// drains, and a warning never drains. A run that could not look at the fault breaks the row
// (reset), so "consecutive" means consecutive looks: a GPU that NVML can read only every other
// run has not shown that it is well. A run that is not a full, decided look at the node
// (partial, or undecided through another check: docs/output.md) adds
// nothing and takes nothing away; only a run that counts may resume the node (decide).
func judgeRun(drainedBy []string, results []CheckResult, failures []Failure, partial bool) evidence {
	if len(failures) > 0 {
		return evidence{effectReset, fmt.Sprintf("%s failed", failures[0].Check)}
	}
	for _, id := range drainedBy {
		i := slices.IndexFunc(results, func(r CheckResult) bool { return r.Check == id })
		switch {
		case i < 0 && partial:
			continue
		case i < 0:
			return evidence{effectReset, fmt.Sprintf("%s, which drained the node, did not run", id)}
		}
		switch r := results[i]; r.Status {
		case StatusOK, StatusWarn:
		case StatusError:
			return evidence{effectReset, fmt.Sprintf("%s, which drained the node, could not look (error: %s)", id, cutLine(r.Summary))}
		case StatusSkip:
			return evidence{effectReset, fmt.Sprintf("%s, which drained the node, did not look (skip: %s)", id, cutLine(r.Summary))}
		default:
			return evidence{effectReset, fmt.Sprintf("%s, which drained the node, said %q", id, r.Status)}
		}
	}
	if partial {
		return evidence{effectKeep, "a partial run (--check) does not count"}
	}
	for _, r := range results {
		if r.Status == StatusError {
			return evidence{effectKeep, fmt.Sprintf("%s could not decide (error), so the run is undecided and does not count", r.Check)}
		}
	}
	if len(drainedBy) == 0 {
		return evidence{effectCount, "clean run"}
	}
	return evidence{effectCount, strings.Join(drainedBy, ", ") + " found the fault gone"}
}

// ReasonCheck returns the check id in a reason nodecheck wrote ("<prefix> <check>: <summary>",
// or "<prefix> <check> (+N more)", FormatReason): the word after the prefix, up to a colon or
// blank. ok is false when the prefix does not own the reason or no such word follows it.
func ReasonCheck(reason, prefix string) (check string, ok bool) {
	if !Owned(reason, prefix) {
		return "", false
	}
	rest := strings.TrimPrefix(reason[len(Sanitize(prefix)):], " ")
	end := strings.IndexAny(rest, ": ")
	if end < 0 {
		end = len(rest)
	}
	id := rest[:end]
	if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "" {
		return "", false
	}
	return id, true
}

// drainedBy is which checks the node waits on before nodecheck resumes it, and byHand a message
// when no run of the node's checks can ever show the fault gone. The check the reason names
// comes first; the record adds the checks that failed with it or since, when it belongs to the
// drain Slurm shows (the same reason, give or take a repair's tag and slurmctld's reboot words:
// ReasonBase). A node drained before nodecheck kept records, or by
// another nodecheck (a replay elsewhere), so waits on its reason's check. A reason naming no
// check, or one that is not among this nodecheck's checks (known; "fleet" from
// cmd/fleet-sweep), is resumed only by hand or by whoever drained it.
func drainedBy(rec nodeRecord, reason, prefix string, known []string) (ids []string, byHand string) {
	id, ok := ReasonCheck(reason, prefix)
	switch {
	case !ok:
		return nil, fmt.Sprintf("its reason %q names no check, so no run of nodecheck can show the fault gone", reason)
	case !slices.Contains(known, id):
		return nil, fmt.Sprintf("it was drained for %q, which is not one of this node's checks (a fleet sweep's drain, say), so no run of the node's own checks can show the fault gone", id)
	}
	ids = []string{id}
	if rec.Reason != "" && ReasonBase(rec.Reason) == ReasonBase(reason) {
		for _, c := range rec.DrainedBy {
			if !slices.Contains(ids, c) {
				ids = append(ids, c)
			}
		}
	}
	return ids, ""
}
