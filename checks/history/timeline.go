package history

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// TimelineOptions select what `nodecheck history` shows.
type TimelineOptions struct {
	// GPU keeps only the GPU(s) at this bus id (any form) or with this UUID or Key, and no
	// ports.
	GPU string
	// Port keeps only the port with this key ("mlx5_0/1") or interface ("ib0"), and no GPUs.
	Port string
	// Since leaves out entries older than now less Since; 0 keeps all.
	Since time.Duration
}

// Timeline is the node's history as an admin reads it: per GPU and port, what happened, what
// holds now and why, and what would clear it. Its JSON is `nodecheck history --format json`.
type Timeline struct {
	Node  string    `json:"node"`
	Now   time.Time `json:"now"`
	Since time.Time `json:"since,omitzero"`
	// Boot is the current boot id.
	Boot  string           `json:"boot,omitempty"`
	GPUs  []DeviceTimeline `json:"gpus"`
	Ports []DeviceTimeline `json:"ports"`
	// NodeEntries are boots, driver loads, clears of everything, node repairs and validations.
	NodeEntries []Entry `json:"node_entries"`
	// Findings are the node's own judgements that are not ok: the clock (JudgeClock).
	Findings []Judgement `json:"findings,omitempty"`
}

// DeviceTimeline is one GPU's or port's part of the timeline.
type DeviceTimeline struct {
	Device string `json:"device"`
	Key    string `json:"key"`
	// Status is the worst of the device's judgements, leaving out the rules that could not
	// judge yet (skip) when another did: a GPU whose XIDs are judged but whose counters have
	// no rate yet is not a SKIP. Summary says what each kind of rule knows.
	Status  Status `json:"status"`
	Summary string `json:"summary,omitempty"`
	// Findings are the judgements that are not ok: what holds, since when, what clears it.
	Findings []Judgement `json:"findings"`
	Entries  []Entry     `json:"entries"`
}

// Entry is one line of a timeline.
type Entry struct {
	Time time.Time `json:"time"`
	// Kind is "xid", "reset", "repair", "clear", "counters", "state", "link", "boot",
	// "driver_load" or "validation".
	Kind string `json:"kind"`
	Text string `json:"text"`
	// InForce marks a reset- or reboot-class XID that still holds; EndedBy says what ended
	// one that no longer does.
	InForce bool   `json:"in_force,omitempty"`
	EndedBy string `json:"ended_by,omitempty"`
}

// BuildTimeline is the timeline of h at now under r. It is pure: the same file, time and
// rules give the same timeline. Times after now are the clock's fault: the timeline shows
// them moved back, as the judges judge them, and says so (Findings).
func (h *History) BuildTimeline(now time.Time, r Rules, o TimelineOptions) Timeline {
	h = h.asOf(now)
	tl := Timeline{Node: h.Node, Now: now.UTC(), GPUs: []DeviceTimeline{}, Ports: []DeviceTimeline{}, NodeEntries: []Entry{}}
	cut := int64(-1) << 62
	if o.Since > 0 {
		tl.Since = now.Add(-o.Since).UTC()
		cut = tl.Since.Unix()
	}
	if b := h.current(); b != nil {
		tl.Boot = b.ID
	}
	byKey := map[string][]Judgement{}
	for _, j := range h.Judge(now, r) {
		if j.Target == "node" {
			tl.Findings = append(tl.Findings, j)
			continue
		}
		byKey[j.Target+" "+j.Key] = append(byKey[j.Target+" "+j.Key], j)
	}
	keep := func(es []Entry) []Entry {
		es = slices.DeleteFunc(es, func(e Entry) bool { return e.Time.Unix() < cut })
		slices.SortStableFunc(es, func(a, b Entry) int { return a.Time.Compare(b.Time) })
		return es
	}
	want := h.GPUs
	switch {
	case o.GPU != "":
		want = h.selectGPUs(o.GPU)
	case o.Port != "":
		want = nil
	}
	for _, g := range want {
		tl.GPUs = append(tl.GPUs, device(g.Label(), g.Key(), byKey["gpu "+g.Key()], keep(h.gpuEntries(g, r))))
	}
	if o.GPU != "" {
		return tl
	}
	for _, p := range h.Ports {
		if o.Port == "" || p.Key() == o.Port || slices.Contains(p.Netdevs, o.Port) {
			tl.Ports = append(tl.Ports, device(p.Label(), p.Key(), byKey["port "+p.Key()], keep(h.portEntries(p))))
		}
	}
	if o.Port == "" {
		tl.NodeEntries = keep(h.nodeEntries())
	}
	return tl
}

