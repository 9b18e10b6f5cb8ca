package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// DefaultMaxFileSize bounds ReadFile. Every file nodecheck reads (slurm.conf, gres.conf, sysfs
// attributes, /proc files) is far smaller; the bound keeps a wrong path (a log, a disk image)
// from filling memory in a hook that has 5 s and no say over the node's memory.
const DefaultMaxFileSize = 4 << 20

// sysfsAttrLimit bounds one sysfs attribute: the kernel never emits more than a page.
const sysfsAttrLimit = 4096

// errFileTooLarge is wrapped by ReadFile when a file is over the size bound.
var errFileTooLarge = errors.New("file too large")

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

// readBounded reads name from fsys, refusing files over limit bytes. The size is found by
// reading, not by stat: sysfs reports 4096 for every attribute and /proc reports 0.
func readBounded(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, limit)
}

// readFileBounded is readBounded for a path of this machine.
func readFileBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, limit)
}

// readLimited reads r to its end, refusing more than limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errFileTooLarge, limit)
	}
	return b, nil
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
