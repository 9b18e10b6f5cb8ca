package history

import (
	"strconv"
	"unicode/utf8"
)

// appendHistory writes h as encoding/json's Marshal would, byte for byte (TestEncodeMatchesJSON
// holds it to that), without its reflection: the file is written at every run.
func appendHistory(b []byte, h *History) []byte {
	var e enc
	e.b = b
	e.open()
	e.int("format", int64(h.Format), false)
	e.str("node", h.Node, false)
	e.int("updated_at", int64(h.UpdatedAt), false)
	if len(h.Boots) > 0 {
		e.list("boots", len(h.Boots), func(i int) { e.boot(&h.Boots[i]) })
	}
	if len(h.GPUs) > 0 {
		e.list("gpus", len(h.GPUs), func(i int) { e.gpu(&h.GPUs[i]) })
	}
	if len(h.Ports) > 0 {
		e.list("ports", len(h.Ports), func(i int) { e.port(&h.Ports[i]) })
	}
	if len(h.Clears) > 0 {
		e.list("clears", len(h.Clears), func(i int) {
			c := &h.Clears[i]
			e.open()
			e.str("target", c.Target, false)
			e.str("key", c.Key, true)
			e.str("bus", c.Bus, true)
			e.str("who", c.Who, false)
			e.int("at", c.At, false)
			e.str("reason", c.Reason, true)
			e.close()
		})
	}
	if len(h.Repairs) > 0 {
		e.list("repairs", len(h.Repairs), func(i int) { e.repair(&h.Repairs[i]) })
	}
	if h.SyslogMark != (Mark{}) {
		e.key("syslog_mark")
		e.open()
		e.int("t", h.SyslogMark.T, false)
		e.int("n", int64(h.SyslogMark.N), false)
		e.close()
	}
	e.close()
	return e.b
}

// enc appends JSON; first says whether the object being written has no member yet.
type enc struct {
	b     []byte
	first bool
}

func (e *enc) open()  { e.b, e.first = append(e.b, '{'), true }
func (e *enc) close() { e.b, e.first = append(e.b, '}'), false }

func (e *enc) key(k string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(append(append(e.b, '"'), k...), '"', ':')
}

// int writes k: v, or nothing for 0 when omitEmpty.
func (e *enc) int(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *enc) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	e.key(k)
	e.b = appendString(e.b, v)
}

func (e *enc) bool(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

// list writes k: [elem(0), ...].
func (e *enc) list(k string, n int, elem func(i int)) {
	e.key(k)
	e.b = append(e.b, '[')
	for i := range n {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(i)
	}
	e.b = append(e.b, ']')
	e.first = false
}

func (e *enc) ints(k string, vs []int64) {
	e.key(k)
	e.b = append(e.b, '[')
	for i, v := range vs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = strconv.AppendInt(e.b, v, 10)
	}
	e.b = append(e.b, ']')
}

func (e *enc) boot(b *Boot) {
	e.open()
	e.int("n", int64(b.N), false)
	e.str("id", b.ID, false)
	e.int("time", b.Time, true)
	e.int("first_seen", b.FirstSeen, false)
	e.int("last_seen", b.LastSeen, false)
	e.int("xid_mark", b.XIDMark, true)
	e.int("xid_lines", int64(b.XIDLines), true)
	e.int("link_mark", b.LinkMark, true)
	if len(b.DriverLoads) > 0 {
		e.ints("driver_loads", b.DriverLoads)
	}
	e.close()
}

func (e *enc) gpu(g *GPU) {
	e.open()
	e.str("uuid", g.UUID, true)
	e.str("serial", g.Serial, true)
	e.str("bus", g.Bus, false)
	e.int("index", int64(g.Index), false)
	e.str("name", g.Name, true)
	e.int("first_seen", g.FirstSeen, false)
	e.int("last_seen", g.LastSeen, false)
	e.int("last_boot", int64(g.LastBoot), false)
	if len(g.XIDs) > 0 {
		e.list("xids", len(g.XIDs), func(i int) {
			x := &g.XIDs[i]
			e.open()
			e.int("b", int64(x.Boot), false)
			e.int("k", x.K, true)
			e.int("kl", x.KLast, true)
			e.int("t", x.T, false)
			e.int("tl", x.TLast, false)
			e.int("n", int64(x.N), false)
			e.int("x", int64(x.XID), false)
			e.str("l", x.Loc, true)
			e.str("m", x.Msg, true)
			e.close()
		})
	}
	if len(g.Samples) > 0 {
		e.list("samples", len(g.Samples), func(i int) {
			s := &g.Samples[i]
			e.open()
			e.int("t", s.T, false)
			e.int("b", int64(s.Boot), false)
			e.int("g", int64(s.Gen), false)
			e.ints("c", s.C[:])
			e.close()
		})
	}
	if len(g.Resets) > 0 {
		e.list("resets", len(g.Resets), func(i int) {
			r := &g.Resets[i]
			e.open()
			e.int("t", r.T, false)
			e.int("b", int64(r.Boot), false)
			e.str("src", r.Source, true)
			e.close()
		})
	}
	e.close()
}

func (e *enc) port(p *Port) {
	e.open()
	e.str("device", p.Device, false)
	e.int("port", int64(p.Port), false)
	e.str("guid", p.GUID, true)
	if len(p.Netdevs) > 0 {
		e.list("netdevs", len(p.Netdevs), func(i int) { e.b = appendString(e.b, p.Netdevs[i]) })
	}
	e.int("first_seen", p.FirstSeen, false)
	e.int("last_seen", p.LastSeen, false)
	e.int("last_boot", int64(p.LastBoot), false)
	if len(p.States) > 0 {
		e.list("states", len(p.States), func(i int) {
			s := &p.States[i]
			e.open()
			e.int("t", s.T, false)
			e.int("u", s.Until, false)
			e.int("b", int64(s.Boot), false)
			e.int("s", int64(s.State), false)
			e.int("p", int64(s.Phys), false)
			e.close()
		})
	}
	if len(p.Events) > 0 {
		e.list("events", len(p.Events), func(i int) {
			v := &p.Events[i]
			e.open()
			e.int("t", v.T, false)
			e.int("b", int64(v.Boot), false)
			e.int("k", v.K, true)
			e.bool("up", v.Up)
			e.str("src", v.Src, false)
			e.close()
		})
	}
	if len(p.Downed) > 0 {
		e.list("link_downed", len(p.Downed), func(i int) {
			c := &p.Downed[i]
			e.open()
			e.int("t", c.T, false)
			e.int("b", int64(c.Boot), false)
			e.int("v", c.V, false)
			e.close()
		})
	}
	e.close()
}

func (e *enc) repair(r *Repair) {
	e.open()
	e.str("target", r.Target, false)
	e.str("key", r.Key, true)
	e.str("bus", r.Bus, true)
	e.str("serial", r.Serial, true)
	e.str("action", r.Action, false)
	e.str("fault", r.Fault, true)
	e.int("started", r.Started, false)
	e.int("finished", r.Finished, true)
	e.str("outcome", r.Outcome, false)
	e.str("detail", r.Detail, true)
	e.str("who", r.Who, true)
	e.close()
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does: HTML-safe (<, >, & as \u003c ...), invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += n
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += n
			start = i
			continue
		}
		i += n
	}
	return append(append(b, s[start:]...), '"')
}
