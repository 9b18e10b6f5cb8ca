package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// run builds one run's observation from a kernel log, as the integration will: boot id and
// boot time, the GPUs NVML shows, and the kernel log's lines through ScanKernelLog.
func run(now time.Time, boot string, bootTime time.Time, kernelLog string, gpus ...GPUObs) Observation {
	kl := ScanKernelLog(kernelLog)
	return Observation{Time: now, BootID: boot, BootTime: bootTime, GPUs: gpus, XIDs: kl.XIDs, DriverLoads: kl.DriverLoads, KernelLinks: kl.Links}
}

var h100 = GPUObs{UUID: "GPU-5f3c0a4e-0000-0000-0000-000000000001", Serial: "1652922000001", Bus: "00000000:9B:00.0", Index: 4, Name: "NVIDIA H100 80GB HBM3"}

// The kernel log of boot-a at two runs: the second shows the first's line again (dmesg shows
// every XID since boot) and one new line. Lines: invented.log's XID 79, vllm-5901's XID 13.
const (
	dmesg1 = "[ 2002.000002] NVRM: Xid (PCI:0000:9b:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
	dmesg2 = dmesg1 + "[93297.027938] NVRM: Xid (PCI:0000:9b:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x52e7b0=0x101000e\n"
)

func TestMergeCountsAnXIDOnce(t *testing.T) {
	lim := DefaultLimits()
	h := New("gpu01")
	boot := t0
	var news []int
	for i, log := range []string{dmesg1, dmesg1, dmesg2} {
		now := t0.Add(time.Duration(26+i) * time.Hour)
		rep := h.Merge(now, run(now, "boot-a", boot, log, h100), lim)
		news = append(news, rep.NewXIDs)
	}
	if diff := cmp.Diff([]int{1, 0, 1}, news); diff != "" {
		t.Errorf("new XIDs per run (-want +got)\n%s", diff)
	}
	if len(h.GPUs) != 1 {
		t.Fatalf("%d GPU records, want 1: %+v", len(h.GPUs), h.GPUs)
	}
	want := []XID{
		{Boot: 0, K: 2002000002, KLast: 2002000002, T: t0.Unix() + 2002, TLast: t0.Unix() + 2002, N: 1, XID: 79, Msg: "pid=4242, name=python3, GPU has fallen off the bus."},
		{Boot: 0, K: 93297027938, KLast: 93297027938, T: t0.Unix() + 93297, TLast: t0.Unix() + 93297, N: 1, XID: 13, Msg: "pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x52e7b0=0x101000e"},
	}
	if diff := cmp.Diff(want, h.GPUs[0].XIDs); diff != "" {
		t.Errorf("XIDs (-want +got)\n%s", diff)
	}
	if b := h.Boots[0]; b.XIDMark != 93297027938 {
		t.Errorf("XID mark %d", b.XIDMark)
	}
}

func TestMergeUntimedXIDsByPosition(t *testing.T) {
	// nvsentinel-155.log's line has no kernel time: it is counted by its place among the
	// untimed XID lines of the boot.
	line := "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n"
	h := New("n")
	var news []int
	for i, log := range []string{line, line, line + line} {
		now := t0.Add(time.Duration(i+1) * time.Hour)
		news = append(news, h.Merge(now, run(now, "boot-a", t0, log), DefaultLimits()).NewXIDs)
	}
	if diff := cmp.Diff([]int{1, 0, 1}, news); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// The two lines are an hour apart by run time: two records, on a GPU known only by its bus.
	if g := h.GPUs[0]; len(h.GPUs) != 1 || g.Key() != "bus:0000:44:00.0" || len(g.XIDs) != 2 {
		t.Errorf("GPUs %+v", h.GPUs)
	}
}

func TestMergeCollapsesBursts(t *testing.T) {
	// vllm-5901's two XID 13 lines 1.9 ms apart are one record with two lines.
	log := readFixture(t, "xid-vllm-5901.log")
	h := New("n")
	h.Merge(t0.Add(30*time.Hour), run(t0.Add(30*time.Hour), "b", t0, log), DefaultLimits())
	if len(h.GPUs) != 1 || len(h.GPUs[0].XIDs) != 1 || h.GPUs[0].XIDs[0].N != 2 {
		t.Fatalf("%+v", h.GPUs)
	}
	if x := h.GPUs[0].XIDs[0]; x.K != 93297027938 || x.KLast != 93297029837 {
		t.Errorf("burst %+v", x)
	}
}

