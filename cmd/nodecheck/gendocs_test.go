package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenDocs(t *testing.T) {
	dir := t.TempDir()
	man, compl := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	if _, stderr, code := run(t, nil, "gen-docs", "--man", man, "--completions", compl); code != exitHealthy {
		t.Fatalf("gen-docs: exit %d, stderr:\n%s", code, stderr)
	}

	// One page per visible verb, none for the hidden gen-docs itself.
	for _, name := range []string{"nodecheck.1", "nodecheck-run.1", "nodecheck-lint.1", "nodecheck-snapshot.1", "nodecheck-version.1", "nodecheck-config-check.1"} {
		b, err := os.ReadFile(filepath.Join(man, name))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		if !strings.HasPrefix(page, ".nh\n.TH ") || !strings.Contains(page, ".SH SYNOPSIS") {
			t.Errorf("%s is not a man page:\n%s", name, page)
		}
		if strings.Contains(page, "Auto generated") {
			t.Errorf("%s carries cobra's dated auto-generated tag", name)
		}
	}
	if _, err := os.Stat(filepath.Join(man, "nodecheck-gen-docs.1")); err == nil {
		t.Error("the hidden gen-docs verb got a man page")
	}

	for _, tc := range []struct{ file, first string }{
		{completionBash, "# bash completion V2 for nodecheck"},
		{completionZsh, "#compdef nodecheck"},
		{completionFish, "# fish completion for nodecheck"},
	} {
		b, err := os.ReadFile(filepath.Join(compl, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), tc.first) {
			t.Errorf("%s starts %.60q, want %q", tc.file, b, tc.first)
		}
	}
}

func TestGenDocsNeedsADirectory(t *testing.T) {
	_, stderr, code := run(t, nil, "gen-docs")
	if code != exitCannotRun || !strings.Contains(stderr, "--man DIR") {
		t.Errorf("gen-docs without flags: exit %d, stderr %q; want %d and a usage message", code, stderr, exitCannotRun)
	}
}
