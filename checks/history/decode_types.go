package history

// decodeHistory reads a whole file into h with the decoder of decode.go. Every key here
// matches a json tag of history.go; TestDecodeEveryField fails when one is missed.
func decodeHistory(data []byte) (*History, bool, error) {
	d := &decoder{b: data}
	var h History
	skipped := false
	skip := func() { skipped = true; d.skip(0) }
	d.object(func(k []byte) {
		switch string(k) {
		case "format":
			h.Format = d.int()
		case "node":
			h.Node = d.str()
		case "updated_at":
			h.UpdatedAt = d.int64()
		case "boots":
			h.Boots = list(d, func() Boot { return d.boot(skip) })
		case "gpus":
			h.GPUs = list(d, func() GPU { return d.gpu(skip) })
		case "ports":
			h.Ports = list(d, func() Port { return d.port(skip) })
		case "clears":
			h.Clears = list(d, func() Clear { return d.clear(skip) })
		case "repairs":
			h.Repairs = list(d, func() Repair { return d.repair(skip) })
		case "syslog_mark":
			d.object(func(k []byte) {
				switch string(k) {
				case "t":
					h.SyslogMark.T = d.int64()
				case "n":
					h.SyslogMark.N = d.int()
				default:
					skip()
				}
			})
		default:
			skip()
		}
	})
	if d.err == nil {
		if d.peek(); d.i < len(d.b) {
			d.failf("data after the file's object")
		}
	}
	if d.err != nil {
		return nil, skipped, d.err
	}
	return &h, skipped, nil
}

func (d *decoder) boot(skip func()) (b Boot) {
	d.object(func(k []byte) {
		switch string(k) {
		case "n":
			b.N = d.int()
		case "id":
			b.ID = d.str()
		case "time":
			b.Time = d.int64()
		case "first_seen":
			b.FirstSeen = d.int64()
		case "last_seen":
			b.LastSeen = d.int64()
		case "xid_mark":
			b.XIDMark = d.int64()
		case "xid_lines":
			b.XIDLines = d.int()
		case "link_mark":
			b.LinkMark = d.int64()
		case "driver_loads":
			b.DriverLoads = list(d, func() int64 { return d.int64() })
		default:
			skip()
		}
	})
	return b
}

func (d *decoder) gpu(skip func()) (g GPU) {
	d.object(func(k []byte) {
		switch string(k) {
		case "uuid":
			g.UUID = d.str()
		case "serial":
			g.Serial = d.str()
		case "bus":
			g.Bus = d.str()
		case "index":
			g.Index = d.int()
		case "name":
			g.Name = d.str()
		case "first_seen":
			g.FirstSeen = d.int64()
		case "last_seen":
			g.LastSeen = d.int64()
		case "last_boot":
			g.LastBoot = d.int()
		case "xids":
			g.XIDs = list(d, func() XID { return d.xid(skip) })
		case "samples":
			g.Samples = list(d, func() Sample { return d.sample(skip) })
		case "resets":
			g.Resets = list(d, func() Reset { return d.reset(skip) })
		default:
			skip()
		}
	})
	return g
}

func (d *decoder) xid(skip func()) (x XID) {
	d.object(func(k []byte) {
		switch string(k) {
		case "b":
			x.Boot = d.int()
		case "k":
			x.K = d.int64()
		case "kl":
			x.KLast = d.int64()
		case "t":
			x.T = d.int64()
		case "tl":
			x.TLast = d.int64()
		case "n":
			x.N = d.int()
		case "x":
			x.XID = d.int()
		case "l":
			x.Loc = d.str()
		case "m":
			x.Msg = d.str()
		default:
			skip()
		}
	})
	return x
}

func (d *decoder) sample(skip func()) (s Sample) {
	d.object(func(k []byte) {
		switch string(k) {
		case "t":
			s.T = d.int64()
		case "b":
			s.Boot = d.int()
		case "g":
			s.Gen = d.int()
		case "c":
			// As encoding/json fills a Go array: missing elements zero, extra ones dropped.
			var c [NumCounters]int64
			d.array(func(i int) {
				if v := d.int64(); i < len(c) {
					c[i] = v
				}
			})
			s.C = c
		default:
			skip()
		}
	})
	return s
}

func (d *decoder) reset(skip func()) (r Reset) {
	d.object(func(k []byte) {
		switch string(k) {
		case "t":
			r.T = d.int64()
		case "b":
			r.Boot = d.int()
		case "src":
			r.Source = d.str()
		default:
			skip()
		}
	})
	return r
}

func (d *decoder) port(skip func()) (p Port) {
	d.object(func(k []byte) {
		switch string(k) {
		case "device":
			p.Device = d.str()
		case "port":
			p.Port = d.int()
		case "guid":
			p.GUID = d.str()
		case "netdevs":
			p.Netdevs = list(d, func() string { return d.str() })
		case "first_seen":
			p.FirstSeen = d.int64()
		case "last_seen":
			p.LastSeen = d.int64()
		case "last_boot":
			p.LastBoot = d.int()
		case "states":
			p.States = list(d, func() PortState { return d.portState(skip) })
		case "events":
			p.Events = list(d, func() LinkEvent { return d.linkEvent(skip) })
		case "link_downed":
			p.Downed = list(d, func() Count { return d.count(skip) })
		default:
			skip()
		}
	})
	return p
}

func (d *decoder) portState(skip func()) (s PortState) {
	d.object(func(k []byte) {
		switch string(k) {
		case "t":
			s.T = d.int64()
		case "u":
			s.Until = d.int64()
		case "b":
			s.Boot = d.int()
		case "s":
			s.State = d.int()
		case "p":
			s.Phys = d.int()
		default:
			skip()
		}
	})
	return s
}

func (d *decoder) linkEvent(skip func()) (e LinkEvent) {
	d.object(func(k []byte) {
		switch string(k) {
		case "t":
			e.T = d.int64()
		case "b":
			e.Boot = d.int()
		case "k":
			e.K = d.int64()
		case "up":
			e.Up = d.bool()
		case "src":
			e.Src = d.str()
		default:
			skip()
		}
	})
	return e
}

func (d *decoder) count(skip func()) (c Count) {
	d.object(func(k []byte) {
		switch string(k) {
		case "t":
			c.T = d.int64()
		case "b":
			c.Boot = d.int()
		case "v":
			c.V = d.int64()
		default:
			skip()
		}
	})
	return c
}

func (d *decoder) clear(skip func()) (c Clear) {
	d.object(func(k []byte) {
		switch string(k) {
		case "target":
			c.Target = d.str()
		case "key":
			c.Key = d.str()
		case "bus":
			c.Bus = d.str()
		case "who":
			c.Who = d.str()
		case "at":
			c.At = d.int64()
		case "reason":
			c.Reason = d.str()
		default:
			skip()
		}
	})
	return c
}

func (d *decoder) repair(skip func()) (r Repair) {
	d.object(func(k []byte) {
		switch string(k) {
		case "target":
			r.Target = d.str()
		case "key":
			r.Key = d.str()
		case "bus":
			r.Bus = d.str()
		case "serial":
			r.Serial = d.str()
		case "action":
			r.Action = d.str()
		case "fault":
			r.Fault = d.str()
		case "started":
			r.Started = d.int64()
		case "finished":
			r.Finished = d.int64()
		case "outcome":
			r.Outcome = d.str()
		case "detail":
			r.Detail = d.str()
		case "who":
			r.Who = d.str()
		default:
			skip()
		}
	})
	return r
}
