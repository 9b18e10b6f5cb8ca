package monitoring

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// RulesFile and DashboardFile are the shipped files, beside this package's source.
const (
	RulesFile     = "nodecheck.rules.yml"
	RulesTestFile = "nodecheck.rules_test.yml"
	DashboardFile = "nodecheck-dashboard.json"
)

// forLine is a rule's `for:` line; promDuration one Prometheus duration term ("1h", "30m").
var (
	forLine      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^([ \t]*for:[ \t]*)(\S+)[ \t]*$`) })
	promDuration = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([0-9]+)(ms|s|m|h|d|w|y)`) })
)

// promUnits are Prometheus's duration units (model.ParseDuration in prometheus/common).
var promUnits = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
	"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}

// ParseDuration reads a Prometheus duration ("10m", "1h30m", "2d").
func ParseDuration(s string) (time.Duration, error) {
	terms := promDuration().FindAllStringSubmatchIndex(s, -1)
	var d time.Duration
	end := 0
	for _, m := range terms {
		if m[0] != end {
			break
		}
		n, err := strconv.ParseInt(s[m[2]:m[3]], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, err)
		}
		d += time.Duration(n) * promUnits[s[m[4]:m[5]]]
		end = m[1]
	}
	if s == "" || end != len(s) {
		return 0, fmt.Errorf("duration %q: want terms such as 10m or 1h30m", s)
	}
	return d, nil
}

// ScaleFor returns rules with every alert's `for:` divided by div, rounded to whole seconds
// and at least one second: the shipped rules, with their expressions unchanged, on a test's
// clock. An end-to-end test loads the rules this way, so that a `for: 10m` waits 3 s at
// div 200; the thresholds inside expressions (12 hours drained) keep their values.
func ScaleFor(rules []byte, div int) ([]byte, error) {
	var err error
	out := forLine().ReplaceAllFunc(rules, func(line []byte) []byte {
		m := forLine().FindSubmatch(line)
		d, perr := ParseDuration(string(m[2]))
		if perr != nil {
			err = perr
			return line
		}
		return fmt.Appendf(nil, "%s%ds", m[1], max(1, int((d/time.Duration(div)+time.Second/2)/time.Second)))
	})
	return out, err
}
