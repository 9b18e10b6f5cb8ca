package history

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Validation is one `nodecheck validate` of the node: its level, when, how it ended, and its
// key figures (each figure's worst device, and every figure below its floor).
type Validation struct {
	Level   string `json:"level"`   // "quick", "full", "burn-in"
	Started int64  `json:"started"` // Unix seconds
	// Duration is how long it ran, in seconds.
	Duration int64              `json:"duration"`
	Verdict  string             `json:"verdict"` // "passed", "failed", "undecided"
	Model    string             `json:"model,omitempty"`
	Figures  []ValidationFigure `json:"figures,omitempty"`
}

// ValidationFigure is one kept figure of a validation.
type ValidationFigure struct {
	Name   string  `json:"n"`           // "nccl_busbw"
	Device string  `json:"d,omitempty"` // "GPU 3", "mlx5_0"; "" for the node
	Value  float64 `json:"v"`
	Floor  float64 `json:"f,omitempty"`
	OK     bool    `json:"ok"`
}

// The verdicts a validation records.
const (
	ValidationPassed    = "passed"
	ValidationFailed    = "failed"
	ValidationUndecided = "undecided"
)

// maxValidationFigures bounds the figures one record keeps: the worst of each of the seven
// figure names and the failing ones, on an 8-GPU, 8-HCA node.
const maxValidationFigures = 24

// RecordValidation adds v to the history, its figures cut to maxValidationFigures and its
// strings clipped. It refuses a record no Load would accept.
func (h *History) RecordValidation(v Validation) error {
	v.Model = clip(v.Model, maxIDLen)
	if len(v.Figures) > maxValidationFigures {
		v.Figures = v.Figures[:maxValidationFigures]
	}
	v.Figures = slices.Clone(v.Figures)
	for i := range v.Figures {
		v.Figures[i].Name, v.Figures[i].Device = clip(v.Figures[i].Name, maxSrcLen), clip(v.Figures[i].Device, maxIDLen)
	}
	var c checker
	validateValidation(&c, loc{list: "validations", i: len(h.Validations)}, v)
	if c.err != nil {
		return c.err
	}
	h.Validations = append(h.Validations, v)
	slices.SortStableFunc(h.Validations, func(a, b Validation) int { return cmpInt(a.Started, b.Started) })
	return nil
}

// LastPassed is the newest validation that passed, at any level; ok false when none did.
func (h *History) LastPassed() (Validation, bool) {
	for i := len(h.Validations) - 1; i >= 0; i-- {
		if h.Validations[i].Verdict == ValidationPassed {
			return h.Validations[i], true
		}
	}
	return Validation{}, false
}

// Last is the newest validation of any verdict; ok false when there is none.
func (h *History) Last() (Validation, bool) {
	if len(h.Validations) == 0 {
		return Validation{}, false
	}
	return h.Validations[len(h.Validations)-1], true
}

// pruneValidations keeps the newest n records, and the newest that passed however old: it is
// what the expiry warning and the fleet's scheduling stand on. Validations do not age out
// with MaxAge: a site's expiry may be longer.
func (h *History) pruneValidations(n int) {
	if len(h.Validations) <= n {
		return
	}
	pass, hasPass := h.LastPassed()
	kept := keepNewest(h.Validations, max(n, 1))
	if hasPass && !slices.ContainsFunc(kept, func(v Validation) bool { return v.Started == pass.Started && v.Verdict == pass.Verdict }) {
		kept = append([]Validation{pass}, kept[1:]...)
	}
	h.Validations = kept
}

func validateValidation(c *checker, l loc, v Validation) {
	switch v.Level {
	case "quick", "full", "burn-in":
	default:
		c.failf("%s: %q is not a validation level", fieldAt(l, "level"), v.Level)
	}
	switch v.Verdict {
	case ValidationPassed, ValidationFailed, ValidationUndecided:
	default:
		c.failf("%s: %q is not a validation verdict", fieldAt(l, "verdict"), v.Verdict)
	}
	c.when(l, "started", v.Started, false)
	c.in(l, "duration", v.Duration, 0, int64(30*24*time.Hour/time.Second))
	c.str(l, "model", v.Model, maxIDLen)
	if len(v.Figures) > maxValidationFigures {
		c.failf("%s: %d figures, at most %d", fieldAt(l, "figures"), len(v.Figures), maxValidationFigures)
	}
	for j, f := range v.Figures {
		fl := loc{list: l.list, i: l.i, sub: "figures", j: j}
		c.str(fl, "n", f.Name, maxSrcLen)
		c.str(fl, "d", f.Device, maxIDLen)
		for _, x := range []float64{f.Value, f.Floor} {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1e12 {
				c.failf("%s: %v is not a figure", fieldAt(fl, "v"), x)
			}
		}
	}
}

// String is "quick passed 2026-12-01T10:00:00Z".
func (v Validation) String() string {
	return fmt.Sprintf("%s %s %s", v.Level, v.Verdict, stamp(v.Started))
}
