package nhc

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func parseFile(t *testing.T, name string) []Line {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := Parse(bytes.NewReader(b), name)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// accounted checks that every line is translated or skipped, never both, never neither.
func accounted(t *testing.T, lines []Line, tr Translation) {
	t.Helper()
	for _, l := range lines {
		in := slices.ContainsFunc(tr.Entries, func(e Entry) bool { return e.From.Num == l.Num })
		out := slices.ContainsFunc(tr.Skipped, func(s Skipped) bool { return s.Line.Num == l.Num })
		if in == out {
			t.Errorf("%s %q: translated %v, skipped %v", l.Where(), l.Raw, in, out)
		}
	}
}

// TestImportNHCDefault imports NHC's shipped nhc.conf: what it translates, and that the
// result is a valid nodecheck.toml.
func TestImportNHCDefault(t *testing.T) {
	lines := parseFile(t, "nhc.conf")
	tr := Translate(lines)
	accounted(t, lines, tr)
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.From.Where()+" "+e.Section+"."+e.Key+" = "+e.Value)
	}
	want := []string{
		"nhc.conf:55 memory.mem_free = 1MiB",
		"nhc.conf:81 fs_mounts.mounts = / rw",
		"nhc.conf:104 file_tests.tests = -r -w -x -d -k /tmp /var/tmp",
		"nhc.conf:107 file_tests.tests = -r -s /etc/passwd /etc/group",
		"nhc.conf:110 file_tests.tests = -c -r -w /dev/null /dev/zero",
		"nhc.conf:125 services.processes = sshd root",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(tr.Skipped) != 0 {
		t.Errorf("skipped %d, want none: %+v", len(tr.Skipped), tr.Skipped)
	}
	validTOML(t, tr, len(lines))
}

func validTOML(t *testing.T, tr Translation, total int) {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteTOML(&b, "in.conf", total, "/etc/nhc/nhc-rest.conf", map[string][]string{"services.processes": {"sshd root"}}); err != nil {
		t.Fatal(err)
	}
	// TOML syntax here; cmd/nodecheck's TestImportNHCValid holds it to nodecheck's schema
	// (config may not import checks).
	var doc map[string]any
	if err := toml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("the import is no valid TOML: %v\n%s", err, b.String())
	}
	if sc, _ := doc["site_check"].([]map[string]any); len(tr.Skipped) > 0 && (len(sc) != 1 || sc[0]["name"] != "nhc") {
		t.Errorf("no site check keeping NHC: %+v", doc["site_check"])
	}
}

// TestImportNHCTests imports the check calls of NHC's own tests and its documented targets
// (testdata/SOURCE): every line accounted for, a valid nodecheck.toml, and the lines that
// matter translated as NHC means them.
func TestImportNHCTests(t *testing.T) {
	lines := parseFile(t, "nhc-tests.conf")
	tr := Translate(lines)
	accounted(t, lines, tr)
	validTOML(t, tr, len(lines))
	find := func(raw string) (string, bool) {
		for _, e := range tr.Entries {
			if e.From.Raw == raw {
				return e.Section + "." + e.Key + " = " + e.Value, true
			}
		}
		for _, s := range tr.Skipped {
			if s.Line.Raw == raw {
				return "skipped: " + s.Why, false
			}
		}
		return "absent", false
	}
	tests := []struct{ raw, want string }{
		{"* || check_fs_mount_rw -s /dev/sda1 -t ext4 /boot", "fs_mounts.mounts = /boot rw ext4 /dev/sda1"},
		{"* || check_fs_mount -s '/bluearc[0-9]/' -t 'nfs*' -f /home -f /global/software", "fs_mounts.mounts = /home any nfs* /bluearc[0-9]/"},
		{"* || check_fs_mount_ro /global/software bluearc0:/software nfs", "fs_mounts.mounts = /global/software ro nfs bluearc0:/software"},
		{"* || check_fs_mount -o \"*,vers=3*\" -e true -f /home", "skipped: option -o (mount options) has no equivalent in fs_mounts"},
		{"* || check_fs_free / 19747624", "fs_usage.limits = / free 19747624kB"},
		{"* || check_fs_used /home 68%", "fs_usage.limits = /home used 68%"},
		{"* || check_fs_iused / 370k", "fs_usage.limits = / iused 370k"},
		{"* || check_fs_size /boot 100M 1G", "skipped: check_fs_size"},
		{"* || check_hw_physmem 0 0", "memory.physmem = 0kB 0kB"},
		{"* || check_hw_physmem 32857508 32857508", "skipped: memory.physmem is set already"},
		{"* || check_ps_service -u root sshd", "services.processes = sshd root"},
		{"* || check_ps_service -d rpc.statd -r nfslock", "services.processes = rpc.statd"},
		{"* || check_ps_service -s -u root sshd", "skipped: option -s makes the service one that must NOT run"},
		{"* || check_ps_service -f -m '/rsyslogd -i.* -c 5/' rsyslogd", "skipped: option -f (full command line match)"},
		{"* || check_ps_daemon ntpd ntp", "services.processes = ntpd ntp"},
		{"n00[0-9][0-9] || check_hw_physmem 32gb 32gb 5%", "skipped: target \"n00[0-9][0-9]\" is not every node"},
		{"* || HOSTNAME=\"$HOSTNAME_S\"", "skipped: shell expansion"},
		{"* || check_cmd_dmesg -M 'msg' -m '!/x/'", "skipped: option -M of check_cmd_dmesg"},
		{"* || export NHC_RM=slurm", "skipped: \"export\" is an NHC setting or a command"},
		{"* || check_hw_cpuinfo 2 12 24", "node_inventory.sockets = 2"},
		{"* || check_hw_cpuinfo 2 8 8", "skipped: node_inventory.sockets is set already, by nhc-tests.conf:93"},
		{"* || check_hw_cpuinfo 0 0 0", "skipped: count \"0\": a whole number above 0"},
		{"* || check_hw_eth eth0", "interfaces.present = eth0"},
		{"* || check_ps_loadavg '' 64", "load_average.max_5m = 64"},
		{"* || check_cmd_dmesg -m '!/Out of memory/'", "kernel_log.patterns = !/Out of memory/"},
		{"* || check_hw_mcelog", "machine_checks.enabled = true"},
	}
	for _, tc := range tests {
		got, _ := find(tc.raw)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s...", tc.raw, got, tc.want)
		}
	}
}

