package history

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MergeReport says what a Merge added and what it could not place.
type MergeReport struct {
	// BootChanged is true on the first run of a new boot.
	BootChanged bool
	NewXIDs     int
	NewLinks    int
	// Clock says, when the history held times after the run's, that the clock went back
	// (or was ahead) and what was done about it: a warning for the run's log and checks.
	Clock string
	// Notes are things left out, one line each, for the run's log.
	Notes []string
}

// Merge folds one run's observation into h. now is the run's clock (the snapshot's taken_at
// in a replay); obs.Time defaults to it. An event counts once across runs: dmesg shows every
// XID since boot at every run, so a line is new only when its kernel time is past the boot's
// mark. Counters that went down (driver reload, GPU reset, reboot) start a new series rather
// than a negative rate. Merge then drops what Limits no longer allow.
func (h *History) Merge(now time.Time, obs Observation, lim Limits) MergeReport {
	var rep MergeReport
	t := obs.Time
	if t.IsZero() {
		t = now
	}
	ts := t.Unix()
	if ts < minTime || ts > maxTime || now.Unix() < minTime || now.Unix() > maxTime {
		// A node whose clock is not set yet (1970 before NTP) would write times the file
		// cannot hold: nothing is merged, rather than a file the next run sets aside.
		rep.Notes = append(rep.Notes, fmt.Sprintf("the clock says %s, not a time between 2000 and 2100: nothing merged", t.UTC().Format(time.RFC3339)))
		return rep
	}
	if bt := obs.BootTime.Unix(); !obs.BootTime.IsZero() && (bt < minTime || bt > ts) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("boot time %s (the run's time less the uptime) is before 2000 or after the run: taken as unknown", obs.BootTime.UTC().Format(time.RFC3339)))
		obs.BootTime = time.Time{}
	}
	h.settleClock(now.Unix(), clip(obs.BootID, maxIDLen), obs.BootTime, lim, &rep)
	h.UpdatedAt = now.Unix()
	bootID := clip(obs.BootID, maxIDLen)
	if bootID == "" {
		rep.Notes = append(rep.Notes, "no boot id: nothing merged (without /proc/sys/kernel/random/boot_id a reboot cannot be told from a long uptime)")
		h.prune(now, lim)
		return rep
	}
	b := h.touchBoot(bootID, obs.BootTime, ts, &rep)
	gpus := h.mergeGPUs(obs.GPUs, b.N, ts, &rep)
	h.mergeXIDs(obs.XIDs, b, ts, lim, &rep)
	for _, k := range obs.DriverLoads {
		if k > 0 && !slices.Contains(b.DriverLoads, k) {
			b.DriverLoads = append(b.DriverLoads, k)
		}
	}
	slices.Sort(b.DriverLoads)
	if n := len(b.DriverLoads); n > maxDriverLoads {
		b.DriverLoads = b.DriverLoads[n-maxDriverLoads:]
	}
	h.mergeResets(obs.Resets, b.N, &rep)
	for i, g := range obs.GPUs {
		if gpus[i] >= 0 {
			h.addSample(&h.GPUs[gpus[i]], g, b, ts, lim, &rep)
		}
	}
	h.mergePorts(obs.Ports, b.N, ts, &rep)
	h.mergeLinks(obs, b, ts, &rep)
	h.prune(now, lim)
	return rep
}

// maxDriverLoads bounds Boot.DriverLoads: a boot reloads its driver a few times at most.
const maxDriverLoads = 8

// touchBoot finds or adds the boot with id and makes it the newest.
func (h *History) touchBoot(id string, bootTime time.Time, ts int64, rep *MergeReport) *Boot {
	i := slices.IndexFunc(h.Boots, func(b Boot) bool { return b.ID == id })
	switch {
	case i < 0:
		n := 0
		for _, b := range h.Boots {
			n = max(n, b.N+1)
		}
		rep.BootChanged = len(h.Boots) > 0
		h.Boots = append(h.Boots, Boot{N: n, ID: id, FirstSeen: ts, LastSeen: ts})
		i = len(h.Boots) - 1
	case i != len(h.Boots)-1:
		rep.Notes = append(rep.Notes, fmt.Sprintf("boot %s seen again after a later boot (snapshots replayed out of order?): taken as the current boot", id))
		b := h.Boots[i]
		h.Boots = append(slices.Delete(h.Boots, i, i+1), b)
		i = len(h.Boots) - 1
	}
	b := &h.Boots[i]
	b.LastSeen = max(b.LastSeen, ts)
	if !bootTime.IsZero() && b.Time == 0 {
		b.Time = bootTime.Unix()
	}
	return b
}

