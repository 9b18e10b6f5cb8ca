package text

import (
	"math"
	"strings"
)

// maxSuggestLen bounds the words DidYouMean compares: keys are short, and this bounds the
// work (a table of len(a) × len(b)) on hostile input.
const maxSuggestLen = 64

// DidYouMean returns the candidate that s is probably a typo of, or "" when none is close
// enough or s is one of them, spelt exactly so. Close enough, ignoring case: the same letters
// in another case, one a prefix of the other (for words of four letters or more), or at most
// two edits (one for words under five letters), where inserting, deleting or changing a
// letter or swapping two neighbours each counts as one (optimal string alignment). Of equally
// close candidates the first wins, so callers list candidates in a stable order.
//
// Callers whose keys ignore case (Slurm's) check membership with strings.EqualFold first: a
// key that differs from a candidate only in case is then known, not a typo.
func DidYouMean(s string, candidates []string) string {
	ls := strings.ToLower(s)
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if d := editDistance(ls, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	limit := 2
	if len(s) < 5 {
		limit = 1
	}
	lb := strings.ToLower(best)
	prefix := len(s) >= 4 && (strings.HasPrefix(lb, ls) || strings.HasPrefix(ls, lb))
	if bestD <= limit || prefix {
		return best
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and swaps of adjacent bytes each cost one. Words longer than maxSuggestLen
// are only equal or far apart.
func editDistance(a, b string) int {
	if len(a) > maxSuggestLen || len(b) > maxSuggestLen {
		if a == b {
			return 0
		}
		return math.MaxInt / 2
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
