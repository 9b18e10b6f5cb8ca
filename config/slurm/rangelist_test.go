package slurm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRangeList(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		limit    int
		want     []Range
		wantElem string // the element a *RangeListError names; "-" for no error
	}{
		{"one", "3", 10, []Range{{3, 3}}, "-"},
		{"list and ranges, as written", "0-3,5,7-8,2", 10, []Range{{0, 3}, {5, 5}, {7, 8}, {2, 2}}, "-"},
		{"leading zeros", "00-07", 10, []Range{{0, 7}}, "-"},
		{"the limit itself", "0-65535", 65535, []Range{{0, 65535}}, "-"},
		{"empty list", "", 10, nil, "-"},
		{"above the limit", "0-11", 10, nil, "0-11"},
		{"backwards", "3-1", 10, nil, "3-1"},
		{"empty element", "0,,1", 10, nil, ""},
		{"trailing comma", "0,", 10, nil, ""},
		{"sign", "+1", 10, nil, "+1"},
		{"negative", "-1", 10, nil, "-1"},
		{"open range", "1-", 10, nil, "1-"},
		{"blank", "0, 1", 10, nil, " 1"},
		{"brackets are the caller's", "[0-3]", 10, nil, "[0-3]"},
		{"two dashes", "1-2-3", 10, nil, "1-2-3"},
		{"huge number", "99999999999999999999999", 1 << 20, nil, "99999999999999999999999"},
		{"Slurm's NoDevFiles", "NoDevFiles", 10, nil, "NoDevFiles"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRangeList(tc.in, tc.limit)
			var re *RangeListError
			switch {
			case tc.wantElem == "-" && err != nil:
				t.Fatalf("ParseRangeList(%q) error %v", tc.in, err)
			case tc.wantElem != "-" && !errors.As(err, &re):
				t.Fatalf("ParseRangeList(%q) = %v, %v; want a *RangeListError", tc.in, got, err)
			case tc.wantElem != "-" && re.Elem != tc.wantElem:
				t.Errorf("ParseRangeList(%q) error names %q, want %q (%v)", tc.in, re.Elem, tc.wantElem, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRangeList(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// FuzzParseRangeList: an accepted list keeps within its limit, and writing it out and reading
// it back gives the same ranges.
func FuzzParseRangeList(f *testing.F) {
	for _, s := range []string{"0-3,5,7-8", "0", "", "0,,1", "3-1", "0-65535", "NoDevFiles"} {
		f.Add(s, 65535)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		got, err := ParseRangeList(s, limit)
		if err != nil {
			var re *RangeListError
			if !errors.As(err, &re) || re.List != s {
				t.Fatalf("ParseRangeList(%q) error %v: not a *RangeListError for the list", s, err)
			}
			return
		}
		for _, r := range got {
			if r.First < 0 || r.Last < r.First || r.Last > limit {
				t.Fatalf("ParseRangeList(%q, %d) = %v: %v out of bounds", s, limit, got, r)
			}
		}
		again, err := ParseRangeList(FormatRangeList(got), limit)
		if err != nil || !cmp.Equal(got, again) {
			t.Fatalf("ParseRangeList(%q) = %v, but its form %q reads back as %v, %v", s, got, FormatRangeList(got), again, err)
		}
	})
}

func ExampleParseRangeList() {
	cores, err := ParseRangeList("0-3,8,10-11", 63)
	fmt.Println(cores, err)
	fmt.Println(FormatRangeList(cores))
	_, err = ParseRangeList("0-3,x", 63)
	fmt.Println(err)
	// Output:
	// [{0 3} {8 8} {10 11}] <nil>
	// 0-3,8,10-11
	// range list "0-3,x": element "x": want a number from 0 to 63 or a range such as 0-3
}
