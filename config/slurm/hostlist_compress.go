package slurm

// CompressHostlist: names back into one hostlist expression, as `scontrol show hostlist` prints it.

import (
	"strings"
)

// CompressHostlist returns names as one hostlist expression, exactly as `scontrol show
// hostlist` prints it: in the order given (not sorted), duplicates kept, runs of consecutive
// numbers with the same prefix and compatible zero padding joined into ranges, and
// neighbouring ranges with one prefix sharing one bracket: n1,n2,n3,n5,m1,n6 gives
// "n[1-3,5],m1,n6". Only the trailing number of a name is ranged (rack0_node1,rack0_node2 gives
// rack0_node[1-2]). Empty names are skipped. Names are not checked: a name containing a
// separator or a bracket will not read back as itself.
func CompressHostlist(names []string) string {
	rs := make([]compRange, 0, len(names))
	for _, name := range names {
		if name == "" {
			continue
		}
		r := splitHostname(name)
		if n := len(rs); n > 0 {
			// hostlist_push_range: join with the tail when the number follows on and the
			// zero padding is compatible.
			tail := &rs[n-1]
			if !tail.single && !r.single && tail.prefix == r.prefix && r.lo > 0 && tail.hi == r.lo-1 &&
				widthEquiv(tail.lo, &tail.width, r.lo, &r.width) {
				tail.hi = r.hi
				continue
			}
		}
		rs = append(rs, r)
	}
	var b strings.Builder
	for i := 0; i < len(rs); {
		if i > 0 {
			b.WriteByte(',')
		}
		r := rs[i]
		b.WriteString(r.prefix)
		// _is_bracket_needed: a real range, or a neighbour to share the bracket with.
		if r.hi > r.lo || (i+1 < len(rs) && withinRange(r, rs[i+1])) {
			b.WriteByte('[')
			for {
				writeNumstr(&b, rs[i])
				i++
				if i >= len(rs) || !withinRange(rs[i], rs[i-1]) {
					break
				}
				b.WriteByte(',')
			}
			b.WriteByte(']')
			continue
		}
		if !r.single {
			writeNumstr(&b, r)
		}
		i++
	}
	return b.String()
}

// compRange is hostlist.c's hostrange: a prefix and a numeric range, or a single name without
// a trailing number.
type compRange struct {
	prefix string
	lo, hi uint64
	width  int
	single bool
}

// splitHostname splits a name into prefix and trailing number, as hostname_create does. A
// trailing number too large for 64 bits keeps the name whole: Slurm would clamp it and print a
// different name.
func splitHostname(name string) compRange {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return compRange{prefix: name, single: true}
	}
	v, ok := parseDigits(name[i:])
	if !ok {
		return compRange{prefix: name, single: true}
	}
	return compRange{prefix: name[:i], lo: v, hi: v, width: len(name) - i}
}

func withinRange(a, b compRange) bool {
	return a.prefix == b.prefix && !a.single && !b.single
}

func writeNumstr(b *strings.Builder, r compRange) {
	var buf [64]byte
	b.Write(appendPadded(buf[:0], r.lo, r.width))
	if r.hi > r.lo {
		b.WriteByte('-')
		b.Write(appendPadded(buf[:0], r.hi, r.width))
	}
}

// zeroPadded returns how many zeros "%0*lu" adds to print num at width.
func zeroPadded(num uint64, width int) int {
	return max(width-decimalDigits(num), 0)
}

// widthEquiv is hostlist.c's _width_equiv: two widths are equivalent when printing both
// numbers at either width gives the same padding for at least one of them; it then makes the
// widths equal. This is why n9,n10 compresses to n[9-10] but n8,n09 stays n[8,09].
func widthEquiv(n uint64, wn *int, m uint64, wm *int) bool {
	if *wn == *wm {
		return true
	}
	npad, nmpad := zeroPadded(n, *wn), zeroPadded(n, *wm)
	mpad, mnpad := zeroPadded(m, *wm), zeroPadded(m, *wn)
	if npad != nmpad && mpad != mnpad {
		return false
	}
	if npad != nmpad {
		*wm = *wn
	} else {
		*wn = *wm
	}
	return true
}
