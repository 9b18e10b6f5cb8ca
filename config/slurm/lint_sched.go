package slurm

// Two scheduling pitfalls of the checklist about how far backfill looks and what multifactor
// priority weighs (lint_pitfalls.go has the others).

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Backfill's window: SchedulerParameters=bf_window=N, in minutes (src/plugins/sched/backfill/
// backfill.c: BACKFILL_WINDOW, MAX_BACKFILL_WINDOW; slurm.conf(5) "Default: 1440 (1 day),
// Min: 1, Max: 43200 (30 days)").
const (
	defaultBackfillWindow = 1440 * time.Minute
	maxBackfillWindow     = 43200 * time.Minute
)

// backfillWindow returns the window backfill plans with, as backfill.c reads it: the first
// "bf_window=" anywhere in SchedulerParameters (xstrcasestr), its leading digits (atoi), in
// minutes; a value out of 1 to 43200 minutes gives the default, and bad is the value then.
func backfillWindow(params string) (window time.Duration, set bool, bad string) {
	i := strings.Index(strings.ToLower(params), "bf_window=")
	if i < 0 {
		return defaultBackfillWindow, false, ""
	}
	v := params[i+len("bf_window="):]
	if j := strings.IndexByte(v, ','); j >= 0 {
		v = v[:j]
	}
	digits := 0
	for digits < len(v) && digits < 9 && v[digits] >= '0' && v[digits] <= '9' {
		digits++
	}
	n, _ := strconv.Atoi(v[:digits])
	if w := time.Duration(n) * time.Minute; n >= 1 && w <= maxBackfillWindow {
		return w, true, ""
	}
	return defaultBackfillWindow, true, v
}

// checkBackfillWindow: a backfill window shorter than the longest time limit a partition
// gives (MaxTime, or DefaultTime where that is longer). slurm.conf(5) on bf_window: "A value
// at least as long as the highest allowed time limit is generally advisable to prevent job
// starvation": backfill does not plan past the window, so a job longer than it is never
// given a reserved start and waits behind the smaller jobs it lets through. Unlimited limits
// (MaxTime's default) are left out: no window covers them.
func (l *linter) checkBackfillWindow() {
	if s, ok := l.sc.Setting("SchedulerType"); ok && !strings.EqualFold(s.Value, "sched/backfill") {
		return // checkScheduler reports it; there is no backfill
	}
	params, hasParams := l.sc.Setting("SchedulerParameters")
	window, set, bad := backfillWindow(params.Value)
	if bad != "" {
		l.emit(SeverityWarning, params.Pos, "SchedulerParameters=%s: bf_window=%s is not a whole number of minutes from 1 to 43200: slurmctld logs \"Invalid SchedulerParameters bf_window\" and uses 1440 (1 day): set bf_window to the longest MaxTime in minutes",
			params.Value, bad)
	}
	longest, at, key := time.Duration(0), -1, ""
	for pi, p := range l.sc.Partitions {
		for _, k := range []struct {
			name string
			d    time.Duration
		}{{"MaxTime", p.MaxTime}, {"DefaultTime", p.DefaultTime}} {
			if k.d != UnlimitedTime && k.d > longest {
				longest, at, key = k.d, pi, k.name
			}
		}
	}
	if at < 0 || window >= longest {
		return
	}
	p := l.sc.Partitions[at]
	pos, what := p.Set[key], "the default bf_window of 1440 minutes (1 day; SchedulerParameters "
	switch {
	case set && bad != "":
		pos, what = params.Pos, "the default bf_window Slurm uses instead, 1440 minutes (1 day; SchedulerParameters "
	case set:
		pos, what = params.Pos, fmt.Sprintf("bf_window=%d minutes (", int(window.Minutes()))
	}
	if hasParams {
		what += "at " + ref(params.Pos) + ")"
	} else {
		what += "not set)"
	}
	mins := int(longest.Minutes())
	fix := fmt.Sprintf("add bf_window=%d to SchedulerParameters (raising bf_resolution with it keeps backfill's work bounded)", mins)
	if longest > maxBackfillWindow {
		fix = fmt.Sprintf("bf_window cannot exceed 43200 minutes (30 days): set SchedulerParameters bf_window=43200 and a MaxTime of 30 days or less (%s is %d minutes)", slurmTimeText(longest), mins)
	}
	l.emit(SeverityWarning, pos, "PartitionName=%s %s=%s (%d minutes, at %s) is longer than %s: backfill plans no further ahead, so a job of that length is never given a reserved start and can wait indefinitely behind the smaller jobs backfill starts first (slurm.conf(5): bf_window at least as long as the highest allowed time limit): %s",
		p.Name, key, slurmTimeText(longest), mins, ref(p.Set[key]), what, fix)
}

// checkFairshare: multifactor priority with no weight on fair share, on a cluster whose
// accounting (slurmdbd) records the usage fair share is computed from. slurm.conf(5):
// PriorityWeightFairshare "Requires AccountingStorageType=accounting_storage/slurmdbd. The
// default value is 0."
func (l *linter) checkFairshare() {
	pt, ok := l.sc.Setting("PriorityType")
	if !ok || !strings.EqualFold(strings.TrimSpace(pt.Value), "priority/multifactor") {
		return
	}
	acct, ok := l.sc.Setting("AccountingStorageType")
	if !ok || !strings.EqualFold(strings.TrimSpace(acct.Value), "accounting_storage/slurmdbd") {
		return // without slurmdbd there is no usage to share fairly
	}
	pos, what := pt.Pos, "PriorityWeightFairshare unset (its default is 0)"
	if w, ok := l.sc.Setting("PriorityWeightFairshare"); ok {
		n, err := strconv.ParseUint(strings.TrimSpace(w.Value), 10, 32)
		if err != nil || n > 0 {
			return // a weight, or a value Slurm itself refuses
		}
		pos, what = w.Pos, "PriorityWeightFairshare="+w.Value
	}
	l.emit(SeverityWarning, pos, "PriorityType=%s (%s) with %s: fair share adds nothing to a job's priority, though AccountingStorageType=%s (%s) records the usage it is computed from, so the heaviest users' jobs rank with everyone's: set PriorityWeightFairshare=10000 (the example of Slurm's priority_multifactor.shtml; fair-share factors differ by 0.001 or less, so the weight must be large)",
		pt.Value, ref(pt.Pos), what, acct.Value, ref(acct.Pos))
}
