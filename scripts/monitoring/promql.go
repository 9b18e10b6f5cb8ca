package monitoring

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// PromQL's words that are not metric names where they stand without a parenthesis after them
// (the aggregation modifiers and set operators; functions and aggregations are recognised by
// the parenthesis that follows them).
var promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}

var (
	promqlStrings = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	})
	promqlBraces    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`) })
	promqlModifiers = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	})
	promqlIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`) })
	promqlNum   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[0-9][0-9.]*(?:e[0-9]+|[smhdwy]+)?\b`) })
)

// MetricNames lists the metric names an expression selects, in order, each once: the
// identifiers left once strings, label matchers, ranges and the label lists of by, without,
// on, ignoring and group_left/right are taken out, that are not a function or aggregation
// (followed by a parenthesis) nor a keyword. It does not check the grammar: promtool does.
// A selector by {__name__=...} alone names none.
func MetricNames(expr string) []string {
	s := promqlStrings().ReplaceAllString(expr, `""`)
	for prev := ""; prev != s; {
		prev = s
		s = promqlBraces().ReplaceAllString(s, " ")
	}
	s = promqlModifiers().ReplaceAllString(s, " ")
	s = promqlNum().ReplaceAllString(s, " ")
	var out []string
	for _, m := range promqlIdent().FindAllStringSubmatch(s, -1) {
		name := m[0]
		if m[1] != "" || slices.Contains(promqlKeywords, strings.ToLower(name)) || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}
