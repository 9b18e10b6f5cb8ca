package checks

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplanations: every registered check has an explanation with every part an admin needs,
// and a description for each key of its config section, no more and no fewer.
func TestExplanations(t *testing.T) {
	for _, c := range All() {
		t.Run(c.ID(), func(t *testing.T) {
			e := c.Explain()
			for part, v := range map[string]string{"Passes": e.Passes, "Fails": e.Fails, "Skips": e.Skips, "Errors": e.Errors} {
				if strings.TrimSpace(v) == "" {
					t.Errorf("%s is empty", part)
				}
			}
			if len(e.Reads) == 0 || len(e.Fix) == 0 {
				t.Errorf("Reads has %d items and Fix %d; want at least one each", len(e.Reads), len(e.Fix))
			}
			keys, err := sectionDefaults(c.ID())
			if err != nil {
				t.Fatal(err)
			}
			var inConfig, described []string
			for _, kv := range keys {
				if _, common := commonKeys[kv[0]]; !common {
					inConfig = append(inConfig, kv[0])
				}
			}
			for k := range e.Keys {
				described = append(described, k)
			}
			slices.Sort(inConfig)
			slices.Sort(described)
			if diff := cmp.Diff(inConfig, described); diff != "" {
				t.Errorf("keys of [checks.%s] (-config +explanation):\n%s", c.ID(), diff)
			}
			for _, common := range []string{"enabled", "timeout", "modes"} {
				if !slices.ContainsFunc(keys, func(kv [2]string) bool { return kv[0] == common }) {
					t.Errorf("[checks.%s] has no %s key", c.ID(), common)
				}
			}
		})
	}
}

func TestExplainUnknown(t *testing.T) {
	var b bytes.Buffer
	err := Explain(&b, "ib_port")
	want := `unknown check "ib_port": known checks are ` + strings.Join(IDs(), ", ")
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %q", b.String())
	}
}

// TestExplainDefaultsFromConfig: the values explain prints are the built-in ones, read from
// the check's Section, not copied into the text.
func TestExplainDefaultsFromConfig(t *testing.T) {
	tests := []struct {
		id   string
		want []string
	}{
		{idIBPorts, []string{`  timeout = "2s"`, `  min_rate_gbps = 0.0`, `  exclude_link_layers = []`}},
		{idNCCLAllReduce, []string{`  modes = ["manual"]`, `  args = ["-b", "8", "-e", "4G", "-f", "2"]`, `  binary = "/usr/bin/all_reduce_perf"`}},
		{idFabricManager, []string{`  service = "nvidia-fabricmanager"`, `  force = false`}},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			var b bytes.Buffer
			if err := Explain(&b, tc.id); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(b.String(), "\n")
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("no line %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name        string
		first, rest string
		text        string
		want        string
	}{
		{"short", "  ", "  ", "one two", "  one two\n"},
		{"empty", "  - ", "    ", "", "  -\n"},
		{"breaks before 80 columns", "  - ", "    ", strings.Repeat("word ", 20),
			"  - word word word word word word word word word word word word word word word\n    word word word word word\n"},
		{"a long word gets its own line", "  ", "  ", "a " + strings.Repeat("x", 90) + " b",
			"  a\n  " + strings.Repeat("x", 90) + "\n  b\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			wrap(&b, tc.first, tc.rest, tc.text)
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				if len(l) > explainWidth && !strings.Contains(l, strings.Repeat("x", 90)) {
					t.Errorf("line of %d columns: %q", len(l), l)
				}
			}
		})
	}
}
