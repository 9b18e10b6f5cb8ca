package files

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeInfo is an fs.FileInfo with a chosen mode and owner.
type fakeInfo struct {
	mode fs.FileMode
	sys  any
}

func (f fakeInfo) Name() string       { return "x" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return f.sys }

func TestRootOnly(t *testing.T) {
	uid := func(u uint32) *syscall.Stat_t { return &syscall.Stat_t{Uid: u} }
	tests := []struct {
		name     string
		path     string
		fi       fakeInfo
		problems []string
		fixes    []string
		ok       bool
	}{
		{"root, 0700 directory", "/var/lib/nodecheck", fakeInfo{fs.ModeDir | 0o700, uid(0)}, nil, nil, true},
		{"root, 0755 directory", "/var/lib/nodecheck", fakeInfo{fs.ModeDir | 0o755, uid(0)}, nil, nil, true},
		{"root, 0644 file", "/etc/nodecheck/nodecheck.toml", fakeInfo{0o644, uid(0)}, nil, nil, true},
		{"another user's world-writable directory", "/tmp/state dir", fakeInfo{fs.ModeDir | 0o777, uid(1000)},
			[]string{"owned by uid 1000, not root", "mode -rwxrwxrwx lets group or others write it"},
			[]string{"chown root '/tmp/state dir'", "chmod go-w '/tmp/state dir'"}, true},
		{"group-writable", "/var/lib/nodecheck", fakeInfo{fs.ModeDir | 0o770, uid(0)},
			[]string{"mode -rwxrwx--- lets group or others write it"}, []string{"chmod go-w /var/lib/nodecheck"}, true},
		{"another owner, private", "/x", fakeInfo{0o600, uid(1)}, []string{"owned by uid 1, not root"}, []string{"chown root /x"}, true},
		{"owner unknown", "/x", fakeInfo{0o600, nil}, nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems, fixes, ok := RootOnly(tc.path, tc.fi)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.fixes, fixes); diff != "" {
				t.Errorf("fixes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRootOnlyReal: the rule on a real directory, as root (chown needs it).
func TestRootOnlyReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a directory away; TestRootOnly covers the rule")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if problems, _, ok := RootOnly(dir, fi); !ok || problems != nil {
		t.Fatalf("root's 0700 directory: %v %v", problems, ok)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Lstat(dir)
	problems, fixes, _ := RootOnly(dir, fi)
	if len(problems) != 2 || len(fixes) != 2 {
		t.Errorf("nobody's 0777 directory: problems %q fixes %q, want two of each", problems, fixes)
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/var/lib/nodecheck", "/var/lib/nodecheck"},
		{"", "''"},
		{"/tmp/a b", "'/tmp/a b'"},
		{"/tmp/it's", `'/tmp/it'\''s'`},
		{"Reason=x:y,z", "Reason=x:y,z"},
		{"$(reboot)", "'$(reboot)'"},
	} {
		if got := ShellQuote(tc.in); got != tc.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