// TestMergeKeepsNVLink5KindsApart: NVLink5 lines of one XID in one burst are one record
// per IntrInfo/ErrorStatus, since NVIDIA's catalog decodes them apart (a non-fatal BER event
// and a link-fatal NETIR_INT). Lines: gpud's captures (the BER line a gpud user supplied),
// kernel times invented.
func TestMergeKeepsNVLink5KindsApart(t *testing.T) {
	log := "[  100.000000] NVRM: Xid (PCI:0018:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)\n" +
		"[  100.000100] NVRM: Xid (PCI:0018:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n" +
		"[  100.000200] NVRM: Xid (PCI:0018:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
	h := New("n")
	h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "b", t0, log), DefaultLimits())
	if len(h.GPUs) != 1 || len(h.GPUs[0].XIDs) != 2 {
		t.Fatalf("%+v", h.GPUs)
	}
	if a, b := h.GPUs[0].XIDs[0], h.GPUs[0].XIDs[1]; a.Loc != "86226/1" || a.N != 1 || b.Loc != "fe406/0" || b.N != 2 {
		t.Errorf("records %+v, %+v", a, b)
	}
}

func TestMergeIdentity(t *testing.T) {
	lim := DefaultLimits()
	moved := h100
	moved.Bus = "0000:18:00.0"
	replaced := h100
	replaced.UUID, replaced.Serial = "GPU-5f3c0a4e-0000-0000-0000-000000000002", "1652922000002"
	h := New("n")
	h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "boot-a", t0, dmesg1, h100), lim)
	// Next boot: the GPU moved to another slot, keeping its record and its history.
	h.Merge(t0.Add(30*time.Hour), run(t0.Add(30*time.Hour), "boot-b", t0.Add(29*time.Hour), "", moved), lim)
	if len(h.GPUs) != 1 || h.GPUs[0].Bus != "0000:18:00.0" || len(h.GPUs[0].XIDs) != 1 {
		t.Fatalf("moved GPU: %+v", h.GPUs)
	}
	// Next boot: a new GPU at the old GPU's first slot is a new GPU.
	replaced.Bus = "0000:18:00.0"
	h.Merge(t0.Add(60*time.Hour), run(t0.Add(60*time.Hour), "boot-c", t0.Add(59*time.Hour), "", replaced), lim)
	if len(h.GPUs) != 2 || len(h.GPUs[1].XIDs) != 0 || h.GPUs[1].UUID != replaced.UUID {
		t.Fatalf("replaced GPU: %+v", h.GPUs)
	}
	js := h.JudgeXIDs(t0.Add(60*time.Hour), DefaultRules())
	if len(js) != 1 || js[0].Key != replaced.UUID || js[0].Status != StatusOK {
		t.Errorf("the new GPU inherits nothing: %+v", js)
	}
}

func TestMergeAdoptsAGPUKnownByBus(t *testing.T) {
	// An XID 79 before NVML ever saw the GPU: its record is known by bus, and NVML's GPU at
	// that bus in the same boot takes it over.
	h := New("n")
	h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "boot-a", t0, dmesg1), DefaultLimits())
	h.Merge(t0.Add(2*time.Hour), run(t0.Add(2*time.Hour), "boot-a", t0, dmesg1, h100), DefaultLimits())
	if len(h.GPUs) != 1 || h.GPUs[0].UUID != h100.UUID || len(h.GPUs[0].XIDs) != 1 {
		t.Errorf("%+v", h.GPUs)
	}
}

func TestMergeCounterSeries(t *testing.T) {
	lim := DefaultLimits()
	h := New("n")
	obs := func(d time.Duration, boot string, ecc uint64) Observation {
		g := h100
		g.Counters[ECCCorrected] = Read(ecc)
		g.Counters[PCIeReplay] = Read(0)
		return run(t0.Add(d), boot, time.Time{}, "", g)
	}
	for _, o := range []Observation{
		obs(time.Hour, "a", 100),
		obs(2*time.Hour, "a", 200),
		obs(3*time.Hour, "a", 50), // went down: driver reload or GPU reset
		obs(4*time.Hour, "b", 60), // new boot
		obs(5*time.Hour, "b", 70),
		obs(5*time.Hour, "b", 90), // not after the last reading: left out
	} {
		h.Merge(o.Time, o, lim)
	}
	var gens []int
	for _, s := range h.GPUs[0].Samples {
		gens = append(gens, s.Gen)
	}
	if diff := cmp.Diff([]int{0, 0, 1, 2, 2}, gens); diff != "" {
		t.Errorf("generations (-want +got)\n%s", diff)
	}
	if s := h.GPUs[0].Samples[4]; s.C != [NumCounters]int64{70, -1, -1, -1, 0} {
		t.Errorf("newest reading %v", s.C)
	}
}

