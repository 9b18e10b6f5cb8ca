package preempt

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

func TestJudge(t *testing.T) {
	t0 := time.Unix(1800000000, 0)
	tests := []struct {
		name   string
		m      Measurement
		wantOK bool
		want   string
	}{
		{"window equal to required passes", Measurement{Partition: "p", FirstSignal: t0, Window: 180 * time.Second, Required: 180 * time.Second, Outcome: "PENDING"}, true, "at least the required 3m0s"},
		{"10 ms short fails", Measurement{Partition: "p", FirstSignal: t0, Window: 179990 * time.Millisecond, Required: 180 * time.Second, Outcome: "PENDING"}, false, "less than the required 3m0s: raise GraceTime"},
		{"30 s of 180 fails", Measurement{Partition: "p", QOS: "low", FirstSignal: t0, Window: 30 * time.Second, Required: 180 * time.Second}, false, "partition p QOS low: 30s"},
		{"no signal fails", Measurement{Partition: "p", Required: time.Second, Outcome: "SUSPENDED"}, false, "with no SIGTERM or SIGCONT first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.m)
			if v.OK != tc.wantOK || !strings.Contains(v.Summary, tc.want) {
				t.Errorf("Judge = %v %q, want %v containing %q", v.OK, v.Summary, tc.wantOK, tc.want)
			}
		})
	}
}

func TestParseUnix(t *testing.T) {
	got, err := parseUnix("1800000000.123456789")
	if err != nil || got.UnixNano() != 1800000000123456789 {
		t.Errorf("parseUnix = %v, %v", got, err)
	}
	if _, err := parseUnix("x.1"); err == nil {
		t.Error("parseUnix accepts x.1")
	}
}

// Scaled down: Slurm kills a preempted job once its GraceTime is over at its next check of
// time limits, every 30 s (slurmctld's PERIODIC_TIMEOUT), so a window is GraceTime to
// GraceTime+30 s. A required window of 30 s stands for the checklist's 180: GraceTime=0
// (REQUEUE) gives the application only KillWait (2 s on the bed), GraceTime=40 (CANCEL) more
// than 30 s.
const bedConf = `PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PartitionName=short Nodes=ALL PriorityTier=1 GraceTime=0 PreemptMode=REQUEUE State=UP
PartitionName=long Nodes=ALL PriorityTier=1 GraceTime=40 PreemptMode=CANCEL State=UP
PartitionName=high Nodes=ALL PriorityTier=10 PreemptMode=OFF State=UP
`

// TestMeasureOnSlurm measures both partitions on the real test beds (22.05 and 24.11): the
// short one is reported short of the window, the long one passes.
func TestMeasureOnSlurm(t *testing.T) {
	testbed.ForEachVersion(t, testbed.Options{RepoRoot: "../../..", TempPrefix: "nodecheck-preempt-", TempMode: 0o755,
		Short: "starts a real Slurm and waits for preemptions", Nodes: 1, ExtraConf: bedConf,
	}, func(t *testing.T, b *testbed.Bed) {
		dir, err := os.MkdirTemp(b.Tmp, "jobs-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			partition string
			wantOK    bool
		}{{"short", false}, {"long", true}} {
			o := Options{Partition: tc.partition, PreemptorPartition: "high", Node: b.Nodes[0], Dir: dir, Window: 30 * time.Second,
				Timeout: 3 * time.Minute, SlurmBin: b.SlurmBin, Env: append(os.Environ(), "SLURM_CONF="+b.Conf)}
			start := time.Now()
			m, err := Measure(context.Background(), o)
			if err != nil {
				t.Fatalf("%s: %v", tc.partition, err)
			}
			v := Judge(m)
			t.Logf("Slurm %s, partition %s: window %s (signals %v, outcome %s, measured in %s): %s",
				b.Version, tc.partition, m.Window.Round(10*time.Millisecond), m.Signals, m.Outcome, time.Since(start).Round(time.Second), v.Summary)
			if v.OK != tc.wantOK {
				t.Errorf("%s: verdict %v, want %v", tc.partition, v.OK, tc.wantOK)
			}
			// One line a partition: the node is idle when every line says so.
			testbed.WaitFor(t, "the node to be idle again", time.Minute, func() bool {
				st := strings.Fields(b.Slurm(t, "sinfo", "-h", "-N", "-n", b.Nodes[0], "-o", "%t"))
				return len(st) > 0 && !slices.ContainsFunc(st, func(s string) bool { return s != "idle" })
			})
		}
	})
}
