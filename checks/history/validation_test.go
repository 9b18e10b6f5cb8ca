package history

import (
	"strings"
	"testing"
)

// TestRecordValidation: records are kept in time order, refused when out of range, their
// figures capped; pruning keeps the newest and the last that passed however old.
func TestRecordValidation(t *testing.T) {
	h := New("n1")
	base := int64(1764590400)
	for i, v := range []string{ValidationPassed, ValidationFailed, ValidationFailed} {
		if err := h.RecordValidation(Validation{Level: "quick", Started: base + int64(i)*86400, Duration: 300, Verdict: v}); err != nil {
			t.Fatal(err)
		}
	}
	pass, ok := h.LastPassed()
	last, _ := h.Last()
	if !ok || pass.Started != base || last.Verdict != ValidationFailed || last.Started != base+2*86400 {
		t.Errorf("LastPassed %v %v, Last %v", pass, ok, last)
	}
	h.pruneValidations(2)
	if len(h.Validations) != 2 || h.Validations[0].Verdict != ValidationPassed || h.Validations[1].Started != base+2*86400 {
		t.Errorf("after pruning to 2: %+v, want the pass and the newest", h.Validations)
	}
	h.pruneValidations(3)
	if len(h.Validations) != 2 {
		t.Errorf("pruning under the cap dropped records: %+v", h.Validations)
	}

	for _, tc := range []struct {
		name string
		v    Validation
		want string
	}{
		{"level", Validation{Level: "quick!", Started: base, Verdict: ValidationPassed}, `validations[2].level: "quick!" is not a validation level`},
		{"verdict", Validation{Level: "full", Started: base, Verdict: "healthy"}, `validations[2].verdict: "healthy" is not a validation verdict`},
		{"time", Validation{Level: "full", Started: 5, Verdict: ValidationPassed}, "validations[2].started: 5 is not a time between 2000 and 2100"},
		{"figure", Validation{Level: "full", Started: base, Verdict: ValidationPassed, Figures: []ValidationFigure{{Name: "x", Value: -1}}}, "validations[2].figures[0].v: -1 is not a figure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.RecordValidation(tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	many := Validation{Level: "burn-in", Started: base + 5*86400, Verdict: ValidationPassed}
	for range 40 {
		many.Figures = append(many.Figures, ValidationFigure{Name: "gemm_gflops", Device: "GPU 0", Value: 1, OK: true})
	}
	if err := h.RecordValidation(many); err != nil || len(h.Validations[len(h.Validations)-1].Figures) != maxValidationFigures {
		t.Errorf("figures not capped: %v", err)
	}
	if e := validationEntry(Validation{Level: "full", Verdict: ValidationFailed, Duration: 60, Figures: []ValidationFigure{{Name: "ib_write_bw", Device: "mlx5_0", Value: 18.51, Floor: 80}}}); e.Text != "validation full failed in 60s: ib_write_bw mlx5_0 18.51 below floor 80" {
		t.Errorf("timeline entry %q", e.Text)
	}
}
