package history

import (
	"strings"
	"testing"
	"time"
)

// Literal histories for the judges. Times: boot 0 began at t0 (2026-12-01T00:00:00Z); the
// GPU is 0000:9b:00.0. All values are invented for the rules' edges.
var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) int64 { return t0.Add(d).Unix() }

const (
	h1 = time.Hour
	mi = time.Minute
)

func boots(n int) []Boot {
	var bs []Boot
	for i := range n {
		bs = append(bs, Boot{N: i, ID: "boot-" + string(rune('a'+i)), Time: at(time.Duration(i) * 24 * h1), FirstSeen: at(time.Duration(i) * 24 * h1), LastSeen: at(time.Duration(i)*24*h1 + 23*h1)})
	}
	return bs
}

func xid(boot int, x int, d time.Duration) XID {
	k := int64(d/time.Microsecond) - int64(time.Duration(boot)*24*h1/time.Microsecond)
	return XID{Boot: boot, K: k, KLast: k, T: at(d), TLast: at(d), N: 1, XID: x}
}

func gpu(lastBoot int, xs ...XID) GPU {
	return GPU{UUID: "GPU-1", Serial: "1652", Bus: "0000:9b:00.0", LastBoot: lastBoot, FirstSeen: at(0), LastSeen: at(time.Duration(lastBoot)*24*h1 + h1), XIDs: xs}
}

func only(js []Judgement, target string) []Judgement {
	var out []Judgement
	for _, j := range js {
		if j.Target == target {
			out = append(out, j)
		}
	}
	return out
}

func TestJudgeSticky(t *testing.T) {
	now := t0.Add(12 * h1)
	tests := []struct {
		name string
		h    History
		want Status
		rule string
		by   string
	}{
		{"reset-class XID 48 in force", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))}}, StatusFail, "xid_sticky", ""},
		{"ended by a reboot", History{Boots: boots(2), GPUs: []GPU{gpu(1, xid(0, 48, 10*h1))}}, StatusOK, "xid", "reboot (boot boot-b)"},
		{"ended by a reset seen", History{Boots: boots(1), GPUs: []GPU{func() GPU {
			g := gpu(0, xid(0, 48, 10*h1))
			g.Resets = []Reset{{T: at(11 * h1), Boot: 0, Source: "nvidia-smi"}}
			return g
		}()}}, StatusOK, "xid", "GPU reset (nvidia-smi)"},
		{"a reset before the XID does not end it", History{Boots: boots(1), GPUs: []GPU{func() GPU {
			g := gpu(0, xid(0, 48, 10*h1))
			g.Resets = []Reset{{T: at(9 * h1), Boot: 0, Source: "nvidia-smi"}}
			return g
		}()}}, StatusFail, "xid_sticky", ""},
		{"ended by a driver reload", History{Boots: func() []Boot {
			b := boots(1)
			b[0].DriverLoads = []int64{int64(5 * time.Second / time.Microsecond), int64(11 * h1 / time.Microsecond)}
			return b
		}(), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))}}, StatusOK, "xid", "driver reload"},
		{"ended by the counters restarting", History{Boots: boots(1), GPUs: []GPU{func() GPU {
			g := gpu(0, xid(0, 48, 10*h1))
			g.Samples = []Sample{{T: at(9 * h1), Gen: 0, C: cs(500)}, {T: at(11 * h1), Gen: 1, C: cs(3)}}
			return g
		}()}}, StatusOK, "xid", "counters restarted (driver reload or GPU reset)"},
		{"ended by a repair's reset", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))},
			Repairs: []Repair{{Target: "gpu", Key: "GPU-1", Action: "reset_gpu", Started: at(11 * h1), Finished: at(11*h1 + mi), Outcome: OutcomeOK}}},
			StatusOK, "xid", "GPU reset (repair)"},
		{"a failed repair does not", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))},
			Repairs: []Repair{{Target: "gpu", Key: "GPU-1", Action: "reset_gpu", Started: at(11 * h1), Finished: at(11*h1 + mi), Outcome: OutcomeFailed}}},
			StatusFail, "xid_sticky", ""},
		{"ended by an admin clear of the GPU", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))},
			Clears: []Clear{{Target: "gpu", Key: "GPU-1", Who: "root", At: at(11 * h1)}}}, StatusOK, "xid", "admin clear by root"},
		{"an admin clear of another GPU does not", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))},
			Clears: []Clear{{Target: "gpu", Key: "GPU-2", Who: "root", At: at(11 * h1)}}}, StatusFail, "xid_sticky", ""},
		{"a clear of all ends it", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))},
			Clears: []Clear{{Target: "all", Who: "root", At: at(11 * h1)}}}, StatusOK, "xid", "admin clear by root"},
		{"reboot-class XID 79 outlives a reset", History{Boots: boots(1), GPUs: []GPU{func() GPU {
			g := gpu(0, xid(0, 79, 10*h1))
			g.Resets = []Reset{{T: at(11 * h1), Boot: 0, Source: "nvidia-smi"}}
			return g
		}()}}, StatusFail, "xid_sticky", ""},
		{"and a driver reload", History{Boots: func() []Boot {
			b := boots(1)
			b[0].DriverLoads = []int64{int64(11 * h1 / time.Microsecond)}
			return b
		}(), GPUs: []GPU{gpu(0, xid(0, 79, 10*h1))}}, StatusFail, "xid_sticky", ""},
		{"but not a reboot", History{Boots: boots(2), GPUs: []GPU{gpu(1, xid(0, 79, 10*h1))}}, StatusOK, "xid", "reboot (boot boot-b)"},
		{"an ignored XID is not judged", History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 48, 10*h1))}}, StatusOK, "xid", "ignored"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := DefaultRules()
			if tc.by == "ignored" {
				r.IgnoreXIDs = []int{48}
			}
			js := tc.h.JudgeXIDs(now, r)
			if len(js) != 1 || js[0].Status != tc.want || js[0].Rule != tc.rule {
				t.Fatalf("got %+v; want one %s %s", js, tc.want, tc.rule)
			}
			g, x := tc.h.GPUs[0], tc.h.GPUs[0].XIDs[0]
			if by, _ := tc.h.stickyEnd(g, x, x.XID == 79); tc.by != "ignored" && by != tc.by {
				t.Errorf("ended by %q, want %q", by, tc.by)
			}
		})
	}
}

