package history

// Boundary tests found by mutation testing (docs/development.md, "Mutation testing"): each
// case sits on a comparison of a judge or of Merge, with its neighbour.

import (
	"slices"
	"testing"
	"time"
)

// xidRules are rules with only what the test needs: XID 48 reset-class, 79 reboot-class,
// recent XIDs warning for 6 h, and the repeat rules given.
func xidRules(repeats ...RepeatRule) Rules {
	return Rules{ResetXIDs: []int{48}, RebootXIDs: []int{79}, RecentXIDs: 6 * h1, Repeats: repeats}
}

// ruleOf is the judgement of rule in js, or the zero Judgement.
func ruleOf(js []Judgement, rule string) Judgement {
	if i := slices.IndexFunc(js, func(j Judgement) bool { return j.Rule == rule }); i >= 0 {
		return js[i]
	}
	return Judgement{}
}

// TestJudgeXIDWindows: an XID exactly RecentXIDs old still warns, one second older does not;
// a burst exactly a repeat rule's window old still counts, one second older does not; a rule
// with a count of 0 never fails.
func TestJudgeXIDWindows(t *testing.T) {
	now := t0.Add(12 * h1)
	repeat31 := RepeatRule{Name: "XID 31 twice", XIDs: []int{31}, Count: 2, Window: 6 * h1, Gap: 3 * mi}
	off := RepeatRule{Name: "any XID, off", Count: 0, Window: 6 * h1, Gap: 3 * mi}
	for _, tc := range []struct {
		name    string
		xs      []XID
		r       Rules
		recent  Status // the xid_recent judgement's status; "" for none
		repeats bool   // an xid_repeat judgement
	}{
		{"XID 31 exactly 6 h old warns", []XID{xid(0, 31, 6*h1)}, xidRules(), StatusWarn, false},
		{"one second older does not", []XID{xid(0, 31, 6*h1-time.Second)}, xidRules(), "", false},
		{"two bursts, the first exactly at the window's start", []XID{xid(0, 31, 6*h1), xid(0, 31, 10*h1)}, xidRules(repeat31), "", true},
		{"the first one second before it", []XID{xid(0, 31, 6*h1-time.Second), xid(0, 31, 10*h1)}, xidRules(repeat31), StatusWarn, false},
		{"a rule with count 0 never fails", []XID{xid(0, 31, 8*h1), xid(0, 31, 9*h1), xid(0, 31, 10*h1)}, xidRules(off), StatusWarn, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := History{Boots: boots(1), GPUs: []GPU{gpu(0, tc.xs...)}}
			js := h.JudgeXIDs(now, tc.r)
			if got := ruleOf(js, "xid_recent").Status; got != tc.recent {
				t.Errorf("xid_recent %q, want %q: %+v", got, tc.recent, js)
			}
			if got := ruleOf(js, "xid_repeat"); (got.Rule != "") != tc.repeats {
				t.Errorf("xid_repeat %+v, want one: %v", got, tc.repeats)
			}
		})
	}
}

// TestStickyEndsAtTheSameSecond: a GPU reset, a repair's reset and an admin clear at the very
// second of a reset-class XID end it (they came after it: the XID is what they answer); one
// second before, they do not. Counters that restarted at that second are not after it.
func TestStickyEndsAtTheSameSecond(t *testing.T) {
	xt := 10 * h1
	for _, tc := range []struct {
		name   string
		change func(h *History, g *GPU)
		want   Status
	}{
		{"reset at the XID's second", func(_ *History, g *GPU) { g.Resets = []Reset{{T: at(xt), Boot: 0, Source: "nvidia-smi"}} }, StatusOK},
		{"reset one second before", func(_ *History, g *GPU) { g.Resets = []Reset{{T: at(xt - time.Second), Boot: 0, Source: "nvidia-smi"}} }, StatusFail},
		{"repair finished at the XID's second", func(h *History, _ *GPU) {
			h.Repairs = []Repair{{Target: "gpu", Key: "GPU-1", Action: "reset_gpu", Started: at(xt - mi), Finished: at(xt), Outcome: OutcomeOK}}
		}, StatusOK},
		{"repair finished one second before", func(h *History, _ *GPU) {
			h.Repairs = []Repair{{Target: "gpu", Key: "GPU-1", Action: "reset_gpu", Started: at(xt - mi), Finished: at(xt - time.Second), Outcome: OutcomeOK}}
		}, StatusFail},
		{"clear at the XID's second", func(h *History, _ *GPU) { h.Clears = []Clear{{Target: "gpu", Key: "GPU-1", Who: "root", At: at(xt)}} }, StatusOK},
		{"clear one second before", func(h *History, _ *GPU) {
			h.Clears = []Clear{{Target: "gpu", Key: "GPU-1", Who: "root", At: at(xt - time.Second)}}
		}, StatusFail},
		{"counters restarted at the XID's second", func(_ *History, g *GPU) {
			g.Samples = []Sample{{T: at(xt - h1), Gen: 0, C: cs(500)}, {T: at(xt), Gen: 1, C: cs(3)}}
		}, StatusFail},
		{"counters restarted one second after", func(_ *History, g *GPU) {
			g.Samples = []Sample{{T: at(xt - h1), Gen: 0, C: cs(500)}, {T: at(xt + time.Second), Gen: 1, C: cs(3)}}
		}, StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gpu(0, xid(0, 48, xt))
			h := History{Boots: boots(1)}
			tc.change(&h, &g)
			h.GPUs = []GPU{g}
			js := h.JudgeXIDs(t0.Add(12*h1), xidRules())
			if len(js) != 1 || js[0].Status != tc.want {
				t.Errorf("got %+v, want one %s", js, tc.want)
			}
		})
	}
}