// TestTranslateMcelog: check_hw_mcelog turns machine_checks on, which a translation without
// it turns off (the generic checks judge what NHC judges); arguments leave the line out.
func TestTranslateMcelog(t *testing.T) {
	lines, err := Parse(strings.NewReader("* || check_hw_mcelog\n* || check_hw_mcelog --ascii\n"), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	tr := Translate(lines)
	if len(tr.Entries) != 1 || tr.Entries[0].Section+"."+tr.Entries[0].Key+" = "+tr.Entries[0].Value != "machine_checks.enabled = true" {
		t.Errorf("entries %+v", tr.Entries)
	}
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0].Why, "MCELOG_MAX_CORRECTED_RATE") {
		t.Errorf("notes %+v", tr.Notes)
	}
	if len(tr.Skipped) != 1 || !strings.Contains(tr.Skipped[0].Why, "takes no arguments") {
		t.Errorf("skipped %+v", tr.Skipped)
	}
	for _, tc := range []struct {
		tr   Translation
		want bool
		toml string
	}{
		{tr, true, "enabled = true # nhc.conf:1: * || check_hw_mcelog\n"},
		{Translation{}, false, "enabled = false\n"},
	} {
		ov, err := tc.tr.Checks()
		if err != nil || ov["machine_checks"]["enabled"] != tc.want {
			t.Errorf("checks: %v %v, want enabled = %v", ov["machine_checks"], err, tc.want)
		}
		var b strings.Builder
		if err := tc.tr.WriteTOML(&b, "nhc.conf", 2, "", nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "[checks.machine_checks]\n"+tc.toml) {
			t.Errorf("TOML without %q:\n%s", tc.toml, b.String())
		}
	}
}

