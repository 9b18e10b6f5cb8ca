package history

import (
	"fmt"
	"strconv"
)

// checker keeps the first problem found, with the JSON path it was found at. Paths are built
// only for the message: checking a full file allocates nothing.
type checker struct{ err error }

// loc is where a value is: list[i].sub[j], as much of it as is set ("gpus[2].xids[5]").
type loc struct {
	list string
	i    int
	sub  string
	j    int
}

func (l loc) String() string {
	s := l.list
	if l.list != "" && l.i >= 0 {
		s += "[" + strconv.Itoa(l.i) + "]"
	}
	if l.sub != "" {
		s += "." + l.sub + "[" + strconv.Itoa(l.j) + "]"
	}
	return s
}

// fieldAt names field f of l: "gpus[2].xids[5].t".
func fieldAt(l loc, f string) string {
	if s := l.String(); s != "" {
		return s + "." + f
	}
	return f
}

func (c *checker) failf(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// when checks a Unix time; zero0 allows 0 ("unknown" or "not yet").
func (c *checker) when(l loc, f string, t int64, zero0 bool) {
	if (t == 0 && zero0) || (t >= minTime && t <= maxTime) {
		return
	}
	c.failf("%s: %d is not a time between 2000 and 2100", fieldAt(l, f), t)
}

func (c *checker) str(l loc, f, s string, n int) {
	if len(s) > n || !printable(s) {
		c.failf("%s: %.40q is not a line of printable ASCII of at most %d bytes", fieldAt(l, f), s, n)
	}
}

func (c *checker) in(l loc, f string, v, lo, hi int64) {
	if v < lo || v > hi {
		c.failf("%s: %d is out of range (%d to %d)", fieldAt(l, f), v, lo, hi)
	}
}

// validate checks every value of a decoded file against what Merge can write.
func validate(h *History) error {
	var c checker
	top := loc{i: -1}
	c.str(top, "node", h.Node, maxNodeLen)
	c.when(top, "updated_at", h.UpdatedAt, true)
	for i, b := range h.Boots {
		l := loc{list: "boots", i: i}
		c.in(l, "n", int64(b.N), 0, 1<<30)
		for _, o := range h.Boots[:i] {
			if o.N == b.N {
				c.failf("%s: boot %d listed twice", fieldAt(l, "n"), b.N)
			}
		}
		c.str(l, "id", b.ID, maxIDLen)
		if b.ID == "" {
			c.failf("%s: empty", fieldAt(l, "id"))
		}
		c.when(l, "time", b.Time, true)
		c.when(l, "first_seen", b.FirstSeen, false)
		c.when(l, "last_seen", b.LastSeen, false)
		c.in(l, "xid_mark", b.XIDMark, 0, maxCounter)
		c.in(l, "xid_lines", int64(b.XIDLines), 0, 1<<30)
		c.in(l, "link_mark", b.LinkMark, 0, maxCounter)
		for _, k := range b.DriverLoads {
			c.in(l, "driver_loads", k, 1, maxCounter)
		}
	}
	for i := range h.GPUs {
		validateGPU(&c, i, &h.GPUs[i])
	}
	for i := range h.Ports {
		validatePort(&c, i, &h.Ports[i])
	}
	for i, cl := range h.Clears {
		l := loc{list: "clears", i: i}
		if cl.Target != "all" && cl.Target != "gpu" && cl.Target != "port" {
			c.failf("%s: %q is not all, gpu or port", fieldAt(l, "target"), cl.Target)
		}
		c.str(l, "key", cl.Key, maxIDLen)
		c.str(l, "bus", cl.Bus, maxIDLen)
		c.str(l, "who", cl.Who, maxWhoLen)
		c.str(l, "reason", cl.Reason, maxReasonLen)
		c.when(l, "at", cl.At, false)
	}
	for i, r := range h.Repairs {
		l := loc{list: "repairs", i: i}
		if r.Target != "gpu" && r.Target != "node" {
			c.failf("%s: %q is not gpu or node", fieldAt(l, "target"), r.Target)
		}
		switch r.Outcome {
		case OutcomePending, OutcomeOK, OutcomeFailed, OutcomeRefused:
		default:
			c.failf("%s: %q is not a repair outcome", fieldAt(l, "outcome"), r.Outcome)
		}
		c.str(l, "key", r.Key, maxIDLen)
		c.str(l, "bus", r.Bus, maxIDLen)
		c.str(l, "serial", r.Serial, maxIDLen)
		c.str(l, "action", r.Action, maxSrcLen)
		c.str(l, "fault", r.Fault, maxReasonLen)
		c.str(l, "detail", r.Detail, maxReasonLen)
		c.str(l, "who", r.Who, maxWhoLen)
		c.when(l, "started", r.Started, false)
		c.when(l, "finished", r.Finished, true)
	}
	for i, v := range h.Validations {
		validateValidation(&c, loc{list: "validations", i: i}, v)
	}
	c.when(top, "syslog_mark.t", h.SyslogMark.T, true)
	c.in(top, "syslog_mark.n", int64(h.SyslogMark.N), 0, 1<<30)
	c.when(top, "clock.found", h.Clock.Found, true)
	c.when(top, "clock.newest", h.Clock.Newest, true)
	c.in(top, "clock.shift", h.Clock.Shift, 0, maxTime-minTime)
	c.in(top, "clock.dropped", int64(h.Clock.Dropped), 0, 1<<30)
	c.when(top, "clock.jump_from", h.Clock.JumpFrom, true)
	c.when(top, "clock.jump_to", h.Clock.JumpTo, true)
	return c.err
}

func validateGPU(c *checker, i int, g *GPU) {
	l := loc{list: "gpus", i: i}
	c.str(l, "uuid", g.UUID, maxIDLen)
	c.str(l, "serial", g.Serial, maxIDLen)
	if g.Bus != "" {
		if bus, ok := NormalizeBus(g.Bus); !ok || bus != g.Bus {
			c.failf("%s: %q is not a PCI address like 0000:9b:00.0", fieldAt(l, "bus"), g.Bus)
		}
	}
	if g.UUID == "" && g.Serial == "" && g.Bus == "" {
		c.failf("%s: no uuid, serial or bus", l)
	}
	c.in(l, "index", int64(g.Index), -1, 1<<16)
	c.str(l, "name", g.Name, maxNameLen)
	c.when(l, "first_seen", g.FirstSeen, false)
	c.when(l, "last_seen", g.LastSeen, false)
	for j, x := range g.XIDs {
		q := loc{list: "gpus", i: i, sub: "xids", j: j}
		c.in(q, "x", int64(x.XID), 1, maxXID)
		c.in(q, "n", int64(x.N), 1, 1<<40)
		c.in(q, "k", x.K, 0, maxCounter)
		c.in(q, "kl", x.KLast, x.K, maxCounter)
		c.when(q, "t", x.T, false)
		c.when(q, "tl", x.TLast, false)
		if x.TLast < x.T {
			c.failf("%s: before its t", fieldAt(q, "tl"))
		}
		c.str(q, "l", x.Loc, maxLocLen)
		c.str(q, "m", x.Msg, maxMsgLen)
	}
	for j, s := range g.Samples {
		q := loc{list: "gpus", i: i, sub: "samples", j: j}
		c.when(q, "t", s.T, false)
		c.in(q, "g", int64(s.Gen), 0, 1<<30)
		if j > 0 && (s.T <= g.Samples[j-1].T || s.Gen < g.Samples[j-1].Gen) {
			c.failf("%s: not after the reading before it", q)
		}
		for k, v := range s.C {
			if v < -1 || v > maxCounter {
				c.failf("%s[%d]: %d is out of range (-1 to %d)", fieldAt(q, "c"), k, v, int64(maxCounter))
			}
		}
	}
	for j, r := range g.Resets {
		q := loc{list: "gpus", i: i, sub: "resets", j: j}
		c.when(q, "t", r.T, false)
		c.str(q, "src", r.Source, maxSrcLen)
	}
}

func validatePort(c *checker, i int, pt *Port) {
	l := loc{list: "ports", i: i}
	c.str(l, "device", pt.Device, maxNameLen)
	c.in(l, "port", int64(pt.Port), 0, maxPort)
	if (pt.Device == "") != (pt.Port == 0) || (pt.Device == "" && len(pt.Netdevs) == 0) {
		c.failf("%s: a port needs a device and a port number, or only an interface", l)
	}
	c.str(l, "guid", pt.GUID, maxIDLen)
	for _, nd := range pt.Netdevs {
		c.str(l, "netdevs", nd, maxNetdevLen)
	}
	c.when(l, "first_seen", pt.FirstSeen, false)
	c.when(l, "last_seen", pt.LastSeen, false)
	for j, s := range pt.States {
		q := loc{list: "ports", i: i, sub: "states", j: j}
		c.when(q, "t", s.T, false)
		c.when(q, "u", s.Until, false)
		if s.Until < s.T {
			c.failf("%s: before its t", fieldAt(q, "u"))
		}
		c.in(q, "s", int64(s.State), 0, 15)
		c.in(q, "p", int64(s.Phys), 0, 15)
	}
	for j, e := range pt.Events {
		q := loc{list: "ports", i: i, sub: "events", j: j}
		c.when(q, "t", e.T, false)
		c.in(q, "k", e.K, 0, maxCounter)
		if e.Src != "kernel" && e.Src != "syslog" {
			c.failf("%s: %q is not kernel or syslog", fieldAt(q, "src"), e.Src)
		}
	}
	for j, d := range pt.Downed {
		q := loc{list: "ports", i: i, sub: "link_downed", j: j}
		c.when(q, "t", d.T, false)
		c.in(q, "v", d.V, 0, maxCounter)
	}
}
