package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

func TestLoggerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodecheck.log")
	var stderr bytes.Buffer
	log, closeLog := newLogger(&stderr, config.LogConfig{Level: "warn", File: path})
	log.Info().Msg("below the level")
	log.Error().Msg("to both")
	closeLog()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"file": string(got), "stderr": stderr.String()} {
		if !strings.Contains(out, `"message":"to both"`) || strings.Contains(out, "below the level") {
			t.Errorf("%s: %q, want the error line only", name, out)
		}
	}
}

func TestLoggerFileUnwritable(t *testing.T) {
	var stderr bytes.Buffer
	log, closeLog := newLogger(&stderr, config.LogConfig{Level: "info", File: filepath.Join(t.TempDir(), "no", "such", "dir.log")})
	defer closeLog()
	log.Error().Msg("still logged")
	if !strings.Contains(stderr.String(), "log.file:") || !strings.Contains(stderr.String(), "still logged") {
		t.Errorf("stderr = %q, want the file error and the log line", stderr.String())
	}
}

// TestLoggerFileSymlink: a symlink planted at log.file is not followed: root must not append
// its log lines to the file the link names, nor create it.
func TestLoggerFileSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, target string }{
		{"link to a file", victim},
		{"dangling link", filepath.Join(dir, "would-be-created")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := filepath.Join(t.TempDir(), "nodecheck.log")
			if err := os.Symlink(tc.target, link); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			log, closeLog := newLogger(&stderr, config.LogConfig{Level: "info", File: link})
			log.Error().Msg("secret")
			closeLog()
			if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
				t.Errorf("the link's target holds %q: logged through the symlink", got)
			}
			if _, err := os.Lstat(filepath.Join(dir, "would-be-created")); err == nil {
				t.Error("the dangling link's target was created")
			}
			if !strings.Contains(stderr.String(), "symlink") || !strings.Contains(stderr.String(), `"message":"secret"`) {
				t.Errorf("stderr = %q, want the refusal and the log line", stderr.String())
			}
		})
	}
}

// TestLoggerFileFIFO: a FIFO at log.file neither blocks the run nor takes its lines.
func TestLoggerFileFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodecheck.log")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	log, closeLog := newLogger(&stderr, config.LogConfig{Level: "info", File: path})
	defer closeLog()
	log.Error().Msg("still logged")
	if !strings.Contains(stderr.String(), "log.file:") || !strings.Contains(stderr.String(), "still logged") {
		t.Errorf("stderr = %q, want the refusal and the log line", stderr.String())
	}
}
