package history

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Segment is a rate between two readings of one counter series.
type Segment struct {
	From, To  int64 // Unix seconds
	Increase  int64
	PerHour   float64
	Readings  int // readings of the series within the window
	Available bool
}

// WorstRate is the highest rate of counter c over g's current series within window before
// now. The series is the readings of the current boot since the counters last restarted
// (Sample.Gen) and since after. Rates are taken backwards from the newest reading: each
// segment ends where the previous one began and starts at the newest reading at least
// minSpan before its end, so that readings seconds apart never make a rate; a segment counts
// while its end lies within the window. The rate of a segment is its increase divided by its
// length in hours: 100,000 more errors between readings an hour apart is 100,000/h, the same
// increase between readings a week apart is 595/h.
func WorstRate(g GPU, c Counter, cur int, after int64, now time.Time, minSpan, window time.Duration) Segment {
	s := g.Samples
	// in says whether reading i belongs to the series; the newest reading names its Gen.
	gen := -1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Boot == cur && s[i].C[c] >= 0 && s[i].T > after {
			gen = s[i].Gen
			break
		}
	}
	in := func(i int) bool { return s[i].Boot == cur && s[i].C[c] >= 0 && s[i].T > after && s[i].Gen == gen }
	prev := func(i int) int {
		for i--; i >= 0 && !in(i); i-- {
		}
		return i
	}
	worst := Segment{}
	e := prev(len(s))
	for i := e; i >= 0; i = prev(i) {
		worst.Readings++
	}
	span, cut := int64(minSpan/time.Second), now.Add(-window).Unix()
	for e >= 0 && s[e].T >= cut {
		b := prev(e)
		for b >= 0 && s[e].T-s[b].T < span {
			b = prev(b)
		}
		if b < 0 {
			break
		}
		inc := s[e].C[c] - s[b].C[c]
		rate := float64(inc) / (float64(s[e].T-s[b].T) / 3600)
		if !worst.Available || rate > worst.PerHour {
			worst = Segment{From: s[b].T, To: s[e].T, Increase: inc, PerHour: rate, Readings: worst.Readings, Available: true}
		}
		e = b
	}
	return worst
}

// JudgeRates judges the sampled counters of each GPU seen in the current boot: one
// judgement per counter at or over a limit ("rate_ecc_corrected", ...), else one per GPU
// ("rate"), ok when some counter has a rate, skip when none has one yet.
func (h *History) JudgeRates(now time.Time, r Rules) []Judgement {
	h = h.asOf(now)
	cur := h.currentN()
	var out []Judgement
	for _, g := range h.GPUs {
		if g.LastBoot != cur {
			continue
		}
		label, after := g.Label(), h.clearedAt(g)
		var rated, unrated []string
		found := false
		for c := range NumCounters {
			rule := r.Rates[c]
			if (rule.Warn <= 0 && rule.Fail <= 0) || !sampled(g, c, cur) {
				continue
			}
			seg := WorstRate(g, c, cur, after, now, r.MinSpan, r.RateWindow)
			if !seg.Available {
				unrated = append(unrated, c.String())
				continue
			}
			if j, bad := judgeRate(g, label, c, seg, rule, r); bad {
				out = append(out, j)
				found = true
				continue
			}
			rated = append(rated, c.ID()+" "+perHour(seg.PerHour))
		}
		if found || len(rated)+len(unrated) == 0 {
			continue
		}
		j := Judgement{Rule: "rate", Status: StatusOK, Target: "gpu", Key: g.Key(), Device: label, GPU: g.ID(),
			Observed: strings.Join(rated, ", "), Expected: "below each counter's limit"}
		switch {
		case len(rated) == 0:
			j.Status = StatusSkip
			j.Summary = fmt.Sprintf("%s: no counter rate yet (one reading of the series so far; a rate needs two at least %s apart)", label, human(r.MinSpan))
		case len(unrated) > 0:
			j.Summary = label + ": rates " + j.Observed + "; none yet for " + strings.Join(unrated, ", ")
		default:
			j.Summary = label + ": rates " + j.Observed
		}
		out = append(out, j)
	}
	return out
}

func sampled(g GPU, c Counter, cur int) bool {
	for _, s := range g.Samples {
		if s.Boot == cur && s.C[c] >= 0 {
			return true
		}
	}
	return false
}

// judgeRate judges one counter's worst rate; bad is false below the warn rate.
func judgeRate(g GPU, label string, c Counter, seg Segment, rule RateRule, r Rules) (Judgement, bool) {
	j := Judgement{Rule: "rate_" + c.ID(), Target: "gpu", Key: g.Key(), Device: label, GPU: g.ID(),
		Observed: perHour(seg.PerHour), Expected: "below " + limits(rule)}
	switch {
	case rule.Fail > 0 && seg.PerHour >= rule.Fail:
		j.Status = StatusFail
	case rule.Warn > 0 && seg.PerHour >= rule.Warn:
		j.Status = StatusWarn
	default:
		return Judgement{}, false
	}
	level, at := "warns", rule.Warn
	if j.Status == StatusFail {
		level, at = "fails", rule.Fail
	}
	j.Summary = fmt.Sprintf("%s: %s +%d in %s (%s) between %s and %s, %s at %s", label, c, seg.Increase,
		human(time.Duration(seg.To-seg.From)*time.Second), perHour(seg.PerHour), stamp(seg.From), stamp(seg.To), level, perHour(at))
	j.Since = unix(seg.From)
	j.Clear = fmt.Sprintf("no rate that high after %s (%s after the reading), a GPU reset, driver reload or reboot (the counters restart), or `nodecheck history clear --gpu %s`",
		stamp(seg.To+int64(r.RateWindow/time.Second)), human(r.RateWindow), g.Bus)
	return j, true
}

func perHour(v float64) string {
	if v >= 100 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64) + "/h"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "/h"
}

func limits(rule RateRule) string {
	switch {
	case rule.Warn > 0 && rule.Fail > 0:
		return perHour(rule.Warn) + " (warn), " + perHour(rule.Fail) + " (fail)"
	case rule.Fail > 0:
		return perHour(rule.Fail) + " (fail)"
	}
	return perHour(rule.Warn) + " (warn)"
}
