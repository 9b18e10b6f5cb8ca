package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenDocs builds nodecheck with the gendocs tag and runs its gen-docs verb, as
// scripts/package.sh does, then reads the man pages and completions it wrote (TestPackage
// checks they are in the packages).
func TestGenDocs(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodecheck")
	build := exec.Command(goBin, "build", "-tags", "gendocs", "-o", bin, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags gendocs: %v\n%s", err, out)
	}

	// Without a directory it is a usage error.
	var exit *exec.ExitError
	if out, err := exec.Command(bin, "gen-docs").CombinedOutput(); !errors.As(err, &exit) || exit.ExitCode() != exitCannotRun ||
		!strings.Contains(string(out), "give --man DIR") {
		t.Errorf("gen-docs without a directory: %v, %s; want exit %d asking for one", err, out, exitCannotRun)
	}

	man, compl := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	if out, err := exec.Command(bin, "gen-docs", "--man", man, "--completions", compl).CombinedOutput(); err != nil {
		t.Fatalf("gen-docs: %v\n%s", err, out)
	}
	// One page per visible verb, with the source line and without cobra's dated tag.
	for _, name := range []string{"nodecheck.1", "nodecheck-run.1", "nodecheck-lint.1", "nodecheck-snapshot.1", "nodecheck-version.1", "nodecheck-config-check.1"} {
		b, err := os.ReadFile(filepath.Join(man, name))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		if !strings.HasPrefix(page, ".nh\n.TH ") || !strings.Contains(page, ".SH SYNOPSIS") || !strings.Contains(page, `"nodecheck `) {
			t.Errorf("%s is not a man page with nodecheck's source line:\n%s", name, page)
		}
		if strings.Contains(page, "Auto generated") {
			t.Errorf("%s carries cobra's dated auto-generated tag", name)
		}
	}
	if _, err := os.Stat(filepath.Join(man, "nodecheck-gen-docs.1")); err == nil {
		t.Error("the hidden gen-docs verb got a man page")
	}
	for _, tc := range []struct{ file, first string }{
		{"nodecheck.bash", "# bash completion V2 for nodecheck"},
		{"_nodecheck", "#compdef nodecheck"},
		{"nodecheck.fish", "# fish completion for nodecheck"},
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
	if len(buildTimeCommands()) > 0 {
		t.Skip("this test binary is built with the gendocs tag")
	}
	_, stderr, code := runCLI(t, nil, "gen-docs", "--man", t.TempDir())
	if code != exitCannotRun || !strings.Contains(stderr, "unknown command") {
		t.Errorf("gen-docs: exit %d, stderr %q; want %d and unknown command", code, stderr, exitCannotRun)
	}
}
