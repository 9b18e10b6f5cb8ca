package config

import (
	"fmt"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"prolog", ModeProlog, false},
		{"Epilog", ModeEpilog, false},
		{"HEALTH", ModeHealth, false},
		{"manual", ModeManual, false},
		{"prologue", "", true},
		{"", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestBudgetFor(t *testing.T) {
	b := Budget{Prolog: 5 * time.Second, Epilog: 30 * time.Second, Health: 50 * time.Second}
	tests := []struct {
		name   string
		budget Budget
		mode   Mode
		want   time.Duration
	}{
		{"prolog", b, ModeProlog, 5 * time.Second},
		{"epilog", b, ModeEpilog, 30 * time.Second},
		{"health", b, ModeHealth, 50 * time.Second},
		{"manual: none", b, ModeManual, 0},
		// A mode no caller should make gets the tightest limit any mode has, never none.
		{"unknown mode: the tightest", b, Mode("bogus"), 5 * time.Second},
		{"unknown mode: the tightest set", Budget{Epilog: time.Minute, Manual: 20 * time.Second}, Mode(""), 20 * time.Second},
		{"unknown mode, no limits anywhere", Budget{}, Mode("bogus"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.budget.For(tc.mode); got != tc.want {
				t.Errorf("For(%q) = %s, want %s", tc.mode, got, tc.want)
			}
		})
	}
}

// Every mode parses back to itself, and a check's default modes list spells every mode as
// nodecheck.toml does.
func TestModesMatchConfig(t *testing.T) {
	for _, m := range Modes() {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if fmt.Sprint(ModeNames()) != "[prolog epilog health manual]" {
		t.Errorf("ModeNames() = %v", ModeNames())
	}
}

func ExampleBudget_For() {
	b := Default(nil).Budget
	fmt.Println(b.For(ModeProlog), b.For(ModeHealth), b.For(ModeManual))
	// Output: 5s 50s 0s
}

// What each mode may do, in one table: the one place these meanings are written down.
func TestModeMeanings(t *testing.T) {
	tests := []struct {
		mode                                      Mode
		jobHook, unattended, countsClean, repairs bool
	}{
		{ModeProlog, true, true, false, false},
		{ModeEpilog, true, true, false, false},
		{ModeHealth, false, true, true, true},
		{ModeManual, false, false, true, false},
		{Mode("bogus"), false, false, false, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			got := [4]bool{tc.mode.JobHook(), tc.mode.Unattended(), tc.mode.CountsCleanRuns(), tc.mode.Repairs()}
			want := [4]bool{tc.jobHook, tc.unattended, tc.countsClean, tc.repairs}
			if got != want {
				t.Errorf("JobHook, Unattended, CountsCleanRuns, Repairs = %v, want %v", got, want)
			}
		})
	}
}
