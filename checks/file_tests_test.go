package checks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// The facts below are written by hand, as stat(1) and access(2) report these paths on a
// compute node run as root (no capture of a node's FileStat exists yet).
var (
	ftTmp     = node.FileStat{Type: "dir", Mode: 0o1777, Readable: true, Writable: true, Executable: true, Size: 4096}
	ftPasswd  = node.FileStat{Type: "file", Mode: 0o644, Readable: true, Writable: true, Size: 2803}
	ftDevNull = node.FileStat{Type: "char", Mode: 0o666, Readable: true, Writable: true}
	// ftPipe is NHC's own test file, a bash process substitution (test/test_lbnl_file.nhc):
	// a pipe owned by the user that runs the test.
	ftPipe = node.FileStat{Type: "fifo", Mode: 0o600, UID: 1000, GID: 1000, EUID: 1000, EGID: 1000, Readable: true, Writable: true}
)

// with returns s changed by f.
func with(s node.FileStat, f func(*node.FileStat)) node.FileStat {
	f(&s)
	return s
}

func TestParseFileTest(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		ops     string
		neg     bool
		paths   []string
	}{
		{"-r -w -x -d -k /tmp /var/tmp", "", "rwxdk", false, []string{"/tmp", "/var/tmp"}},
		{"-! -e /etc/nologin", "", "e", true, []string{"/etc/nologin"}},
		{"/dev/null -c -! -w", "", "cw", true, []string{"/dev/null"}}, // order does not matter to NHC
		{"-a -b -c -d -e -f -g -h -k -p -r -s -u -w -x -O -G -L -S -N /x", "", "abcdefghkprsuwxOGLSN", false, []string{"/x"}},
		{"-t /dev/tty", "terminal", "", false, nil},
		{"-z /tmp", `"-z" is not an operator`, "", false, nil},
		{"-rw /tmp", `"-rw" is not an operator`, "", false, nil},
		{"-r tmp", "not an absolute path", "", false, nil},
		{"-c /dev/nvidia*", "glob", "", false, nil},
		{"-f /etc/passwd/", `write it as "/etc/passwd"`, "", false, nil},
		{"-d /var/lib/../tmp", `write it as "/var/tmp"`, "", false, nil},
		{"-r", "at least one operator and one file", "", false, nil},
		{"/tmp", "at least one operator and one file", "", false, nil},
		{"-! /tmp", "at least one operator and one file", "", false, nil},
		{"", "at least one operator and one file", "", false, nil},
	} {
		got, err := parseFileTest(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseFileTest(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(got.Ops) != tc.ops || got.Neg != tc.neg || strings.Join(got.Paths, " ") != strings.Join(tc.paths, " ") || got.Text != tc.in {
			t.Errorf("parseFileTest(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestFileOp holds each operator on each side, as bash's test answers.
func TestFileOp(t *testing.T) {
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	missing := node.FileStat{Missing: true}
	dangling := node.FileStat{Symlink: true}
	for _, tc := range []struct {
		op       byte
		yes, not node.FileStat
	}{
		{'a', ftPasswd, missing},
		{'e', ftTmp, dangling},
		{'b', node.FileStat{Type: "block"}, ftDevNull},
		{'c', ftDevNull, node.FileStat{Type: "block"}},
		{'d', ftTmp, ftPasswd},
		{'f', ftPasswd, ftTmp},
		{'p', ftPipe, ftPasswd},
		{'S', node.FileStat{Type: "socket"}, ftPipe},
		{'h', dangling, ftPasswd},
		{'L', with(ftPasswd, func(s *node.FileStat) { s.Symlink = true }), missing},
		{'u', node.FileStat{Type: "file", Mode: 0o4755}, node.FileStat{Type: "file", Mode: 0o2755}},
		{'g', node.FileStat{Type: "file", Mode: 0o2755}, node.FileStat{Type: "file", Mode: 0o1755}},
		{'k', ftTmp, with(ftTmp, func(s *node.FileStat) { s.Mode = 0o777 })},
		{'r', ftPasswd, with(ftPasswd, func(s *node.FileStat) { s.Readable = false })},
		{'w', ftTmp, with(ftTmp, func(s *node.FileStat) { s.Writable = false })}, // a read-only /tmp: EROFS
		{'x', ftTmp, ftPasswd},
		{'s', node.FileStat{Type: "file", Size: 1}, node.FileStat{Type: "file", Size: 0}},
		{'O', ftPipe, with(ftPipe, func(s *node.FileStat) { s.UID = 0 })},
		{'G', ftPipe, with(ftPipe, func(s *node.FileStat) { s.GID = 0 })},
		// -N: modified a nanosecond after the last read holds; read and modified at once (a
		// new file) does not, as bash 5.1 and later answer.
		{'N', node.FileStat{Type: "file", ATime: now, MTime: now.Add(time.Nanosecond)}, node.FileStat{Type: "file", ATime: now, MTime: now}},
		{'r', ftPasswd, missing},
		{'r', ftPasswd, dangling},
	} {
		if !fileOp(tc.op, tc.yes) {
			t.Errorf("-%c %+v = false, want true", tc.op, tc.yes)
		}
		if fileOp(tc.op, tc.not) {
			t.Errorf("-%c %+v = true, want false", tc.op, tc.not)
		}
	}
}

func TestJudgeFileTests(t *testing.T) {
	healthy := map[string]fileFacts{
		"/tmp": {FileStat: ftTmp}, "/var/tmp": {FileStat: ftTmp},
		"/etc/passwd": {FileStat: ftPasswd}, "/etc/group": {FileStat: ftPasswd},
		"/dev/null": {FileStat: ftDevNull}, "/dev/zero": {FileStat: ftDevNull},
		"/etc/nologin": {FileStat: node.FileStat{Missing: true}},
	}
	change := func(p string, f func(*fileFacts)) map[string]fileFacts {
		m := map[string]fileFacts{}
		for k, v := range healthy {
			v.Path = k
			m[k] = v
		}
		v := m[p]
		f(&v)
		m[p] = v
		return m
	}
	nhcDefault := []string{"-r -w -x -d -k /tmp /var/tmp", "-r -s /etc/passwd /etc/group", "-c -r -w /dev/null /dev/zero"}
	for _, tc := range []struct {
		name    string
		tests   []string
		facts   map[string]fileFacts
		status  Status
		summary string
		remedy  Remedy
	}{
		{"NHC's default lines on a healthy node", nhcDefault, healthy, StatusOK, "3 file test lines held", ""},
		{"read-only /var/tmp", nhcDefault, change("/var/tmp", func(f *fileFacts) { f.Writable = false }), StatusFail,
			"-r -w -x -d -k /tmp /var/tmp: -w /var/tmp returned 1: /var/tmp is not writable (a read-only filesystem, or its mode) (a directory, mode 1777, owner 0:0)", RemedyAdmin},
		{"/tmp without its sticky bit", nhcDefault, change("/tmp", func(f *fileFacts) { f.Mode = 0o777 }), StatusFail,
			"-r -w -x -d -k /tmp /var/tmp: -k /tmp returned 1: /tmp has no sticky bit (a directory, mode 0777, owner 0:0)", RemedyAdmin},
		{"/etc/group missing", nhcDefault, change("/etc/group", func(f *fileFacts) { f.FileStat = node.FileStat{Path: "/etc/group", Missing: true} }), StatusFail,
			"-r -s /etc/passwd /etc/group: -r /etc/group returned 1: /etc/group does not exist", RemedyAdmin},
		{"/etc/passwd empty", nhcDefault, change("/etc/passwd", func(f *fileFacts) { f.Size = 0 }), StatusFail,
			"-r -s /etc/passwd /etc/group: -s /etc/passwd returned 1: /etc/passwd is empty (a regular file, mode 0644, owner 0:0)", RemedyAdmin},
		{"/dev/null a regular file", nhcDefault, change("/dev/null", func(f *fileFacts) { f.Type = "file" }), StatusFail,
			"-c -r -w /dev/null /dev/zero: -c /dev/null returned 1: /dev/null is not a character device (a regular file, mode 0666, owner 0:0)", RemedyAdmin},
		{"two lines fail", nhcDefault, change("/dev/zero", func(f *fileFacts) { f.Missing, f.Type = true, "" }), StatusFail,
			"-c -r -w /dev/null /dev/zero: -c /dev/zero returned 1: /dev/zero does not exist", RemedyAdmin},
		{"negated, a test false", []string{"-! -e /etc/nologin"}, healthy, StatusOK, "1 file test line held", ""},
		{"negated, every test held", []string{"-! -e /etc/nologin"}, change("/etc/nologin", func(f *fileFacts) { f.FileStat = ftPasswd }), StatusFail,
			"-! -e /etc/nologin: -e /etc/nologin returned 0: the line is negated (-!), and every test held", RemedyAdmin},
		{"negated, the second file decides", []string{"-! -f /etc/passwd /tmp"}, healthy, StatusOK, "1 file test line held", ""},
		{"stat hung", nhcDefault, change("/var/tmp", func(f *fileFacts) { f.FileStat, f.Hung = node.FileStat{Path: "/var/tmp"}, true }), StatusFail,
			"-r -w -x -d -k /tmp /var/tmp: stat /var/tmp did not answer within 2s (a hung NFS server?)", RemedyAdmin},
		{"stat error", nhcDefault, change("/etc/group", func(f *fileFacts) { f.FileStat = node.FileStat{Path: "/etc/group", Error: "stat: input/output error"} }), StatusError,
			"-r -s /etc/passwd /etc/group: could not stat /etc/group: stat: input/output error", ""},
		{"could not ask", []string{"-r /etc/passwd"}, change("/etc/passwd", func(f *fileFacts) { f.FileStat, f.ReadErr = node.FileStat{Path: "/etc/passwd"}, "permission denied" }), StatusError,
			"-r /etc/passwd: could not stat /etc/passwd: permission denied", ""},
		{"not stat'ed at all", []string{"-r /etc/shadow"}, healthy, StatusError,
			"-r /etc/shadow: could not stat /etc/shadow: not stat'ed", ""},
		{"negated, a stat error is no pass", []string{"-! -e /etc/passwd /etc/group"}, change("/etc/group", func(f *fileFacts) { f.FileStat = node.FileStat{Path: "/etc/group", Error: "stat: input/output error"} }), StatusError,
			"-! -e /etc/passwd /etc/group: could not stat /etc/group: stat: input/output error", ""},
		{"a failure outweighs an unknown file", []string{"-d /var/tmp /etc/passwd"}, change("/var/tmp", func(f *fileFacts) { f.FileStat, f.Hung = node.FileStat{Path: "/var/tmp"}, true }), StatusFail,
			"-d /var/tmp /etc/passwd: -d /etc/passwd returned 1: /etc/passwd is not a directory (a regular file, mode 0644, owner 0:0)", RemedyAdmin},
		{"not recorded in a snapshot", []string{"-r /etc/passwd"}, change("/etc/passwd", func(f *fileFacts) { f.FileStat, f.NotRecorded = node.FileStat{Path: "/etc/passwd"}, true }), StatusSkip,
			"-r /etc/passwd: /etc/passwd not recorded in this snapshot", ""},
		{"NHC's own: a pipe is readable, not a file", []string{"-a -e -r /dev/fd/63", "-O -G /dev/fd/63", "-d /dev/fd/63"}, map[string]fileFacts{"/dev/fd/63": {FileStat: with(ftPipe, func(s *node.FileStat) { s.Path = "/dev/fd/63" })}}, StatusFail,
			"-d /dev/fd/63: -d /dev/fd/63 returned 1: /dev/fd/63 is not a directory (a named pipe, mode 0600, owner 1000:1000)", RemedyAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tests []fileTest
			for _, s := range tc.tests {
				ft, err := parseFileTest(s)
				if err != nil {
					t.Fatal(err)
				}
				tests = append(tests, ft)
			}
			facts := map[string]fileFacts{}
			for k, v := range tc.facts {
				v.Path = k
				facts[k] = v
			}
			got := judgeFileTests(tests, facts)
			settleRemedy(&got)
			if got.Status != tc.status || got.Summary != tc.summary || got.Remedy != tc.remedy {
				t.Errorf("got %s %q remedy %q\nwant %s %q remedy %q", got.Status, got.Summary, got.Remedy, tc.status, tc.summary, tc.remedy)
			}
			assertRemedies(t, got)
		})
	}
}

// TestFileTestsRun runs the check on fake facts: the skip with no tests, and a stat that
// never answers is hung, not waited for.
func TestFileTestsRun(t *testing.T) {
	env := func(tests []string, f *fakeFacts) *Env {
		cfg := config.Default(Schema())
		cfg.Checks.Get(idFileTests).(*fileTestsConfig).Tests = tests
		return &Env{Config: cfg, Facts: f, Mode: config.ModeHealth}
	}
	res := fileTests{}.Run(context.Background(), env(nil, &fakeFacts{}))
	if res.Status != StatusSkip || res.Summary != "no file tests listed in [checks.file_tests]" {
		t.Errorf("no tests: %s %q", res.Status, res.Summary)
	}
	f := &fakeFacts{stats: map[string]node.FileStat{"/tmp": ftTmp}}
	res = fileTests{}.Run(context.Background(), env([]string{"-d -w /tmp", "-e /scratch"}, f))
	if res.Status != StatusSkip || !strings.Contains(res.Summary, "/scratch not recorded") {
		t.Errorf("a path not recorded: %s %q", res.Status, res.Summary)
	}
	f.stats["/scratch"] = node.FileStat{Missing: true}
	res = fileTests{}.Run(context.Background(), env([]string{"-d -w /tmp", "-e /scratch"}, f))
	if res.Status != StatusFail || res.Summary != "-e /scratch: -e /scratch returned 1: /scratch does not exist" {
		t.Errorf("a missing path: %s %q", res.Status, res.Summary)
	}
	f.statErr = map[string]error{"/scratch": context.DeadlineExceeded}
	res = fileTests{}.Run(context.Background(), env([]string{"-e /scratch"}, f))
	if res.Status != StatusFail || !strings.Contains(res.Summary, "did not answer") {
		t.Errorf("a hung stat: %s %q", res.Status, res.Summary)
	}
}

// TestFileOpMatchesBash holds fileOp on live FileStat facts to bash's own test builtin, which
// NHC's check_file_test runs, for every operator on a tree of each kind of file and on a
// few paths of the running system (procfs, /dev/null). As root, the access(2) operators are
// root's, as NHC's.
func TestFileOpMatchesBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	root := t.TempDir()
	mk := func(name string, mode os.FileMode) {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("plain", 0o644)
	mk("exec", 0o755)
	mk("setuid", os.ModeSetuid|0o755)
	mk("setgid", os.ModeSetgid|0o755)
	mk("none", 0)
	if err := os.WriteFile(filepath.Join(root, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sticky"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "sticky"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("plain", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/dev/null", "/proc/version", "/proc/1", "/proc/sys", "/proc/sys/kernel/hostname", "/sys", "/etc/passwd"}
	for _, n := range []string{"plain", "exec", "setuid", "setgid", "none", "empty", "sticky", "fifo", "link", "dangling", "absent", "plain/under"} {
		paths = append(paths, filepath.Join(root, n))
	}
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		st, err := live.FileStat(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []byte(fileTestOps) {
			want := exec.Command(bash, "-c", `test -`+string(op)+` "$1"`, "bash", p).Run() == nil
			if got := fileOp(op, st); got != want {
				t.Errorf("-%c %s: fileOp %v, bash's test %v (facts %+v)", op, p, got, want, st)
			}
		}
	}
}
