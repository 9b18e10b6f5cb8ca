package history

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// eccAt is h100 with its volatile correctable ECC count at v.
func eccAt(v uint64) GPUObs {
	g := h100
	g.Counters[ECCCorrected] = Read(v)
	return g
}

// TestClockAheadDoesNotBlindTheRates: one run with the clock five years ahead (a node that
// booted before NTP set the time), then runs at the right time with correctable ECC errors
// climbing far over the fail rate (3,600,000/h): the rate must fail, never "no rate yet",
// whether the node rebooted in between or NTP stepped the clock back in the same boot.
func TestClockAheadDoesNotBlindTheRates(t *testing.T) {
	ahead := t0.AddDate(5, 0, 0)
	for _, tc := range []struct {
		name     string
		nextBoot string
	}{
		{"NTP stepped the clock back in the same boot", "boot-a"},
		{"the node rebooted with the right time", "boot-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, r := DefaultLimits(), DefaultRules()
			h := New("gpu01")
			h.Merge(ahead, run(ahead, "boot-a", ahead.Add(-time.Hour), dmesg1, eccAt(100)), lim)
			up := time.Hour + 10*time.Minute
			if tc.nextBoot != "boot-a" {
				up = 10 * time.Minute
			}
			rep := h.Merge(t0, run(t0, tc.nextBoot, t0.Add(-up), "", eccAt(200)), lim)
			if !strings.Contains(rep.Clock, "after this run's time "+t0.Format(time.RFC3339)) || !strings.Contains(rep.Clock, "clock") {
				t.Errorf("merge at the right time: clock warning %q, want one naming the clock and this run's time", rep.Clock)
			}
			if js := h.JudgeClock(t0); len(js) != 1 || js[0].Status != StatusWarn {
				t.Errorf("clock judgement %+v, want one warning", js)
			}
			now := t0.Add(time.Hour)
			h.Merge(now, run(now, tc.nextBoot, t0.Add(-up), "", eccAt(10_000_200)), lim)
			js := h.JudgeRates(now, r)
			if len(js) != 1 || js[0].Status != StatusFail || js[0].Rule != "rate_ecc_corrected" {
				t.Errorf("an hour later, +10,000,000 correctable errors: got %+v; want rate_ecc_corrected fail", js)
			}
			for _, s := range h.GPUs[0].Samples {
				if s.T > now.Unix() {
					t.Errorf("a reading at %s is still after the run's time %s", stamp(s.T), now.Format(time.RFC3339))
				}
			}
		})
	}
}

// xid48 is an XID 48 (reset-class) 2002 s after boot on h100's bus; line shape of
// invented.log's XID 79.
const xid48 = "[ 2002.000002] NVRM: Xid (PCI:0000:9b:00): 48, pid=4242, name=python3, An uncorrectable double bit error\n"

// aheadThenBack is a boot of gpu01 whose first run (an hour after boot) had the clock five
// years ahead and saw XID 48; NTP then stepped the clock back, and the next run is at t0, ten
// minutes later by the boot's uptime.
func aheadThenBack(t *testing.T) *History {
	t.Helper()
	ahead := t0.AddDate(5, 0, 0).Add(-10 * time.Minute)
	h := New("gpu01")
	h.Merge(ahead, run(ahead, "boot-a", ahead.Add(-time.Hour), xid48, eccAt(100)), DefaultLimits())
	return h
}

