package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// State is what the fleet remembers of its validations between sweeps: each node's last
// validation and last pass (so the stalest go first), and the baselines of the last sweep.
type State struct {
	Nodes     map[string]NodeRecord `json:"nodes"`
	Baselines []Baseline            `json:"baselines,omitempty"`
}

// NodeRecord is one node's last validation.
type NodeRecord struct {
	Level    string    `json:"level"`
	Verdict  string    `json:"verdict"`
	At       time.Time `json:"at"`
	PassedAt time.Time `json:"passed_at,omitzero"` // the last pass, any level
	Figures  []Figure  `json:"figures,omitempty"`
}

// maxState bounds the state file: a record is about a KiB, so this is some 10,000 nodes.
const maxState = 16 << 20

// LoadState reads the state file; a missing file is an empty state.
func LoadState(path string) (State, error) {
	st := State{Nodes: map[string]NodeRecord{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxState+1))
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxState {
		return st, fmt.Errorf("%s: larger than %d MiB", path, maxState>>20)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: not a validation state (%v): move it away to start afresh", path, err)
	}
	if st.Nodes == nil {
		st.Nodes = map[string]NodeRecord{}
	}
	return st, nil
}

// Save writes the state atomically, never through a symlink.
func (st State) Save(path string) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(data, '\n'), 0o644)
}

// Record notes a node's validation at time at.
func (st *State) Record(r Result, at time.Time) {
	rec := st.Nodes[r.Node]
	rec.Level, rec.Verdict, rec.At, rec.Figures = r.Level, r.Verdict, at, r.Figures
	if r.Verdict == Passed {
		rec.PassedAt = at
	}
	st.Nodes[r.Node] = rec
}

// LastPassed is each node's last pass, for Stalest.
func (st State) LastPassed() map[string]time.Time {
	out := map[string]time.Time{}
	for n, rec := range st.Nodes {
		out[n] = rec.PassedAt
	}
	return out
}
