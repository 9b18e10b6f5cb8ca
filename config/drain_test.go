package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestDrainConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // the whole error text
	}{
		{"relative scontrol", "[drain]\nscontrol = \"scontrol\"\n",
			`nodecheck.toml:2: drain.scontrol = "scontrol": give an absolute path: Slurm starts hooks without PATH`},
		{"relative sinfo", "[drain]\nsinfo = \"bin/sinfo\"\n",
			`nodecheck.toml:2: drain.sinfo = "bin/sinfo": give an absolute path: Slurm starts hooks without PATH`},
		{"empty prefix", "[drain]\nreason_prefix = \"\"\n",
			`nodecheck.toml:2: drain.reason_prefix = "": must not be empty: it is how nodecheck tells its own drains from everyone else's`},
		{"prefix with a quote", "[drain]\nreason_prefix = 'nc\"'\n",
			`nodecheck.toml:2: drain.reason_prefix = "nc\"": holds '"': use printable ASCII without double quotes`},
		{"prefix with a tab", "[drain]\nreason_prefix = \"nc\\t:\"\n",
			`nodecheck.toml:2: drain.reason_prefix = "nc\t:": holds '\t': use printable ASCII without double quotes`},
		{"prefix with non-ASCII", "[drain]\nreason_prefix = \"nodecheck→\"\n",
			`nodecheck.toml:2: drain.reason_prefix = "nodecheck→": holds '→': use printable ASCII without double quotes`},
		{"prefix with a trailing blank", "[drain]\nreason_prefix = \"nc: \"\n",
			`nodecheck.toml:2: drain.reason_prefix = "nc: ": must not start or end with a blank or hold two in a row`},
		{"prefix too long", "[drain]\nreason_prefix = \"" + strings.Repeat("n", 41) + "\"\n",
			`nodecheck.toml:2: drain.reason_prefix = "` + strings.Repeat("n", 41) + `": is 41 characters, more than 40: the reason (at most 200) needs room for the check and summary`},
		{"no passes", "[drain]\nresume_after_passes = 0\n",
			`nodecheck.toml:2: drain.resume_after_passes = 0: must be at least 1 (the clean runs in a row before nodecheck resumes a node it drained)`},
		{"max_drained zero", "[drain]\nmax_drained = \"0\"\n",
			`nodecheck.toml:2: drain.max_drained: "0" would hold back every drain: to never drain set enabled = false; for no limit use ""`},
		{"max_drained word", "[drain]\nmax_drained = \"ten\"\n",
			`nodecheck.toml:2: drain.max_drained: "ten" is not a count ("10") or a percentage ("10%")`},
		{"relative state dir", "[state]\ndir = \"state\"\n",
			`nodecheck.toml:2: state.dir = "state": give an absolute path: Slurm hooks run in slurmd's working directory`},
		{"several, in file order", "[state]\ndir = \"\"\n[drain]\nsinfo = \"\"\nresume_after_passes = -1\n",
			"nodecheck.toml:2: state.dir = \"\": give an absolute path: Slurm hooks run in slurmd's working directory\n" +
				"nodecheck.toml:4: drain.sinfo = \"\": give an absolute path: Slurm starts hooks without PATH\n" +
				"nodecheck.toml:5: drain.resume_after_passes = -1: must be at least 1 (the clean runs in a row before nodecheck resumes a node it drained)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.toml), "nodecheck.toml", testSchema())
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
		})
	}

	// Valid settings other than the defaults.
	cfg, err := ParseConfig([]byte("[drain]\nenabled = false\nreason_prefix = \"[nhc]\"\nmax_drained = \"\"\nresume_after_passes = 1\n[state]\ndir = \"/run/nodecheck\"\n"), "nodecheck.toml", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Drain.ReasonPrefix != "[nhc]" || cfg.Drain.Enabled || cfg.State.Dir != "/run/nodecheck" {
		t.Errorf("got %+v %+v", cfg.Drain, cfg.State)
	}
}

func TestParseMaxDrained(t *testing.T) {
	tests := []struct {
		in      string
		n       int
		percent bool
		wantErr string
	}{
		{"", 0, false, ""},
		{"  ", 0, false, ""},
		{"10", 10, false, ""},
		{"10%", 10, true, ""},
		{" 5 % ", 5, true, ""},
		{"100%", 100, true, ""},
		{"007", 7, false, ""},
		{"101%", 0, false, "over 100%"},
		{"0", 0, false, "would hold back every drain"},
		{"0%", 0, false, "would hold back every drain"},
		{"-1", 0, false, "is not a count"},
		{"+5", 0, false, "is not a count"},
		{"2.5%", 0, false, "is not a count"},
		{"%", 0, false, "is not a count"},
		{"10%%", 0, false, "is not a count"},
		{"99999999999999999999", 0, false, "value out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			n, percent, err := ParseMaxDrained(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.n || percent != tc.percent {
				t.Errorf("got %d, %v; want %d, %v", n, percent, tc.n, tc.percent)
			}
		})
	}
}

// FuzzParseMaxDrained: never panics; a value it accepts is a positive count, or a percentage
// up to 100, and reads back the same when written plainly.
func FuzzParseMaxDrained(f *testing.F) {
	for _, s := range []string{"", "10", "10%", " 5 % ", "0", "101%", "+5", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, percent, err := ParseMaxDrained(s)
		if err != nil || n == 0 {
			return
		}
		if n < 0 || percent && n > 100 {
			t.Fatalf("ParseMaxDrained(%q) = %d, %v", s, n, percent)
		}
		plain := fmt.Sprint(n)
		if percent {
			plain += "%"
		}
		if n2, p2, err := ParseMaxDrained(plain); err != nil || n2 != n || p2 != percent {
			t.Fatalf("%q read back as %d, %v, %v", plain, n2, p2, err)
		}
	})
}

func ExampleParseMaxDrained() {
	for _, s := range []string{"10", "5%", ""} {
		n, percent, err := ParseMaxDrained(s)
		fmt.Println(n, percent, err)
	}
	// Output:
	// 10 false <nil>
	// 5 true <nil>
	// 0 false <nil>
}
