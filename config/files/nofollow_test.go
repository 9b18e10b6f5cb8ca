package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpenAppend(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.log")
	if err := os.Symlink(filepath.Join(dir, "created"), dangling); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"symlink to a file", link, ErrSymlink},
		{"dangling symlink", dangling, ErrSymlink},
		{"FIFO without a reader", fifo, syscall.ENXIO},
		{"directory", dir, syscall.EISDIR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenAppend(tc.path, 0o640)
			if err == nil {
				f.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
		t.Errorf("victim holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "created")); err == nil {
		t.Error("the dangling link's target was created")
	}

	// A plain path: created, then appended to.
	path := filepath.Join(dir, "nodecheck.log")
	for _, line := range []string{"one\n", "two\n"} {
		f, err := OpenAppend(path, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if got, _ := os.ReadFile(path); string(got) != "one\ntwo\n" {
		t.Errorf("log holds %q", got)
	}
}

func TestOpenDirAndIn(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(base, "linked")
	if err := os.Symlink(elsewhere, linkDir); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(linkDir); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenDir of a symlink: %v, want ErrSymlink", err)
	}
	if _, err := OpenDir(filepath.Join(base, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenDir of nothing: %v, want not exist", err)
	}
	d, err := OpenDir(state)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// A symlink planted at the lock's name: never followed, its target never created.
	if err := os.Symlink(filepath.Join(elsewhere, "created"), filepath.Join(state, "lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIn(d, "lock", os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), filepath.Join(state, "lock")) {
		t.Errorf("OpenIn of a planted symlink: %v, want ErrSymlink naming the path", err)
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "created")); err == nil {
		t.Error("the symlink's target was created")
	}
	if err := syscall.Mkfifo(filepath.Join(state, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIn(d, "fifo", os.O_RDONLY, 0); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenIn of a FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := OpenIn(d, "../elsewhere/x", os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		t.Error("OpenIn took a name with a slash")
	}
	f, err := OpenIn(d, "new", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	// The directory renamed and a symlink put in its place after it was opened: writes
	// through d still land in the directory that was opened.
	moved := filepath.Join(base, "moved")
	if err := os.Rename(state, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, state); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomicIn(d, "drain.json", []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(moved, "drain.json")); err != nil || string(got) != "{}\n" {
		t.Errorf("drain.json in the opened directory: %q, %v", got, err)
	}
	if diff := cmp.Diff([]string{}, append([]string{}, readDir(t, elsewhere)...)); diff != "" {
		t.Errorf("the symlink's target got entries (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicIn(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, ".drain.json.tmp1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "drain.json")); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomicIn(d, "drain.json", []byte("new\n"), 0o600, names("1", "2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
		t.Errorf("victim holds %q", got)
	}
	fi, err := os.Lstat(filepath.Join(dir, "drain.json"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("drain.json: %v, %v; want a regular file of mode 0600", fi, err)
	}
	want := []string{".drain.json.tmp1", "drain.json", "victim"}
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if err := WriteAtomicIn(d, bad, nil, 0o600); err == nil {
			t.Errorf("WriteAtomicIn(%q) took it", bad)
		}
	}
}
