package checks

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config"
)

// Explanation is what `nodecheck explain CHECK` tells an admin about a check: what it reads,
// when it gives each status, what its settings mean, and what to do when it fails. The
// settings' defaults are not written here: Explain takes them from the check's Section, so
// they cannot drift from the code. Each check's Explain method, in its own file, gives it.
type Explanation struct {
	Reads  []string // what the check reads from the node, one item each
	Passes string
	Warns  string // "" when the check never warns
	Fails  string
	Skips  string
	Errors string // when it says error: it could not decide
	// Keys describes the check's own keys in its [checks.ID] section; the keys every check
	// has (enabled, timeout, modes) are described once, in commonKeys.
	Keys map[string]string
	Fix  []string // what an admin does when the check fails, in order
}

// commonKeys describes the keys every check's section has.
var commonKeys = map[string]string{
	"enabled": "false turns the check off everywhere (it reports skip).",
	"timeout": "The check's own time limit; a check that runs out of time fails.",
	"modes":   `The modes the check runs in, from "prolog", "epilog", "health" and "manual"; in the others it reports skip.`,
}

// afterFix is the last step of every check's fix list: how the node gets back into service.
const afterFix = "Check the fix with nodecheck run --check %s. A node nodecheck drained is resumed by the health check once resume_after_passes runs in a row pass ([drain] in nodecheck.toml); a node someone else drained is left to them."

// ExplainIndex writes the checks in run order, one line each, and how to explain one.
func ExplainIndex(w io.Writer) error {
	var b strings.Builder
	width := 0
	for _, c := range ordered {
		width = max(width, len(c.ID()))
	}
	b.WriteString("Checks, in run order:\n")
	for _, c := range ordered {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.ID(), c.Description())
	}
	b.WriteString("\nnodecheck explain CHECK says what a check reads, when it passes, fails and skips, its\nsettings, and what to do when it fails.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Explain writes the explanation of the check id, with its settings' built-in defaults. An
// unknown id is an error that lists the known ones.
func Explain(w io.Writer, id string) error {
	c, ok := byID(id)
	if !ok {
		return fmt.Errorf("unknown check %q: known checks are %s", id, strings.Join(IDs(), ", "))
	}
	e := c.Explain()
	keys, err := sectionDefaults(id)
	if err != nil {
		return err
	}
	// The header names the check alone, not its place in the run order, so that adding a
	// check changes no other check's explanation (nodecheck explain lists the order).
	var b strings.Builder
	b.WriteString(id + "\n")
	wrap(&b, "  ", "  ", c.Description())
	heading := func(h string) { b.WriteString("\n" + h + "\n") }
	para := func(h, text string) {
		if text == "" {
			return
		}
		heading(h)
		wrap(&b, "  ", "  ", text)
	}
	heading("Reads")
	for _, r := range e.Reads {
		wrap(&b, "  - ", "    ", r)
	}
	para("Passes (ok)", e.Passes)
	para("Warns (warn: reported, never drains)", e.Warns)
	para("Fails (fail: the node is unhealthy, and the hooks drain it)", e.Fails)
	explainRemedies(&b, c)
	para("Skips (skip)", e.Skips)
	para("Cannot decide (error: drains only with error_is_failure = true)", e.Errors)
	heading(fmt.Sprintf("Settings: [checks.%s] in nodecheck.toml, with the built-in defaults", id))
	for _, kv := range keys {
		b.WriteString("  " + kv[0] + " = " + kv[1] + "\n")
		desc, ok := commonKeys[kv[0]]
		if !ok {
			desc = e.Keys[kv[0]]
		}
		wrap(&b, "      ", "      ", desc)
	}
	wrap(&b, "  ", "  ", "A [[group]] section can set any of these for some nodes; nodecheck config show --node NAME prints what a node gets.")
	heading("When it fails")
	for i, f := range append(slices.Clip(e.Fix), fmt.Sprintf(afterFix, id)) {
		lead := fmt.Sprintf("  %d. ", i+1)
		wrap(&b, lead, strings.Repeat(" ", len(lead)), f)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// explainRemedies writes the remedy of each way c fails, from the remedy table (c's Faults):
// what the JSON, the text, the metrics and the drain reason name for it.
func explainRemedies(b *strings.Builder, c Check) {
	b.WriteString("\nRemedies (each failure names one; cheapest first: " + remedyList() + ")\n")
	for _, r := range rowsFor(c.ID()) {
		wrap(b, "  - ", "    ", fmt.Sprintf("%s: %s. Source: %s.", r.when, r.remedy, r.source))
	}
	if note := c.Faults().note; note != nil {
		wrap(b, "  ", "  ", note())
	}
}

func remedyList() string {
	names := make([]string, len(Remedies()))
	for i, r := range Remedies() {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// sectionDefaults returns the keys of [checks.ID] with their built-in values, as
// `nodecheck config show` writes them (TOML values), in the order of the section.
func sectionDefaults(id string) ([][2]string, error) {
	var buf bytes.Buffer
	if err := config.Default(Schema()).Encode(&buf); err != nil {
		return nil, err
	}
	header := "[checks." + id + "]"
	var out [][2]string
	in := false
	for line := range strings.Lines(buf.String()) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			if in {
				break
			}
			in = line == header
			continue
		}
		if !in || line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			return nil, fmt.Errorf("read the defaults of %s: unexpected line %q", header, line)
		}
		out = append(out, [2]string{k, v})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read the defaults of %s: no such section in the built-in config", header)
	}
	return out, nil
}

// explainWidth is the width explain's text is wrapped to.
const explainWidth = 80

// wrap writes text as lines of at most explainWidth columns, the first starting with first,
// the others with rest. A word longer than a line gets a line of its own.
func wrap(b *strings.Builder, first, rest, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > explainWidth {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}