// mergeGPUs updates the GPU records from NVML's view and returns, per observed GPU, the
// index of its record (-1 when it could not be placed).
func (h *History) mergeGPUs(obs []GPUObs, boot int, ts int64, rep *MergeReport) []int {
	idx := make([]int, len(obs))
	for i, o := range obs {
		uuid, serial := clip(o.UUID, maxIDLen), clip(o.Serial, maxIDLen)
		bus, ok := NormalizeBus(o.Bus)
		if !ok {
			bus = ""
		}
		if uuid == "" && serial == "" && bus == "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("gpu %d: no UUID, serial or bus id: not recorded", o.Index))
			idx[i] = -1
			continue
		}
		j := h.findGPU(uuid, serial, bus, boot)
		if j < 0 {
			h.GPUs = append(h.GPUs, GPU{FirstSeen: ts})
			j = len(h.GPUs) - 1
		}
		g := &h.GPUs[j]
		if uuid != "" {
			g.UUID = uuid
		}
		if serial != "" {
			g.Serial = serial
		}
		if bus != "" {
			g.Bus = bus
		}
		g.Index, g.Name = o.Index, clip(o.Name, maxNameLen)
		g.LastSeen, g.LastBoot = max(g.LastSeen, ts), boot
		idx[i] = j
	}
	return idx
}

// findGPU finds a GPU's record by UUID, else serial, else bus. A record known only by its
// bus (met in the kernel log before NVML saw it) is taken over by the GPU NVML now shows at
// that bus in the same boot: no GPU changes slot without a reboot.
func (h *History) findGPU(uuid, serial, bus string, boot int) int {
	if uuid != "" {
		if j := slices.IndexFunc(h.GPUs, func(g GPU) bool { return g.UUID == uuid }); j >= 0 {
			return j
		}
	}
	if serial != "" {
		if j := slices.IndexFunc(h.GPUs, func(g GPU) bool { return g.Serial == serial && (uuid == "" || g.UUID == "") }); j >= 0 {
			return j
		}
	}
	if bus == "" {
		return -1
	}
	return slices.IndexFunc(h.GPUs, func(g GPU) bool {
		return g.UUID == "" && g.Serial == "" && g.Bus == bus && g.LastBoot == boot
	})
}

// gpuAtBus is the record of the GPU at bus in this boot, adding one known only by its bus
// when there is none.
func (h *History) gpuAtBus(bus string, boot int, ts int64) int {
	best := -1
	for j, g := range h.GPUs {
		if g.Bus == bus && g.LastBoot == boot && (best < 0 || g.LastSeen > h.GPUs[best].LastSeen) {
			best = j
		}
	}
	if best >= 0 {
		return best
	}
	h.GPUs = append(h.GPUs, GPU{Bus: bus, Index: -1, FirstSeen: ts, LastSeen: ts, LastBoot: boot})
	return len(h.GPUs) - 1
}