func cs(ecc int64) [NumCounters]int64 { return [NumCounters]int64{ecc, -1, -1, -1, -1} }

func TestJudgeStickySummary(t *testing.T) {
	h := History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 79, 10*h1))}}
	js := h.JudgeXIDs(t0.Add(12*h1), DefaultRules())
	want := Judgement{Rule: "xid_sticky", Status: StatusFail, Target: "gpu", Key: "GPU-1", Device: "gpu 0000:9b:00.0 (GPU-1, serial 1652)",
		GPU:     GPUID{UUID: "GPU-1", Serial: "1652", Bus: "0000:9b:00.0", Index: 0},
		Summary: "gpu 0000:9b:00.0 (GPU-1, serial 1652): XID 79 at 2026-12-01T10:00:00Z, sticky until a reboot; clear with `nodecheck history clear --gpu 0000:9b:00.0`",
		Clear:   "a reboot (new boot id), or `nodecheck history clear --gpu 0000:9b:00.0`", Since: t0.Add(10 * h1), Sticky: true,
		Observed: "XID 79", Expected: "no reset- or reboot-class XID in force", XID: 79}
	if len(js) != 1 || js[0] != want {
		t.Errorf("got  %+v\nwant %+v", js, want)
	}
}

func TestJudgeRepeats(t *testing.T) {
	now := t0.Add(20 * h1)
	loc := func(x XID, l string) XID { x.Loc = l; return x }
	tests := []struct {
		name string
		xs   []XID
		nb   int // boots
		want Status
		rule string
	}{
		{"XID 31 once warns", []XID{xid(0, 31, 10*h1)}, 1, StatusWarn, "xid_recent"},
		{"XID 31 in two bursts fails", []XID{xid(0, 31, 10*h1), xid(0, 31, 10*h1+10*mi)}, 1, StatusFail, "xid_repeat"},
		{"XID 31 twice within 3 min is one burst", []XID{xid(0, 31, 10*h1), xid(0, 31, 10*h1+2*mi)}, 1, StatusWarn, "xid_recent"},
		{"XID 31 a day apart: one in the window", []XID{xid(0, 31, -10*h1), xid(0, 31, 19*h1)}, 1, StatusWarn, "xid_recent"},
		{"XID 13 twice on one GPC/TPC fails", []XID{loc(xid(0, 13, 10*h1), "7/7"), loc(xid(0, 13, 10*h1+mi), "7/7")}, 1, StatusFail, "xid_repeat"},
		{"XID 13 on two GPC/TPC warns", []XID{loc(xid(0, 13, 10*h1), "7/7"), loc(xid(0, 13, 10*h1+mi), "1/0")}, 1, StatusWarn, "xid_recent"},
		{"XID 13 in five bursts fails", []XID{xid(0, 13, 10*h1), xid(0, 13, 11*h1), xid(0, 13, 12*h1), xid(0, 13, 13*h1), xid(0, 13, 14*h1)}, 1, StatusFail, "xid_repeat"},
		{"XID 13 in four bursts warns", []XID{xid(0, 13, 10*h1), xid(0, 13, 11*h1), xid(0, 13, 12*h1), xid(0, 13, 13*h1)}, 1, StatusWarn, "xid_recent"},
		{"XID 43 in five bursts fails", []XID{xid(0, 43, 10*h1), xid(0, 43, 11*h1), xid(0, 43, 12*h1), xid(0, 43, 13*h1), xid(0, 43, 14*h1)}, 1, StatusFail, "xid_repeat"},
		{"XID 45 in six bursts only warns", []XID{xid(0, 45, 10*h1), xid(0, 45, 11*h1), xid(0, 45, 12*h1), xid(0, 45, 13*h1), xid(0, 45, 14*h1), xid(0, 45, 15*h1)}, 1, StatusWarn, "xid_recent"},
		{"XID 79 in five bursts a day fails though a reboot ended each",
			[]XID{xid(0, 79, 0), xid(0, 79, 4*h1), xid(0, 79, 8*h1), xid(0, 79, 12*h1), xid(0, 79, 16*h1)}, 2, StatusFail, "xid_repeat"},
		{"XID 79 within 3 h counts once", []XID{xid(0, 79, 0), xid(0, 79, 2*h1), xid(0, 79, 4*h1), xid(0, 79, 6*h1), xid(0, 79, 8*h1)}, 2, StatusOK, "xid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := History{Boots: boots(tc.nb), GPUs: []GPU{gpu(tc.nb-1, tc.xs...)}}
			js := h.JudgeXIDs(now, DefaultRules())
			if Worst(js) != tc.want || js[0].Rule != tc.rule {
				t.Errorf("got %+v; want %s %s", js, tc.want, tc.rule)
			}
		})
	}
}

