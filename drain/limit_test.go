package drain

import "testing"

func TestLimitReached(t *testing.T) {
	tests := []struct {
		name           string
		limit          Limit
		drained, total int
		want           bool
	}{
		{"no limit", Limit{}, 1000, 1000, false},
		{"count below", Limit{N: 10}, 9, 100, false},
		{"count at", Limit{N: 10}, 10, 100, true},
		{"count above", Limit{N: 1}, 2, 2, true},
		{"percent below", Limit{N: 10, Percent: true}, 9, 100, false},
		{"percent at", Limit{N: 10, Percent: true}, 10, 100, true},
		{"percent not rounded: 10% of 15 is 1.5", Limit{N: 10, Percent: true}, 1, 15, false},
		{"percent not rounded: 2 >= 1.5", Limit{N: 10, Percent: true}, 2, 15, true},
		{"two-node cluster, first drain passes", Limit{N: 10, Percent: true}, 0, 2, false},
		{"two-node cluster, second drain held", Limit{N: 10, Percent: true}, 1, 2, true},
		{"50% of two nodes", Limit{N: 50, Percent: true}, 1, 2, true},
		{"empty cluster listing holds", Limit{N: 10, Percent: true}, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.limit.Reached(tc.drained, tc.total); got != tc.want {
				t.Errorf("%s.Reached(%d, %d) = %v, want %v", tc.limit, tc.drained, tc.total, got, tc.want)
			}
		})
	}
}

func TestLimitString(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want string
	}{{Limit{}, "none"}, {Limit{N: 3}, "3"}, {Limit{N: 10, Percent: true}, "10%"}} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.l, got, tc.want)
		}
	}
}
