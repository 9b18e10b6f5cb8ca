package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// ErrLocked is WithStateFile's error when another nodecheck run holds the state directory's
// lock past the wait.
var ErrLocked = errLocked

// WithStateFile gives another part of nodecheck (drain/repair's record) a file of its own in
// the state directory dir, under drain's rules: the directory created 0700 and trusted only
// when root-owned and writable by nobody else (as root), the runs' lock held throughout
// (waiting at most wait and never past ctx), the file read without following a symlink and at
// most maxStateSize bytes, and written back atomically through the directory's descriptor.
// fn gets the file's bytes (nil when it does not exist) and returns the new bytes, or nil to
// leave the file as it is. A dry run takes no lock and writes nothing.
func WithStateFile(ctx context.Context, dir, name string, wait time.Duration, dryRun bool, fn func(data []byte) ([]byte, error)) error {
	d, err := openStateDir(dir, os.Geteuid(), dryRun)
	if err != nil {
		return err
	}
	defer d.close()
	if d != nil && !dryRun {
		if wait <= 0 {
			wait = DefaultLockWait
		}
		if err := d.lock(ctx, wait); err != nil {
			return err
		}
	}
	data, err := d.readFile(name)
	if err != nil {
		return err
	}
	out, err := fn(data)
	if err != nil || out == nil || dryRun || d == nil {
		return err
	}
	if err := files.WriteAtomicIn(d.dir, name, out, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// readFile reads name in the directory: nil for a missing file (or no directory in a dry run).
func (s *stateDir) readFile(name string) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	path := filepath.Join(s.path, name)
	f, err := files.OpenIn(s.dir, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if os.Geteuid() == 0 {
		if err := trusted("state file", path, f); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxStateSize {
		return nil, fmt.Errorf("read %s: %w: larger than %d bytes", path, files.ErrTooLarge, maxStateSize)
	}
	return data, nil
}
