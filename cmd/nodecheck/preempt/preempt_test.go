package preempt

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

func TestJudge(t *testing.T) {
	t0 := time.Unix(1800000000, 0)
	grace := func(s int) Promise {
		return Promise{Known: true, Grace: time.Duration(s) * time.Second, Source: fmt.Sprintf("GraceTime=%d (partition p)", s)}
	}
	suspendGrace := Promise{Known: true, Grace: 2 * time.Second, Source: "suspend_grace_time's default of 2 s"}
	tests := []struct {
		name      string
		m         Measurement
		wantOK    bool
		wantBelow bool
		want      string
	}{
		{"window equal to required passes", Measurement{Partition: "p", FirstSignal: t0, Window: 180 * time.Second, Required: 180 * time.Second, Outcome: "PENDING", Promise: grace(180)}, true, false, "at least the required 3m0s (configured: GraceTime=180 (partition p))"},
		{"10 ms short fails", Measurement{Partition: "p", FirstSignal: t0, Window: 179990 * time.Millisecond, Required: 180 * time.Second, Outcome: "PENDING", Promise: grace(0)}, false, false, "less than the required 3m0s (configured: GraceTime=0 (partition p)): raise GraceTime"},
		{"30 s of 180 fails", Measurement{Partition: "p", QOS: "low", FirstSignal: t0, Window: 30 * time.Second, Required: 180 * time.Second}, false, false, "partition p QOS low: 30s"},
		{"unknown grace time is said", Measurement{Partition: "p", QOS: "low", FirstSignal: t0, Window: 30 * time.Second, Required: 180 * time.Second, Promise: Promise{Source: "the QOS's GraceTime under preempt/qos (sacctmgr show qos), not read"}}, false, false, "(configured: the QOS's GraceTime"},
		{"no signal fails", Measurement{Partition: "p", Required: time.Second, Outcome: "SUSPENDED"}, false, false, "with no SIGTERM, SIGCONT or SIGTSTP first"},
		{"no signal with a grace time is below it", Measurement{Partition: "p", Required: time.Second, Outcome: "gone (cancelled)", Promise: grace(40)}, false, true, "no time to checkpoint"},
		// GraceTime against the measured window: Slurm ends the job GraceTime to
		// GraceTime+30 s after the first signal.
		{"window past GraceTime is not flagged", Measurement{Partition: "p", FirstSignal: t0, Window: 48060 * time.Millisecond, Required: 30 * time.Second, Outcome: "PENDING", Promise: grace(40)}, true, false, "48.06s from the first signal"},
		{"window 1 s short of GraceTime is not flagged", Measurement{Partition: "p", FirstSignal: t0, Window: 39 * time.Second, Required: 30 * time.Second, Outcome: "PENDING", Promise: grace(40)}, true, false, "at least the required 30s"},
		{"window 1.5 s short of GraceTime is flagged", Measurement{Partition: "p", FirstSignal: t0, Window: 38500 * time.Millisecond, Required: 30 * time.Second, Outcome: "PENDING", Promise: grace(40)}, true, true, "; 1.5s shorter than the configured 40s promises"},
		{"short of both", Measurement{Partition: "p", FirstSignal: t0, Window: 5 * time.Second, Required: 180 * time.Second, Outcome: "gone (cancelled)", Promise: grace(300)}, false, true, "raise GraceTime; 4m55s shorter than the configured 5m0s promises"},
		{"GANG ends without GraceTime: said", Measurement{Partition: "long", FirstSignal: t0, Window: 4600 * time.Millisecond, Required: 30 * time.Second, Outcome: "COMPLETING", Promise: Promise{Known: true, Grace: 40 * time.Second, Source: "GraceTime=40 (partition long)", Gang: true}}, false, true, "35.4s shorter than the configured 40s promises (with GANG in PreemptMode, Slurm starts a preempting job that does not take the whole node"},
		{"GANG and an exclusive preemptor: not explained so", Measurement{Partition: "long", FirstSignal: t0, Window: 4600 * time.Millisecond, Required: 30 * time.Second, Outcome: "COMPLETING", PreemptorExclusive: true, Promise: Promise{Known: true, Grace: 40 * time.Second, Source: "GraceTime=40 (partition long)", Gang: true}}, false, true, "40s promises"},
		// SUSPEND: the window ends at SIGSTOP, suspend_grace_time after SIGTSTP.
		{"suspension is the end", Measurement{Partition: "s", FirstSignal: t0, Window: 1990 * time.Millisecond, Required: 30 * time.Second, Outcome: "SUSPENDED", Promise: suspendGrace}, false, false, "1.99s from the first signal to the job's suspension (SIGSTOP) (SUSPENDED), less than the required 30s (configured: suspend_grace_time's default of 2 s): raise PreemptParameters=suspend_grace_time"},
		{"suspension long enough", Measurement{Partition: "s", FirstSignal: t0, Window: 200 * time.Second, Required: 180 * time.Second, Outcome: "SUSPENDED", Promise: Promise{Known: true, Grace: 200 * time.Second, Source: "PreemptParameters=suspend_grace_time=200"}}, true, false, "at least the required 3m0s"},
		{"suspended before suspend_grace_time", Measurement{Partition: "s", FirstSignal: t0, Window: 100 * time.Millisecond, Required: time.Second, Outcome: "SUSPENDED", Promise: Promise{Known: true, Grace: 5 * time.Second, Source: "PreemptParameters=suspend_grace_time=5"}}, false, true, "4.9s shorter than the configured 5s promises"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.m)
			if v.OK != tc.wantOK || v.BelowPromise != tc.wantBelow || !strings.Contains(v.Summary, tc.want) {
				t.Errorf("Judge = %v %v %q, want %v %v containing %q", v.OK, v.BelowPromise, v.Summary, tc.wantOK, tc.wantBelow, tc.want)
			}
			if gang := strings.Contains(v.Summary, "with GANG"); gang != (tc.m.Promise.Gang && !tc.m.PreemptorExclusive && v.BelowPromise && tc.m.Outcome != "SUSPENDED") {
				t.Errorf("Judge = %q: the GANG explanation where it does not apply, or missing", v.Summary)
			}
		})
	}
}

