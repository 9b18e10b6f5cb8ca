package history

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Downs are the times a port's link went down in the current boot after a clear, by source.
// Each source alone undercounts (a state read between runs misses a down and up between
// them; the kernel log says nothing for IPoIB ports; the syslog only when networkd manages
// the interface), so the judge takes the source that saw the most, never their sum, which
// would count one down twice.
type Downs struct {
	Kernel, Syslog, States, Counter []int64
}

// PortDowns collects p's downs in boot cur after after.
func PortDowns(p Port, cur int, after int64) Downs {
	var d Downs
	for _, e := range p.Events {
		if e.Up || e.Boot != cur || e.T <= after {
			continue
		}
		if e.Src == "kernel" {
			d.Kernel = append(d.Kernel, e.T)
		} else {
			d.Syslog = append(d.Syslog, e.T)
		}
	}
	for i := 1; i < len(p.States); i++ {
		a, b := p.States[i-1], p.States[i]
		if a.Boot == cur && b.Boot == cur && a.State == Active && b.State != Active && b.T > after {
			d.States = append(d.States, b.T)
		}
	}
	for i := 1; i < len(p.Downed); i++ {
		a, b := p.Downed[i-1], p.Downed[i]
		if a.Boot == cur && b.Boot == cur && b.V > a.V && b.T > after {
			for range min(b.V-a.V, 1000) {
				d.Counter = append(d.Counter, b.T)
			}
		}
	}
	return d
}

// Window is the most downs of one source within any window, the source and when they were;
// with atEnd it only looks at the window ending at end.
func (d Downs) Window(window time.Duration, end int64, atEnd bool) (n int, src string, from, to int64) {
	w := int64(window / time.Second)
	for _, s := range []struct {
		name string
		ts   []int64
	}{{"kernel log", d.Kernel}, {"syslog", d.Syslog}, {"port state", d.States}, {"link_downed", d.Counter}} {
		ts := slices.Clone(s.ts)
		slices.Sort(ts)
		for i := range ts {
			if atEnd && ts[i] <= end-w {
				continue
			}
			j := i
			for j+1 < len(ts) && ts[j+1]-ts[i] <= w && (!atEnd || ts[j+1] <= end) {
				j++
			}
			if c := j - i + 1; c > n {
				n, src, from, to = c, s.name, ts[i], ts[j]
			}
			if atEnd {
				break
			}
		}
	}
	return n, src, from, to
}

// JudgeFlaps judges each port seen in the current boot: its link going down FlapFail times
// within FlapWindow fails (and with FlapSticky stays failed until reboot or clear), once
// warns.
func (h *History) JudgeFlaps(now time.Time, r Rules) []Judgement {
	h = h.asOf(now)
	cur := h.currentN()
	var out []Judgement
	for _, p := range h.Ports {
		if p.LastBoot != cur && !slices.ContainsFunc(p.Events, func(e LinkEvent) bool { return e.Boot == cur }) {
			continue
		}
		out = append(out, h.judgeFlap(now, p, r, cur))
	}
	return out
}

func (h *History) judgeFlap(now time.Time, p Port, r Rules, cur int) Judgement {
	j := Judgement{Rule: "ib_flap", Target: "port", Key: p.Key(), Device: p.Label(), Port: p.ID(),
		Expected: "fewer than " + strconv.Itoa(r.FlapFail) + " link downs within " + human(r.FlapWindow)}
	d := PortDowns(p, cur, h.clearedKeyAt(p.Key()))
	n, src, from, to := d.Window(r.FlapWindow, now.Unix(), true)
	worst, wsrc, wfrom, wto := d.Window(r.FlapWindow, now.Unix(), false)
	cmd := "`nodecheck history clear --port " + p.Key() + "`"
	j.Observed = fmt.Sprintf("%d link downs within %s", n, human(r.FlapWindow))
	switch {
	case r.FlapFail > 0 && n >= r.FlapFail:
		j.Status = StatusFail
		j.Summary = fmt.Sprintf("%s: link went down %d times within %s (%s to %s, %s), fails at %d", p.Label(), n, human(r.FlapWindow), stamp(from), stamp(to), src, r.FlapFail)
		j.Clear = "fewer than " + strconv.Itoa(r.FlapFail) + " downs within " + human(r.FlapWindow) + ", or " + cmd
		j.Since = unix(from)
		if r.FlapSticky {
			j.Sticky = true
			j.Summary += "; sticky until reboot; clear with " + cmd
			j.Clear = "a reboot (new boot id), or " + cmd
		}
	case r.FlapSticky && r.FlapFail > 0 && worst >= r.FlapFail:
		j.Status, j.Sticky, j.Since = StatusFail, true, unix(wfrom)
		j.Observed = fmt.Sprintf("%d link downs within %s", worst, human(r.FlapWindow))
		j.Summary = fmt.Sprintf("%s: link went down %d times within %s (%s to %s, %s), fails at %d; sticky until reboot; clear with %s",
			p.Label(), worst, human(r.FlapWindow), stamp(wfrom), stamp(wto), wsrc, r.FlapFail, cmd)
		j.Clear = "a reboot (new boot id), or " + cmd
	case r.FlapWarn > 0 && n >= r.FlapWarn:
		j.Status, j.Since = StatusWarn, unix(from)
		j.Summary = fmt.Sprintf("%s: link went down %s within %s, last at %s (%s); fails at %d", p.Label(), times(n), human(r.FlapWindow), stamp(to), src, r.FlapFail)
		j.Clear = "no link down until " + stamp(to+int64(r.FlapWindow/time.Second)) + ", or " + cmd
	default:
		j.Status = StatusOK
		j.Summary = fmt.Sprintf("%s: no link down within %s", p.Label(), human(r.FlapWindow))
	}
	return j
}

// times is "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}