func TestJudgeRepeatCleared(t *testing.T) {
	h := History{Boots: boots(1), GPUs: []GPU{gpu(0, xid(0, 31, 10*h1), xid(0, 31, 11*h1))},
		Clears: []Clear{{Target: "gpu", Key: "GPU-1", Who: "root", At: at(12 * h1)}}}
	if js := h.JudgeXIDs(t0.Add(13*h1), DefaultRules()); Worst(js) != StatusOK {
		t.Errorf("after a clear: %+v", js)
	}
	h.GPUs[0].XIDs = append(h.GPUs[0].XIDs, xid(0, 31, 12*h1+30*mi))
	if js := h.JudgeXIDs(t0.Add(13*h1), DefaultRules()); Worst(js) != StatusWarn {
		t.Errorf("one after the clear: %+v", js)
	}
}

func samples(gen int, pts ...struct {
	d time.Duration
	v int64
}) []Sample {
	var s []Sample
	for _, p := range pts {
		s = append(s, Sample{T: t0.Add(p.d).Unix(), Gen: gen, C: cs(p.v)})
	}
	return s
}

type pt = struct {
	d time.Duration
	v int64
}

func TestJudgeRates(t *testing.T) {
	week := 7 * 24 * h1
	tests := []struct {
		name string
		s    []Sample
		now  time.Duration
		want Status
		obs  string
	}{
		{"+10,000 in an hour warns", samples(0, pt{0, 0}, pt{h1, 10_000}), h1, StatusWarn, "10000/h"},
		{"+10,000 over a week does not", samples(0, pt{0, 0}, pt{week, 10_000}), week, StatusOK, "59.52/h"},
		{"+5,000,000 in an hour fails", samples(0, pt{0, 0}, pt{h1, 5_000_000}), h1, StatusFail, "5000000/h"},
		{"+5,000,000 over a week warns", samples(0, pt{0, 0}, pt{week, 5_000_000}), week, StatusWarn, "29762/h"},
		{"readings 2 min apart make no rate", samples(0, pt{0, 0}, pt{2 * mi, 10_000}), 2 * mi, StatusSkip, ""},
		{"one reading makes no rate", samples(0, pt{0, 0}), 0, StatusSkip, ""},
		{"a close newest reading pairs with an older one", samples(0, pt{0, 0}, pt{h1, 10_000}, pt{h1 + mi, 10_000}), h1 + mi, StatusWarn, "9836/h"},
		{"a spike holds for the window", samples(0, pt{0, 0}, pt{h1, 5_000_000}, pt{2 * h1, 5_000_000}), 2 * h1, StatusFail, "5000000/h"},
		{"and ends after it", samples(0, pt{0, 0}, pt{h1, 5_000_000}, pt{29 * h1, 5_000_000}), 30 * h1, StatusOK, "0/h"},
		{"a new series after a restart has no rate yet",
			append(samples(0, pt{0, 0}, pt{h1, 5_000_000}), samples(1, pt{2 * h1, 10})...), 2 * h1, StatusSkip, ""},
		{"and its own rate later",
			append(samples(0, pt{0, 0}, pt{h1, 5_000_000}), samples(1, pt{2 * h1, 10}, pt{3 * h1, 20})...), 3 * h1, StatusOK, "10/h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gpu(0)
			g.Samples = tc.s
			h := History{Boots: []Boot{{N: 0, ID: "a", Time: at(-h1), FirstSeen: at(0), LastSeen: at(tc.now)}}, GPUs: []GPU{g}}
			js := h.JudgeRates(t0.Add(tc.now), DefaultRules())
			rule, obs := "rate_ecc_corrected", tc.obs
			if tc.want == StatusOK || tc.want == StatusSkip {
				rule = "rate"
				if obs != "" {
					obs = "ecc_corrected " + obs
				}
			}
			if len(js) != 1 || js[0].Status != tc.want || js[0].Observed != obs || js[0].Rule != rule {
				t.Errorf("got %+v; want one %s %s at %q", js, rule, tc.want, obs)
			}
		})
	}
}

