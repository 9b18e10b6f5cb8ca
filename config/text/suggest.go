package text

import (
	"math"
	"strings"
)

// maxSuggestLen bounds the words DidYouMean compares: keys are short, and this bounds the
// work (a table of len(a) × len(b)) on hostile input.
const maxSuggestLen = 64

// DidYouMean returns the candidate that s is probably a typo of, or "" when none is close
// enough or s is one of them, spelt exactly so. The candidate is the closest one, ignoring
// case, in optimal string alignment distance (inserting, deleting or changing a letter or
// swapping two neighbours each count one; of equally close candidates the first wins, so
// callers list candidates in a stable order), and it is close enough when it is at most two
// edits away (one for words under five letters) or, for words of four letters or more, when
// one of the two words starts with the other.
//
// Callers whose keys ignore case (Slurm's) check membership with strings.EqualFold first: a
// key that differs from a candidate only in case is then known, not a typo.
func DidYouMean(s string, candidates []string) string {
	ls := lowerForCompare(s)
	limit := 2
	if len(s) < 5 {
		limit = 1
	}
	// The closest candidate within the limit, if there is one, is the answer. The distance
	// is at least the difference in length, so most candidates need no comparison at all.
	best, bestD := "", limit+1
	for _, c := range candidates {
		lc := lowerForCompare(c)
		if diff := len(ls) - len(lc); diff >= bestD || -diff >= bestD {
			continue
		}
		if d := editDistance(ls, lc, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		if best == s {
			return ""
		}
		return best
	}
	if len(s) < 4 {
		return ""
	}
	// Otherwise the closest candidate is the answer only when one word starts with the
	// other: find the closest such candidate, then make sure no other is closer.
	pick, pickD := -1, 0
	for i, c := range candidates {
		if hasPrefixFold(c, s) || hasPrefixFold(s, c) {
			if d := editDistance(ls, lowerForCompare(c), math.MaxInt); pick < 0 || d < pickD {
				pick, pickD = i, d
			}
		}
	}
	if pick < 0 {
		return ""
	}
	for i, c := range candidates {
		cutoff := pickD // a later candidate must be closer to win
		if i < pick {
			cutoff = pickD + 1 // an earlier one wins a tie
		}
		if i != pick && editDistance(ls, lowerForCompare(c), cutoff) < cutoff {
			return ""
		}
	}
	return candidates[pick]
}

// hasPrefixFold is strings.HasPrefix of both words lowered, without lowering ASCII words.
func hasPrefixFold(s, prefix string) bool {
	if lowerForCompare(s) != s || lowerForCompare(prefix) != prefix {
		return strings.HasPrefix(strings.ToLower(s), strings.ToLower(prefix))
	}
	if len(prefix) > len(s) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if foldASCII(s[i]) != foldASCII(prefix[i]) {
			return false
		}
	}
	return true
}

// lowerForCompare returns s for editDistance, which folds ASCII letters itself; only a word
// with other bytes is lowered here (strings.ToLower, which may change its length).
func lowerForCompare(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// foldASCII lowers an ASCII letter.
func foldASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// editDistance is the optimal string alignment distance of a and b, ASCII letters compared
// without case: insertions, deletions, substitutions and swaps of adjacent bytes each cost
// one. Once the distance is sure to be at least cutoff it stops and returns cutoff: a row's
// smallest value never falls in the rows below it. Words longer than maxSuggestLen are only
// equal or far apart. It keeps three rows on the stack, as it runs for every key of every
// slurm.conf line in a prolog.
func editDistance(a, b string, cutoff int) int {
	if len(a) > maxSuggestLen || len(b) > maxSuggestLen {
		if a == b {
			return 0
		}
		return min(math.MaxInt/2, cutoff)
	}
	var rows [3][maxSuggestLen + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		ai := foldASCII(a[i-1])
		for j := 1; j <= len(b); j++ {
			bj := foldASCII(b[j-1])
			cost := 1
			if ai == bj {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ai == foldASCII(b[j-2]) && foldASCII(a[i-2]) == bj {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= cutoff {
			return cutoff
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], cutoff)
}
