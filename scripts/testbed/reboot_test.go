package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rebootOutcome is what a version does at the end of `scontrol reboot ASAP nextstate=X
// reason="nodecheck: test"`, as observed (docs/slurm.md, reboots).
type rebootOutcome struct {
	state  string // the final State=
	reason string // the final reason, "" for none
}

// rebootWant maps "series RTS nextstate" to the outcome. 22.05 clears the reason when the node
// returns to service; 24.11 keeps it with what Slurm appended (": reboot issued", ...).
var rebootWant = map[string]rebootOutcome{
	"22.05 2 RESUME": {"IDLE", ""},
	"22.05 2 DOWN":   {"IDLE", ""},
	"22.05 1 RESUME": {"IDLE", ""},
	"22.05 1 DOWN":   {"DOWN", "nodecheck: test : reboot issued : reboot complete"},
	"24.11 2 RESUME": {"IDLE", "nodecheck: test : reboot issued"},
	"24.11 2 DOWN":   {"IDLE", "nodecheck: test : reboot issued : reboot complete"},
	"24.11 1 RESUME": {"IDLE", "nodecheck: test : reboot issued"},
	"24.11 1 DOWN":   {"DOWN", "nodecheck: test : reboot issued : reboot complete"},
}

// hangWant is the end of a reboot that never comes (RebootBehaviour Hang) with
// ReturnToService=1, after ResumeTimeout.
var hangWant = map[string]rebootOutcome{
	"22.05": {"DOWN", "nodecheck: test : reboot issued : reboot timed out"},
	"24.11": {"DOWN+DRAIN", "nodecheck: test : reboot issued : reboot timed out"},
}

// TestReboot asks each version's Slurm to reboot a node through the bed's RebootProgram, with
// ReturnToService=2 and =1, nextstate=RESUME and DOWN, and a reboot that hangs: the node goes
// through REBOOT_ISSUED, comes back with a later boot time and a new boot id (in Slurm, in
// the bed's records, in a node snapshot, in the health check's /proc/uptime), and ends in the
// state and reason that version gives.
func TestReboot(t *testing.T) {
	opts := Options{RepoRoot: "../..", TempPrefix: "nodecheck-reboot-test-", Short: "starts a real Slurm",
		Reboot: true, ResumeTimeout: 5 * time.Second}
	ForEachVersion(t, opts, func(t *testing.T, b *Bed) {
		t.Run("rts2", func(t *testing.T) {
			snap := b.NodeSnapshot(t, "n1", b.Snapshot(t, "h100-healthy"))
			// The documented way for a hook to see the node's boot: its snapshot copy's boot id,
			// and /proc/uptime, which the rebooted slurmd's time namespace shifts.
			b.Hook(t, "n1", "health", "/bin/sh", "-c", "echo $(cat "+snap+"/fs/proc/sys/kernel/random/boot_id) $(cut -d' ' -f1 /proc/uptime)")
			r := rebootCase(t, b, "n1", "RESUME", 1)
			if got := readBootID(t, snap); got != r.BootID {
				t.Errorf("the node snapshot's boot_id %q, want the new boot's %q", got, r.BootID)
			}
			WaitFor(t, "a health check after the reboot", 20*time.Second, func() bool {
				for _, line := range strings.Split(b.HookFile("n1", "health.out"), "\n") {
					if id, up, ok := strings.Cut(line, " "); ok && id == r.BootID {
						sec, err := strconv.ParseFloat(up, 64)
						if err != nil || sec > 60 {
							t.Fatalf("health check after the reboot: uptime %q, want seconds since the reboot", up)
						}
						return true
					}
				}
				return false
			})
			b.Reset(t)
			// A second reboot, run by the slurmd of the first one's time namespace.
			r2 := rebootCase(t, b, "n1", "DOWN", 2)
			if !r2.BootTime.After(r.BootTime) {
				t.Errorf("second boot at %s, not after the first at %s", r2.BootTime, r.BootTime)
			}
			b.Reset(t)
		})
		b1 := Start(t, Options{RepoRoot: "../..", TempPrefix: "nodecheck-reboot-test-", Slurm: b.Series,
			Reboot: true, ReturnToService: 1, ResumeTimeout: 5 * time.Second})
		t.Run("rts1", func(t *testing.T) {
			rebootCase(t, b1, "n1", "DOWN", 1)
			b1.Reset(t)
			rebootCase(t, b1, "n1", "RESUME", 2)
			b1.Reset(t)
		})
		t.Run("hang", func(t *testing.T) {
			b1.SetRebootBehaviour(t, "n2", RebootBehaviour{Hang: true})
			bootID, bootTime := b1.BootID(t, "n2"), b1.Node(t, "n2").BootTime
			start := time.Now()
			b1.Slurm(t, "scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=nodecheck: test", "n2")
			want := hangWant[b1.Series]
			seen := watchNode(t, b1, "n2", 90*time.Second, func(i NodeInfo) bool { return i.Reason == want.reason })
			end := seen[len(seen)-1]
			t.Logf("Slurm %s, ReturnToService=1, ResumeTimeout=5, a reboot that hangs: %s after %s", b1.Version, sequence(seen), time.Since(start).Round(100*time.Millisecond))
			if end.State != want.state {
				t.Errorf("after the timeout: State=%s, want %s", end.State, want.state)
			}
			if n, m := b1.RebootRequests(t, "n2"), b1.RebootCount(t, "n2"); n != 1 || m != 0 {
				t.Errorf("RebootProgram ran %d times and rebooted %d times, want 1 and 0", n, m)
			}
			if b1.BootID(t, "n2") != bootID || !end.BootTime.Equal(bootTime) {
				t.Errorf("a hung reboot changed the boot: %s %s, was %s %s", b1.BootID(t, "n2"), end.BootTime, bootID, bootTime)
			}
			b1.Reset(t)
		})
	})
}