// TestClockAheadXIDEnds: an XID recorded while the clock was ahead still ends with a GPU
// reset, a repair or an admin clear made at the right time, and is still in force without
// one; the boot's uptime measures the clock's error, so the XID lands at its true time.
func TestClockAheadXIDEnds(t *testing.T) {
	bootA := t0.Add(-time.Hour - 10*time.Minute) // by uptime, at t0
	tests := []struct {
		name  string
		merge bool // a run at t0 merges (and so measures the clock) before the end
		end   func(h *History)
		want  Status
	}{
		{"in force without an end", true, func(*History) {}, StatusFail},
		{"ended by a GPU reset at the right time", true, func(h *History) {
			o := run(t0.Add(5*time.Minute), "boot-a", bootA, xid48, eccAt(100))
			o.Resets = []ResetObs{{UUID: h100.UUID, At: t0.Add(4 * time.Minute), Source: "nvidia-smi"}}
			h.Merge(t0.Add(5*time.Minute), o, DefaultLimits())
		}, StatusOK},
		{"ended by a repair's reset", true, func(h *History) {
			if err := h.RecordRepair(Repair{Target: "gpu", Key: h100.UUID, Action: "reset_gpu", Started: t0.Add(4 * time.Minute).Unix(),
				Finished: t0.Add(5 * time.Minute).Unix(), Outcome: OutcomeOK}); err != nil {
				t.Fatal(err)
			}
		}, StatusOK},
		{"ended by an admin clear after the merge", true, func(h *History) {
			if _, err := h.Clear(Selector{GPU: "0000:9b:00.0"}, "root", t0.Add(5*time.Minute), "reset by hand"); err != nil {
				t.Fatal(err)
			}
		}, StatusOK},
		{"ended by an admin clear before any merge", false, func(h *History) {
			if _, err := h.Clear(Selector{GPU: "0000:9b:00.0"}, "root", t0.Add(5*time.Minute), "reset by hand"); err != nil {
				t.Fatal(err)
			}
		}, StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := aheadThenBack(t)
			if tc.merge {
				h.Merge(t0, run(t0, "boot-a", bootA, xid48, eccAt(100)), DefaultLimits())
				want := bootA.Add(2002 * time.Second).Unix()
				if x := h.GPUs[0].XIDs[0]; x.T != want || h.Boots[0].Time != bootA.Unix() {
					t.Errorf("XID at %s, boot at %s; want %s and %s (moved back by the clock's error)", stamp(x.T), stamp(h.Boots[0].Time), stamp(want), bootA.Format(time.RFC3339))
				}
			}
			tc.end(h)
			js := only(h.JudgeXIDs(t0.Add(10*time.Minute), DefaultRules()), "gpu")
			if Worst(js) != tc.want {
				t.Errorf("got %+v; want %s", js, tc.want)
			}
		})
	}
}

// TestClockAheadFlapsClear: a port whose link went down three times while the clock was
// ahead fails (sticky); an admin's clear at the right time ends it.
func TestClockAheadFlapsClear(t *testing.T) {
	ahead := t0.AddDate(5, 0, 0)
	var log strings.Builder
	for i := range 3 {
		fmt.Fprintf(&log, "<6>[ %d.000001] mlx5_core 0000:41:00.0 ib0: Link down\n<6>[ %d.000001] mlx5_core 0000:41:00.0 ib0: Link up\n", 1000+60*i, 1010+60*i)
	}
	h := New("gpu01")
	o := run(ahead, "boot-a", ahead.Add(-time.Hour), log.String())
	o.Ports = []PortObs{{Device: "mlx5_0", Port: 1, Netdevs: []string{"ib0"}, State: 4, PhysState: 5}}
	h.Merge(ahead, o, DefaultLimits())
	if js := h.JudgeFlaps(t0, DefaultRules()); Worst(js) != StatusFail {
		t.Fatalf("before the clear: %+v; want a fail", js)
	}
	if _, err := h.Clear(Selector{Port: "mlx5_0/1"}, "root", t0, "cable reseated"); err != nil {
		t.Fatal(err)
	}
	if js := h.JudgeFlaps(t0.Add(time.Minute), DefaultRules()); Worst(js) != StatusOK {
		t.Errorf("after the clear: %+v; want ok", js)
	}
}

