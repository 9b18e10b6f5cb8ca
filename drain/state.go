package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/nodecheck/nodecheck/config/files"
)

// File names under the state directory.
const (
	stateFile = "drain.json" // consecutive clean runs per node
	lockFile  = "lock"       // held around read-state, decide, act, write-state
)

// stateFormat is the "format" key of drain.json; a file of another format is started afresh.
const stateFormat = 1

// passState is drain.json: the consecutive clean runs of each node this host has run as (one
// on a real node; several on a test bed).
type passState struct {
	Format int                   `json:"format"`
	Nodes  map[string]nodePasses `json:"nodes"`
}

type nodePasses struct {
	Passes    int       `json:"consecutive_passes"`
	UpdatedAt time.Time `json:"updated_at"`
}

// readState reads drain.json from dir. A missing file is an empty state; a file that does not
// parse, or has another format, is an empty state and an error to report: counting then
// starts again, which can only delay a resume.
func readState(dir string) (passState, error) {
	st := passState{Format: stateFormat, Nodes: map[string]nodePasses{}}
	path := filepath.Join(dir, stateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	var got passState
	if err := json.Unmarshal(data, &got); err != nil {
		return st, fmt.Errorf("read %s: %w; counting clean runs from 0", path, err)
	}
	if got.Format != stateFormat {
		return st, fmt.Errorf("read %s: format %d, want %d; counting clean runs from 0", path, got.Format, stateFormat)
	}
	for k, v := range got.Nodes {
		if v.Passes >= 0 {
			st.Nodes[k] = v
		}
	}
	return st, nil
}

// writeState replaces drain.json atomically (files.WriteAtomic), so a run killed midway (Slurm
// kills a health check at HealthCheckTimeout) leaves the old file or the new one, never half
// of one, and never writes through a symlink planted at its name.
func writeState(dir string, st passState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", stateFile, err)
	}
	path := filepath.Join(dir, stateFile)
	if err := files.WriteAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}

// errLocked is returned by lockState when another run holds the lock past the wait.
var errLocked = errors.New("another nodecheck run holds the lock")

// lockState creates dir (0700: it holds nodecheck's private state) and takes the exclusive lock
// on dir/lock, waiting at most wait and never past ctx's deadline. It returns errLocked when
// the wait ran out, or another error when the directory or lock file cannot be created or
// locked (a read-only or full file system, say).
func lockState(ctx context.Context, dir string, wait time.Duration) (*flock.Flock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	l := flock.New(filepath.Join(dir, lockFile), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Path(), err)
	}
	if ok {
		return l, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ok, err = l.TryLockContext(wctx, 20*time.Millisecond)
	if ok {
		return l, nil
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("lock %s: %w", l.Path(), err)
	}
	return nil, fmt.Errorf("%w %s (waited %s)", errLocked, l.Path(), wait.Round(time.Millisecond))
}
