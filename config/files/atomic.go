package files

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// tempTries bounds the names WriteAtomic tries for its temporary file; each clash with an
// existing entry (a leftover, or something planted) costs one.
const tempTries = 16

// WriteAtomic replaces the file at path with data, all or nothing: it writes a temporary
// file in the same directory, gives it mode perm (not masked by the umask), syncs it, renames
// it over path and syncs the directory, so a reader sees the old file or the new one, never a
// part, and a crash at any point leaves one of the two. The directory must exist.
//
// It never follows a symlink. The temporary file is created with O_EXCL and O_NOFOLLOW under
// a random name starting with a dot (".NAME.tmp123", which a reader globbing "*.prom" or
// "*.json" skips), so a link planted at that name is refused and another name tried. A
// symlink at path itself is replaced by the new file, as rename(2) replaces a directory
// entry: the link's target is never opened or changed. On error the temporary file is
// removed and path is left as it was.
func WriteAtomic(path string, data []byte, perm fs.FileMode) error {
	return writeAtomic(path, data, perm, tempSuffix)
}

// tempSuffix is a random suffix for a temporary file's name.
func tempSuffix() string { return strconv.FormatUint(uint64(rand.Uint32()), 10) }

// writeAtomic is WriteAtomic with the temporary file's name suffixes from next, for tests.
func writeAtomic(path string, data []byte, perm fs.FileMode, next func() string) (err error) {
	dir, base := filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return errors.New("the path names a directory, not a file")
	}
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base, next, func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), tempFlags, 0o600)
	})
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = fill(f, data, perm); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The new file is in place; a directory that cannot be synced does not undo that.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// tempFlags create a new file and never open an existing one or a symlink.
const tempFlags = os.O_WRONLY | os.O_CREATE | os.O_EXCL | syscall.O_NOFOLLOW | syscall.O_CLOEXEC

// createTemp creates a new, empty file of mode 0600 named ".BASE.tmpN" through create (which
// opens a name with tempFlags, in the directory where names), never through a symlink.
func createTemp(where, base string, next func() string, create func(name string) (*os.File, error)) (*os.File, error) {
	var err error
	for range tempTries {
		var f *os.File
		f, err = create("." + base + ".tmp" + next())
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("create a temporary file in %s: %d names taken: %w", where, tempTries, err)
}

// fill writes data to the new file f, gives it mode perm, syncs and closes it.
func fill(f *os.File, data []byte, perm fs.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
