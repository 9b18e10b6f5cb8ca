package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docFiles are the documents whose example outputs and links the tests below hold: README.md,
// the manual in docs/, and the snapshots' own README, relative to the repository root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "testdata/snapshots/README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(more) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", root, err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// docExample matches a generated example: a marker line naming the command, then the fenced
// block that holds its output. The command is nodecheck's arguments, optionally preceded by
// environment assignments: <!-- output of: SLURM_JOB_GPUS=2 nodecheck run --check job_leftovers -->
var docExample = regexp.MustCompile("(?m)^<!-- output of: (.+?) -->\n(```[a-z]*\n)((?s:.*?))^```$")

// TestDocExamples runs the command of every generated example in the docs through the CLI's
// own entry point, from the repository root, and compares its standard output with the block
// after the marker, durations and clocks aside (normalize). With -update it rewrites the blocks
// that differ. So an example cannot show another command's output: the README's first
// command once showed h100-healthy's report under h100-signals'.
func TestDocExamples(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := docFiles(t, root)
	t.Chdir(root) // the examples' paths are relative to the repository root, as a reader types them
	total := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		matches := docExample.FindAllStringSubmatchIndex(doc, -1)
		if name == "README.md" && len(matches) == 0 {
			t.Errorf("README.md has no generated example (%q)", "<!-- output of: nodecheck ... -->")
		}
		total += len(matches)
		var out strings.Builder
		last := 0
		for _, m := range matches {
			command, block := doc[m[2]:m[3]], doc[m[6]:m[7]]
			line := strings.Count(doc[:m[0]], "\n") + 1
			got, err := runDocCommand(t, command)
			if err != nil {
				t.Errorf("%s:%d: %v", name, line, err)
				continue
			}
			if !shownBefore(doc[:m[0]], command) {
				t.Errorf("%s:%d: the text before the example does not show its command's arguments %q", name, line, docArgs(command))
			}
			if normalize(got) == normalize(block) {
				continue
			}
			if !*update {
				t.Errorf("%s:%d: the output of %q differs from the example (run go test ./cmd/nodecheck -run TestDocExamples -update and review the diff); it prints:\n%s", name, line, command, got)
				continue
			}
			out.WriteString(doc[last:m[6]])
			out.WriteString(got)
			last = m[7]
		}
		if *update && last > 0 {
			out.WriteString(doc[last:])
			if err := os.WriteFile(name, []byte(out.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if total == 0 {
		t.Fatal("no generated example found in the docs")
	}
}

// runDocCommand runs an example's command ("[NAME=value ...] nodecheck ARGS") in-process and
// returns its standard output. Arguments are split at blanks: an example needs no quoting.
func runDocCommand(t *testing.T, command string) (string, error) {
	t.Helper()
	fields := strings.Fields(command)
	env := map[string]string{}
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		k, v, _ := strings.Cut(fields[0], "=")
		env[k] = v
		fields = fields[1:]
	}
	if len(fields) == 0 || fields[0] != "nodecheck" {
		return "", fmt.Errorf("example command %q: want [NAME=value ...] nodecheck ARGS", command)
	}
	if strings.ContainsAny(command, `"'\$`) {
		return "", fmt.Errorf("example command %q: no quotes or shell expansions, arguments are split at blanks", command)
	}
	stdout, _, _ := runCLI(t, env, fields[1:]...)
	return stdout, nil
}

// docArgs is an example command's arguments after "nodecheck".
func docArgs(command string) string {
	_, args, _ := strings.Cut(command, "nodecheck ")
	return args
}

// shownBefore says whether the text shortly before an example (its marker and other markers
// left out) shows the command's arguments, as the command a reader is told to type.
func shownBefore(before, command string) bool {
	before = regexp.MustCompile(`<!-- output of: .*? -->`).ReplaceAllString(before, "")
	if len(before) > 2000 {
		before = before[len(before)-2000:]
	}
	return strings.Contains(before, docArgs(command))
}

// docLink matches a markdown link or image target: [text](target).
var docLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link in the docs names a file of the repository, and every
// #anchor a heading of the file it points into.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docLink.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, name)
			if file != "" {
				path = filepath.Join(filepath.Dir(path), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", name, target, err)
				continue
			}
			if anchor == "" {
				continue
			}
			if anchors, err := docAnchors(path); err != nil || !slices.Contains(anchors, anchor) {
				t.Errorf("%s: link %q: no heading with that anchor in %s (%v)", name, target, file, err)
			}
		}
	}
}

