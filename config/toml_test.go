package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// update is accepted so that `go test ./... -update` runs here too; config keeps no goldens
// of its own (`config show` is pinned in checks, with nodecheck's sections).
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// TestParseConfigErrorName checks that the name given to ParseConfig starts each line.
func TestParseConfigErrorName(t *testing.T) {
	_, err := ParseConfig([]byte("x = 1\ny = 2\n"), "/etc/nodecheck/nodecheck.toml", testSchema())
	want := "/etc/nodecheck/nodecheck.toml:1: unknown key \"x\" (keys allowed here: fail_closed, stop_on_first_failure, error_is_failure, slurm_conf, prom_file, budget, log, drain, repair, state, validate, checks, group, site_check)\n" +
		"/etc/nodecheck/nodecheck.toml:2: unknown key \"y\" (keys allowed here: fail_closed, stop_on_first_failure, error_is_failure, slurm_conf, prom_file, budget, log, drain, repair, state, validate, checks, group, site_check)"
	if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestParseConfigManyErrorsAreCut(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "bogus%d = 1\n", i)
	}
	_, err := ParseConfig([]byte(b.String()), "n.toml", testSchema())
	lines := strings.Split(fmt.Sprint(err), "\n")
	if got, want := len(lines), tomlMaxErrors+1; got != want {
		t.Fatalf("got %d lines of error, want %d", got, want)
	}
	if got, want := lines[len(lines)-1], "n.toml: and 10 more problems"; got != want {
		t.Errorf("last line = %q, want %q", got, want)
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
	good := []byte("[checks.ports]\nmin_rate = 200\n")
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
	bad := write("bad.toml", []byte("[checks.ports]\nmin_rat = 200\n"), 0o644)

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
			wantAsRoot: "read nodecheck config " + dir + ": is a directory, not a regular file; give the path of the file",
			wantAsUser: "read nodecheck config " + dir + ": is a directory, not a regular file; give the path of the file",
		},
		{
			name:       "too big",
			path:       big,
			wantAsRoot: "read nodecheck config " + big + ": file too large: 1.0 MiB (1048580 bytes), over the limit of 1 MiB (1048576 bytes) for it; is it the right file?",
			wantAsUser: "read nodecheck config " + big + ": file too large: 1.0 MiB (1048580 bytes), over the limit of 1 MiB (1048576 bytes) for it; is it the right file?",
		},
		{
			name:       "invalid content names the path and line",
			path:       bad,
			wantAsRoot: bad + `:2: unknown key "checks.ports.min_rat" (did you mean "min_rate"?)`,
			wantAsUser: bad + `:2: unknown key "checks.ports.min_rat" (did you mean "min_rate"?)`,
		},
	}
	// A FIFO or a device is refused at once, as root or not: opening or reading it must not
	// hang a prolog or fill memory.
	fifoErr := "read nodecheck config " + fifo + ": is a named pipe (FIFO), not a regular file; give the path of the file"
	zeroErr := "read nodecheck config /dev/zero: is a character device, not a regular file; give the path of the file"
	zeroLink := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	zeroLinkErr := "read nodecheck config " + zeroLink + ": is a character device, not a regular file; give the path of the file"
	if root {
		zeroLinkErr = "check nodecheck config " + zeroLink + ": it is a symlink, which nodecheck does not follow as root (the link and its target could be changed separately); give --config /dev/zero, or replace the link with the file"
	}
	tests = append(tests, []struct{ name, path, wantAsRoot, wantAsUser string }{
		{name: "fifo", path: fifo, wantAsRoot: fifoErr, wantAsUser: fifoErr},
		{name: "/dev/zero", path: "/dev/zero", wantAsRoot: zeroErr, wantAsUser: zeroErr},
		{name: "link to /dev/zero", path: zeroLink, wantAsRoot: zeroLinkErr, wantAsUser: zeroLinkErr},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.wantAsUser
			if root {
				want = tc.wantAsRoot
			}
			cfg, err := LoadConfig(tc.path, testSchema())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("LoadConfig(%s) as euid %d (-want +got):\n%s", tc.path, os.Geteuid(), diff)
			}
			if err == nil {
				if p, _ := SectionOf[*testPorts](cfg, "ports"); cfg.Path != tc.path || p.MinRate != 200 {
					t.Errorf("LoadConfig(%s) = Path %q, min_rate %v; want the path and 200", tc.path, cfg.Path, p.MinRate)
				}
			}
		})
	}

	t.Run("missing file wraps fs.ErrNotExist", func(t *testing.T) {
		_, err := LoadConfig(filepath.Join(dir, "absent.toml"), testSchema())
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
		_, err := LoadConfig(p, testSchema())
		want := "check nodecheck config " + p + ": owned by uid 1000, not root, and nodecheck runs as root; run: chown root " + p
		if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
			t.Errorf("LoadConfig (-want +got):\n%s", diff)
		}
	})
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

func ExamplePeekFailClosed() {
	broken := []byte("fail_closed = true\n\n[checks.ib_ports\nmin_rate_gbps = 200\n")
	_, err := ParseConfig(broken, "nodecheck.toml", testSchema())
	fmt.Println(err != nil, PeekFailClosed(broken))
	// Output: true true
}
