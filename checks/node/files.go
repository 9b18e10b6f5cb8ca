package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// close releases what the tree opened while it was read (rootTree's directories); nil
	// when there is nothing to release.
	release func()
	// dir, when set, answers isDir and ReadLink from the tree's open directories.
	dir *rootDirs
}

// isDir reports whether name in fsys is a directory, following symlinks as fsys does.
func isDir(fsys fs.FS, name string) bool {
	if b, ok := fsys.(boundedFS); ok && b.dir != nil {
		return b.dir.get(path.Join(b.dir.sub, name)) != nil
	}
	fi, err := fs.Stat(fsys, name)
	return err == nil && fi.IsDir()
}

// close releases what b opened; the tree must not be read afterwards.
func (b boundedFS) close() {
	if b.release != nil {
		b.release()
	}
}

func (b boundedFS) Open(name string) (fs.File, error)          { return b.fsys.Open(name) }
func (b boundedFS) ReadDir(name string) ([]fs.DirEntry, error) { return b.readDir(name) }
func (b boundedFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(b.fsys, name) }
func (b boundedFS) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(b.fsys, name) }
func (b boundedFS) ReadLink(name string) (string, error) {
	if b.dir != nil && fs.ValidPath(name) && name != "." {
		full := path.Join(b.dir.sub, name)
		if d := b.dir.get(path.Dir(full)); d != nil {
			if target, err := d.Readlink(path.Base(full)); err == nil {
				return target, nil
			}
		}
	}
	return fs.ReadLink(b.fsys, name)
}

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
// followed only inside root. The caller closes it once the listing is done.
//
// The IB and PCI listings read a few attributes in each of many deep directories
// (devices/pci0000:15/0000:15:01.0/.../0000:19:00.0/current_link_width). os.Root resolves a
// name component by component, an openat each, and files.ReadIn resolves it twice (stat,
// then open): read so, a replay of an 8-GPU node made about 2,000 openat calls. So the tree
// keeps the directories it reads in open (rootDirs, files.Dir), and reads a file from its
// directory, one component. See rootDirs for why that answers as root does.
func rootTree(root *os.Root, sub string) (boundedFS, error) {
	fsys, err := fs.Sub(root.FS(), sub)
	if err != nil {
		return boundedFS{}, err
	}
	dirs := &rootDirs{root: root, sub: sub, open: map[string]*files.Dir{}}
	return boundedFS{
		fsys: fsys,
		read: func(name string, limit int64) ([]byte, error) {
			if err := validName("read", name); err != nil {
				return nil, err
			}
			full := path.Join(sub, name)
			dir, base := path.Split(full) // full is clean: no allocation, unlike Dir and Base
			if dir = strings.TrimSuffix(dir, "/"); dir == "" {
				dir = "."
			}
			if d := dirs.get(dir); d != nil {
				if b, err := d.Read(context.Background(), base, liveLimits(limit)); err == nil {
					return b, nil
				}
			}
			return files.ReadIn(context.Background(), root, full, liveLimits(limit))
		},
		readDir: func(name string) ([]fs.DirEntry, error) {
			if err := validName("readdir", name); err != nil {
				return nil, err
			}
			if d := dirs.get(path.Join(sub, name)); d != nil {
				if ents, err := d.ReadDir(); err == nil {
					return ents, nil
				}
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
		release: dirs.close,
		dir:     dirs,
	}, nil
}

// maxOpenDirs bounds the directories one rootTree keeps open; past it, files are read
// through the snapshot's root as before (slower, the same answers).
const maxOpenDirs = 512

// rootDirs are directories of a snapshot's tree held open (files.Dir), by their name in root
// (nil for one that is not a directory or could not be opened).
//
// A directory is opened from its open parent, one component, without following a symlink,
// instead of from root, component by component; a file is read from its directory, one
// component, without following a symlink. That is narrower than root: a symlink (sysfs'
// class/infiniband/mlx5_0 -> ../../devices/...) fails in a directory even where root, which
// follows links as long as they stay inside it, would follow it. A directory that cannot be
// opened from its parent is opened through root, and every failure of a read in a directory
// is answered again through root, whose answer (content or error) is the one given. So an
// open directory only ever gives what root gives for the same name, and the confinement is
// root's: nothing outside the snapshot is reached.
type rootDirs struct {
	root *os.Root
	sub  string // the tree's directory in root
	mu   sync.Mutex
	open map[string]*files.Dir
	// noBeneath is set once openat2 is found missing: directories are then opened from
	// their parents, one component each.
	noBeneath bool
}

// get returns dir (a name in root) opened, opening it and its parents on first use; nil when
// it is not a directory, or cannot be opened. Directories are opened with O_DIRECTORY, which
// refuses a FIFO or a device recorded where a directory belongs without opening it.
func (d *rootDirs) get(dir string) *files.Dir {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.getLocked(dir)
}

func (d *rootDirs) getLocked(dir string) *files.Dir {
	if r, ok := d.open[dir]; ok {
		return r
	}
	if len(d.open) >= maxOpenDirs {
		return nil
	}
	var r *files.Dir
	if dir != "." && !d.noBeneath {
		// One openat2 from the tree's root, however deep, with os.Root's rule for links.
		if top := d.getLocked("."); top != nil {
			var err error
			r, err = top.Beneath(dir)
			d.noBeneath = errors.Is(err, syscall.ENOSYS) // a kernel before 5.6
		}
	}
	if r == nil && dir != "." {
		if parent := d.getLocked(path.Dir(dir)); parent != nil {
			r, _ = parent.Sub(path.Base(dir))
		}
	}
	if r == nil {
		// The root itself, a symlink (out of the parent or not), or no parent: through root.
		r, _ = files.OpenDirIn(d.root, dir)
	}
	d.open[dir] = r
	return r
}

// close closes the open directories (root itself stays open).
func (d *rootDirs) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, r := range d.open {
		if r != nil {
			r.Close()
		}
		delete(d.open, name)
	}
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
