package history

import (
	"fmt"
	"slices"
	"time"
)

// A node's clock can be wrong: a node that boots before NTP sets the time, with a hardware
// clock years ahead, writes its first runs' times into the history, and when NTP steps the
// clock back every later reading looks older than the newest one. Left alone, that blinds the
// rules for as long as the clock was ahead: a counter reading "not after the last" is left
// out (no rate, for years), a GPU reset or an admin clear before a future XID does not end
// it, and pruning keeps what it should drop. So a merge that finds times after its own moves
// them back (by the clock's error where the boot's start measures it), drops the counter
// readings it cannot place, and the judges warn that the clock went back; a judge handed a
// history with such times judges a copy moved back the same way. A jump forward by more than
// Limits.MaxAge (a long power-off, or a clock now ahead) is remembered so that pruning ages
// what came before it as if the jump had not happened.

// clockSlack is how far past the run's time the history may hold times without blaming the
// clock: runs of one node take turns under its lock, and a run that started a little before
// another may merge after it.
const clockSlack = 10 * time.Minute

// clockWarnFor is how long the judges warn after a merge found times after its own.
const clockWarnFor = 24 * time.Hour

// Clock is what the merges found wrong with the node's clock.
type Clock struct {
	// Found is the time of the run that found times after its own, Newest the newest time
	// the history held then; Shift is how far (seconds) they were moved back, Measured says
	// Shift is the clock's error measured on the boot's start (else it is the least shift
	// that puts them before the run or its boot), Dropped counts the counter readings left out.
	Found    int64 `json:"found,omitempty"`
	Newest   int64 `json:"newest,omitempty"`
	Shift    int64 `json:"shift,omitempty"`
	Measured bool  `json:"measured,omitempty"`
	Dropped  int   `json:"dropped,omitempty"`
	// JumpFrom and JumpTo are the times of two runs more than Limits.MaxAge apart: what was
	// recorded up to JumpFrom is aged as if the jump had not happened.
	JumpFrom int64 `json:"jump_from,omitempty"`
	JumpTo   int64 `json:"jump_to,omitempty"`
}

// settleClock is Merge's look at the clock, before anything of this run is merged: times
// after now (and clockSlack) are moved back, and a jump forward past lim.MaxAge is
// remembered for prune.
func (h *History) settleClock(now int64, bootID string, bootTime time.Time, lim Limits, rep *MergeReport) {
	if newest := h.newest(); newest > now+int64(clockSlack/time.Second) {
		bt := int64(0)
		if !bootTime.IsZero() {
			bt = bootTime.Unix()
		}
		h.moveBack(now, newest, bootID, bt)
		rep.Clock = h.Clock.describe(now)
		return
	}
	if prev := h.UpdatedAt; prev > 0 && now-prev > int64(lim.MaxAge/time.Second) {
		h.Clock.JumpFrom, h.Clock.JumpTo = prev, now
		rep.Notes = append(rep.Notes, fmt.Sprintf("the last run was at %s, %s before this one: if the node was not off that long, its clock is ahead (what came before is kept as if no time had passed)",
			stamp(prev), days(now-prev)))
	}
}

