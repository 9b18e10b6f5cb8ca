package history

import (
	"strings"
	"testing"
	"time"
)

// FuzzScanKernelLog: any text, no panic, and what is read is well formed: a bus id that
// normalizes, an XID from 1 to 999, a GPC/TPC only on XID 13, link lines with a kernel time
// and an interface name.
func FuzzScanKernelLog(f *testing.F) {
	for _, name := range []string{"gpud-pstore-dmesg.txt", "xid-vllm-5901.log", "xid-relion-436.log", "xid-gpud-pr46.log", "xid-invented.log"} {
		f.Add(readFixture(f, name))
	}
	f.Add("<6>[ 3000.000001] mlx5_core 0000:41:00.0 enp65s0f0np0: Link down\n")
	f.Fuzz(func(t *testing.T, text string) {
		kl := ScanKernelLog(text)
		for _, x := range kl.XIDs {
			if _, ok := NormalizeBus(x.Bus); !ok || x.XID < 1 || x.XID > maxXID || x.KernelUS < 0 || (x.Loc != "" && x.XID != 13) {
				t.Fatalf("bad XID %+v", x)
			}
		}
		for _, l := range kl.Links {
			if !validNetdev(l.Netdev) || l.KernelUS < 0 || l.Src != "kernel" {
				t.Fatalf("bad link line %+v", l)
			}
			if _, ok := NormalizeBus(l.PCI); !ok {
				t.Fatalf("bad PCI %q", l.PCI)
			}
		}
		for _, k := range kl.DriverLoads {
			if k < 0 {
				t.Fatalf("driver load at %d", k)
			}
		}
		if n := strings.Count(text, "\n") + 1; len(kl.XIDs)+len(kl.Links)+len(kl.DriverLoads) > n {
			t.Fatalf("more findings than lines")
		}
	})
}

// FuzzScanSyslog: any text, no panic, carrier lines with an interface and a time in
// 2000-2100 no later than a day after now.
func FuzzScanSyslog(f *testing.F) {
	f.Add(readFixture(f, "azurehpc-1dev-6flap-syslog.txt"))
	f.Add(readFixture(f, "azurehpc-0flap-syslog.txt"))
	f.Add("2024-08-17T06:18:01.123456+00:00 h systemd-networkd[1]: ib0: Gained carrier\n")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		for _, l := range ScanSyslog(text, now, time.UTC) {
			if !validNetdev(l.Netdev) || l.Src != "syslog" || l.KernelUS != 0 || l.Wall.Year() < 2000 || l.Wall.Year() >= 2100 {
				t.Fatalf("bad line %+v", l)
			}
		}
	})
}
