package checks

import "testing"

// TestJudgeLoadAverageNHC replays NHC's own check_ps_loadavg tests (test/test_lbnl_ps.nhc:
// LOADAVG=( 15 9 4 ), the call quoted in each name).
func TestJudgeLoadAverageNHC(t *testing.T) {
	load := [3]float64{15, 9, 4}
	tests := []struct {
		name   string
		limits [3]int
		want   Status
	}{
		{"check_ps_loadavg 64", [3]int{64, 0, 0}, StatusOK},
		{"check_ps_loadavg '' 64", [3]int{0, 64, 0}, StatusOK},
		{"check_ps_loadavg '' '' 64", [3]int{0, 0, 64}, StatusOK},
		{"check_ps_loadavg 1", [3]int{1, 0, 0}, StatusFail},
		{"check_ps_loadavg '' 1", [3]int{0, 1, 0}, StatusFail},
		{"check_ps_loadavg '' '' 1", [3]int{0, 0, 1}, StatusFail},
		{"check_ps_loadavg 16 16 16", [3]int{16, 16, 16}, StatusOK},
		{"check_ps_loadavg 12 12 12", [3]int{12, 12, 12}, StatusFail},
		{"check_ps_loadavg 8 8 8", [3]int{8, 8, 8}, StatusFail},
		{"at the limit (15 >= 15)", [3]int{15, 0, 0}, StatusFail},
		{"one over the limit", [3]int{16, 0, 0}, StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeLoadAverage(load, tc.limits)
			if res.Status != tc.want {
				t.Errorf("got %s %q, want %s", res.Status, res.Summary, tc.want)
			}
			assertRemedies(t, res)
		})
	}
	if res := judgeLoadAverage([3]float64{15.99, 0, 0}, [3]int{16, 0, 0}); res.Status != StatusOK {
		t.Errorf("15.99 against 16: NHC drops the fraction; got %s", res.Status)
	}
}

// TestParseLoadavg reads procfs's fixture fixtures/proc/loadavg (testdata/nhc/SOURCE).
func TestParseLoadavg(t *testing.T) {
	got, err := parseLoadavg([]byte("0.02 0.04 0.05 1/497 11947\n"))
	if err != nil || got != [3]float64{0.02, 0.04, 0.05} {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "a b c", "-1 0 0"} {
		if _, err := parseLoadavg([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
