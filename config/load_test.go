package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// TestLoadConfigData: the bytes come back for a file that was read but does not parse (for
// PeekFailClosed), and never for one refused before reading (a FIFO, /dev/zero, a file
// over the limit), which is refused at once.
func TestLoadConfigData(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("fail_closed = true\n[checks.ib_ports]\nmin_rate_gpbs = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 4<<30); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	cfg, data, err := LoadConfigData(ctx, bad, testSchema())
	if cfg != nil || err == nil || !PeekFailClosed(data) {
		t.Errorf("LoadConfigData(bad) = %v, %q, %v; want no config, the bytes and an error", cfg, data, err)
	}
	for _, tc := range []struct {
		path string
		want error
	}{{fifo, files.ErrNotRegular}, {"/dev/zero", files.ErrNotRegular}, {big, files.ErrTooLarge}} {
		start := time.Now()
		cfg, data, err := LoadConfigData(ctx, tc.path, testSchema())
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %s", tc.path, d)
		}
		if cfg != nil || data != nil || !errors.Is(err, tc.want) {
			t.Errorf("LoadConfigData(%s) = %v, %d bytes, %v; want nothing and %v", tc.path, cfg, len(data), err, tc.want)
		}
	}
}