// moveBack moves every time of h after now (and clockSlack) back. The shift is the clock's
// error where it can be measured: the boot being merged (bootID) began, by this run's clock
// less its uptime, at bootTime, but the history recorded its start after now. Else it is the
// least shift that puts the newest time just before this run, or just before the boot being
// merged when that boot is new (what the history holds came before it); the counter readings
// moved then are dropped, since a rate needs their true times. No time is moved past now.
func (h *History) moveBack(now, newest int64, bootID string, bootTime int64) {
	limit := now + int64(clockSlack/time.Second)
	i := slices.IndexFunc(h.Boots, func(b Boot) bool { return b.ID == bootID && bootID != "" })
	var shift int64
	measured := i >= 0 && h.Boots[i].Time > limit && bootTime > 0
	if measured {
		shift = h.Boots[i].Time - bootTime
	} else {
		anchor := now
		if bootID != "" && i < 0 && bootTime > 0 {
			anchor = bootTime
		}
		shift = newest - (anchor - 1)
	}
	dropped := 0
	if !measured {
		for j := range h.GPUs {
			g := &h.GPUs[j]
			n := len(g.Samples)
			g.Samples = slices.DeleteFunc(g.Samples, func(s Sample) bool { return s.T > limit })
			dropped += n - len(g.Samples)
		}
	}
	h.eachTime(func(t *int64) {
		if *t > limit {
			*t = max(min(*t-shift, now), minTime)
		}
	})
	h.reorder()
	h.Clock = Clock{Found: now, Newest: newest, Shift: shift, Measured: measured, Dropped: dropped}
}

// newest is the latest time h holds.
func (h *History) newest() int64 {
	n := int64(0)
	h.eachTime(func(t *int64) { n = max(n, *t) })
	return n
}

// eachTime calls f with every time h holds (Unix seconds), leaving out the zeros that mean
// unknown. Kernel times are not wall times and are left alone.
func (h *History) eachTime(f func(*int64)) {
	g := func(t *int64) {
		if *t != 0 {
			f(t)
		}
	}
	g(&h.UpdatedAt)
	g(&h.SyslogMark.T)
	for i := range h.Boots {
		b := &h.Boots[i]
		g(&b.Time)
		g(&b.FirstSeen)
		g(&b.LastSeen)
	}
	for i := range h.GPUs {
		u := &h.GPUs[i]
		g(&u.FirstSeen)
		g(&u.LastSeen)
		for j := range u.XIDs {
			g(&u.XIDs[j].T)
			g(&u.XIDs[j].TLast)
		}
		for j := range u.Samples {
			g(&u.Samples[j].T)
		}
		for j := range u.Resets {
			g(&u.Resets[j].T)
		}
	}
	for i := range h.Ports {
		p := &h.Ports[i]
		g(&p.FirstSeen)
		g(&p.LastSeen)
		for j := range p.States {
			g(&p.States[j].T)
			g(&p.States[j].Until)
		}
		for j := range p.Events {
			g(&p.Events[j].T)
		}
		for j := range p.Downed {
			g(&p.Downed[j].T)
		}
	}
	for i := range h.Clears {
		g(&h.Clears[i].At)
	}
	for i := range h.Repairs {
		g(&h.Repairs[i].Started)
		g(&h.Repairs[i].Finished)
	}
}

// reorder puts h's lists back in time order after moveBack, which moves only the times
// after the run and may so put them before others, and keeps what validate asks: an XID's
// last line not before its first, a state's end not before its start, readings strictly in
// time order with their series numbered upwards.
func (h *History) reorder() {
	for i := range h.GPUs {
		g := &h.GPUs[i]
		for j := range g.XIDs {
			g.XIDs[j].TLast = max(g.XIDs[j].TLast, g.XIDs[j].T)
		}
		slices.SortStableFunc(g.XIDs, func(a, b XID) int { return cmpInt(a.T, b.T) })
		slices.SortStableFunc(g.Resets, func(a, b Reset) int { return cmpInt(a.T, b.T) })
		slices.SortStableFunc(g.Samples, func(a, b Sample) int { return cmpInt(a.T, b.T) })
		var kept []Sample
		gen, prevGen, prevBoot := 0, 0, 0
		for _, s := range g.Samples {
			if n := len(kept); n > 0 && s.T <= kept[n-1].T {
				continue
			}
			if len(kept) > 0 && (s.Gen != prevGen || s.Boot != prevBoot) {
				gen++
			}
			prevGen, prevBoot = s.Gen, s.Boot
			s.Gen = gen
			kept = append(kept, s)
		}
		g.Samples = kept
	}
	for i := range h.Ports {
		p := &h.Ports[i]
		for j := range p.States {
			p.States[j].Until = max(p.States[j].Until, p.States[j].T)
		}
		slices.SortStableFunc(p.States, func(a, b PortState) int { return cmpInt(a.T, b.T) })
		slices.SortStableFunc(p.Events, func(a, b LinkEvent) int { return cmpInt(a.T, b.T) })
		slices.SortStableFunc(p.Downed, func(a, b Count) int { return cmpInt(a.T, b.T) })
	}
	slices.SortStableFunc(h.Clears, func(a, b Clear) int { return cmpInt(a.At, b.At) })
	slices.SortStableFunc(h.Repairs, func(a, b Repair) int { return cmpInt(a.Started, b.Started) })
}

