package config

// config cannot import checks, so these tests give it a schema of their own: "ports", with a
// key of every type a section may hold and rules of its own, and "plain", with only the keys
// every check has. checks/config_test.go runs the same machinery with nodecheck's sections.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type testPorts struct {
	CheckCommon
	MinRate  float64       `toml:"min_rate"`
	Expected int           `toml:"expected"`
	Devices  []string      `toml:"devices"`
	Force    bool          `toml:"force"`
	Binary   string        `toml:"binary"`
	Settle   time.Duration `toml:"settle"`
	IDs      []int         `toml:"ids"`
}

func (p *testPorts) ValidateSection() []Problem {
	var out []Problem
	if !(p.MinRate >= 0) { // NaN too
		out = append(out, Problemf("min_rate", " = %v: give a rate of 0 or more", p.MinRate))
	}
	if !strings.HasPrefix(p.Binary, "/") {
		out = append(out, Problemf("binary", " = %q: give an absolute path", p.Binary))
	}
	return out
}

type testPlain struct {
	CheckCommon
}

// testSchema lists "ports" before "plain", against the alphabet, so that a test sees the
// schema's order wherever it matters.
func testSchema() Schema {
	return Schema{
		{ID: "ports", Default: func() Section {
			return &testPorts{CheckCommon: CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: ModeNames()}, Binary: "/usr/bin/true"}
		}},
		{ID: "plain", Default: func() Section {
			return &testPlain{CheckCommon{Enabled: true, Timeout: time.Second, Modes: []string{"health", "manual"}}}
		}},
	}
}

// testWant returns Default(testSchema()) changed by edit.
func testWant(edit func(c *Config, ports *testPorts, plain *testPlain)) *Config {
	c := Default(testSchema())
	ports, _ := SectionOf[*testPorts](c, "ports")
	plain, _ := SectionOf[*testPlain](c, "plain")
	if edit != nil {
		edit(c, ports, plain)
	}
	return c
}