// mergeXIDs adds the XID lines past the boot's marks.
func (h *History) mergeXIDs(lines []XIDLine, b *Boot, ts int64, lim Limits, rep *MergeReport) {
	mark, untimed, bad := b.XIDMark, 0, 0
	gap := int64(lim.CollapseGap / time.Microsecond)
	for _, l := range lines {
		if l.KernelUS > 0 {
			if l.KernelUS <= b.XIDMark {
				continue
			}
			mark = max(mark, l.KernelUS)
		} else {
			untimed++
			if untimed <= b.XIDLines {
				continue
			}
		}
		bus, ok := NormalizeBus(l.Bus)
		if !ok || l.XID < 1 || l.XID > maxXID {
			bad++
			continue
		}
		gi := h.gpuAtBus(bus, b.N, ts) // may grow h.GPUs: index it after
		g := &h.GPUs[gi]
		wall := ts
		if l.KernelUS > 0 && b.Time > 0 {
			wall = b.Time + l.KernelUS/1e6
		}
		loc := clip(l.Loc, maxLocLen)
		rep.NewXIDs++
		if i := lastXID(g.XIDs, b.N, l.XID, loc); i >= 0 && g.XIDs[i].near(l.KernelUS, wall, gap) {
			x := &g.XIDs[i]
			x.N++
			x.TLast = max(x.TLast, wall)
			x.KLast = max(x.KLast, l.KernelUS)
			continue
		}
		g.XIDs = append(g.XIDs, XID{Boot: b.N, K: l.KernelUS, KLast: l.KernelUS, T: wall, TLast: wall, N: 1,
			XID: l.XID, Loc: loc, Msg: clip(l.Message, maxMsgLen)})
	}
	b.XIDMark, b.XIDLines = mark, max(b.XIDLines, untimed)
	if bad > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d XID lines with an unreadable bus id or number left out", bad))
	}
}

// lastXID is the index of g's newest record of xid at loc in boot, or -1.
func lastXID(xs []XID, boot, xid int, loc string) int {
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i].Boot == boot && xs[i].XID == xid && xs[i].Loc == loc {
			return i
		}
	}
	return -1
}

// near says whether a line at kernel time k (µs, 0 unknown) and wall time belongs to burst x.
func (x XID) near(k, wall, gapUS int64) bool {
	if k > 0 && x.KLast > 0 {
		return k-x.KLast <= gapUS
	}
	return (wall-x.TLast)*1e6 <= gapUS
}

// mergeResets records the resets the run reported.
func (h *History) mergeResets(resets []ResetObs, boot int, rep *MergeReport) {
	for _, r := range resets {
		j := -1
		if r.UUID != "" {
			j = slices.IndexFunc(h.GPUs, func(g GPU) bool { return g.UUID == r.UUID })
		}
		if bus, ok := NormalizeBus(r.Bus); j < 0 && ok {
			j = h.gpuAtBus(bus, boot, r.At.Unix())
		}
		if j < 0 || r.At.IsZero() {
			rep.Notes = append(rep.Notes, fmt.Sprintf("reset of %q at %v: no such GPU or no time", r.UUID+r.Bus, r.At))
			continue
		}
		g := &h.GPUs[j]
		rs := Reset{T: r.At.Unix(), Boot: boot, Source: clip(r.Source, maxSrcLen)}
		if !slices.Contains(g.Resets, rs) {
			g.Resets = append(g.Resets, rs)
			slices.SortFunc(g.Resets, func(a, b Reset) int { return int(a.T - b.T) })
		}
	}
}

// addSample adds one counter reading to g, starting a new series (Gen) when the boot
// changed, a counter went down, or a reset or driver load came between, and thinning
// readings closer than Limits.MinSampleSpace.
func (h *History) addSample(g *GPU, o GPUObs, b *Boot, ts int64, lim Limits, rep *MergeReport) {
	s := Sample{T: ts, Boot: b.N}
	if !o.SampledAt.IsZero() {
		s.T = o.SampledAt.Unix()
	}
	any := false
	for c := range NumCounters {
		s.C[c] = -1
		if r := o.Counters[c]; r.OK {
			s.C[c] = int64(min(r.V, maxCounter))
			any = true
		}
	}
	if !any {
		return
	}
	if n := len(g.Samples); n > 0 {
		prev := g.Samples[n-1]
		if s.T <= prev.T {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: counters read at %s, not after the last reading (%s): left out", g.Label(), stamp(s.T), stamp(prev.T)))
			return
		}
		s.Gen = prev.Gen
		if h.restarted(g, prev, s, b) {
			s.Gen++
		}
	}
	g.Samples = append(g.Samples, s)
	if n := len(g.Samples); n >= 3 {
		a, m, z := g.Samples[n-3], g.Samples[n-2], g.Samples[n-1]
		if a.Gen == m.Gen && m.Gen == z.Gen && m.T-a.T < int64(lim.MinSampleSpace/time.Second) {
			g.Samples = slices.Delete(g.Samples, n-2, n-1)
		}
	}
}

