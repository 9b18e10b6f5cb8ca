package history

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// scenario is three runs on one node over two boots, from real kernel log and syslog lines
// (testdata/kmsg) and invented counters and port states:
//   - boot a: an XID 79 (invented.log) on GPU 0000:9b:00.0, XID 13 bursts (gpud-pr46's
//     GPC 7/TPC 7 lines) on 0000:cb:00.0, the Azure 6-flap syslog on ib0;
//   - boot b: the 79 ended by the reboot, the XID 13 GPU's correctable ECC climbing 100,000
//     in an hour, an admin clear of the port, a repair recorded.
func scenario(t testing.TB) (*History, time.Time) {
	t.Helper()
	lim := DefaultLimits()
	h := New("gpu01")
	bootA := time.Date(2025, 8, 17, 0, 0, 0, 0, time.UTC)
	g0 := GPUObs{UUID: "GPU-5f3c0a4e-0000-0000-0000-000000000001", Serial: "1652922000001", Bus: "00000000:9B:00.0", Index: 4, Name: "NVIDIA H100 80GB HBM3"}
	g1 := GPUObs{UUID: "GPU-5f3c0a4e-0000-0000-0000-000000000002", Serial: "1652922000002", Bus: "00000000:CB:00.0", Index: 6, Name: "NVIDIA H100 80GB HBM3"}
	ib0 := PortObs{Device: "mlx5_0", Port: 1, GUID: "0xa088c20300f1e2d0", Netdevs: []string{"ib0"}, State: 4, PhysState: 5}
	xid13 := "[ 3600.100000] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter\n" +
		"[ 7200.200000] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp Errors\n"
	syslog := bytes.ReplaceAll([]byte(readFixture(t, "azurehpc-1dev-6flap-syslog.txt")), []byte("ib6"), []byte("ib0"))

	now := bootA.Add(8 * time.Hour)
	o := run(now, "b3b5e7a4-8c1e-4a5f-9d2e-000000000001", bootA, readFixture(t, "xid-invented.log")+xid13, g0, g1)
	o.Ports = []PortObs{ib0}
	o.SyslogLinks = ScanSyslog(string(syslog), now, time.UTC)
	h.Merge(now, o, lim)

	bootB := bootA.Add(10 * time.Hour)
	c1, c2 := g1, g1
	c1.Counters[ECCCorrected], c1.Counters[PCIeReplay] = Read(1000), Read(0)
	c2.Counters[ECCCorrected], c2.Counters[PCIeReplay] = Read(101000), Read(0)
	now = bootB.Add(time.Hour)
	o = run(now, "b3b5e7a4-8c1e-4a5f-9d2e-000000000002", bootB, "", g0, c1)
	o.Ports = []PortObs{ib0}
	h.Merge(now, o, lim)
	if _, err := h.Clear(Selector{Port: "mlx5_0/1"}, "root", now.Add(time.Minute), "cable reseated"); err != nil {
		t.Fatal(err)
	}
	if err := h.RecordRepair(Repair{Target: "gpu", Key: g1.UUID, Bus: "0000:cb:00.0", Serial: g1.Serial, Action: "reset_gpu",
		Fault: "xid_repeat: XID 13", Started: now.Add(2 * time.Minute).Unix(), Finished: now.Add(3 * time.Minute).Unix(), Outcome: OutcomeRefused,
		Detail: "processes running on the GPU"}); err != nil {
		t.Fatal(err)
	}
	now = bootB.Add(2 * time.Hour)
	o = run(now, "b3b5e7a4-8c1e-4a5f-9d2e-000000000002", bootB, "", g0, c2)
	o.Ports = []PortObs{ib0}
	h.Merge(now, o, lim)
	return h, now
}

func TestTimelineGolden(t *testing.T) {
	h, now := scenario(t)
	tests := []struct {
		name string
		o    TimelineOptions
	}{
		{"timeline", TimelineOptions{}},
		{"timeline-gpu", TimelineOptions{GPU: "0000:cb:00.0"}},
		{"timeline-since", TimelineOptions{Since: 3 * time.Hour}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := h.BuildTimeline(now, DefaultRules(), tc.o)
			var txt, js bytes.Buffer
			if err := tl.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			if err := tl.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt", txt.Bytes())
			golden(t, tc.name+".json", js.Bytes())
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./checks/history -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (go test ./checks/history -update rewrites it):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// TestScenarioVerdicts is what the hidden sequences judge, on the scenario's runs.
func TestScenarioVerdicts(t *testing.T) {
	h, now := scenario(t)
	got := map[string]Status{}
	for _, j := range h.Judge(now, DefaultRules()) {
		got[j.Rule+" "+j.Key] = j.Status
	}
	want := map[string]Status{
		// The XID 79 of boot a ended with the reboot; its GPU is ok.
		"xid GPU-5f3c0a4e-0000-0000-0000-000000000001": StatusOK,
		// XID 13 twice on GPC 7/TPC 7 within a day: fails, and a reboot does not end it.
		"xid_repeat GPU-5f3c0a4e-0000-0000-0000-000000000002": StatusFail,
		// +100,000 correctable errors in an hour: 100,000/h, over the 6,000/h warn rate.
		"rate_ecc_corrected GPU-5f3c0a4e-0000-0000-0000-000000000002": StatusWarn,
		// The flaps were in boot a and the port was cleared: ok.
		"ib_flap mlx5_0/1": StatusOK,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestTimelineSaysWhatIsKnown: a GPU whose XIDs have expired but whose counters have one
// reading so far is judged on its XIDs, and the rates' lack of data is said, not a SKIP.
func TestTimelineSaysWhatIsKnown(t *testing.T) {
	now := t0.Add(30 * h1)
	g := gpu(0, xid(0, 31, h1))
	g.Samples = samples(0, pt{30 * h1, 100})
	tests := []struct {
		name    string
		h       History
		status  Status
		summary string
	}{
		{"XIDs expired, one counter reading", History{Boots: boots(1), GPUs: []GPU{g}}, StatusOK, "XIDs: none in force; rates: no rate yet"},
		{"and an XID recent", History{Boots: boots(1), GPUs: []GPU{func() GPU { g := g; g.XIDs = []XID{xid(0, 31, 29*h1)}; return g }()}},
			StatusWarn, "XIDs: warn; rates: no rate yet"},
		{"two readings an hour apart", History{Boots: boots(1), GPUs: []GPU{func() GPU { g := g; g.Samples = samples(0, pt{29 * h1, 100}, pt{30 * h1, 100}); return g }()}},
			StatusOK, "XIDs: none in force; rates: ok, ecc_corrected 0/h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := tc.h.BuildTimeline(now, DefaultRules(), TimelineOptions{})
			if d := tl.GPUs[0]; d.Status != tc.status || d.Summary != tc.summary {
				t.Errorf("got %s (%s); want %s (%s)", d.Status, d.Summary, tc.status, tc.summary)
			}
		})
	}
}
