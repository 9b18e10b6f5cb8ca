package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// slurmRecord records what `scontrol show hostnames` of one Slurm version prints where
// nodecheck deliberately differs from it; hostlist_oracle_test.go checks the record against
// the real scontrol of that version, so the difference stays a documented choice and not an
// accident.
type slurmRecord struct {
	names   []string // what that Slurm prints, one name per line
	invalid bool     // it says "Invalid hostlist"
	notRun  bool     // the output is too large to compare; the record is prose only
	// nodecheck, in a 24.11 record, says that 24.11 prints what nodecheck expands where 22.05
	// does not (a 22.05 record never sets it).
	nodecheck bool
	why       string // why nodecheck differs, or how the versions do
}

// hostlistCase is one expression with nodecheck's expected expansion (or error). Cases without
// slurm are expected to match scontrol exactly.
type hostlistCase struct {
	name    string
	expr    string
	want    []string // nil when wantErr is set
	wantErr string   // a fragment of the error; "" for a valid expression
	// slurm is what Slurm 22.05 prints where that differs from nodecheck (nil: 22.05 prints
	// what nodecheck expands). slurm2411 is set only where 24.11 differs from 22.05: what
	// 24.11 prints, or nodecheck: true when that is nodecheck's expansion; nil means 24.11
	// prints what 22.05 does.
	slurm, slurm2411 *slurmRecord
}

// Reasons shared by several recorded differences.
const (
	whyGarbage = "22.05 turns this malformed input into names instead of rejecting it; nodecheck rejects it"
	whyHuge    = "absurd size: nodecheck caps an expression at MaxHostlistLen names"
)