// stripFences drops fenced blocks, whose lines are neither links nor headings.
func stripFences(s string) string {
	return regexp.MustCompile("(?ms)^```.*?^```$").ReplaceAllString(s, "")
}

// stripCode drops fenced blocks and code spans, where brackets are not links.
func stripCode(s string) string {
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(stripFences(s), "")
}

// docAnchors lists the anchors GitHub gives the headings of a markdown file: lower case,
// punctuation other than '-' and '_' dropped, blanks made '-'.
func docAnchors(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(stripFences(string(b)), "\n") {
		h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		h = strings.ToLower(strings.TrimSpace(h))
		var s strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				s.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				s.WriteRune(r)
			}
		}
		out = append(out, s.String())
	}
	return out, nil
}

// snapshotsReadme is the bundled snapshots' README, whose table of verdicts
// TestSnapshotVerdictTable generates.
const snapshotsReadme = repoRoot + "/testdata/snapshots/README.md"

// TestSnapshotVerdictTable holds the table of testdata/snapshots/README.md that says what
// `nodecheck run --all` says on each bundled snapshot to the replays themselves: the verdict
// and exit code, every check that failed, could not decide or warned with its summary, and
// the checks that skipped. With -update it rewrites the table.
func TestSnapshotVerdictTable(t *testing.T) {
	b, err := os.ReadFile(snapshotsReadme)
	if err != nil {
		t.Fatalf("read the snapshots' README: %v", err)
	}
	doc := string(b)
	metas, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "snapshots", "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshots found: %v", err)
	}
	var table strings.Builder
	table.WriteString("| snapshot | verdict (exit) | checks not ok |\n|---|---|---|\n")
	for _, meta := range metas {
		dir := filepath.Dir(meta)
		out, stderr, code := runCLI(t, nil, "run", "--all", "--snapshot", dir, "--format", "json")
		var rep struct {
			Verdict string `json:"verdict"`
			Results []struct {
				Check   string `json:"check"`
				Status  string `json:"status"`
				Summary string `json:"summary"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Verdict == "" {
			t.Fatalf("%s: no JSON report (exit %d): %v\n%s", dir, code, err, stderr)
		}
		var notOK, skipped []string
		for _, st := range []string{"fail", "error", "warn"} {
			for _, r := range rep.Results {
				if r.Status == st {
					notOK = append(notOK, fmt.Sprintf("**%s** %s: %s", st, r.Check, strings.ReplaceAll(r.Summary, "|", `\|`)))
				}
			}
		}
		for _, r := range rep.Results {
			if r.Status == "skip" {
				skipped = append(skipped, r.Check)
			}
		}
		if len(skipped) > 0 {
			notOK = append(notOK, "skip: "+strings.Join(skipped, ", "))
		}
		fmt.Fprintf(&table, "| `%s` | %s (%d) | %s |\n", filepath.Base(dir), rep.Verdict, code, strings.Join(notOK, "<br>"))
	}
	const begin, end = "<!-- verdicts: generated by go test ./cmd/nodecheck -run TestSnapshotVerdictTable -update -->\n", "<!-- end of verdicts -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks %q ... %q", snapshotsReadme, begin, end)
	}
	got := doc[:i+len(begin)] + table.String() + doc[j:]
	if got == doc {
		return
	}
	if *update {
		if err := os.WriteFile(snapshotsReadme, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of verdicts differs from the replays: run go test ./cmd/nodecheck -run TestSnapshotVerdictTable -update and review the diff; the replays give:\n%s", snapshotsReadme, table.String())
}
