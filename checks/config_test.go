package checks

// Whole-config tests of nodecheck.toml with nodecheck's own schema: decoding, errors with
// file and line, [[group]] overrides, `config show` (Encode) and the shipped example. The
// config package tests its machinery with a schema of its own (it cannot import checks);
// these pin what admins see with the real sections. Each check's own keys are tested
// beside it.

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// exampleConfigFile is the commented example shipped for admins (repo-root testdata).
const exampleConfigFile = "../testdata/nodecheck.toml"

// trickySyntaxFile is config's file of odd but valid TOML syntax, whose key lines config's
// scanner test pins down.
const trickySyntaxFile = "../config/testdata/toml/tricky-syntax.toml"

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// hostlistError is ParseHostlist's error for expr, which config/slurm's tests pin down.
func hostlistError(expr string) string {
	_, err := slurm.ParseHostlist(expr)
	if err == nil {
		panic("hostlist " + expr + " is valid")
	}
	return err.Error()
}

// configWant returns the built-in config changed by edit, for the expected side of a
// comparison.
func configWant(edit func(c *config.Config)) *config.Config {
	c := config.Default(Schema())
	if edit != nil {
		edit(c)
	}
	return c
}

func ibSection(c *config.Config) *ibPortsConfig { return settings[*ibPortsConfig](c, idIBPorts) }

