package nhc

import (
	"fmt"
	"strings"
	"testing"
)

// TestMatchTarget: each row's want is what LBNL NHC 1.5's own mcheck (scripts/common.nhc at
// 9c4a38c, sourced in bash 5.2) answered for the same host and target on 2026-12-06
// (0 is a match), so that the drop-in runs on a host exactly the lines NHC runs there.
func TestMatchTarget(t *testing.T) {
	for _, tc := range []struct {
		host, target string
		want         bool
	}{
		{"n01", "*", true},
		{"n01", "n0*", true},
		{"n01", "!n0*", false},
		{"n01", "m*", false},
		{"node12.cluster", "node1?.*", true},
		{"n5", "n[0-9]", true},
		{"n5", "n[!0-4]", true},
		{"n3", "n[!0-4]", false},
		{"n01", "/^n0/", true},
		{"n01", "/1$/", true},
		{"n01", "!/^n/", false},
		{"xn01", "/n0/", true},
		{"n01", "/^(a|n)0[0-9]$/", true},
		{"n01", "{n[01-10]}", true},
		{"n1", "{n[01-10]}", false},
		{"n010", "{n[01-10]}", false},
		{"n10", "{n[01-10]}", true},
		{"n11", "{n[01-10]}", false},
		{"n5", "{n[1-10]}", false},
		{"n05", "{n[1-10]}", true},
		{"n5", "{n[10-1]}", false},
		{"gpu003-ib", "{gpu[001-004]-ib}", true},
		{"gpu003", "{gpu[001-004]-ib}", false},
		{"n2", "{n1,n2,n3}", true},
		{"n4", "{n1,n2,n3}", false},
		{"n2", "!{n1,n2}", false},
		{"n2", "{n[1,2]}", false},
		{"a", "{abc}", false},
		{"abc1", "{abc1}", true},
		{"n2", "{n[1-3][1-2]}", false},
		{"n-1", "{n-[1-3]}", true},
		{"n2", "{}", false},
		{"n1", "n[[:digit:]]", true},
		{"na", "n[[:digit:]]", false},
		{"n[", "n[", true},
		{"n1", "n[", false},
		{"root:x:0:0:root:/root:/bin/bash", "root:*", true},
		{"a/b", "a?b", true},
		{"a]b", "a[]]b", true},
		{"ab", "a[!]]b", false},
		{"a*b", `a\*b`, true},
		{"axb", `a\*b`, false},
		{"n-1", "n[a-]1", true},
		{"n01", "/^n0[01-02]/", false},
		{"n01", "!/^n0[01-02]/", true},
		{"sgpu0101", "/^sgpu0[1-5][01-02]/", false},
	} {
		got, err := MatchTarget(tc.host, tc.target)
		if err != nil || got != tc.want {
			t.Errorf("MatchTarget(%q, %q) = %v, %v; NHC says %v", tc.host, tc.target, got, err, tc.want)
		}
	}
}

// TestMatchTargetRefuses: targets nodecheck cannot evaluate as NHC would are errors naming
// why, never a guess either way.
func TestMatchTargetRefuses(t *testing.T) {
	for _, tc := range []struct{ target, says string }{
		{"@gpu_nodes@", "external matcher"},
		{"@(n01|n02)", "extended glob"},
		{"!+(n0)1", "extended glob"},
		{`/(a)\1/`, "invalid escape"},
		{"", "empty target"},
		{"/" + strings.Repeat("a", maxTargetRegexp) + "/", "longer than"},
	} {
		_, err := MatchTarget("n1", tc.target)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("MatchTarget(n1, %q) = %v, want an error saying %q", tc.target, err, tc.says)
		}
	}
}

func FuzzMatchTarget(f *testing.F) {
	for _, s := range []string{"*", "!n0*", "/^n0/", "{n[01-10]}", "{a,b[1-3]c}", "@ng@", "n[!0-4]", "{n[99999999999999999999-1]}"} {
		f.Add("n01", s)
	}
	f.Fuzz(func(t *testing.T, host, target string) {
		m1, err1 := MatchTarget(host, target)
		if strings.HasPrefix(target, "!") && !strings.HasPrefix(target, "!!") {
			m2, err2 := MatchTarget(host, target[1:])
			if (err1 == nil) != (err2 == nil) || err1 == nil && m1 == m2 {
				t.Errorf("negation of %q: %v %v, plain: %v %v", target, m1, err1, m2, err2)
			}
		}
	})
}

