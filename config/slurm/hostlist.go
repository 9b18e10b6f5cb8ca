package slurm

// Slurm hostlist expressions, as src/common/hostlist.c reads and prints them.
//
// What is accepted, and in which order names come out, follows `scontrol show hostnames`
// (Slurm 22.05, probed in hostlist_oracle_test.go), with these deliberate differences:
//
//   - A suffix after the last bracket (`n[1-2]-ib` is n1-ib, n2-ib) is accepted, as Slurm
//     23.11 and later do; 22.05 answers "Invalid hostlist".
//   - One range may hold up to MaxHostlistLen names (Slurm caps a single range at 65,536):
//     `NodeName=gpu[000001-999999]` is legal here. The whole expression is capped at the
//     same MaxHostlistLen, so Len() always fits an int and a typo cannot ask for 10^18 names.
//   - Input that Slurm turns into garbage instead of an error is an error here: an unclosed
//     bracket (22.05 prints `n[1-` as "n]"), a stray ']' or a '[' inside brackets, signs or
//     blanks inside brackets (22.05 reads `n[+1-2]` as n01,n02), a number that overflows 64
//     bits (22.05 clamps it to 18446744073709551615), and control characters such as a newline
//     (22.05 keeps them inside a name).

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxHostlistLen is the most names one hostlist expression may stand for. Slurm's own limit is
// 65,536 per range; nodecheck allows more (gpu[000001-999999] is a real-world pattern) but
// still rejects sizes no cluster has, so that Len() is an int and a typo cannot exhaust memory.
const MaxHostlistLen = 1 << 24

// hlTrim is what ParseHostlist trims from both ends of an expression.
const hlTrim = " \t\r\n"

// maxHostlistExpr bounds the expression's length so that indexes fit in an int32.
const maxHostlistExpr = 1 << 30

// Hostlist is a parsed Slurm hostlist expression. It stores the expression's ranges, never the
// expanded names, so Len and Contains stay cheap on gpu[000001-999999]. The zero value is an
// empty list. A Hostlist is immutable and safe for concurrent use; pass it by pointer.
type Hostlist struct {
	expr   string
	terms  []hlTerm
	lits   []string  // literal text around brackets; term t owns lits[t.lit0 : t.lit0+t.ng+1]
	groups []hlGroup // bracket groups; term t owns groups[t.grp0 : t.grp0+t.ng]
	ranges []hlRange // ranges inside brackets; group g owns ranges[g.r0 : g.r0+g.nr]
	n      int

	// A long list of plain names (gpu1,gpu2,...,gpu100000) is indexed on the first Contains,
	// so that looking up every node of a 100,000-node config does not take quadratic time.
	indexOnce sync.Once
	index     *hlIndex
}

// hlIndex holds the plain names of a long list as a set, and the elements with brackets,
// which Contains still scans.
type hlIndex struct {
	plain    map[string]struct{}
	brackets []int32 // indexes into terms
}

// hlIndexMin is how many plain names make an index worth building: below it, comparing
// strings one by one is as fast and allocates nothing.
const hlIndexMin = 64

// hlTerm is one comma-separated element: lits[0] [g0] lits[1] [g1] ... lits[ng].
// Indexes are int32 to keep a 100,000-name list small; ParseHostlist rejects expressions
// too long for them.
type hlTerm struct {
	lit0, grp0, ng int32
	n              int // names this term expands to
	// adjacent is true when some bracket is followed by an empty literal or one starting
	// with a digit ("n[1-2][3-4]", "n[1-2]0"): only then can the digits of a name be split
	// between groups in more than one way, and Contains needs its memo.
	adjacent bool
}

// hlGroup is one bracket: a list of ranges, in the order written.
type hlGroup struct {
	r0, nr int32
	n      int
}

// hlRange is lo-hi printed zero-padded to width, as Slurm's "%0*lu": width is the number of
// characters of the low bound as written, so n[08-12] is n08..n12 and n[8-012] is n8..n12.
type hlRange struct {
	lo, hi uint64
	width  int
}

// HostlistError says why a hostlist expression was rejected: the expression, the offending
// part of it, and what is wrong with that part.
type HostlistError struct {
	Expr   string // the whole expression, trimmed
	Part   string // the offending part: a range, a bracket, or a name
	Reason string // what is wrong and, where it helps, how to write it instead
}

