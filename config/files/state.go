package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// StateDir is nodecheck's state directory, opened once by a run and handed to everything
// that keeps a file there (drain.json and the runs' lock, repair.json, the last NCCL result,
// history/). One rule holds for all of it: the directory is created 0700 (unless the run is
// read-only), opened without following a symlink, and, when nodecheck runs as root, trusted
// only when root owns it and nobody else may write it (RootOnly), since its files decide
// when a drained node is resumed and what fails a node. Every file in it is read and written
// through the descriptor of the directory that was checked: what was checked is what is used.
type StateDir struct {
	path     string
	dir      *os.File // nil: a read-only run found no directory, an empty state
	readOnly bool
	asRoot   bool
	subs     []*StateDir // opened through Sub: closed with this one
}

// OpenStateDir opens path as a state directory. euid is the effective user (0: hold it and
// its files to RootOnly). A read-only open (a dry run) creates nothing, and a directory that
// does not exist then is an empty state (Exists false), not an error. The errors name the
// path and, for a directory root must not trust, the commands that fix it.
func OpenStateDir(path string, euid int, readOnly bool) (*StateDir, error) {
	s := &StateDir{path: path, readOnly: readOnly, asRoot: euid == 0}
	if path == "" {
		return nil, errors.New("no state directory: [state] dir is empty")
	}
	if !readOnly {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, fmt.Errorf("create state directory: %w", err)
		}
	}
	d, err := s.openTrusted(path, func() (*os.File, error) { return OpenDir(path) })
	if readOnly && errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	s.dir = d
	return s, nil
}

// openTrusted opens a directory with open and applies the trust rule to it.
func (s *StateDir) openTrusted(path string, open func() (*os.File, error)) (*os.File, error) {
	d, err := open()
	switch {
	case errors.Is(err, ErrSymlink):
		return nil, fmt.Errorf("state directory %s is a symlink, which nodecheck does not follow as root: set [state] dir to the directory itself", path)
	case err != nil:
		return nil, fmt.Errorf("open state directory: %w", err)
	}
	if s.asRoot {
		if err := trustedByRoot("state directory", path, d); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// ErrUntrusted is wrapped by the error of a file or directory that root must not trust: not
// owned by root, or writable by others (RootOnly).
var ErrUntrusted = errors.New("not trusted by root")

// untrustedError says what is wrong with a file root must not trust, and how to fix it.
type untrustedError struct{ msg string }

func (e untrustedError) Error() string        { return e.msg }
func (e untrustedError) Is(target error) bool { return target == ErrUntrusted }

// trustedByRoot applies RootOnly to the opened f: an error wrapping ErrUntrusted naming what
// and path, with the commands that fix it.
func trustedByRoot(what, path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	problems, fixes, ok := RootOnly(path, fi)
	switch {
	case !ok:
		return untrustedError{fmt.Sprintf("%s %s: its owner is unknown (%T); as root nodecheck trusts only what root owns", what, path, fi.Sys())}
	case len(problems) > 0:
		return untrustedError{fmt.Sprintf("%s %s is %s, and nodecheck runs as root; run: %s", what, path, strings.Join(problems, " and "), strings.Join(fixes, " && "))}
	}
	return nil
}

// Path is the directory's path, for messages.
func (s *StateDir) Path() string { return s.path }

// Exists reports whether the directory is there (false only for a read-only open of a
// directory that does not exist).
func (s *StateDir) Exists() bool { return s != nil && s.dir != nil }

// ReadOnly reports whether the run may not write here (a dry run).
func (s *StateDir) ReadOnly() bool { return s.readOnly }

// ReadFile reads name, a plain file name in the directory: nil and no error when it does not
// exist (or the directory does not). It never follows a symlink, refuses anything but a
// regular file and, as root, a file that root does not own or others may write, and reads at
// most max bytes (past that: the first max bytes and an error wrapping ErrTooLarge).
func (s *StateDir) ReadFile(name string, max int64) ([]byte, error) {
	if !s.Exists() {
		return nil, nil
	}
	path := filepath.Join(s.path, name)
	f, err := OpenIn(s.dir, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if s.asRoot {
		if err := trustedByRoot("state file", path, f); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return data[:max], fmt.Errorf("read %s: %w: larger than %d bytes", path, ErrTooLarge, max)
	}
	return data, nil
}

// Remove removes the file name from the directory (a plain name; never what a symlink there
// points at).
func (s *StateDir) Remove(name string) error {
	if s.readOnly || !s.Exists() {
		return fmt.Errorf("remove %s: %w", filepath.Join(s.path, name), errReadOnly)
	}
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("remove %s: %q is not a plain file name", s.path, name)
	}
	if err := unix.Unlinkat(int(s.dir.Fd()), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(s.path, name), Err: err}
	}
	return nil
}

// Names lists the names in the directory, sorted (none when it does not exist).
func (s *StateDir) Names() ([]string, error) {
	if !s.Exists() {
		return nil, nil
	}
	d, err := openDirIn(s.dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// errReadOnly is the error of a write in a read-only state directory.
var errReadOnly = errors.New("a dry run writes nothing to the state directory")

// WriteFile replaces name with data atomically (mode 0600) through the directory's
// descriptor: a run killed midway leaves the old file or the new one, never a part, and
// nothing is written through a symlink.
func (s *StateDir) WriteFile(name string, data []byte) error {
	if s.readOnly || !s.Exists() {
		return fmt.Errorf("write %s: %w", filepath.Join(s.path, name), errReadOnly)
	}
	if err := WriteAtomicIn(s.dir, name, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(s.path, name), err)
	}
	return nil
}

// Rename renames old to new in the directory (setting a bad file aside), never through a
// symlink's target: both are plain names in the opened directory.
func (s *StateDir) Rename(oldName, newName string) error {
	if s.readOnly || !s.Exists() {
		return fmt.Errorf("rename %s: %w", filepath.Join(s.path, oldName), errReadOnly)
	}
	for _, n := range []string{oldName, newName} {
		if n == "" || n == "." || n == ".." || filepath.Base(n) != n {
			return fmt.Errorf("rename %s: %q is not a plain file name", s.path, n)
		}
	}
	return renameIn(s.dir, oldName, newName)
}

// Lock takes the exclusive lock name in the directory (LockIn: created 0600, never through a
// symlink), waiting at most wait and never past ctx's deadline; an error wrapping ErrLocked
// when the wait runs out. unlock releases it. A read-only run takes no lock (it writes
// nothing) and gets an unlock that does nothing.
func (s *StateDir) Lock(ctx context.Context, name string, wait time.Duration) (unlock func(), err error) {
	if s.readOnly || !s.Exists() {
		return func() {}, nil
	}
	f, err := LockIn(ctx, s.dir, name, wait)
	if err != nil {
		return nil, err
	}
	return func() { Unlock(f) }, nil
}

// Sub opens the subdirectory name (history/) under the same rule: created 0700 unless
// read-only, not a symlink, trusted by root. A read-only run that finds none gets an empty
// one (Exists false).
func (s *StateDir) Sub(name string) (*StateDir, error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return nil, fmt.Errorf("state directory %s: %q is not a plain directory name", s.path, name)
	}
	sub := &StateDir{path: filepath.Join(s.path, name), readOnly: s.readOnly, asRoot: s.asRoot}
	if !s.Exists() {
		return sub, nil
	}
	if !s.readOnly {
		if err := mkdirIn(s.dir, name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create state directory %s: %w", sub.path, err)
		}
	}
	d, err := sub.openTrusted(sub.path, func() (*os.File, error) { return openDirIn(s.dir, name) })
	if s.readOnly && errors.Is(err, fs.ErrNotExist) {
		return sub, nil
	}
	if err != nil {
		return nil, err
	}
	sub.dir = d
	s.subs = append(s.subs, sub)
	return sub, nil
}

// Close closes the directory and those opened through Sub; the locks taken through them
// stay until their unlock.
func (s *StateDir) Close() error {
	if s == nil || s.dir == nil {
		return nil
	}
	for _, sub := range s.subs {
		sub.Close()
	}
	s.subs = nil
	err := s.dir.Close()
	s.dir = nil
	return err
}

// openDirIn opens the directory name in dir without following a symlink (an error wrapping
// ErrSymlink for one).
func openDirIn(dir *os.File, name string) (*os.File, error) {
	path := filepath.Join(dir.Name(), name)
	fd, err := openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, noFollowError(path, &fs.PathError{Op: "open", Path: path, Err: err}, func() (fs.FileInfo, error) {
			var st unix.Stat_t
			if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return nil, err
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return symlinkInfo{}, nil
			}
			return nil, errors.New("not a symlink")
		})
	}
	return os.NewFile(uintptr(fd), path), nil
}

