package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodecheck/nodecheck/config/files"
)

// FileStat is what stat(2), lstat(2) and faccessat(2) say of a path: the facts behind
// test(1)'s file operators, which NHC's check_file_test runs (test -r /etc/passwd). No
// content is read. Its JSON form is an entry of a snapshot's stats.json.
type FileStat struct {
	Path string `json:"path"`
	// Missing: neither stat nor lstat found the path (ENOENT, ENOTDIR). The other fields
	// but EUID and EGID are then empty.
	Missing bool `json:"missing,omitempty"`
	// Symlink: lstat says the path itself is a symbolic link (test -h, -L), dangling or not.
	Symlink bool `json:"symlink,omitempty"`
	// Type is stat's, symlinks followed: "file", "dir", "char", "block", "fifo", "socket" or
	// "other"; "" when Missing or when the path is a symlink that resolves nowhere.
	Type string `json:"type,omitempty"`
	// Mode is st_mode & 07777: the permission bits, setuid (04000), setgid (02000) and
	// sticky (01000).
	Mode uint32 `json:"mode,omitempty"`
	UID  uint32 `json:"uid,omitempty"`
	GID  uint32 `json:"gid,omitempty"`
	Size int64  `json:"size,omitempty"`
	// ATime and MTime are st_atime and st_mtime (test -N: modified since last read).
	ATime time.Time `json:"atime,omitzero"`
	MTime time.Time `json:"mtime,omitzero"`
	// EUID and EGID are the reader's effective ids, which test -O and -G compare the owner
	// with (NHC runs as root: 0).
	EUID uint32 `json:"euid"`
	EGID uint32 `json:"egid"`
	// Readable, Writable and Executable are faccessat(2) with R_OK, W_OK, X_OK and
	// AT_EACCESS, as bash's test -r, -w, -x ask (effectiveAccess): as root, -w is false on a read-only
	// filesystem (EROFS) and -x true when any x bit is set or the path is a directory.
	Readable   bool `json:"readable,omitempty"`
	Writable   bool `json:"writable,omitempty"`
	Executable bool `json:"executable,omitempty"`
	// Error says why stat gave nothing when the path is not simply absent (EACCES on a
	// directory above it, EIO); the other fields but EUID and EGID are then empty.
	Error string `json:"error,omitempty"`
}

// fileTypes are the values of FileStat.Type.
var fileTypes = []string{"", "file", "dir", "char", "block", "fifo", "socket", "other"}

// FileStat implements Facts: lstat, stat and three faccessat calls on the path, under
// files.Await, so that a stat blocked on a hung NFS server is abandoned at ctx's end (the
// goroutine stays blocked until the server answers or the process exits).
func (l *Live) FileStat(ctx context.Context, path string) (FileStat, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return FileStat{}, fmt.Errorf("stat: %w", err)
	}
	host := l.hostPath(p)
	st, err := files.Await(ctx, func() (FileStat, error) { return statFile(host), nil })
	if err != nil {
		return FileStat{}, fmt.Errorf("stat %s: %w", p, err)
	}
	st.Path = p
	return st, nil
}

// statFile describes host without its Path.
func statFile(host string) FileStat {
	st := FileStat{EUID: uint32(os.Geteuid()), EGID: uint32(os.Getegid())}
	var lst unix.Stat_t
	lerr := unix.Lstat(host, &lst)
	st.Symlink = lerr == nil && lst.Mode&unix.S_IFMT == unix.S_IFLNK
	var s unix.Stat_t
	if err := unix.Stat(host, &s); err != nil {
		switch {
		case st.Symlink: // dangling or looping: only -h and -L hold
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			st.Missing = true
		default:
			st.Error = "stat: " + err.Error()
		}
		return st
	}
	st.Type = statType(s.Mode)
	st.Mode = s.Mode & 0o7777
	st.UID, st.GID, st.Size = s.Uid, s.Gid, s.Size
	st.ATime = time.Unix(s.Atim.Unix()).UTC()
	st.MTime = time.Unix(s.Mtim.Unix()).UTC()
	for _, a := range []struct {
		mode uint32
		set  *bool
	}{{unix.R_OK, &st.Readable}, {unix.W_OK, &st.Writable}, {unix.X_OK, &st.Executable}} {
		*a.set = effectiveAccess(host, a.mode) == nil
	}
	return st
}