func TestJudgeRatesNVLinkAndUnread(t *testing.T) {
	g := gpu(0)
	g.Samples = []Sample{{T: at(0), C: [NumCounters]int64{-1, 0, 0, 0, -1}}, {T: at(h1), C: [NumCounters]int64{-1, 59, 1, 60, -1}}}
	h := History{Boots: boots(1), GPUs: []GPU{g}}
	got := map[string]Status{}
	for _, j := range h.JudgeRates(t0.Add(h1), DefaultRules()) {
		got[j.Rule] = j.Status
	}
	// CRC below its warn rate is not reported on its own when another counter is.
	want := map[string]Status{"rate_nvlink_replay": StatusWarn, "rate_nvlink_recovery": StatusFail}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v (unread counters are not judged)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
}

func port(lastBoot int) Port {
	return Port{Device: "mlx5_0", Port: 1, Netdevs: []string{"ib0"}, LastBoot: lastBoot, FirstSeen: at(0), LastSeen: at(h1)}
}

func downs(boot int, src string, ds ...time.Duration) []LinkEvent {
	var es []LinkEvent
	for _, d := range ds {
		es = append(es, LinkEvent{T: at(d), Boot: boot, Src: src}, LinkEvent{T: at(d + time.Second), Boot: boot, Up: true, Src: src})
	}
	return es
}

