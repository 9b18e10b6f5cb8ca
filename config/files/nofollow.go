package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrSymlink is wrapped by the errors of the openers below when the name is a symlink: nodecheck
// runs as root and never writes through one (whoever can plant a link would choose the file
// root writes, creates or trusts); and by Read's, where Limits say not to follow one.
var ErrSymlink = errors.New("it is a symlink, which nodecheck does not follow when it writes as root")

// ErrNotRegular is wrapped when a file nodecheck writes or reads is not a regular file (a FIFO
// would block, a device would take the bytes somewhere else, or give endless ones): by the
// openers below and by Read.
var ErrNotRegular = errors.New("not a regular file")

// OpenAppend opens the file at path for appending, creating it with mode perm: a log file. It
// never follows a symlink at path (an error wrapping ErrSymlink), never blocks on a FIFO and
// refuses anything but a regular file (ErrNotRegular).
func OpenAppend(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, noFollowError(path, err, func() (fs.FileInfo, error) { return os.Lstat(path) })
	}
	if err := mustBeRegular(f, path); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenDir opens the directory at path without following a symlink at its last component (an
// error wrapping ErrSymlink). The caller checks the opened directory (Stat, RootOnly) and then
// works through it with OpenIn and WriteAtomicIn: what it checked is what it uses, even if
// the path is renamed or replaced meanwhile.
func OpenDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		err = noFollowError(path, &fs.PathError{Op: "open", Path: path, Err: err}, func() (fs.FileInfo, error) { return os.Lstat(path) })
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenIn opens name, a plain name (no slash), in the open directory dir with flag (os.O_RDONLY,
// os.O_RDWR|os.O_CREATE, ...) and mode perm for a new file. It never follows a symlink (an
// error wrapping ErrSymlink), never blocks on a FIFO, and refuses anything but a regular file
// (ErrNotRegular): a file nodecheck keeps in its own directory.
func OpenIn(dir *os.File, name string, flag int, perm fs.FileMode) (*os.File, error) {
	path := filepath.Join(dir.Name(), name)
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a plain file name")}
	}
	fd, err := unix.Openat(int(dir.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
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
	f := os.NewFile(uintptr(fd), path)
	if err := mustBeRegular(f, path); err != nil {
		return nil, err
	}
	// O_NONBLOCK only kept the open from waiting on a FIFO; a regular file ignores it.
	return f, nil
}

// WriteAtomicIn is WriteAtomic for name in the open directory dir: the temporary file, the
// rename and the sync all go through dir's descriptor.
func WriteAtomicIn(dir *os.File, name string, data []byte, perm fs.FileMode) (err error) {
	return writeAtomicIn(dir, name, data, perm, tempSuffix)
}

func writeAtomicIn(dir *os.File, name string, data []byte, perm fs.FileMode, next func() string) (err error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return errors.New("the name is not a plain file name")
	}
	dfd := int(dir.Fd())
	f, err := createTemp(dir.Name(), name, next, func(tmp string) (*os.File, error) {
		fd, err := unix.Openat(dfd, tmp, tempFlags, 0o600)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: filepath.Join(dir.Name(), tmp), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp)), nil
	})
	if err != nil {
		return err
	}
	tmp := filepath.Base(f.Name())
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if err = fill(f, data, perm); err != nil {
		return err
	}
	if err = unix.Renameat(dfd, tmp, dfd, name); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(dir.Name(), tmp), New: filepath.Join(dir.Name(), name), Err: err}
	}
	_ = dir.Sync()
	return nil
}

// mustBeRegular closes f and returns an error wrapping ErrNotRegular unless f is a regular file.
func mustBeRegular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s: is %s, %w", path, typeName(fi.Mode()), ErrNotRegular)
	}
	return nil
}

// noFollowError turns the ELOOP of an O_NOFOLLOW open (or, for a directory, ENOTDIR) into an
// error wrapping ErrSymlink when lstat says the name is a symlink; other errors pass through.
func noFollowError(path string, err error, lstat func() (fs.FileInfo, error)) error {
	if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		return err
	}
	if fi, lerr := lstat(); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w", path, ErrSymlink)
	}
	return err
}

// symlinkInfo is the fs.FileInfo of a symlink, for noFollowError.
type symlinkInfo struct{ fs.FileInfo }

func (symlinkInfo) Mode() fs.FileMode { return fs.ModeSymlink }
