package testbed

import (
	"testing"
	"time"
)

// TestParseNodeLine reads `scontrol show node -o` lines captured from the test bed during a
// reboot (22.05.8 and 24.11.5; 24.11 adds ResumeAfterTime= and two spaces before Reason=).
func TestParseNodeLine(t *testing.T) {
	boot := time.Date(2026, 12, 3, 6, 32, 0, 0, time.Local)
	for _, tc := range []struct {
		name, line string
		want       NodeInfo
	}{
		{"22.05 rebooting", "NodeName=n1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=5.66 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=vm Port=23818 Version=22.05.8 OS=Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=20026 Sockets=1 Boards=1 State=DOWN+DRAIN+REBOOT_ISSUED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A NextState=DOWN Partitions=debug  BootTime=2026-12-03T06:32:00 SlurmdStartTime=2026-12-03T09:56:31 LastBusyTime=2026-12-03T09:56:31 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=nodecheck: test : reboot issued [root@2026-12-03T09:56:32]\n",
			NodeInfo{"DOWN+DRAIN+REBOOT_ISSUED", "nodecheck: test : reboot issued", boot}},
		{"22.05 idle", "NodeName=n2 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=5.66 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=vm Port=23819 Version=22.05.8 OS=Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=20026 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-12-03T06:32:00 SlurmdStartTime=2026-12-03T09:56:31 LastBusyTime=2026-12-03T09:56:31 CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
			NodeInfo{"IDLE", "", boot}},
		{"24.11 rebooting", "NodeName=n1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=5.66 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=vm Port=24818 Version=24.11.5 OS=Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=19821 Sockets=1 Boards=1 State=DOWN+DRAIN+REBOOT_ISSUED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A NextState=DOWN Partitions=debug  BootTime=2026-12-03T06:32:00 SlurmdStartTime=2026-12-03T09:56:35 LastBusyTime=2026-12-03T09:56:35 ResumeAfterTime=None CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CurrentWatts=0 AveWatts=0  Reason=nodecheck: test : reboot issued [root@2026-12-03T09:56:35]",
			NodeInfo{"DOWN+DRAIN+REBOOT_ISSUED", "nodecheck: test : reboot issued", boot}},
		{"reason with brackets of its own", "NodeName=n1 State=IDLE BootTime=None Reason=a [b] c [root@2026-12-03T09:56:35]",
			NodeInfo{"IDLE", "a [b] c", time.Time{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNodeLine(tc.line)
			if err != nil || got.State != tc.want.State || got.Reason != tc.want.Reason || !got.BootTime.Equal(tc.want.BootTime) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "NodeName=n1 Reason=x", "NodeName=n1 State=IDLE BootTime=yesterday"} {
		if got, err := parseNodeLine(bad); err == nil {
			t.Errorf("parseNodeLine(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestParseReboot reads the lines slurmd-reboot appends to DIR/nodes/NODE/reboots.
func TestParseReboot(t *testing.T) {
	r, err := parseReboot("n=2 requested_ms=1796290765351 stopped_ms=1796290765474 started_ms=1796290767134 old_pid=10663 new_pid=14998 boot_time=1796290766 boot_id=166eea83-f545-4bd3-83e3-4c9e7ed656e0 mode=ok args=a b")
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 2 || r.OldPID != 10663 || r.NewPID != 14998 || r.BootID != "166eea83-f545-4bd3-83e3-4c9e7ed656e0" ||
		r.BootTime.Unix() != 1796290766 || r.Started.Sub(r.Requested) != 1783*time.Millisecond || r.Args != "a b" {
		t.Errorf("got %+v", r)
	}
	for _, bad := range []string{"", "n=1 boot_time=5", "n=x boot_time=5 boot_id=y", "n=1 boot_time=5 boot_id=y requested_ms=soon"} {
		if _, err := parseReboot(bad); err == nil {
			t.Errorf("parseReboot(%q): no error", bad)
		}
	}
}
