package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodecheck/nodecheck/config/files"
)

// Mount is one mounted filesystem, as /proc/self/mountinfo lists it, with its size as
// statfs(2) gives it.
type Mount struct {
	Path     string `json:"path"`      // mount point, octal escapes decoded
	FSType   string `json:"fstype"`    // filesystem type ("ext4", "xfs", "tmpfs", "nfs4")
	Source   string `json:"source"`    // mount source ("/dev/nvme0n1p1", "tmpfs")
	ReadOnly bool   `json:"read_only"` // "ro" in the mount's or the superblock's options
	// Statted is true when SizeMiB and AvailMiB were read. Network and FUSE filesystems
	// are not statted (a hung server would hold the reading), nor a mount whose statfs
	// failed or ran past statfsTimeout; StatError says which.
	Statted   bool   `json:"statted"`
	StatError string `json:"stat_error,omitempty"`
	// SizeMiB is f_blocks × f_frsize / 2^20: what slurmd registers as TmpDisk for TmpFS
	// (src/slurmd/slurmd/get_mach_stat.c: get_tmp_disk).
	SizeMiB  uint64 `json:"size_mib"`
	AvailMiB uint64 `json:"avail_mib"` // f_bavail × f_frsize / 2^20: free to unprivileged users
}

// Mounts is the node's mounted filesystems in mountinfo order (a later mount on the same
// point hides the earlier).
type Mounts struct {
	Mounts []Mount `json:"mounts"`
}

// Containing returns the mount that holds path: the last mount whose mount point is path or
// one of its parents (symlinks in path are not resolved); false when none is (no mount
// table at all).
func (m Mounts) Containing(path string) (Mount, bool) {
	best, found := Mount{}, false
	for _, mt := range m.Mounts {
		p := strings.TrimSuffix(mt.Path, "/")
		if path == mt.Path || p == "" || path == p || strings.HasPrefix(path, p+"/") {
			if !found || len(mt.Path) >= len(best.Path) {
				best, found = mt, true
			}
		}
	}
	return best, found
}

// MountsFact is the node's mounted filesystems and their sizes, from /proc/self/mountinfo
// and statfs(2) of each local one.
var MountsFact = &Fact[Mounts]{
	Name: "mounts",
	What: "mounted filesystems",
	Live: func(ctx context.Context, l *Live) (Mounts, error) {
		b, err := files.Read(ctx, l.hostPath("/proc/self/mountinfo"), liveLimits(maxMountinfo))
		if err != nil {
			return Mounts{}, fmt.Errorf("read mounted filesystems: %w", bare(err))
		}
		ms, err := ParseMountinfo(string(b))
		if err != nil {
			return Mounts{}, err
		}
		for i := range ms.Mounts {
			statMount(ctx, &ms.Mounts[i], l.hostPath(ms.Mounts[i].Path))
		}
		return ms, nil
	},
	Check: func(m Mounts) error {
		for i, mt := range m.Mounts {
			if !strings.HasPrefix(mt.Path, "/") {
				return fmt.Errorf("mounts[%d].path %q is not absolute", i, mt.Path)
			}
			if mt.AvailMiB > mt.SizeMiB {
				return fmt.Errorf("mounts[%d] (%s): avail_mib %d is more than size_mib %d", i, mt.Path, mt.AvailMiB, mt.SizeMiB)
			}
		}
		return nil
	},
}

// Bounds of the mount table: a node with more mounts than maxMounts (container hosts) keeps
// the first ones, in mountinfo order, which are the system's own.
const (
	maxMountinfo  = 4 << 20
	maxMounts     = 1024
	statfsTimeout = time.Second
)

// unstatted are filesystem types whose statfs asks a server or a user process, and can hang.
var unstatted = []string{"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "afs", "autofs", "fuse"}

func networked(fstype string) bool {
	base, _, _ := strings.Cut(fstype, ".") // fuse.sshfs
	for _, t := range unstatted {
		if base == t {
			return true
		}
	}
	return false
}

// statMount fills mt's size from statfs(2) of at, unless mt is networked, under its own
// deadline so that one hung mount costs statfsTimeout, not the whole reading.
func statMount(ctx context.Context, mt *Mount, at string) {
	if networked(mt.FSType) {
		mt.StatError = "not statted: a network or FUSE filesystem"
		return
	}
	sctx, cancel := context.WithTimeout(ctx, statfsTimeout)
	defer cancel()
	st, err := files.Await(sctx, func() (unix.Statfs_t, error) {
		var st unix.Statfs_t
		err := unix.Statfs(at, &st)
		return st, err
	})
	if err != nil {
		mt.StatError = "statfs: " + err.Error()
		return
	}
	bs := uint64(st.Frsize)
	if bs == 0 {
		bs = uint64(st.Bsize)
	}
	mt.Statted = true
	mt.SizeMiB = st.Blocks * bs >> 20
	mt.AvailMiB = st.Bavail * bs >> 20
	if st.Flags&unix.ST_RDONLY != 0 {
		mt.ReadOnly = true
	}
}

// ParseMountinfo reads /proc/self/mountinfo (proc(5)): "36 35 98:0 /mnt1 /mnt2 rw,noatime
// master:1 - ext3 /dev/root rw,errors=continue": the mount point is field 5, its options
// field 6, and after the "-" separator come the type, the source and the superblock's
// options. Mount points are octal-escaped (\040 for a space).
func ParseMountinfo(s string) (Mounts, error) {
	var out Mounts
	n := 0
	for line := range strings.Lines(s) {
		n++
		line = strings.TrimRight(line, "\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(out.Mounts) >= maxMounts {
			break
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+2 >= len(f) {
			return Mounts{}, fmt.Errorf("mountinfo:%d: %q: want \"ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - TYPE SOURCE SUPEROPTIONS\"", n, clip(line))
		}
		path, err := unescapeMount(f[4])
		if err != nil || !strings.HasPrefix(path, "/") {
			return Mounts{}, fmt.Errorf("mountinfo:%d: mount point %q is not an absolute path", n, clip(f[4]))
		}
		src, _ := unescapeMount(f[sep+2])
		mt := Mount{Path: path, FSType: f[sep+1], Source: src}
		mt.ReadOnly = hasOption(f[5], "ro") || (sep+3 < len(f) && hasOption(f[sep+3], "ro"))
		out.Mounts = append(out.Mounts, mt)
	}
	if len(out.Mounts) == 0 {
		return Mounts{}, errors.New("mountinfo: no mounts listed")
	}
	return out, nil
}

func hasOption(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

// unescapeMount decodes the kernel's octal escapes (\040 space, \011 tab, \012 newline,
// \134 backslash) in a mountinfo field.
func unescapeMount(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			v, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
			if err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		if s[i] == '\\' {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// clip cuts a mountinfo field or line to a length fit for an error.
func clip(s string) string {
	c, _ := cut(s, 120)
	return c
}
