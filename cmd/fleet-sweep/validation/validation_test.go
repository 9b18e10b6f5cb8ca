package validation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const h100 = "NVIDIA H100 80GB HBM3"

// busbw is a passed result with one NCCL figure. 476.5 GB/s is nccl-tests' 8x H100 all-reduce
// at 4 GiB replayed by testdata/snapshots/h100-nccl-ok; the other values are that one scaled.
func busbw(node string, v float64) Result {
	return Result{Node: node, Level: "quick", Model: h100, Verdict: Passed,
		Figures: []Figure{{Name: "nccl_busbw", Value: v, Unit: "GB/s", Floor: 300, Expected: 360, OK: v >= 300}}}
}

func TestJudgeSlowSuperBenchRule(t *testing.T) {
	// Three nodes at the real figure, one 15% below it, one 5% below: P50 476.5.
	fleet := []Result{busbw("n1", 476.5), busbw("n2", 476.5), busbw("n3", 476.5),
		busbw("n4", 476.5*0.85), busbw("n5", 476.5*0.95)}
	bl := Baselines(fleet, 2)
	if len(bl) != 1 || bl[0].P50 != 476.5 || bl[0].Nodes != 5 || !bl[0].Higher {
		t.Fatalf("baselines %+v", bl)
	}
	slow := JudgeSlow(fleet, bl, DefaultSlowFraction)
	if len(slow) != 1 || slow[0].Node != "n4" {
		t.Fatalf("slow %+v: want n4 (15%% below) alone, not n5 (5%% below)", slow)
	}
	if got, want := slow[0].Text(), "nccl_busbw 405 GB/s, 15.0% below the fleet P50 476.5 (NVIDIA H100 80GB HBM3)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestJudgeSlowBoundary(t *testing.T) {
	// P50 400: exactly 10% below (360) is not slow, 359.9 is; where less is better (a latency
	// limit above its expected value) 440 is not, 440.1 is.
	lat := func(node string, v float64) Result {
		return Result{Node: node, Model: h100, Verdict: Passed, Figures: []Figure{{Name: "ib_lat_p99", Value: v, Unit: "us", Floor: 4.2, Expected: 3}}}
	}
	for _, c := range []struct {
		name string
		r    Result
		slow bool
	}{
		{"10% below", busbw("x", 360), false},
		{"just over 10% below", busbw("x", 359.9), true},
		{"at the P50", busbw("x", 400), false},
		{"latency 10% above", lat("x", 440), false},
		{"latency just over 10% above", lat("x", 440.1), true},
		{"latency lower", lat("x", 300), false},
		{"failed nodes are not judged slow", func() Result { r := busbw("x", 100); r.Verdict = Failed; return r }(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			bl := []Baseline{{Model: h100, Figure: "nccl_busbw", P50: 400, Higher: true}, {Model: h100, Figure: "ib_lat_p99", P50: 400, Higher: false}}
			got := JudgeSlow([]Result{c.r}, bl, 0.10)
			if (len(got) == 1) != c.slow {
				t.Errorf("slow = %+v, want slow %v", got, c.slow)
			}
		})
	}
}

func TestBaselines(t *testing.T) {
	failed := busbw("f", 10)
	failed.Verdict = Failed
	other := busbw("a100", 200)
	other.Model = "NVIDIA A100-SXM4-80GB"
	perGPU := Result{Node: "g", Model: h100, Verdict: Passed, Figures: []Figure{
		{Name: "h2d", Device: "GPU0", Value: 55, Floor: 40, Expected: 55}, {Name: "h2d", Device: "GPU1", Value: 53, Floor: 40, Expected: 55}}}
	bl := Baselines([]Result{busbw("n1", 400), busbw("n2", 420), failed, other, perGPU}, 2)
	// The failed node is out of the median; one A100 node is below the minimum; per-GPU
	// values count each, but come from one node only: no baseline.
	if len(bl) != 1 || bl[0].Model != h100 || bl[0].Figure != "nccl_busbw" || bl[0].P50 != 410 || bl[0].Nodes != 2 {
		t.Errorf("baselines %+v", bl)
	}
	if bl := Baselines([]Result{busbw("n1", 400)}, 2); len(bl) != 0 {
		t.Errorf("one node made a baseline: %+v", bl)
	}
}

