package nhc

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
)

// maxTargetRegexp bounds a /regex/ target: real ones are a few dozen bytes.
const maxTargetRegexp = 4096

// MatchTarget says whether host matches an nhc.conf target, as LBNL NHC 1.5's mcheck does
// (scripts/common.nhc): a leading "!" negates; "/RE/" is an extended regular expression
// searched anywhere in the name (bash's =~; RE2 here, which refuses back-references); "{...}"
// is NHC's node range list (comma-separated names and PREFIX[A-B]SUFFIX ranges, one range per
// name, as mcheck_range reads them); anything else is a bash glob matched against the whole
// name. NHC compares with the kernel's host name (/proc/sys/kernel/hostname, or -m HOST).
// Targets NHC hands to external matchers (NHC_MCHECK_DELIM, such as @netgroup@) and
// expressions nodecheck cannot read are errors: the caller must not guess.
func MatchTarget(host, target string) (bool, error) {
	m, err := CompileTarget(target)
	if err != nil {
		return false, err
	}
	return m.Match(host), nil
}

// Matcher is an mcheck expression compiled once, for matching many strings (the lines of a
// file, for check_file_contents).
type Matcher struct {
	neg    bool
	re     *regexp.Regexp // a /regex/ or a glob; nil with ranges or never
	ranges string         // a {range list}'s inside
	isList bool
	never  bool // a regular expression bash's =~ cannot compile: no match
}

// Match says whether s matches.
func (m Matcher) Match(s string) bool {
	var ok bool
	switch {
	case m.never:
	case m.isList:
		ok = matchRangeList(s, m.ranges)
	default:
		ok = m.re.MatchString(s)
	}
	return ok != m.neg
}

// CompileTarget compiles an mcheck expression (MatchTarget says which).
func CompileTarget(t string) (Matcher, error) {
	var m Matcher
	if rest, ok := strings.CutPrefix(t, "!"); ok {
		m.neg, t = true, rest
	}
	switch {
	case t == "":
		return Matcher{}, errors.New("an empty target")
	case len(t) >= 2 && t[0] == '/' && t[len(t)-1] == '/':
		if len(t) > maxTargetRegexp {
			return Matcher{}, fmt.Errorf("target regular expression longer than %d bytes", maxTargetRegexp)
		}
		re, err := regexp.Compile(t[1 : len(t)-1])
		var se *syntax.Error
		if errors.As(err, &se) && se.Code == syntax.ErrInvalidCharRange {
			// A range such as [01-02] (1-0) is refused by glibc's regcomp too (REG_ERANGE):
			// bash's =~ then fails, which NHC's mcheck_regexp takes as no match (and its
			// negation as a match).
			m.never = true
			return m, nil
		}
		if err != nil {
			return Matcher{}, fmt.Errorf("target %s: %v", t, err)
		}
		m.re = re
	case len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}':
		m.isList, m.ranges = true, t[1:len(t)-1]
	case len(t) >= 2 && t[0] == '@' && t[len(t)-1] == '@':
		return Matcher{}, fmt.Errorf("target %s: NHC asks an external matcher (NHC_MCHECK_DELIM, a netgroup) for it, which nodecheck does not run", t)
	default:
		if len(t) > maxTargetRegexp {
			return Matcher{}, fmt.Errorf("target glob longer than %d bytes", maxTargetRegexp)
		}
		if i := strings.IndexAny(t, "("); i > 0 && strings.IndexByte("@!+*?", t[i-1]) >= 0 {
			// bash's [[ == ]] reads extended globs (@(a|b), +(x), !(y)) whatever extglob says.
			return Matcher{}, fmt.Errorf("target %q: an extended glob (%s), which nodecheck does not read: write it as a /regular expression/", t, t[i-1:i+1])
		}
		re, err := regexp.Compile(globRegexp(t))
		if err != nil {
			return Matcher{}, fmt.Errorf("target glob %q: %v", t, err)
		}
		m.re = re
	}
	return m, nil
}

// globRegexp is a bash glob as [[ s == GLOB ]] reads it, as an anchored regular expression:
// * any string ('/' too), ? any character, [...] a bracket expression ([!...] or [^...]
// negated, POSIX classes such as [:digit:] inside), a backslash quotes the next character,
// and a [ that no ] closes stands for itself.
func globRegexp(glob string) string {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 < len(rs) {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			} else {
				b.WriteString(`\\`)
			}
		case '[':
			if class, n := globBracket(rs[i:]); n > 0 {
				b.WriteString(class)
				i += n - 1
				continue
			}
			b.WriteString(`\[`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return b.String()
}

// globBracket reads a bracket expression at the start of rs: the regular expression for it
// and how many runes it took; 0 where no ] closes it.
func globBracket(rs []rune) (string, int) {
	var b strings.Builder
	b.WriteByte('[')
	i := 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		b.WriteByte('^')
		i++
	}
	for first := true; i < len(rs); i, first = i+1, false {
		switch c := rs[i]; {
		case c == ']' && !first:
			b.WriteByte(']')
			return b.String(), i + 1
		case c == '[' && i+1 < len(rs) && rs[i+1] == ':':
			end := strings.Index(string(rs[i:]), ":]")
			if end < 0 {
				return "", 0
			}
			class := string(rs[i : i+len([]rune(string(rs[i:])[:end]))+2])
			b.WriteString(class)
			i += len([]rune(class)) - 1
		case c == '\\' || c == '[' || c == ']':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return "", 0
}

// nhcRange holds NHC's two node range patterns (RANGE_MATCH_REGEXP1 and 2 of common.nhc).
var nhcRange = sync.OnceValues(func() (*regexp.Regexp, *regexp.Regexp) {
	return regexp.MustCompile(`^[-a-zA-Z0-9_]+[0-9]+[-.a-zA-Z0-9]*$`),
		regexp.MustCompile(`^([-a-zA-Z0-9_]+)\[([0-9]+)-([0-9]+)\]([-.a-zA-Z0-9]*)$`)
})

// matchRangeList is mcheck_range: each comma-separated group is a node name, or
// PREFIX[START-END]SUFFIX, whose number must lie in the range with the width of its start
// (or end, when longer). At the first group of neither form NHC logs "Range not in pdsh
// syntax" and matches nothing, whatever the groups after it say; so does this.
func matchRangeList(host, list string) bool {
	single, ranged := nhcRange()
	for _, g := range strings.Split(list, ",") {
		if single.MatchString(g) {
			if host == g {
				return true
			}
			continue
		}
		m := ranged.FindStringSubmatch(g)
		if m == nil {
			return false
		}
		if inRange(host, m[1], m[2], m[3], m[4]) {
			return true
		}
	}
	return false
}

func inRange(host, prefix, start, end, suffix string) bool {
	num, ok := strings.CutPrefix(host, prefix)
	if !ok {
		return false
	}
	if num, ok = strings.CutSuffix(num, suffix); !ok || num == "" {
		return false
	}
	width := max(len(start), len(end))
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err1 := strconv.ParseUint(num, 10, 64)
	a, err2 := strconv.ParseUint(start, 10, 64)
	b, err3 := strconv.ParseUint(end, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return false
	}
	if a > b {
		a, b = b, a
	}
	return a <= n && n <= b && len(num) == width
}
