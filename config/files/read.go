package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"
)

// Limits say what Read accepts.
type Limits struct {
	// MaxBytes is the largest file accepted; a larger one is an error wrapping ErrTooLarge,
	// never a silently cut read. It must be positive.
	MaxBytes int64
	// FollowSymlinks lets the path's last element be a symlink, read through to its target.
	// Without it a symlink there is refused (ErrSymlink), and the file is opened with
	// O_NOFOLLOW, so a link swapped in after the check is refused too. Links in the
	// directories on the way are followed either way, as the kernel resolves them.
	FollowSymlinks bool
	// Check, when set, judges the opened file from its fstat (so the very inode that is
	// then read, not whatever the path names a moment later) before anything is read: the
	// config's ownership rule. Its error is returned as it is, without Read's path prefix.
	Check func(fs.FileInfo) error

	// anyType accepts files of any type (a FIFO, a device), still bounded and still
	// abandoned at the deadline. Only tests set it: a FIFO with a silent writer is how they
	// stand in for a read that hangs after the open, as one on a hung NFS mount does.
	anyType bool
}

// Read's errors wrap ErrNotRegular or ErrSymlink (nofollow.go), ErrTooLarge, fs.ErrNotExist,
// a permission error or ctx's error, so that a caller tells them apart with errors.Is; none
// of the refusals satisfies errors.Is(err, fs.ErrNotExist), so a file that is there but
// refused is never reported as missing.

// ErrTooLarge is wrapped by Read's error for a file over Limits.MaxBytes.
var ErrTooLarge = errors.New("file too large")

// errIsSymlink is Read's refusal of a symlink: its own words, and errors.Is(ErrSymlink).
var errIsSymlink = kindError{msg: "is a symlink, which nodecheck does not follow here", kind: ErrSymlink}

// kindError is an error with its own text that is one of this package's kinds.
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string        { return e.msg }
func (e kindError) Is(target error) bool { return target == e.kind }

// Read reads the whole regular file at path, for files nodecheck does not own: slurm.conf and
// what it includes, gres.conf, nodecheck.toml, /proc and /sys attributes, a snapshot's
// files, the state files. It is the one way nodecheck reads such a file:
//
//   - It never blocks on what is not a regular file. The path is stat'ed first, so a FIFO,
//     a device, a socket or a directory is refused (ErrNotRegular) without being opened
//     (opening a device can act on it: a tape rewinds, a watchdog device arms), and it is
//     opened with O_NONBLOCK, so a FIFO swapped in after the stat does not block the open
//     either; the opened file is checked again with fstat, and O_NONBLOCK is cleared only
//     once it is known to be a regular file.
//   - It bounds the size: a file over lim.MaxBytes is an error saying so (ErrTooLarge). The
//     size is found by reading, as sysfs reports 4096 for every attribute and /proc 0; a
//     stat size over the limit refuses the file before any read.
//   - It honours ctx: when ctx can be done, the stat, open and read run in a goroutine that
//     Read abandons when ctx is done, returning ctx's error. A read blocked in the kernel (a
//     hung NFS server, a wedged sysfs attribute) cannot be interrupted: that goroutine, and
//     the file it holds open, stay until the read returns or the process exits. nodecheck
//     is a one-shot process, so that is bounded by its life; a long-running caller would
//     leak one goroutine and one file descriptor per hung read.
//
// Errors are *fs.PathError values naming path ("read /etc/slurm/slurm.conf: is a named pipe
// (FIFO), not a regular file"), so callers that strip the PathError keep only the cause.
func Read(ctx context.Context, path string, lim Limits) ([]byte, error) {
	return read(ctx, path, pathOpener{path: path, follow: lim.FollowSymlinks}, lim)
}

// ReadIn is Read for the file name inside root: symlinks are followed only as long as they
// stay inside root (os.Root's rule), and one that leads out of it is refused, named as such.
// A snapshot's files are read this way. lim.FollowSymlinks says whether name's last element
// may be a symlink at all.
func ReadIn(ctx context.Context, root *os.Root, name string, lim Limits) ([]byte, error) {
	return read(ctx, name, rootOpener{root: root, name: name, follow: lim.FollowSymlinks}, lim)
}

