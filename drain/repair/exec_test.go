package repair

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestBusOf(t *testing.T) {
	for in, want := range map[string]string{
		"gpu 3 (0000:9b:00.0)":       "0000:9b:00.0",
		"00000000:9B:00.0":           "0000:9b:00.0",
		"gpu 0000:19:00.0":           "0000:19:00.0",
		"gpu 3":                      "",
		"mlx5_0/1":                   "",
		"gpus 0000:19:00.0, 0000:2a": "0000:19:00.0",
		"":                           "",
	} {
		if got := BusOf(in); got != want {
			t.Errorf("BusOf(%q) = %q, want %q", in, got, want)
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
