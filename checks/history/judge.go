package history

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is a judgement's outcome, as the checks' statuses name them.
type Status string

// The statuses a judge gives. Skip means the history does not hold enough yet to judge (one
// counter reading so far, say); it is never an ok.
const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Judgement is one rule's verdict on one GPU or port.
type Judgement struct {
	// Rule is the rule's id: "xid_sticky", "xid_repeat", "xid_recent", "xid",
	// "rate_ecc_corrected" (and the other counters' ids), "ib_flap".
	Rule   string `json:"rule"`
	Status Status `json:"status"`
	// Target is "gpu" or "port"; Key is the GPU's or port's Key, Device its Label.
	Target string `json:"target"`
	Key    string `json:"key"`
	Device string `json:"device"`
	// GPU or Port names the device as fields, for code that acts on the judgement (Device is
	// for people); the one Target does not name is zero. Not in the JSON yet.
	GPU  GPUID  `json:"-"`
	Port PortID `json:"-"`
	// Summary is one line an admin can act on.
	Summary string `json:"summary"`
	// Clear says what would clear it; empty for an ok.
	Clear string `json:"clear,omitempty"`
	// Since is when what holds began.
	Since    time.Time `json:"since,omitzero"`
	Sticky   bool      `json:"sticky,omitempty"`
	Observed string    `json:"observed,omitempty"`
	Expected string    `json:"expected,omitempty"`
	// XID and XIDMessage are the XID an xid_* judgement stands on and the driver's message of
	// its first line, from which a remedy is told (XID 154 names its action there).
	XID        int    `json:"xid,omitempty"`
	XIDMessage string `json:"xid_message,omitempty"`
}

// Judge runs every rule over h at now: XIDs, counter rates and link flaps, in that order,
// GPUs and ports in the file's order, then the clock (JudgeClock). Every judge judges h as
// of now (asOf): times after now are the clock's fault, and are moved back first.
func (h *History) Judge(now time.Time, r Rules) []Judgement {
	h = h.asOf(now)
	out := h.JudgeXIDs(now, r)
	out = append(out, h.JudgeRates(now, r)...)
	out = append(out, h.JudgeFlaps(now, r)...)
	return append(out, h.JudgeClock(now)...)
}

// Worst is the worst status among js (fail, warn, skip, ok), ok when js is empty.
func Worst(js []Judgement) Status {
	rank := map[Status]int{StatusOK: 0, StatusSkip: 1, StatusWarn: 2, StatusFail: 3}
	w := StatusOK
	for _, j := range js {
		if rank[j.Status] > rank[w] {
			w = j.Status
		}
	}
	return w
}

// JudgeXIDs judges the XIDs of each GPU seen in the current boot: sticky reset- and
// reboot-class XIDs, repeats, and recent ones. A GPU with none gets one ok.
func (h *History) JudgeXIDs(now time.Time, r Rules) []Judgement {
	h = h.asOf(now)
	cur := h.currentN()
	var out []Judgement
	for _, g := range h.GPUs {
		if g.LastBoot != cur && !slices.ContainsFunc(g.XIDs, func(x XID) bool { return x.Boot == cur }) {
			continue
		}
		js := h.judgeGPUXIDs(now, g, r)
		if len(js) == 0 {
			js = []Judgement{{Rule: "xid", Status: StatusOK, Target: "gpu", Key: g.Key(), Device: g.Label(), GPU: g.ID(),
				Summary: g.Label() + ": no XID in force", Expected: "no XID in force"}}
		}
		out = append(out, js...)
	}
	return out
}