// restarted says whether the counters restarted between prev and s.
func (h *History) restarted(g *GPU, prev, s Sample, b *Boot) bool {
	if prev.Boot != s.Boot {
		return true
	}
	for c := range NumCounters {
		if prev.C[c] >= 0 && s.C[c] >= 0 && s.C[c] < prev.C[c] {
			return true
		}
	}
	for _, r := range g.Resets {
		if r.Boot == s.Boot && r.T > prev.T && r.T <= s.T {
			return true
		}
	}
	if b.Time > 0 {
		for _, k := range b.DriverLoads {
			if t := b.Time + k/1e6; t > prev.T && t <= s.T {
				return true
			}
		}
	}
	return false
}

// mergePorts updates the port records and their states.
func (h *History) mergePorts(obs []PortObs, boot int, ts int64, rep *MergeReport) {
	for _, o := range obs {
		dev := clip(o.Device, maxNameLen)
		if dev == "" || o.Port < 1 || o.Port > maxPort {
			rep.Notes = append(rep.Notes, fmt.Sprintf("port %q/%d: not a port: left out", o.Device, o.Port))
			continue
		}
		t := ts
		if !o.SampledAt.IsZero() {
			t = o.SampledAt.Unix()
		}
		p := h.port(dev, o.Port, clip(o.GUID, maxIDLen), t, rep)
		for _, nd := range o.Netdevs {
			h.adoptNetdev(p, clip(nd, maxNetdevLen))
		}
		p.LastSeen, p.LastBoot = max(p.LastSeen, t), boot
		st := PortState{T: t, Until: t, Boot: boot, State: o.State, Phys: o.PhysState}
		switch n := len(p.States); {
		case n > 0 && t <= p.States[n-1].Until:
			// not newer than what is known: a replay out of order
		case n > 0 && p.States[n-1].Boot == boot && p.States[n-1].State == o.State && p.States[n-1].Phys == o.PhysState:
			p.States[n-1].Until = t
		default:
			p.States = append(p.States, st)
		}
		if o.LinkDowned.OK && (len(p.Downed) == 0 || t > p.Downed[len(p.Downed)-1].T) {
			p.Downed = append(p.Downed, Count{T: t, Boot: boot, V: int64(min(o.LinkDowned.V, maxCounter))})
		}
	}
}

// port finds or adds the record of dev/port; a new GUID on a known port is a new adapter,
// whose record starts afresh.
func (h *History) port(dev string, num int, guid string, ts int64, rep *MergeReport) *Port {
	j := slices.IndexFunc(h.Ports, func(p Port) bool { return p.Device == dev && p.Port == num })
	if j >= 0 && guid != "" && h.Ports[j].GUID != "" && h.Ports[j].GUID != guid {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: GUID %s, was %s: a new adapter, its history starts afresh", h.Ports[j].Key(), guid, h.Ports[j].GUID))
		h.Ports[j] = Port{Device: dev, Port: num, FirstSeen: ts}
	}
	if j < 0 {
		h.Ports = append(h.Ports, Port{Device: dev, Port: num, FirstSeen: ts})
		j = len(h.Ports) - 1
	}
	if guid != "" {
		h.Ports[j].GUID = guid
	}
	return &h.Ports[j]
}