func TestSections(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		node    string // "": the base config
		want    *Config
		wantErr string
	}{
		{name: "no [checks]: every section at its defaults", toml: "", want: testWant(nil)},
		{
			name: "keys of every type; absent keys keep their defaults",
			toml: "[checks.ports]\nmin_rate = 400\nexpected = 8\ndevices = [\"a\", \"b\"]\nforce = true\nbinary = \"/bin/x\"\nsettle = \"1m30s\"\nids = [3, 1]\n",
			want: testWant(func(_ *Config, p *testPorts, _ *testPlain) {
				p.MinRate, p.Expected, p.Devices, p.Force, p.Binary, p.Settle, p.IDs = 400, 8, []string{"a", "b"}, true, "/bin/x", 90*time.Second, []int{3, 1}
			}),
		},
		{
			name: "one section's modes do not leak into another's",
			toml: "[checks.plain]\nmodes = [\"manual\"]\n",
			want: testWant(func(_ *Config, _ *testPorts, pl *testPlain) { pl.Modes = []string{"manual"} }),
		},
		{
			name: "an empty list is stored as nil",
			toml: "[checks.ports]\ndevices = []\n",
			want: testWant(nil),
		},
		{
			name: "inline tables",
			toml: "checks = { ports = { expected = 2 } }\n",
			want: testWant(func(_ *Config, p *testPorts, _ *testPlain) { p.Expected = 2 }),
		},
		{
			name:    "unknown check, with a suggestion",
			toml:    "\n[checks.port]\nenabled = false\n",
			wantErr: `nodecheck.toml:2: unknown key "checks.port" (did you mean "ports"?)`,
		},
		{
			name:    "unknown check far from any known one lists them, in the schema's order",
			toml:    "[checks.gpu]\n",
			wantErr: `nodecheck.toml:1: unknown key "checks.gpu" (keys allowed here: ports, plain)`,
		},
		{
			name:    "unknown key in a section, with a suggestion",
			toml:    "[checks.ports]\nmin_rat = 1\n",
			wantErr: `nodecheck.toml:2: unknown key "checks.ports.min_rat" (did you mean "min_rate"?)`,
		},
		{
			name: "wrong types",
			toml: "[checks.ports]\nexpected = 2.5\nsettle = 5\nids = [\"1\"]\n",
			wantErr: "nodecheck.toml:2: checks.ports.expected: want a whole number, got the number 2.5\n" +
				`nodecheck.toml:3: checks.ports.settle = 5: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as "5s"` + "\n" +
				`nodecheck.toml:4: checks.ports.ids[0]: want a whole number, got the string "1"`,
		},
		{
			name:    "a section that is not a table",
			toml:    "[checks]\nports = 3\n",
			wantErr: "nodecheck.toml:2: checks.ports: want a table, got the integer 3",
		},
		{
			name: "the section's own rules and the common ones, each at its line",
			toml: "[checks.ports]\nmin_rate = -1\ntimeout = \"9s\"\nbinary = \"x\"\n",
			wantErr: `nodecheck.toml:2: checks.ports.min_rate = -1: give a rate of 0 or more` + "\n" +
				`nodecheck.toml:3: checks.ports.timeout = "9s" is longer than budget.prolog = "5s", and the check runs in prolog; lower the timeout or take "prolog" out of modes` + "\n" +
				`nodecheck.toml:4: checks.ports.binary = "x": give an absolute path`,
		},
		{
			name: "a group overrides only the keys it sets",
			toml: "[checks.ports]\nexpected = 4\ndevices = [\"a\"]\n[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.ports]\nexpected = 8\n",
			node: "gpu02",
			want: testWant(func(_ *Config, p *testPorts, _ *testPlain) { p.Expected, p.Devices = 8, []string{"a"} }),
		},
		{
			name: "a group's overrides apply to its nodes only",
			toml: "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.ports]\nexpected = 8\n",
			node: "gpu05",
			want: testWant(nil),
		},
		{
			name:    "a group's override broken by the section's own rule, at the group's line",
			toml:    "[[group]]\nnodes = \"gpu01\"\n[group.checks.ports]\n\nmin_rate = -5\n",
			wantErr: `nodecheck.toml:5: group[0].checks.ports.min_rate = -5: give a rate of 0 or more`,
		},
		{
			name:    "unknown check in a group",
			toml:    "[[group]]\nnodes = \"gpu01\"\n[group.checks.plane]\n",
			wantErr: `nodecheck.toml:3: unknown key "group[0].checks.plane" (did you mean "plain"?)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.toml), "nodecheck.toml", testSchema())
			if err == nil && tc.node != "" {
				cfg, err = cfg.ForNode(tc.node)
			}
			if tc.wantErr != "" {
				if diff := cmp.Diff(tc.wantErr, fmt.Sprint(err)); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.node == "" {
				tc.want.Groups = cfg.Groups
			}
			if diff := cmp.Diff(tc.want, cfg); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSectionsEncode: sections are written in the schema's order, every key of each, and the
// output reads back to an equal config.
func TestSectionsEncode(t *testing.T) {
	cfg, err := ParseConfig([]byte("[checks.ports]\ndevices = [\"a\"]\nsettle = \"1.5s\"\n[[group]]\nnodes = \"n1\"\n[group.checks.plain]\nenabled = false\n"), "in.toml", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := cfg.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	want := "[checks]\n[checks.ports]\nenabled = true\ntimeout = \"2s\"\nmodes = [\"prolog\", \"epilog\", \"health\", \"manual\"]\n" +
		"min_rate = 0.0\nexpected = 0\ndevices = [\"a\"]\nforce = false\nbinary = \"/usr/bin/true\"\nsettle = \"1.5s\"\nids = []\n" +
		"[checks.plain]\nenabled = true\ntimeout = \"1s\"\nmodes = [\"health\", \"manual\"]\n" +
		"\n[[group]]\nnodes = \"n1\"\n[group.checks]\n[group.checks.plain]\nenabled = false\n"
	if i := strings.Index(out, "[checks]"); i < 0 || out[i:] != want || !strings.HasSuffix(out[:i], "\n\n") {
		t.Errorf("Encode wrote:\n%s\nwant it to end with:\n%s", out, want)
	}
	back, err := ParseConfig(buf.Bytes(), "out.toml", testSchema())
	if err != nil {
		t.Fatalf("ParseConfig(Encode output): %v\n%s", err, out)
	}
	if diff := cmp.Diff(cfg, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestSectionsShareNothing: each Default makes its own sections, and ForNode's result is a
// copy, so that changing one config never reaches another.
func TestSectionsShareNothing(t *testing.T) {
	a, b := Default(testSchema()), Default(testSchema())
	pa, _ := SectionOf[*testPorts](a, "ports")
	pa.Modes[0] = "changed"
	if pb, _ := SectionOf[*testPorts](b, "ports"); pb.Modes[0] != "prolog" {
		t.Errorf("two Defaults share their modes: %v", pb.Modes)
	}

	base, err := ParseConfig([]byte("[checks.ports]\ndevices = [\"a\"]\n"), "n.toml", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	eff, err := base.ForNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	pe, _ := SectionOf[*testPorts](eff, "ports")
	pe.Devices[0], pe.Expected = "changed", 9
	if p, _ := SectionOf[*testPorts](base, "ports"); p.Devices[0] != "a" || p.Expected != 0 {
		t.Errorf("changing ForNode's result changed the base: %+v", p)
	}
}

func TestSectionOf(t *testing.T) {
	c := Default(testSchema())
	if p, ok := SectionOf[*testPorts](c, "ports"); !ok || p.Binary != "/usr/bin/true" {
		t.Errorf("SectionOf ports = %+v, %v", p, ok)
	}
	if p, ok := SectionOf[*testPorts](c, "plain"); ok || p != nil {
		t.Errorf("SectionOf of another type = %+v, %v; want nil, false", p, ok)
	}
	if p, ok := SectionOf[*testPlain](c, "absent"); ok || p != nil {
		t.Errorf("SectionOf of no section = %+v, %v; want nil, false", p, ok)
	}
	if got := c.Checks.IDs(); !cmp.Equal(got, []string{"ports", "plain"}) {
		t.Errorf("IDs = %v, want the schema's order", got)
	}
}

// TestValidateBuiltInGo: a config built in Go is validated with its sections, and a group
// built in Go with Go values follows the file's rules.
func TestValidateBuiltInGo(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config, p *testPorts, pl *testPlain)
		want string
	}{
		{name: "defaults"},
		{
			name: "no path",
			edit: func(_ *Config, _ *testPorts, pl *testPlain) { pl.Modes = nil },
			want: `checks.plain.modes is empty: list the modes the check runs in, such as ["health", "manual"]; to turn the check off set enabled = false`,
		},
		{
			name: "path names the file",
			edit: func(c *Config, p *testPorts, _ *testPlain) { c.Path = "/etc/nodecheck/nodecheck.toml"; p.MinRate = -2 },
			want: `/etc/nodecheck/nodecheck.toml: checks.ports.min_rate = -2: give a rate of 0 or more`,
		},
		{
			name: "group with a Go duration and a typo",
			edit: func(c *Config, _ *testPorts, _ *testPlain) {
				c.Groups = []Group{{Nodes: "gpu01", Checks: map[string]map[string]any{"ports": {"timeout": 3 * time.Second, "expectd": 2}}}}
			},
			want: `unknown key "group[0].checks.ports.expectd" (did you mean "expected"?)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fmt.Sprint(testWant(tc.edit).Validate())
			if tc.want == "" {
				tc.want = "<nil>"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseConfig feeds ParseConfig arbitrary files with the test sections. Beyond not
// panicking: every error line names the file; an accepted config encodes and reads back
// equal. checks' FuzzParseConfig does the same with nodecheck's sections.
func FuzzParseConfig(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "toml", "tricky-syntax.toml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, s := range []string{
		"[checks.ports]\nmin_rat = 200\n",
		"[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.ports]\nsettle = \"1s\"\n[[group]]\n",
		"checks = { ports = { timeout = 5 } }\n",
		"[checks.ports]\nids = [1, 2]\ndevices = [\"x\"]\nmin_rate = nan\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "f.toml", testSchema())
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.toml:") {
					t.Fatalf("error line %q does not name the file; whole error:\n%v", line, err)
				}
			}
			return
		}
		var buf bytes.Buffer
		if err := cfg.Encode(&buf); err != nil {
			t.Fatalf("Encode: %v", err)
		}
		back, err := ParseConfig(buf.Bytes(), "encoded.toml", testSchema())
		if err != nil {
			t.Fatalf("ParseConfig(Encode output): %v\n%s", err, buf.String())
		}
		if diff := cmp.Diff(cfg, back); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

func ExampleParseConfig() {
	// A check's section embeds CheckCommon and tags its own keys; its schema entry makes
	// the defaults. nodecheck's checks give theirs through checks.Schema().
	type diskConfig struct {
		CheckCommon
		MinFreeGiB int `toml:"min_free_gib"`
	}
	schema := Schema{{ID: "disk", Default: func() Section {
		return &diskConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: ModeNames()}, MinFreeGiB: 10}
	}}}
	_, err := ParseConfig([]byte(`
[checks.disk]
min_free_gb = 20
timeout = 2
`), "nodecheck.toml", schema)
	fmt.Println(err)
	// Output:
	// nodecheck.toml:3: unknown key "checks.disk.min_free_gb" (did you mean "min_free_gib"?)
	// nodecheck.toml:4: checks.disk.timeout = 2: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as "2s"
}