var hostlistCases = []hostlistCase{
	// Valid: empty input is an empty list, as in Slurm.
	{name: "empty", expr: "", want: []string{}},
	{name: "only blanks", expr: "  \t ", want: []string{}},
	{name: "only commas", expr: ",,,", want: []string{}},
	{name: "single name", expr: "gpu01", want: []string{"gpu01"}},
	{name: "name without digits", expr: "login", want: []string{"login"}},
	{name: "range and value", expr: "gpu[01-03,40]", want: []string{"gpu01", "gpu02", "gpu03", "gpu40"}},
	{name: "names and ranges mixed", expr: "a1,b[2-3]", want: []string{"a1", "b2", "b3"}},
	{name: "two brackets", expr: "rack[0-1]_node[1-4]", want: []string{
		"rack0_node1", "rack0_node2", "rack0_node3", "rack0_node4",
		"rack1_node1", "rack1_node2", "rack1_node3", "rack1_node4"}},
	{name: "comma inside first bracket", expr: "rack[0,1]_node[1-2]", want: []string{
		"rack0_node1", "rack0_node2", "rack1_node1", "rack1_node2"}},
	// Slurm expands the second-to-last bracket outermost: b, then a, then c.
	{name: "three brackets in slurm order", expr: "a[1-2]b[3-4]c[5-6]", want: []string{
		"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}},
	{name: "four brackets in slurm order", expr: "a[1-2]b[3-4]c[5-6]d[7-8]", want: []string{
		"a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b4c5d7", "a1b4c5d8", "a2b4c5d7", "a2b4c5d8",
		"a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8", "a1b4c6d7", "a1b4c6d8", "a2b4c6d7", "a2b4c6d8"}},
	{name: "adjacent brackets", expr: "n[1-2][3-4]", want: []string{"n13", "n14", "n23", "n24"}},
	{name: "same pattern twice", expr: "n[1-2]n[1-2]", want: []string{"n1n1", "n1n2", "n2n1", "n2n2"}},
	{name: "several multi-bracket elements", expr: "a[1-2]b[3-4],c[5-6]d[7]", want: []string{
		"a1b3", "a1b4", "a2b3", "a2b4", "c5d7", "c6d7"}},
	{name: "zero padding kept", expr: "n[08-12]", want: []string{"n08", "n09", "n10", "n11", "n12"}},
	{name: "no padding", expr: "n[8-12]", want: []string{"n8", "n9", "n10", "n11", "n12"}},
	// The width is that of the low bound as written.
	{name: "wider high bound", expr: "n[08-012]", want: []string{"n08", "n09", "n10", "n11", "n12"}},
	{name: "padded low bound", expr: "n[009-12]", want: []string{"n009", "n010", "n011", "n012"}},
	{name: "padded high bound ignored", expr: "n[1-02]", want: []string{"n1", "n2"}},
	{name: "zero", expr: "n[0-2]", want: []string{"n0", "n1", "n2"}},
	{name: "padded zero", expr: "n[00-02]", want: []string{"n00", "n01", "n02"}},
	{name: "mixed widths in one bracket", expr: "n[1,01,001]", want: []string{"n1", "n01", "n001"}},
	{name: "long padding", expr: "n[0000000000000000000000001-2]", want: []string{
		"n0000000000000000000000001", "n0000000000000000000000002"}},
	{name: "largest number", expr: "n[18446744073709551615]", want: []string{"n18446744073709551615"}},
	{name: "overlapping ranges keep duplicates", expr: "n[1-3,2]", want: []string{"n1", "n2", "n3", "n2"}},
	{name: "duplicate names kept", expr: "a,a", want: []string{"a", "a"}},
	{name: "single value", expr: "n[5]", want: []string{"n5"}},
	{name: "one-value range", expr: "n[5-5]", want: []string{"n5"}},
	{name: "empty elements skipped", expr: "a,,b", want: []string{"a", "b"}},
	{name: "leading and trailing commas", expr: ",a,", want: []string{"a"}},
	{name: "blanks around names", expr: " a , b ", want: []string{"a", "b"}},
	{name: "blank and tab separate", expr: "a b\tc", want: []string{"a", "b", "c"}},
	{name: "bracket then blank", expr: "a[1-2] b[3]", want: []string{"a1", "a2", "b3"}},
	{name: "empty prefix", expr: "[1-2]", want: []string{"1", "2"}},
	{name: "dots dashes underscores", expr: "node-1.cluster,x_y", want: []string{"node-1.cluster", "x_y"}},
	{name: "non-ascii prefix", expr: "ñ[1-2]", want: []string{"ñ1", "ñ2"}},
	{name: "gpu and ib", expr: "gpu[1-3]ib[1-2]", want: []string{
		"gpu1ib1", "gpu1ib2", "gpu2ib1", "gpu2ib2", "gpu3ib1", "gpu3ib2"}},

	// Valid in Slurm 23.11 and later, rejected by the 22.05 installed here.
	{name: "suffix after bracket", expr: "n[1-2]-ib", want: []string{"n1-ib", "n2-ib"},
		slurm:     &slurmRecord{invalid: true, why: "a suffix after the last bracket is accepted from Slurm 23.11 on"},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 accepts the suffix"}},
	{name: "suffix after two brackets", expr: "rack[0-1]_n[1-2].ib", want: []string{
		"rack0_n1.ib", "rack0_n2.ib", "rack1_n1.ib", "rack1_n2.ib"},
		slurm:     &slurmRecord{invalid: true, why: "a suffix after the last bracket is accepted from Slurm 23.11 on"},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 accepts the suffix"}},
	{name: "suffix with comma list", expr: "a[1-2]b,c", want: []string{"a1b", "a2b", "c"},
		slurm:     &slurmRecord{invalid: true, why: "a suffix after the last bracket is accepted from Slurm 23.11 on"},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 accepts the suffix"}},
	{name: "suffix on empty prefix", expr: "[1-2]x", want: []string{"1x", "2x"},
		slurm:     &slurmRecord{invalid: true, why: "a suffix after the last bracket is accepted from Slurm 23.11 on"},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 accepts the suffix"}},

	// Invalid in both.
	{name: "reversed range", expr: "n[3-1]", wantErr: `"3-1": range runs backwards`},
	{name: "empty brackets", expr: "n[]", wantErr: `"[]": empty range`},
	{name: "trailing comma in brackets", expr: "n[1-2,]", wantErr: "empty range"},
	{name: "leading comma in brackets", expr: "n[,1]", wantErr: "empty range"},
	{name: "double comma in brackets", expr: "n[1,,2]", wantErr: "empty range"},
	{name: "negative number", expr: "n[-1]", wantErr: `"-1": malformed range`},
	{name: "double dash", expr: "n[1--2]", wantErr: `"1--2": malformed range`},
	{name: "letters in brackets", expr: "n[a-b]", wantErr: `'a' inside brackets`},
	{name: "box syntax", expr: "n[1x2]", wantErr: `'x' inside brackets`},
	{name: "arabic digits", expr: "n[١-٢]", wantErr: "inside brackets"},
	{name: "extra closing bracket", expr: "n[1-2]]", wantErr: "']' without a matching '['",
		slurm2411: &slurmRecord{names: []string{"n1]", "n2]"}, why: "24.11 takes the ']' for a suffix; 22.05 and nodecheck reject it"}},
	{name: "too many hosts in range", expr: "a[0-99999999]", wantErr: "range of 100000000 names is more than 16777216"},

	// Slurm 22.05 accepts these and prints garbage, or clamps; nodecheck rejects them.
	{name: "unclosed bracket", expr: "n[1-2", wantErr: `"[1-2": '[' is never closed`,
		slurm:     &slurmRecord{names: []string{"n]"}, why: whyGarbage},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 says Invalid hostlist, as nodecheck does"}},
	{name: "unclosed bracket after dash", expr: "n[1-", wantErr: "never closed",
		slurm:     &slurmRecord{names: []string{"n]"}, why: whyGarbage},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 says Invalid hostlist, as nodecheck does"}},
	{name: "unclosed bracket in list", expr: "a,b[1,2", wantErr: "never closed",
		slurm:     &slurmRecord{names: []string{"a", "b]", "2"}, why: whyGarbage},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 says Invalid hostlist, as nodecheck does"}},
	{name: "lone open bracket", expr: "[", wantErr: "never closed",
		slurm:     &slurmRecord{names: []string{}, why: whyGarbage},
		slurm2411: &slurmRecord{nodecheck: true, why: "24.11 says Invalid hostlist, as nodecheck does"}},
	{name: "stray closing bracket", expr: "n]", wantErr: "']' without a matching '['",
		slurm: &slurmRecord{names: []string{"n]"}, why: whyGarbage}},
	{name: "lone closing bracket", expr: "]", wantErr: "']' without a matching '['",
		slurm: &slurmRecord{names: []string{"]"}, why: whyGarbage}},
	{name: "nested bracket", expr: "n[[1-2]", wantErr: "brackets do not nest",
		slurm: &slurmRecord{names: []string{"n[1", "n[2"}, why: whyGarbage}},
	{name: "missing high bound", expr: "n[1-]", wantErr: `"1-": malformed range`,
		slurm: &slurmRecord{names: []string{"n1"}, why: whyGarbage}},
	{name: "plus sign", expr: "n[+1-2]", wantErr: `'+' inside brackets`,
		slurm: &slurmRecord{names: []string{"n01", "n02"}, why: whyGarbage + " (strtoul reads the sign, the width counts it)"}},
	{name: "plus sign on high bound", expr: "n[1-+2]", wantErr: `'+' inside brackets`,
		slurm: &slurmRecord{names: []string{"n1", "n2"}, why: whyGarbage}},
	{name: "blank inside brackets", expr: "n[1, 2]", wantErr: "blank inside brackets",
		slurm: &slurmRecord{names: []string{"n1", "n02"}, why: whyGarbage + " (the blank counts toward the width)"}},
	{name: "number overflows", expr: "n[99999999999999999999]", wantErr: `"99999999999999999999": number too large`,
		slurm: &slurmRecord{names: []string{"n18446744073709551615"}, why: whyGarbage + " (strtoul clamps to ULONG_MAX)"}},
	{name: "product of brackets too large", expr: "a[0-9999]b[0-9999]", wantErr: "more than 16777216 names",
		slurm: &slurmRecord{notRun: true, why: whyHuge + "; 22.05 accepts all 10^8 names"}},
	{name: "newline inside", expr: "a\nb", wantErr: `control character '\n'`,
		slurm: &slurmRecord{names: []string{"a", "b"}, why: "22.05 keeps the newline inside one name (so it prints as two lines); no host is called that"}},

	{name: "trailing carriage return", expr: "a\r", want: []string{"a"},
		slurm: &slurmRecord{names: []string{"a\r"}, why: "22.05 keeps a CR (from a DOS-format file) in the name; nodecheck trims it"}},
	{name: "unicode space is part of a name", expr: "\u2000a", want: []string{"\u2000a"}},
	{name: "vertical tab", expr: "a\v,b", wantErr: `control character '\v'`,
		slurm: &slurmRecord{names: []string{"a\v", "b"}, why: "22.05 keeps control characters in names"}},

	// Rejected by 22.05 (one range caps at 65,536 hosts); accepted here on purpose.
	{name: "range over slurm's 64k", expr: "n[1-65537]", want: nil,
		slurm: &slurmRecord{invalid: true, why: "nodecheck allows ranges up to MaxHostlistLen: gpu[000001-999999] is legal"}},
}

func TestExpandHostlist(t *testing.T) {
	for _, tc := range hostlistCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandHostlist(tc.expr)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ExpandHostlist(%q) = %q, want an error containing %q", tc.expr, got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ExpandHostlist(%q) error = %q, want it to contain %q", tc.expr, err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), strconv.Quote(strings.Trim(tc.expr, hlTrim))) {
					t.Errorf("error %q does not quote the expression", err)
				}
				var he *HostlistError
				if !errors.As(err, &he) {
					t.Errorf("error %T is not a *HostlistError", err)
				}
				if got != nil {
					t.Errorf("ExpandHostlist(%q) returned %d names with its error; want none", tc.expr, len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("ExpandHostlist(%q): %v", tc.expr, err)
			}
			if tc.want == nil {
				return // too long to write down; the oracle and Len tests cover it
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExpandHostlist(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestHostlistLenContainsEach(t *testing.T) {
	for _, tc := range hostlistCases {
		if tc.wantErr != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHostlist(tc.expr)
			if err != nil {
				t.Fatalf("ParseHostlist(%q): %v", tc.expr, err)
			}
			if got, want := h.String(), strings.Trim(tc.expr, hlTrim); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
			names := h.Expand()
			if h.Len() != len(names) {
				t.Errorf("Len() = %d, but Expand() gave %d names", h.Len(), len(names))
			}
			for _, n := range names {
				if !h.Contains(n) {
					t.Errorf("Contains(%q) = false for a name Expand() gave", n)
				}
			}
			// Near misses: other padding, a digit more or less, a prefix or suffix only.
			in := make(map[string]bool, len(names))
			for _, n := range names {
				in[n] = true
			}
			for _, n := range names {
				for _, miss := range nearMisses(n) {
					if got := h.Contains(miss); got != in[miss] {
						t.Errorf("Contains(%q) = %v, want %v (by Expand())", miss, got, in[miss])
					}
				}
			}
			// Each stops when told to.
			seen := 0
			h.Each(func(string) bool { seen++; return seen < 2 })
			if want := min(2, len(names)); seen != want {
				t.Errorf("Each visited %d names after fn returned false, want %d", seen, want)
			}
		})
	}
}

// nearMisses returns names that differ from n by a little: a leading zero added or removed
// before a digit run, a digit added, the last character dropped.
func nearMisses(n string) []string {
	var out []string
	for i := 0; i < len(n); i++ {
		if n[i] >= '0' && n[i] <= '9' && (i == 0 || n[i-1] < '0' || n[i-1] > '9') {
			out = append(out, n[:i]+"0"+n[i:])
			if n[i] == '0' && i+1 < len(n) {
				out = append(out, n[:i]+n[i+1:])
			}
		}
	}
	out = append(out, n+"0", n+"x")
	if n != "" {
		out = append(out, n[:len(n)-1])
	}
	return out
}

func TestHostlistHugeRange(t *testing.T) {
	h, err := ParseHostlist("gpu[000001-999999]")
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 999999 {
		t.Errorf("Len() = %d, want 999999", h.Len())
	}
	tests := []struct {
		name string
		host string
		want bool
	}{
		{name: "inside", host: "gpu123456", want: true},
		{name: "first", host: "gpu000001", want: true},
		{name: "last", host: "gpu999999", want: true},
		{name: "zero is outside", host: "gpu000000", want: false},
		{name: "unpadded", host: "gpu1", want: false},
		{name: "over-padded", host: "gpu0123456", want: false},
		{name: "seven digits", host: "gpu1234567", want: false},
		{name: "other prefix", host: "cpu123456", want: false},
		{name: "prefix only", host: "gpu", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.Contains(tc.host); got != tc.want {
				t.Errorf("Contains(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { h.Contains("gpu123456") }); n != 0 {
		t.Errorf("Contains allocates %v times per call, want 0", n)
	}
	var first, last string
	count := 0
	h.Each(func(name string) bool {
		if count == 0 {
			first = name
		}
		last = name
		count++
		return true
	})
	if first != "gpu000001" || last != "gpu999999" || count != 999999 {
		t.Errorf("Each: first %q, last %q, count %d; want gpu000001, gpu999999, 999999", first, last, count)
	}
}

func TestHostlistContainsAdjacentBrackets(t *testing.T) {
	// Digits split between brackets more than one way: n[1-12][3-34] holds n123 as 1,23
	// and as 12,3; n[1-12][4] does not hold n1234.
	tests := []struct {
		name string
		expr string
		host string
		want bool
	}{
		{name: "split after first digit", expr: "n[1-12][3-34]", host: "n123", want: true},
		{name: "only the long split fits", expr: "n[10-12][3]", host: "n123", want: true},
		{name: "only the short split fits", expr: "n[1][23]", host: "n123", want: true},
		{name: "no split fits", expr: "n[1-12][4]", host: "n1234", want: false},
		{name: "digit suffix", expr: "n[1-2]0", host: "n10", want: true},
		{name: "digit suffix miss", expr: "n[1-2]0", host: "n100", want: false},
		{name: "padding decides", expr: "n[01-02][1-2]", host: "n011", want: true},
		{name: "padding decides miss", expr: "n[01-02][1-2]", host: "n11", want: false},
		// Without memoising failed (bracket, position) pairs these take exponential time.
		{name: "many brackets no match", expr: strings.Repeat("[1,11,111]", 14), host: strings.Repeat("1", 30) + "2", want: false},
		{name: "many brackets match", expr: strings.Repeat("[1,11,111]", 14), host: strings.Repeat("1", 30), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHostlist(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Contains(tc.host); got != tc.want {
				t.Errorf("%q.Contains(%q) = %v, want %v", tc.expr, tc.host, got, tc.want)
			}
		})
	}
}

// TestHostlistContainsLongList covers the index that Contains builds for lists of many plain
// names, with bracketed elements mixed in, against a naive scan of Expand.
func TestHostlistContainsLongList(t *testing.T) {
	var elems []string
	for i := range 200 {
		elems = append(elems, fmt.Sprintf("cpu%03d", i))
		if i%50 == 0 {
			elems = append(elems, fmt.Sprintf("gpu%d[01-04]", i))
		}
	}
	expr := strings.Join(elems, ",")
	h, err := ParseHostlist(expr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		host string
		want bool
	}{
		{name: "first plain name", host: "cpu000", want: true},
		{name: "last plain name", host: "cpu199", want: true},
		{name: "plain name out of range", host: "cpu200", want: false},
		{name: "plain name unpadded", host: "cpu7", want: false},
		{name: "bracketed first", host: "gpu001", want: true},
		{name: "bracketed last", host: "gpu15004", want: true},
		{name: "bracketed out of range", host: "gpu15005", want: false},
		{name: "empty", host: "", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.Contains(tc.host); got != tc.want {
				t.Errorf("Contains(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	names := h.Expand()
	if len(names) != 216 || h.Len() != 216 {
		t.Fatalf("Len() = %d, Expand() gave %d names, want 216", h.Len(), len(names))
	}
	for _, n := range names {
		if !h.Contains(n) {
			t.Errorf("Contains(%q) = false for an expanded name", n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { h.Contains("gpu15004") }); n != 0 {
		t.Errorf("Contains allocates %v times per call once indexed, want 0", n)
	}
}

// TestHostlistContainsConcurrent checks that the index built by the first Contains is safe
// to build from several goroutines at once (run with -race where cgo is available).
func TestHostlistContainsConcurrent(t *testing.T) {
	h, err := ParseHostlist(longList())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("gpu%d", 1000*(g+1))
			if !h.Contains(name) {
				t.Errorf("Contains(%q) = false", name)
			}
		})
	}
	wg.Wait()
}

func TestHostlistZeroValue(t *testing.T) {
	var h Hostlist
	if h.Len() != 0 || h.Contains("") || h.String() != "" || len(h.Expand()) != 0 {
		t.Errorf("zero Hostlist is not an empty list: Len %d, String %q", h.Len(), h.String())
	}
	var nilh *Hostlist
	if nilh.Len() != 0 || nilh.Contains("a") || nilh.String() != "" || len(nilh.Expand()) != 0 {
		t.Errorf("nil *Hostlist is not an empty list")
	}
}

// compressCases are lists of names with what `scontrol show hostlist` (22.05) prints for them.
var compressCases = []struct {
	name  string
	names []string
	want  string
}{
	{name: "empty", names: nil, want: ""},
	{name: "one name", names: []string{"n"}, want: "n"},
	{name: "run", names: []string{"n1", "n2", "n3"}, want: "n[1-3]"},
	{name: "not sorted", names: []string{"n3", "n1", "n2"}, want: "n[3,1-2]"},
	{name: "descending", names: []string{"n2", "n1"}, want: "n[2,1]"},
	{name: "duplicates kept", names: []string{"n1", "n2", "n1"}, want: "n[1-2,1]"},
	{name: "same name twice", names: []string{"n1", "n1"}, want: "n[1,1]"},
	{name: "other prefix splits brackets", names: []string{"n1", "n2", "n3", "n5", "m1", "n6"}, want: "n[1-3,5],m1,n6"},
	{name: "padding kept", names: []string{"n08", "n09", "n10"}, want: "n[08-10]"},
	{name: "padding mismatch", names: []string{"n8", "n09", "n10"}, want: "n[8,09-10]"},
	{name: "growing width joins", names: []string{"n9", "n10"}, want: "n[9-10]"},
	{name: "growing width run", names: []string{"n99", "n100", "n101"}, want: "n[99-101]"},
	{name: "padded growing width", names: []string{"n099", "n100"}, want: "n[099-100]"},
	{name: "over-padded does not join", names: []string{"n9", "n010"}, want: "n[9,010]"},
	{name: "over-padded after two digits", names: []string{"n10", "n011"}, want: "n[10,011]"},
	{name: "same number other width", names: []string{"n1", "n01"}, want: "n[1,01]"},
	{name: "zeros", names: []string{"n0", "n00", "n000"}, want: "n[0,00,000]"},
	{name: "padded then unpadded", names: []string{"n00", "n01", "n1", "n2"}, want: "n[00-01,1-2]"},
	{name: "padded after unpadded", names: []string{"n1", "n02", "n03"}, want: "n[1,02-03]"},
	{name: "unpadded after padded", names: []string{"n01", "n2"}, want: "n[01,2]"},
	{name: "from zero", names: []string{"n0", "n1"}, want: "n[0-1]"},
	{name: "no digits", names: []string{"a", "b", "c"}, want: "a,b,c"},
	{name: "name without digits among ranges", names: []string{"x", "n1", "n2", "x"}, want: "x,n[1-2],x"},
	{name: "digits only", names: []string{"1", "2", "3"}, want: "[1-3]"},
	{name: "only the last number ranges", names: []string{"rack0_node1", "rack0_node2", "rack1_node1"},
		want: "rack0_node[1-2],rack1_node1"},
	{name: "prefixes differ by padding", names: []string{"rack0_node1", "rack00_node2"}, want: "rack0_node1,rack00_node2"},
	{name: "suffix is not ranged", names: []string{"n1-ib", "n2-ib"}, want: "n1-ib,n2-ib"},
	{name: "dash before number", names: []string{"a-1", "a-2"}, want: "a-[1-2]"},
	{name: "interleaved prefixes", names: []string{"a1", "a2", "b1", "a3"}, want: "a[1-2],b1,a3"},
	{name: "break in run", names: []string{"n1", "n2", "n3", "x", "n4"}, want: "n[1-3],x,n4"},
	{name: "overlap", names: []string{"n1", "n2", "n3", "n4", "n2", "n3"}, want: "n[1-4,2-3]"},
	{name: "name then numbered", names: []string{"n1", "n"}, want: "n1,n"},
	{name: "empty names skipped", names: []string{"", "a1", "", "a2", ""}, want: "a[1-2]"},
	{name: "largest number", names: []string{"n18446744073709551614", "n18446744073709551615"},
		want: "n[18446744073709551614-18446744073709551615]"},
}

func TestCompressHostlist(t *testing.T) {
	for _, tc := range compressCases {
		t.Run(tc.name, func(t *testing.T) {
			got := CompressHostlist(tc.names)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CompressHostlist(%q) (-want +got):\n%s", tc.names, diff)
			}
		})
	}
}

// Names whose trailing number overflows 64 bits are kept whole. Slurm 22.05 clamps them to
// 18446744073709551615 and prints other names (n[18446744073709551615,18446744073709551615]
// for the first case); nodecheck never prints a name it was not given.
func TestCompressHostlistOverflow(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  string
	}{
		{name: "one past uint64", names: []string{"n18446744073709551615", "n18446744073709551616"},
			want: "n18446744073709551615,n18446744073709551616"},
		{name: "24 digits", names: []string{"n123456789012345678901234", "n123456789012345678901235"},
			want: "n123456789012345678901234,n123456789012345678901235"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CompressHostlist(tc.names)); diff != "" {
				t.Errorf("CompressHostlist(%q) (-want +got):\n%s", tc.names, diff)
			}
		})
	}
}

// TestCompressHostlistRoundTrip checks that expanding what CompressHostlist prints gives the
// names back, in order, duplicates kept.
func TestCompressHostlistRoundTrip(t *testing.T) {
	lists := [][]string{
		{"n1", "n2", "n3", "n5", "m1", "n6"},
		{"n8", "n09", "n10", "n9", "n10", "n010"},
		{"n99", "n100", "n101", "n0099"},
		{"a", "a", "a1", "a01", "a001", "a0"},
		{"rack0_node1", "rack0_node2", "rack1_node1", "rack1_node2"},
		{"n18446744073709551614", "n18446744073709551615", "n0"},
		{"n18446744073709551616", "n1"},
		{"1", "2", "3", "x"},
	}
	for _, tc := range hostlistCases {
		if tc.wantErr == "" && tc.want != nil && !strings.Contains(tc.expr, "\n") {
			lists = append(lists, tc.want)
		}
	}
	for _, names := range lists {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			expr := CompressHostlist(names)
			got, err := ExpandHostlist(expr)
			if err != nil {
				t.Fatalf("CompressHostlist(%q) = %q, which does not parse: %v", names, expr, err)
			}
			want := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ExpandHostlist(CompressHostlist(names) = %q) (-want +got):\n%s", expr, diff)
			}
		})
	}
}

func TestHostlistErrorText(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string
	}{
		{name: "reversed", expr: "gpu[08-01]",
			want: `parse hostlist "gpu[08-01]": "08-01": range runs backwards; write it low-high, e.g. 01-08`},
		{name: "unclosed", expr: "NodeName=gpu[01-",
			want: `parse hostlist "NodeName=gpu[01-": "[01-": '[' is never closed; add the missing ']'`},
		{name: "whole element quoted", expr: "a,n]x,b",
			want: `parse hostlist "a,n]x,b": "n]x": ']' without a matching '['`},
		{name: "trimmed", expr: "  n[]  ",
			want: `parse hostlist "n[]": "[]": empty range; remove the extra ',' or write a number`},
		{name: "too many in total", expr: "a[0-16777215],b",
			want: `parse hostlist "a[0-16777215],b": stands for more than 16777216 names; split it or check for a typo`},
		{name: "long expression cut", expr: strings.Repeat("gpu1,", 30) + "n[1-",
			want: `parse hostlist "` + strings.Repeat("gpu1,", 19) + `gp...": "[1-": '[' is never closed; add the missing ']'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHostlist(tc.expr)
			if err == nil {
				t.Fatalf("ParseHostlist(%q) succeeded", tc.expr)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseHostlist(f *testing.F) {
	for _, tc := range hostlistCases {
		f.Add(tc.expr, "n1")
	}
	f.Add("n[1-12][3-34]", "n123")
	f.Add("gpu[000001-999999]", "gpu123456")
	f.Add("a[1-2]b[3-4]c[5-6]", "a2b4c5")
	f.Fuzz(func(t *testing.T, expr, name string) {
		h, err := ParseHostlist(expr)
		if err != nil {
			if h != nil {
				t.Fatalf("ParseHostlist(%q) returned a Hostlist with error %v", expr, err)
			}
			if !strings.Contains(err.Error(), "parse hostlist ") {
				t.Fatalf("error %q does not say what was being done", err)
			}
			return
		}
		if h.Len() < 0 || h.Len() > MaxHostlistLen {
			t.Fatalf("Len() = %d out of bounds", h.Len())
		}
		h.Contains(name) // must not panic whatever the size
		if h.Len() > 2000 {
			return
		}
		names := h.Expand()
		if len(names) != h.Len() {
			t.Fatalf("%q: Len() = %d, Expand() gave %d names", expr, h.Len(), len(names))
		}
		for _, n := range names {
			if !h.Contains(n) {
				t.Fatalf("%q: Contains(%q) = false for an expanded name", expr, n)
			}
		}
		if got, want := h.Contains(name), slices.Contains(names, name); got != want {
			t.Fatalf("%q: Contains(%q) = %v, but Expand() says %v", expr, name, got, want)
		}
		// Compressing and expanding again gives the same names, when no name holds a
		// character that CompressHostlist cannot carry.
		for _, n := range names {
			if strings.ContainsAny(n, ",[] \t") {
				return
			}
		}
		back, err := ExpandHostlist(CompressHostlist(names))
		if err != nil {
			t.Fatalf("%q: CompressHostlist gave %q, which does not parse: %v", expr, CompressHostlist(names), err)
		}
		if diff := cmp.Diff(names, back); diff != "" {
			t.Fatalf("%q: round trip through %q (-want +got):\n%s", expr, CompressHostlist(names), diff)
		}
	})
}

func FuzzCompressHostlist(f *testing.F) {
	for _, tc := range compressCases {
		f.Add(strings.Join(tc.names, ","))
	}
	f.Add("\u2000") // a Unicode space is a name, not a blank to trim
	f.Fuzz(func(t *testing.T, list string) {
		names := strings.Split(list, ",")
		out := CompressHostlist(names)
		for _, n := range names {
			if strings.ContainsAny(n, "[] \t") || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return // not a host name; only the absence of a panic is checked
			}
		}
		got, err := ExpandHostlist(out)
		if err != nil {
			t.Fatalf("CompressHostlist(%q) = %q, which does not parse: %v", names, out, err)
		}
		want := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round trip through %q (-want +got):\n%s", out, diff)
		}
	})
}

func BenchmarkHostlistContains(b *testing.B) {
	h, err := ParseHostlist("gpu[000001-999999]")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !h.Contains("gpu123456") {
			b.Fatal("gpu123456 not found")
		}
	}
}

func BenchmarkParseHostlistRange(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHostlist("gpu[00001-100000]"); err != nil {
			b.Fatal(err)
		}
	}
}

// longList is "gpu1,gpu2,...,gpu100000": a 100,000-node config written out name by name.
func longList() string {
	var sb strings.Builder
	for i := 1; i <= 100000; i++ {
		if i > 1 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "gpu%d", i)
	}
	return sb.String()
}

func BenchmarkParseHostlistLongList(b *testing.B) {
	expr := longList()
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHostlist(expr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHostlistContainsLongList(b *testing.B) {
	h, err := ParseHostlist(longList())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !h.Contains("gpu99999") {
			b.Fatal("gpu99999 not found")
		}
	}
}

func BenchmarkCompressHostlist(b *testing.B) {
	names, err := ExpandHostlist("gpu[00001-100000]")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		CompressHostlist(names)
	}
}

func ExampleExpandHostlist() {
	names, err := ExpandHostlist("gpu[01-03,10],login1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names)
	// Output: [gpu01 gpu02 gpu03 gpu10 login1]
}

func ExampleParseHostlist() {
	h, err := ParseHostlist("rack[0-1]_node[1-2]")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.String(), h.Len(), h.Expand())

	_, err = ParseHostlist("gpu[08-01]")
	fmt.Println(err)
	// Output:
	// rack[0-1]_node[1-2] 4 [rack0_node1 rack0_node2 rack1_node1 rack1_node2]
	// parse hostlist "gpu[08-01]": "08-01": range runs backwards; write it low-high, e.g. 01-08
}

func ExampleHostlist_Contains() {
	h, _ := ParseHostlist("gpu[000001-999999]")
	fmt.Println(h.Len(), h.Contains("gpu123456"), h.Contains("gpu1"))
	// Output: 999999 true false
}

func ExampleHostlist_Each() {
	h, _ := ParseHostlist("n[1-3]-ib")
	h.Each(func(name string) bool {
		fmt.Println(name)
		return name != "n2-ib" // stop after n2-ib
	})
	// Output:
	// n1-ib
	// n2-ib
}

func ExampleHostlist_Expand() {
	h, _ := ParseHostlist("n[1-3,2],n[08-09]")
	fmt.Println(h.Expand())
	// Output: [n1 n2 n3 n2 n08 n09]
}

func ExampleHostlist_Len() {
	h, _ := ParseHostlist("rack[00-63]_gpu[001-128]")
	fmt.Println(h.Len())
	// Output: 8192
}

func ExampleHostlist_String() {
	h, _ := ParseHostlist("  gpu[01-04] ")
	fmt.Printf("%q\n", h.String())
	// Output: "gpu[01-04]"
}

func ExampleCompressHostlist() {
	fmt.Println(CompressHostlist([]string{"n1", "n2", "n3", "n5", "m1", "n6", "n09", "n10"}))
	// Output: n[1-3,5],m1,n[6,09-10]
}
