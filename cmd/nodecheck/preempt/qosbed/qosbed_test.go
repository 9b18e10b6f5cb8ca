// Package qosbed_test measures preemption windows with preempt/qos on a 22.05 test bed with
// accounting. It is a package of its own so that it runs beside the partition measurements of
// package preempt, each within go test's time limit for a package.
package qosbed_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/preempt"
	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// bedQOSConf preempts by QOS, with REQUEUE unless a QOS says otherwise. The QOS themselves live
// in the accounting database (TestMeasureQOSOnSlurm makes them with sacctmgr).
const bedQOSConf = `PreemptType=preempt/qos
PreemptMode=REQUEUE
`

// qosCases are the preempted QOS, scaled down as for the partitions (bedConf): a required
// window of 30 s stands for 180, GraceTime=0 gives the application only KillWait (2 s), and
// GraceTime=40 more than 30 s. The QOS high preempts all of them.
var qosCases = []struct {
	qos, mode string
	grace     int
	wantOK    bool
}{
	{"low", "requeue", 0, false},
	{"low40", "requeue", 40, true},
	{"low40c", "cancel", 40, true},
}

// TestMeasureQOSOnSlurm measures preempt/qos windows on the 22.05 test bed with accounting
// (slurmdbd and MariaDB; the 24.11 bed, in a Debian 13 root, has none): QOS low is reported
// short of the window, low40 (REQUEUE) and low40c (CANCEL) pass. Each QOS is measured once
// (NODECHECK_QOS_ROUNDS=2 measures twice, as docs/checklist.md's table was).
func TestMeasureQOSOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real Slurm with slurmdbd and waits for preemptions")
	}
	if v := testbed.Versions(); !slices.Contains(v, testbed.Slurm2205) {
		t.Skipf("NODECHECK_TESTBED_SLURM=%s: the QOS test bed (accounting) is 22.05 only", strings.Join(v, ","))
	}
	b := testbed.Start(t, testbed.Options{RepoRoot: "../../../..", TempPrefix: "nodecheck-preempt-qos-", TempMode: 0o755,
		Short: "starts a real Slurm with slurmdbd and waits for preemptions", Nodes: 1, ExtraConf: bedQOSConf,
		Slurm: testbed.Slurm2205, Accounting: true,
	})
	var names []string
	for _, c := range qosCases {
		b.Slurm(t, "sacctmgr", "-i", "add", "qos", c.qos, "GraceTime="+strconv.Itoa(c.grace),
			"PreemptMode="+c.mode)
		names = append(names, c.qos)
	}
	b.Slurm(t, "sacctmgr", "-i", "add", "qos", "high", "Preempt="+strings.Join(names, ","))
	b.Slurm(t, "sacctmgr", "-i", "modify", "user", "where", "name=root", "set", "qos+="+strings.Join(append(names, "high"), ","))
	// slurmdbd pushes the QOS to slurmctld; wait until it has them all.
	testbed.WaitFor(t, "slurmctld to know the QOS", 30*time.Second, func() bool {
		out := b.Slurm(t, "scontrol", "show", "assoc_mgr", "flags=qos")
		for _, q := range append(names, "high") {
			if !strings.Contains(out, "QOS="+q+"(") {
				return false
			}
		}
		return true
	})
	t.Logf("QOS (sacctmgr): %s", strings.TrimSpace(b.Slurm(t, "sacctmgr", "-n", "-P", "show", "qos", "format=name,gracetime,preemptmode,preempt")))

	dir, err := os.MkdirTemp(b.Tmp, "jobs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rounds := 1
	if os.Getenv("NODECHECK_QOS_ROUNDS") == "2" {
		rounds = 2
	}
	for round := 1; round <= rounds; round++ {
		for _, tc := range qosCases {
			o := preempt.Options{Partition: "debug", QOS: tc.qos, PreemptorQOS: "high", Node: b.Nodes[0], Dir: dir, Window: 30 * time.Second,
				Timeout: 3 * time.Minute, SlurmBin: b.SlurmBin, Env: append(os.Environ(), "SLURM_CONF="+b.Conf)}
			start := time.Now()
			m, err := preempt.Measure(context.Background(), o)
			if err != nil {
				t.Fatalf("QOS %s: %v", tc.qos, err)
			}
			v := preempt.Judge(m)
			t.Logf("round %d, Slurm %s, QOS %s (PreemptMode %s, GraceTime %d): window %s (signals %v, outcome %s, measured in %s): %s",
				round, b.Version, tc.qos, tc.mode, tc.grace, m.Window.Round(10*time.Millisecond), m.Signals, m.Outcome,
				time.Since(start).Round(time.Second), v.Summary)
			if v.OK != tc.wantOK {
				t.Errorf("QOS %s: verdict %v, want %v", tc.qos, v.OK, tc.wantOK)
			}
			testbed.WaitFor(t, "the node to be idle again", time.Minute, func() bool {
				return strings.TrimSpace(b.Slurm(t, "sinfo", "-h", "-N", "-n", b.Nodes[0], "-o", "%t")) == "idle"
			})
		}
	}
}
