package monitoring

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"10m", 10 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"2d", 48 * time.Hour, false},
		{"500ms", 500 * time.Millisecond, false},
		{"", 0, true},
		{"10", 0, true},
		{"10m5", 0, true},
		{"m10", 0, true},
	} {
		got, err := ParseDuration(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestScaleFor(t *testing.T) {
	in := "      - alert: A\n        expr: x > 12 * 3600\n        for: 10m\n      - alert: B\n        for: 2h\n      - alert: C\n        for: 1m\n"
	got, err := ScaleFor([]byte(in), 200)
	if err != nil {
		t.Fatal(err)
	}
	want := "      - alert: A\n        expr: x > 12 * 3600\n        for: 3s\n      - alert: B\n        for: 36s\n      - alert: C\n        for: 1s\n"
	if string(got) != want {
		t.Errorf("ScaleFor:\n%s\nwant:\n%s", got, want)
	}
	if _, err := ScaleFor([]byte("  for: soon\n"), 2); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Errorf("ScaleFor of a bad duration: %v", err)
	}
}