func gresSection(c *config.Config) *gresDevicesConfig {
	return settings[*gresDevicesConfig](c, idGresDevices)
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want *config.Config
	}{
		{
			name: "empty file is the defaults",
			toml: "",
			want: config.Default(Schema()),
		},
		{
			name: "comments only",
			toml: "# nothing set\n\n# still nothing\n",
			want: config.Default(Schema()),
		},
		{
			name: "absent keys keep defaults, present keys override",
			toml: `
fail_closed = true
[budget]
prolog = "3s"
[checks.ib_ports]
min_rate_gbps = 400
modes = ["health"]
`,
			want: configWant(func(c *config.Config) {
				c.FailClosed = true
				c.Budget.Prolog = 3 * time.Second
				ibSection(c).MinRateGbps = 400
				ibSection(c).Modes = []string{"health"}
			}),
		},
		{
			name: "durations of every form",
			toml: `
[budget]
prolog = "3500ms"
epilog = "1m30s"
health = "0.5m"
manual = "1h"
`,
			want: configWant(func(c *config.Config) {
				c.Budget = config.Budget{Prolog: 3500 * time.Millisecond, Epilog: 90 * time.Second, Health: 30 * time.Second, Manual: time.Hour}
			}),
		},
		{
			name: "one check's modes do not leak into another's",
			toml: "[checks.ib_ports]\nmodes = [\"health\"]\n",
			want: configWant(func(c *config.Config) { ibSection(c).Modes = []string{"health"} }),
		},
		{
			name: "empty log level means the default",
			toml: "[log]\nlevel = \"\"\n",
			want: config.Default(Schema()),
		},
		{
			name: "a disabled check needs no timeout or modes",
			toml: "[checks.gres_devices]\nenabled = false\ntimeout = \"0s\"\nmodes = []\n",
			want: configWant(func(c *config.Config) {
				gresSection(c).CheckCommon = config.CheckCommon{Enabled: false, Modes: nil} // [] is stored as nil
			}),
		},
		{
			name: "a timeout may exceed the budget of a mode the check does not run in",
			toml: "[checks.ib_ports]\ntimeout = \"40s\"\nmodes = [\"health\", \"manual\"]\n",
			want: configWant(func(c *config.Config) {
				ibSection(c).Timeout = 40 * time.Second
				ibSection(c).Modes = []string{"health", "manual"}
			}),
		},
		{
			name: "a zero budget is no limit",
			toml: "[budget]\nprolog = \"0s\"\n[checks.ib_ports]\ntimeout = \"1m\"\nmodes = [\"prolog\", \"manual\"]\n",
			want: configWant(func(c *config.Config) {
				c.Budget.Prolog = 0
				ibSection(c).Timeout = time.Minute
				ibSection(c).Modes = []string{"prolog", "manual"}
			}),
		},
		{
			name: "groups keep only the keys they set",
			toml: `
[[group]]
nodes = "gpu[01-32]"
[group.checks.ib_ports]
min_rate_gbps = 400
timeout = "3s"
`,
			want: configWant(func(c *config.Config) {
				c.Groups = []config.Group{{Nodes: "gpu[01-32]", Checks: map[string]map[string]any{
					"ib_ports": {"min_rate_gbps": int64(400), "timeout": "3s"},
				}}}
			}),
		},
		{
			name: "a group may set nothing",
			toml: "[[group]]\nnodes = \"gpu01\"\n",
			want: configWant(func(c *config.Config) { c.Groups = []config.Group{{Nodes: "gpu01"}} }),
		},
		{
			name: "ib selectors and link layers in any case",
			toml: "[checks.ib_ports]\ndevices = [\"mlx5_0\", \"mlx5_1/1\"]\nexclude_link_layers = [\"ethernet\"]\n",
			want: configWant(func(c *config.Config) {
				ibSection(c).Devices = []string{"mlx5_0", "mlx5_1/1"}
				ibSection(c).ExcludeLinkLayers = []string{"ethernet"}
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // the whole error text
	}{
		{
			name: "typo in a check key",
			toml: "# line 1\n[checks.ib_ports]\nenabled = true\nmin_rate_gpbs = 200\n",
			want: `nodecheck.toml:4: unknown key "checks.ib_ports.min_rate_gpbs" (did you mean "min_rate_gbps"?)`,
		},
		{
			name: "typo in a top-level key",
			toml: "fail_close = true\n",
			want: `nodecheck.toml:1: unknown key "fail_close" (did you mean "fail_closed"?)`,
		},
		{
			name: "unknown check id",
			toml: "\n[checks.ib_port]\nenabled = false\n",
			want: `nodecheck.toml:2: unknown key "checks.ib_port" (did you mean "ib_ports"?)`,
		},
		{
			name: "key in the wrong case",
			toml: "[log]\nLevel = \"info\"\n",
			want: `nodecheck.toml:2: unknown key "log.Level" (did you mean "level"?)`,
		},
		{
			name: "unknown key far from any known one lists the allowed keys",
			toml: "[log]\ncolour = true\n",
			want: `nodecheck.toml:2: unknown key "log.colour" (keys allowed here: level, file, journald)`,
		},
		{
			name: "several problems, in file order",
			toml: "[checks.ib_ports]\nmin_rate_gpbs = 1\n[budget]\nprolgo = \"1s\"\n[log]\nlevel = 3\n",
			want: `nodecheck.toml:2: unknown key "checks.ib_ports.min_rate_gpbs" (did you mean "min_rate_gbps"?)` + "\n" +
				`nodecheck.toml:4: unknown key "budget.prolgo" (did you mean "prolog"?)` + "\n" +
				`nodecheck.toml:6: log.level: want a string, got the integer 3`,
		},
		{
			name: "wrong type: string for a number",
			toml: "[checks.ib_ports]\n\nmin_rate_gbps = \"fast\"\n",
			want: `nodecheck.toml:3: checks.ib_ports.min_rate_gbps: want a number, got the string "fast"`,
		},
		{
			name: "wrong type: float for a count",
			toml: "[checks.ib_ports]\nexpected_ports = 2.5\n",
			want: `nodecheck.toml:2: checks.ib_ports.expected_ports: want a whole number, got the number 2.5`,
		},
		{
			name: "wrong type: string for a boolean",
			toml: "fail_closed = \"yes\"\n",
			want: `nodecheck.toml:1: fail_closed: want true or false, got the string "yes"`,
		},
		{
			name: "wrong type: string for a list",
			toml: "[checks.ib_ports]\nmodes = \"health\"\n",
			want: `nodecheck.toml:2: checks.ib_ports.modes: want an array such as ["a", "b"], got the string "health"`,
		},
		{
			name: "wrong type: number in a list",
			toml: "[checks.ib_ports]\nmodes = [\n  \"health\",\n  5,\n]\n",
			want: `nodecheck.toml:2: checks.ib_ports.modes[1]: want a string, got the integer 5`,
		},
		{
			name: "wrong type: value for a table",
			toml: "checks = 5\n",
			want: `nodecheck.toml:1: checks: want a table, got the integer 5`,
		},
		{
			name: "wrong type: group as a plain table",
			toml: "[group]\nnodes = \"gpu01\"\n",
			want: `nodecheck.toml:1: group: want [[group]] tables, got a table`,
		},
		{
			name: "bad duration",
			toml: "[budget]\nprolog = \"5 sec\"\n",
			want: `nodecheck.toml:2: budget.prolog = "5 sec" is not a duration; write it like "30s", "1m30s" or "500ms"`,
		},
		{
			name: "bare integer duration",
			toml: "[checks.gres_devices]\ntimeout = 5\n",
			want: `nodecheck.toml:2: checks.gres_devices.timeout = 5: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as "5s"`,
		},
		{
			name: "TOML syntax error",
			toml: "[checks.ib_ports]\nmin_rate_gbps = = 1\n",
			want: `nodecheck.toml:2: expected value but found '=' instead`,
		},
		{
			// Found by FuzzParseConfig: the parser's message quoted a raw newline.
			name: "TOML syntax error quoting a newline stays on one line",
			toml: "A0=0b\n00000",
			want: `nodecheck.toml:1: not a binary number: '0b\n'`,
		},
		{
			name: "duplicate key",
			toml: "fail_closed = true\nfail_closed = false\n",
			want: `nodecheck.toml:2: Key 'fail_closed' has already been defined.`,
		},
		{
			name: "bad mode, with a suggestion",
			toml: "[checks.ib_ports]\nmodes = [\"Health\", \"prologue\", \"sometimes\"]\n",
			want: `nodecheck.toml:2: checks.ib_ports.modes: "Health" is not a mode; use "prolog", "epilog", "health" or "manual" (did you mean "health"?)` + "\n" +
				`nodecheck.toml:2: checks.ib_ports.modes: "prologue" is not a mode; use "prolog", "epilog", "health" or "manual" (did you mean "prolog"?)` + "\n" +
				`nodecheck.toml:2: checks.ib_ports.modes: "sometimes" is not a mode; use "prolog", "epilog", "health" or "manual"`,
		},
		{
			name: "mode listed twice",
			toml: "[checks.ib_ports]\nmodes = [\"health\", \"health\"]\n",
			want: `nodecheck.toml:2: checks.ib_ports.modes: "health" is listed twice`,
		},
		{
			name: "enabled check without modes",
			toml: "[checks.ib_ports]\nmodes = []\n",
			want: `nodecheck.toml:2: checks.ib_ports.modes is empty: list the modes the check runs in, such as ["health", "manual"]; to turn the check off set enabled = false`,
		},
		{
			name: "enabled check without timeout",
			toml: "[checks.ib_ports]\ntimeout = \"0s\"\n",
			want: `nodecheck.toml:2: checks.ib_ports.timeout = "0s": an enabled check needs a time limit, such as "2s"; to turn the check off set enabled = false`,
		},
		{
			name: "negative timeout",
			toml: "[checks.ib_ports]\nenabled = false\ntimeout = \"-1s\"\n",
			want: `nodecheck.toml:3: checks.ib_ports.timeout = "-1s": must not be negative`,
		},
		{
			name: "timeout above the budget of a mode the check runs in",
			toml: "[checks.ib_ports]\ntimeout = \"10s\"\n",
			want: `nodecheck.toml:2: checks.ib_ports.timeout = "10s" is longer than budget.prolog = "5s", and the check runs in prolog; lower the timeout or take "prolog" out of modes`,
		},
		{
			// Problems without a line come in the sections' order: run order.
			name: "budget lowered under a default timeout",
			toml: "[budget]\nepilog = \"1s\"\n",
			want: `nodecheck.toml: checks.gres_devices.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_count.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.pcie_link.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.fabric_manager.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.imex.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_memory_errors.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_recovery_action.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.nvlink.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_clocks.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_thermal.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.ib_ports.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.fs_mounts.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.fs_usage.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.file_tests.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.file_contents.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.memory.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.interfaces.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.job_leftovers.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_models.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes`,
		},
		{
			name: "negative budget",
			toml: "[budget]\nmanual = \"-1m\"\n",
			want: `nodecheck.toml:2: budget.manual = "-1m0s": must not be negative; "0s" means no limit`,
		},
		{
			name: "negative rate",
			toml: "[checks.ib_ports]\nmin_rate_gbps = -200\n",
			want: `nodecheck.toml:2: checks.ib_ports.min_rate_gbps = -200: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR`,
		},
		{
			name: "nan rate",
			toml: "[checks.ib_ports]\nmin_rate_gbps = nan\n",
			want: `nodecheck.toml:2: checks.ib_ports.min_rate_gbps = NaN: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR`,
		},
		{
			name: "infinite rate",
			toml: "[checks.ib_ports]\nmin_rate_gbps = inf\n",
			want: `nodecheck.toml:2: checks.ib_ports.min_rate_gbps = +Inf: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR`,
		},
		{
			name: "negative port count",
			toml: "[checks.ib_ports]\nexpected_ports = -1\n",
			want: `nodecheck.toml:2: checks.ib_ports.expected_ports = -1: give a count of 0 (no expectation) or more`,
		},
		{
			name: "bad ib selectors and link layer",
			toml: "[checks.ib_ports]\ndevices = [\"mlx5_0/one\"]\nexclude_devices = [\"\"]\nexclude_link_layers = [\"RoCE\"]\n",
			want: `nodecheck.toml:2: checks.ib_ports.devices: "mlx5_0/one" is neither a device (mlx5_0) nor a port (mlx5_0/1)` + "\n" +
				`nodecheck.toml:3: checks.ib_ports.exclude_devices: "" is neither a device (mlx5_0) nor a port (mlx5_0/1)` + "\n" +
				`nodecheck.toml:4: checks.ib_ports.exclude_link_layers: "RoCE" is not a link layer; use "InfiniBand" or "Ethernet" (as in /sys/class/infiniband/*/ports/*/link_layer)`,
		},
		{
			name: "bad log level",
			toml: "[log]\nlevel = \"warning\"\n",
			want: `nodecheck.toml:2: log.level = "warning": use "debug", "info", "warn" or "error" (did you mean "warn"?)`,
		},
		{
			name: "relative paths",
			toml: "slurm_conf = \"slurm.conf\"\n[log]\nfile = \"nodecheck.log\"\n",
			want: `nodecheck.toml:1: slurm_conf = "slurm.conf": give an absolute path: Slurm hooks run in slurmd's working directory` + "\n" +
				`nodecheck.toml:3: log.file = "nodecheck.log": give an absolute path: Slurm hooks run in slurmd's working directory`,
		},
		{
			name: "bad hostlist in a group",
			toml: "[[group]]\nnodes = \"gpu[01-04]\"\n\n[[group]]\nnodes = \"gpu[01-\"\n",
			want: `nodecheck.toml:5: group[1].nodes: ` + hostlistError("gpu[01-"),
		},
		{
			name: "group without nodes",
			toml: "[[group]]\n[group.checks.ib_ports]\nexpected_ports = 2\n",
			want: `nodecheck.toml:1: group[0]: no nodes; set nodes to the Slurm hostlist the group applies to, such as "gpu[01-32]"`,
		},
		{
			name: "group with an empty hostlist",
			toml: "[[group]]\nnodes = \" , \"\n",
			want: `nodecheck.toml:2: group[0].nodes = " , " names no node; give a Slurm hostlist such as "gpu[01-32]"`,
		},
		{
			name: "typo inside a group",
			toml: "[[group]]\nnodes = \"a\"\n[[group]]\nnodes = \"b\"\n[group.checks.ib_ports]\nexpected_port = 2\n",
			want: `nodecheck.toml:6: unknown key "group[1].checks.ib_ports.expected_port" (did you mean "expected_ports"?)`,
		},
		{
			name: "key a group cannot set",
			toml: "[[group]]\nnodes = \"a\"\n[group.budget]\nprolog = \"9s\"\n",
			want: `nodecheck.toml:3: unknown key "group[0].budget" (keys allowed here: nodes, checks)`,
		},
		{
			name: "wrong type inside a group",
			toml: "[[group]]\nnodes = \"a\"\n[group.checks.ib_ports]\ntimeout = 3\n",
			want: `nodecheck.toml:4: group[0].checks.ib_ports.timeout = 3: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as "3s"`,
		},
		{
			name: "group override that breaks a cross-field rule",
			toml: "[[group]]\nnodes = \"a\"\n[group.checks.ib_ports]\nmodes = [\"prolog\", \"bogus\"]\ntimeout = \"8s\"\n",
			want: `nodecheck.toml:4: group[0].checks.ib_ports.modes: "bogus" is not a mode; use "prolog", "epilog", "health" or "manual"` + "\n" +
				`nodecheck.toml:5: group[0].checks.ib_ports.timeout = "8s" is longer than budget.prolog = "5s", and the check runs in prolog; lower the timeout or take "prolog" out of modes`,
		},
		{
			name: "a base problem is reported once, not again for each group",
			toml: "[checks.ib_ports]\nmin_rate_gbps = -1\n[[group]]\nnodes = \"a\"\n[group.checks.ib_ports]\nexpected_ports = 2\n",
			want: `nodecheck.toml:2: checks.ib_ports.min_rate_gbps = -1: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR`,
		},
		{
			name: "group override broken only with the base's modes is found at the group's table",
			toml: "[checks.ib_ports]\nmodes = [\"health\"]\n[[group]]\nnodes = \"a\"\n[group.checks.ib_ports]\ntimeout = \"1m\"\n",
			want: `nodecheck.toml:6: group[0].checks.ib_ports.timeout = "1m0s" is longer than budget.health = "50s", and the check runs in health; lower the timeout or take "health" out of modes`,
		},
		{
			name: "error inside an inline table is found at its table's line",
			toml: "\n\nchecks = { ib_ports = { expected_ports = \"8\" } }\n",
			want: `nodecheck.toml:3: checks.ib_ports.expected_ports: want a whole number, got the string "8"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
			if err == nil {
				t.Fatalf("ParseConfig: no error, config %+v", cfg)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("ParseConfig error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *config.Config)
		want string // "" for valid
	}{
		{name: "defaults", edit: nil},
		{
			name: "path names the file",
			edit: func(c *config.Config) { c.Path = "/etc/nodecheck/nodecheck.toml"; c.Log.Level = "loud" },
			want: `/etc/nodecheck/nodecheck.toml: log.level = "loud": use "debug", "info", "warn" or "error"`,
		},
		{
			name: "no path",
			edit: func(c *config.Config) { ibSection(c).Modes = nil },
			want: `checks.ib_ports.modes is empty: list the modes the check runs in, such as ["health", "manual"]; to turn the check off set enabled = false`,
		},
		{
			name: "group built in Go with a Go duration and a typo",
			edit: func(c *config.Config) {
				c.Groups = []config.Group{{Nodes: "gpu01", Checks: map[string]map[string]any{
					"ib_ports": {"timeout": 3 * time.Second, "expected_prots": 2},
				}}}
			},
			want: `unknown key "group[0].checks.ib_ports.expected_prots" (did you mean "expected_ports"?)`,
		},
		{
			name: "group built in Go with a bad hostlist",
			edit: func(c *config.Config) { c.Groups = []config.Group{{Nodes: "gpu[3-1]"}} },
			want: `group[0].nodes: ` + hostlistError("gpu[3-1]"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := configWant(tc.edit).Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForNode(t *testing.T) {
	data, err := os.ReadFile("testdata/config/h100-partitions.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseConfig(data, "h100-partitions.toml", Schema())
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	pristine, _ := config.ParseConfig(data, "h100-partitions.toml", Schema())

	base := func(edit func(c *config.Config)) *config.Config {
		c := configWant(func(c *config.Config) {
			c.ErrorIsFailure = true
			c.Budget.Prolog = 4 * time.Second
			c.Budget.Health = 45 * time.Second
			c.Log = config.LogConfig{Level: "warn", File: "/var/log/nodecheck.jsonl"}
			ibSection(c).MinRateGbps = 200
			ibSection(c).ExcludeLinkLayers = []string{"Ethernet"}
		})
		if edit != nil {
			edit(c)
		}
		return c
	}
	tests := []struct {
		name string
		node string
		want *config.Config
	}{
		{name: "in no group", node: "cpu001", want: base(nil)},
		{name: "empty name", node: "", want: base(nil)},
		{
			name: "in the first group only",
			node: "h100-010",
			want: base(func(c *config.Config) {
				ibSection(c).MinRateGbps = 400
				ibSection(c).ExpectedPorts = 8
				ibSection(c).Timeout = 3 * time.Second
			}),
		},
		{
			name: "in two groups: the later wins for keys both set, keeps the earlier's others",
			node: "h100-060",
			want: base(func(c *config.Config) {
				ibSection(c).MinRateGbps = 400
				ibSection(c).ExpectedPorts = 4
				ibSection(c).Timeout = 3 * time.Second
				ibSection(c).ExcludeDevices = []string{"mlx5_8", "mlx5_9/1"}
			}),
		},
		{
			name: "group touching two checks",
			node: "svc01",
			want: base(func(c *config.Config) {
				gresSection(c).Modes = []string{"health", "manual"}
				ibSection(c).Enabled = false
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cfg.ForNode(tc.node)
			if err != nil {
				t.Fatalf("ForNode(%q): %v", tc.node, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForNode(%q) (-want +got):\n%s", tc.node, diff)
			}
			// The effective config is a copy: changing it must not reach the base.
			ibSection(got).ExcludeLinkLayers[0] = "changed"
			gresSection(got).Modes[0] = "changed"
			if diff := cmp.Diff(pristine, cfg); diff != "" {
				t.Errorf("ForNode changed the base config (-before +after):\n%s", diff)
			}
		})
	}
}

func TestForNodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		groups []config.Group
		want   string
	}{
		{
			name:   "bad hostlist",
			groups: []config.Group{{Nodes: "gpu[01-"}},
			want:   `config for node gpu01: group[0].nodes: ` + hostlistError("gpu[01-"),
		},
		{
			name:   "unknown key in a matching group",
			groups: []config.Group{{Nodes: "gpu01", Checks: map[string]map[string]any{"ib_ports": {"min_rate": 1}}}},
			want:   `config for node gpu01: unknown key "group[0].checks.ib_ports.min_rate" (did you mean "min_rate_gbps"?)`,
		},
		{
			name: "groups valid alone, invalid together",
			groups: []config.Group{
				{Nodes: "gpu[01-02]", Checks: map[string]map[string]any{"ib_ports": {"modes": []string{"health"}, "timeout": "40s"}}},
				{Nodes: "gpu01", Checks: map[string]map[string]any{"ib_ports": {"modes": []string{"prolog"}}}},
			},
			want: `config for node gpu01, with group[0] (nodes = "gpu[01-02]") and group[1] (nodes = "gpu01") applied: ` +
				`checks.ib_ports.timeout = "40s" is longer than budget.prolog = "5s", and the check runs in prolog; lower the timeout or take "prolog" out of modes`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default(Schema())
			c.Groups = tc.groups
			_, err := c.ForNode("gpu01")
			if diff := cmp.Diff(tc.want, fmt.Sprint(err)); diff != "" {
				t.Errorf("ForNode error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/config/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	files = append(files, exampleConfigFile, trickySyntaxFile)
	type input struct {
		name string
		cfg  *config.Config
	}
	var inputs []input
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.ParseConfig(data, f, Schema())
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", f, err)
		}
		inputs = append(inputs, input{f, cfg})
	}
	build := func() *config.Config {
		return configWant(func(c *config.Config) {
			ibSection(c).Timeout = 1500 * time.Millisecond
			ibSection(c).Modes = nil // an unusual value, but one the output must keep
			ibSection(c).Enabled = false
			c.Budget.Manual = 90 * time.Minute
			c.Groups = []config.Group{{Nodes: "gpu[01-02]", Checks: map[string]map[string]any{
				"ib_ports": {"timeout": 3 * time.Second, "devices": []string{"mlx5_0"}, "expected_ports": 2},
			}}}
		})
	}
	inputs = append(inputs, input{"built in Go", build()})

	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := in.cfg.Encode(&buf); err != nil {
				t.Fatalf("Encode: %v", err)
			}
			back, err := config.ParseConfig(buf.Bytes(), "encoded.toml", Schema())
			if err != nil {
				t.Fatalf("ParseConfig(Encode output): %v\n%s", err, buf.String())
			}
			// Values from Go (a time.Duration, []string, int) come back as TOML values.
			want := in.cfg
			if in.name == "built in Go" {
				want = build()
				want.Groups[0].Checks["ib_ports"] = map[string]any{"timeout": "3s", "devices": []any{"mlx5_0"}, "expected_ports": int64(2)}
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s\nencoded:\n%s", diff, buf.String())
			}
			if strings.Contains(buf.String(), "timeout = 2000000000") || !regexp.MustCompile(`(?m)^timeout = "[0-9.]+m?s"$`).MatchString(buf.String()) {
				t.Errorf("durations are not written as strings:\n%s", buf.String())
			}
		})
	}
}

// TestEncodeDefault pins what `nodecheck config show` prints with no file, against a golden
// (go test ./checks -update rewrites it; review the diff).
func TestEncodeDefault(t *testing.T) {
	var buf bytes.Buffer
	if err := config.Default(Schema()).Encode(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "config", "default.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("Encode(config.Default(Schema())) (-want +got):\n%s", diff)
	}
}

// TestExampleConfig keeps the shipped example honest: it loads, it is the defaults, it names
// every key, and its commented-out groups work once uncommented.
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile(exampleConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseConfig(data, exampleConfigFile, Schema())
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if diff := cmp.Diff(config.Default(Schema()), cfg); diff != "" {
		t.Errorf("example config is not the defaults (-want +got):\n%s", diff)
	}

	// Every key `config show` writes (the built-in config, every key of every table) is set
	// in the example, in its table.
	var shown bytes.Buffer
	if err := config.Default(Schema()).Encode(&shown); err != nil {
		t.Fatal(err)
	}
	set := tomlKeysByTable(string(data))
	for _, k := range tomlKeysByTable(shown.String()) {
		if !slices.Contains(set, k) {
			t.Errorf("example config does not set %s", k)
		}
	}

	// Uncomment the examples: lines where "#" is followed directly by text.
	example := regexp.MustCompile(`(?m)^#(\S)`).ReplaceAll(data, []byte("$1"))
	cfg, err = config.ParseConfig(example, exampleConfigFile+" (examples uncommented)", Schema())
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if len(cfg.Groups) == 0 {
		t.Fatal("example config has no commented-out groups")
	}
	eff, err := cfg.ForNode("gpu050")
	if err != nil {
		t.Fatalf("ForNode: %v", err)
	}
	if got := ibSection(eff).ExpectedPorts; got != 4 {
		t.Errorf("gpu050 expected_ports = %d, want 4 (the later group wins)", got)
	}
	if got := ibSection(eff).MinRateGbps; got != 400 {
		t.Errorf("gpu050 min_rate_gbps = %v, want 400 (from the earlier group)", got)
	}
}

// FuzzParseConfig feeds ParseConfig arbitrary files. Beyond not panicking: every error line
// names the file; an accepted config encodes, reads back equal, and gives a config for a node.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/config/*.toml")
	for _, p := range append(files, exampleConfigFile, trickySyntaxFile) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"[checks.ib_ports]\nmin_rate_gpbs = 200\n",
		"[[group]]\nnodes = \"gpu[01-\"\n",
		"[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.ib_ports]\ntimeout = \"1s\"\n[[group]]\n",
		"checks = { ib_ports = { timeout = 5 } }\n",
		"a = \"\"\"\n\\\n\"\"\"\n'b'.\"c\" = [{d = 1}]\n",
		"[log]\nlevel = \"warning\"\n",
		"A0=0b\n00000",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = config.PeekFailClosed(data)
		cfg, err := config.ParseConfig(data, "f.toml", Schema())
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.toml:") && !strings.HasPrefix(line, "f.toml: ") {
					t.Fatalf("error line %q does not name the file; whole error:\n%v", line, err)
				}
			}
			return
		}
		var buf bytes.Buffer
		if err := cfg.Encode(&buf); err != nil {
			t.Fatalf("Encode: %v", err)
		}
		back, err := config.ParseConfig(buf.Bytes(), "encoded.toml", Schema())
		if err != nil {
			t.Fatalf("ParseConfig(Encode output): %v\n%s", err, buf.String())
		}
		if diff := cmp.Diff(cfg, back); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
		for _, g := range cfg.Groups {
			if h, err := slurm.ParseHostlist(g.Nodes); err == nil && h.Len() > 0 {
				var first string
				h.Each(func(name string) bool { first = name; return false }) // a range may hold millions
				if _, err := cfg.ForNode(first); err != nil {
					// Groups are valid alone; only stacked ones may fail, and then with a reason.
					if !strings.Contains(err.Error(), " applied: ") {
						t.Fatalf("ForNode: %v", err)
					}
				}
				break
			}
		}
	})
}

