package checks

import (
	"context"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func TestParseFileContents(t *testing.T) {
	r, err := parseFileContents(`/etc/security/limits.conf '*hard*memlock*unlimited*' "!/^#/"`)
	if err != nil || r.Path != "/etc/security/limits.conf" || strings.Join(r.Patterns, "|") != "*hard*memlock*unlimited*|!/^#/" {
		t.Errorf("%+v %v", r, err)
	}
	for s, says := range map[string]string{
		"/proc/x":           "want a file and at least one pattern",
		"proc/x 0":          "not an absolute path",
		"/proc/x '0":        "unclosed single quote",
		"/proc/x @netgrp@":  "external matcher",
		"/proc/x $HOME":     "shell syntax",
		`/proc/x '/(a)\1/'`: "invalid escape",
	} {
		if _, err := parseFileContents(s); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want %q", s, err, says)
		}
	}
}

// TestJudgeFileContents: NHC's check_file_contents (lbnl_file.nhc) on literal files: each
// line trimmed, positive patterns must match a line, negated ones none, a missing file has no
// lines, and the messages are NHC's.
func TestJudgeFileContents(t *testing.T) {
	limits := contentsFacts{Lines: []string{"# limits", "*   hard   memlock   unlimited", "  *   soft   memlock   unlimited  "}}
	tests := []struct {
		name    string
		rule    string
		file    contentsFacts
		status  Status
		summary string
	}{
		{"a sysctl as wanted", "/proc/sys/kernel/numa_balancing 0", contentsFacts{Lines: []string{"0"}}, StatusOK, "1 file matches as listed"},
		{"a sysctl otherwise", "/proc/sys/kernel/numa_balancing 0", contentsFacts{Lines: []string{"1"}}, StatusFail,
			`File "/proc/sys/kernel/numa_balancing" failed to match "0"`},
		{"globs over the trimmed line", "/etc/security/limits.conf '*hard*memlock*unlimited' '*soft*memlock*unlimited'", limits, StatusOK, ""},
		{"one of two patterns", "/etc/security/limits.conf '*hard*memlock*' '*nofile*'", limits, StatusFail,
			`File "/etc/security/limits.conf" matched 1/2 patterns. First failed match: "*nofile*"`},
		{"a negated pattern that matches names the line", "/etc/security/limits.conf '!*soft*' '*hard*'", limits, StatusFail,
			`File "/etc/security/limits.conf" line 3 matches "*soft*"`},
		{"a negated pattern that does not match", "/etc/security/limits.conf '!/nofile/' '/memlock/'", limits, StatusOK, ""},
		{"a missing file fails a positive pattern", "/sys/module/hfi1/parameters/cap_mask 0x4c09a01cbba", contentsFacts{Missing: true}, StatusFail,
			`failed to match "0x4c09a01cbba" (the file does not exist)`},
		{"a missing file passes a negated one, as in NHC", "/etc/nologin '!*'", contentsFacts{Missing: true}, StatusOK, ""},
		{"an unreadable file settles nothing", "/etc/shadow x", contentsFacts{Err: "permission denied"}, StatusError, "could not read /etc/shadow: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseFileContents(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			res := judgeFileContents([]contentsRule{r}, map[string]contentsFacts{r.Path: tc.file})
			assertRemedies(t, res)
			if res.Status != tc.status || !strings.Contains(res.Summary, tc.summary) {
				t.Errorf("%s %q, want %s containing %q", res.Status, res.Summary, tc.status, tc.summary)
			}
		})
	}
}

// TestFileContentsAbsentFile: a file that does not exist passes its !patterns (NHC reads no
// lines from it), but one a snapshot holds neither the file nor the absence of is not looked
// at, and so never passes.
func TestFileContentsAbsentFile(t *testing.T) {
	f := &fakeFacts{files: map[string]string{}, stats: map[string]node.FileStat{"/etc/nologin": {Missing: true}}}
	for _, tc := range []struct {
		entry   string
		status  Status
		summary string
	}{
		{"/etc/nologin '!*'", StatusOK, "1 file matches"},
		{"/etc/nologin x", StatusFail, "(the file does not exist)"},
		{"/etc/unrecorded '!*'", StatusSkip, "/etc/unrecorded not recorded in this snapshot"},
	} {
		cfg, err := config.Default(Schema()).WithChecks(map[string]map[string]any{idFileContents: {"files": []string{tc.entry}}}, "test")
		if err != nil {
			t.Fatal(err)
		}
		res := fileContents{}.Run(context.Background(), &Env{Facts: f, Config: cfg, Mode: config.ModeHealth})
		if res.Status != tc.status || !strings.Contains(res.Summary, tc.summary) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.entry, res.Status, res.Summary, tc.status, tc.summary)
		}
	}
}