func TestJudgeFlaps(t *testing.T) {
	sec := time.Second
	states := func(ss ...int) []PortState {
		var out []PortState
		for i, s := range ss {
			out = append(out, PortState{T: at(time.Duration(i) * 10 * mi), Until: at(time.Duration(i)*10*mi + 5*mi), State: s, Phys: 5})
		}
		return out
	}
	tests := []struct {
		name   string
		p      Port
		nb     int
		now    time.Duration
		sticky bool
		clear  bool
		want   Status
	}{
		{"six downs in five seconds fail", func() Port {
			p := port(0)
			p.Events = downs(0, "syslog", 10*h1, 10*h1+sec, 10*h1+2*sec, 10*h1+3*sec, 10*h1+4*sec, 10*h1+5*sec)
			return p
		}(), 1, 11 * h1, true, false, StatusFail},
		{"one down warns", func() Port { p := port(0); p.Events = downs(0, "kernel", 10*h1); return p }(), 1, 11 * h1, true, false, StatusWarn},
		{"two downs warn", func() Port { p := port(0); p.Events = downs(0, "kernel", 10*h1, 11*h1); return p }(), 1, 12 * h1, true, false, StatusWarn},
		{"three within 3 h fail", func() Port { p := port(0); p.Events = downs(0, "kernel", 10*h1, 11*h1, 12*h1+59*mi); return p }(), 1, 13 * h1, true, false, StatusFail},
		{"three over 8 h warn", func() Port { p := port(0); p.Events = downs(0, "kernel", 0, 4*h1, 8*h1); return p }(), 1, 8*h1 + mi, true, false, StatusWarn},
		{"three within 3 h stay failed, sticky", func() Port { p := port(0); p.Events = downs(0, "kernel", 0, h1, 2*h1); return p }(), 1, 10 * h1, true, false, StatusFail},
		{"and pass later without stickiness", func() Port { p := port(0); p.Events = downs(0, "kernel", 0, h1, 2*h1); return p }(), 1, 10 * h1, false, false, StatusOK},
		{"a reboot ends them", func() Port { p := port(1); p.Events = downs(0, "kernel", 0, h1, 2*h1); return p }(), 2, 25 * h1, true, false, StatusOK},
		{"a clear ends them", func() Port { p := port(0); p.Events = downs(0, "kernel", 0, h1, 2*h1); return p }(), 1, 3 * h1, true, true, StatusOK},
		{"port state: three downs between runs", func() Port { p := port(0); p.States = states(4, 1, 4, 1, 4, 1, 4); return p }(), 1, h1, true, false, StatusFail},
		{"link_downed +3", func() Port {
			p := port(0)
			p.Downed = []Count{{T: at(0), V: 2}, {T: at(h1), V: 5}}
			return p
		}(), 1, h1, true, false, StatusFail},
		{"one down seen by the kernel and the syslog counts once", func() Port {
			p := port(0)
			p.Events = append(downs(0, "kernel", 10*h1), downs(0, "syslog", 10*h1)...)
			return p
		}(), 1, 11 * h1, true, false, StatusWarn},
		{"a port that never went down", port(0), 1, h1, true, false, StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := DefaultRules()
			r.FlapSticky = tc.sticky
			h := History{Boots: boots(tc.nb), Ports: []Port{tc.p}}
			if tc.clear {
				h.Clears = []Clear{{Target: "port", Key: "mlx5_0/1", Who: "root", At: at(2*h1 + mi)}}
			}
			js := h.JudgeFlaps(t0.Add(tc.now), r)
			if len(js) != 1 || js[0].Status != tc.want || js[0].Rule != "ib_flap" {
				t.Errorf("got %+v; want one %s", js, tc.want)
			}
			if want := (PortID{Device: "mlx5_0", Port: 1, Netdev: "ib0"}); js[0].Port != want || js[0].GPU != (GPUID{}) {
				t.Errorf("the port as fields: %+v, %+v; want %+v", js[0].Port, js[0].GPU, want)
			}
			if js[0].Status == StatusFail && tc.sticky && (!js[0].Sticky || !strings.Contains(js[0].Summary, "sticky until reboot")) {
				t.Errorf("a sticky failure: %+v", js[0])
			}
		})
	}
}