// tomlKeysByTable lists the keys set in a TOML file of plain tables and "key = value" lines,
// each as TABLE.KEY ("checks.ib_ports.min_rate_gbps"); commented lines are left out.
func tomlKeysByTable(src string) []string {
	var out []string
	table := ""
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[]")
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			if k, _, ok := strings.Cut(line, "="); ok {
				k = strings.TrimSpace(k)
				if table != "" {
					k = table + "." + k
				}
				out = append(out, k)
			}
		}
	}
	return out
}

// sectionCase is a case of a check's own config test: toml is parsed as nodecheck.toml and,
// with node, made the effective config of that node; want picks values out of the result to
// compare with wantVal, or wantErr is the whole error.
type sectionCase struct {
	name    string
	toml    string
	node    string
	want    func(c *config.Config) any
	wantVal any
	wantErr string
}

func runSectionCases(t *testing.T, tests []sectionCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseSectionCase(t, tc.toml, tc.node, tc.wantErr)
			if cfg == nil {
				return
			}
			if diff := cmp.Diff(tc.wantVal, tc.want(cfg)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// parseSectionCase parses a section test's TOML as nodecheck.toml and gives the settings
// of node (the base ones when node is ""). A case that expects an error compares it and
// gets nil: the caller stops there.
func parseSectionCase(t *testing.T, toml, node, wantErr string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(toml), "nodecheck.toml", Schema())
	if wantErr != "" {
		got := ""
		if err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(wantErr, got); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if node != "" {
		if cfg, err = cfg.ForNode(node); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// BenchmarkParseConfig is the cost of reading the shipped example (every key set) with
// nodecheck's sections: what every run pays before its first check.
func BenchmarkParseConfig(b *testing.B) {
	data, err := os.ReadFile(exampleConfigFile)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.ParseConfig(data, exampleConfigFile, Schema()); err != nil {
			b.Fatal(err)
		}
	}
}