// TestJudgeRatesMinSpan: readings exactly min_span apart make a rate; one second closer do not.
func TestJudgeRatesMinSpan(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want Status
	}{
		{"5 min apart", 5 * mi, StatusWarn},
		{"4 min 59 s apart", 5*mi - time.Second, StatusSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gpu(0)
			g.Samples = samples(0, pt{0, 0}, pt{tc.d, 10_000})
			h := History{Boots: []Boot{{N: 0, ID: "a", Time: at(-h1), FirstSeen: at(0), LastSeen: at(tc.d)}}, GPUs: []GPU{g}}
			js := h.JudgeRates(t0.Add(tc.d), DefaultRules())
			if len(js) != 1 || js[0].Status != tc.want {
				t.Errorf("got %+v, want one %s", js, tc.want)
			}
		})
	}
}

// TestJudgeFlapBoundaries: exactly FlapFail downs fail without the sticky rule too; three
// downs spanning exactly FlapWindow are within it (sticky: the worst window fails), one
// second longer are not.
func TestJudgeFlapBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		downs  []time.Duration
		now    time.Duration
		sticky bool
		want   Status
	}{
		{"three downs within 3 h, not sticky", []time.Duration{10 * h1, 11 * h1, 12 * h1}, 12*h1 + mi, false, StatusFail},
		{"two downs, not sticky", []time.Duration{11 * h1, 12 * h1}, 12*h1 + mi, false, StatusWarn},
		{"three downs spanning exactly 3 h", []time.Duration{10 * h1, 11 * h1, 13 * h1}, 13*h1 + mi, true, StatusFail},
		{"three downs spanning 3 h and a second", []time.Duration{10 * h1, 11 * h1, 13*h1 + time.Second}, 13*h1 + mi, true, StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := port(0)
			p.Events = downs(0, "kernel", tc.downs...)
			h := History{Boots: boots(1), Ports: []Port{p}}
			r := DefaultRules()
			r.FlapSticky = tc.sticky
			js := h.JudgeFlaps(t0.Add(tc.now), r)
			if len(js) != 1 || js[0].Status != tc.want {
				t.Errorf("got %+v, want one %s", js, tc.want)
			}
		})
	}
}

// TestMergeIdentityBoundaries: a record known only by its bus is taken over by the GPU NVML
// shows at that bus in the same boot, not in a later one (a GPU can be replaced across a
// reboot); a serial names the record only where one side has no UUID: the same serial with
// another UUID is another GPU.
func TestMergeIdentityBoundaries(t *testing.T) {
	lim := DefaultLimits()
	t.Run("bus-only record, next boot", func(t *testing.T) {
		h := New("n")
		h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "boot-a", t0, dmesg1), lim)
		h.Merge(t0.Add(30*time.Hour), run(t0.Add(30*time.Hour), "boot-b", t0.Add(29*time.Hour), "", h100), lim)
		if len(h.GPUs) != 2 || h.GPUs[1].UUID != h100.UUID || len(h.GPUs[1].XIDs) != 0 {
			t.Errorf("the GPU of the next boot took over the bus-only record: %+v", h.GPUs)
		}
	})
	for _, tc := range []struct {
		name    string
		uuid    string
		records int
	}{
		{"same serial, another UUID: another GPU", "GPU-5f3c0a4e-0000-0000-0000-0000000000ff", 2},
		{"same serial, no UUID: the same GPU", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New("n")
			h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "boot-a", t0, dmesg1, h100), lim)
			o := h100
			o.UUID = tc.uuid
			h.Merge(t0.Add(2*time.Hour), run(t0.Add(2*time.Hour), "boot-a", t0, dmesg1, o), lim)
			if len(h.GPUs) != tc.records || h.GPUs[0].UUID != h100.UUID {
				t.Errorf("%d records, want %d: %+v", len(h.GPUs), tc.records, h.GPUs)
			}
		})
	}
}