// Await runs fn and returns its result, or gives up when ctx is done first and returns an
// *AbandonedError wrapping ctx's error (context.Cause). fn keeps running in its goroutine
// until it returns, and its result is then dropped: Await is for work that cannot be
// interrupted (a read blocked in the kernel, a cgo call into a wedged driver) in a one-shot
// process that must answer by a deadline. fn must not touch what the caller frees once Await
// returns. When ctx can never be done, fn runs in the caller's goroutine.
func Await[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return fn()
	}
	if ctx.Err() != nil {
		return zero, &AbandonedError{Err: context.Cause(ctx)}
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1) // buffered: an abandoned fn must still be able to finish
	start := time.Now()
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		// Both may be ready: a result that is there is better than none.
		select {
		case r := <-ch:
			return r.v, r.err
		default:
		}
		return zero, &AbandonedError{After: time.Since(start), Err: context.Cause(ctx)}
	}
}

// AbandonedError is Await's error when ctx was done before fn returned: After is how long
// fn had run (0: ctx was done already, and fn was not started); Err is ctx's error.
type AbandonedError struct {
	After time.Duration
	Err   error
}

func (e *AbandonedError) Error() string {
	if e.After == 0 {
		return "not started: " + e.Err.Error()
	}
	return fmt.Sprintf("no answer after %s, abandoned (a hung file system or device?): %v", e.After.Round(time.Millisecond), e.Err)
}

func (e *AbandonedError) Unwrap() error { return e.Err }

// ReadUpTo returns a reader of the shape func(path, max) that libraries which judge a file's
// size themselves take (checks/history's Store.Read): it reads as Read does under ctx, with
// max as the limit, except that a file over max gives its first max+1 bytes and no error,
// which is how such a caller learns the file is too large (and then sets it aside rather
// than failing every run). follow is Limits.FollowSymlinks.
func ReadUpTo(ctx context.Context, follow bool) func(path string, max int64) ([]byte, error) {
	return func(path string, max int64) ([]byte, error) {
		lim := Limits{MaxBytes: max, FollowSymlinks: follow}
		return read(ctx, path, pathOpener{path: path, follow: follow, keepOver: true}, lim)
	}
}

// opener is what read needs of a place to read from: a path of this machine, or a name in
// an os.Root.
type opener interface {
	// stat describes the file without opening it: Stat, or Lstat when links are not followed.
	stat() (fs.FileInfo, error)
	// open opens it read-only with flag added, and returns its descriptor and what closes it.
	open(flag int) (fd int, close func(), err error)
	// explain turns an error of stat or open into a clearer one where it can.
	explain(err error) error
	// prefix says whether an over-limit file gives its first MaxBytes bytes, not an error.
	prefix() bool
}

type pathOpener struct {
	path     string
	follow   bool
	keepOver bool
}

func (p pathOpener) stat() (fs.FileInfo, error) {
	if p.follow {
		return os.Stat(p.path)
	}
	return os.Lstat(p.path)
}

// open opens the path with open(2) itself, not os.OpenFile: an *os.File of a regular file
// costs a poller registration that fails (epoll refuses regular files) and a finalizer, and
// the read needs neither.
func (p pathOpener) open(flag int) (int, func(), error) {
	flag |= syscall.O_RDONLY | syscall.O_CLOEXEC
	if !p.follow {
		flag |= syscall.O_NOFOLLOW
	}
	for {
		fd, err := syscall.Open(p.path, flag, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, nil, &fs.PathError{Op: "open", Path: p.path, Err: err}
		}
		return fd, func() { syscall.Close(fd) }, nil
	}
}

func (p pathOpener) explain(err error) error { return err }
func (p pathOpener) prefix() bool            { return p.keepOver }

type rootOpener struct {
	root   *os.Root
	name   string
	follow bool
}

