package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// File names under the state directory.
const (
	stateFile = "drain.json" // per node: clean runs in a row, the checks that drained it
	lockFile  = "lock"       // held around read-state, decide, act, write-state
)

// stateFormat is the "format" key of drain.json. Format 1 (counts only) is read and migrated:
// its counts were made under the old rule (any run without a failure counted), so they start
// again from 0, which can only delay a resume; the checks that drained a node then come from
// its reason.
const stateFormat = 2

// maxStateSize bounds drain.json: a record is about 200 bytes, and a host runs as one node
// (a test bed as a few).
const maxStateSize = 1 << 20

// passState is drain.json: a record per node this host has run as (one on a real node;
// several on a test bed).
type passState struct {
	Format int                   `json:"format"`
	Nodes  map[string]nodeRecord `json:"nodes"`
}

// nodeRecord is what drain keeps about one node between runs.
type nodeRecord struct {
	// Passes is the clean runs in a row (judgeRun).
	Passes    int       `json:"consecutive_passes"`
	UpdatedAt time.Time `json:"updated_at"`
	// DrainedBy is the checks that failed when nodecheck drained the node, and those that
	// failed while it stayed drained: each must look again and find the fault gone.
	DrainedBy []string `json:"drained_by,omitempty"`
	// Reason is the reason nodecheck drained the node with. The record speaks for the drain
	// only while Slurm shows this reason; another drain falls back to the reason's check.
	Reason string `json:"reason,omitempty"`
}

func emptyState() passState { return passState{Format: stateFormat, Nodes: map[string]nodeRecord{}} }

// decodeState reads drain.json's bytes. A file that does not parse, or has an unknown format,
// is an empty state and an error to report: counting then starts again, which can only delay
// a resume.
func decodeState(data []byte, path string) (passState, error) {
	st := emptyState()
	var got passState
	if err := json.Unmarshal(data, &got); err != nil {
		return st, fmt.Errorf("read %s: %w; counting clean runs from 0", path, err)
	}
	switch got.Format {
	case 1:
		for k := range got.Nodes {
			st.Nodes[k] = nodeRecord{}
		}
		return st, nil
	case stateFormat:
	default:
		return st, fmt.Errorf("read %s: format %d, want %d; counting clean runs from 0", path, got.Format, stateFormat)
	}
	for k, v := range got.Nodes {
		if v.Passes < 0 {
			v.Passes = 0
		}
		st.Nodes[k] = v
	}
	return st, nil
}

// stateDir is the opened state directory: every file in it is opened through the descriptor
// of the directory that was checked, never through a symlink.
type stateDir struct {
	path string
	dir  *os.File
	held *os.File // the lock file, locked while not nil
}

// openStateDir creates the state directory (0700) unless readOnly, opens it without following
// a symlink and holds it to the config file's rule when running as root (files.RootOnly):
// root-owned and writable by nobody else, since drain.json decides when a drained node is
// resumed. A directory that does not exist in a read-only (dry) run is (nil, nil): an empty
// state.
func openStateDir(path string, euid int, readOnly bool) (*stateDir, error) {
	if !readOnly {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, fmt.Errorf("create state directory: %w", err)
		}
	}
	d, err := files.OpenDir(path)
	switch {
	case readOnly && errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, files.ErrSymlink):
		return nil, fmt.Errorf("state directory %s is a symlink, which nodecheck does not follow as root: set [state] dir to the directory itself", path)
	case err != nil:
		return nil, fmt.Errorf("open state directory: %w", err)
	}
	if euid == 0 {
		if err := trusted("state directory", path, d); err != nil {
			d.Close()
			return nil, err
		}
	}
	return &stateDir{path: path, dir: d}, nil
}

// trusted applies files.RootOnly to the opened f.
func trusted(what, path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	problems, fixes, ok := files.RootOnly(path, fi)
	switch {
	case !ok:
		return fmt.Errorf("%s %s: its owner is unknown (%T); as root nodecheck trusts only what root owns", what, path, fi.Sys())
	case len(problems) > 0:
		return fmt.Errorf("%s %s is %s, and nodecheck runs as root; run: %s", what, path, strings.Join(problems, " and "), strings.Join(fixes, " && "))
	}
	return nil
}

func (s *stateDir) close() {
	if s == nil {
		return
	}
	files.Unlock(s.held)
	s.held = nil
	s.dir.Close()
}

// errLocked is wrapped by lock's error when another run holds the lock past the wait.
var errLocked = files.ErrLocked

// lock takes the exclusive lock on lock in the directory (files.LockIn: created 0600, never
// through a symlink), waiting at most wait and never past ctx's deadline. It returns an
// error wrapping errLocked, saying how long it waited, when the wait ran out, or another
// error when the lock file cannot be opened or locked.
func (s *stateDir) lock(ctx context.Context, wait time.Duration) error {
	f, err := files.LockIn(ctx, s.dir, lockFile, wait)
	if err != nil {
		return err
	}
	s.held = f
	return nil
}

// read reads drain.json. A missing file is an empty state. A file that is not a regular file,
// is a symlink, or (as root) could have been written by someone else is refused (an empty
// state and an error): its counts would decide a resume.
func (s *stateDir) read(euid int) (passState, error) {
	if s == nil {
		return emptyState(), nil
	}
	path := filepath.Join(s.path, stateFile)
	f, err := files.OpenIn(s.dir, stateFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyState(), nil
	}
	if err != nil {
		return emptyState(), fmt.Errorf("read state: %w; counting clean runs from 0", err)
	}
	defer f.Close()
	if euid == 0 {
		if err := trusted("state file", path, f); err != nil {
			return emptyState(), fmt.Errorf("%w; its counts are ignored", err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return emptyState(), fmt.Errorf("read %s: %w; counting clean runs from 0", path, err)
	}
	if len(data) > maxStateSize {
		return emptyState(), fmt.Errorf("read %s: %w: larger than %d bytes; counting clean runs from 0", path, files.ErrTooLarge, maxStateSize)
	}
	return decodeState(data, path)
}

// write replaces drain.json atomically through the directory's descriptor
// (files.WriteAtomicIn), so a run killed midway (Slurm kills a health check at its timeout)
// leaves the old file or the new one, and nothing is ever written through a symlink.
func (s *stateDir) write(st passState) error {
	for k, v := range st.Nodes {
		v.DrainedBy = slices.Compact(slices.Sorted(slices.Values(v.DrainedBy)))
		st.Nodes[k] = v
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", stateFile, err)
	}
	if err := files.WriteAtomicIn(s.dir, stateFile, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write state %s: %w", filepath.Join(s.path, stateFile), err)
	}
	return nil
}
