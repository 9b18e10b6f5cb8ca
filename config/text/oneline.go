package text

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// There are two one-line helpers because there are two kinds of text. OneLine is lossy: it is
// for text from outside (a command's output, an error, a process name) on its way into a
// check summary, a log line or a drain reason, where only one bounded line of printable ASCII
// is safe (sinfo and scontrol print a reason raw, tools read them as ASCII lines). EscapeLine
// is lossless: it is for an error message that quotes the admin's own file, who needs to see
// a tab as \t and their UTF-8 as written to find the mistake.

// OneLine makes text from outside fit one line of printable ASCII: each run of white space
// (blanks, tabs, line breaks) becomes one blank and the ends are trimmed; every other
// character outside printable ASCII (a control character such as an escape, a non-ASCII
// letter, a run of invalid UTF-8) becomes '?', so that garbage shows as garbage. When that is
// longer than limit bytes, the first limit bytes are kept and "..." added, so the result is
// at most limit+3 bytes. A limit of 0 or less means no limit.
func OneLine(s string, limit int) string {
	var b strings.Builder
	if limit > 0 && limit < len(s) {
		b.Grow(limit + 1)
	} else {
		b.Grow(len(s))
	}
	blank, invalid := false, false
	for len(s) > 0 && (limit <= 0 || b.Len() <= limit) {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		bad := r == utf8.RuneError && size == 1
		switch {
		case bad && invalid:
			continue // one '?' for a whole run of invalid bytes
		case unicode.IsSpace(r):
			blank, invalid = true, false
			continue
		case r < 0x20 || r > 0x7e:
			r = '?'
		}
		if blank && b.Len() > 0 {
			b.WriteByte(' ')
		}
		blank, invalid = false, bad
		b.WriteByte(byte(r))
	}
	out := b.String()
	if limit <= 0 || len(out) <= limit {
		return out
	}
	return out[:limit] + "..."
}

// EscapeLine keeps a message that quotes input on one line without losing anything: control
// characters are written as Go escapes (\n, \t, \x1b, \u0085) and each byte of invalid UTF-8
// as \xNN; everything else, UTF-8 included, stays as it is.
func EscapeLine(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsControl(r):
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}