// Captured on the test beds (scontrol show config, the Preempt and version lines; scontrol
// show partition -o) with PreemptMode=SUSPEND,GANG and partition_prio, 2026-12-06.
const (
	config2205 = `PreemptMode             = GANG,SUSPEND
PreemptType             = preempt/partition_prio
PreemptExemptTime       = 00:00:00
SLURM_VERSION           = 22.05.8
`
	config2411 = `PreemptMode             = GANG,SUSPEND
PreemptParameters       = (null)
PreemptType             = preempt/partition_prio
PreemptExemptTime       = 00:00:00
SLURM_VERSION           = 24.11.5
`
	partition2411 = "PartitionName=susp AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED MaxCPUsPerSocket=UNLIMITED NodeSets=ALL Nodes=n1 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=SUSPEND State=UP TotalCPUs=2 TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=2,mem=1000M,node=1,billing=2\n"
	// The same partition on 22.05.8 with GraceTime=40 PreemptMode=CANCEL (edited from the
	// capture: only those two fields).
	partition2205 = "PartitionName=long AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=40 Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=n1 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=CANCEL State=UP TotalCPUs=2 TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=2,mem=1000M,node=1,billing=2\n"
)

func TestPromise(t *testing.T) {
	p2411, err := parsePartition(partition2411)
	if err != nil || p2411.Name != "susp" || p2411.GraceTime != 0 || p2411.PreemptMode != "SUSPEND" {
		t.Fatalf("parsePartition(24.11) = %+v, %v", p2411, err)
	}
	p2205, err := parsePartition(partition2205)
	if err != nil || p2205.Name != "long" || p2205.GraceTime != 40*time.Second || p2205.PreemptMode != "CANCEL" {
		t.Fatalf("parsePartition(22.05) = %+v, %v", p2205, err)
	}
	if _, err := parsePartition("PartitionName=x GraceTime=soon"); err == nil {
		t.Error("parsePartition accepts GraceTime=soon")
	}
	if _, err := parsePartition("no such partition"); err == nil {
		t.Error("parsePartition accepts no partition")
	}
	c2205, c2411 := parseConfig(config2205), parseConfig(config2411)
	if c2205.Version != "22.05.8" || c2205.PreemptType != "preempt/partition_prio" || c2205.PreemptMode != "GANG,SUSPEND" || c2411.PreemptParameters != "(null)" {
		t.Fatalf("parseConfig = %+v, %+v", c2205, c2411)
	}
	with := func(c SlurmConfig, params string) SlurmConfig { c.PreemptParameters = params; return c }
	qos := c2411
	qos.PreemptType = "preempt/qos"
	tests := []struct {
		name    string
		c       SlurmConfig
		p       PartitionConfig
		outcome string
		want    Promise
	}{
		{"GraceTime of a CANCEL partition", c2205, p2205, "gone (cancelled)", Promise{Known: true, Grace: 40 * time.Second, Source: "GraceTime=40 (partition long)", Gang: true}},
		{"no GANG", SlurmConfig{Version: "22.05.8", PreemptType: "preempt/partition_prio", PreemptMode: "REQUEUE"}, p2205, "gone (cancelled)", Promise{Known: true, Grace: 40 * time.Second, Source: "GraceTime=40 (partition long)"}},
		{"GraceTime=0 is a promise", c2411, PartitionConfig{Name: "short", PreemptMode: "REQUEUE"}, "PENDING", Promise{Known: true, Grace: 0, Source: "GraceTime=0 (partition short)", Gang: true}},
		{"22.05 suspends after a fixed 2 s", c2205, p2411, "SUSPENDED", Promise{Known: true, Grace: 2 * time.Second, Source: "the suspend grace time, fixed at 2 s before Slurm 23.02.5 (this is 22.05.8; GraceTime does not apply to SUSPEND)", Gang: true}},
		{"24.11 default", c2411, p2411, "SUSPENDED", Promise{Known: true, Grace: 2 * time.Second, Source: "suspend_grace_time's default of 2 s (no PreemptParameters=suspend_grace_time; GraceTime does not apply to SUSPEND)", Gang: true}},
		{"24.11 suspend_grace_time=5", with(c2411, "reclaim_licenses,suspend_grace_time=5"), p2411, "SUSPENDED", Promise{Known: true, Grace: 5 * time.Second, Source: "PreemptParameters=suspend_grace_time=5 (GraceTime does not apply to SUSPEND)", Gang: true}},
		{"suspended under a CANCEL partition's name still SUSPEND", with(c2411, "suspend_grace_time=7"), p2205, "SUSPENDED", Promise{Known: true, Grace: 7 * time.Second, Source: "PreemptParameters=suspend_grace_time=7 (GraceTime does not apply to SUSPEND)", Gang: true}},
		{"SUSPEND partition not yet suspended", c2411, p2411, "PENDING", Promise{Known: true, Grace: 2 * time.Second, Source: "suspend_grace_time's default of 2 s (no PreemptParameters=suspend_grace_time; GraceTime does not apply to SUSPEND)", Gang: true}},
		{"unreadable suspend_grace_time", with(c2411, "suspend_grace_time=2s"), p2411, "SUSPENDED", Promise{Source: "PreemptParameters=suspend_grace_time=2s, not a number of seconds", Gang: true}},
		{"23.02.4 has no suspend_grace_time", with(SlurmConfig{Version: "23.02.4"}, "suspend_grace_time=9"), p2411, "SUSPENDED", Promise{Known: true, Grace: 2 * time.Second, Source: "the suspend grace time, fixed at 2 s before Slurm 23.02.5 (this is 23.02.4; GraceTime does not apply to SUSPEND)"}},
		{"preempt/qos: the QOS's GraceTime", qos, p2205, "PENDING", Promise{Source: "the QOS's GraceTime under preempt/qos (sacctmgr show qos), not read", Gang: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := promise(tc.c, tc.p, tc.outcome); got != tc.want {
				t.Errorf("promise = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{{"22.05.8", false}, {"23.02.4", false}, {"23.02.5", true}, {"23.02.5-1", true}, {"23.11.0", true}, {"24.11.5", true}, {"25.05", true}, {"23.02", false}, {"", false}, {"x.y.z", false}} {
		if got := versionAtLeast(tc.v, 23, 2, 5); got != tc.want {
			t.Errorf("versionAtLeast(%q, 23.02.5) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestParseUnix(t *testing.T) {
	got, err := parseUnix("1800000000.123456789")
	if err != nil || got.UnixNano() != 1800000000123456789 {
		t.Errorf("parseUnix = %v, %v", got, err)
	}
	if got, err := parseUnix("1800000000,5"); err != nil || got.UnixNano() != 1800000000500000000 {
		t.Errorf("parseUnix(EPOCHREALTIME with a decimal comma) = %v, %v", got, err)
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

// gangConf adds SUSPEND, which needs the gang scheduler (PreemptMode=SUSPEND,GANG for the
// cluster) and memory as a consumable resource, with --mem on both jobs so that they fit side
// by side. SUSPEND gives the application suspend_grace_time (2 s, fixed on 22.05; 5 s set on
// 24.11), whatever GraceTime says (the susp partition's 40 s). With GANG, a CANCEL partition
// keeps its GraceTime only against a preemptor that takes the whole node (mid: GraceTime=10,
// shorter than long's to keep the test short).
const gangConf = `SelectTypeParameters=CR_Core_Memory
PreemptType=preempt/partition_prio
PreemptMode=SUSPEND,GANG
PartitionName=long Nodes=ALL PriorityTier=1 GraceTime=40 PreemptMode=CANCEL State=UP
PartitionName=mid Nodes=ALL PriorityTier=1 GraceTime=10 PreemptMode=CANCEL State=UP
PartitionName=susp Nodes=ALL PriorityTier=1 GraceTime=40 PreemptMode=SUSPEND State=UP
PartitionName=high Nodes=ALL PriorityTier=10 PreemptMode=OFF State=UP
`

// A preemption to measure, and what it must give.
type bedCase struct {
	partition      string
	exclusive      bool // the preemptor takes the whole node
	wantOK         bool // at least the required 30 s
	anyOK          bool // wantOK not checked: the window is GraceTime to GraceTime + 30 s
	wantBelow      bool // shorter than the configured grace time promises
	wantSuspend    bool
	grace, grace24 time.Duration // the configured grace time on 22.05 and on 24.11
}

// TestMeasureOnSlurm measures preemptions on the real test beds (22.05 and 24.11), with
// partition_prio alone and with the gang scheduler.
func TestMeasureOnSlurm(t *testing.T) {
	opts := testbed.Options{RepoRoot: "../../..", TempPrefix: "nodecheck-preempt-", TempMode: 0o755,
		Short: "starts a real Slurm and waits for preemptions", Nodes: 1}
	t.Run("partition_prio", func(t *testing.T) {
		o := opts
		o.ExtraConf = bedConf
		testbed.ForEachVersion(t, o, func(t *testing.T, b *testbed.Bed) {
			measureOnBed(t, b, 0, []bedCase{
				{partition: "short", wantOK: false},
				{partition: "long", wantOK: true, grace: 40 * time.Second, grace24: 40 * time.Second},
			})
		})
	})
	t.Run("gang", func(t *testing.T) {
		o := opts
		o.ExtraConf = gangConf
		o.ExtraConfFor = map[string]string{testbed.Slurm2411: "PreemptParameters=suspend_grace_time=5\n"}
		testbed.ForEachVersion(t, o, func(t *testing.T, b *testbed.Bed) {
			measureOnBed(t, b, 400, []bedCase{
				{partition: "susp", wantSuspend: true, grace: 2 * time.Second, grace24: 5 * time.Second},
				// Ended at once by the gang scheduler: GraceTime is not given.
				{partition: "long", wantBelow: true, grace: 40 * time.Second, grace24: 40 * time.Second},
				{partition: "mid", exclusive: true, anyOK: true, grace: 10 * time.Second, grace24: 10 * time.Second},
			})
		})
	})
}

func measureOnBed(t *testing.T, b *testbed.Bed, memMB int, cases []bedCase) {
	dir, err := os.MkdirTemp(b.Tmp, "jobs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		o := Options{Partition: tc.partition, PreemptorPartition: "high", PreemptorExclusive: tc.exclusive, Node: b.Nodes[0], Dir: dir,
			Window: 30 * time.Second, Timeout: 3 * time.Minute, SlurmBin: b.SlurmBin, Env: append(os.Environ(), "SLURM_CONF="+b.Conf), MemMB: memMB}
		start := time.Now()
		m, err := Measure(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", tc.partition, err)
		}
		v := Judge(m)
		t.Logf("Slurm %s, partition %s, exclusive preemptor %v: window %s (signals %v, outcome %s, measured in %s): %s",
			b.Version, tc.partition, tc.exclusive, m.Window.Round(10*time.Millisecond), m.Signals, m.Outcome, time.Since(start).Round(time.Second), v.Summary)
		grace := tc.grace24
		if strings.Contains(b.Version, " 22.05") { // "slurm-wlm 22.05.8"
			grace = tc.grace
		}
		if (v.OK != tc.wantOK && !tc.anyOK) || v.BelowPromise != tc.wantBelow || (m.Outcome == "SUSPENDED") != tc.wantSuspend {
			t.Errorf("%s: verdict %v, below the promise %v, outcome %s; want %v, %v, suspended %v", tc.partition, v.OK, v.BelowPromise, m.Outcome, tc.wantOK, tc.wantBelow, tc.wantSuspend)
		}
		if !m.Promise.Known || m.Promise.Grace != grace {
			t.Errorf("%s: promise %+v, want %s", tc.partition, m.Promise, grace)
		}
		// One line a partition: the node is idle when every line says so.
		testbed.WaitFor(t, "the node to be idle again", time.Minute, func() bool {
			st := strings.Fields(b.Slurm(t, "sinfo", "-h", "-N", "-n", b.Nodes[0], "-o", "%t"))
			return len(st) > 0 && !slices.ContainsFunc(st, func(s string) bool { return s != "idle" })
		})
	}
}