// asOf is h as the judges see it at now: h itself, or, when h holds times after now (a
// history read while the clock is behind the one that wrote it, before a merge moved them
// back), a copy with them moved back and the counter readings among them dropped.
func (h *History) asOf(now time.Time) *History {
	newest := h.newest()
	if newest <= now.Unix()+int64(clockSlack/time.Second) {
		return h
	}
	data, err := encodeJSON(h)
	if err != nil {
		return h
	}
	c, err := decodeJSON(data)
	if err != nil {
		return h
	}
	c.moveBack(now.Unix(), newest, "", 0)
	return c
}

// JudgeClock warns, for a day after a merge found times after its own, or when h holds
// such times now, that the node's clock went back (or was ahead): the judges then judge
// from times moved back, and a counter reading that could not be placed is left out.
func (h *History) JudgeClock(now time.Time) []Judgement {
	c := h.asOf(now).Clock
	ts := now.Unix()
	if c.Found == 0 || ts < c.Found || ts-c.Found >= int64(clockWarnFor/time.Second) {
		return nil
	}
	until := c.Found + int64(clockWarnFor/time.Second)
	return []Judgement{{Rule: "clock", Status: StatusWarn, Target: "node", Key: "clock", Device: "system clock",
		Summary: c.describe(ts), Since: unix(c.Found),
		Clear:    "no time after a run's own until " + stamp(until) + " (check that NTP or chrony sets the clock before nodecheck runs, and the hardware clock: hwclock --show)",
		Observed: "times up to " + stamp(c.Newest), Expected: "no time after the run's own"}}
}

// describe says what the clock did, as of a run at now.
func (c Clock) describe(now int64) string {
	run := "this run's time " + stamp(c.Found)
	if now != c.Found {
		run = "the time of the run at " + stamp(c.Found)
	}
	s := fmt.Sprintf("the history held times up to %s, after %s: the system clock went back, or was ahead then; they were moved back %s",
		stamp(c.Newest), run, days(c.Shift))
	if c.Measured {
		s += " (the clock's error, measured on the boot's start)"
	} else {
		s += " (the least that puts them before the run or its boot: the clock's error is not known)"
	}
	if c.Dropped > 0 {
		s += fmt.Sprintf("; %d counter readings from then left out (a rate needs their true times)", c.Dropped)
	}
	return s
}

// days writes a span of seconds as "1826 days" from two days on, else as Human does.
func days(s int64) string {
	if s >= 2*86400 {
		return fmt.Sprintf("%d days", s/86400)
	}
	return human(time.Duration(s) * time.Second)
}

// ageOut is prune's "too old" at now: older than MaxAge, except that what was recorded up to
// a jump forward (Clock.JumpFrom) ages as if the jump had not happened.
func (h *History) ageOut(now time.Time, lim Limits) func(t int64) bool {
	cut := now.Add(-lim.MaxAge).Unix()
	from, to := h.Clock.JumpFrom, h.Clock.JumpTo
	if to == 0 || to > now.Unix() || to <= from {
		return func(t int64) bool { return t < cut }
	}
	before := cut - (to - from)
	return func(t int64) bool {
		if t <= from {
			return t < before
		}
		return t < cut
	}
}
