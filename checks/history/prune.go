package history

import (
	"slices"
	"time"
)

// prune drops what Limits no longer allow, oldest first (by age as ageOut tells it, which
// spares what came before a jump of the clock forward). Entries of the current boot are
// exempt from MaxAge (a reset-class XID stays in force for as long as the boot lasts, and so
// must the clears, resets and driver loads that could end it), and the per-GPU XID cap spares
// the first and the newest record of each XID since the GPU's last clear, on which the
// sticky judgement stands.
func (h *History) prune(now time.Time, lim Limits) {
	old := h.ageOut(now, lim)
	cur := h.currentN()
	curStart := int64(-1) << 62
	if b := h.current(); b != nil {
		curStart = b.FirstSeen
		if b.Time > 0 {
			curStart = min(curStart, b.Time)
		}
	}
	for i := range h.GPUs {
		g := &h.GPUs[i]
		g.XIDs = slices.DeleteFunc(g.XIDs, func(x XID) bool { return x.Boot != cur && old(x.TLast) })
		h.capXIDs(g, cur, lim.XIDsPerGPU)
		g.Samples = dropOld(g.Samples, func(s Sample) bool { return s.Boot != cur && old(s.T) }, true)
		capSamples(g, lim.SamplesPerGPU)
		g.Resets = dropOld(g.Resets, func(r Reset) bool { return r.Boot != cur && old(r.T) }, false)
		g.Resets = keepNewest(g.Resets, lim.ResetsPerGPU)
	}
	h.GPUs = slices.DeleteFunc(h.GPUs, func(g GPU) bool {
		return old(g.LastSeen) && len(g.XIDs) == 0 && len(g.Samples) == 0 && len(g.Resets) == 0
	})
	if n := len(h.GPUs) - lim.GPUs; n > 0 {
		slices.SortStableFunc(h.GPUs, func(a, b GPU) int { return cmpSeen(a.LastBoot == cur, b.LastBoot == cur, a.LastSeen, b.LastSeen) })
		h.GPUs = h.GPUs[n:]
	}
	for i := range h.Ports {
		p := &h.Ports[i]
		p.States = dropOld(p.States, func(s PortState) bool { return s.Boot != cur && old(s.Until) }, true)
		p.States = keepNewest(p.States, lim.StatesPerPort)
		p.Events = dropOld(p.Events, func(e LinkEvent) bool { return e.Boot != cur && old(e.T) }, false)
		p.Events = keepNewest(p.Events, lim.EventsPerPort)
		p.Downed = dropOld(p.Downed, func(c Count) bool { return c.Boot != cur && old(c.T) }, true)
		p.Downed = keepNewest(p.Downed, lim.DownedPerPort)
	}
	h.Ports = slices.DeleteFunc(h.Ports, func(p Port) bool {
		return old(p.LastSeen) && len(p.States) == 0 && len(p.Events) == 0 && len(p.Downed) == 0
	})
	if n := len(h.Ports) - lim.Ports; n > 0 {
		slices.SortStableFunc(h.Ports, func(a, b Port) int { return cmpSeen(a.LastBoot == cur, b.LastBoot == cur, a.LastSeen, b.LastSeen) })
		h.Ports = h.Ports[n:]
	}
	h.Clears = dropOld(h.Clears, func(c Clear) bool { return old(c.At) && c.At < curStart }, false)
	h.Clears = keepNewest(h.Clears, lim.Clears)
	h.Repairs = dropOld(h.Repairs, func(r Repair) bool { return old(r.Started) && r.Outcome != OutcomePending }, false)
	h.Repairs = keepNewest(h.Repairs, lim.Repairs)
	h.pruneValidations(lim.Validations)
	if len(h.Boots) > 0 {
		last := h.Boots[len(h.Boots)-1]
		h.Boots = slices.DeleteFunc(h.Boots[:len(h.Boots)-1], func(b Boot) bool { return old(b.LastSeen) })
		h.Boots = keepNewest(append(h.Boots, last), max(lim.Boots, 1))
	}
	h.pruneClock(now, lim, old)
}

