package dcgm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestErrorTable holds the table to dcgm_errors.h's shape: every code 0..132 in its place,
// and the severities the remedies depend on.
func TestErrorTable(t *testing.T) {
	if len(errorTable) != 133 {
		t.Fatalf("%d codes, want 133 (DCGM_FR_ERROR_SENTINEL)", len(errorTable))
	}
	for i, e := range errorTable {
		if e.Code != i {
			t.Errorf("row %d holds code %d", i, e.Code)
		}
	}
	for _, tc := range []struct {
		code int
		name string
		sev  Severity
	}{
		{3, "PCI_REPLAY_RATE", SeverityIsolate},
		{5, "VOLATILE_SBE_DETECTED", SeverityMonitor},
		{6, "PENDING_PAGE_RETIREMENTS", SeverityReset},
		{29, "PERSISTENCE_MODE", SeverityConfig},
		{101, "XID_ERROR", SeverityTriage},
		{125, "GPU_RECOVERY_RESET", SeverityReset},
		{132, "UNCORRECTABLE_ROW_REMAP_LIMIT", SeverityTriage},
	} {
		e, ok := Lookup(tc.code)
		if !ok || e.Name != tc.name || e.Severity != tc.sev {
			t.Errorf("Lookup(%d) = %+v, %v; want %s %s", tc.code, e, ok, tc.name, tc.sev)
		}
	}
	if e, ok := Lookup(133); ok || e.Severity != SeverityUnknown {
		t.Errorf("Lookup(133) = %+v, %v: a newer DCGM's code is UNKNOWN", e, ok)
	}
}

func TestMatchMessage(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want int // -1: none
	}{
		{"Detected more than 31 PCIe replays per minute for GPU 0 : 99999", 3},
		{"Detected more than 31 PCIe replays per minute for GPU 0 : 99999 extra", -1},
		{"Detected 2 volatile double-bit ECC error(s) in GPU 3.", 4},
		{"Detected 2 volatile double-bit ECC error(s) in GPU 3", 4}, // the '.' dcgmi's cutting drops
		{"A pending retired page has been detected in GPU 3.", 6},
		{"Detected clocks event due to thermal violation in GPU 5", 10},
		{"GPU 2 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET).", 125},
		{"Detected fatal errors on NvSwitch 1 link 17", 15},
		{"Detected nonfatal errors on NvSwitch 1 link 17", 16},
		{"Detected XID 79 for GPU 4", 101},
		{"Detected 3 Volatile DBEs for GPU 1", 33}, // FIELD_VIOLATION, the integer one
		{"GPU 0's NvLink link 4 is currently down", 14},
		{"Something DCGM 9 says", -1},
	} {
		got, ok := MatchMessage(tc.msg)
		if tc.want < 0 {
			if ok {
				t.Errorf("MatchMessage(%q) = %s, want none", tc.msg, got.Label())
			}
			continue
		}
		if !ok || got.Code != tc.want {
			t.Errorf("MatchMessage(%q) = %s %v, want code %d", tc.msg, got.Label(), ok, tc.want)
		}
	}
}

func TestSplitMessages(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"Detected 2 volatile double-bit ECC error(s) in GPU 3., A pending retired page has been detected in GPU 3.",
			[]string{"Detected 2 volatile double-bit ECC error(s) in GPU 3.", "A pending retired page has been detected in GPU 3."}},
		// ", " inside an unrecognised message keeps it whole.
		{"foo, bar", []string{"foo, bar"}},
		// A recognised message, then text no format matches.
		{"Detected XID 79 for GPU 4, and then, more", []string{"Detected XID 79 for GPU 4", "and then, more"}},
	} {
		if diff := cmp.Diff(tc.want, SplitMessages(tc.text)); diff != "" {
			t.Errorf("SplitMessages(%q) (-want +got):\n%s", tc.text, diff)
		}
	}
}

