package nhc

import (
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(Options) bool
		wantErr string
	}{
		{"no arguments: NHC's defaults", nil, func(o Options) bool { return o.ConfFile == DefaultConfFile && o.MarkOffline && o.Timeout == 0 }, ""},
		{"-c", []string{"-c", "/x/nhc.conf"}, func(o Options) bool { return o.ConfFile == "/x/nhc.conf" }, ""},
		{"-D", []string{"-D", "/site/nhc"}, func(o Options) bool { return o.ConfDir == "/site/nhc" && o.ConfFile == "/site/nhc/nhc.conf" }, ""},
		{"-t", []string{"-t", "60"}, func(o Options) bool { return o.Timeout == 60*time.Second }, ""},
		{"-t 0 (boundary)", []string{"-t", "0"}, func(o Options) bool { return o.Timeout == 0 }, ""},
		{"-t -1", []string{"-t", "-1"}, nil, "want whole seconds"},
		{"-t 1.5", []string{"-t", "1.5"}, nil, "want whole seconds"},
		{"-l", []string{"-l", "/var/log/nhc.log"}, func(o Options) bool { return o.LogFile == "/var/log/nhc.log" }, ""},
		{"-d", []string{"-d"}, func(o Options) bool { return o.Debug }, ""},
		{"-D and -n name the default conf file", []string{"-D", "/x", "-n", "nhc-cron"}, func(o Options) bool { return o.ConfFile == "/x/nhc-cron.conf" }, ""},
		{"-c wins over -D", []string{"-D", "/x", "-c", "/y.conf"}, func(o Options) bool { return o.ConfFile == "/y.conf" && o.ConfDir == "/x" }, ""},
		{"-n with a slash", []string{"-n", "../x"}, nil, "want a plain name"},
		{"-m", []string{"-m", "gpu01"}, func(o Options) bool { return o.Hostname == "gpu01" }, ""},
		{"NHC_HOST=", []string{"NHC_HOST=gpu02"}, func(o Options) bool { return o.Hostname == "gpu02" }, ""},
		{"-r slurm", []string{"-r", "slurm"}, func(o Options) bool { return len(o.Notes) == 0 }, ""},
		{"-r none: report only", []string{"-r", "none"}, func(o Options) bool { return !o.MarkOffline }, ""},
		{"-r pbs", []string{"-r", "pbs"}, nil, "Slurm only"},
		{"NHC_RM=slurm", []string{"NHC_RM=slurm"}, func(o Options) bool { return len(o.Notes) == 0 }, ""},
		{"NHC_RM=pbs", []string{"NHC_RM=pbs"}, nil, "Slurm only"},
		{"MARK_OFFLINE=0", []string{"MARK_OFFLINE=0"}, func(o Options) bool { return !o.MarkOffline }, ""},
		{"MARK_OFFLINE=1", []string{"MARK_OFFLINE=1"}, func(o Options) bool { return o.MarkOffline }, ""},
		{"unknown setting: note", []string{"NHC_CHECK_ALL=1"}, func(o Options) bool { return len(o.Notes) == 1 && strings.Contains(o.Notes[0], "NHC_CHECK_ALL") }, ""},
		{"-a: note", []string{"-a"}, func(o Options) bool { return len(o.Notes) == 1 }, ""},
		{"-e: error", []string{"-e", "check_hw_cpuinfo 2"}, nil, "-e: not supported"},
		{"-c without a value", []string{"-c"}, nil, "needs a value"},
		{"unknown option", []string{"-Z"}, nil, `"-Z": not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

// FuzzParseArgs: any command line parses or fails with an error, never a panic, and a parsed
// one always names a configuration file.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"-c /etc/nhc/nhc.conf", "-t 60 -d NHC_RM=slurm MARK_OFFLINE=0", "-D /x -n cron", "-c", "-Z", "TIMEOUT=x", "-r none -m gpu01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, err := ParseArgs(strings.Fields(line))
		if err == nil && o.ConfFile == "" {
			t.Errorf("%q: no configuration file", line)
		}
	})
}

// TestParseArgsSysconfig: NHC sources its sysconfig file after the command line, so its
// settings win; assignments are read with bash's quoting, anything bash would expand or run
// is refused with the file and line.
func TestParseArgsSysconfig(t *testing.T) {
	read := func(text string) func(dir, name string) ([]byte, string, error) {
		return func(dir, name string) ([]byte, string, error) {
			if dir != "/etc/x" || name != "nhc" {
				t.Errorf("sysconfig asked for %s/%s", dir, name)
			}
			return []byte(text), "/etc/x/nhc", nil
		}
	}
	o, err := ParseArgsSysconfig([]string{"-t", "20", "SYSCONFIGDIR=/etc/x"}, read("# site\nexport MARK_OFFLINE=0\nTIMEOUT='45'\nNHC_RM=\"slurm\"\n\nOFFLINE_NODE=/usr/local/sbin/mark\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.MarkOffline || o.Timeout != 45*time.Second || o.ConfFile != "/etc/nhc/nhc.conf" || len(o.Notes) != 1 {
		t.Errorf("%+v", o)
	}
	for text, says := range map[string]string{
		"MARK_OFFLINE=$X\n":            "/etc/x/nhc:1:",
		"\nif true; then X=1; fi\n":    "/etc/x/nhc:2:",
		"MARK_OFFLINE=0 # report\n":    "NAME=VALUE lines only",
		"X=1 Y=2\n":                    "2 words",
		"1X=2\n":                       "not NAME=VALUE",
		"NHC_RM=pbs\n":                 "/etc/x/nhc:1: nhc NHC_RM=pbs",
		"TIMEOUT=soon\n":               "/etc/x/nhc:1: nhc timeout",
		"function f() { :; }\n":        "NAME=VALUE lines only",
		"MARK_OFFLINE=`date`\n":        "NAME=VALUE lines only",
		"CONFFILE=\"/etc/nhc/a.conf\n": "unclosed double quote",
	} {
		if _, err := ParseArgsSysconfig([]string{"SYSCONFIGDIR=/etc/x"}, read(text)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want an error saying %q", text, err, says)
		}
	}
}

func FuzzParseSysconfig(f *testing.F) {
	for _, s := range []string{"MARK_OFFLINE=0\n", "export NHC_RM='slurm'\n# c\n", "X=\"a b\"\n", "$(x)\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sets, err := ParseSysconfig([]byte(text), "nhc")
		if err != nil {
			return
		}
		for _, s := range sets {
			if !validVarName(s.Name) || s.Line < 1 {
				t.Errorf("%+v from %q", s, text)
			}
		}
	})
}

// TestParseArgsNHCValues: MARK_OFFLINE drains only at 1, as NHC's [[ "$MARK_OFFLINE" -eq 1 ]];
// LOGFILE takes NHC's forms; NHC_AUTH_USERS and MAX_SYS_UID are kept for stray_processes.
func TestParseArgsNHCValues(t *testing.T) {
	for v, want := range map[string]bool{"1": true, " 1": true, "0": false, "false": false, "no": false, "2": false, "": false} {
		o, err := ParseArgs([]string{"MARK_OFFLINE=" + v})
		if err != nil || o.MarkOffline != want {
			t.Errorf("MARK_OFFLINE=%q: %v %v, want %v", v, o.MarkOffline, err, want)
		}
	}
	if o, _ := ParseArgs(nil); !o.MarkOffline {
		t.Error("no MARK_OFFLINE: NHC's default, 1, drains")
	}
	for v, want := range map[string]string{"-": "", "/var/log/nhc.log": "/var/log/nhc.log", ">>/var/log/nhc.log 2>&1": "/var/log/nhc.log", ">>/tmp/x": "/tmp/x"} {
		o, err := ParseArgs([]string{"LOGFILE=" + v})
		if err != nil || o.LogFile != want {
			t.Errorf("LOGFILE=%q: %q %v, want %q", v, o.LogFile, err, want)
		}
	}
	for _, v := range []string{"nhc.log", ">>x 2>&1", ">> /a 1>&2"} {
		if _, err := ParseArgs([]string{"-l", v}); err == nil {
			t.Errorf("-l %q: no error", v)
		}
	}
	o, err := ParseArgs([]string{"NHC_AUTH_USERS=root nobody admin", "MAX_SYS_UID=499"})
	if err != nil || strings.Join(o.AuthUsers, ",") != "root,nobody,admin" || o.MaxSysUID != 499 {
		t.Errorf("%+v %v", o, err)
	}
}