func TestParse(t *testing.T) {
	good := `{"node":"n1","level":"quick","model":"NVIDIA H100 80GB HBM3","started":"2026-12-05T23:00:00Z","duration_s":12.3,"verdict":"passed",` +
		`"figures":[{"name":"nccl_busbw","value":360.1,"unit":"GB/s","floor":300,"expected":360,"source":"SuperBench","device":"","ok":true}],` +
		`"tests":[{"name":"nvbandwidth","status":"ok","summary":"","remedy":""}]}`
	r, err := Parse([]byte(good), "n1", "quick")
	if err != nil || r.Verdict != Passed || len(r.Figures) != 1 || r.Figures[0].Value != 360.1 || r.DurationS != 12.3 {
		t.Fatalf("Parse: %+v, %v", r, err)
	}
	for _, c := range []struct{ name, data, node, level, want string }{
		{"empty", "", "n1", "quick", "empty"},
		{"cut short", good[:40], "n1", "quick", "not a validation result"},
		{"another node", good, "n2", "quick", `about node "n1", not "n2"`},
		{"another level", good, "n1", "full", `level "quick", not "full"`},
		{"unknown verdict", strings.Replace(good, `"passed"`, `"fine"`, 1), "n1", "quick", `verdict "fine"`},
		{"a key Slurm cannot filter on", strings.Replace(good, `"nccl_busbw"`, `"bus>=bw"`, 1), "n1", "quick", `name "bus>=bw"`},
		{"a blank in a test name", strings.Replace(good, `"nvbandwidth"`, `"nv bandwidth"`, 1), "n1", "quick", `test 0: name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.data), c.node, c.level)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestFailSummary(t *testing.T) {
	r := busbw("n3", 150.2)
	r.Verdict = Failed
	r.Figures[0].OK = false
	sum, remedy := FailSummary(r)
	if sum != "validate quick: failed: nccl_busbw 150.2 GB/s, floor 300" || remedy != "admin" {
		t.Errorf("figure only: %q [%s]", sum, remedy)
	}
	r.Tests = []Test{{Name: "nvbandwidth", Status: "ok"}, {Name: "dcgm_diag", Status: "fail", Summary: "memory bandwidth 1.2 TB/s under 1.9", Remedy: "reset_gpu"}}
	sum, remedy = FailSummary(r)
	if sum != "validate quick: failed: dcgm_diag: memory bandwidth 1.2 TB/s under 1.9 (+1 more)" || remedy != "reset_gpu" {
		t.Errorf("test and figure: %q [%s]", sum, remedy)
	}
}

func TestLevels(t *testing.T) {
	q, err := LookupLevel("quick", 0)
	if err != nil || q.Rank != 1 || q.JobMinutes() != 13 {
		t.Errorf("quick: %+v %d %v", q, q.JobMinutes(), err)
	}
	f, _ := LookupLevel("full", 0)
	if f.JobMinutes() != 57 { // 45 + 11.25, rounded up
		t.Errorf("full: %d minutes", f.JobMinutes())
	}
	if b, _ := LookupLevel("burn-in", 0); b.JobMinutes() != 300 {
		t.Errorf("burn-in: %d minutes", b.JobMinutes())
	}
	if q, _ := LookupLevel("quick", 4*time.Minute); q.JobMinutes() != 6 { // +2 minutes at least
		t.Errorf("quick 4m: %d minutes", q.JobMinutes())
	}
	if b, err := LookupLevel("burn-in", 8*time.Hour); err != nil || b.JobMinutes() != 600 {
		t.Errorf("burn-in 8h: %d %v", b.JobMinutes(), err)
	}
	if _, err := LookupLevel("slow", 0); err == nil || !strings.Contains(err.Error(), "quick, full, burn-in") {
		t.Errorf("unknown level: %v", err)
	}
}

func TestStalest(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	last := map[string]time.Time{"n1": t0.Add(48 * time.Hour), "n2": t0, "n4": t0.Add(time.Hour)}
	got := Stalest([]string{"n1", "n2", "n3", "n4", "n5"}, last)
	if want := []string{"n3", "n5", "n2", "n4", "n1"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestExtra(t *testing.T) {
	q, _ := LookupLevel("quick", 0)
	r := busbw("n1", 476.54)
	r.Figures = append(r.Figures, Figure{Name: "h2d", Device: "GPU0", Value: 55.1, Floor: 40, Expected: 55}, Figure{Name: "h2d", Device: "GPU1", Value: 51.26, Floor: 40, Expected: 55})
	at := time.Unix(1764979200, 0)
	ours := ExtraValues(r, q, at)
	for _, c := range []struct {
		current, want string
	}{
		{"", `{"h2d":51.3,"nccl_busbw":476.5,"validated_at":1764979200,"validated_level":"quick","validated_rank":1}`},
		{"(null)", `{"h2d":51.3,"nccl_busbw":476.5,"validated_at":1764979200,"validated_level":"quick","validated_rank":1}`},
		{`{"rack": "r12", "validated_rank": 3, "load": 0.99}`, `{"h2d":51.3,"load":0.99,"nccl_busbw":476.5,"rack":"r12","validated_at":1764979200,"validated_level":"quick","validated_rank":1}`},
	} {
		got, err := MergeExtra(c.current, ours)
		if err != nil || got != c.want {
			t.Errorf("MergeExtra(%q) = %s, %v; want %s", c.current, got, err, c.want)
		}
		var m map[string]any
		if json.Unmarshal([]byte(got), &m) != nil {
			t.Errorf("not JSON: %s", got)
		}
	}
	r.Verdict = Failed
	got, err := MergeExtra(`{"rack":"r12","h2d":51.3,"nccl_busbw":476.5,"validated_at":1764979200,"validated_level":"quick","validated_rank":1}`, WithdrawValues(r))
	if err != nil || got != `{"rack":"r12"}` {
		t.Errorf("withdrawn: %s, %v", got, err)
	}
	if _, err := MergeExtra("rack12 fast", ours); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Errorf("free text Extra: %v", err)
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := t.TempDir() + "/state.json"
	st, err := LoadState(path)
	if err != nil || len(st.Nodes) != 0 {
		t.Fatalf("missing file: %+v %v", st, err)
	}
	at := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	st.Record(busbw("n1", 400), at)
	failed := busbw("n2", 1)
	failed.Verdict = Failed
	st.Record(failed, at)
	if err := st.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadState(path)
	if err != nil || !back.Nodes["n1"].PassedAt.Equal(at) || !back.Nodes["n2"].PassedAt.IsZero() || back.Nodes["n2"].Verdict != Failed {
		t.Errorf("back: %+v %v", back, err)
	}
	if got := Stalest([]string{"n1", "n2"}, back.LastPassed()); !slices.Equal(got, []string{"n2", "n1"}) {
		t.Errorf("stalest %v", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"node":"n1","level":"quick","verdict":"passed","figures":[{"name":"a","value":1}]}`), "n1")
	f.Add([]byte(`{"node":"n1","level":"quick","verdict":"failed","tests":[{"name":"t","status":"fail"}]}`), "n1")
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, data []byte, node string) {
		r, err := Parse(data, node, "quick")
		if err != nil {
			return
		}
		sum, remedy := FailSummary(r)
		if sum == "" || remedy == "" {
			t.Errorf("empty summary for %s", data)
		}
		q, _ := LookupLevel("quick", 0)
		if _, err := MergeExtra("", ExtraValues(r, q, time.Unix(0, 0))); err != nil && !strings.Contains(err.Error(), "4 KiB") {
			t.Errorf("a parsed result's Extra: %v (%s)", err, fmt.Sprint(r.Figures))
		}
	})
}

func FuzzMergeExtra(f *testing.F) {
	f.Add(`{"a": 1.23, "b": true}`)
	f.Add(`{"a":`)
	f.Add(`x`)
	f.Fuzz(func(t *testing.T, current string) {
		got, err := MergeExtra(current, map[string]any{KeyRank: 1})
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got), &m); err != nil || m[KeyRank] != float64(1) {
			t.Errorf("MergeExtra(%q) = %q: %v", current, got, err)
		}
	})
}
