package repair

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/drain"
)

// ServiceCheck is the word after the prefix of an escalation's reason ("nodecheck: service:
// ..."): drain reads it as a check no run of the node's checks can lift, so the node is
// resumed only by hand.
const ServiceCheck = "service"

// count is how many repairs of the record started at or after since and concern gpu (by
// serial, else UUID, else bus), or, with gpu nil, the node (every repair counts for the node).
func count(rec Record, gpu *GPU, since time.Time) int {
	n := 0
	for _, e := range rec.Entries {
		if e.Started.Before(since) {
			continue
		}
		if gpu == nil {
			n++
			continue
		}
		for _, g := range e.GPUs {
			if sameGPU(g, *gpu) {
				n++
				break
			}
		}
	}
	return n
}

// sameGPU tells one GPU by its serial, else its UUID (a replaced GPU in the same slot is a
// new GPU), else, when neither side knows them, its bus id.
func sameGPU(a, b GPU) bool {
	switch {
	case a.Serial != "" && b.Serial != "":
		return a.Serial == b.Serial
	case a.UUID != "" && b.UUID != "":
		return a.UUID == b.UUID
	}
	return a.Bus == b.Bus
}

// limitReached returns an escalation when one more repair (action, for gpus) would pass the
// limits: a GPU with GPURepairs repairs within GPUWindow, or the node with NodeRepairs within
// NodeWindow.
func (p Policy) limitReached(in Input, action string, gpus []GPU) (Decision, bool) {
	for _, g := range gpus {
		if n := count(in.Record, &g, in.Now.Add(-p.GPUWindow)); n >= p.GPURepairs {
			return p.escalation(in, &g, n, p.GPUWindow, "before a "+actionWords(action)), true
		}
	}
	if n := count(in.Record, nil, in.Now.Add(-p.NodeWindow)); n >= p.NodeRepairs {
		return p.escalation(in, nil, n, p.NodeWindow, "before a "+actionWords(action)), true
	}
	return Decision{}, false
}

// escalate stops the repairs of a node whose last rung did not help: it names the first GPU
// the failures concern, else the node, with its repairs in the window.
func (p Policy) escalate(in Input, gpus []GPU, what string) Decision {
	if len(gpus) > 0 {
		g := gpus[0]
		return p.escalation(in, &g, count(in.Record, &g, in.Now.Add(-p.GPUWindow)), p.GPUWindow, what)
	}
	return p.escalation(in, nil, count(in.Record, nil, in.Now.Add(-p.NodeWindow)), p.NodeWindow, what)
}

// escalation is the decision to mark the node for service, with the reason
// "nodecheck: service: <gpu serial> <bus id> <count> repairs in <window>: <what>".
func (p Policy) escalation(in Input, gpu *GPU, n int, w time.Duration, what string) Decision {
	target := "node"
	var gpus []GPU
	if gpu != nil {
		gpus = []GPU{*gpu}
		id := gpu.Serial
		if id == "" {
			id = gpu.UUID
		}
		target = "gpu " + gpu.Bus
		if id != "" {
			target = "gpu " + id + " " + gpu.Bus
		}
	}
	reason := drain.Sanitize(fmt.Sprintf("%s %s: %s %s in %s: %s", p.Prefix, ServiceCheck, target, plural(n, "repair"), window(w), what))
	if len(reason) > drain.MaxReasonLen {
		reason = reason[:drain.MaxReasonLen]
	}
	return Decision{Step: StepEscalate, Reason: reason, GPUs: gpus,
		Message: fmt.Sprintf("repairs stopped, the node stays out of service for a person: %s", reason)}
}

// window writes a window as admins write it: "7d", "36h", "90m".
func window(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return d.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// Counts is what the repair record holds at the end of a run, for the metrics: the repairs of
// the node within node_window, and of each GPU within gpu_window (the counts escalation
// compares with node_repairs and gpu_repairs).
type Counts struct {
	Node int
	GPUs []GPUCount // every GPU NVML listed, then the record's other GPUs, by bus id
	// UnderWay is when the repair under way started (the record's last entry, while its
	// outcome is pending: a reset or reboot done or asked, the clean runs not yet enough);
	// zero when none is.
	UnderWay time.Time
}

// GPUCount is one GPU's repairs within gpu_window.
type GPUCount struct {
	Bus string
	N   int
}

// countsOf counts rec's repairs at now: the node's, and those of each GPU of gpus (NVML's)
// and of the record. A GPU reset only as a peer is not counted, as escalation does not.
func (p Policy) countsOf(rec Record, gpus []GPU, now time.Time) *Counts {
	c := &Counts{Node: count(rec, nil, now.Add(-p.NodeWindow))}
	if e, ok := rec.Last(); ok && e.Outcome == OutcomePending {
		c.UnderWay = e.Started
	}
	seen := func(g GPU) bool {
		return slices.ContainsFunc(c.GPUs, func(x GPUCount) bool { return x.Bus == g.Bus })
	}
	add := func(g GPU) {
		if g.Bus != "" && !seen(g) {
			c.GPUs = append(c.GPUs, GPUCount{Bus: g.Bus, N: count(rec, &g, now.Add(-p.GPUWindow))})
		}
	}
	for _, g := range gpus {
		add(g)
	}
	for _, e := range rec.Entries {
		if !e.Started.Before(now.Add(-p.GPUWindow)) {
			for _, g := range e.GPUs {
				add(g)
			}
		}
	}
	slices.SortFunc(c.GPUs, func(a, b GPUCount) int { return strings.Compare(a.Bus, b.Bus) })
	return c
}
