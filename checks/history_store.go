package checks

// The history files in the state directory: <state dir>/history/<node>.json, written
// atomically through the directory's descriptor (never through a symlink), under a lock of
// their own (<node>.lock beside the file), in a directory held to the state directory's rule
// (root-owned, writable by nobody else, when nodecheck runs as root).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config/files"
)

// historySubdir is the history's directory under the state directory.
const historySubdir = "history"

// historyStore is an opened history directory: dir is nil when a read-only run found none.
type historyStore struct {
	dir   *os.File
	store history.Store
}

// openHistoryStore opens <stateDir>/history, creating both directories 0700 unless readOnly,
// and refuses them, as root, unless root owns them and nobody else may write them: the
// history decides what fails a node, so whoever can write it could drain or clear nodes.
func openHistoryStore(stateDir string, readOnly bool) (*historyStore, error) {
	path := filepath.Join(stateDir, historySubdir)
	st := &historyStore{store: history.Store{Dir: path, Limits: history.DefaultLimits()}}
	if !readOnly {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, fmt.Errorf("create the history directory: %w", err)
		}
	}
	for _, p := range []string{stateDir, path} {
		d, err := openTrustedDir(p)
		if readOnly && errors.Is(err, fs.ErrNotExist) {
			// A dry run on a node that never kept history: nothing to read, nothing set aside.
			st.close()
			st.store.Rename = refuseRename
			return st, nil
		}
		if err != nil {
			st.close()
			return nil, err
		}
		st.close()
		st.dir = d
	}
	if readOnly {
		st.store.Rename = refuseRename
	}
	st.store.Read = st.read
	st.store.Write = st.write
	return st, nil
}

// refuseRename is a dry run's Store.Rename: a bad file stays where it is.
func refuseRename(string, string) error { return errors.New("a dry run sets nothing aside") }

// openTrustedDir opens the directory at path without following a symlink and, as root,
// applies files.RootOnly to what it opened.
func openTrustedDir(path string) (*os.File, error) {
	d, err := files.OpenDir(path)
	switch {
	case errors.Is(err, files.ErrSymlink):
		return nil, fmt.Errorf("%s is a symlink, which nodecheck does not follow as root: set [state] dir to the directory itself", path)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if os.Geteuid() != 0 {
		return d, nil
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	problems, fixes, ok := files.RootOnly(path, fi)
	switch {
	case !ok:
		d.Close()
		return nil, fmt.Errorf("%s: its owner is unknown; as root nodecheck trusts only what root owns", path)
	case len(problems) > 0:
		d.Close()
		return nil, fmt.Errorf("%s is %s, and nodecheck runs as root; run: %s", path, strings.Join(problems, " and "), strings.Join(fixes, " && "))
	}
	return d, nil
}

func (s *historyStore) close() {
	if s != nil && s.dir != nil {
		s.dir.Close()
		s.dir = nil
	}
}

// read is the Store's reader: a regular file in the directory, never through a symlink, at
// most max+1 bytes.
func (s *historyStore) read(path string, max int64) ([]byte, error) {
	f, err := files.OpenIn(s.dir, filepath.Base(path), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}

// write is the Store's writer: files.WriteAtomicIn through the directory's descriptor.
func (s *historyStore) write(path string, data []byte, perm fs.FileMode) error {
	return files.WriteAtomicIn(s.dir, filepath.Base(path), data, perm)
}

// lock takes node's history lock, <node>.lock in the history directory, waiting at most
// wait and never past ctx's deadline (an error wrapping files.ErrLocked then).
func (s *historyStore) lock(ctx context.Context, node string, wait time.Duration) (func(), error) {
	if err := history.ValidNode(node); err != nil {
		return nil, err
	}
	f, err := files.LockIn(ctx, s.dir, node+".lock", wait)
	if err != nil {
		return nil, err
	}
	return func() { files.Unlock(f) }, nil
}

// load reads node's history: a new one where a read-only run found no directory.
func (s *historyStore) load(node string, now time.Time) (*history.History, error) {
	if s.dir == nil {
		if err := history.ValidNode(node); err != nil {
			return nil, err
		}
		return history.New(node), nil
	}
	return s.store.Load(node, now)
}
