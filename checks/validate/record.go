package validate

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config/files"
)

// Record adds rep to the node's history in state (the state directory's history/, under the
// lock the runs take, waiting at most wait): health runs then know when the node last passed,
// and `nodecheck history` lists it. A refused validation is not recorded: it exercised
// nothing. It returns the history file's path.
func Record(ctx context.Context, state *files.StateDir, rep Report, wait time.Duration) (string, error) {
	if rep.Refused != "" {
		return "", nil
	}
	st, err := history.InStateDir(state)
	if err != nil {
		return "", err
	}
	defer st.Close()
	path, err := st.Path(rep.Node)
	if err != nil {
		return path, err
	}
	unlock, err := st.Lock(ctx, rep.Node, wait)
	if err != nil {
		return path, err
	}
	defer unlock()
	now := rep.Started.Add(time.Duration(rep.DurationS * float64(time.Second)))
	// A bad file has been set aside (a run reports that): the record starts a fresh one.
	h, err := st.Load(rep.Node, now)
	var bad *history.BadFileError
	if err != nil && !errors.As(err, &bad) {
		return path, err
	}
	if err := h.RecordValidation(ToHistory(rep)); err != nil {
		return path, err
	}
	return path, st.Save(h, now)
}

// ToHistory is the record of rep the history keeps: its key figures (KeyFigures), then every
// other figure below its floor.
func ToHistory(rep Report) history.Validation {
	v := history.Validation{Level: string(rep.Level), Started: rep.Started.Unix(), Duration: int64(math.Round(rep.DurationS)),
		Verdict: string(rep.Verdict), Model: rep.Model}
	kept := map[int]bool{}
	for _, i := range rep.keyIndexes() {
		kept[i] = true
	}
	for i, f := range rep.Figures {
		if kept[i] || !f.OK {
			v.Figures = append(v.Figures, history.ValidationFigure{Name: f.Name, Device: f.Device, Value: f.Value, Floor: f.Floor, OK: f.OK})
		}
	}
	return v
}

// KeyFigures are the figures that stand for the node: for each figure name, in the order the
// names first appear, its lowest value (the slowest GPU or HCA). They are what the history
// keeps of every validation, and what a scheduler compares nodes by.
func (r Report) KeyFigures() []Figure {
	var out []Figure
	for _, i := range r.keyIndexes() {
		out = append(out, r.Figures[i])
	}
	return out
}

// keyIndexes are the indexes in r.Figures of KeyFigures.
func (r Report) keyIndexes() []int {
	worst := map[string]int{}
	var order []string
	for i, f := range r.Figures {
		j, seen := worst[f.Name]
		if !seen {
			order = append(order, f.Name)
		}
		if !seen || f.Value < r.Figures[j].Value {
			worst[f.Name] = i
		}
	}
	out := make([]int, 0, len(order))
	for _, name := range order {
		out = append(out, worst[name])
	}
	slices.Sort(out)
	return out
}