// pruneClock forgets a clock fault once its warning is long over, and a jump forward once
// nothing recorded before it is left to age.
func (h *History) pruneClock(now time.Time, lim Limits, old func(int64) bool) {
	c := &h.Clock
	if c.Found != 0 && old(c.Found) {
		c.Found, c.Newest, c.Shift, c.Measured, c.Dropped = 0, 0, 0, false, 0
	}
	if c.JumpTo != 0 && (c.JumpTo > now.Unix() || now.Add(-lim.MaxAge).Unix()-(c.JumpTo-c.JumpFrom) > c.JumpFrom) {
		c.JumpFrom, c.JumpTo = 0, 0
	}
}

// dropOld deletes the entries old says are too old; keepLast spares the newest entry, which
// a rate or a state change needs as its latest point.
func dropOld[T any](s []T, old func(T) bool, keepLast bool) []T {
	if len(s) == 0 {
		return s
	}
	if !keepLast {
		return slices.DeleteFunc(s, old)
	}
	last := s[len(s)-1]
	return append(slices.DeleteFunc(s[:len(s)-1], old), last)
}

// keepNewest keeps the last n entries of s (oldest first), at least one.
func keepNewest[T any](s []T, n int) []T {
	n = max(n, 1)
	if len(s) <= n {
		return s
	}
	return slices.Delete(s, 0, len(s)-n)
}

// capXIDs bounds g's XID records, dropping the oldest record that no sticky judgement needs.
func (h *History) capXIDs(g *GPU, cur, n int) {
	n = max(n, 1)
	if len(g.XIDs) <= n {
		return
	}
	since := h.clearedAt(*g)
	for len(g.XIDs) > n {
		keep := protectedXIDs(g.XIDs, cur, since)
		victim := slices.Index(keep, false)
		if victim < 0 {
			victim = 0
		}
		g.XIDs = slices.Delete(g.XIDs, victim, victim+1)
	}
}

// protectedXIDs marks, in the current boot, the first and the newest record of each XID
// after since.
func protectedXIDs(xs []XID, cur int, since int64) []bool {
	keep := make([]bool, len(xs))
	first, last := map[int]int{}, map[int]int{}
	for i, x := range xs {
		if x.Boot != cur || x.TLast < since {
			continue
		}
		if _, ok := first[x.XID]; !ok {
			first[x.XID] = i
		}
		last[x.XID] = i
	}
	for _, i := range first {
		keep[i] = true
	}
	for _, i := range last {
		keep[i] = true
	}
	return keep
}

// capSamples bounds g's samples by dropping, among the readings inside a series, the one
// whose neighbours are closest together: the newest readings thin out least where runs are
// sparse, and a series' first and last reading always stay, so no rate spans a restart.
func capSamples(g *GPU, n int) {
	n = max(n, 2)
	for len(g.Samples) > n {
		s := g.Samples
		victim, gap := -1, int64(0)
		for i := 1; i < len(s)-1; i++ {
			if s[i].Gen != s[i-1].Gen || s[i+1].Gen != s[i].Gen {
				continue
			}
			if d := s[i+1].T - s[i-1].T; victim < 0 || d < gap {
				victim, gap = i, d
			}
		}
		if victim < 0 {
			victim = 0
		}
		g.Samples = slices.Delete(g.Samples, victim, victim+1)
	}
}

// halved is lim with every cap and MaxAge halved (not below 1 and 1 h): Encode's way to make
// a file that is still over MaxBytes fit.
func (lim Limits) halved() Limits {
	h := func(n int) int { return max(n/2, 1) }
	lim.XIDsPerGPU, lim.SamplesPerGPU, lim.ResetsPerGPU = h(lim.XIDsPerGPU), h(lim.SamplesPerGPU), h(lim.ResetsPerGPU)
	lim.StatesPerPort, lim.EventsPerPort, lim.DownedPerPort = h(lim.StatesPerPort), h(lim.EventsPerPort), h(lim.DownedPerPort)
	// GPUs and Ports are not halved: a node's devices are what the history is about, and
	// their number is bounded by the hardware.
	lim.Boots, lim.Clears, lim.Repairs = h(lim.Boots), h(lim.Clears), h(lim.Repairs)
	lim.Validations = h(lim.Validations)
	lim.MaxAge = max(lim.MaxAge/2, time.Hour)
	return lim
}

// cmpSeen orders devices for the cap: those not seen in the current boot first, then by
// when they were last seen, so that the cap drops them first.
func cmpSeen(aCur, bCur bool, a, b int64) int {
	if aCur != bCur {
		if aCur {
			return 1
		}
		return -1
	}
	return cmpInt(a, b)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
