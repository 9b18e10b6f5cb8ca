package dcgm

import (
	"regexp"
	"strings"
	"sync"
)

// dcgmi prints a health incident's message, never its failure code (dcgmi/Health.cpp prints
// error.msg only), so nodecheck tells the code by the message: DCGM formats every health
// message from its code's *_MSG format (DCGM_ERROR_FORMAT_MESSAGE, common/DcgmError.h), and
// MatchMessage matches a message against those formats.

// pattern is one code's format compiled to a regular expression.
type pattern struct {
	re      *regexp.Regexp
	literal int // characters of the format that are not conversions: the more, the more specific
	info    ErrorInfo
}

// patterns are compiled once, on the first health message: never at start-up.
var patterns = sync.OnceValue(func() []pattern {
	var out []pattern
	for _, e := range errorTable {
		if e.Format == "" || e.Code == 0 {
			continue
		}
		expr, lit := formatRegexp(e.Format)
		re, err := regexp.Compile(expr)
		if err != nil {
			continue // a format this converter cannot express is a message it never matches
		}
		out = append(out, pattern{re: re, literal: lit, info: e})
	}
	return out
})

// formatRegexp turns a printf format into an anchored regular expression and counts its
// literal characters. Conversions match what printf can print for them; %s matches anything.
// Literal '.', ',' and '/' are optional and runs of spaces are one space, since dcgmi's
// line cutting drops the character after a cut that falls before one of them and loses
// spaces (Health::AddErrorMessage: "start = p + 2").
func formatRegexp(f string) (string, int) {
	var b strings.Builder
	b.WriteString("^")
	lit := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			switch c {
			case '.', ',', '/':
				b.WriteString(regexp.QuoteMeta(string(c)) + "?")
			case ' ':
				for i+1 < len(f) && f[i+1] == ' ' {
					i++
				}
				b.WriteString(" ")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
			lit++
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0123456789.hlLqjzt", f[j]) >= 0 {
			j++
		}
		if j >= len(f) {
			b.WriteString(regexp.QuoteMeta(f[i:]))
			break
		}
		switch f[j] {
		case '%':
			b.WriteString("%")
			lit++
		case 'd', 'i', 'u':
			b.WriteString(`-?\d+`)
		case 'x', 'X':
			b.WriteString(`[0-9a-fA-F]+`)
		case 'f', 'F', 'e', 'E', 'g', 'G':
			b.WriteString(`(?:[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf))`)
		case 'c':
			b.WriteString(`.`)
		default: // 's' and anything else
			b.WriteString(`.*?`)
		}
		i = j
	}
	b.WriteString("$")
	return b.String(), lit
}

// normalize collapses runs of white space into one space and trims the ends.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// MatchMessage returns the failure code whose format msg matches, the most specific one
// where several do; ok is false where none does.
func MatchMessage(msg string) (ErrorInfo, bool) {
	m := normalize(msg)
	best := -1
	var out ErrorInfo
	for _, p := range patterns() {
		if p.literal > best && p.re.MatchString(m) {
			best, out = p.literal, p.info
		}
	}
	if best < 0 {
		info, _ := Lookup(-1)
		return info, false
	}
	return out, true
}

// SplitMessages splits the text dcgmi printed for one system of one entity into DCGM's
// messages: dcgmi joins them with ", " (Health::AppendSystemIncidents). A message may hold
// ", " itself, so the split keeps the cut points that make the most pieces DCGM messages;
// text no format matches stays whole.
func SplitMessages(text string) []string {
	text = normalize(text)
	if text == "" {
		return nil
	}
	parts := strings.Split(text, ", ")
	if len(parts) == 1 {
		return parts
	}
	n := len(parts)
	// score[i] is the most recognised messages parts[i:] can be split into; next[i] where
	// the first of them ends.
	score := make([]int, n+1)
	next := make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		score[i], next[i] = -1, n
		for j := i + 1; j <= n; j++ {
			s := score[j]
			if _, ok := MatchMessage(strings.Join(parts[i:j], ", ")); ok {
				s++
			} else if j < n {
				continue // an unrecognised piece is kept only as the whole rest
			}
			if s > score[i] {
				score[i], next[i] = s, j
			}
		}
	}
	var out []string
	for i := 0; i < n; i = next[i] {
		out = append(out, strings.Join(parts[i:next[i]], ", "))
	}
	return out
}
