package checks

// What `nodecheck history` needs: the node's history as the runs keep it, read without
// changing it, the rules the runs judge it by (from each check's section), and an admin's
// clear, taken under the same lock the runs take.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// HistoryRules are the rules the checks judge the history by, from cfg's sections of
// xid_errors, gpu_error_rates and ib_flaps (a [[group]] applied): `nodecheck history` shows
// what holds by the same rules the runs fail a node by.
func HistoryRules(cfg *config.Config) history.Rules {
	r := history.DefaultRules()
	r = settings[*xidErrorsConfig](cfg, idXIDErrors).rules(r)
	r = settings[*gpuErrorRatesConfig](cfg, idGPUErrorRates).rules(r)
	return settings[*ibFlapsConfig](cfg, idIBFlaps).rules(r)
}

// ErrNoHistory is ReadHistory's error when the node has no history file yet.
var ErrNoHistory = errors.New("no history yet")

// ReadHistory reads node's history in the state directory without changing anything: no lock
// (the runs replace the file atomically), nothing created (open state read-only), a bad file
// left where it is. It returns the file's path; an error wrapping ErrNoHistory when there is
// none.
func ReadHistory(state *files.StateDir, node string, now time.Time) (*history.History, string, error) {
	st, path, err := openNodeHistory(state, node)
	if err != nil {
		return nil, path, err
	}
	defer st.Close()
	h, err := st.Load(node, now)
	var bad *history.BadFileError
	if errors.As(err, &bad) {
		// A read-only look sets nothing aside: the next run does, and starts afresh.
		return nil, path, fmt.Errorf("history %s cannot be used: %v", path, bad.Err)
	}
	return h, path, err
}

// ClearHistory records an admin's clear in node's history, under the history lock the runs
// take (waiting at most wait): what sel names no longer counts from now on, and the file
// keeps who cleared it, when and why. A node with no history yet, or a selector that names
// nothing in it, is an error naming what is known.
func ClearHistory(ctx context.Context, state *files.StateDir, node string, sel history.Selector, who, reason string, now time.Time, wait time.Duration) ([]history.Clear, string, error) {
	st, path, err := openNodeHistory(state, node)
	if err != nil {
		return nil, path, err
	}
	defer st.Close()
	unlock, err := st.Lock(ctx, node, wait)
	if err != nil {
		return nil, path, err
	}
	defer unlock()
	h, err := st.Load(node, now)
	if err != nil {
		// A bad file has been set aside: there is nothing left to clear.
		return nil, path, err
	}
	cleared, err := h.Clear(sel, who, now, reason)
	if err != nil {
		return nil, path, err
	}
	if err := st.Save(h, now); err != nil {
		return nil, path, err
	}
	return cleared, path, nil
}

// openNodeHistory opens the state directory's history for node's file and returns its path;
// an error wrapping ErrNoHistory when the node has no history yet (a new history is nothing
// to show or clear).
func openNodeHistory(state *files.StateDir, node string) (*history.DirStore, string, error) {
	st, err := history.InStateDir(state)
	if err != nil {
		return nil, "", err
	}
	path, err := st.Path(node)
	if err == nil && !st.Has(node) {
		err = fmt.Errorf("%s: %w", path, ErrNoHistory)
	}
	if err != nil {
		st.Close()
		return nil, path, err
	}
	return st, path, nil
}

// RecordRepairs adds a repair's records to node's history (history.RecordRepair: a record
// with the same target, key, action and start is updated), under the history lock the runs
// take, waiting at most wait: `nodecheck history` then shows what was tried and when, and a
// GPU reset ends the faults a reset clears. It returns the file's path.
func RecordRepairs(ctx context.Context, state *files.StateDir, node string, rs []history.Repair, now time.Time, wait time.Duration) (string, error) {
	st, err := history.InStateDir(state)
	if err != nil {
		return "", err
	}
	defer st.Close()
	path, err := st.Path(node)
	if err != nil {
		return path, err
	}
	unlock, err := st.Lock(ctx, node, wait)
	if err != nil {
		return path, err
	}
	defer unlock()
	// A bad file has been set aside (a run reports that): the repair starts a fresh one.
	h, err := st.Load(node, now)
	var bad *history.BadFileError
	if err != nil && !errors.As(err, &bad) {
		return path, err
	}
	for _, r := range rs {
		if err := h.RecordRepair(r); err != nil {
			return path, err
		}
	}
	return path, st.Save(h, now)
}
