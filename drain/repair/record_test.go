package repair

import (
	"slices"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	in := map[string]Record{"gpu01": {Entries: []Entry{entry(RemedyReset, OutcomeOK, "boot-1", t0, gpu9b), entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(time.Hour))}}}
	data, err := encodeRecords(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeRecords(data)
	if err != nil || len(out["gpu01"].Entries) != 2 || out["gpu01"].Entries[0].GPUs[0].Serial != gpu9b.Serial || !out["gpu01"].Entries[1].Started.Equal(t0.Add(time.Hour)) {
		t.Errorf("round trip: %+v, %v", out, err)
	}
	for _, bad := range []string{"{", `{"format":2,"nodes":{}}`, `[]`} {
		if recs, err := decodeRecords([]byte(bad)); err == nil || len(recs) != 0 {
			t.Errorf("%q: %v, %v; want an error and an empty record", bad, recs, err)
		}
	}
	if recs, err := decodeRecords(nil); err != nil || len(recs) != 0 {
		t.Errorf("no file: %v, %v", recs, err)
	}
}

func TestPrune(t *testing.T) {
	var r Record
	for i := range 120 {
		r.Entries = append(r.Entries, entry(RemedyReset, OutcomeOK, "b", t0.Add(time.Duration(i)*time.Hour)))
	}
	if got := prune(r, t0.Add(-time.Hour)); len(got.Entries) != maxEntries || !got.Entries[maxEntries-1].Started.Equal(t0.Add(119*time.Hour)) {
		t.Errorf("prune to the cap: %d entries", len(got.Entries))
	}
	old := Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0), entry(RemedyReboot, OutcomePending, "b", t0.Add(time.Hour))}}
	if got := prune(old, t0.Add(30*24*time.Hour)); len(got.Entries) != 1 || got.Entries[0].Action != RemedyReboot {
		t.Errorf("prune by age keeps the last: %+v", got)
	}
}

// FuzzDecodeRecords: a damaged repair.json never panics the decoder, and what it accepts
// encodes again.
func FuzzDecodeRecords(f *testing.F) {
	f.Add([]byte(`{"format":1,"nodes":{"n1":{"entries":[{"action":"reboot","fault":"x","started":"2026-12-03T10:00:00Z","outcome":"pending"}]}}}`))
	f.Add([]byte(`{"format":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := decodeRecords(data)
		if err != nil {
			return
		}
		if _, err := encodeRecords(recs); err != nil {
			t.Errorf("decoded %q but cannot encode it: %v", data, err)
		}
	})
}

// TestCountsOf: the metrics' counts are escalation's: repairs within each window, a GPU by
// serial, a peer's reset not counted for the peer, a GPU the record names but NVML no longer
// lists kept.
func TestCountsOf(t *testing.T) {
	p := testPolicy()
	p.GPUWindow = 24 * time.Hour
	lost := GPU{Bus: "0000:cb:00.0", Serial: "1652922000009"}
	rec := Record{Entries: []Entry{
		entry(RemedyReset, OutcomeOK, "boot-1", t0.Add(-48*time.Hour), gpu9b),                                          // outside gpu_window, inside node_window
		entry(RemedyReset, OutcomeOK, "boot-1", t0.Add(-2*time.Hour), gpu9b),                                           // counts for 9b
		{Action: RemedyReset, GPUs: []GPU{lost}, Peers: []GPU{gpu19}, Started: t0.Add(-time.Hour), Outcome: OutcomeOK}, // 19 only a peer
		entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-8*24*time.Hour), gpu9b),                                  // outside both windows
	}}
	c := p.countsOf(rec, []GPU{gpu19, gpu9b}, t0)
	want := []GPUCount{{Bus: "0000:19:00.0", N: 0}, {Bus: "0000:9b:00.0", N: 1}, {Bus: "0000:cb:00.0", N: 1}}
	if c.Node != 3 || !slices.Equal(c.GPUs, want) {
		t.Errorf("counts %d %v, want node 3, GPUs %v", c.Node, c.GPUs, want)
	}
}

// TestCountsUnderWay: the metrics' repair under way is the last entry while it is pending,
// whatever came before it.
func TestCountsUnderWay(t *testing.T) {
	p := testPolicy()
	started := t0.Add(-3 * time.Hour)
	tests := []struct {
		name    string
		entries []Entry
		want    time.Time
	}{
		{"no repair", nil, time.Time{}},
		{"a reboot pending", []Entry{entry(RemedyReboot, OutcomePending, "boot-1", started, gpu9b)}, started},
		{"the last one done", []Entry{entry(RemedyReboot, OutcomePending, "boot-1", started.Add(-time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "boot-1", started, gpu9b)}, time.Time{}},
		{"the last one failed", []Entry{entry(RemedyReset, OutcomeFailed, "boot-1", started, gpu9b)}, time.Time{}},
		{"pending after a failed one", []Entry{entry(RemedyReset, OutcomeFailed, "boot-1", started.Add(-time.Hour), gpu9b), entry(RemedyReboot, OutcomePending, "boot-1", started, gpu9b)}, started},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.countsOf(Record{Entries: tc.entries}, nil, t0).UnderWay; !got.Equal(tc.want) {
				t.Errorf("UnderWay %v, want %v", got, tc.want)
			}
		})
	}
}
