package checks

import (
	"os"
	"testing"
)

// TestJudgeInterfaces judges procfs's real /proc/net/dev (testdata/nhc/SOURCE); the operstates
// are invented (procfs's only one, eth0's, says up).
func TestJudgeInterfaces(t *testing.T) {
	b, err := os.ReadFile("testdata/nhc/procfs-net-dev")
	if err != nil {
		t.Fatal(err)
	}
	names, err := parseNetDev(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(names); got != 4 || names[0] != "vethf345468" || names[3] != "eth0" {
		t.Fatalf("names %q", names)
	}
	state := map[string]string{"eth0": "up", "docker0": "down", "vethf345468": "up", "lo": "unknown"}
	tests := []struct {
		name        string
		present, up []string
		status      Status
		summary     string
	}{
		{"check_hw_eth eth0", []string{"eth0"}, nil, StatusOK, "1 interface as listed"},
		{"check_hw_eth eth1", []string{"eth1"}, nil, StatusFail, "eth1: not detected in /proc/net/dev"},
		{"a glob present", []string{"veth*"}, nil, StatusOK, "1 interface as listed"},
		{"up", nil, []string{"eth0"}, StatusOK, "1 interface as listed"},
		{"down", nil, []string{"docker0"}, StatusFail, "docker0: down, want up"},
		{"a glob, one down", nil, []string{"*0"}, StatusFail, "docker0: down, want up"},
		{"a glob matching none", nil, []string{"ib*"}, StatusFail, "ib*: not detected in /proc/net/dev"},
		{"no operstate", nil, []string{"vethf345468", "lo"}, StatusFail, "lo: unknown, want up"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := state
			res := judgeInterfaces(names, st, tc.present, tc.up)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			assertRemedies(t, res)
		})
	}
	res := judgeInterfaces(names, map[string]string{}, nil, []string{"eth0"})
	if res.Status != StatusError || res.Summary != "eth0: no operstate in /sys/class/net" {
		t.Errorf("no operstate: got %s %q", res.Status, res.Summary)
	}
	if _, err := parseNetDev([]byte("h1\nh2\nno colon\n")); err == nil {
		t.Error("a line without a name parsed")
	}
}
