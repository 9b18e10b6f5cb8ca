package repair

import (
	"context"
	"strings"
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
