package dcgm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// failing lists a report's results that are not Pass, as "test gpu status code/severity".
func failing(rep DiagReport) []string {
	var out []string
	for _, t := range rep.Tests {
		for _, r := range t.Results {
			if r.Status == DiagPass {
				continue
			}
			s := t.Name + " "
			if r.HasEntity {
				s += r.Group + string(rune('0'+r.Entity)) + " "
			} else {
				s += "node "
			}
			s += r.Status
			for _, w := range r.Warnings {
				s += " " + w.Error().Name + "/" + w.Severity.String()
			}
			out = append(out, s)
		}
	}
	return out
}

func TestParseDiag(t *testing.T) {
	for _, tc := range []struct {
		file           string
		layout         string
		version        string
		tests          int
		serials        int
		failing        []string
		runtimeErrorIn string
	}{
		{"diag4-r1-pass-8gpu.json", Diag4Key, "4.4.2", 1, 8, nil, ""},
		{"diag4-r1-persistence-off-gpu0.json", Diag4Key, "4.4.2", 1, 2, []string{"software GPU0 Fail PERSISTENCE_MODE/CONFIG"}, ""},
		{"diag4-r2-memory-fail-gpu1-clocks-monitor-gpu0.json", Diag4Key, "4.4.2", 3, 2,
			[]string{"memory GPU1 Fail FAULTY_MEMORY/ISOLATE", "pcie GPU0 Fail CLOCKS_EVENT_VIOLATION/MONITOR"}, ""},
		{"diag4-runtime-error-already-running.json", Diag4Key, "4.4.2", 0, 0, nil, "A diag instance is already running"},
		{"diag3-r2-memory-mismatch-gpu2.json", Diag3Key, "3.3.3", 11, 0, []string{"GPU Memory GPU2 Fail MEMORY_MISMATCH/ISOLATE"}, ""},
		{"diag3-j-persistence-fail-env-warn.json", Diag3Key, "", 9, 0, []string{"Persistence Mode node Fail", "Environment Variables node Warn"}, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rep, err := ParseDiag(read(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Layout != tc.layout || rep.Version != tc.version || len(rep.Tests) != tc.tests || len(rep.Serials) != tc.serials {
				t.Errorf("layout %q version %q, %d tests, %d serials; want %q %q %d %d", rep.Layout, rep.Version, len(rep.Tests), len(rep.Serials), tc.layout, tc.version, tc.tests, tc.serials)
			}
			if diff := cmp.Diff(tc.failing, failing(rep)); diff != "" {
				t.Errorf("results not passing (-want +got):\n%s", diff)
			}
			if !strings.Contains(rep.RuntimeError, tc.runtimeErrorIn) || (tc.runtimeErrorIn == "") != (rep.RuntimeError == "") {
				t.Errorf("runtime error %q, want one with %q", rep.RuntimeError, tc.runtimeErrorIn)
			}
		})
	}
}

func TestParseDiagQuirks(t *testing.T) {
	// DCGM 3.x Deployment results carry the GPU as a number and the message under "warnings"
	// (v3.3.9 Diag::HelperJsonAddBasicTests); NVVS's own JSON spells statuses in capitals.
	in := `{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [
		{"name": "Persistence Mode", "results": [{"gpu_id": 1, "status": "Fail", "warnings": [{"warnings": "Persistence mode for GPU 1 is disabled.", "error_id": 29, "error_category": 3, "error_severity": 5}]}]},
		{"name": "Inforom", "results": [{"gpu_ids": "2", "status": "SKIP", "warnings": [{"warning": "w", "error_id": 9}]}]}]}]}}`
	rep, err := ParseDiag([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Persistence Mode GPU1 Fail PERSISTENCE_MODE/CONFIG", "Inforom GPU2 Skip CORRUPT_INFOROM/TRIAGE"}
	if diff := cmp.Diff(want, failing(rep)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := rep.Tests[0].Results[0].Warnings[0].Message; got != "Persistence mode for GPU 1 is disabled." {
		t.Errorf("message %q", got)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"something": {}}`, "neither"},
		{`{"DCGM Diagnostic": {}}`, "no test result"},
		{`{"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": [{"name": "t", "results": [{"gpu_id": "x", "status": "Pass"}]}]}]}}`, "gpu_id"},
		{`{"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": [{"name": "t", "results": [{"entity_id": -1, "status": "Pass"}]}]}]}}`, "negative"},
		{"Error: unable to establish a connection to the specified host: localhost\n", "no JSON object"},
	} {
		if _, err := ParseDiag([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseDiag(%.40q): error %v, want one with %q", bad.in, err, bad.want)
		}
	}
}
