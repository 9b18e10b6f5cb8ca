package testbed

// Reboots on the test bed (Options.Reboot). RebootProgram is DIR/bin/slurmd-reboot (a copy of
// scripts/testbed/slurmd-reboot): `scontrol reboot [ASAP] [nextstate=...] [reason=...] NODE`
// makes that node's slurmd run it, and it stops that slurmd and starts it again in a new time
// namespace that booted a second before, so Slurm sees a node booted after the request. Each
// reboot gives the node a new boot id, kept in DIR/nodes/NODE/boot_id: the kernel's boot_id is
// one for every node of the bed, so nodecheck sees a node's own only through a snapshot copy
// made with NodeSnapshot, whose fs/proc/sys/kernel/random/boot_id every reboot rewrites.
//
//	b := testbed.Start(t, testbed.Options{RepoRoot: "../..", Reboot: true, ResumeTimeout: 20 * time.Second})
//	snap := b.NodeSnapshot(t, "n1", b.Snapshot(t, "h100-remap-pending"))
//	b.Hook(t, "n1", "health", b.Nodecheck, "run", "--snapshot", snap, ...)
//	before := b.BootID(t, "n1")
//	b.Slurm(t, "scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=nodecheck: test", "n1")
//	r := b.WaitRebooted(t, "n1", 1, 30*time.Second) // r.BootID != before; snap now reads r.BootID

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rebootEnv is what slurm-testbed.sh needs for opts' reboot settings, always all three, so
// that a caller's environment never leaks into a bed.
func rebootEnv(opts Options) []string {
	reboot, rts, resume := "0", "2", ""
	if opts.Reboot {
		reboot = "1"
	}
	if opts.ReturnToService != 0 {
		rts = strconv.Itoa(opts.ReturnToService)
	}
	if opts.ResumeTimeout > 0 {
		resume = strconv.Itoa(int((opts.ResumeTimeout + time.Second - 1) / time.Second))
	}
	return []string{"NODECHECK_TESTBED_REBOOT=" + reboot, "NODECHECK_TESTBED_RETURN_TO_SERVICE=" + rts,
		"NODECHECK_TESTBED_RESUME_TIMEOUT=" + resume}
}

// Reboot is one reboot slurmd-reboot did (a line of DIR/nodes/NODE/reboots).
type Reboot struct {
	N         int       // 1 for the node's first reboot
	Requested time.Time // when slurmd ran RebootProgram
	Stopped   time.Time // when the old slurmd had exited
	Started   time.Time // when the new slurmd was started
	OldPID    int
	NewPID    int
	BootTime  time.Time // the new boot's time, as the new slurmd reports it (whole seconds)
	BootID    string    // the new boot's id
	Args      string    // what slurmd passed to RebootProgram (24.11: features asked for)
}

// nodeDir is DIR/nodes/NODE, where the bed keeps a node's boots.
func (b *Bed) nodeDir(node string) string { return filepath.Join(b.Dir, "nodes", node) }