// adoptNetdev puts netdev on p, moving to p the events of a port known only by netdev.
func (h *History) adoptNetdev(p *Port, netdev string) {
	if netdev == "" {
		return
	}
	if !slices.Contains(p.Netdevs, netdev) {
		p.Netdevs = append(p.Netdevs, netdev)
		slices.Sort(p.Netdevs)
	}
	key := p.Key()
	j := slices.IndexFunc(h.Ports, func(q Port) bool { return q.Device == "" && slices.Contains(q.Netdevs, netdev) })
	if j < 0 {
		return
	}
	events := h.Ports[j].Events
	h.Ports = slices.Delete(h.Ports, j, j+1)
	// The delete may have moved p: find it again by key.
	k := slices.IndexFunc(h.Ports, func(q Port) bool { return q.Key() == key })
	h.Ports[k].Events = append(h.Ports[k].Events, events...)
	slices.SortStableFunc(h.Ports[k].Events, func(a, b LinkEvent) int { return int(a.T - b.T) })
}

// mergeLinks adds the kernel log's and the syslog's link lines past their marks.
func (h *History) mergeLinks(obs Observation, b *Boot, ts int64, rep *MergeReport) {
	mark := b.LinkMark
	var dropped []string
	for _, l := range obs.KernelLinks {
		if l.KernelUS <= b.LinkMark {
			continue
		}
		mark = max(mark, l.KernelUS)
		wall := ts
		if b.Time > 0 {
			wall = b.Time + l.KernelUS/1e6
		}
		if h.addLink(l, LinkEvent{T: wall, Boot: b.N, K: l.KernelUS, Up: l.Up, Src: "kernel"}, ts) {
			rep.NewLinks++
		} else {
			dropped = append(dropped, l.Netdev)
		}
	}
	b.LinkMark = mark
	// The syslog's lines have whole seconds: a line is new when its second is past the mark,
	// or it is the mark's second and more lines of it than merged before precede it.
	old, m := h.SyslogMark, Mark{}
	late := 0
	for _, l := range obs.SyslogLinks {
		t := l.Wall.Unix()
		if l.Wall.IsZero() || t < old.T || t < m.T {
			continue
		}
		if t > ts+int64(clockSlack/time.Second) {
			// Written while the clock was ahead: when it happened cannot be told, and
			// merged it would be moved back again at every run.
			late++
			continue
		}
		if t > m.T {
			m = Mark{T: t}
		}
		m.N++
		if t == old.T && m.N <= old.N {
			continue
		}
		if h.addLink(l, LinkEvent{T: t, Boot: h.bootAt(t, b.N), Up: l.Up, Src: "syslog"}, ts) {
			rep.NewLinks++
		} else {
			dropped = append(dropped, l.Netdev)
		}
	}
	if m.T > old.T || (m.T == old.T && m.N > old.N) {
		h.SyslogMark = m
	}
	if late > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d syslog link lines dated after this run's time left out", late))
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d link lines of interfaces on no InfiniBand port left out (%s)", len(dropped), strings.Join(slices.Compact(dropped), ", ")))
	}
}

// addLink files one link line under its port: the port whose interfaces include the line's
// netdev (mergePorts put this run's there), or, for an IPoIB interface (ib*) on no known
// port, a port known only by netdev. Interfaces on no InfiniBand port (eth0, docker0) are
// left out.
func (h *History) addLink(l LinkLine, ev LinkEvent, ts int64) bool {
	nd := clip(l.Netdev, maxNetdevLen)
	j := slices.IndexFunc(h.Ports, func(p Port) bool { return slices.Contains(p.Netdevs, nd) })
	if j < 0 {
		if !strings.HasPrefix(nd, "ib") {
			return false
		}
		h.Ports = append(h.Ports, Port{Netdevs: []string{nd}, FirstSeen: ts, LastSeen: ts, LastBoot: ev.Boot})
		j = len(h.Ports) - 1
	}
	p := &h.Ports[j]
	p.Events = append(p.Events, ev)
	slices.SortStableFunc(p.Events, func(a, b LinkEvent) int { return int(a.T - b.T) })
	return true
}

// bootAt is the boot that began last at or before t, by the boots' start times; def when
// none is known to.
func (h *History) bootAt(t int64, def int) int {
	n, at := def, int64(-1)
	for _, b := range h.Boots {
		if b.Time > 0 && b.Time <= t && b.Time > at {
			n, at = b.N, b.Time
		}
	}
	return n
}