func TestParseHealthCheck(t *testing.T) {
	info := func(code int) ErrorInfo { e, _ := Lookup(code); return e }
	for _, tc := range []struct {
		file    string
		overall string
		want    []Incident
	}{
		{"health-c-j-healthy.json", HealthHealthy, nil},
		{"health-c-j-pcie-replay-gpu0.json", HealthWarning, []Incident{
			{Group: "GPU", Entity: 0, System: "PCIe system", Health: HealthWarning,
				Message: "Detected more than 31 PCIe replays per minute for GPU 0 : 99999", Error: info(3), Known: true},
		}},
		{"health-c-j-memory-gpu3-thermal-gpu5.json", HealthFailure, []Incident{
			{Group: "GPU", Entity: 3, System: "Memory system", Health: HealthFailure,
				Message: "Detected 2 volatile double-bit ECC error(s) in GPU 3.", Error: info(4), Known: true},
			{Group: "GPU", Entity: 3, System: "Memory system", Health: HealthFailure,
				Message: "A pending retired page has been detected in GPU 3.", Error: info(6), Known: true},
			{Group: "GPU", Entity: 5, System: "Thermal system", Health: HealthWarning,
				Message: "Detected clocks event due to thermal violation in GPU 5", Error: info(10), Known: true},
		}},
		{"health-c-j-reset-gpu2-nvswitch1-power-gpu6.json", HealthFailure, []Incident{
			{Group: "GPU", Entity: 2, System: "Driver", Health: HealthFailure,
				Message: "GPU 2 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET).", Error: info(125), Known: true},
			{Group: "GPU", Entity: 6, System: "Power system", Health: HealthWarning,
				Message: "Detected clocks event due to power violation in GPU 6.", Error: info(12), Known: true},
			{Group: "Switch", Entity: 1, System: "Internal error", Health: HealthFailure,
				Message: "Detected fatal errors on NvSwitch 1 link 17", Error: info(15), Known: true},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rep, err := ParseHealthCheck(read(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Overall != tc.overall {
				t.Errorf("overall %q, want %q", rep.Overall, tc.overall)
			}
			if diff := cmp.Diff(tc.want, rep.Incidents); diff != "" {
				t.Errorf("incidents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHealthCheckErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no JSON", "Error: Health watches not enabled. Please enable watches. \n", "no JSON object"},
		{"broken JSON", "{\"body\": {", "unexpected EOF"},
		{"other header", `{"header": ["NVLINK Error Counts"], "body": {}}`, "want \"Health Monitor Report\""},
		{"no overall", `{"header": ["Health Monitor Report"], "body": {}}`, "no \"Overall Health\""},
		{"bad entity", `{"header": ["Health Monitor Report"], "body": {"Overall Health": {"value": "Warning"}, "GPU": {"children": {"x": {}}}}}`, "not a DCGM entity id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHealthCheck([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestParseWatches(t *testing.T) {
	w, err := ParseWatches(read(t, "health-f-j-after-s-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if m := w.Missing(); len(m) != 0 || w[WatchSM] {
		t.Errorf("after -s a: missing %v, SM %v; want none missing and SM off (not needed)", m, w[WatchSM])
	}
	w, err = ParseWatches(read(t, "health-f-j-none.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NeededWatches[:], w.Missing()); diff != "" {
		t.Errorf("fresh engine: missing (-want +got):\n%s", diff)
	}
	// A DCGM 3 dcgmi lists no ConnectX: not missing there.
	delete(w, WatchConnectX)
	if m := w.Missing(); len(m) != len(NeededWatches)-1 {
		t.Errorf("without ConnectX listed: missing %v", m)
	}
	if _, err := ParseWatches([]byte("Health monitor systems report\n{\"body\": {\"PCIe\": {\"value\": \"Maybe\"}}}")); err == nil {
		t.Error("a watch neither On nor Off parsed")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stdout string
		exit   int
		want   Outcome
	}{
		{"no host engine", string(read(t, "no-host-engine.txt")), ExitConnectionInvalid, OutcomeNoHostEngine},
		{"exit code alone", "", ExitConnectionInvalid, OutcomeNoHostEngine},
		{"watches off", "Error: Health watches not enabled. Please enable watches. \n", ExitGenericError, OutcomeWatchesOff},
		{"usage", "PARSE ERROR: Argument: -j (--json)\n", ExitParseError, OutcomeUsage},
		{"answer", string(read(t, "health-c-j-healthy.json")), 0, OutcomeAnswered},
	} {
		if got := Classify(tc.stdout, "", tc.exit); got != tc.want {
			t.Errorf("%s: Classify = %v, want %v", tc.name, got, tc.want)
		}
	}
}