func device(label, key string, js []Judgement, es []Entry) DeviceTimeline {
	judged := slices.DeleteFunc(slices.Clone(js), func(j Judgement) bool { return j.Status == StatusSkip })
	st := Worst(judged)
	if len(judged) == 0 && len(js) > 0 {
		st = StatusSkip
	}
	d := DeviceTimeline{Device: label, Key: key, Status: st, Summary: known(js), Findings: []Judgement{}, Entries: es}
	for _, j := range js {
		if j.Status != StatusOK {
			d.Findings = append(d.Findings, j)
		}
	}
	if d.Entries == nil {
		d.Entries = []Entry{}
	}
	return d
}

// ruleKinds are the kinds of rules a device summary names, by rule id prefix.
var ruleKinds = []struct{ prefix, name string }{{"xid", "XIDs"}, {"rate", "rates"}, {"ib_flap", "links"}}

// known says what each kind of rule knows of a device: "XIDs: none in force; rates: no rate
// yet". An ok kind says what it saw, a kind that could not judge yet says so, and one that
// warns or fails says which (its findings follow).
func known(js []Judgement) string {
	var parts []string
	for _, k := range ruleKinds {
		var of []Judgement
		for _, j := range js {
			if strings.HasPrefix(j.Rule, k.prefix) {
				of = append(of, j)
			}
		}
		if len(of) == 0 {
			continue
		}
		var what string
		switch w := Worst(of); {
		case w == StatusFail || w == StatusWarn:
			what = string(w)
		case w == StatusSkip:
			what = "no rate yet"
			if k.prefix != "rate" {
				what = "not judged yet"
			}
		case k.prefix == "xid":
			what = "none in force"
		case k.prefix == "rate":
			what = "ok, " + of[0].Observed
		default:
			what = of[0].Observed
		}
		parts = append(parts, k.name+": "+what)
	}
	return strings.Join(parts, "; ")
}

func (h *History) gpuEntries(g GPU, r Rules) []Entry {
	var es []Entry
	for _, x := range g.XIDs {
		e := Entry{Time: unix(x.T), Kind: "xid", Text: "XID " + fmt.Sprint(x.XID)}
		if x.N > 1 {
			e.Text += fmt.Sprintf(" (%d lines until %s)", x.N, stamp(x.TLast))
		}
		if x.Msg != "" {
			e.Text += ": " + x.Msg
		}
		if c := r.Class(x); c == XIDReset || c == XIDReboot {
			reboot := c == XIDReboot
			by, _ := h.stickyEnd(g, x, reboot)
			e.InForce, e.EndedBy = by == "", by
		}
		es = append(es, e)
	}
	for _, rs := range g.Resets {
		es = append(es, Entry{Time: unix(rs.T), Kind: "reset", Text: "GPU reset (" + rs.Source + ")"})
	}
	for _, rp := range h.Repairs {
		if rp.Target == "gpu" && rp.Key == g.Key() {
			es = append(es, repairEntry(rp))
		}
	}
	for _, c := range h.Clears {
		if c.Target == "gpu" && c.Key == g.Key() {
			es = append(es, clearEntry(c))
		}
	}
	for i, s := range g.Samples {
		switch {
		case i > 0 && s.Gen != g.Samples[i-1].Gen:
			es = append(es, Entry{Time: unix(s.T), Kind: "counters", Text: "counters restarted: " + readings(s)})
		case i == len(g.Samples)-1:
			es = append(es, Entry{Time: unix(s.T), Kind: "counters", Text: fmt.Sprintf("newest of %d readings: %s", len(g.Samples), readings(s))})
		}
	}
	return es
}

func readings(s Sample) string {
	var parts []string
	for c := range NumCounters {
		if s.C[c] >= 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, s.C[c]))
		}
	}
	return strings.Join(parts, ", ")
}

func (h *History) portEntries(p Port) []Entry {
	var es []Entry
	for _, c := range h.Clears {
		if c.Target == "port" && c.Key == p.Key() {
			es = append(es, clearEntry(c))
		}
	}
	for _, s := range p.States {
		es = append(es, Entry{Time: unix(s.T), Kind: "state", Text: fmt.Sprintf("state %d%s, phys_state %d%s, until %s",
			s.State, stateName(s.State), s.Phys, physName(s.Phys), stamp(s.Until))})
	}
	for _, e := range p.Events {
		what := "link down"
		if e.Up {
			what = "link up"
		}
		es = append(es, Entry{Time: unix(e.T), Kind: "link", Text: what + " (" + e.Src + ")"})
	}
	for i, d := range p.Downed {
		if i > 0 && d.Boot == p.Downed[i-1].Boot && d.V > p.Downed[i-1].V {
			es = append(es, Entry{Time: unix(d.T), Kind: "link", Text: fmt.Sprintf("link_downed %d -> %d", p.Downed[i-1].V, d.V)})
		}
	}
	return es
}

