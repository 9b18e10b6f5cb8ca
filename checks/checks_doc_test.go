package checks

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// checksDocPath is the manual's page on the checks, whose table and per-check sections
// TestChecksDoc generates from the registry.
const checksDocPath = "../docs/checks.md"

// TestChecksDoc holds docs/checks.md to the registry: the table of checks (what each compares,
// its default modes, when it fails and skips) and each check's section (what it reads, when
// it passes, warns, fails, skips and cannot decide, its settings with their built-in defaults,
// what to do) are generated from checks.All(), each check's Section and Explain, as
// `nodecheck list` and `nodecheck explain` print them. go test ./checks -update rewrites them.
func TestChecksDoc(t *testing.T) {
	b, err := os.ReadFile(checksDocPath)
	if err != nil {
		t.Fatalf("read the checks' page: %v", err)
	}
	doc := string(b)
	table, sections, err := checksDoc()
	if err != nil {
		t.Fatal(err)
	}
	got := doc
	for _, part := range []struct{ begin, end, body string }{
		{"<!-- checks: generated from the registry by go test ./checks -update -->\n", "<!-- end of checks -->", table},
		{"<!-- check sections: generated from the registry by go test ./checks -update -->\n", "<!-- end of check sections -->", sections},
	} {
		i, j := strings.Index(got, part.begin), strings.Index(got, part.end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks %q ... %q", checksDocPath, part.begin, part.end)
		}
		got = got[:i+len(part.begin)] + part.body + got[j:]
	}
	if got == doc {
		return
	}
	if *update {
		if err := os.WriteFile(checksDocPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s differs from the registry: run go test ./checks -run TestChecksDoc -update and review the diff", checksDocPath)
}

// checksDoc renders the table of checks and the checks' sections, in run order.
func checksDoc() (table, sections string, err error) {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var tb, sb strings.Builder
	tb.WriteString("| check | compares | modes (default) | fails when | skips when |\n|---|---|---|---|---|\n")
	for _, c := range All() {
		id, e, common := c.ID(), c.Explain(), c.Section().Common()
		modes := strings.Join(common.Modes, ", ")
		fmt.Fprintf(&tb, "| [`%s`](#%s) | %s | %s | %s | %s |\n", id, id, cell(c.Description()), modes, cell(e.Fails), cell(e.Skips))

		keys, err := sectionDefaults(id)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(&sb, "\n### %s\n\nWhat it holds: %s. Runs in %s by default, within %s.\n\n**Reads**\n\n", id, c.Description(), modes, common.Timeout)
		for _, r := range e.Reads {
			sb.WriteString("- " + r + "\n")
		}
		for _, p := range []struct{ head, text string }{
			{"**Passes** (`ok`)", e.Passes},
			{"**Warns** (`warn`: reported, never drains)", e.Warns},
			{"**Fails** (`fail`: the node is unhealthy, and the hooks drain it; [remedies](remedies.md))", e.Fails},
			{"**Skips** (`skip`)", e.Skips},
			{"**Cannot decide** (`error`: drains only with `error_is_failure = true`)", e.Errors},
		} {
			if p.text != "" {
				fmt.Fprintf(&sb, "\n%s: %s\n", p.head, p.text)
			}
		}
		fmt.Fprintf(&sb, "\n**Settings** (`[checks.%s]` in nodecheck.toml, with the built-in defaults; a `[[group]]` may set any of them for some nodes):\n\n", id)
		for _, kv := range keys {
			desc, ok := commonKeys[kv[0]]
			if !ok {
				desc = e.Keys[kv[0]]
			}
			fmt.Fprintf(&sb, "- `%s = %s`: %s\n", kv[0], kv[1], desc)
		}
		sb.WriteString("\n**When it fails**\n\n")
		for i, f := range append(slices.Clip(e.Fix), fmt.Sprintf(afterFix, id)) {
			fmt.Fprintf(&sb, "%d. %s\n", i+1, f)
		}
	}
	sb.WriteString("\n")
	return tb.String(), sb.String(), nil
}
