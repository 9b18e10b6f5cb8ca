package node

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/nodecheck/nodecheck/config/files"
)

// DefaultMaxFileSize bounds ReadFile. Every file nodecheck reads (slurm.conf, gres.conf, sysfs
// attributes, /proc files) is far smaller; the bound keeps a wrong path (a log, a disk image)
// from filling memory in a hook that has 5 s and no say over the node's memory.
const DefaultMaxFileSize = 4 << 20

// sysfsAttrLimit bounds one sysfs attribute: the kernel never emits more than a page.
const sysfsAttrLimit = 4096

// cleanAbs checks that p is an absolute path without ".." elements and returns it cleaned
// ("/dev//nvidia0/" is "/dev/nvidia0"). ".." is refused rather than cleaned away because the
// kernel resolves "a/.." through a symlink a, which lexical cleaning would get wrong, and
// because a snapshot must never be asked for anything outside itself.
func cleanAbs(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", fmt.Errorf("path %q contains \"..\"", p)
		}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	return path.Clean(p), nil
}

// Every file the facts read goes through config/files (files.Read, files.ReadIn): regular
// files only, opened without blocking, bounded, abandoned at the caller's deadline. Symlinks
// are followed, by choice: sysfs is made of them (/sys/class/infiniband/mlx5_0 and every
// /sys/bus/pci/devices entry are links into /sys/devices), configless Slurm reaches its cache
// through /run/slurm/conf, and sites link /etc/slurm to a shared directory. A snapshot
// follows them only inside itself (os.Root).

// liveLimits are the limits of a file of the live node.
func liveLimits(limit int64) files.Limits {
	return files.Limits{MaxBytes: limit, FollowSymlinks: true}
}

// readBounded reads name from fsys, refusing files over limit bytes. The size is found by
// reading, not by stat: sysfs reports 4096 for every attribute and /proc reports 0. A
// boundedFS (the trees Live and Snapshot pass) reads through config/files, which never blocks
// on a FIFO or device; any other fs.FS (fstest.MapFS in tests) is read through its Open.
// There is no deadline here: the IB and PCI listings run whole under one (files.Await in
// Live and Snapshot, and node.Memo), which costs one goroutine a listing instead of one per
// attribute.
func readBounded(fsys fs.FS, name string, limit int64) ([]byte, error) {
	if b, ok := fsys.(boundedFS); ok {
		return b.read(name, limit)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", files.ErrTooLarge, limit)
	}
	return b, nil
}

// boundedFS is a tree of the node (Live's /sys, a snapshot's fs/sys) as the IB and PCI readers
// list it: an fs.FS whose file reads go through config/files and whose directory listings
// never open a FIFO (fs.FS's Open and os.Root's ReadDir block on one).
type boundedFS struct {
	fsys    fs.FS
	read    func(name string, limit int64) ([]byte, error)
	readDir func(name string) ([]fs.DirEntry, error)
}

func (b boundedFS) Open(name string) (fs.File, error)          { return b.fsys.Open(name) }
func (b boundedFS) ReadDir(name string) ([]fs.DirEntry, error) { return b.readDir(name) }
func (b boundedFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(b.fsys, name) }
func (b boundedFS) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(b.fsys, name) }
func (b boundedFS) ReadLink(name string) (string, error)       { return fs.ReadLink(b.fsys, name) }

// validName refuses what fs.FS refuses: a name that is not unrooted and clean.
func validName(op, name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

// dirTree is the tree at dir of this machine (os.DirFS): os.ReadDir opens with O_DIRECTORY,
// which fails at once on a FIFO.
func dirTree(dir string) boundedFS {
	return boundedFS{
		fsys: os.DirFS(dir),
		read: func(name string, limit int64) ([]byte, error) {
			if err := validName("read", name); err != nil {
				return nil, err
			}
			return files.Read(context.Background(), filepath.Join(dir, name), liveLimits(limit))
		},
		readDir: func(name string) ([]fs.DirEntry, error) { return fs.ReadDir(os.DirFS(dir), name) },
	}
}

// rootTree is the tree under sub inside root (a snapshot's fs/ and "sys"): links are
// followed only inside root.
func rootTree(root *os.Root, sub string) (boundedFS, error) {
	fsys, err := fs.Sub(root.FS(), sub)
	if err != nil {
		return boundedFS{}, err
	}
	return boundedFS{
		fsys: fsys,
		read: func(name string, limit int64) ([]byte, error) {
			if err := validName("read", name); err != nil {
				return nil, err
			}
			return files.ReadIn(context.Background(), root, path.Join(sub, name), liveLimits(limit))
		},
		readDir: func(name string) ([]fs.DirEntry, error) {
			if err := validName("readdir", name); err != nil {
				return nil, err
			}
			f, err := root.OpenFile(path.Join(sub, name), os.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			ents, err := f.ReadDir(-1)
			slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
			return ents, err
		},
	}, nil
}

// bare strips an *fs.PathError down to its cause, so that an error built as
// fmt.Errorf("read %s: %w", p, bare(err)) names the node's path once (not the fixture root or
// the os.Root-relative name) and still satisfies errors.Is(err, fs.ErrNotExist).
func bare(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
