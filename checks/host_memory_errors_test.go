package checks

import (
	"context"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeHostMemoryErrors(t *testing.T) {
	tests := []struct {
		name    string
		mcs     []edacMC
		warn    int
		status  Status
		summary string
	}{
		{"clean", []edacMC{{Name: "mc0"}, {Name: "mc1", CE: 3}}, 0, StatusOK, "no uncorrectable memory error on 2 memory controllers"},
		{"one uncorrectable", []edacMC{{Name: "mc0"}, {Name: "mc1", UE: 1}}, 0, StatusFail, "mc1: 1 uncorrectable memory errors since boot (0 correctable)"},
		{"uncorrectable without info", []edacMC{{Name: "mc0", UENoInfo: 1}}, 0, StatusFail, "mc0: 1 uncorrectable memory errors since boot (0 correctable)"},
		{"correctable at the limit", []edacMC{{Name: "mc0", CE: 99, CENoInfo: 1}}, 100, StatusWarn, "mc0: 100 correctable memory errors since boot, warn_correctable = 100"},
		{"correctable under the limit", []edacMC{{Name: "mc0", CE: 99}}, 100, StatusOK, "no uncorrectable memory error on 1 memory controller"},
		{"no limit", []edacMC{{Name: "mc0", CE: 1 << 30}}, 0, StatusOK, "no uncorrectable memory error on 1 memory controller"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeHostMemoryErrors(tc.mcs, tc.warn)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			if res.Status == StatusFail && res.Details[len(res.Details)-1].Remedy != RemedyService {
				t.Errorf("remedy %q", res.Details[len(res.Details)-1].Remedy)
			}
			assertRemedies(t, res)
		})
	}
}

// TestHostMemoryErrorsRun reads node_exporter's EDAC fixture (collector/fixtures/sys.ttar at
// a7dcc3a0: mc0 with ce_count 1, ce_noinfo_count 2, ue_count 5, ue_noinfo_count 6) from a
// snapshot tree, and a tree without EDAC.
func TestHostMemoryErrorsRun(t *testing.T) {
	snap, err := node.OpenSnapshot("testdata/edac-node-exporter")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Facts: snap, Config: config.Default(Schema()), Mode: config.ModeHealth}
	res := hostMemoryErrors{}.Run(context.Background(), env)
	if res.Status != StatusFail || res.Summary != "mc0: 11 uncorrectable memory errors since boot (3 correctable)" {
		t.Errorf("got %s %q", res.Status, res.Summary)
	}
	empty, err := node.OpenSnapshot("../testdata/snapshots/h100-healthy")
	if err != nil {
		t.Fatal(err)
	}
	env.Facts = empty
	if res := (hostMemoryErrors{}).Run(context.Background(), env); res.Status != StatusSkip {
		t.Errorf("without EDAC: got %s %q", res.Status, res.Summary)
	}
}