// rebootCase runs `scontrol reboot ASAP nextstate=NEXT reason="nodecheck: test" node` as the
// node's n-th reboot and checks its course and end against rebootWant; it returns the reboot.
func rebootCase(t *testing.T, b *Bed, node, next string, n int) Reboot {
	t.Helper()
	rts := "2"
	if strings.Contains(readConf(t, b), "\nReturnToService=1\n") {
		rts = "1"
	}
	want, ok := rebootWant[b.Series+" "+rts+" "+next]
	if !ok {
		t.Fatalf("no expectation for Slurm %s ReturnToService=%s nextstate=%s", b.Series, rts, next)
	}
	before, bootID := b.Node(t, node), b.BootID(t, node)
	asked := time.Now()
	b.Slurm(t, "scontrol", "reboot", "ASAP", "nextstate="+next, "reason=nodecheck: test", node)
	seen := watchNode(t, b, node, 30*time.Second, func(i NodeInfo) bool {
		return b.RebootCount(t, node) >= n && !strings.Contains(i.State, "REBOOT") && i.State == want.state && i.Reason == want.reason
	})
	took := time.Since(asked)
	r := b.WaitRebooted(t, node, n, 10*time.Second)
	t.Logf("Slurm %s, ReturnToService=%s, nextstate=%s: %s; done after %s (slurmd stopped %s and restarted %s after RebootProgram ran)",
		b.Version, rts, next, sequence(seen), took.Round(100*time.Millisecond), r.Stopped.Sub(r.Requested), r.Started.Sub(r.Requested))
	issued := false
	for _, i := range seen {
		issued = issued || strings.Contains(i.State, "REBOOT_ISSUED")
	}
	if !issued {
		t.Errorf("never saw REBOOT_ISSUED: %s", sequence(seen))
	}
	after := seen[len(seen)-1]
	if !after.BootTime.After(before.BootTime) || after.BootTime.Before(asked.Truncate(time.Second)) {
		t.Errorf("BootTime %s after the reboot asked at %s, was %s: want a later boot", after.BootTime, asked.Format(time.TimeOnly), before.BootTime)
	}
	if r.BootID == bootID || b.BootID(t, node) != r.BootID {
		t.Errorf("boot id %s after the reboot (recorded %s), was %s: want a new one", b.BootID(t, node), r.BootID, bootID)
	}
	if c := b.RebootCount(t, node); c != n {
		t.Errorf("%d reboots of %s, want %d", c, node, n)
	}
	return r
}

// watchNode polls node every 100 ms until done holds, and returns each distinct state and
// reason seen (the last one the final); after timeout it fails t with what it saw.
func watchNode(t *testing.T, b *Bed, node string, timeout time.Duration, done func(NodeInfo) bool) []NodeInfo {
	t.Helper()
	var seen []NodeInfo
	deadline := time.Now().Add(timeout)
	for {
		i := b.Node(t, node)
		if len(seen) == 0 || seen[len(seen)-1].State != i.State || seen[len(seen)-1].Reason != i.Reason {
			seen = append(seen, i)
		} else {
			seen[len(seen)-1] = i
		}
		if done(i) {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", timeout, node, sequence(seen))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sequence(seen []NodeInfo) string {
	var s []string
	for _, i := range seen {
		s = append(s, fmt.Sprintf("%s %q", i.State, i.Reason))
	}
	return strings.Join(s, " -> ")
}

func readConf(t *testing.T, b *Bed) string {
	t.Helper()
	data, err := os.ReadFile(b.Conf)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func readBootID(t *testing.T, snap string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(snap, "fs", "proc", "sys", "kernel", "random", "boot_id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
