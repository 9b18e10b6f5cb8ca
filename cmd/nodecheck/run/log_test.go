package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/rs/zerolog"
)

// TestLogResultsRemedy: a failing check's log line carries its remedy; others carry none.
func TestLogResultsRemedy(t *testing.T) {
	var stderr bytes.Buffer
	log := zerolog.New(&stderr).Level(zerolog.WarnLevel)
	logResults(log, checks.Report{Results: []checks.Result{
		{Check: "gpu_memory_errors", Status: checks.StatusFail, Summary: "gpu 3: row remapping pending", Remedy: checks.RemedyResetGPU},
		{Check: "ib_ports", Status: checks.StatusWarn, Summary: "slow"},
	}})
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], `"remedy":"reset_gpu"`) || strings.Contains(lines[1], `"remedy"`) {
		t.Errorf("log lines:\n%s\nwant the failure with \"remedy\":\"reset_gpu\", the warning without", stderr.String())
	}
}