func ExampleConfig_ForNode() {
	cfg, err := ParseConfig([]byte(`
[checks.ports]
min_rate = 200

[[group]]
nodes = "gpu[01-32]"
[group.checks.ports]
min_rate = 400
expected = 8

[[group]]
nodes = "gpu[25-32]"
[group.checks.ports]
expected = 4
`), "nodecheck.toml", testSchema())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, node := range []string{"login1", "gpu07", "gpu30"} {
		eff, err := cfg.ForNode(node)
		if err != nil {
			fmt.Println(err)
			return
		}
		p, _ := SectionOf[*testPorts](eff, "ports")
		fmt.Printf("%s: min_rate=%v expected=%d timeout=%v\n", node, p.MinRate, p.Expected, p.Timeout)
	}
	// Output:
	// login1: min_rate=200 expected=0 timeout=2s
	// gpu07: min_rate=400 expected=8 timeout=2s
	// gpu30: min_rate=400 expected=4 timeout=2s
}

func ExampleConfig_Encode() {
	cfg := Default(nil)
	cfg.Budget.Prolog = 3 * time.Second
	var buf bytes.Buffer
	if err := cfg.Encode(&buf); err != nil {
		fmt.Println(err)
		return
	}
	// Print the budget table only.
	out := buf.String()
	start := strings.Index(out, "[budget]")
	fmt.Print(out[start : start+strings.Index(out[start:], "\n\n")+1])
	// Output:
	// [budget]
	// prolog = "3s"
	// epilog = "30s"
	// health = "50s"
	// manual = "0s"
}

// TestWithChecks: keys set over a config as a group would set them, the original left as
// it was; a key the schema lacks, or a value its rules refuse, is an error naming the source.
func TestWithChecks(t *testing.T) {
	base := Default(testSchema())
	got, err := base.WithChecks(map[string]map[string]any{"ports": {"devices": []string{"mlx5_0"}, "expected": int64(4)}}, "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := testWant(func(_ *Config, p *testPorts, _ *testPlain) { p.Devices, p.Expected = []string{"mlx5_0"}, 4 })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Default(testSchema()), base); diff != "" {
		t.Errorf("the base changed (-want +got):\n%s", diff)
	}
	for _, ov := range []map[string]map[string]any{
		{"ports": {"no_such_key": "x"}},
		{"ports": {"binary": "relative"}},
	} {
		if _, err := base.WithChecks(ov, "nhc.conf"); err == nil || !strings.HasPrefix(err.Error(), "nhc.conf: ") {
			t.Errorf("%v: %v", ov, err)
		}
	}
}
