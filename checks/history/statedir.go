package history

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// Subdir is the history's directory in the state directory.
const Subdir = "history"

// DirStore is the Store of a state directory's history/: every file is read, written, set
// aside and locked through the directory's descriptor (files.StateDir), under the state
// directory's rule (root-owned, writable by nobody else, never through a symlink): the history
// decides what fails a node, so whoever could write it could drain or clear nodes.
type DirStore struct {
	Store
	dir *files.StateDir
}

// InStateDir opens state's history/ (created 0700 unless the state directory is read-only;
// a read-only one without it reads as empty).
func InStateDir(state *files.StateDir) (*DirStore, error) {
	dir, err := state.Sub(Subdir)
	if err != nil {
		return nil, err
	}
	s := &DirStore{dir: dir, Store: Store{Dir: dir.Path(), Limits: DefaultLimits()}}
	s.Read = func(path string, max int64) ([]byte, error) {
		if !dir.Exists() {
			return nil, fs.ErrNotExist
		}
		b, err := dir.ReadFile(filepath.Base(path), max)
		switch {
		case errors.Is(err, files.ErrTooLarge):
			return append(b, 0), nil // one byte over max: Decode says it is too large
		case err == nil && b == nil:
			return nil, fs.ErrNotExist
		}
		return b, err
	}
	s.Write = func(path string, data []byte, _ fs.FileMode) error { return dir.WriteFile(filepath.Base(path), data) }
	s.Rename = func(oldpath, newpath string) error { return dir.Rename(filepath.Base(oldpath), filepath.Base(newpath)) }
	s.Remove = func(path string) error { return dir.Remove(filepath.Base(path)) }
	s.List = func(string) ([]string, error) { return dir.Names() }
	return s, nil
}

// Exists reports whether the directory is there (false only for a read-only look at a state
// directory that never kept history).
func (s *DirStore) Exists() bool { return s.dir.Exists() }

// ReadOnly reports whether Save, setting a bad file aside and Lock do nothing (a dry run).
func (s *DirStore) ReadOnly() bool { return s.dir.ReadOnly() }

// Lock takes node's history lock, <node>.lock beside the file, waiting at most wait and never
// past ctx's deadline (an error wrapping files.ErrLocked then). Runs for the same node hold
// it from Load to Save.
func (s *DirStore) Lock(ctx context.Context, node string, wait time.Duration) (func(), error) {
	if err := ValidNode(node); err != nil {
		return nil, err
	}
	return s.dir.Lock(ctx, node+".lock", wait)
}

// Has reports whether node has a history file.
func (s *DirStore) Has(node string) bool {
	if ValidNode(node) != nil || !s.dir.Exists() {
		return false
	}
	names, _ := s.dir.Names()
	for _, n := range names {
		if n == node+".json" {
			return true
		}
	}
	return false
}

// Close closes the directory.
func (s *DirStore) Close() error { return s.dir.Close() }
