package history

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Selector names what an admin clears: exactly one of All, GPU (a bus id in any form, a UUID,
// or a Key such as "serial:N") and Port ("mlx5_0/1", or an interface on it, "ib0").
type Selector struct {
	All  bool
	GPU  string
	Port string
}

// Clear records that who cleared sel at, for reason: XIDs, rates and flaps of the target up
// to at no longer count. The clear is written into the file (and shown in the timeline), so
// that it is an audit record, not a deletion. It returns the clears recorded; an error names
// what is known when the selector matches nothing. Times after at in h are the clock's fault
// (see clock.go): they are moved back before at first, so that the clear covers what the
// admin saw.
func (h *History) Clear(sel Selector, who string, at time.Time, reason string) ([]Clear, error) {
	who, reason = clip(who, maxWhoLen), clip(reason, maxReasonLen)
	if who == "" {
		return nil, errors.New("clear: say who clears (the admin's user name)")
	}
	n := 0
	for _, set := range []bool{sel.All, sel.GPU != "", sel.Port != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("clear: give one of --all, --gpu BUS or --port DEVICE/PORT")
	}
	var out []Clear
	switch {
	case sel.All:
		out = []Clear{{Target: "all", Who: who, At: at.Unix(), Reason: reason}}
	case sel.GPU != "":
		for _, g := range h.selectGPUs(sel.GPU) {
			out = append(out, Clear{Target: "gpu", Key: g.Key(), Bus: g.Bus, Who: who, At: at.Unix(), Reason: reason})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("clear: no GPU %q in the history (known: %s)", sel.GPU, h.knownGPUs())
		}
	default:
		i := slices.IndexFunc(h.Ports, func(p Port) bool { return p.Key() == sel.Port || slices.Contains(p.Netdevs, sel.Port) })
		if i < 0 {
			var known []string
			for _, p := range h.Ports {
				known = append(known, p.Key())
			}
			return nil, fmt.Errorf("clear: no port %q in the history (known: %s)", sel.Port, orNone(known))
		}
		out = []Clear{{Target: "port", Key: h.Ports[i].Key(), Who: who, At: at.Unix(), Reason: reason}}
	}
	if newest := h.newest(); newest > at.Unix()+int64(clockSlack/time.Second) {
		h.moveBack(at.Unix(), newest, "", 0)
	}
	h.Clears = append(h.Clears, out...)
	slices.SortStableFunc(h.Clears, func(a, b Clear) int { return cmpInt(a.At, b.At) })
	return out, nil
}

// selectGPUs finds GPUs by bus id (every record last seen there, newest boot first), UUID or
// key.
func (h *History) selectGPUs(s string) []GPU {
	var out []GPU
	bus, isBus := NormalizeBus(s)
	for _, g := range h.GPUs {
		if (isBus && g.Bus == bus) || g.UUID == s || g.Key() == s {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b GPU) int { return cmpInt(b.LastSeen, a.LastSeen) })
	return out
}

func (h *History) knownGPUs() string {
	var known []string
	for _, g := range h.GPUs {
		known = append(known, g.Bus+" "+g.Key())
	}
	return orNone(known)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// RecordRepair adds r to the repair record, or updates the entry with the same target, key,
// action and start (a pending repair that finished).
func (h *History) RecordRepair(r Repair) error {
	switch r.Target {
	case "gpu", "node":
	default:
		return fmt.Errorf("repair: target %q: want gpu or node", r.Target)
	}
	switch r.Outcome {
	case OutcomePending, OutcomeOK, OutcomeFailed, OutcomeRefused:
	default:
		return fmt.Errorf("repair: outcome %q: want %s, %s, %s or %s", r.Outcome, OutcomePending, OutcomeOK, OutcomeFailed, OutcomeRefused)
	}
	if r.Action == "" || r.Started <= 0 {
		return errors.New("repair: needs an action and a start time")
	}
	r.Key, r.Bus, r.Serial = clip(r.Key, maxIDLen), clip(r.Bus, maxIDLen), clip(r.Serial, maxIDLen)
	r.Action, r.Fault, r.Detail, r.Who = clip(r.Action, maxSrcLen), clip(r.Fault, maxReasonLen), clip(r.Detail, maxReasonLen), clip(r.Who, maxWhoLen)
	i := slices.IndexFunc(h.Repairs, func(x Repair) bool {
		return x.Target == r.Target && x.Key == r.Key && x.Action == r.Action && x.Started == r.Started
	})
	if i >= 0 {
		h.Repairs[i] = r
		return nil
	}
	h.Repairs = append(h.Repairs, r)
	slices.SortStableFunc(h.Repairs, func(a, b Repair) int { return cmpInt(a.Started, b.Started) })
	return nil
}

// RepairsSince lists the repairs of target ("node", or a GPU's Key) started at or after
// since, oldest first: the repair step's escalation counts them (NVSentinel: 5 in 7 days).
func (h *History) RepairsSince(key string, since time.Time) []Repair {
	var out []Repair
	for _, r := range h.Repairs {
		if r.Started >= since.Unix() && ((key == "node" && r.Target == "node") || (r.Target == "gpu" && r.Key == key)) {
			out = append(out, r)
		}
	}
	return out
}