// effectiveAccess is faccessat(2) with AT_EACCESS as glibc makes it, which bash's test
// calls: where the real and effective ids are the same (root running NHC or nodecheck), the
// kernel's own access(2), which says EROFS for a write on a read-only filesystem. x/sys's
// Faccessat emulates AT_EACCESS in user space where the kernel lacks faccessat2, and its
// emulation lets root write anything, read-only filesystem or not.
func effectiveAccess(host string, mode uint32) error {
	if os.Getuid() == os.Geteuid() && os.Getgid() == os.Getegid() {
		return unix.Faccessat(unix.AT_FDCWD, host, mode, 0)
	}
	return unix.Faccessat(unix.AT_FDCWD, host, mode, unix.AT_EACCESS)
}

// statType names st_mode's file type as FileStat.Type does.
func statType(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFCHR:
		return "char"
	case unix.S_IFBLK:
		return "block"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "other"
}

// statsFile is the snapshot's record of FileStat answers.
const statsFile = "stats.json"

// statRecord is one entry of stats.json: a FileStat and its delay.
type statRecord struct {
	FileStat
	DelayMS int `json:"delay_ms,omitempty"` // stall FileStat of this path that long
}

// parseStats decodes and checks stats.json into a map by path.
func parseStats(b []byte) (map[string]statRecord, error) {
	return recordsByPath(statsFile, b, func(r statRecord) string { return r.Path }, func(r statRecord) error {
		switch {
		case !slices.Contains(fileTypes, r.Type):
			return fmt.Errorf("type %q is not one of %s", r.Type, strings.Join(fileTypes[1:], ", "))
		case r.Missing && (r.Type != "" || r.Symlink || r.Error != ""):
			return errors.New("missing, yet has a type, a link or an error")
		case r.Mode > 0o7777:
			return fmt.Errorf("mode %o has bits above 07777", r.Mode)
		case r.DelayMS < 0:
			return fmt.Errorf("delay_ms %d is negative", r.DelayMS)
		}
		return nil
	})
}

// FileStat implements Facts from stats.json. A path not recorded is an error wrapping
// ErrNotRecorded (fs.ErrNotExist), not a missing file: a test such as "-! -e /etc/nologin"
// passes on absence, so a snapshot that never looked must not answer it.
func (s *Snapshot) FileStat(ctx context.Context, path string) (FileStat, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return FileStat{}, fmt.Errorf("stat: %w", err)
	}
	rec, ok := s.stats[p]
	if err := stall(ctx, max(s.delayFor(p), rec.DelayMS)); err != nil {
		return FileStat{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if !ok {
		return FileStat{}, fmt.Errorf("stat %s: %w", p, ErrNotRecorded)
	}
	return rec.FileStat, nil
}

// FileStat implements Facts and records the answer, missing or not; a stat that ctx ended is
// saved as a hang.
func (r *Recorder) FileStat(ctx context.Context, path string) (FileStat, error) {
	defer r.begin(path)()
	st, err := r.inner.FileStat(ctx, path)
	if err == nil {
		r.mu.Lock()
		r.stats[st.Path] = st
		r.mu.Unlock()
	} else if p, cerr := cleanAbs(path); cerr == nil {
		r.noteHang(p, err)
	}
	return st, err
}

// saveStats writes stats.json where a FileStat was recorded.
func (r *Recorder) saveStats(w snapshotWriter) error {
	if len(r.stats) == 0 {
		return nil
	}
	recs := make([]statRecord, 0, len(r.stats))
	for _, p := range slices.Sorted(maps.Keys(r.stats)) {
		recs = append(recs, statRecord{FileStat: r.stats[p]})
	}
	return w.json(statsFile, recs)
}