func (h *History) judgeGPUXIDs(now time.Time, g GPU, r Rules) []Judgement {
	var out []Judgement
	failing := map[int]bool{}
	if xs := h.inForce(g, r); len(xs) > 0 {
		out = append(out, judgeSticky(g, xs, r))
		for _, x := range xs {
			failing[x.XID] = true
		}
	}
	since := h.clearedAt(g)
	for _, rule := range r.Repeats {
		if j, xid, ok := judgeRepeat(now, g, rule, r, since); ok {
			out = append(out, j)
			failing[xid] = true
		}
	}
	cut := now.Add(-r.RecentXIDs).Unix()
	var recent []XID
	for _, x := range g.XIDs {
		// A reset- or reboot-class XID fails while in force and is resolved once ended: it
		// does not warn after its reset or reboot (the repeat rules still count it).
		if c := r.Class(x); x.TLast >= cut && x.TLast > since && !failing[x.XID] && c == XIDWarn {
			recent = append(recent, x)
		}
	}
	if len(recent) > 0 {
		x := recent[len(recent)-1]
		kinds := map[int]bool{}
		for _, y := range recent {
			kinds[y.XID] = true
		}
		what := "warns"
		if slices.Contains(r.AppXIDs, x.XID) {
			what = "an application XID: warns, fails only on repeats"
		}
		out = append(out, Judgement{Rule: "xid_recent", Status: StatusWarn, Target: "gpu", Key: g.Key(), Device: g.Label(), GPU: g.ID(), XID: x.XID, XIDMessage: x.Msg,
			Summary: fmt.Sprintf("%s: XID %d at %s%s (%s)%s", g.Label(), x.XID, stamp(x.TLast), timesSuffix(x.N), what, moreOf(len(kinds)-1, "XID kind")),
			Clear:   "no new XID until " + stamp(x.TLast+int64(r.RecentXIDs/time.Second)) + ", or `nodecheck history clear --gpu " + g.Bus + "`",
			Since:   unix(recent[0].T), Observed: "XID " + strconv.Itoa(x.XID), Expected: "no XID within " + human(r.RecentXIDs)})
	}
	return out
}

// inForce lists g's reset- and reboot-class XID records that nothing has ended yet.
func (h *History) inForce(g GPU, r Rules) []XID {
	var out []XID
	for _, x := range g.XIDs {
		c := r.Class(x)
		reboot := c == XIDReboot
		if c != XIDReset && !reboot {
			continue
		}
		if by, _ := h.stickyEnd(g, x, reboot); by == "" {
			out = append(out, x)
		}
	}
	return out
}

// judgeSticky fails g for the XIDs in force, xs (not empty).
func judgeSticky(g GPU, xs []XID, r Rules) Judgement {
	x := xs[0]
	until, clear := "a GPU reset, a driver reload or a reboot", "a GPU reset, a driver reload or a reboot (new boot id)"
	if slices.ContainsFunc(xs, func(y XID) bool { return r.Class(y) == XIDReboot }) {
		until, clear = "a reboot", "a reboot (new boot id)"
	}
	cmd := "`nodecheck history clear --gpu " + g.Bus + "`"
	return Judgement{Rule: "xid_sticky", Status: StatusFail, Target: "gpu", Key: g.Key(), Device: g.Label(), GPU: g.ID(), Sticky: true, XID: x.XID, XIDMessage: x.Msg,
		Summary: fmt.Sprintf("%s: XID %d at %s%s, sticky until %s; clear with %s", g.Label(), x.XID, stamp(x.T), moreOf(len(xs)-1, "sticky XID"), until, cmd),
		Clear:   clear + ", or " + cmd, Since: unix(x.T),
		Observed: "XID " + strconv.Itoa(x.XID) + timesSuffix(x.N), Expected: "no reset- or reboot-class XID in force"}
}

// stickyEnd says what ended record x of g, and when: a later boot, an admin clear, and for
// a reset-class XID also a GPU reset, a driver reload, or the GPU's counters restarting. by
// is empty while x is in force.
func (h *History) stickyEnd(g GPU, x XID, rebootOnly bool) (by string, at int64) {
	if cur := h.current(); cur != nil && cur.N != x.Boot {
		return "reboot (boot " + short(cur.ID) + ")", max(cur.Time, cur.FirstSeen)
	}
	if c, ok := h.clearOf(g.Key(), x.TLast); ok {
		return "admin clear by " + c.Who, c.At
	}
	if rebootOnly {
		return "", 0
	}
	for _, rs := range g.Resets {
		if rs.Boot == x.Boot && rs.T >= x.TLast {
			return "GPU reset (" + rs.Source + ")", rs.T
		}
	}
	for _, rp := range h.Repairs {
		if rp.Target == "gpu" && rp.Key == g.Key() && rp.Action == "reset_gpu" && rp.Outcome == OutcomeOK && rp.Finished >= x.TLast {
			return "GPU reset (repair)", rp.Finished
		}
	}
	if b := h.boot(x.Boot); b != nil {
		for _, k := range b.DriverLoads {
			if (x.KLast > 0 && k > x.KLast) || (x.KLast == 0 && b.Time > 0 && b.Time+k/1e6 > x.TLast) {
				return "driver reload", b.Time + k/1e6
			}
		}
	}
	gen, before := 0, false
	for _, s := range g.Samples {
		switch {
		case s.Boot != x.Boot:
		case s.T <= x.TLast:
			gen, before = s.Gen, true
		case before && s.Gen > gen:
			return "counters restarted (driver reload or GPU reset)", s.T
		}
	}
	return "", 0
}

