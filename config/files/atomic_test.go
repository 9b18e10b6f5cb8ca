package files

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// names returns a next func for writeAtomic that yields the given suffixes in turn.
func names(s ...string) func() string {
	i := 0
	return func() string {
		n := s[i%len(s)]
		i++
		return n
	}
}

func readDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteAtomicModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "nodecheck.prom")
	for _, perm := range []os.FileMode{0o644, 0o600, 0o640} {
		if err := WriteAtomic(path, []byte("x\n"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != perm {
			t.Errorf("mode %s, want %s", fi.Mode(), perm)
		}
	}
	if diff := cmp.Diff([]string{"nodecheck.prom"}, readDir(t, dir)); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}
}

// A symlink planted at the destination is replaced by the file; its target is not written.
func TestWriteAtomicReplacesSymlinkAtPath(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "drain.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
		t.Errorf("the link's target now holds %q: written through the symlink", got)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("%s is %s after the write, want a regular file", path, fi.Mode())
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("%s holds %q, want %q", path, got, "new\n")
	}
}

// A symlink planted at the temporary file's name is never opened: the writer takes the next
// name and leaves the link alone.
func TestWriteAtomicRefusesSymlinkAtTempName(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, ".state.json.tmp1")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, ".state.json.tmp2")
	if err := os.Symlink(filepath.Join(dir, "would-be-created"), dangling); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.json")
	if err := writeAtomic(path, []byte("new\n"), 0o644, names("1", "2", "3")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
		t.Errorf("the planted link's target now holds %q", got)
	}
	want := []string{".state.json.tmp1", ".state.json.tmp2", "state.json", "victim"}
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}

	// Every name taken: an error, and path is left as it was.
	err := writeAtomic(path, []byte("newer\n"), 0o644, names("1", "2"))
	if err == nil || !strings.Contains(err.Error(), "16 names taken") {
		t.Fatalf("error %v, want one saying the names are taken", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("%s holds %q after a failed write, want the old %q", path, got, "new\n")
	}
}

func TestWriteAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "isdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, wantPrefix string
	}{
		{"missing directory", filepath.Join(dir, "absent", "f"), "open " + filepath.Join(dir, "absent")},
		{"path is a directory", filepath.Join(dir, "isdir"), "rename "},
		{"path ends in a slash", dir + "/", "the path names a directory, not a file"},
		{"path is dot-dot", filepath.Join(dir, "isdir") + "/..", "the path names a directory, not a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteAtomic(tc.path, []byte("x"), 0o644)
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantPrefix) {
				t.Fatalf("error %v, want one starting %q", err, tc.wantPrefix)
			}
		})
	}
	// The failed rename left no temporary file behind.
	if diff := cmp.Diff([]string{"isdir"}, readDir(t, dir)); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}
}

// TestWriteAtomicReaders: readers polling while the file is rewritten with contents of
// different lengths only ever see one whole content or the other.
func TestWriteAtomicReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	contents := [][]byte{bytes.Repeat([]byte("a"), 10), bytes.Repeat([]byte("bc"), 3000)}
	if err := WriteAtomic(path, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, torn atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				got, err := os.ReadFile(path)
				reads.Add(1)
				if err != nil || !(bytes.Equal(got, contents[0]) || bytes.Equal(got, contents[1])) {
					torn.Add(1)
				}
			}
		})
	}
	for i := range 400 {
		if err := WriteAtomic(path, contents[i%2], 0o644); err != nil {
			t.Error(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() > 0 || reads.Load() == 0 {
		t.Errorf("%d of %d reads saw a missing or partial file", torn.Load(), reads.Load())
	}
}

func ExampleWriteAtomic() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "drain.json")
	if err := WriteAtomic(path, []byte(`{"format": 1}`+"\n"), 0o600); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output: {"format": 1}
}
