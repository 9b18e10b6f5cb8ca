package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
)

func TestImportNHC(t *testing.T) {
	in := filepath.Join("..", "..", "config", "nhc", "testdata", "nhc.conf")
	dir := t.TempDir()
	rest := filepath.Join(dir, "nhc-rest.conf")
	out, stderr, code := runCLI(t, nil, "import-nhc", in, "--rest", rest)
	if code != exitHealthy {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// NHC's shipped nhc.conf translates whole: nothing is left for NHC to run.
	if want := "6 of 6 lines of nhc.conf translated, 0 not"; !strings.Contains(stderr, want) || strings.Contains(stderr, "not translated:") {
		t.Errorf("stderr lacks %q, or names a line not translated:\n%s", want, stderr)
	}
	for _, want := range []string{`mem_free = "1MiB" # nhc.conf:55: * || check_hw_mem_free 1mb`, `# nodecheck's default, replaced: processes = ["sshd root", "munged munge", "slurmd root"]`, "interfaces]\npresent = []\n", "swap = \"\"\n",
		`"-r -s /etc/passwd /etc/group", # nhc.conf:107: * || check_file_test -r -s /etc/passwd /etc/group`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[[site_check]]") {
		t.Errorf("a site check keeping NHC, with no line left to it:\n%s", out)
	}
	// The lines NHC keeps, from the check calls of NHC's own tests.
	tests := filepath.Join("..", "..", "config", "nhc", "testdata", "nhc-tests.conf")
	rest2 := filepath.Join(dir, "nhc-tests-rest.conf")
	out, stderr, code = runCLI(t, nil, "import-nhc", tests, "--rest", rest2)
	if code != exitHealthy {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "nhc-tests.conf:44: not translated: check_fs_size"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	for _, want := range []string{`[[site_check]]`, rest2} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(rest2)
	if err != nil || !strings.Contains(string(b), "* || check_fs_size /boot 100M 1G") {
		t.Errorf("rest file: %v\n%s", err, b)
	}
	// The import writes only new files, never through a symlink.
	if _, stderr, code := runCLI(t, nil, "import-nhc", in, "--rest", rest); code != exitCannotRun || !strings.Contains(stderr, "file exists") {
		t.Errorf("existing --rest: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, nil, "import-nhc", filepath.Join(dir, "missing.conf")); code != exitCannotRun || !strings.Contains(stderr, "missing.conf") {
		t.Errorf("missing input: exit %d: %s", code, stderr)
	}
}

// TestImportNHCValid: what import-nhc writes from NHC's shipped nhc.conf and from the check
// calls of NHC's own tests (config/nhc/testdata/SOURCE) is a valid nodecheck.toml, and the
// sizes it writes are ones the checks read.
func TestImportNHCValid(t *testing.T) {
	for _, name := range []string{"nhc.conf", "nhc-tests.conf"} {
		out, stderr, code := runCLI(t, nil, "import-nhc", filepath.Join("..", "..", "config", "nhc", "testdata", name), "--rest", filepath.Join(t.TempDir(), "rest.conf"))
		if code != exitHealthy {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		cfg, err := config.ParseConfig([]byte(out), "import.toml", checks.Schema())
		if err != nil {
			t.Fatalf("%s: the import is no valid nodecheck.toml: %v\n%s", name, err, out)
		}
		// NHC's shipped nhc.conf translates whole; its tests' check calls leave lines to NHC.
		if keeps := name != "nhc.conf"; keeps && (len(cfg.SiteChecks) != 1 || cfg.SiteChecks[0].Command != "/usr/sbin/nhc") || !keeps && len(cfg.SiteChecks) != 0 {
			t.Errorf("%s: site checks %+v", name, cfg.SiteChecks)
		}
	}
}