// TestClockPrune: a run with the clock years ahead prunes nothing recorded before it by age
// (the repair record escalation counts survives), and what it recorded ages out once moved
// back.
func TestClockPrune(t *testing.T) {
	lim := DefaultLimits()
	h := New("gpu01")
	h.Merge(t0, run(t0, "boot-a", t0.Add(-time.Hour), dmesg1, eccAt(100)), lim)
	if err := h.RecordRepair(Repair{Target: "gpu", Key: h100.UUID, Action: "reset_gpu", Started: t0.Unix(), Finished: t0.Unix() + 60, Outcome: OutcomeFailed}); err != nil {
		t.Fatal(err)
	}
	ahead := t0.AddDate(5, 0, 0)
	rep := h.Merge(ahead, run(ahead, "boot-b", ahead.Add(-time.Hour), xid48, eccAt(100)), lim)
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "its clock is ahead") {
		t.Errorf("notes %q: want the jump forward named", rep.Notes)
	}
	if _, err := Encode(h, ahead, lim); err != nil {
		t.Fatal(err)
	}
	// NTP fixes the clock in the same boot, an hour after the first run.
	back := t0.Add(2 * time.Hour)
	h.Merge(back, run(back, "boot-b", back.Add(-2*time.Hour), xid48, eccAt(100)), lim)
	if rs := h.RepairsSince(h100.UUID, t0.Add(-time.Hour)); len(rs) != 1 {
		t.Errorf("repairs since before the jump: %+v; want the one recorded", rs)
	}
	// Runs 20 and 40 days later, in another boot: boot-a's XID 79 and boot-b's XID 48 are
	// then past MaxAge.
	for _, d := range []time.Duration{20, 40} {
		later := t0.Add(d * 24 * time.Hour)
		h.Merge(later, run(later, "boot-c", t0.Add(19*24*time.Hour), "", eccAt(100)), lim)
		if _, err := Encode(h, later, lim); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range h.GPUs {
		if len(g.XIDs) > 0 {
			t.Errorf("%s still holds %+v", g.Label(), g.XIDs)
		}
	}
	if h.Clock.JumpTo != 0 {
		t.Errorf("clock %+v: the jump is over", h.Clock)
	}
}

// TestClockFileReadsBack: a history whose times were moved back, with its clock record,
// encodes and decodes as it was.
func TestClockFileReadsBack(t *testing.T) {
	h := aheadThenBack(t)
	h.Merge(t0, run(t0, "boot-b", t0.Add(-time.Minute), "", eccAt(100)), DefaultLimits())
	if h.Clock.Found != t0.Unix() || h.Clock.Measured || h.Clock.Dropped != 1 {
		t.Errorf("clock %+v: want found at t0, not measured (another boot), one reading dropped", h.Clock)
	}
	data, err := Encode(h, t0, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data, "gpu01", 1<<20)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if back.Clock != h.Clock {
		t.Errorf("clock read back %+v, want %+v", back.Clock, h.Clock)
	}
	// boot-a's XID lands before boot-b began.
	if x := back.GPUs[0].XIDs[0]; x.TLast >= t0.Add(-time.Minute).Unix() {
		t.Errorf("XID at %s, after boot-b began", stamp(x.TLast))
	}
	if js := back.JudgeClock(t0.Add(23 * time.Hour)); len(js) != 1 || !strings.Contains(js[0].Summary, "after the time of the run at "+t0.Format(time.RFC3339)) {
		t.Errorf("a day less an hour later: %+v", js)
	}
	if js := back.JudgeClock(t0.Add(24 * time.Hour)); len(js) != 0 {
		t.Errorf("a day later: %+v; want no warning", js)
	}
}

// TestClockTimeline: `nodecheck history` on a file the clock-ahead run wrote, read at the
// right time, shows the clock's warning and judges from the times moved back.
func TestClockTimeline(t *testing.T) {
	h := aheadThenBack(t)
	tl := h.BuildTimeline(t0, DefaultRules(), TimelineOptions{})
	var b strings.Builder
	if err := tl.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "system clock went back") || len(tl.Findings) != 1 {
		t.Errorf("timeline findings %+v:\n%s", tl.Findings, b.String())
	}
	if e := tl.GPUs[0].Entries[0]; e.Time.After(t0) || !e.InForce {
		t.Errorf("XID entry %+v: want it before now and in force", e)
	}
}

// TestClockSyslogAhead: syslog lines dated after the run are left out (they would be moved
// back again at every run).
func TestClockSyslogAhead(t *testing.T) {
	h := New("gpu01")
	o := run(t0, "boot-a", t0.Add(-time.Hour), "")
	o.Ports = []PortObs{{Device: "mlx5_0", Port: 1, Netdevs: []string{"ib0"}, State: 4, PhysState: 5}}
	o.SyslogLinks = []LinkLine{{Netdev: "ib0", Wall: t0.Add(-time.Minute), Src: "syslog"}, {Netdev: "ib0", Wall: t0.Add(5 * time.Hour), Src: "syslog"}}
	rep := h.Merge(t0, o, DefaultLimits())
	if n := len(h.Ports[0].Events); n != 1 || !strings.Contains(strings.Join(rep.Notes, "\n"), "1 syslog link lines dated after this run's time left out") {
		t.Errorf("%d events, notes %q", n, rep.Notes)
	}
}