// mkdirIn makes the directory name in dir with perm (an error wrapping fs.ErrExist when
// something is there already).
func mkdirIn(dir *os.File, name string, perm fs.FileMode) error {
	if err := unix.Mkdirat(int(dir.Fd()), name, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return nil
}

// renameIn renames oldName to newName inside dir.
func renameIn(dir *os.File, oldName, newName string) error {
	dfd := int(dir.Fd())
	if err := unix.Renameat(dfd, oldName, dfd, newName); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(dir.Name(), oldName), New: filepath.Join(dir.Name(), newName), Err: err}
	}
	return nil
}

// State is a run's state directory: its path resolved once (and where the path came from,
// for messages), opened at the first use by OpenStateDir's rule, and that one directory, or
// that one error, handed to every later use. A run that never needs its state (a healthy
// prolog) never opens it. Safe for concurrent use.
type State struct {
	path, from string
	readOnly   bool
	euid       int
	once       sync.Once
	dir        *StateDir
	err        error
}

// NewState is the state directory at path ("" when none is configured), from where the path
// came from ("[state] dir", "--state-dir"), read-only for a dry run; euid is the effective
// user whose trust rule applies (os.Geteuid()).
func NewState(path, from string, euid int, readOnly bool) *State {
	return &State{path: path, from: from, euid: euid, readOnly: readOnly}
}

// Path is the directory's path ("" when none is configured); From where it came from.
func (s *State) Path() string { return s.path }

// From says where the path came from ("[state] dir", "--state-dir").
func (s *State) From() string { return s.from }

// Configured reports whether the run has a state directory at all.
func (s *State) Configured() bool { return s != nil && s.path != "" }

// ReadOnly reports whether the run may not write its state (a dry run).
func (s *State) ReadOnly() bool { return s != nil && s.readOnly }

// Open opens the directory on the first call and returns it, or the error, on every call.
func (s *State) Open() (*StateDir, error) {
	if !s.Configured() {
		return nil, errors.New("no state directory ([state] dir is empty)")
	}
	s.once.Do(func() { s.dir, s.err = OpenStateDir(s.path, s.euid, s.readOnly) })
	return s.dir, s.err
}

// Close closes the directory if it was opened.
func (s *State) Close() error {
	if s == nil || s.dir == nil {
		return nil
	}
	return s.dir.Close()
}
