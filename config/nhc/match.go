package nhc

import (
	"errors"
	"fmt"
	"path"
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
	neg := false
	if rest, ok := strings.CutPrefix(target, "!"); ok {
		neg, target = true, rest
	}
	m, err := matchPositive(host, target)
	if err != nil {
		return false, err
	}
	return m != neg, nil
}

func matchPositive(host, t string) (bool, error) {
	switch {
	case t == "":
		return false, errors.New("an empty target")
	case len(t) >= 2 && t[0] == '/' && t[len(t)-1] == '/':
		if len(t) > maxTargetRegexp {
			return false, fmt.Errorf("target regular expression longer than %d bytes", maxTargetRegexp)
		}
		re, err := regexp.Compile(t[1 : len(t)-1])
		var se *syntax.Error
		if errors.As(err, &se) && se.Code == syntax.ErrInvalidCharRange {
			// A range such as [01-02] (1-0) is refused by glibc's regcomp too (REG_ERANGE):
			// bash's =~ then fails, which NHC's mcheck_regexp takes as no match (and its
			// negation as a match).
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("target %s: %v", t, err)
		}
		return re.MatchString(host), nil
	case len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}':
		return matchRangeList(host, t[1:len(t)-1]), nil
	case len(t) >= 2 && t[0] == '@' && t[len(t)-1] == '@':
		return false, fmt.Errorf("target %s: NHC asks an external matcher (NHC_MCHECK_DELIM, a netgroup) for it, which nodecheck does not run", t)
	}
	return matchGlob(host, t)
}

// matchGlob matches a bash glob: *, ?, [...] and [!...]; a backslash quotes.
func matchGlob(host, glob string) (bool, error) {
	if strings.Contains(glob, "[:") {
		return false, fmt.Errorf("target glob %q: POSIX character classes ([:digit:]) are not read by nodecheck; write the characters ([0-9])", glob)
	}
	// path.Match spells bash's [!...] as [^...]; a host name has no '/' for it to treat apart.
	g := strings.ReplaceAll(glob, "[!", "[^")
	ok, err := path.Match(g, host)
	if err != nil {
		return false, fmt.Errorf("target glob %q: %v", glob, err)
	}
	return ok, nil
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