func TestParse(t *testing.T) {
	in := "# comment\n\n  * || check_a 'x y' \"z\\\"w\" v\\ u\n" +
		"n1 || check_b \\\n  -f /x\n" +
		"no bars here\n" +
		"* || check_c 'open\n" +
		"* ||\n" +
		"* || check_d ; rm -rf /\n" +
		"* || check_e \\"
	lines, err := Parse(strings.NewReader(in), "f.conf")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		s := l.Where() + " [" + l.Target + "] " + strings.Join(l.Words, "|")
		if l.Err != nil {
			s += " ERR " + l.Err.Error()
		}
		got = append(got, s)
	}
	want := []string{
		// bash's read drops every backslash before NHC evals the line: "z\"w" becomes "z"w",
		// which bash's eval then refuses too.
		`f.conf:3 [*]  ERR an unclosed double quote`,
		`f.conf:4 [n1] check_b|-f|/x`,
		`f.conf:6 []  ERR no "||": NHC reads each line as "TARGET || CHECK" (NHC skips this line)`,
		`f.conf:7 [*]  ERR an unclosed single quote`,
		`f.conf:8 [*]  ERR no check after || (NHC skips this line)`,
		`f.conf:9 [*]  ERR shell syntax ";": the importer translates plain words only`,
		`f.conf:10 []  ERR the file ends inside a line continued with a backslash`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNHCSize(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"1mb", "1MiB", ""}, {"32g", "32GiB", ""}, {"1TB", "1TiB", ""}, {"19747624", "19747624kB", ""},
		{"1Gb", "1GiB", ""}, {"12k", "12KiB", ""}, {"1b", "1kB", ""}, {"1.5G", "1.5GiB", ""},
		{"1x", "", "unit"}, {"-1", "", "want a number"}, {"", "", "want a number"},
	}
	for _, tc := range tests {
		got, err := nhcSize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %q %v, want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzImportNHC: any input parses without panic, every line is translated or listed, and
// what is written is valid TOML.
func FuzzImportNHC(f *testing.F) {
	for _, name := range []string{"nhc.conf", "nhc-tests.conf"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("* || check_fs_mount_rw -f '/a b'\n")
	f.Add("* || check_fs_free /tmp 1e9\n")
	f.Add("* || check_ps_service -u 'a\"b' x\n")
	f.Add("* || check_fs_mount_rw -f '/a\x01b\\c'\n* || check_fs_free /\xff 1%\n")
	f.Fuzz(func(t *testing.T, s string) {
		lines, err := Parse(strings.NewReader(s), "fuzz.conf")
		if err != nil {
			return // a line over 64 KiB
		}
		tr := Translate(lines)
		if len(tr.Skipped)+countLines(tr.Entries) != len(lines) {
			t.Fatalf("%d lines, %d translated, %d skipped", len(lines), countLines(tr.Entries), len(tr.Skipped))
		}
		var b bytes.Buffer
		if err := tr.WriteTOML(&b, "fuzz.conf", len(lines), "/etc/nhc/rest.conf", nil); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := toml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("invalid TOML for %q: %v\n%s", s, err, b.String())
		}
	})
}

func countLines(es []Entry) int {
	n, last := 0, -1
	for _, e := range es {
		if e.From.Num != last {
			n++
			last = e.From.Num
		}
	}
	return n
}

// TestTranslateFileTest: check_file_test lines become file_tests entries, and the ones NHC
// refuses, or file_tests cannot run as NHC does, are left out with why.
func TestTranslateFileTest(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"* || check_file_test -r -w -x -d -k /tmp /var/tmp", "file_tests.tests = -r -w -x -d -k /tmp /var/tmp"},
		{"* || check_file_test -O -G -c -r -w /dev/null", "file_tests.tests = -O -G -c -r -w /dev/null"},
		{"* || check_file_test -! -e /etc/nologin", "file_tests.tests = -! -e /etc/nologin"},
		{"* || check_file_test /etc/passwd -f", "file_tests.tests = /etc/passwd -f"},
		{"* || check_file_test -z /tmp", `skipped: check_file_test: syntax error: invalid or unsupported operator "-z"`},
		{"* || check_file_test -rw /tmp", `skipped: check_file_test: syntax error: invalid or unsupported operator "-rw"`},
		{"* || check_file_test -t /dev/tty", "skipped: check_file_test -t asks whether a file descriptor is a terminal"},
		{"* || check_file_test -r", "skipped: check_file_test: syntax error: missing parameters"},
		{"* || check_file_test /tmp", "skipped: check_file_test: syntax error: missing parameters"},
		{"* || check_file_test -r etc/passwd", `skipped: check_file_test file "etc/passwd" is not an absolute path`},
		{"* || check_file_test -c /dev/nvidia*", `skipped: check_file_test file "/dev/nvidia*" holds a glob character`},
		{"* || check_file_test -e '/my file'", `skipped: check_file_test file "/my file" holds a glob character or a blank`},
	} {
		lines, err := Parse(strings.NewReader(tc.line+"\n"), "t.conf")
		if err != nil || len(lines) != 1 {
			t.Fatalf("%s: %v %+v", tc.line, err, lines)
		}
		tr := Translate(lines)
		got := "nothing"
		switch {
		case len(tr.Entries) == 1:
			got = tr.Entries[0].Section + "." + tr.Entries[0].Key + " = " + tr.Entries[0].Value
		case len(tr.Skipped) == 1:
			got = "skipped: " + tr.Skipped[0].Why
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %s\nwant %s", tc.line, got, tc.want)
		}
	}
}

// TestParseCRLF: a file saved with Windows line ends reads as the same lines, continuations
// included.
func TestParseCRLF(t *testing.T) {
	unix := "* || check_fs_mount_rw \\\n  -f /home\n* || check_hw_swap 0 0\n"
	a, err := Parse(strings.NewReader(unix), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(strings.NewReader(strings.ReplaceAll(unix, "\n", "\r\n")), "nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || len(b) != 2 || a[0].Raw != b[0].Raw || a[1].Raw != b[1].Raw || b[0].Err != nil {
		t.Errorf("unix %+v\ncrlf %+v", a, b)
	}
}