// Error quotes the expression and the offending part, each cut to about 100 bytes: a
// 100,000-name list must not turn into a megabyte-long log line.
func (e *HostlistError) Error() string {
	if e.Part == "" || e.Part == e.Expr {
		return fmt.Sprintf("parse hostlist %q: %s", shorten(e.Expr), e.Reason)
	}
	return fmt.Sprintf("parse hostlist %q: %q: %s", shorten(e.Expr), shorten(e.Part), e.Reason)
}

// shorten cuts s to at most hlQuoteMax bytes, on a UTF-8 boundary, marking the cut with "...".
func shorten(s string) string {
	if len(s) <= hlQuoteMax {
		return s
	}
	cut := hlQuoteMax - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// hlQuoteMax is how much of an expression an error message quotes.
const hlQuoteMax = 100

// ParseHostlist parses a Slurm hostlist expression such as "gpu[01-32,40],login1" or
// "rack[0-1]_node[1-4]". Names are separated by commas, blanks or tabs; empty elements
// ("a,,b") are skipped as Slurm skips them, so "" and "  " are empty lists, not errors.
// Parsing takes time linear in the length of expr and never expands ranges.
func ParseHostlist(expr string) (*Hostlist, error) {
	// Trim only ASCII blanks and line ends: Slurm keeps other Unicode spaces inside a name,
	// and a CR left by a DOS-format file is no part of the last name.
	expr = strings.Trim(expr, hlTrim)
	p := hlParser{h: &Hostlist{expr: expr}, s: expr}
	if len(expr) > maxHostlistExpr {
		return nil, p.fail("", "expression is %d bytes, more than %d; no slurm.conf line is that long", len(expr), maxHostlistExpr)
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.h, nil
}

// ExpandHostlist returns every name of a hostlist expression in Slurm's order, duplicates
// kept, as `scontrol show hostnames` prints them.
func ExpandHostlist(expr string) ([]string, error) {
	h, err := ParseHostlist(expr)
	if err != nil {
		return nil, err
	}
	return h.Expand(), nil
}

// String returns the expression as given to ParseHostlist, with surrounding blanks, tabs, CRs
// and newlines trimmed.
func (h *Hostlist) String() string {
	if h == nil {
		return ""
	}
	return h.expr
}

// Len returns the number of names the expression stands for, duplicates counted. It is
// computed when parsing, without expanding.
func (h *Hostlist) Len() int {
	if h == nil {
		return 0
	}
	return h.n
}

// Contains reports whether name is one of the expression's names. It matches name against
// each element's literals and ranges without expanding them, so it takes time linear in the
// length of the expression, and allocates nothing in the common case.
func (h *Hostlist) Contains(name string) bool {
	if h == nil {
		return false
	}
	h.indexOnce.Do(h.buildIndex)
	if x := h.index; x != nil {
		if _, ok := x.plain[name]; ok {
			return true
		}
		for _, i := range x.brackets {
			if h.matchTerm(&h.terms[i], name) {
				return true
			}
		}
		return false
	}
	for i := range h.terms {
		if h.matchTerm(&h.terms[i], name) {
			return true
		}
	}
	return false
}

// buildIndex builds h.index when the list holds enough plain names to make it pay.
func (h *Hostlist) buildIndex() {
	plain := 0
	for i := range h.terms {
		if h.terms[i].ng == 0 {
			plain++
		}
	}
	if plain < hlIndexMin {
		return
	}
	x := &hlIndex{plain: make(map[string]struct{}, plain)}
	for i := range h.terms {
		t := &h.terms[i]
		if t.ng == 0 {
			x.plain[h.lits[t.lit0]] = struct{}{}
		} else {
			x.brackets = append(x.brackets, int32(i))
		}
	}
	h.index = x
}

// Expand returns all names in Slurm's order, duplicates kept; an empty list gives an empty,
// non-nil slice. A range can stand for millions of names: check Len first, or use Each.
func (h *Hostlist) Expand() []string {
	out := make([]string, 0, h.Len())
	h.Each(func(name string) bool {
		out = append(out, name)
		return true
	})
	return out
}

// Each calls fn with every name in Slurm's order, duplicates kept, and stops early when fn
// returns false. It builds no slice of names.
//
// Within one element, Slurm's hostlist.c expands the last bracket innermost and the others
// from the second-to-last outwards, so a[1-2]b[3-4]c[5-6] runs a1b3c5, a1b3c6, a2b3c5,
// a2b3c6, a1b4c5, ...: b is the outermost loop. Each reproduces that order.
func (h *Hostlist) Each(fn func(name string) bool) {
	if h == nil {
		return
	}
	var buf []byte
	for i := range h.terms {
		if !h.eachTerm(&h.terms[i], &buf, fn) {
			return
		}
	}
}

// hlCursor walks one bracket group: the current range and value within it.
type hlCursor struct {
	ri int
	v  uint64
}

func (h *Hostlist) eachTerm(t *hlTerm, buf *[]byte, fn func(string) bool) bool {
	ng := int(t.ng)
	lits := h.lits[t.lit0 : int(t.lit0)+ng+1]
	if ng == 0 {
		return fn(lits[0])
	}
	groups := h.groups[t.grp0 : int(t.grp0)+ng]
	// order lists the groups outermost first: ng-2, ng-3, ..., 0, then ng-1 innermost.
	var orderBuf [8]int
	var cursBuf [8]hlCursor
	order, curs := orderBuf[:0], cursBuf[:0]
	if ng > len(orderBuf) {
		order, curs = make([]int, 0, ng), make([]hlCursor, 0, ng)
	}
	for g := ng - 2; g >= 0; g-- {
		order = append(order, g)
	}
	order = append(order, ng-1)
	for _, g := range groups {
		curs = append(curs, hlCursor{ri: 0, v: h.ranges[g.r0].lo})
	}
	for {
		b := (*buf)[:0]
		for gi := range groups {
			b = append(b, lits[gi]...)
			r := h.ranges[int(groups[gi].r0)+curs[gi].ri]
			b = appendPadded(b, curs[gi].v, r.width)
		}
		b = append(b, lits[ng]...)
		*buf = b
		if !fn(string(b)) {
			return false
		}
		// Advance the odometer from the innermost group outwards.
		k := len(order) - 1
		for ; k >= 0; k-- {
			gi := order[k]
			g := groups[gi]
			c := &curs[gi]
			r := h.ranges[int(g.r0)+c.ri]
			if c.v < r.hi {
				c.v++
				break
			}
			if c.ri+1 < int(g.nr) {
				c.ri++
				c.v = h.ranges[int(g.r0)+c.ri].lo
				break
			}
			c.ri = 0
			c.v = h.ranges[g.r0].lo
		}
		if k < 0 {
			return true
		}
	}
}

// appendPadded appends v in decimal, zero-padded to width, like C's "%0*lu".
func appendPadded(b []byte, v uint64, width int) []byte {
	for n := width - decimalDigits(v); n > 0; n-- {
		b = append(b, '0')
	}
	return strconv.AppendUint(b, v, 10)
}

func decimalDigits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

func (h *Hostlist) matchTerm(t *hlTerm, name string) bool {
	lits := h.lits[t.lit0 : t.lit0+t.ng+1]
	if !strings.HasPrefix(name, lits[0]) {
		return false
	}
	if t.ng == 0 {
		return len(name) == len(lits[0])
	}
	rest := name[len(lits[0]):]
	if !strings.HasSuffix(rest, lits[t.ng]) {
		return false
	}
	var memo []bool
	if t.adjacent {
		// failed[gi*(len(name)+1)+len(rest)]: group gi cannot start a match at rest.
		memo = make([]bool, int(t.ng)*(len(name)+1))
	}
	return h.matchGroups(t, lits, 0, rest, len(name)+1, memo)
}

// matchGroups reports whether rest is group gi's number, lits[gi+1], group gi+1's number, ...,
// up to and including the last literal.
func (h *Hostlist) matchGroups(t *hlTerm, lits []string, gi int32, rest string, stride int, memo []bool) bool {
	if memo != nil && memo[int(gi)*stride+len(rest)] {
		return false
	}
	nd := 0
	for nd < len(rest) && rest[nd] >= '0' && rest[nd] <= '9' {
		nd++
	}
	next := lits[gi+1]
	minL := 1
	if next != "" && (next[0] < '0' || next[0] > '9') {
		// The number must use the whole run of digits: the next literal starts with a
		// non-digit. This is the common case and needs no backtracking.
		minL = nd
	}
	g := &h.groups[t.grp0+gi]
	for l := nd; l >= minL && l >= 1; l-- {
		after := rest[l:]
		if !strings.HasPrefix(after, next) {
			continue
		}
		if !h.groupHas(g, rest[:l]) {
			continue
		}
		after = after[len(next):]
		if gi+1 == t.ng {
			if after == "" {
				return true
			}
			continue
		}
		if h.matchGroups(t, lits, gi+1, after, stride, memo) {
			return true
		}
	}
	if memo != nil {
		memo[int(gi)*stride+len(rest)] = true
	}
	return false
}

// groupHas reports whether digits is how group g prints one of its values: the value lies in
// some range, and the string has exactly that range's padded length (so "08" matches
// n[08-12] but not n[8-12], and "8" matches n[8-12] but not n[08-12]).
func (h *Hostlist) groupHas(g *hlGroup, digits string) bool {
	v, ok := parseDigits(digits)
	if !ok {
		return false
	}
	nd := decimalDigits(v)
	for _, r := range h.ranges[g.r0 : g.r0+g.nr] {
		if v < r.lo || v > r.hi {
			continue
		}
		if len(digits) == max(r.width, nd) {
			return true
		}
	}
	return false
}

// parseDigits parses a non-empty string of ASCII digits; ok is false on overflow.
func parseDigits(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		hi, lo := bits.Mul64(v, 10)
		if hi != 0 {
			return 0, false
		}
		d := uint64(s[i] - '0')
		v = lo + d
		if v < lo {
			return 0, false
		}
	}
	return v, len(s) > 0
}

// hlParser is a single left-to-right pass over the expression.
type hlParser struct {
	h *Hostlist
	s string
	i int
}

func (p *hlParser) fail(part, format string, args ...any) error {
	return &HostlistError{Expr: p.s, Part: part, Reason: fmt.Sprintf(format, args...)}
}

func isHostlistSep(c byte) bool { return c == ',' || c == ' ' || c == '\t' }

func (p *hlParser) parse() error {
	s := p.s
	// Size the tables from an upper bound found by a fast scan, so that a 100,000-name list
	// is stored without growing slices: every element ends at a separator, every bracket
	// holds at least one range, and every comma may start another.
	seps := strings.Count(s, ",") + strings.Count(s, " ") + strings.Count(s, "\t")
	brackets := strings.Count(s, "[")
	p.h.terms = make([]hlTerm, 0, seps+1)
	p.h.lits = make([]string, 0, seps+1+brackets)
	p.h.groups = make([]hlGroup, 0, brackets)
	p.h.ranges = make([]hlRange, 0, brackets+strings.Count(s, ","))
	for p.i < len(s) {
		if isHostlistSep(s[p.i]) {
			p.i++
			continue
		}
		if err := p.term(); err != nil {
			return err
		}
	}
	return nil
}

// term parses one element starting at p.i and ending at a separator outside brackets.
func (p *hlParser) term() error {
	s, h := p.s, p.h
	start := p.i
	t := hlTerm{lit0: int32(len(h.lits)), grp0: int32(len(h.groups)), n: 1}
	litStart := p.i
	for p.i < len(s) && !isHostlistSep(s[p.i]) {
		c := s[p.i]
		switch {
		case c == '[':
			lit := s[litStart:p.i]
			if t.ng > 0 && (lit == "" || lit[0] >= '0' && lit[0] <= '9') {
				t.adjacent = true
			}
			h.lits = append(h.lits, lit)
			n, err := p.bracket(start)
			if err != nil {
				return err
			}
			t.ng++
			if n > MaxHostlistLen/t.n {
				return p.fail(p.elementAt(start), "stands for more than %d names; split it or check for a typo", MaxHostlistLen)
			}
			t.n *= n
			litStart = p.i
		case c == ']':
			return p.fail(p.elementAt(start), "']' without a matching '['")
		case c < 0x20 || c == 0x7f:
			return p.fail(p.elementAt(start), "control character %q in a host name", c)
		default:
			p.i++
		}
	}
	lit := s[litStart:p.i]
	if t.ng > 0 && lit != "" && lit[0] >= '0' && lit[0] <= '9' {
		t.adjacent = true
	}
	h.lits = append(h.lits, lit)
	if h.n > MaxHostlistLen-t.n {
		return p.fail("", "stands for more than %d names; split it or check for a typo", MaxHostlistLen)
	}
	h.n += t.n
	h.terms = append(h.terms, t)
	return nil
}

// elementAt returns the element that starts at start, for error messages, up to the next
// separator outside brackets (or the end).
func (p *hlParser) elementAt(start int) string {
	depth := 0
	for i := start; i < len(p.s); i++ {
		switch c := p.s[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth <= 0 && isHostlistSep(c):
			return p.s[start:i]
		}
	}
	return p.s[start:]
}

// bracket parses "[r,r,...]" at p.i (which is at '['), appends the group, and returns how many
// values it holds.
func (p *hlParser) bracket(termStart int) (int, error) {
	s, h := p.s, p.h
	open := p.i
	p.i++
	g := hlGroup{r0: int32(len(h.ranges))}
	elemStart := p.i
	for {
		if p.i >= len(s) {
			return 0, p.fail(s[open:], "'[' is never closed; add the missing ']'")
		}
		c := s[p.i]
		switch {
		case c >= '0' && c <= '9' || c == '-':
			p.i++
			continue
		case c == ',' || c == ']':
			r, err := p.rangeOf(s[elemStart:p.i], s[open:min(p.closeOf(open)+1, len(s))])
			if err != nil {
				return 0, err
			}
			rn := int(r.hi-r.lo) + 1
			if g.n > MaxHostlistLen-rn {
				return 0, p.fail(s[open:p.closeOf(open)+1], "stands for more than %d names; split it or check for a typo", MaxHostlistLen)
			}
			g.n += rn
			h.ranges = append(h.ranges, r)
			g.nr++
			p.i++
			if c == ']' {
				h.groups = append(h.groups, g)
				return g.n, nil
			}
			elemStart = p.i
			continue
		case c == '[':
			return 0, p.fail(s[open:p.closeOf(open)+1], "'[' inside brackets; brackets do not nest")
		case c == ' ' || c == '\t':
			return 0, p.fail(s[open:p.closeOf(open)+1], "blank inside brackets; write ranges as [1-4,7] without spaces")
		default:
			return 0, p.fail(s[open:p.closeOf(open)+1], "%q inside brackets; only digits, '-' and ',' may appear there", c)
		}
	}
}

// closeOf returns the index of the first ']' after open, or len(s)-1 when there is none, so
// that error messages can quote the whole bracket.
func (p *hlParser) closeOf(open int) int {
	if j := strings.IndexByte(p.s[open:], ']'); j >= 0 {
		return open + j
	}
	return len(p.s) - 1
}

// rangeOf parses "lo" or "lo-hi" from inside a bracket.
func (p *hlParser) rangeOf(r, bracket string) (hlRange, error) {
	if r == "" {
		return hlRange{}, p.fail(bracket, "empty range; remove the extra ',' or write a number")
	}
	loS, hiS, isRange := strings.Cut(r, "-")
	if loS == "" || (isRange && hiS == "") || strings.IndexByte(hiS, '-') >= 0 {
		return hlRange{}, p.fail(r, "malformed range; write a number or low-high, e.g. 1-4")
	}
	lo, ok := parseDigits(loS)
	if !ok {
		return hlRange{}, p.fail(r, "number too large")
	}
	hi := lo
	if isRange {
		if hi, ok = parseDigits(hiS); !ok {
			return hlRange{}, p.fail(r, "number too large")
		}
	}
	if hi < lo {
		return hlRange{}, p.fail(r, "range runs backwards; write it low-high, e.g. %s-%s", hiS, loS)
	}
	if hi-lo >= MaxHostlistLen {
		return hlRange{}, p.fail(r, "range of %d names is more than %d; split it or check for a typo", hi-lo+1, MaxHostlistLen)
	}
	return hlRange{lo: lo, hi: hi, width: len(loS)}, nil
}