func (r rootOpener) stat() (fs.FileInfo, error) {
	if r.follow {
		return r.root.Stat(r.name)
	}
	return r.root.Lstat(r.name)
}

func (r rootOpener) open(flag int) (int, func(), error) {
	f, err := r.root.OpenFile(r.name, os.O_RDONLY|flag, 0)
	if err != nil {
		return -1, nil, err
	}
	// Fd leaves the descriptor as opened (O_NONBLOCK stays): Go sets no mode of its own on a
	// file opened with O_NONBLOCK. f owns it; the close func keeps f alive until then.
	return int(f.Fd()), func() { f.Close() }, nil
}

// explain names a symlink out of the root: os.Root says only "path escapes from parent".
func (r rootOpener) explain(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err
	}
	fi, lerr := r.root.Lstat(r.name)
	if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return err
	}
	target, lerr := r.root.Readlink(r.name)
	if lerr != nil {
		return err
	}
	return fmt.Errorf("a symlink to %q, which leads outside %s; only files inside it are read (%w)", target, r.root.Name(), bare(err))
}

func (r rootOpener) prefix() bool { return false }

// read is Read and ReadIn: the work, under Await.
func read(ctx context.Context, name string, o opener, lim Limits) ([]byte, error) {
	if lim.MaxBytes <= 0 {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("no size limit given (a nodecheck bug)")}
	}
	b, err := Await(ctx, func() ([]byte, error) { return readNow(o, lim) })
	if ce, ok := err.(checkError); ok {
		return nil, ce.err
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: bare(err)}
	}
	return b, nil
}

// checkError carries Limits.Check's error out of readNow untouched.
type checkError struct{ err error }

func (e checkError) Error() string { return e.err.Error() }

// readNow stats, opens, checks and reads the file; see Read.
func readNow(o opener, lim Limits) ([]byte, error) {
	fi, err := o.stat()
	if err != nil {
		return nil, o.explain(err)
	}
	if err := checkType(fi.Mode(), lim); err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() && fi.Size() > lim.MaxBytes && !o.prefix() {
		return nil, tooLarge(fi.Size(), lim.MaxBytes)
	}
	// O_NONBLOCK: a FIFO swapped in since the stat must not block the open (a FIFO open for
	// reading waits for a writer). O_NOCTTY: a terminal swapped in must not become root's
	// controlling terminal.
	fd, closeFD, err := o.open(syscall.O_NONBLOCK | syscall.O_NOCTTY)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) && !lim.FollowSymlinks {
			return nil, errIsSymlink
		}
		return nil, o.explain(err)
	}
	defer closeFD()
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, err
	}
	if err := checkType(fileMode(st.Mode), lim); err != nil {
		return nil, err
	}
	if lim.Check != nil {
		opened := st // only here on the heap: Check keeps what it likes
		if err := lim.Check(fileInfo{name: fi.Name(), mode: fileMode(st.Mode), size: st.Size, sys: &opened}); err != nil {
			return nil, checkError{err}
		}
	}
	r := &fdReader{fd: fd}
	if fileMode(st.Mode).IsRegular() {
		r.size = st.Size
	}
	b, err := r.readAll(lim.MaxBytes+1, st.Size)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > lim.MaxBytes {
		if o.prefix() {
			return b, nil
		}
		return nil, tooLarge(-1, lim.MaxBytes)
	}
	return b, nil
}

// checkType refuses what is not a regular file, unless lim says any type will do.
func checkType(m fs.FileMode, lim Limits) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		// Only a stat that does not follow links sees one.
		return errIsSymlink
	case lim.anyType:
		return nil
	}
	return fmt.Errorf("is %s, %w", typeName(m), ErrNotRegular)
}

// typeName names a file type the way an admin reads it in an error.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return fmt.Sprintf("of type %s", m.Type())
}

