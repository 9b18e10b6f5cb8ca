package repair

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBusID: NVML's and sysfs's forms of a bus id give the sysfs form; text that holds one
// among other words is not a bus id (nothing is searched).
func TestBusID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"00000000:9B:00.0", "0000:9b:00.0"},
		{"0000:9b:00.0", "0000:9b:00.0"},
		{" 0000:19:00.0\n", "0000:19:00.0"},
		{"00010000:01:00.0", ""}, // a domain over 16 bits
		{"0000:9b:00", ""},       // the kernel's XID form has no function
		{"0000:9b:00.8", ""},
		{"0000:9g:00.0", ""},
		{"gpu 3 (0000:9b:00.0)", ""},
		{"gpu 0000:19:00.0", ""},
		{"mlx5_0/1", ""},
		{"", ""},
	} {
		if got := BusID(tc.in); got != tc.want {
			t.Errorf("BusID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResetArgv(t *testing.T) {
	p := Policy{GPUReset: []string{"/usr/bin/nvidia-smi", "--gpu-reset", "-i", "{gpus}"}}
	if got := strings.Join(p.ResetArgv([]GPU{gpu19, gpu9b}), " "); got != "/usr/bin/nvidia-smi --gpu-reset -i 0000:19:00.0,0000:9b:00.0" {
		t.Errorf("ResetArgv = %q", got)
	}
}

func TestExec(t *testing.T) {
	code, out, err := Exec(context.Background(), []string{"/bin/sh", "-c", "echo refused >&2; exit 3"})
	if code != 3 || strings.TrimSpace(out) != "refused" || err != nil {
		t.Errorf("Exec = %d %q %v", code, out, err)
	}
	if _, _, err := Exec(context.Background(), []string{"sh", "-c", "true"}); err == nil {
		t.Error("a relative program ran")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := Exec(ctx, []string{"/bin/sleep", "10"}); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("a hung reset: %v after %s", err, time.Since(start))
	}
}

// TestExecKillsProcessGroup: at the deadline the reset command's children die with it (the
// command is a shell that started a sleep, as a wrapper script starts nvidia-smi).
func TestExecKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := Exec(ctx, []string{"/bin/sh", "-c", "/bin/sleep 30 & echo $! > " + pidFile + "; wait"})
	if err == nil {
		t.Fatal("a hung reset returned no error")
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(3 * time.Second)
	for {
		// A zombie awaiting its reaper counts as dead: /proc/PID/stat's state is Z.
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the reset command's child %d outlived the deadline: %s", pid, stat)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