func TestMergeThinsAndCapsSamples(t *testing.T) {
	lim := DefaultLimits()
	lim.SamplesPerGPU = 8
	h := New("n")
	// A prolog every 10 s for 2 h: readings a minute apart are kept, then the cap thins them.
	for i := range 720 {
		g := h100
		g.Counters[ECCCorrected] = Read(uint64(i))
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		h.Merge(now, run(now, "a", t0, "", g), lim)
	}
	s := h.GPUs[0].Samples
	if len(s) != 8 || s[len(s)-1].C[0] != 719 || s[0].T != t0.Unix() {
		t.Fatalf("%d samples, newest %v, oldest %d", len(s), s[len(s)-1], s[0].T)
	}
	for i := 1; i < len(s)-1; i++ {
		if d := s[i].T - s[i-1].T; d < 60 {
			t.Errorf("readings %d s apart", d)
		}
	}
}

func TestMergePorts(t *testing.T) {
	lim := DefaultLimits()
	h := New("n")
	p := PortObs{Device: "mlx5_0", Port: 1, GUID: "0xa088c20300f1e2d0", Netdevs: []string{"ib0"}, State: 4, PhysState: 5}
	step := func(d time.Duration, state int, syslog string) {
		q := p
		q.State = state
		now := t0.Add(d)
		o := run(now, "a", t0, "")
		o.Ports = []PortObs{q}
		o.SyslogLinks = ScanSyslog(syslog, now, time.UTC)
		h.Merge(now, o, lim)
	}
	six := readFixture(t, "azurehpc-1dev-6flap-syslog.txt")
	six = strings.ReplaceAll(six, "ib6", "ib0")
	step(time.Hour, 4, "")
	step(2*time.Hour, 4, "")
	step(3*time.Hour, 1, "")
	step(4*time.Hour, 4, "")
	if got := len(h.Ports[0].States); got != 3 {
		t.Errorf("%d state entries, want 3: %+v", got, h.Ports[0].States)
	}
	// The syslog of 2026-08-17 read twice: its lines count once.
	tlog := time.Date(2026, 8, 17, 12, 0, 0, 0, time.UTC)
	for range 2 {
		o := run(tlog, "a", t0, "")
		o.SyslogLinks = ScanSyslog(six, tlog, time.UTC)
		h.Merge(tlog, o, lim)
	}
	if n := len(h.Ports[0].Events); n != 12 {
		t.Errorf("%d events, want 12", n)
	}
	// A new GUID on mlx5_0/1: a new adapter, its history starts afresh.
	p.GUID = "0xa088c20300f1e2ff"
	step(5*time.Hour, 4, "")
	if q := h.Ports[0]; len(q.Events) != 0 || len(q.States) != 1 || q.GUID != p.GUID {
		t.Errorf("after a new GUID: %+v", q)
	}
}

func TestMergeNetdevOnlyPort(t *testing.T) {
	// The syslog names ib6 before any run has seen its port: kept under "netdev:ib6", then
	// moved onto mlx5_6/1 when a run sees ib6 there. An eth0 line is no InfiniBand's.
	now := time.Date(2025, 8, 17, 12, 0, 0, 0, time.UTC)
	h := New("n")
	o := run(now, "a", now.Add(-time.Hour*24), "")
	o.SyslogLinks = ScanSyslog(readFixture(t, "azurehpc-1dev-6flap-syslog.txt")+
		"\nAug 17 07:00:00 h systemd-networkd[1]: eth0: Lost carrier\n", now, time.UTC)
	rep := h.Merge(now, o, DefaultLimits())
	if len(h.Ports) != 1 || h.Ports[0].Key() != "netdev:ib6" || len(rep.Notes) != 1 {
		t.Fatalf("ports %+v notes %q", h.Ports, rep.Notes)
	}
	js := h.JudgeFlaps(now, DefaultRules())
	if len(js) != 1 || js[0].Status != StatusFail || !js[0].Sticky {
		t.Errorf("the Azure 6-flap syslog: %+v", js)
	}
	o = run(now.Add(time.Minute), "a", now.Add(-time.Hour*24), "")
	o.Ports = []PortObs{{Device: "mlx5_6", Port: 1, Netdevs: []string{"ib6"}, State: 4, PhysState: 5}}
	h.Merge(now.Add(time.Minute), o, DefaultLimits())
	if len(h.Ports) != 1 || h.Ports[0].Key() != "mlx5_6/1" || len(h.Ports[0].Events) != 12 {
		t.Errorf("after the port was seen: %+v", h.Ports)
	}
}

