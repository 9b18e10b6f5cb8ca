package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MountEntry is one line of /proc/mounts (proc(5)): what is mounted where, how.
type MountEntry struct {
	Source  string   `json:"source"`  // fs_spec: "/dev/sda1", "server:/export", "tmpfs"
	Point   string   `json:"point"`   // fs_file, octal escapes undone: "/mnt/my disk"
	Type    string   `json:"type"`    // fs_vfstype: "ext4", "nfs4"
	Options []string `json:"options"` // fs_mntops: "rw", "relatime", ...
}

// ReadOnly reports whether the mount's options say ro. The kernel always writes rw or ro
// first, so a mount that says neither is taken as read-write, as mount(8) prints it.
func (m MountEntry) ReadOnly() bool { return slices.Contains(m.Options, "ro") }

// ParseMounts parses /proc/mounts (or /proc/self/mounts, /etc/mtab): six fields per line,
// the mount point's space, tab, newline and backslash written as octal escapes (\040). A
// line with fewer than four fields is an error naming it.
func ParseMounts(r io.Reader) ([]MountEntry, error) {
	var out []MountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("mounts:%d: %d fields, want at least 4 (source, mount point, type, options)", n, len(f))
		}
		out = append(out, MountEntry{Source: unescapeProcMounts(f[0]), Point: unescapeProcMounts(f[1]), Type: f[2],
			Options: strings.Split(f[3], ",")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mounts:%d: %w", n+1, err)
	}
	return out, nil
}