// TestTranslateFor: the lines for the host are translated as lines for every node; lines
// for other hosts are left out silently, as NHC leaves them; a target that cannot be
// evaluated is skipped with why, since NHC might run it here.
func TestTranslateFor(t *testing.T) {
	lines, err := Parse(strings.NewReader("* || check_fs_mount_rw -f /\n"+
		"gpu[0-9]* || check_ps_loadavg 64\n"+
		"login* || check_fs_mount_rw -f /home\n"+
		"@ng@ || check_hw_swap 0 0\n"+
		"!gpu01 || check_net_ping 10.0.0.1\n"+
		"* || export NHC_RM=slurm TIMEOUT=15\n"+
		"login* || echo $HOME\n"+
		"gpu01 || MARK_OFFLINE=0\n"), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	tr := TranslateFor(lines, "gpu01")
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.From.Where()+" "+e.Section+"."+e.Key+" = "+e.Value)
	}
	if want := "nhc.conf:1 fs_mounts.mounts = / rw\nnhc.conf:2 load_average.max_1m = 64"; strings.Join(got, "\n") != want {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	if len(tr.Skipped) != 1 || tr.Skipped[0].Line.Num != 4 || !strings.Contains(tr.Skipped[0].Why, "external matcher") {
		t.Errorf("skipped %+v", tr.Skipped)
	}
	if fmt.Sprint(tr.Settings) != "[{NHC_RM slurm 6} {TIMEOUT 15 6} {MARK_OFFLINE 0 8}]" {
		t.Errorf("settings %v", tr.Settings)
	}
	ov, err := tr.Checks()
	if err != nil {
		t.Fatal(err)
	}
	if ov["load_average"]["max_1m"] != int64(64) || ov["load_average"]["max_5m"] != int64(0) ||
		len(ov["fs_mounts"]["mounts"].([]string)) != 1 || len(ov["services"]["processes"].([]string)) != 0 || ov["memory"]["swap"] != "" ||
		ov["machine_checks"]["enabled"] != false {
		t.Errorf("checks: %v", ov)
	}
}

// TestTranslateUnauthUsers: check_ps_unauth_users becomes stray_processes with NHC's
// authorized users, die fails and log warns; kill, ignore and -p are not translated.
func TestTranslateUnauthUsers(t *testing.T) {
	for _, tc := range []struct {
		line, want, skip string
	}{
		{"* || check_ps_unauth_users", "allow_users=root,nobody ignore_commands= enabled=true fail=true", ""},
		{"* || check_ps_unauth_users -n svc -u 1500 -c dbus-daemon log syslog", "allow_users=root,nobody,svc,1500 ignore_commands=dbus-daemon enabled=true fail=false", ""},
		{"* || check_ps_unauth_users log syslog kill", "", "never kills"},
		{"* || check_ps_unauth_users -p 1 die", "", "-p ignores a pid"},
		{"* || check_ps_unauth_users ignore", "", "checks nothing"},
		{"* || check_ps_unauth_users shout", "", `action "shout"`},
	} {
		lines, err := Parse(strings.NewReader(tc.line+"\n"), "nhc.conf")
		if err != nil {
			t.Fatal(err)
		}
		tr := Translate(lines)
		if tc.skip != "" {
			if len(tr.Skipped) != 1 || !strings.Contains(tr.Skipped[0].Why, tc.skip) {
				t.Errorf("%s: skipped %+v, want why %q", tc.line, tr.Skipped, tc.skip)
			}
			continue
		}
		ov, err := tr.Checks()
		if err != nil {
			t.Fatal(err)
		}
		sp := ov["stray_processes"]
		got := fmt.Sprintf("allow_users=%s ignore_commands=%s enabled=%v fail=%v", strings.Join(sp["allow_users"].([]string), ","),
			strings.Join(sp["ignore_commands"].([]string), ","), sp["enabled"], sp["fail"])
		if got != tc.want || len(tr.Skipped) != 0 {
			t.Errorf("%s:\n got %s (skipped %v)\nwant %s", tc.line, got, tr.Skipped, tc.want)
		}
	}
	// Without the line, NHC judges no stray processes: neither does the translation.
	if ov, _ := (Translation{}).Checks(); ov["stray_processes"]["enabled"] != false {
		t.Errorf("no line: %v", ov["stray_processes"])
	}
}

// TestTranslateFileContents: check_file_contents becomes a file_contents entry whose words
// read back as NHC's, quotes and all.
func TestTranslateFileContents(t *testing.T) {
	lines, err := Parse(strings.NewReader(`* || check_file_contents /etc/security/limits.conf '*hard memlock*' "it's" '!/^x\$/'`+"\n"+
		"* || check_file_contents relative/path x\n* || check_file_contents /etc/x\n"), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	tr := Translate(lines)
	if len(tr.Entries) != 1 || len(tr.Skipped) != 2 {
		t.Fatalf("entries %+v skipped %+v", tr.Entries, tr.Skipped)
	}
	words, err := SplitWords(tr.Entries[0].Value)
	if err != nil || strings.Join(words, "|") != `/etc/security/limits.conf|*hard memlock*|it's|!/^x$/` { // read dropped the \
		t.Errorf("%q reads back as %q (%v)", tr.Entries[0].Value, words, err)
	}
}

// TestParseBackslashes: NHC reads nhc.conf with bash's read without -r, which drops each
// backslash (keeping the character after it) before it splits target and check, so
// "/^n\d+$/" is the target /^nd+$/ and "n\*" the glob n*; checked against NHC's own loader.
func TestParseBackslashes(t *testing.T) {
	lines, err := Parse(strings.NewReader(`/^n\d+$/ || check_a`+"\n"+`n\* || check_b '/^10\.0/'`+"\n"), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	if lines[0].Target != "/^nd+$/" || lines[1].Target != "n*" || lines[1].Words[1] != "/^10.0/" {
		t.Errorf("%+v", lines)
	}
	if tr := TranslateFor(lines, "n01"); len(tr.Skipped) != 1 || tr.Skipped[0].Line.Num != 2 {
		t.Errorf("on n01 NHC runs only the n* line: %+v", tr.Skipped)
	}
}