var stateNames = map[int]string{1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
var physNames = map[int]string{1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}

func stateName(s int) string { return paren(stateNames[s]) }
func physName(s int) string  { return paren(physNames[s]) }

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func (h *History) nodeEntries() []Entry {
	var es []Entry
	for _, b := range h.Boots {
		at := b.FirstSeen
		text := "boot " + b.ID + " first seen"
		if b.Time > 0 {
			at, text = b.Time, "boot "+b.ID+" began"
		}
		es = append(es, Entry{Time: unix(at), Kind: "boot", Text: text})
		for i, k := range b.DriverLoads {
			if b.Time > 0 {
				what := "NVIDIA driver loaded"
				if i > 0 {
					what = "NVIDIA driver reloaded (every GPU reset)"
				}
				es = append(es, Entry{Time: unix(b.Time + k/1e6), Kind: "driver_load", Text: what})
			}
		}
	}
	for _, c := range h.Clears {
		if c.Target == "all" {
			es = append(es, clearEntry(c))
		}
	}
	for _, rp := range h.Repairs {
		if rp.Target == "node" {
			es = append(es, repairEntry(rp))
		}
	}
	for _, v := range h.Validations {
		es = append(es, validationEntry(v))
	}
	return es
}

// validationEntry is "validation quick passed in 312s", with the figures below their floor.
func validationEntry(v Validation) Entry {
	text := fmt.Sprintf("validation %s %s in %ds", v.Level, v.Verdict, v.Duration)
	var low []string
	for _, f := range v.Figures {
		if !f.OK {
			dev := ""
			if f.Device != "" {
				dev = " " + f.Device
			}
			low = append(low, fmt.Sprintf("%s%s %g below floor %g", f.Name, dev, f.Value, f.Floor))
		}
	}
	if len(low) > 0 {
		text += ": " + strings.Join(low, ", ")
	}
	return Entry{Time: unix(v.Started), Kind: "validation", Text: text}
}

func clearEntry(c Clear) Entry {
	text := "cleared by " + c.Who
	if c.Reason != "" {
		text += ": " + c.Reason
	}
	return Entry{Time: unix(c.At), Kind: "clear", Text: text}
}

func repairEntry(r Repair) Entry {
	text := "repair " + r.Action + ": " + r.Outcome
	if r.Fault != "" {
		text += " (for " + r.Fault + ")"
	}
	if r.Detail != "" {
		text += ": " + r.Detail
	}
	return Entry{Time: unix(r.Started), Kind: "repair", Text: text}
}

// WriteText renders tl for people: per device its status, what holds and what clears it,
// then its entries, oldest first.
func (tl Timeline) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s at %s", tl.Node, tl.Now.Format(time.RFC3339))
	if tl.Boot != "" {
		fmt.Fprintf(&b, ", boot %s", tl.Boot)
	}
	if !tl.Since.IsZero() {
		fmt.Fprintf(&b, ", entries since %s", tl.Since.Format(time.RFC3339))
	}
	b.WriteString("\n")
	for _, f := range tl.Findings {
		fmt.Fprintf(&b, "  %-4s %s\n", f.Status, f.Summary)
		if f.Clear != "" {
			fmt.Fprintf(&b, "       clears with: %s\n", f.Clear)
		}
	}
	for _, d := range append(slices.Clone(tl.GPUs), tl.Ports...) {
		fmt.Fprintf(&b, "\n%s: %s", d.Device, strings.ToUpper(string(d.Status)))
		if d.Summary != "" {
			fmt.Fprintf(&b, " (%s)", d.Summary)
		}
		b.WriteString("\n")
		for _, f := range d.Findings {
			fmt.Fprintf(&b, "  %-4s %s\n", f.Status, f.Summary)
			if f.Clear != "" {
				fmt.Fprintf(&b, "       clears with: %s\n", f.Clear)
			}
		}
		writeEntries(&b, d.Entries)
	}
	if len(tl.NodeEntries) > 0 {
		b.WriteString("\nnode:\n")
		writeEntries(&b, tl.NodeEntries)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeEntries(b *strings.Builder, es []Entry) {
	for _, e := range es {
		fmt.Fprintf(b, "  %s  %-11s %s", e.Time.Format(time.RFC3339), e.Kind, e.Text)
		switch {
		case e.InForce:
			b.WriteString("  [in force]")
		case e.EndedBy != "":
			b.WriteString("  [ended by " + e.EndedBy + "]")
		}
		b.WriteString("\n")
	}
}

// WriteJSON renders tl as indented JSON.
func (tl Timeline) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tl)
}
