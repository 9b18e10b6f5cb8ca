package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/scripts/gendocs"
)

// TestGenDocs writes the man pages and completions of the real command tree, as the gendocs
// build that scripts/package.sh runs does (TestPackage checks they are in the packages).
func TestGenDocs(t *testing.T) {
	dir := t.TempDir()
	man, compl := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	root := newRootCmd(&globals{argv0: "nodecheck", stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: os.Getenv})
	if err := gendocs.Write(root, gendocs.Options{ManDir: man, CompletionsDir: compl, Source: "nodecheck " + versionString()}); err != nil {
		t.Fatal(err)
	}

	// One page per visible verb.
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
	for _, tc := range []struct{ file, first string }{
		{gendocs.CompletionBash, "# bash completion V2 for nodecheck"},
		{gendocs.CompletionZsh, "#compdef nodecheck"},
		{gendocs.CompletionFish, "# fish completion for nodecheck"},
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

// TestNoGenDocsVerb: the shipped binary (built without the gendocs tag) has no gen-docs verb.
func TestNoGenDocsVerb(t *testing.T) {
	_, stderr, code := runCLI(t, nil, "gen-docs", "--man", t.TempDir())
	if code != exitCannotRun || !strings.Contains(stderr, "unknown command") {
		t.Errorf("gen-docs: exit %d, stderr %q; want %d and unknown command", code, stderr, exitCannotRun)
	}
}
