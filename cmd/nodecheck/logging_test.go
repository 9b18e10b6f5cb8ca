package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