// Reboots lists the reboots done on node, oldest first.
func (b *Bed) Reboots(t *testing.T, node string) []Reboot {
	t.Helper()
	f, err := os.Open(filepath.Join(b.nodeDir(node), "reboots"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []Reboot
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, err := parseReboot(sc.Text())
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// parseReboot reads "n=1 requested_ms=... ... args=REST" (args last, may hold spaces).
func parseReboot(line string) (Reboot, error) {
	var r Reboot
	head, args, _ := strings.Cut(line, " args=")
	r.Args = args
	ms := func(v string) (time.Time, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		return time.UnixMilli(n), err
	}
	for _, f := range strings.Fields(head) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "n":
			r.N, err = strconv.Atoi(v)
		case "requested_ms":
			r.Requested, err = ms(v)
		case "stopped_ms":
			r.Stopped, err = ms(v)
		case "started_ms":
			r.Started, err = ms(v)
		case "old_pid":
			r.OldPID, err = strconv.Atoi(v)
		case "new_pid":
			r.NewPID, err = strconv.Atoi(v)
		case "boot_time":
			var s int64
			s, err = strconv.ParseInt(v, 10, 64)
			r.BootTime = time.Unix(s, 0)
		case "boot_id":
			r.BootID = v
		}
		if err != nil {
			return r, fmt.Errorf("reboot record %q: %s: %v", line, k, err)
		}
	}
	if r.N == 0 || r.BootID == "" || r.BootTime.IsZero() {
		return r, fmt.Errorf("reboot record %q: no n, boot_id or boot_time", line)
	}
	return r, nil
}

// RebootCount is how many reboots slurmd-reboot has done on node.
func (b *Bed) RebootCount(t *testing.T, node string) int {
	t.Helper()
	return len(b.Reboots(t, node))
}

// RebootRequests is how many times slurmd ran RebootProgram on node, reboots done or not
// (SetRebootBehaviour Hang).
func (b *Bed) RebootRequests(t *testing.T, node string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.nodeDir(node), "requests"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// BootID is node's boot id now: a random UUID per boot (the bed's own; see the top of this file).
func (b *Bed) BootID(t *testing.T, node string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.nodeDir(node), "boot_id"))
	if err != nil {
		t.Fatalf("node %s's boot id: %v", node, err)
	}
	return strings.TrimSpace(string(data))
}

// BootTime is when node's current boot began, as the bed started it (whole seconds): the
// host's boot time until its first reboot.
func (b *Bed) BootTime(t *testing.T, node string) time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.nodeDir(node), "boot_time"))
	if err != nil {
		t.Fatalf("node %s's boot time: %v", node, err)
	}
	s, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatalf("node %s's boot time %q: %v", node, data, err)
	}
	return time.Unix(s, 0)
}

// RebootBehaviour is how node's next reboots go.
type RebootBehaviour struct {
	// Delay is how long the node stays down between stopping slurmd and starting it again
	// (whole seconds): a slow boot, or one slower than ResumeTimeout.
	Delay time.Duration
	// Hang makes RebootProgram do nothing: slurmd keeps its boot time, and Slurm waits for the
	// node until ResumeTimeout, then marks it DOWN ("reboot timed out").
	Hang bool
}