// unescapeProcMounts undoes the kernel's octal escapes of a mount field (seq_file's mangle_path:
// space, tab, newline and backslash as \ooo). A backslash not followed by three octal digits
// is kept as it is.
func unescapeProcMounts(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// VisibleMounts keeps, for each mount point, the last mount of it: the one a path there
// reaches, the others being mounted over. The order of first appearance is kept.
func VisibleMounts(ms []MountEntry) []MountEntry {
	last := map[string]int{}
	for i, m := range ms {
		last[m.Point] = i
	}
	var out []MountEntry
	for i, m := range ms {
		if last[m.Point] == i {
			out = append(out, m)
		}
	}
	return out
}

// MountOf is the mount a path lies on: the visible mount with the longest mount point that
// is the path or a directory above it; false when none is (no "/" in ms).
func MountOf(ms []MountEntry, path string) (MountEntry, bool) {
	best, ok := MountEntry{}, false
	for _, m := range VisibleMounts(ms) {
		if m.Point == path || m.Point == "/" || strings.HasPrefix(path, strings.TrimSuffix(m.Point, "/")+"/") {
			if !ok || len(m.Point) > len(best.Point) {
				best, ok = m, true
			}
		}
	}
	return best, ok
}

// FSUsage is the space and inodes of one mounted filesystem (statfs(2)), in bytes.
type FSUsage struct {
	MountEntry
	SizeBytes  uint64 `json:"size_bytes"`  // f_blocks * f_frsize
	AvailBytes uint64 `json:"avail_bytes"` // f_bavail * f_frsize: what a user who is not root may still write
	FreeBytes  uint64 `json:"free_bytes"`  // f_bfree * f_frsize: root's reserve included
	Inodes     uint64 `json:"inodes"`      // f_files; 0 on file systems without a fixed count (btrfs, some NFS)
	InodesFree uint64 `json:"inodes_free"` // f_ffree
	// Pseudo marks a kernel pseudo file system (IsPseudoFS), which is listed but not asked.
	Pseudo bool `json:"pseudo,omitempty"`
	// Error says why statfs gave nothing ("" when it answered); TimedOut that it did not
	// answer in time (a hung NFS server).
	Error    string `json:"error,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

// Filesystems is the FilesystemsFact: every visible mount, with the usage of those that
// hold files (not the kernel's pseudo file systems).
type Filesystems struct {
	Mounts []FSUsage `json:"mounts"`
}

// Containing returns the mount that holds path: the one whose mount point is path or its
// longest parent (symlinks in path are not resolved); false when none is.
func (f Filesystems) Containing(path string) (FSUsage, bool) {
	best, ok := FSUsage{}, false
	for _, m := range f.Mounts {
		if m.Point == path || m.Point == "/" || strings.HasPrefix(path, strings.TrimSuffix(m.Point, "/")+"/") {
			if !ok || len(m.Point) >= len(best.Point) {
				best, ok = m, true
			}
		}
	}
	return best, ok
}

// FilesystemsFact reads /proc/mounts and statfs(2)s each visible mount of a type that holds
// files. One mount's statfs that does not answer within StatfsTimeout (a hung NFS server)
// is marked TimedOut and the others are still reported.
var FilesystemsFact = &Fact[Filesystems]{
	Name: "filesystems",
	What: "mounted filesystems and their usage",
	Live: func(ctx context.Context, l *Live) (Filesystems, error) {
		b, err := l.ReadFile(ctx, "/proc/mounts")
		if err != nil {
			return Filesystems{}, err
		}
		ms, err := ParseMounts(bytes.NewReader(b))
		if err != nil {
			return Filesystems{}, fmt.Errorf("/proc/%w", err)
		}
		return statfsAll(ctx, ms, l.hostPath), nil
	},
	Check: func(f Filesystems) error {
		for i, m := range f.Mounts {
			if !strings.HasPrefix(m.Point, "/") {
				return fmt.Errorf("mounts[%d].point %q is not an absolute path", i, m.Point)
			}
		}
		return nil
	},
}

// StatfsTimeout bounds each mount's statfs: a local one answers in microseconds, and an NFS
// mount whose server is gone blocks (hard mounts: forever) in a call nothing can cancel.
const StatfsTimeout = 2 * time.Second

// pseudoFS are the file system types that hold no files of anyone's: nothing to mount
// read-write or to fill. autofs is there because statfs on it would trigger the mount.
var pseudoFS = []string{"autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs", "debugfs",
	"devpts", "devtmpfs", "efivarfs", "fusectl", "hugetlbfs", "mqueue", "nsfs", "proc", "pstore",
	"rpc_pipefs", "securityfs", "selinuxfs", "sysfs", "tracefs"}

// IsPseudoFS reports whether typ is a kernel pseudo file system (pseudoFS).
func IsPseudoFS(typ string) bool { return slices.Contains(pseudoFS, typ) }

func statfsAll(ctx context.Context, ms []MountEntry, host func(string) string) Filesystems {
	list := VisibleMounts(ms)
	out := Filesystems{Mounts: make([]FSUsage, len(list))}
	type answer struct {
		i  int
		st syscall.Statfs_t
		er error
	}
	ch := make(chan answer, len(list)) // buffered: a statfs answering late must not block
	asked := 0
	for i, m := range list {
		if IsPseudoFS(m.Type) {
			out.Mounts[i] = FSUsage{MountEntry: m, Pseudo: true}
			continue
		}
		asked++
		out.Mounts[i] = FSUsage{MountEntry: m, TimedOut: true, Error: "statfs did not answer within " + StatfsTimeout.String()}
		go func() {
			var st syscall.Statfs_t
			err := syscall.Statfs(host(m.Point), &st)
			ch <- answer{i, st, err}
		}()
	}
	timer := time.NewTimer(StatfsTimeout)
	defer timer.Stop()
	for range asked {
		select {
		case a := <-ch:
			u := &out.Mounts[a.i]
			u.TimedOut, u.Error = false, ""
			if a.er != nil {
				u.Error = "statfs: " + a.er.Error()
				continue
			}
			bs := uint64(a.st.Frsize)
			if bs == 0 {
				bs = uint64(a.st.Bsize)
			}
			u.SizeBytes, u.AvailBytes, u.FreeBytes = a.st.Blocks*bs, a.st.Bavail*bs, a.st.Bfree*bs
			u.Inodes, u.InodesFree = a.st.Files, a.st.Ffree
		case <-timer.C:
			return out
		case <-ctx.Done():
			return out
		}
	}
	return out
}
