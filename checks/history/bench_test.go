package history

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far: on this shared machine (load
// above the core count) a benchmark's wall time per op mostly measures waiting for a core,
// so the benchmarks also report CPU ns per op. Run them with -cpu 1.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs body b.N times and reports its CPU time per op.
func loop(b *testing.B, body func(i int)) {
	b.ReportAllocs()
	start, i := cpuTime(b), 0
	for b.Loop() {
		body(i)
		i++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(i), "cpu-ns/op")
}

// benchNow is the bench's run time: day 30 of the full history.
var benchNow = t0.Add(30 * 24 * time.Hour)

// fullHistory is an 8-GPU, 8-port node's history with every list at its cap in lim:
// invented values of real lengths (36-character boot ids, 40-character UUIDs, XID messages of
// 80 characters), and on GPU 0 an XID 79 in force.
func fullHistory(t testing.TB, lim Limits) *History {
	t.Helper()
	h := New("gpu-node-0001")
	cur := lim.Boots - 1
	for i := range lim.Boots {
		start := benchNow.Add(-time.Duration(lim.Boots-i) * 40 * time.Hour).Unix()
		h.Boots = append(h.Boots, Boot{N: i, ID: fmt.Sprintf("3f9c1e2a-5b7d-4c8e-9f10-%012d", i), Time: start, FirstSeen: start + 60, LastSeen: start + 39*3600,
			XIDMark: 90000000000, LinkMark: 80000000000, DriverLoads: []int64{30000000}})
	}
	curStart := h.Boots[cur].Time
	msg := "pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005 and more text."[:80]
	for gi := range 8 {
		g := GPU{UUID: fmt.Sprintf("GPU-5f3c0a4e-1b2c-4d5e-8f90-%012d", gi), Serial: fmt.Sprintf("16529220%05d", gi),
			Bus: fmt.Sprintf("0000:%02x:00.0", 0x18+gi*0x10), Index: gi, Name: "NVIDIA H100 80GB HBM3",
			FirstSeen: h.Boots[0].FirstSeen, LastSeen: benchNow.Unix() - 300, LastBoot: cur}
		for i := range lim.XIDsPerGPU {
			x := 13
			if gi == 0 && i == lim.XIDsPerGPU-1 {
				x = 79
			}
			tt := curStart + 3600 + int64(i)*600
			g.XIDs = append(g.XIDs, XID{Boot: cur, K: (tt - curStart) * 1e6, KLast: (tt-curStart)*1e6 + 5000, T: tt, TLast: tt, N: 3, XID: x, Loc: "7/7", Msg: msg})
		}
		for i := range lim.SamplesPerGPU {
			tt := benchNow.Unix() - int64(lim.SamplesPerGPU-i)*1800
			v := int64(i) * 1000
			g.Samples = append(g.Samples, Sample{T: tt, Boot: cur, Gen: 0, C: [NumCounters]int64{v, v / 10, 0, 0, v / 100}})
		}
		for i := range lim.ResetsPerGPU {
			g.Resets = append(g.Resets, Reset{T: curStart + int64(i)*60, Boot: cur, Source: "nvidia-smi --gpu-reset"})
		}
		h.GPUs = append(h.GPUs, g)
	}
	for pi := range 8 {
		p := Port{Device: fmt.Sprintf("mlx5_%d", pi), Port: 1, GUID: fmt.Sprintf("0xa088c20300f1e2%02x", pi), Netdevs: []string{fmt.Sprintf("ib%d", pi)},
			FirstSeen: h.Boots[0].FirstSeen, LastSeen: benchNow.Unix() - 300, LastBoot: cur}
		for i := range lim.StatesPerPort {
			tt := curStart + int64(i)*3600
			p.States = append(p.States, PortState{T: tt, Until: tt + 1800, Boot: cur, State: 4 - 3*(i%2), Phys: 5})
		}
		for i := range lim.EventsPerPort {
			p.Events = append(p.Events, LinkEvent{T: curStart + int64(i)*3600, Boot: cur, K: int64(i) * 3600e6, Up: i%2 == 1, Src: "kernel"})
		}
		for i := range lim.DownedPerPort {
			p.Downed = append(p.Downed, Count{T: curStart + int64(i)*3600, Boot: cur, V: int64(i / 4)})
		}
		h.Ports = append(h.Ports, p)
	}
	for i := range lim.Clears {
		h.Clears = append(h.Clears, Clear{Target: "port", Key: "mlx5_7/1", Who: "admin-user", At: curStart + int64(i), Reason: "reseated the cable after the flap storm"})
	}
	for i := range lim.Repairs {
		h.Repairs = append(h.Repairs, Repair{Target: "gpu", Key: h.GPUs[1].UUID, Bus: h.GPUs[1].Bus, Serial: h.GPUs[1].Serial, Action: "reset_gpu",
			Fault: "xid_sticky: XID 48", Started: curStart + int64(i)*60, Finished: curStart + int64(i)*60 + 30, Outcome: OutcomeOK, Who: "nodecheck"})
	}
	h.UpdatedAt = benchNow.Unix() - 300
	if err := validate(h); err != nil {
		t.Fatal(err)
	}
	return h
}

// benchObservation is one run on the full node: its 8 GPUs with counters, its 8 ports, and a
// kernel log with nothing new.
func benchObservation(h *History, now time.Time) Observation {
	cur := h.current()
	o := Observation{Time: now, BootID: cur.ID, BootTime: unix(cur.Time)}
	for i, g := range h.GPUs {
		ob := GPUObs{UUID: g.UUID, Serial: g.Serial, Bus: g.Bus, Index: i, Name: g.Name}
		last := g.Samples[len(g.Samples)-1]
		for c := range NumCounters {
			ob.Counters[c] = Read(uint64(last.C[c] + 7))
		}
		o.GPUs = append(o.GPUs, ob)
		for _, x := range g.XIDs {
			o.XIDs = append(o.XIDs, XIDLine{Bus: g.Bus[:10], XID: x.XID, KernelUS: x.K, Loc: x.Loc, Message: x.Msg})
		}
	}
	for _, p := range h.Ports {
		o.Ports = append(o.Ports, PortObs{Device: p.Device, Port: p.Port, GUID: p.GUID, Netdevs: p.Netdevs, State: 4, PhysState: 5})
	}
	return o
}

func TestFullHistorySize(t *testing.T) {
	lim := DefaultLimits()
	data, err := Encode(fullHistory(t, lim), benchNow, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a full history at the default caps: %d bytes (cap %d)", len(data), lim.MaxBytes)
	if len(data) > lim.MaxBytes || len(data) < lim.MaxBytes/2 {
		t.Errorf("the default caps give %d bytes: MaxBytes (%d) should be just above that", len(data), lim.MaxBytes)
	}
}

// BenchmarkRun is one run's cost with a full history: Load (the file read through the
// injected reader), Merge of a run's observation, Judge, and Save (encode and the injected
// write).
func BenchmarkRun(b *testing.B) {
	lim := DefaultLimits()
	m := newMemFS()
	s := m.store("/var/lib/nodecheck/history")
	full := fullHistory(b, lim)
	if err := s.Save(full, benchNow); err != nil {
		b.Fatal(err)
	}
	path, _ := s.Path(full.Node)
	size := len(m.files[path])
	r := DefaultRules()
	loop(b, func(i int) {
		now := benchNow.Add(time.Duration(i) * 5 * time.Minute)
		h, err := s.Load(full.Node, now)
		if err != nil {
			b.Fatal(err)
		}
		h.Merge(now, benchObservation(h, now), lim)
		if js := h.Judge(now, r); len(js) == 0 {
			b.Fatal("no judgement")
		}
		if err := s.Save(h, now); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(size), "bytes_read/op")
}

func BenchmarkParts(b *testing.B) {
	lim := DefaultLimits()
	full := fullHistory(b, lim)
	data, err := Encode(full, benchNow, lim)
	if err != nil {
		b.Fatal(err)
	}
	r := DefaultRules()
	b.Run("decode", func(b *testing.B) {
		loop(b, func(int) {
			if _, err := Decode(data, full.Node, 1<<20); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("merge", func(b *testing.B) {
		// CPU time is taken around Merge alone: decoding a fresh copy for each op is not counted.
		b.ReportAllocs()
		var spent time.Duration
		n := 0
		for b.Loop() {
			b.StopTimer()
			h, _ := Decode(data, full.Node, 1<<20)
			o := benchObservation(h, benchNow)
			start := cpuTime(b)
			b.StartTimer()
			h.Merge(benchNow, o, lim)
			spent += cpuTime(b) - start
			n++
		}
		b.ReportMetric(float64(spent)/float64(n), "cpu-ns/op")
	})
	b.Run("judge", func(b *testing.B) {
		loop(b, func(int) { full.Judge(benchNow, r) })
	})
	b.Run("encode", func(b *testing.B) {
		loop(b, func(int) {
			if _, err := Encode(full, benchNow, lim); err != nil {
				b.Fatal(err)
			}
		})
	})
}
