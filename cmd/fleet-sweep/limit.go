package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nodecheck/nodecheck/config/text"
)

// A multi-node job that hangs (all_reduce_perf prints its header, then nothing: a rank stuck
// in NCCL's bootstrap, a link that passes no traffic) would hold its round until the phase's
// deadline, and its nodes would come back unresolved. So every multi-node job has a run limit,
// and a job that runs past it is cancelled and counts as a failed run, narrowed down like a
// slow or failing one:
//
//	limit = max(--multinode-min-job-limit, jobLimitFactor x the median run time of round 1's
//	        jobs that completed with exit status 0)
//
// Run times are measured at squeue's polls, from the first poll that shows the job running to
// the first that shows it ended: time spent pending is not the job's. In round 1 the limit
// holds from the first job that completes, over the runs completed so far, so that a hung set
// does not hold round 1 either; from round 2 on it is round 1's final figure. Until a job of
// round 1 completes there is no limit but the phase's deadline (--multinode-timeout): with
// nothing to compare with, a slow run and a hung one look the same. The factor leaves room for
// a set several times slower than the median (which the busbw threshold judges anyway), and
// the floor for NCCL's start-up, which varies more than the transfers.
const jobLimitFactor = 3

// runLimit is the rule above: 0 (no limit) without a run time.
func runLimit(times []time.Duration, floor time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	return max(floor, jobLimitFactor*medianTime(times))
}

// medianTime is the middle run time, or the mean of the two middle ones.
func medianTime(times []time.Duration) time.Duration {
	s := slices.Clone(times)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// jobLimit is the multi-node phase's run limit: round 1's completed run times, and the floor.
// A nil *jobLimit is no limit (the per-node sweep's jobs end with their deadline).
type jobLimit struct {
	floor time.Duration   // --multinode-min-job-limit
	times []time.Duration // run times of round 1's jobs that completed with exit status 0
	fixed bool            // round 1 is over: the limit no longer changes
}

// observe counts the run time of a job of round 1 that has just ended, when it completed with
// exit status 0.
func (l *jobLimit) observe(r *nodeRun) {
	if l == nil || l.fixed || r.State != "COMPLETED" || (r.ExitCode != "" && r.ExitCode != "0:0") {
		return
	}
	l.times = append(l.times, r.RunTime)
}

// limit is the run limit now; 0 for none.
func (l *jobLimit) limit() time.Duration {
	if l == nil {
		return 0
	}
	return runLimit(l.times, l.floor)
}

// why says how the limit came about, for the summary.
func (l *jobLimit) why() string {
	if l == nil {
		return ""
	}
	if len(l.times) == 0 {
		return fmt.Sprintf("none: no job of round 1 completed, so only --multinode-timeout bounds a run (--multinode-min-job-limit %s)", l.floor)
	}
	return fmt.Sprintf("%d x the median run %s of round 1's %d completed %s, at least --multinode-min-job-limit %s",
		jobLimitFactor, seconds(medianTime(l.times)), len(l.times), text.Plural(len(l.times), "job", "jobs"), l.floor)
}

// seconds prints a duration as the summary does: "61.0 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}
