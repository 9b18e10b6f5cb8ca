package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"empty", "", nil, ""},
		{"blanks", " \t\n", nil, ""},
		{"words", "--snapshot /data/n1  --node n1", []string{"--snapshot", "/data/n1", "--node", "n1"}, ""},
		{"single quotes", "--snapshot '/data/my node' x", []string{"--snapshot", "/data/my node", "x"}, ""},
		{"double quotes and escapes", `"a \"b\" \$c \\d \e" f\ g`, []string{`a "b" $c \d \e`, "f g"}, ""},
		{"empty quoted word", `--x '' ""`, []string{"--x", "", ""}, ""},
		{"joined quotes", `a'b c'"d"`, []string{"ab cd"}, ""},
		{"unterminated single", "'abc", nil, `"'abc": unterminated single quote`},
		{"unterminated double", `"abc`, nil, `"\"abc": unterminated double quote`},
		{"trailing backslash", `abc\`, nil, `"abc\\": backslash at the end`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitArgs(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("splitArgs(%q) error %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splitArgs(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestShellQuote runs the quoted words through /bin/sh, which must give them back unchanged.
func TestShellQuote(t *testing.T) {
	words := []string{"plain", "/usr/sbin/nodecheck", "--args-for=n1", "", "with space", "it's", `"$HOME" \ *`, "a\nb", "%j"}
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, shellQuote(w))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	script := `for a in ` + strings.Join(quoted, " ") + `; do printf '%s\0' "$a"; done`
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", script, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if diff := cmp.Diff(words, got); diff != "" {
		t.Errorf("through sh (-want +got):\n%s", diff)
	}
	// Words of the safe set stay bare, so the script reads like the command.
	if q := shellQuote("/usr/sbin/nodecheck"); q != "/usr/sbin/nodecheck" {
		t.Errorf("shellQuote quoted a plain path: %s", q)
	}
}

func TestParseNodeArgs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    nodeArgs
		wantErr string
	}{
		{"one node", "n1=--snapshot /s/h100-healthy --node n1",
			nodeArgs{expr: "n1", nodes: []string{"n1"}, args: []string{"--snapshot", "/s/h100-healthy", "--node", "n1"}}, ""},
		{"hostlist, = in the args", "gpu[01-03]=--config=/etc/nodecheck/sweep.toml",
			nodeArgs{expr: "gpu[01-03]", nodes: []string{"gpu01", "gpu02", "gpu03"}, args: []string{"--config=/etc/nodecheck/sweep.toml"}}, ""},
		{"no args", "n1=", nodeArgs{expr: "n1", nodes: []string{"n1"}}, ""},
		{"no =", "n1", nodeArgs{}, `"n1": want NODES=ARGS`},
		{"no nodes", "=--x", nodeArgs{}, `"=--x": want NODES=ARGS`},
		{"bad hostlist", "gpu[01-=x", nodeArgs{}, "gpu[01-"},
		{"bad quoting", "n1='x", nodeArgs{}, "unterminated single quote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNodeArgs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseNodeArgs(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(nodeArgs{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsage: every command-line error exits 2 before any Slurm command runs (--slurm-bin points
// nowhere, so one that ran would fail differently), and -h exits 0.
func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Usage: fleet-sweep (--partition P | --nodes HOSTLIST)"},
		{"no nodes", nil, 2, "give --partition or --nodes"},
		{"unknown flag", []string{"--partition", "gpu", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"argument", []string{"--partition", "gpu", "extra"}, 2, `unexpected argument "extra"`},
		{"format", []string{"--partition", "gpu", "--format", "yaml"}, 2, `--format "yaml": want text or json`},
		{"relative nodecheck", []string{"--partition", "gpu", "--nodecheck", "nodecheck"}, 2, "--nodecheck \"nodecheck\": want an absolute path"},
		{"relative slurm-bin", []string{"--partition", "gpu", "--slurm-bin", "bin"}, 2, "--slurm-bin \"bin\": want an absolute path"},
		{"timeout", []string{"--partition", "gpu", "--timeout", "0s"}, 2, "--timeout 0s: want a positive duration"},
		{"args quoting", []string{"--partition", "gpu", "--args", "--snapshot 'x"}, 2, "--args \"--snapshot 'x\": unterminated single quote"},
		{"args-for", []string{"--partition", "gpu", "--args-for", "n1"}, 2, `invalid value "n1" for flag -args-for: "n1": want NODES=ARGS`},
		{"percent in out", []string{"--partition", "gpu", "--out", "/tmp/%j"}, 2, "sbatch expands % in file names"},
		{"bad hostlist", []string{"--nodes", "gpu[01-", "--slurm-bin", "/nonexistent"}, 2, "--nodes: "},
		{"slurm missing", []string{"--partition", "gpu", "--slurm-bin", "/nonexistent"}, 2, "sinfo: fork/exec /nonexistent/sinfo: no such file or directory"},
		{"slow floor", []string{"--partition", "gpu", "--slow-floor", "120%"}, 2, `--slow-floor "120%": want a percentage from 0 to 99`},
		{"slow mad", []string{"--partition", "gpu", "--slow-mad", "-1"}, 2, "--slow-mad -1: want 0 or more"},
		{"slow min nodes", []string{"--partition", "gpu", "--slow-min-nodes", "1"}, 2, "--slow-min-nodes 1: want at least 2"},
		{"dry run alone", []string{"--partition", "gpu", "--dry-run"}, 2, "--dry-run: give --drain-slow or --drain-culprits"},
		{"max drained", []string{"--partition", "gpu", "--max-drained", "0"}, 2, `--max-drained: "0" would hold back every drain`},
		{"reason prefix", []string{"--partition", "gpu", "--reason-prefix", "node check "}, 2, `--reason-prefix "node check ": want printable ASCII`},
		{"culprits without multinode", []string{"--partition", "gpu", "--drain-culprits"}, 2, "--drain-culprits and --multinode-min-busbw need --multinode"},
		{"mpi", []string{"--partition", "gpu", "--multinode", "--mpi", "pmix;rm"}, 2, `--mpi "pmix;rm": want a plugin name`},
		{"group", []string{"--partition", "gpu", "--multinode", "--multinode-group", "1"}, 2, "--multinode-group 1"},
		{"relative allreduce", []string{"--partition", "gpu", "--allreduce", "all_reduce_perf"}, 2, `--allreduce "all_reduce_perf": want an absolute path`},
		{"unknown level", []string{"--partition", "gpu", "--validate", "deep"}, 2, `--validate: level "deep": want one of quick, full, burn-in`},
		{"max parallel", []string{"--partition", "gpu", "--validate", "quick", "--max-parallel", "0"}, 2, "--max-parallel 0: want at least 1"},
		{"slow fraction", []string{"--partition", "gpu", "--validate", "quick", "--slow-fraction", "100%"}, 2, `--slow-fraction "100%": want a percentage above 0 and below 100`},
		{"slow fraction zero", []string{"--partition", "gpu", "--validate", "quick", "--slow-fraction", "0"}, 2, `--slow-fraction "0"`},
		{"validate-time", []string{"--partition", "gpu", "--validate", "full", "--validate-time", "-1m"}, 2, "--validate-time -1m0s: want a positive duration"},
		{"reservation without validate", []string{"--partition", "gpu", "--maint-reservation"}, 2, "need --validate LEVEL"},
		{"return to service without validate", []string{"--partition", "gpu", "--return-to-service"}, 2, "need --validate LEVEL"},
		{"validate and multinode", []string{"--partition", "gpu", "--validate", "quick", "--multinode"}, 2, "--validate and --multinode: run them as two sweeps"},
		{"relative topology", []string{"--partition", "gpu", "--multinode", "--topology", "topology.conf"}, 2, `--topology "topology.conf": want an absolute path`},
		{"lldp and validate", []string{"--partition", "gpu", "--lldp", "--validate", "quick"}, 2, "--lldp and --validate: run them as two sweeps"},
		{"lldp and multinode", []string{"--partition", "gpu", "--lldp", "--multinode"}, 2, "--lldp and --multinode: run them as two sweeps"},
		{"lldp drains nothing", []string{"--partition", "gpu", "--lldp", "--drain-slow"}, 2, "--lldp drains nothing"},
		{"lldp html", []string{"--partition", "gpu", "--lldp", "--html", "/tmp/r.html"}, 2, "--lldp writes no HTML report"},
		{"switch map without lldp", []string{"--partition", "gpu", "--lldp-switch-map", "/etc/switches.map"}, 2, "--lldp-switch-map needs --lldp"},
		{"relative switch map", []string{"--partition", "gpu", "--lldp", "--lldp-switch-map", "switches.map"}, 2, `--lldp-switch-map "switches.map": want an absolute path`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, nil, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", code, tc.code, tc.want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout:\n%s", stdout.String())
			}
		})
	}
}
