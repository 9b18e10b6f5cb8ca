package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPromFileValidation(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // "": valid
	}{
		{name: "empty", toml: `prom_file = ""`},
		{name: "absolute .prom", toml: `prom_file = "/var/lib/node_exporter/textfile_collector/nodecheck.prom"`},
		{name: "relative", toml: `prom_file = "nodecheck.prom"`,
			want: `nodecheck.toml:1: prom_file = "nodecheck.prom": give an absolute path: Slurm hooks run in slurmd's working directory`},
		{name: "not .prom", toml: `prom_file = "/var/lib/node_exporter/nodecheck.txt"`,
			want: `nodecheck.toml:1: prom_file = "/var/lib/node_exporter/nodecheck.txt": give a file name ending in .prom, such as "/var/lib/node_exporter/textfile_collector/nodecheck.prom": node_exporter's textfile collector reads only those`},
		{name: "directory named .prom", toml: `prom_file = "/var/lib/node_exporter/.prom"`,
			want: `nodecheck.toml:1: prom_file = "/var/lib/node_exporter/.prom": give a file name ending in .prom, such as "/var/lib/node_exporter/textfile_collector/nodecheck.prom": node_exporter's textfile collector reads only those`},
		{name: "not a string", toml: `prom_file = 1`,
			want: `nodecheck.toml:1: prom_file: want a string, got the integer 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.toml+"\n"), "nodecheck.toml", testSchema())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeekPromFile(t *testing.T) {
	const p = "/var/lib/node_exporter/textfile_collector/nodecheck.prom"
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "nil", data: "", want: ""},
		{name: "valid", data: `prom_file = "` + p + `"` + "\n", want: p},
		{name: "valid TOML, invalid config", data: `prom_file = "` + p + `"` + "\nbogus = 1\n[checks.ib_ports]\ntimeout = 5\n", want: p},
		{name: "relative path is not used", data: "prom_file = \"x.prom\"\n", want: ""},
		{name: "not .prom is not used", data: "prom_file = \"/tmp/x.txt\"\n", want: ""},
		{name: "not a string", data: "prom_file = 5\n", want: ""},
		{name: "in a table is not the key", data: "[log]\nprom_file = \"" + p + "\"\n", want: ""},
		{name: "broken TOML, key before the first table", data: "# c\n prom_file = \"" + p + "\" # metrics\n[checks\nmin_rate_gbps = = 1\n", want: p},
		{name: "broken TOML, key after the first table", data: "[checks\nprom_file = \"" + p + "\"\n", want: ""},
		{name: "broken TOML, broken value", data: "prom_file = \"" + p + "\n[[[\n", want: ""},
		{name: "broken TOML, no key", data: "[[[\n", want: ""},
		{name: "binary junk", data: "\x00\xff=\n", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PeekPromFile([]byte(tc.data)); got != tc.want {
				t.Errorf("PeekPromFile(%q) = %q, want %q", tc.data, got, tc.want)
			}
		})
	}
}
