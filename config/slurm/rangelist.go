package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// Range is the integers First through Last, inclusive: one element of a range list such as
// gres.conf's Cores=0-3,8 or SLURM_JOB_GPUS=0,2-3.
type Range struct {
	First, Last int
}

// RangeListError is ParseRangeList's error: which element of which list is wrong, and why.
// Callers that know what the numbers are (cores, GPU indices) word their own message from Elem.
type RangeListError struct {
	List   string // the whole list, as given
	Elem   string // the element that is wrong; empty for an empty element
	Reason string
}

func (e *RangeListError) Error() string {
	return fmt.Sprintf("range list %q: element %q: %s", e.List, e.Elem, e.Reason)
}

// ParseRangeList parses a list of integers as Slurm writes them: elements separated by
// commas, each a number N or a range N-M with N <= M, numbers of decimal digits from 0 to
// limit. Nothing else is allowed (no sign, no blank, no empty element). The empty list ""
// gives nil. Ranges are returned as written, in order, neither merged nor deduplicated.
func ParseRangeList(s string, limit int) ([]Range, error) {
	if s == "" {
		return nil, nil
	}
	var out []Range
	for _, e := range strings.Split(s, ",") {
		bad := func(why string) error { return &RangeListError{List: s, Elem: e, Reason: why} }
		lo, hi, isRange := strings.Cut(e, "-")
		if !isRange {
			hi = lo
		}
		first, ok1 := parseRangeNumber(lo, limit)
		last, ok2 := parseRangeNumber(hi, limit)
		switch {
		case e == "":
			return nil, bad("empty element")
		case !ok1 || !ok2:
			return nil, bad(fmt.Sprintf("want a number from 0 to %d or a range such as 0-3", limit))
		case last < first:
			return nil, bad("the range runs backwards")
		}
		out = append(out, Range{First: first, Last: last})
	}
	return out, nil
}

// parseRangeNumber reads decimal digits no larger than limit.
func parseRangeNumber(s string, limit int) (int, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil || n > uint64(max(limit, 0)) {
		return 0, false
	}
	return int(n), true
}

// FormatRangeList writes ranges as ParseRangeList reads them: "0-3,8".
func FormatRangeList(rs []Range) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.Itoa(r.First)
		if r.Last != r.First {
			parts[i] += "-" + strconv.Itoa(r.Last)
		}
	}
	return strings.Join(parts, ",")
}
