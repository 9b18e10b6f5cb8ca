package repair

import (
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
