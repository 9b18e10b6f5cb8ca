package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// LockFile is the runs' lock in the state directory: held by drain around read-state,
// decide, act, write-state, and by the repair step around its record.
const LockFile = "lock"

// File names under the state directory.
const (
	stateFile = "drain.json" // per node: clean runs in a row, the checks that drained it
	lockFile  = LockFile     // held around read-state, decide, act, write-state
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
	// DrainedAt is when nodecheck's drain of the node began (drainStart); zero while the node
	// is in service.
	DrainedAt time.Time `json:"drained_at,omitzero"`
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

// stateDir is drain's view of the run's state directory (files.StateDir, opened once by the
// run): drain.json and the runs' lock, taken around read-state, decide, act, write-state.
type stateDir struct {
	dir    *files.StateDir
	unlock func() // set while the lock is held
}

// errLocked is wrapped by lock's error when another run holds the lock past the wait.
var errLocked = files.ErrLocked

func (s *stateDir) close() {
	if s == nil || s.unlock == nil {
		return
	}
	s.unlock()
	s.unlock = nil
}

// lock takes the runs' exclusive lock (files.StateDir.Lock), waiting at most wait and never
// past ctx's deadline: an error wrapping errLocked, saying how long it waited, when the wait
// runs out.
func (s *stateDir) lock(ctx context.Context, wait time.Duration) error {
	unlock, err := s.dir.Lock(ctx, lockFile, wait)
	if err != nil {
		return err
	}
	s.unlock = unlock
	return nil
}

// read reads drain.json. A missing file is an empty state. A file that is not a regular file,
// is a symlink, or (as root) could have been written by someone else is refused (an empty
// state and an error): its counts would decide a resume.
func (s *stateDir) read() (passState, error) {
	if s == nil {
		return emptyState(), nil
	}
	data, err := s.dir.ReadFile(stateFile, maxStateSize)
	switch {
	case errors.Is(err, files.ErrUntrusted):
		return emptyState(), fmt.Errorf("%w; its counts are ignored", err)
	case err != nil:
		return emptyState(), fmt.Errorf("%w; counting clean runs from 0", err)
	case data == nil:
		return emptyState(), nil
	}
	return decodeState(data, filepath.Join(s.dir.Path(), stateFile))
}

// write replaces drain.json atomically through the directory's descriptor
// (files.StateDir.WriteFile), so a run killed midway (Slurm kills a health check at its
// timeout) leaves the old file or the new one, and nothing is ever written through a symlink.
func (s *stateDir) write(st passState) error {
	for k, v := range st.Nodes {
		v.DrainedBy = slices.Compact(slices.Sorted(slices.Values(v.DrainedBy)))
		st.Nodes[k] = v
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", stateFile, err)
	}
	if err := s.dir.WriteFile(stateFile, append(data, '\n')); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}
