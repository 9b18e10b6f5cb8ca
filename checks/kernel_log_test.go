package checks

import "testing"

// TestJudgeKernelLog judges kernel log lines: a real XID 79 line (NVIDIA/NVSentinel#155, as
// testdata/xid/nvsentinel-155.log quotes it); the OOM kill line follows mm/oom_kill.c's
// format with invented numbers, and the mlx5 line is invented.
func TestJudgeKernelLog(t *testing.T) {
	lines := []string{
		"NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
		"[ 1300.000001] Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:65432kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:256kB oom_score_adj:0",
		"[ 1400.000000] mlx5_core 0000:18:00.0: mlx5_cmd_out_err:838:(pid 0): something",
	}
	tests := []struct {
		name     string
		patterns []string
		status   Status
		summary  string
	}{
		{"a /regex/ that must not appear, found", []string{"!/Out of memory: Killed process/"}, StatusFail, "!/Out of memory: Killed process/: found: [ 1300.000001] Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:65432kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:256kB oom_score_a..."},
		{"a /regex/ that must not appear, absent", []string{"!/segfault at/"}, StatusOK, "the kernel log matches 1 pattern"},
		{"a glob on the whole line", []string{"!*fallen off the bus*"}, StatusFail, "!*fallen off the bus*: found: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"},
		{"a glob not anchored is not a substring", []string{"!fallen off the bus"}, StatusOK, "the kernel log matches 1 pattern"},
		{"a pattern that must appear, absent", []string{"/mlx5_core .* link up/"}, StatusFail, "/mlx5_core .* link up/: not found in the kernel log"},
		{"a pattern that must appear, found", []string{"/mlx5_core/"}, StatusOK, "the kernel log matches 1 pattern"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeKernelLog(lines, tc.patterns)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			assertRemedies(t, res)
		})
	}
	c := &kernelLogConfig{Dmesg: "dmesg", Patterns: []string{"!/(/", "ok", "!"}}
	if got := len(c.ValidateSection()); got != 3 {
		t.Errorf("%d problems, want 3: %+v", got, c.ValidateSection())
	}
}