func TestMergeWithoutBootID(t *testing.T) {
	h := New("n")
	rep := h.Merge(t0, run(t0, "", time.Time{}, dmesg1, h100), DefaultLimits())
	if len(h.GPUs) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "no boot id") {
		t.Errorf("GPUs %+v, notes %q", h.GPUs, rep.Notes)
	}
}

func TestMergeDriverReloadEndsAResetClassXID(t *testing.T) {
	// gpud-pstore-dmesg.txt's two driver loads (1126.6 s and 1137.4 s) around an XID 48 at
	// 1130 s (invented line): the reload at 1137 s reset the GPU.
	log := readFixture(t, "gpud-pstore-dmesg.txt") + "[ 1130.000000] NVRM: Xid (PCI:0000:9b:00): 48, An uncorrectable double bit error\n"
	h := New("n")
	h.Merge(t0.Add(time.Hour), run(t0.Add(time.Hour), "a", t0, log, h100), DefaultLimits())
	js := h.JudgeXIDs(t0.Add(time.Hour), DefaultRules())
	if len(js) != 1 || js[0].Status != StatusOK {
		t.Errorf("%+v", js)
	}
	tl := h.BuildTimeline(t0.Add(time.Hour), DefaultRules(), TimelineOptions{})
	if e := tl.GPUs[0].Entries[0]; e.EndedBy != "driver reload" {
		t.Errorf("timeline entry %+v", e)
	}
}

// TestStickySurvivesAStorm: an XID 79, then more XID 13 bursts than the per-GPU cap holds:
// the cap drops old 13s, never the 79 the sticky judgement stands on.
func TestStickySurvivesAStorm(t *testing.T) {
	lim := DefaultLimits()
	h := New("n")
	log := dmesg1
	for i := range 3 * lim.XIDsPerGPU {
		log += fmt.Sprintf("[%d.000000] NVRM: Xid (PCI:0000:9b:00): 13, Graphics Exception: ESR 0x%x\n", 3000+i*60, i)
	}
	now := t0.Add(10 * time.Hour)
	h.Merge(now, run(now, "a", t0, log, h100), lim)
	xs := h.GPUs[0].XIDs
	if len(xs) != lim.XIDsPerGPU || xs[0].XID != 79 {
		t.Fatalf("%d records, first %+v", len(xs), xs[0])
	}
	if js := h.JudgeXIDs(now, DefaultRules()); js[0].Rule != "xid_sticky" {
		t.Errorf("%+v", js)
	}
	// After a clear, a new XID 13 storm may push the cleared 79 out.
	if _, err := h.Clear(Selector{GPU: "0000:9b:00.0"}, "root", now, ""); err != nil {
		t.Fatal(err)
	}
	log2 := log
	for i := range 2 * lim.XIDsPerGPU {
		log2 += fmt.Sprintf("[%d.000000] NVRM: Xid (PCI:0000:9b:00): 13, Graphics Exception: ESR 0x%x\n", 40000+i*60, i)
	}
	h.Merge(now.Add(time.Hour), run(now.Add(time.Hour), "a", t0, log2, h100), lim)
	if xs := h.GPUs[0].XIDs; xs[0].XID == 79 {
		t.Errorf("the cleared 79 is still kept over newer records")
	}
}

// TestMergeOutOfRangeClock: a run whose clock is not set (1970 before NTP) merges nothing,
// and a boot time before 2000 is taken as unknown, so that the file always reads back.
func TestMergeOutOfRangeClock(t *testing.T) {
	h := New("gpu01")
	rep := h.Merge(time.Unix(600, 0), Observation{BootID: "b1"}, DefaultLimits())
	if len(h.Boots) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "1970-01-01T00:10:00Z") {
		t.Errorf("boots %v, notes %q: want nothing merged and the clock named", h.Boots, rep.Notes)
	}
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rep = h.Merge(now, Observation{BootID: "b1", BootTime: now.Add(-time.Hour)}, DefaultLimits())
	if len(h.Boots) != 1 || h.Boots[0].Time != 0 || len(rep.Notes) != 1 {
		t.Errorf("boots %+v, notes %q: want the boot with an unknown start", h.Boots, rep.Notes)
	}
	data, err := Encode(h, now, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data, "gpu01", 1<<20); err != nil {
		t.Errorf("the file does not read back: %v", err)
	}
}
