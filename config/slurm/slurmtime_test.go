package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slurmTimeCases are time limits and what they mean; ok false where slurmctld refuses them
// (checked against the real one by TestSlurmTimeOracle).
var slurmTimeCases = []struct {
	in   string
	want time.Duration
	ok   bool
}{
	{"60", time.Hour, true}, {"0", 0, true}, {"5:30", 6 * time.Minute, true}, {"5:00", 5 * time.Minute, true},
	{"1:2:3", time.Hour + 3*time.Minute, true}, {"12:00:00", 12 * time.Hour, true},
	{"2-0", 48 * time.Hour, true}, {"1-2", 26 * time.Hour, true}, {"1-2:30", 26*time.Hour + 30*time.Minute, true},
	{"5-00:00:00", 5 * 24 * time.Hour, true}, {"1-0:0:1", 24*time.Hour + time.Minute, true}, {"1-", 24 * time.Hour, true},
	{"UNLIMITED", UnlimitedTime, true}, {"infinite", UnlimitedTime, true}, {"-1", UnlimitedTime, true},
	{"2147483648", maxSlurmTime, true}, {"99999999999999999999", maxSlurmTime, true}, {"1000000", 1000000 * time.Minute, true},
	{"", 0, false}, {"abc", 0, false}, {"-5", 0, false}, {"1:", 0, false}, {"1:2:3:4", 0, false},
	{"1-2:3:4:5", 0, false}, {"1-2-3", 0, false}, {"1:2-3", 0, false}, {"1-2:", 0, false}, {"1 h", 0, false},
	{"+5", 0, false}, {"1-2::", 0, false}, {":5", 0, false}, {"1:2:", 0, false}, {"1-2:3:", 0, false}, {"1-:", 0, false},
	{"1-2:3:4", 26*time.Hour + 3*time.Minute + time.Minute, true},
}

func TestParseSlurmTime(t *testing.T) {
	for _, tc := range slurmTimeCases {
		got, ok := ParseSlurmTime(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseSlurmTime(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{UnlimitedTime, "UNLIMITED"}, {0, "00:00:00"}, {90 * time.Minute, "01:30:00"}, {49 * time.Hour, "2-01:00:00"}} {
		if got := slurmTimeText(tc.d); got != tc.want {
			t.Errorf("slurmTimeText(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestSlurmTimeOracle: the real scontrol of each Slurm here refuses a partition's MaxTime
// exactly where ParseSlurmTime says it does ("Bad value ... for MaxTime").
func TestSlurmTimeOracle(t *testing.T) {
	for _, o := range newScontrolOracles(t) {
		t.Run(o.version, func(t *testing.T) {
			for i, tc := range slurmTimeCases {
				if tc.in == "" || strings.ContainsAny(tc.in, " ") {
					continue // not a value a slurm.conf field can hold
				}
				t.Run(tc.in, func(t *testing.T) {
					name := "time-" + strings.Repeat("x", i) + ".conf"
					conf := "ClusterName=x\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1 MaxTime=" + tc.in + "\n"
					if err := os.WriteFile(filepath.Join(o.dir, name), []byte(conf), 0o644); err != nil {
						t.Fatal(err)
					}
					_, errOut, _ := o.runConf(filepath.Join(o.confDir, name), "show", "hostnames", "a1")
					if refused := strings.Contains(errOut, "for MaxTime"); refused == tc.ok {
						t.Errorf("scontrol %s refused MaxTime=%s: %v; ParseSlurmTime ok %v:\n%s", o.version, tc.in, refused, tc.ok, errOut)
					}
				})
			}
		})
	}
}

func FuzzParseSlurmTime(f *testing.F) {
	for _, tc := range slurmTimeCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := ParseSlurmTime(in)
		if !ok {
			return
		}
		if d < 0 || (d != UnlimitedTime && (d > maxSlurmTime || d%time.Minute != 0)) {
			t.Fatalf("ParseSlurmTime(%q) = %v", in, d)
		}
		if !validTimespec(in) && d != UnlimitedTime {
			t.Fatalf("ParseSlurmTime(%q) took an invalid timespec", in)
		}
	})
}