// SetRebootBehaviour sets how node's reboots go from now on; Reset goes back to the default.
func (b *Bed) SetRebootBehaviour(t *testing.T, node string, rb RebootBehaviour) {
	t.Helper()
	mode := "ok"
	if rb.Hang {
		mode = "noop"
	}
	for name, v := range map[string]string{"reboot-mode": mode, "reboot-delay": strconv.Itoa(int((rb.Delay + time.Second - 1) / time.Second))} {
		if err := os.WriteFile(filepath.Join(b.nodeDir(node), name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// NodeSnapshot copies the snapshot src to DIR/nodes/NODE/snapshots/BASE (replacing an earlier
// copy) with fs/proc/sys/kernel/random/boot_id set to node's boot id, which every reboot of
// node rewrites there. A hook that runs `nodecheck run --snapshot COPY` so sees the node's own
// boot id change with each reboot. The copy keeps the snapshot's meta.json (taken_at too).
func (b *Bed) NodeSnapshot(t *testing.T, node, src string) string {
	t.Helper()
	dst := filepath.Join(b.nodeDir(node), "snapshots", filepath.Base(src))
	unlock := b.lockNode(t, node) // not while slurmd-reboot writes a new boot id
	defer unlock()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// cp -a: snapshots keep sysfs's symlinks.
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy snapshot %s: %v\n%s", src, err, out)
	}
	dir := filepath.Join(dst, "fs", "proc", "sys", "kernel", "random")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "boot_id"), []byte(b.BootID(t, node)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// lockNode takes DIR/nodes/NODE/lock, which slurmd-reboot holds while it reboots node.
func (b *Bed) lockNode(t *testing.T, node string) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(b.nodeDir(node), "lock"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", f.Name(), err)
	}
	return func() { f.Close() }
}

// NodeInfo is what `scontrol show node -o` says of node (both versions print it the same).
type NodeInfo struct {
	State    string    // "IDLE+DRAIN+REBOOT_REQUESTED"
	Reason   string    // without the trailing " [user@time]"; "" when none
	BootTime time.Time // Slurm's BootTime (whole seconds, slurmctld's local time)
}

// Node reads node's state, reason and boot time from Slurm.
func (b *Bed) Node(t *testing.T, node string) NodeInfo {
	t.Helper()
	info, err := parseNodeLine(b.Slurm(t, "scontrol", "show", "node", "-o", node))
	if err != nil {
		t.Fatalf("scontrol show node %s: %v", node, err)
	}
	return info
}

// parseNodeLine reads State=, BootTime= and Reason= (the last field, with spaces) of one
// `scontrol show node -o` line.
func parseNodeLine(line string) (NodeInfo, error) {
	var info NodeInfo
	line = strings.TrimSpace(line)
	head, reason, hasReason := strings.Cut(line, " Reason=")
	if hasReason {
		if i := strings.LastIndex(reason, " ["); i >= 0 && strings.HasSuffix(reason, "]") {
			reason = reason[:i]
		}
		info.Reason = reason
	}
	for _, f := range strings.Fields(head) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "State":
			info.State = v
		case "BootTime":
			if v == "None" || v == "Unknown" {
				continue
			}
			bt, err := time.ParseInLocation("2006-01-02T15:04:05", v, time.Local)
			if err != nil {
				return info, fmt.Errorf("BootTime=%s: %v", v, err)
			}
			info.BootTime = bt
		}
	}
	if info.State == "" {
		return info, fmt.Errorf("no State= in %q", line)
	}
	return info, nil
}

// WaitRebooted waits until node's n-th reboot is done and Slurm knows the new boot (its
// BootTime within a second of the bed's: slurmd computes it from its uptime), and returns it.
func (b *Bed) WaitRebooted(t *testing.T, node string, n int, timeout time.Duration) Reboot {
	t.Helper()
	var r Reboot
	WaitFor(t, fmt.Sprintf("reboot %d of %s", n, node), timeout, func() bool {
		rs := b.Reboots(t, node)
		if len(rs) < n {
			return false
		}
		r = rs[n-1]
		d := b.Node(t, node).BootTime.Sub(r.BootTime)
		return d >= -time.Second && d <= time.Second
	})
	return r
}

// NodeInfos reads every node's state, reason and boot time from Slurm in one call.
func (b *Bed) NodeInfos(t *testing.T) map[string]NodeInfo {
	t.Helper()
	infos := map[string]NodeInfo{}
	for _, line := range strings.Split(strings.TrimSpace(b.Slurm(t, "scontrol", "show", "node", "-o")), "\n") {
		name := ""
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "NodeName="); ok {
				name = v
				break
			}
		}
		info, err := parseNodeLine(line)
		if err != nil || name == "" {
			t.Fatalf("scontrol show node -o: %q: %v", line, err)
		}
		infos[name] = info
	}
	return infos
}

// resetReboots, for Reset: every node reboots normally again, pending reboots are cancelled
// and reboots under way are waited for.
func (b *Bed) resetReboots(t *testing.T) {
	t.Helper()
	for _, n := range b.Nodes {
		for _, f := range []string{"reboot-mode", "reboot-delay"} {
			if err := os.Remove(filepath.Join(b.nodeDir(n), f)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	var pending []string
	for n, info := range b.NodeInfos(t) {
		if strings.Contains(info.State, "REBOOT_REQUESTED") {
			pending = append(pending, n)
		}
	}
	if len(pending) > 0 {
		b.Slurm(t, "scontrol", "cancel_reboot", strings.Join(pending, ","))
	}
	WaitFor(t, "no reboot under way", 60*time.Second, func() bool {
		for _, info := range b.NodeInfos(t) {
			if strings.Contains(info.State, "REBOOT_ISSUED") {
				return false
			}
		}
		return true
	})
}
