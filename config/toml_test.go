package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// tomlExampleFile is the commented example shipped for admins (repo-root testdata).
const tomlExampleFile = "../testdata/nodecheck.toml"

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// tomlHostlistError is ParseHostlist's error for expr, which hostlist_test.go pins down.
func tomlHostlistError(expr string) string {
	_, err := slurm.ParseHostlist(expr)
	if err == nil {
		panic("hostlist " + expr + " is valid")
	}
	return err.Error()
}

// tomlWant returns Default() changed by edit, for the expected side of a comparison.
func tomlWant(edit func(c *Config)) *Config {
	c := Default()
	if edit != nil {
		edit(c)
	}
	return c
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want *Config
	}{
		{
			name: "empty file is the defaults",
			toml: "",
			want: Default(),
		},
		{
			name: "comments only",
			toml: "# nothing set\n\n# still nothing\n",
			want: Default(),
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
			want: tomlWant(func(c *Config) {
				c.FailClosed = true
				c.Budget.Prolog = 3 * time.Second
				c.Checks.IBPorts.MinRateGbps = 400
				c.Checks.IBPorts.Modes = []string{"health"}
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
			want: tomlWant(func(c *Config) {
				c.Budget = Budget{Prolog: 3500 * time.Millisecond, Epilog: 90 * time.Second, Health: 30 * time.Second, Manual: time.Hour}
			}),
		},
		{
			name: "one check's modes do not leak into another's",
			toml: "[checks.ib_ports]\nmodes = [\"health\"]\n",
			want: tomlWant(func(c *Config) { c.Checks.IBPorts.Modes = []string{"health"} }),
		},
		{
			name: "empty log level means the default",
			toml: "[log]\nlevel = \"\"\n",
			want: Default(),
		},
		{
			name: "a disabled check needs no timeout or modes",
			toml: "[checks.gres_devices]\nenabled = false\ntimeout = \"0s\"\nmodes = []\n",
			want: tomlWant(func(c *Config) {
				c.Checks.GresDevices.CheckCommon = CheckCommon{Enabled: false, Modes: nil} // [] is stored as nil
			}),
		},
		{
			name: "a timeout may exceed the budget of a mode the check does not run in",
			toml: "[checks.ib_ports]\ntimeout = \"40s\"\nmodes = [\"health\", \"manual\"]\n",
			want: tomlWant(func(c *Config) {
				c.Checks.IBPorts.Timeout = 40 * time.Second
				c.Checks.IBPorts.Modes = []string{"health", "manual"}
			}),
		},
		{
			name: "a zero budget is no limit",
			toml: "[budget]\nprolog = \"0s\"\n[checks.ib_ports]\ntimeout = \"1m\"\nmodes = [\"prolog\", \"manual\"]\n",
			want: tomlWant(func(c *Config) {
				c.Budget.Prolog = 0
				c.Checks.IBPorts.Timeout = time.Minute
				c.Checks.IBPorts.Modes = []string{"prolog", "manual"}
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
			want: tomlWant(func(c *Config) {
				c.Groups = []Group{{Nodes: "gpu[01-32]", Checks: map[string]map[string]any{
					"ib_ports": {"min_rate_gbps": int64(400), "timeout": "3s"},
				}}}
			}),
		},
		{
			name: "a group may set nothing",
			toml: "[[group]]\nnodes = \"gpu01\"\n",
			want: tomlWant(func(c *Config) { c.Groups = []Group{{Nodes: "gpu01"}} }),
		},
		{
			name: "ib selectors and link layers in any case",
			toml: "[checks.ib_ports]\ndevices = [\"mlx5_0\", \"mlx5_1/1\"]\nexclude_link_layers = [\"ethernet\"]\n",
			want: tomlWant(func(c *Config) {
				c.Checks.IBPorts.Devices = []string{"mlx5_0", "mlx5_1/1"}
				c.Checks.IBPorts.ExcludeLinkLayers = []string{"ethernet"}
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.toml), "nodecheck.toml")
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
			name: "budget lowered under a default timeout",
			toml: "[budget]\nepilog = \"1s\"\n",
			want: `nodecheck.toml: checks.gres_devices.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_count.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.pcie_link.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.fabric_manager.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.ib_ports.timeout = "2s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_models.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.gpu_memory_errors.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.nvlink.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes` + "\n" +
				`nodecheck.toml: checks.job_leftovers.timeout = "3s" is longer than budget.epilog = "1s", and the check runs in epilog; lower the timeout or take "epilog" out of modes`,
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
			want: `nodecheck.toml:5: group[1].nodes: ` + tomlHostlistError("gpu[01-"),
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
			cfg, err := ParseConfig([]byte(tc.toml), "nodecheck.toml")
			if err == nil {
				t.Fatalf("ParseConfig: no error, config %+v", cfg)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("ParseConfig error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseConfigErrorName checks that the name given to ParseConfig starts each line.
func TestParseConfigErrorName(t *testing.T) {
	_, err := ParseConfig([]byte("x = 1\ny = 2\n"), "/etc/nodecheck/nodecheck.toml")
	want := "/etc/nodecheck/nodecheck.toml:1: unknown key \"x\" (keys allowed here: fail_closed, stop_on_first_failure, error_is_failure, slurm_conf, prom_file, budget, log, drain, state, checks, group)\n" +
		"/etc/nodecheck/nodecheck.toml:2: unknown key \"y\" (keys allowed here: fail_closed, stop_on_first_failure, error_is_failure, slurm_conf, prom_file, budget, log, drain, state, checks, group)"
	if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestParseConfigManyErrorsAreCut(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "bogus%d = 1\n", i)
	}
	_, err := ParseConfig([]byte(b.String()), "n.toml")
	lines := strings.Split(fmt.Sprint(err), "\n")
	if got, want := len(lines), tomlMaxErrors+1; got != want {
		t.Fatalf("got %d lines of error, want %d", got, want)
	}
	if got, want := lines[len(lines)-1], "n.toml: and 10 more problems"; got != want {
		t.Errorf("last line = %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" for valid
	}{
		{name: "defaults", edit: nil},
		{
			name: "path names the file",
			edit: func(c *Config) { c.Path = "/etc/nodecheck/nodecheck.toml"; c.Log.Level = "loud" },
			want: `/etc/nodecheck/nodecheck.toml: log.level = "loud": use "debug", "info", "warn" or "error"`,
		},
		{
			name: "no path",
			edit: func(c *Config) { c.Checks.IBPorts.Modes = nil },
			want: `checks.ib_ports.modes is empty: list the modes the check runs in, such as ["health", "manual"]; to turn the check off set enabled = false`,
		},
		{
			name: "group built in Go with a Go duration and a typo",
			edit: func(c *Config) {
				c.Groups = []Group{{Nodes: "gpu01", Checks: map[string]map[string]any{
					"ib_ports": {"timeout": 3 * time.Second, "expected_prots": 2},
				}}}
			},
			want: `unknown key "group[0].checks.ib_ports.expected_prots" (did you mean "expected_ports"?)`,
		},
		{
			name: "group built in Go with a bad hostlist",
			edit: func(c *Config) { c.Groups = []Group{{Nodes: "gpu[3-1]"}} },
			want: `group[0].nodes: ` + tomlHostlistError("gpu[3-1]"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tomlWant(tc.edit).Validate()
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
	data, err := os.ReadFile("testdata/toml/h100-partitions.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(data, "h100-partitions.toml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	pristine, _ := ParseConfig(data, "h100-partitions.toml")

	base := func(edit func(c *Config)) *Config {
		c := tomlWant(func(c *Config) {
			c.ErrorIsFailure = true
			c.Budget.Prolog = 4 * time.Second
			c.Budget.Health = 45 * time.Second
			c.Log = LogConfig{Level: "warn", File: "/var/log/nodecheck.jsonl"}
			c.Checks.IBPorts.MinRateGbps = 200
			c.Checks.IBPorts.ExcludeLinkLayers = []string{"Ethernet"}
		})
		if edit != nil {
			edit(c)
		}
		return c
	}
	tests := []struct {
		name string
		node string
		want *Config
	}{
		{name: "in no group", node: "cpu001", want: base(nil)},
		{name: "empty name", node: "", want: base(nil)},
		{
			name: "in the first group only",
			node: "h100-010",
			want: base(func(c *Config) {
				c.Checks.IBPorts.MinRateGbps = 400
				c.Checks.IBPorts.ExpectedPorts = 8
				c.Checks.IBPorts.Timeout = 3 * time.Second
			}),
		},
		{
			name: "in two groups: the later wins for keys both set, keeps the earlier's others",
			node: "h100-060",
			want: base(func(c *Config) {
				c.Checks.IBPorts.MinRateGbps = 400
				c.Checks.IBPorts.ExpectedPorts = 4
				c.Checks.IBPorts.Timeout = 3 * time.Second
				c.Checks.IBPorts.ExcludeDevices = []string{"mlx5_8", "mlx5_9/1"}
			}),
		},
		{
			name: "group touching two checks",
			node: "svc01",
			want: base(func(c *Config) {
				c.Checks.GresDevices.Modes = []string{"health", "manual"}
				c.Checks.IBPorts.Enabled = false
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
			got.Checks.IBPorts.ExcludeLinkLayers[0] = "changed"
			got.Checks.GresDevices.Modes[0] = "changed"
			if diff := cmp.Diff(pristine, cfg); diff != "" {
				t.Errorf("ForNode changed the base config (-before +after):\n%s", diff)
			}
		})
	}
}

func TestForNodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		groups []Group
		want   string
	}{
		{
			name:   "bad hostlist",
			groups: []Group{{Nodes: "gpu[01-"}},
			want:   `config for node gpu01: group[0].nodes: ` + tomlHostlistError("gpu[01-"),
		},
		{
			name:   "unknown key in a matching group",
			groups: []Group{{Nodes: "gpu01", Checks: map[string]map[string]any{"ib_ports": {"min_rate": 1}}}},
			want:   `config for node gpu01: unknown key "group[0].checks.ib_ports.min_rate" (did you mean "min_rate_gbps"?)`,
		},
		{
			name: "groups valid alone, invalid together",
			groups: []Group{
				{Nodes: "gpu[01-02]", Checks: map[string]map[string]any{"ib_ports": {"modes": []string{"health"}, "timeout": "40s"}}},
				{Nodes: "gpu01", Checks: map[string]map[string]any{"ib_ports": {"modes": []string{"prolog"}}}},
			},
			want: `config for node gpu01, with group[0] (nodes = "gpu[01-02]") and group[1] (nodes = "gpu01") applied: ` +
				`checks.ib_ports.timeout = "40s" is longer than budget.prolog = "5s", and the check runs in prolog; lower the timeout or take "prolog" out of modes`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Groups = tc.groups
			_, err := c.ForNode("gpu01")
			if diff := cmp.Diff(tc.want, fmt.Sprint(err)); diff != "" {
				t.Errorf("ForNode error (-want +got):\n%s", diff)
			}
		})
	}
}

// tomlFakeFileInfo is an os.FileInfo with a chosen mode and owner, so permission tests run
// the same as root and as anyone else.
type tomlFakeFileInfo struct {
	mode fs.FileMode
	sys  any
}

func (f tomlFakeFileInfo) Name() string       { return "nodecheck.toml" }
func (f tomlFakeFileInfo) Size() int64        { return 0 }
func (f tomlFakeFileInfo) Mode() fs.FileMode  { return f.mode }
func (f tomlFakeFileInfo) ModTime() time.Time { return time.Time{} }
func (f tomlFakeFileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f tomlFakeFileInfo) Sys() any           { return f.sys }

func TestCheckConfigFilePerms(t *testing.T) {
	const path = "/etc/nodecheck/nodecheck.toml"
	owner := func(uid uint32) *syscall.Stat_t { return &syscall.Stat_t{Uid: uid} }
	tests := []struct {
		name string
		path string
		fi   tomlFakeFileInfo
		euid int
		want string // "" for allowed
	}{
		{name: "root, 0644, owned by root", fi: tomlFakeFileInfo{0o644, owner(0)}},
		{name: "root, 0600, owned by root", fi: tomlFakeFileInfo{0o600, owner(0)}},
		{name: "root, 0444, owned by root", fi: tomlFakeFileInfo{0o444, owner(0)}},
		{name: "root, 0640, owned by root with another group", fi: tomlFakeFileInfo{0o640, &syscall.Stat_t{Uid: 0, Gid: 100}}},
		{
			name: "root, 0664",
			fi:   tomlFakeFileInfo{0o664, owner(0)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: mode -rw-rw-r-- lets group or others write it, and nodecheck runs as root; run: chmod go-w /etc/nodecheck/nodecheck.toml",
		},
		{
			name: "root, 0666",
			fi:   tomlFakeFileInfo{0o666, owner(0)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: mode -rw-rw-rw- lets group or others write it, and nodecheck runs as root; run: chmod go-w /etc/nodecheck/nodecheck.toml",
		},
		{
			name: "root, 0646: others only",
			fi:   tomlFakeFileInfo{0o646, owner(0)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: mode -rw-r--rw- lets group or others write it, and nodecheck runs as root; run: chmod go-w /etc/nodecheck/nodecheck.toml",
		},
		{
			name: "root, owned by a user",
			fi:   tomlFakeFileInfo{0o644, owner(1000)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: owned by uid 1000, not root, and nodecheck runs as root; run: chown root /etc/nodecheck/nodecheck.toml",
		},
		{
			name: "root, owned by a user and writable by all",
			fi:   tomlFakeFileInfo{0o666, owner(1000)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: owned by uid 1000, not root and mode -rw-rw-rw- lets group or others write it, and nodecheck runs as root; run: chown root /etc/nodecheck/nodecheck.toml && chmod go-w /etc/nodecheck/nodecheck.toml",
		},
		{
			name: "root, path that needs quoting",
			path: "/etc/node check/it's.toml",
			fi:   tomlFakeFileInfo{0o664, owner(0)},
			want: `check nodecheck config /etc/node check/it's.toml: mode -rw-rw-r-- lets group or others write it, and nodecheck runs as root; run: chmod go-w '/etc/node check/it'\''s.toml'`,
		},
		{
			name: "root, symlink",
			path: "/nonexistent/nodecheck.toml",
			fi:   tomlFakeFileInfo{fs.ModeSymlink | 0o777, owner(0)},
			want: "check nodecheck config /nonexistent/nodecheck.toml: it is a symlink, which nodecheck does not follow as root (the link and its target could be changed separately); give --config the link's target, or replace the link with the file",
		},
		{
			name: "root, fifo",
			fi:   tomlFakeFileInfo{fs.ModeNamedPipe | 0o600, owner(0)},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: mode prw------- is not a regular file; as root nodecheck reads its config only from a plain file",
		},
		{
			name: "root, owner unknown",
			fi:   tomlFakeFileInfo{0o644, nil},
			want: "check nodecheck config /etc/nodecheck/nodecheck.toml: the file's owner is unknown (<nil>); as root nodecheck reads only a config owned by root",
		},
		{name: "user, 0666, own file", fi: tomlFakeFileInfo{0o666, owner(1000)}, euid: 1000},
		{name: "user, 0664, root's file", fi: tomlFakeFileInfo{0o664, owner(0)}, euid: 1000},
		{name: "user, symlink", fi: tomlFakeFileInfo{fs.ModeSymlink | 0o777, owner(1000)}, euid: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.path != "" {
				p = tc.path
			}
			err := CheckConfigFilePerms(p, tc.fi, tc.euid)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckConfigFilePerms (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadConfig reads real files. The expected result depends on who runs the test: as root
// the permission rules apply, as anyone else they do not; both are checked in
// TestCheckConfigFilePerms with explicit euids.
func TestLoadConfig(t *testing.T) {
	root := os.Geteuid() == 0
	dir := t.TempDir()
	good := []byte("[checks.ib_ports]\nmin_rate_gbps = 200\n")
	write := func(name string, data []byte, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // the umask does not apply to chmod
			t.Fatal(err)
		}
		return p
	}
	p644 := write("0644.toml", good, 0o644)
	p664 := write("0664.toml", good, 0o664)
	p666 := write("0666.toml", good, 0o666)
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink("0644.toml", link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := write("big.toml", bytes.Repeat([]byte("# padding\n"), maxConfigSize/10+1), 0o644)
	bad := write("bad.toml", []byte("[checks.ib_ports]\nmin_rate_gpbs = 200\n"), 0o644)

	tests := []struct {
		name       string
		path       string
		wantAsRoot string // error as root; "" for success
		wantAsUser string // error as anyone else
	}{
		{name: "0644", path: p644},
		{
			name:       "0664",
			path:       p664,
			wantAsRoot: "check nodecheck config " + p664 + ": mode -rw-rw-r-- lets group or others write it, and nodecheck runs as root; run: chmod go-w " + p664,
		},
		{
			name:       "0666",
			path:       p666,
			wantAsRoot: "check nodecheck config " + p666 + ": mode -rw-rw-rw- lets group or others write it, and nodecheck runs as root; run: chmod go-w " + p666,
		},
		{
			name:       "symlink",
			path:       link,
			wantAsRoot: "check nodecheck config " + link + ": it is a symlink, which nodecheck does not follow as root (the link and its target could be changed separately); give --config " + p644 + ", or replace the link with the file",
		},
		{
			name:       "directory",
			path:       dir,
			wantAsRoot: "read nodecheck config " + dir + ": it is a directory; give the path of the file",
			wantAsUser: "read nodecheck config " + dir + ": it is a directory; give the path of the file",
		},
		{
			name:       "too big",
			path:       big,
			wantAsRoot: "read nodecheck config " + big + ": larger than 1048576 bytes; is it the right file?",
			wantAsUser: "read nodecheck config " + big + ": larger than 1048576 bytes; is it the right file?",
		},
		{
			name:       "invalid content names the path and line",
			path:       bad,
			wantAsRoot: bad + `:2: unknown key "checks.ib_ports.min_rate_gpbs" (did you mean "min_rate_gbps"?)`,
			wantAsUser: bad + `:2: unknown key "checks.ib_ports.min_rate_gpbs" (did you mean "min_rate_gbps"?)`,
		},
	}
	if root {
		// As anyone else, opening a FIFO waits for a writer; as root nodecheck must not wait.
		tests = append(tests, struct{ name, path, wantAsRoot, wantAsUser string }{
			name:       "fifo",
			path:       fifo,
			wantAsRoot: "check nodecheck config " + fifo + ": mode prw------- is not a regular file; as root nodecheck reads its config only from a plain file",
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.wantAsUser
			if root {
				want = tc.wantAsRoot
			}
			cfg, err := LoadConfig(tc.path)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("LoadConfig(%s) as euid %d (-want +got):\n%s", tc.path, os.Geteuid(), diff)
			}
			if err == nil {
				if cfg.Path != tc.path || cfg.Checks.IBPorts.MinRateGbps != 200 {
					t.Errorf("LoadConfig(%s) = Path %q, min_rate_gbps %v; want the path and 200", tc.path, cfg.Path, cfg.Checks.IBPorts.MinRateGbps)
				}
			}
		})
	}

	t.Run("missing file wraps fs.ErrNotExist", func(t *testing.T) {
		_, err := LoadConfig(filepath.Join(dir, "absent.toml"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("LoadConfig(absent) = %v, want an error wrapping fs.ErrNotExist", err)
		}
	})
	t.Run("owned by another user", func(t *testing.T) {
		if !root {
			t.Skip("only root can give a file away; CheckConfigFilePerms covers the rule")
		}
		p := write("theirs.toml", good, 0o644)
		if err := os.Chown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p)
		want := "check nodecheck config " + p + ": owned by uid 1000, not root, and nodecheck runs as root; run: chown root " + p
		if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
			t.Errorf("LoadConfig (-want +got):\n%s", diff)
		}
	})
}

func TestEncodeRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/toml/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	files = append(files, tomlExampleFile)
	type input struct {
		name string
		cfg  *Config
	}
	var inputs []input
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(data, f)
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", f, err)
		}
		inputs = append(inputs, input{f, cfg})
	}
	built := tomlWant(func(c *Config) {
		c.Checks.IBPorts.Timeout = 1500 * time.Millisecond
		c.Checks.IBPorts.Modes = nil // an unusual value, but one the output must keep
		c.Checks.IBPorts.Enabled = false
		c.Budget.Manual = 90 * time.Minute
		c.Groups = []Group{{Nodes: "gpu[01-02]", Checks: map[string]map[string]any{
			"ib_ports": {"timeout": 3 * time.Second, "devices": []string{"mlx5_0"}, "expected_ports": 2},
		}}}
	})
	inputs = append(inputs, input{"built in Go", built})

	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := in.cfg.Encode(&buf); err != nil {
				t.Fatalf("Encode: %v", err)
			}
			back, err := ParseConfig(buf.Bytes(), "encoded.toml")
			if err != nil {
				t.Fatalf("ParseConfig(Encode output): %v\n%s", err, buf.String())
			}
			// Values from Go (a time.Duration, []string, int) come back as TOML values.
			want := in.cfg
			if in.name == "built in Go" {
				w := tomlClone(*built)
				want = &w
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
// (go test ./config -update rewrites it; review the diff).
func TestEncodeDefault(t *testing.T) {
	var buf bytes.Buffer
	if err := Default().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "toml", "default.golden")
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
		t.Errorf("Encode(Default()) (-want +got):\n%s", diff)
	}
}

// TestExampleConfig keeps the shipped example honest: it loads, it is the defaults, it names
// every key, and its commented-out groups work once uncommented.
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile(tomlExampleFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(data, tomlExampleFile)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if diff := cmp.Diff(Default(), cfg); diff != "" {
		t.Errorf("example config is not the defaults (-want +got):\n%s", diff)
	}

	lines := scanTOMLKeyLines(string(data))
	var walk func(typ reflect.Type, path []string)
	walk = func(typ reflect.Type, path []string) {
		for _, f := range tomlFieldsOf(typ) {
			p := append(append([]string(nil), path...), f.key)
			if f.key == "group" {
				continue // commented out: checked below
			}
			if _, ok := lines[strings.Join(p, tomlKeySep)]; !ok {
				t.Errorf("example config does not set %s", tomlKeyString(p))
			}
			if f.typ.Kind() == reflect.Struct && f.typ != tomlDurationType {
				walk(f.typ, p)
			}
		}
	}
	walk(tomlConfigType, nil)

	// Uncomment the examples: lines where "#" is followed directly by text.
	example := regexp.MustCompile(`(?m)^#(\S)`).ReplaceAll(data, []byte("$1"))
	cfg, err = ParseConfig(example, tomlExampleFile+" (examples uncommented)")
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
	if got := eff.Checks.IBPorts.ExpectedPorts; got != 4 {
		t.Errorf("gpu050 expected_ports = %d, want 4 (the later group wins)", got)
	}
	if got := eff.Checks.IBPorts.MinRateGbps; got != 400 {
		t.Errorf("gpu050 min_rate_gbps = %v, want 400 (from the earlier group)", got)
	}
}

func TestPeekFailClosed(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{name: "nil", data: "", want: false},
		{name: "valid, true", data: "fail_closed = true\n", want: true},
		{name: "valid, false", data: "fail_closed = false\n", want: false},
		{name: "valid, absent", data: "[log]\nlevel = \"info\"\n", want: false},
		{name: "valid TOML, invalid config", data: "fail_closed = true\nbogus = 1\n[checks.ib_ports]\ntimeout = 5\n", want: true},
		{name: "not a boolean", data: "fail_closed = \"true\"\n", want: false},
		{name: "in a table is not the key", data: "[log]\nfail_closed = true\n", want: false},
		{name: "broken TOML, key before the first table", data: "# c\n fail_closed = true # yes\n[checks\nmin_rate_gbps = = 1\n", want: true},
		{name: "broken TOML, key after the first table", data: "[checks\nfail_closed = true\n", want: false},
		{name: "broken TOML, false", data: "fail_closed = false\n[[[\n", want: false},
		{name: "broken TOML, no key", data: "[[[\n", want: false},
		{name: "binary junk", data: "\x00\xff=\n", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PeekFailClosed([]byte(tc.data)); got != tc.want {
				t.Errorf("PeekFailClosed(%q) = %v, want %v", tc.data, got, tc.want)
			}
		})
	}
}

func TestScanTOMLKeyLines(t *testing.T) {
	data, err := os.ReadFile("testdata/toml/tricky-syntax.toml")
	if err != nil {
		t.Fatal(err)
	}
	lines := scanTOMLKeyLines(string(data))
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"stop_on_first_failure"}, 3},
		{[]string{"slurm_conf"}, 4},
		{[]string{"log"}, 5},
		{[]string{"log", "level"}, 5},
		{[]string{"budget", "epilog"}, 6},
		{[]string{"checks", "gres_devices"}, 8},
		{[]string{"checks", "gres_devices", "modes"}, 9},
		{[]string{"checks", "gres_devices", "modes", "[1]"}, 9}, // inside a value: the key's line
		{[]string{"checks", "ib_ports", "devices"}, 14},
		{[]string{"group"}, 16},
		{[]string{"group", "[0]", "nodes"}, 17},
		{[]string{"group", "[0]", "checks", "ib_ports", "expected_ports"}, 19},
		{[]string{"group", "[1]", "nodes"}, 16}, // no such element: the nearest known
		{[]string{"nothing"}, 0},
	}
	for _, tc := range tests {
		if got := lines.lineOf(tc.path); got != tc.want {
			t.Errorf("lineOf(%s) = %d, want %d", tomlKeyString(tc.path), got, tc.want)
		}
	}

	// A key after multi-line strings and arrays is still on its own line.
	src := "a = \"\"\"\nx = 1\n\"\"\"\nb = '''\n'''\nc = [\n'[',\n\"]\\\"\",\n]\n[[t]]\n[[t]]\n[t.u]\nd = 1\n"
	got := scanTOMLKeyLines(src)
	want := tomlKeyLines{
		"a": 1, "b": 4, "c": 6,
		"t": 10, "t\x00[0]": 10, "t\x00[1]": 11, "t\x00[1]\x00u": 12, "t\x00[1]\x00u\x00d": 13,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scanTOMLKeyLines (-want +got):\n%s", diff)
	}
}

// TestDidYouMean: toml's hint wraps text.DidYouMean, whose own tests hold the algorithm.
func TestDidYouMean(t *testing.T) {
	keys := []string{"enabled", "timeout", "modes"}
	tests := []struct{ in, want string }{
		{"timout", ` (did you mean "timeout"?)`},
		{"timeout", ""},
		{"colour", ""},
	}
	for _, tc := range tests {
		if got := tomlDidYouMean(tc.in, keys); got != tc.want {
			t.Errorf("tomlDidYouMean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseConfig feeds ParseConfig arbitrary files. Beyond not panicking: every error line
// names the file; an accepted config encodes, reads back equal, and gives a config for a node.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/toml/*.toml")
	for _, p := range append(files, tomlExampleFile) {
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
		_ = PeekFailClosed(data)
		cfg, err := ParseConfig(data, "f.toml")
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
		back, err := ParseConfig(buf.Bytes(), "encoded.toml")
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

// FuzzScanTOMLKeyLines checks that the key-line scanner survives any input, valid TOML or not,
// and only reports lines that exist.
func FuzzScanTOMLKeyLines(f *testing.F) {
	f.Add("a = \"\"\"\nx\n\"\"\"\n[[t]]\n[t.u]\nd = 1\n")
	f.Add("\"k\\u00e9\" = 1\n'k'='\n")
	f.Add("[a.\"b\nc = [\"\\")
	f.Fuzz(func(t *testing.T, src string) {
		n := strings.Count(src, "\n") + 1
		for k, line := range scanTOMLKeyLines(src) {
			if line < 1 || line > n {
				t.Fatalf("key %q at line %d, but the input has %d lines", k, line, n)
			}
		}
	})
}

func ExampleParseConfig() {
	_, err := ParseConfig([]byte(`
[checks.ib_ports]
min_rate_gpbs = 200
timeout = 2
`), "nodecheck.toml")
	fmt.Println(err)
	// Output:
	// nodecheck.toml:3: unknown key "checks.ib_ports.min_rate_gpbs" (did you mean "min_rate_gbps"?)
	// nodecheck.toml:4: checks.ib_ports.timeout = 2: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as "2s"
}

func ExampleConfig_ForNode() {
	cfg, err := ParseConfig([]byte(`
[checks.ib_ports]
min_rate_gbps = 200

[[group]]
nodes = "gpu[01-32]"
[group.checks.ib_ports]
min_rate_gbps = 400
expected_ports = 8

[[group]]
nodes = "gpu[25-32]"
[group.checks.ib_ports]
expected_ports = 4
`), "nodecheck.toml")
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
		ib := eff.Checks.IBPorts
		fmt.Printf("%s: min_rate_gbps=%v expected_ports=%d timeout=%v\n", node, ib.MinRateGbps, ib.ExpectedPorts, ib.Timeout)
	}
	// Output:
	// login1: min_rate_gbps=200 expected_ports=0 timeout=2s
	// gpu07: min_rate_gbps=400 expected_ports=8 timeout=2s
	// gpu30: min_rate_gbps=400 expected_ports=4 timeout=2s
}

func ExampleConfig_Encode() {
	cfg := Default()
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

func ExamplePeekFailClosed() {
	broken := []byte("fail_closed = true\n\n[checks.ib_ports\nmin_rate_gbps = 200\n")
	_, err := ParseConfig(broken, "nodecheck.toml")
	fmt.Println(err != nil, PeekFailClosed(broken))
	// Output: true true
}
