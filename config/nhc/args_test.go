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
		{"-D", []string{"-D", "/etc/nhc"}, func(o Options) bool { return o.ConfDir == "/etc/nhc" }, ""},
		{"-t", []string{"-t", "60"}, func(o Options) bool { return o.Timeout == 60*time.Second }, ""},
		{"-t 0 (boundary)", []string{"-t", "0"}, func(o Options) bool { return o.Timeout == 0 }, ""},
		{"-t -1", []string{"-t", "-1"}, nil, "want whole seconds"},
		{"-t 1.5", []string{"-t", "1.5"}, nil, "want whole seconds"},
		{"-l", []string{"-l", "/var/log/nhc.log"}, func(o Options) bool { return o.LogFile == "/var/log/nhc.log" }, ""},
		{"-d", []string{"-d"}, func(o Options) bool { return o.Debug }, ""},
		{"-n", []string{"-n", "gpu01"}, func(o Options) bool { return o.Hostname == "gpu01" }, ""},
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
