package run

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/report"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// TestDrainMetrics: the drain the metrics describe is drain's, after the repair step: a
// resume ends it, a tag or an escalation changes its reason (and so its check and remedy) but
// not when it began.
func TestDrainMetrics(t *testing.T) {
	since := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	const reason = "nodecheck: gpu_memory_errors: gpu 3 (0000:9b:00.0): row remapping pending [reset_gpu]"
	drained := &drain.Current{Drained: true, Reason: reason, Since: since}
	tests := []struct {
		name string
		cur  *drain.Current
		fix  *repair.Outcome
		want *report.DrainMetrics
	}{
		{"not read", nil, nil, nil},
		{"in service", &drain.Current{}, nil, &report.DrainMetrics{}},
		{"drained", drained, nil, &report.DrainMetrics{Drained: true, Check: "gpu_memory_errors", Remedy: "reset_gpu", Since: since}},
		{"a reset tags the reason", drained, &repair.Outcome{Action: repair.StepReset, Reason: drain.TagReason(reason, "reset_gpu")},
			&report.DrainMetrics{Drained: true, Check: "gpu_memory_errors", Remedy: "reset_gpu", Since: since}},
		{"escalated", drained, &repair.Outcome{Action: repair.StepEscalate, Reason: "nodecheck: service: gpu 1652922000001 0000:9b:00.0 3 repairs in 7d: before a GPU reset"},
			&report.DrainMetrics{Drained: true, Check: "service", Remedy: "service", Since: since}},
		{"a repair's resume ends the drain", drained, &repair.Outcome{Action: repair.StepResume}, &report.DrainMetrics{}},
		{"a step that changes nothing", drained, &repair.Outcome{Action: repair.StepWait},
			&report.DrainMetrics{Drained: true, Check: "gpu_memory_errors", Remedy: "reset_gpu", Since: since}},
		{"a reason without a remedy", &drain.Current{Drained: true, Reason: "nodecheck: fleet: slow: busbw 405 GB/s"},
			nil, &report.DrainMetrics{Drained: true, Check: "fleet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := drainMetrics(tc.cur, tc.fix, "nodecheck:")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("drainMetrics (-want +got):\n%s", diff)
			}
		})
	}
}
