package run

import (
	"fmt"
	"os"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// The state directory: the one place a run's state paths are resolved. [state] dir holds
// drain.json and the runs' lock, repair.json, the last NCCL result and history/; --state-dir
// moves the history (and nothing else) elsewhere, and is where a snapshot replay keeps
// history at all. Each directory is opened once (files.State), by files.OpenStateDir's rule,
// and handed to drain, the repair step, the history and nccl_allreduce.

// StatePaths are a run's state directories.
type StatePaths struct {
	// State is [state] dir: drain's, the repair's and nccl_allreduce's files. Not configured
	// when [state] dir is empty.
	State *files.State
	// History is where the node's history lives: --state-dir, else State; nil keeps no
	// history, and HistoryOff says why.
	History    *files.State
	HistoryOff string
}

// ResolveState resolves the run's state directories: [state] dir from cfg, --state-dir
// (stateDir, relative to workDir) for the history. A snapshot replay keeps history only in
// an explicit --state-dir (never in the live node's); noHistory keeps none (a recording). A
// dry run opens everything read-only.
func ResolveState(cfg *config.Config, stateDir, workDir string, replay, noHistory, dryRun bool) (StatePaths, error) {
	euid := os.Geteuid()
	p := StatePaths{State: files.NewState(cfg.State.Dir, "[state] dir", euid, dryRun)}
	switch {
	case replay && stateDir == "", noHistory:
		// One wording for both, so that a recording and its replay say the same.
		p.HistoryOff = "a snapshot replay keeps it only with --state-dir, a recording never"
	case stateDir != "":
		abs, err := absPath(workDir, stateDir) // relative to where nodecheck was started
		if err != nil {
			return p, fmt.Errorf("--state-dir: %w", err)
		}
		p.History = files.NewState(abs, "--state-dir", euid, dryRun)
		if abs == cfg.State.Dir && !replay {
			p.History = p.State // one directory, opened once
		}
	case cfg.State.Dir != "":
		p.History = p.State
	default:
		p.HistoryOff = "[state] dir is empty"
	}
	return p, nil
}

// Close closes every directory the run opened.
func (p StatePaths) Close() {
	p.State.Close()
	if p.History != p.State {
		p.History.Close()
	}
}

// historySetup is the checks' view of where the history lives, at the run's time for it:
// the clock at the run's start, or the snapshot's taken_at in a replay.
func (p StatePaths) historySetup(snap *node.Snapshot, start time.Time, dryRun bool) checks.HistorySetup {
	s := checks.HistorySetup{Now: start, ReadOnly: dryRun, Off: p.HistoryOff}
	if snap != nil {
		s.Now = snap.Meta().TakenAt
	}
	if st := p.History; st != nil {
		s.Where = fmt.Sprintf("%s (from %s)", st.Path(), st.From())
		s.Open = func() (checks.HistoryStore, error) {
			dir, err := st.Open()
			if err != nil {
				return nil, err
			}
			return history.InStateDir(dir)
		}
	}
	return s
}
