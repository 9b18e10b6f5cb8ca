package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is a directory held open for reading many files in it, each by its name in it (one
// component): a snapshot's IB and PCI listings read a few attributes in each of many deep
// directories, and resolving every attribute from the snapshot's root, component by
// component, cost an openat per component. A Dir reads a file as Read does (regular files
// only, stat'ed before they are opened, opened without blocking, bounded, abandoned at the
// deadline) and never follows a symlink, neither to a file nor to a sub-directory: one name,
// not "." or "..", without following a link, never leads out of the directory. What it
// cannot answer that way (a symlink, an error of any kind), the caller asks its os.Root,
// which follows links as long as they stay inside it.
type Dir struct {
	fd   int
	f    *os.File // the directory when opened through an os.Root (it owns fd); nil otherwise
	name string   // for errors
}

// OpenDirIn opens name in root as a Dir: symlinks on the way are followed as long as they
// stay inside root (os.Root's rule). O_DIRECTORY refuses a FIFO or device where the directory
// belongs without opening it.
func OpenDirIn(root *os.Root, name string) (*Dir, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{fd: int(f.Fd()), f: f, name: name}, nil
}

// Sub opens name, one component, in d as a Dir, without following a symlink (an error for
// one: ask the root). O_DIRECTORY refuses a FIFO or device without opening it.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := oneName("open", d.name, name); err != nil {
		return nil, err
	}
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path.Join(d.name, name), Err: err}
	}
	return &Dir{fd: fd, name: path.Join(d.name, name)}, nil
}

// Beneath opens the directory at name (a path of any depth in d, slash-separated) with one
// openat2(RESOLVE_BENEATH) system call: the kernel resolves it, following symlinks as long as
// they stay inside d and refusing any that leads out of it (EXDEV), absolute ones included,
// and "/proc/self/..." magic links. That is os.Root's rule, from d instead of from the
// root, in one call instead of one per component. A kernel before 5.6 has no openat2
// (ENOSYS): the caller opens component by component.
func (d *Dir) Beneath(name string) (*Dir, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "open", Path: path.Join(d.name, name), Err: errors.New("not a path in the directory")}
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(d.fd, name, &how)
		if try < 3 && (errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN)) {
			continue // EAGAIN: a rename raced the lookup (openat2(2))
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path.Join(d.name, name), Err: err}
		}
		return &Dir{fd: fd, name: path.Join(d.name, name)}, nil
	}
}

// Read reads name, one component, in d as Read reads a path, except that a symlink is
// refused (ErrSymlink) whatever lim says. lim.Check is applied as Read applies it.
func (d *Dir) Read(ctx context.Context, name string, lim Limits) ([]byte, error) {
	if err := oneName("read", d.name, name); err != nil {
		return nil, err
	}
	b, err := read(ctx, name, dirOpener{fd: d.fd, name: name}, lim)
	if pe, ok := err.(*fs.PathError); ok {
		pe.Path = path.Join(d.name, name) // joined only for an error: a listing reads hundreds
	}
	return b, err
}

// Readlink returns the target of the symlink name, one component, in d.
func (d *Dir) Readlink(name string) (string, error) {
	if err := oneName("readlink", d.name, name); err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd, name, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: path.Join(d.name, name), Err: err}
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<16 {
			return "", &fs.PathError{Op: "readlink", Path: path.Join(d.name, name), Err: ErrTooLarge}
		}
		buf = make([]byte, 2*len(buf))
	}
}

// ReadDir lists d, sorted by name, as os.File.ReadDir lists a directory: the entries' types
// are those of the entries themselves (a symlink is a symlink).
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	// A descriptor of its own: listing moves the offset of the one it reads.
	fd, err := openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Close closes d; it must not be used afterwards.
func (d *Dir) Close() error {
	if d.f != nil {
		return d.f.Close()
	}
	return unix.Close(d.fd)
}

// oneName refuses a name that is not one component of a directory.
func oneName(op, dir, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return &fs.PathError{Op: op, Path: path.Join(dir, name), Err: errors.New("not one name in the directory")}
	}
	return nil
}

// dirOpener is read's opener for a name in a Dir.
type dirOpener struct {
	fd   int
	name string
}

func (o dirOpener) stat() (fs.FileInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(o.fd, o.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return fileInfo{name: o.name, mode: fileMode(st.Mode), size: st.Size}, nil
	}
}

func (o dirOpener) open(flag int) (int, func(), error) {
	fd, err := openat(o.fd, o.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|flag)
	if err != nil {
		return -1, nil, err
	}
	return fd, func() { unix.Close(fd) }, nil
}

func (o dirOpener) explain(err error) error { return err }
func (o dirOpener) prefix() bool            { return false }

// openat is unix.Openat, again when a signal interrupts it.
func openat(dirfd int, name string, flag int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}