// clearOf is the first admin clear of key (or of all) at or after t.
func (h *History) clearOf(key string, t int64) (Clear, bool) {
	for _, c := range h.Clears {
		if c.At >= t && (c.Target == "all" || c.Key == key) {
			return c, true
		}
	}
	return Clear{}, false
}

// clearedAt is when key was last cleared (or all was), or a time before any event.
func (h *History) clearedAt(g GPU) int64 { return h.clearedKeyAt(g.Key()) }

func (h *History) clearedKeyAt(key string) int64 {
	at := int64(-1) << 62
	for _, c := range h.Clears {
		if c.Target == "all" || c.Key == key {
			at = max(at, c.At)
		}
	}
	return at
}

// judgeRepeat applies one repeat rule to g: bursts of the rule's XIDs within its window,
// since the last clear. It returns the failing XID.
func judgeRepeat(now time.Time, g GPU, rule RepeatRule, r Rules, since int64) (Judgement, int, bool) {
	if rule.Count <= 0 {
		return Judgement{}, 0, false
	}
	cut := now.Add(-rule.Window).Unix()
	var xs []XID
	for _, x := range g.XIDs {
		in := slices.Contains(rule.XIDs, x.XID) || len(rule.XIDs) == 0 && !slices.Contains(rule.Except, x.XID)
		if in && r.Class(x) != XIDIgnore && x.TLast >= cut && x.TLast > since && (!rule.SameLoc || x.Loc != "") {
			xs = append(xs, x)
		}
	}
	slices.SortStableFunc(xs, func(a, b XID) int { return cmpInt(a.T, b.T) })
	counts, last := map[string]int{}, map[string]int64{}
	var keys []string
	end, longEnd, n := int64(0), int64(-1)<<62, 0
	seen := map[string]int{}
	for _, x := range xs {
		long := slices.Contains(rule.LongGapXIDs, x.XID)
		if n == 0 || (x.T-end > int64(rule.Gap/time.Second) && !(long && x.T-longEnd <= int64(rule.LongGap/time.Second))) {
			n++
		}
		end = max(end, x.TLast)
		if long {
			longEnd = max(longEnd, x.TLast)
		}
		k := strconv.Itoa(x.XID)
		if rule.SameLoc {
			k += " at GPC/TPC " + x.Loc
		}
		if seen[k] != n {
			seen[k] = n
			counts[k]++
			if counts[k] == 1 {
				keys = append(keys, k)
			}
		}
		last[k] = x.TLast
	}
	for _, k := range keys {
		if counts[k] < rule.Count {
			continue
		}
		xid, _ := strconv.Atoi(strings.Fields(k)[0])
		cmd := "`nodecheck history clear --gpu " + g.Bus + "`"
		msg := xs[slices.IndexFunc(xs, func(x XID) bool { return x.XID == xid })].Msg
		return Judgement{Rule: "xid_repeat", Status: StatusFail, Target: "gpu", Key: g.Key(), Device: g.Label(), GPU: g.ID(), XID: xid, XIDMessage: msg,
			Summary: fmt.Sprintf("%s: XID %s in %d bursts within %s, last at %s (%s: fails at %d); clear with %s",
				g.Label(), k, counts[k], human(rule.Window), stamp(last[k]), rule.Name, rule.Count, cmd),
			Clear:    "fewer than " + strconv.Itoa(rule.Count) + " bursts within " + human(rule.Window) + " (no new one for that long), or " + cmd,
			Since:    unix(xs[0].T),
			Observed: strconv.Itoa(counts[k]) + " bursts of XID " + k, Expected: "fewer than " + strconv.Itoa(rule.Count) + " within " + human(rule.Window)}, xid, true
	}
	return Judgement{}, 0, false
}

func timesSuffix(n int) string {
	if n <= 1 {
		return ""
	}
	return " (" + strconv.Itoa(n) + " lines)"
}

func moreOf(n int, what string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d more %s)", n, what)
}

// short is the first 8 characters of a boot id.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
