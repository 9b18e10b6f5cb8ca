package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Level is a validation level as the fleet runs it: its rank (a job may ask for a level at
// least as thorough) and the time budget its job gets.
type Level struct {
	Name   string
	Rank   int
	Budget time.Duration // what the level takes on an 8-GPU node, at most; 0: the site sets it
}

// Levels are nodecheck validate's levels (docs/validation.md has their tests), with the
// default budgets of nodecheck.toml's [validate.budget], which bound the level on the node:
// quick 10 minutes, full 45, burn-in 4 hours. A site that changes [validate.budget] gives the
// sweep the same figure (--validate-time).
var Levels = []Level{
	{Name: "quick", Rank: 1, Budget: 10 * time.Minute},
	{Name: "full", Rank: 2, Budget: 45 * time.Minute},
	{Name: "burn-in", Rank: 3, Budget: 4 * time.Hour},
}

// LookupLevel finds a level by name; with a positive budget it replaces the level's own.
func LookupLevel(name string, budget time.Duration) (Level, error) {
	for _, l := range Levels {
		if l.Name != name {
			continue
		}
		if budget > 0 {
			l.Budget = budget
		}
		if l.Budget <= 0 {
			return l, fmt.Errorf("level %s: give its time budget (hours, set by the site)", name)
		}
		return l, nil
	}
	names := make([]string, len(Levels))
	for i, l := range Levels {
		names[i] = l.Name
	}
	return Level{}, fmt.Errorf("level %q: want one of %s", name, strings.Join(names, ", "))
}

// JobMinutes is the job's time limit (sbatch --time, minutes): the budget plus a quarter,
// at least 2 minutes more, so that a level that runs to its budget still writes its result
// before Slurm kills it.
func (l Level) JobMinutes() int {
	limit := l.Budget + max(l.Budget/4, 2*time.Minute)
	return int((limit + time.Minute - 1) / time.Minute)
}

// Extra keys nodecheck owns in a node's Extra (Slurm's extra_constraints). The figures go in
// under their own names ("nccl_busbw").
const (
	KeyLevel = "validated_level" // "quick"
	KeyRank  = "validated_rank"  // 1 quick, 2 full, 3 burn-in: --extra "validated_rank>=2"
	KeyAt    = "validated_at"    // Unix seconds of the pass: --extra "validated_at>=1764979200"
)

// ExtraValues are what a passed validation publishes: the level, its rank, when it passed
// (Unix seconds, a number Slurm compares as one), and each figure, the worst over the node's
// devices (the lowest where more is better), with one decimal.
func ExtraValues(r Result, l Level, at time.Time) map[string]any {
	v := map[string]any{KeyLevel: r.Level, KeyRank: l.Rank, KeyAt: at.Unix()}
	worst := map[string]float64{}
	for _, f := range r.Figures {
		w, seen := worst[f.Name]
		if !seen || f.higherIsBetter() && f.Value < w || !f.higherIsBetter() && f.Value > w {
			worst[f.Name] = f.Value
		}
	}
	for k, w := range worst {
		v[k] = math.Round(w*10) / 10
	}
	return v
}

// maxExtra bounds a node's Extra as nodecheck writes it; the figures of one level are a few
// hundred bytes.
const maxExtra = 4096

// WithdrawValues are what a failed validation publishes: nodecheck's keys gone (a nil value
// removes a key in MergeExtra), so that no job asking for a validation lands on the node
// because of an older pass, even when someone resumes it by hand. The figures' keys are the
// result's own.
func WithdrawValues(r Result) map[string]any {
	v := map[string]any{KeyLevel: nil, KeyRank: nil, KeyAt: nil}
	for _, f := range r.Figures {
		v[f.Name] = nil
	}
	return v
}

// MergeExtra puts ours into a node's current Extra (a nil value removes its key): a JSON
// object keeps the keys nodecheck does not set; an empty one becomes ours. Anything else (free text a site put there) is
// left alone with an error: overwriting it would lose it. Keys come out sorted, compact.
func MergeExtra(current string, ours map[string]any) (string, error) {
	merged := map[string]any{}
	if c := strings.TrimSpace(current); c != "" && c != "(null)" {
		dec := json.NewDecoder(strings.NewReader(c))
		dec.UseNumber()
		if err := dec.Decode(&merged); err != nil || dec.More() {
			return "", fmt.Errorf("the node's Extra is not a JSON object (%q): not overwriting it", clip(c))
		}
	}
	for k, v := range ours {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(merged)) {
		if _, mine := ours[k]; mine && !validName(k) {
			return "", fmt.Errorf("key %q: not usable in --extra", clip(k))
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(merged[k])
		if err != nil {
			return "", fmt.Errorf("key %s: %w", k, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	if b.Len() > maxExtra {
		return "", errors.New("the merged Extra is larger than 4 KiB")
	}
	return b.String(), nil
}