// tooLarge says a file is over the limit; size is -1 when it was found by reading.
func tooLarge(size, limit int64) error {
	if size >= 0 {
		return fmt.Errorf("%w: %s, over the limit of %s for it; is it the right file?", ErrTooLarge, byteSize(size), byteSize(limit))
	}
	return fmt.Errorf("%w: more than %s, the limit for it; is it the right file?", ErrTooLarge, byteSize(limit))
}

// byteSize spells n bytes for an error: "4 MiB (4194304 bytes)", "300 bytes".
func byteSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			v := float64(n) / float64(int64(1)<<u.shift)
			if n%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d %s (%d bytes)", n>>u.shift, u.name, n)
			}
			return fmt.Sprintf("%.1f %s (%d bytes)", v, u.name, n)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// fdReader reads a descriptor opened with O_NONBLOCK. Reads of a regular file ignore
// O_NONBLOCK on Linux's own file systems, but a file system may not: the first read that
// would wait (EAGAIN) clears O_NONBLOCK and waits, as the deadline (Await) bounds the wait.
// Clearing it only then saves a system call per file.
//
// size, when positive, is the size fstat gave the open file: once that much is read, the
// file is read to its end as of the open, and no read(2) is spent on finding the end. Only a
// file that says its true size gets there: sysfs says 4096 for an attribute of a few bytes,
// /proc says 0, and theirs are read to the read that returns nothing.
type fdReader struct {
	fd       int
	blocking bool
	size     int64
	got      int64
}

func (r *fdReader) Read(p []byte) (int, error) {
	if r.size > 0 && r.got == r.size {
		return 0, io.EOF
	}
	for {
		n, err := syscall.Read(r.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN && !r.blocking:
			if err := syscall.SetNonblock(r.fd, false); err != nil {
				return 0, err
			}
			r.blocking = true
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		r.got += int64(n)
		return n, nil
	}
}

// readAll reads up to limit bytes, to the end of the file. A file of up to 512 bytes (every
// sysfs attribute) is read into a buffer on the stack and returned in one allocation of its
// size; a larger one into a buffer of its stat size (when that is below limit: sysfs says
// 4096 and /proc 0 whatever they hold), grown as it must.
func (r *fdReader) readAll(limit, size int64) ([]byte, error) {
	var small [512]byte
	n, err := r.fill(small[:min(int64(len(small)), limit)])
	if err != nil {
		return nil, err
	}
	if n < len(small) && int64(n) < limit {
		return bytes.Clone(small[:n]), nil // the end of the file (fill reads to it or to full)
	}
	c := int64(2 * len(small))
	if size > c && size < limit {
		c = size + 1 // one more byte: the read that finds the end
	}
	b := make([]byte, n, min(c, limit))
	copy(b, small[:n])
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), limit-int64(len(b)))))
		}
		m, err := r.Read(b[len(b):min(int64(cap(b)), limit)])
		b = b[:len(b)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// fill reads into p until it is full or the file ends, and returns how much it read.
func (r *fdReader) fill(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ignoringEINTR calls fn again while a signal interrupts it.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}

// fileInfo is the fs.FileInfo of a stat read without an *os.File: Sys is the
// *syscall.Stat_t of the open file (nil for the stat before the open), as os gives it.
type fileInfo struct {
	name string
	mode fs.FileMode
	size int64
	sys  *syscall.Stat_t
}

func (fi fileInfo) Name() string      { return fi.name }
func (fi fileInfo) Size() int64       { return fi.size }
func (fi fileInfo) Mode() fs.FileMode { return fi.mode }
func (fi fileInfo) ModTime() time.Time {
	if fi.sys == nil {
		return time.Time{}
	}
	return time.Unix(fi.sys.Mtim.Unix())
}
func (fi fileInfo) IsDir() bool { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any {
	if fi.sys == nil {
		return nil
	}
	return fi.sys
}

// fileMode is st_mode as an fs.FileMode, as os spells it (os/stat_linux.go).
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// bare strips an *fs.PathError to its cause, so that the path is named once.
func bare(err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Err != nil {
		return pe.Err
	}
	return err
}
