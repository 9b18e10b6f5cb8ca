package slurm

// The syntax shared by slurm.conf, gres.conf and topology.conf, as Slurm's own parser reads it
// (src/common/parse_config.c: _get_next_line, _strip_comments, _strip_continuation,
// _strip_escapes, keyvalue_pattern), and as slurmctld 22.05.8 was seen to read it here:
//
//   - A '#' starts a comment to the end of the physical line unless an odd number of '\'
//     stands right before it (`\#` is a literal '#', `\\#` a '\' and a comment). Quotes do not
//     protect a '#': `Reason="a#b"` is `Reason="a` to Slurm.
//   - After the comment is cut, a line that ends in an odd number of '\', blanks allowed
//     after them, continues on the next line: the last '\' and what follows it are removed
//     and the next line is appended as it is (so `Weight=7\` + `7` is Weight=77).
//   - Then every '\' escapes the character after it (`\,` is ',', `\\` is '\').
//   - Fields are Key=Value with blanks allowed on both sides of '=' (`CPUs = 4`); the value
//     is a double-quoted string that may hold blanks (`Reason="power, ETA Dec25"`, quotes
//     removed) or a run of non-blank characters. A blank after '=' does not end the value:
//     `Features= CPUs=6` gives Features the value "CPUs=6". `Key=` with nothing after it,
//     and text after a closing quote, are parse errors that stop slurmctld.
//   - `Include FILE` reads another file in place, relative to the including file's directory,
//     with guards here against Include loops and depth.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// ReadFileFunc reads a whole file. Parsers take one instead of opening files themselves, so
// that a check can read configuration through a recorded node snapshot. A missing file gives
// an error that satisfies errors.Is(err, fs.ErrNotExist).
type ReadFileFunc func(path string) ([]byte, error)

// Pos is where a value was written: a file as it was named to the parser, and a 1-based line.
type Pos struct {
	File string
	Line int
}

// String returns "file:line", or "" for the zero Pos (a value nobody wrote).
func (p Pos) String() string {
	if p.File == "" && p.Line == 0 {
		return ""
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// IsZero reports whether p is the zero Pos, meaning the value was not written anywhere.
func (p Pos) IsZero() bool { return p == Pos{} }

// confSplitList splits a comma-separated value, dropping empty elements.
func confSplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// confHostlistReason returns what is wrong with a hostlist, without repeating the expression
// that the caller already quotes.
func confHostlistReason(err error) string {
	var he *HostlistError
	if errors.As(err, &he) {
		if he.Part != "" && he.Part != he.Expr {
			return fmt.Sprintf("%q: %s", he.Part, he.Reason)
		}
		return he.Reason
	}
	return err.Error()
}

// confSuggest returns the key of keys that key is probably a typo of (text.DidYouMean), or ""
// when there is none or key is one of them in another case: Slurm's keys ignore case.
func confSuggest(key string, keys []string) string {
	if confContainsFold(keys, key) {
		return ""
	}
	return text.DidYouMean(key, keys)
}

// confField is one blank-separated field of a line: Key=Value, or a bare word (HasEq false).
type confField struct {
	Key   string
	Value string // double quotes removed
	HasEq bool
}

// confLine is one logical line of a Slurm config file: comments removed, continuations joined.
type confLine struct {
	Pos    Pos
	Text   string // the line without its comment, for messages
	Fields []confField
}

// maxIncludeDepth bounds nested Includes; Slurm has no limit, but a chain this deep is a loop
// that went through different spellings of one path.
const maxIncludeDepth = 16

// confReader scans a Slurm config file and the files it Includes.
type confReader struct {
	read      ReadFileFunc
	problems  *[]Problem
	onComment func(pos Pos, text string)
	stack     []string // files being read, outermost first, cleaned
	files     []string
}

func (r *confReader) problem(sev string, pos Pos, format string, args ...any) {
	*r.problems = append(*r.problems, Problem{Severity: sev, File: pos.File, Line: pos.Line, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
}

// parse scans data, read from file, calling fn for each logical line that has fields and
// reading Includes in place. Its error is only for an Include that cannot be read.
func (r *confReader) parse(data []byte, file string, fn func(confLine)) error {
	r.files = append(r.files, file)
	r.stack = append(r.stack, filepath.Clean(file))
	defer func() { r.stack = r.stack[:len(r.stack)-1] }()
	var err error
	scanConf(data, file, r, func(l confLine) bool {
		if !strings.EqualFold(l.Fields[0].Key, "include") {
			fn(l)
			return true
		}
		err = r.include(l, file, fn)
		return err == nil
	})
	return err
}

func (r *confReader) include(l confLine, file string, fn func(confLine)) error {
	target := l.Fields[0].Value
	if !l.Fields[0].HasEq {
		if len(l.Fields) < 2 {
			r.problem(SeverityError, l.Pos, "Include without a file name: write Include /etc/slurm/nodes.conf")
			return nil
		}
		target = l.Fields[1].Key
	}
	if !filepath.IsAbs(target) {
		// Slurm reads a relative Include from the including file's directory.
		target = filepath.Join(filepath.Dir(file), target)
	}
	clean := filepath.Clean(target)
	for _, f := range r.stack {
		if f == clean {
			r.problem(SeverityError, l.Pos, "Include %s: the file is already being read (%s): an Include loop; remove one of the Includes", target, strings.Join(r.stack, " -> "))
			return nil
		}
	}
	if len(r.stack) >= maxIncludeDepth {
		r.problem(SeverityError, l.Pos, "Include %s: more than %d nested Includes: probably a loop", target, maxIncludeDepth)
		return nil
	}
	if r.read == nil {
		return fmt.Errorf("%s: Include %s: no way to read files was given", l.Pos, target)
	}
	data, err := r.read(target)
	if err != nil {
		return fmt.Errorf("%s: Include %s: %w", l.Pos, target, err)
	}
	return r.parse(data, target, fn)
}

// scanConf splits data into logical lines and fields and calls fn for each line that has at
// least one field, until fn returns false. Comments go to r.onComment.
func scanConf(data []byte, file string, r *confReader, fn func(confLine) bool) {
	lineNo, startLine := 0, 0
	var pending []byte // a logical line continued with '\'
	continued := false
	for len(data) > 0 {
		var raw []byte
		if i := confIndexNewline(data); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			raw, data = data, nil
		}
		lineNo++
		if !continued {
			startLine = lineNo
		}
		body, comment, hasComment := confStripComment(raw)
		inQuotes := false
		if hasComment {
			if r.onComment != nil {
				r.onComment(Pos{File: file, Line: lineNo}, comment)
			}
			if inQuotes = confOpenQuote(pending, body); inQuotes {
				r.problem(SeverityError, Pos{File: file, Line: lineNo}, "the '#' in %q starts a comment although it is inside double quotes: Slurm strips comments before it reads quotes, so it reads %q and ignores the rest of the line: write \\# for a literal '#'",
					text.OneLine(strings.TrimSpace(string(raw)), 120), text.OneLine(strings.TrimSpace(string(append(pending, body...))), 120))
			}
		}
		if cut, ok := confContinuation(body); ok {
			pending = append(pending, body[:cut]...)
			continued = true
			if len(data) > 0 {
				continue
			}
			body = nil // a continued last line: Slurm reads what it has
		}
		if continued {
			body = append(pending, body...)
			pending, continued = nil, false
		}
		pos := Pos{File: file, Line: startLine}
		line := confUnescape(body)
		fields, issues := confSplitFields(line)
		for _, is := range issues {
			if is.unclosed && inQuotes {
				continue // the '#' in quotes said it
			}
			r.problem(is.sev, pos, "%s", is.msg)
		}
		if len(fields) == 0 {
			continue
		}
		if !fn(confLine{Pos: pos, Text: strings.TrimSpace(line), Fields: fields}) {
			return
		}
	}
}

func confIndexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// confIsSpace is C's isspace in the "C" locale, what [[:space:]] and _strip_continuation
// test: a '\r' before the newline is a blank like any other.
func confIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// confStripComment cuts raw at the first '#' that follows an even number of contiguous '\'
// (none included), as _strip_comments does: quotes do not matter.
func confStripComment(raw []byte) (body []byte, comment string, hasComment bool) {
	bs := 0
	for i, c := range raw {
		switch c {
		case '#':
			if bs%2 == 0 {
				return raw[:i], string(raw[i:]), true
			}
			bs = 0
		case '\\':
			bs++
		default:
			bs = 0
		}
	}
	return raw, "", false
}

// confOpenQuote reports whether the text before a comment (the continued part, then body)
// leaves a double quote open.
func confOpenQuote(pending, body []byte) bool {
	n := 0
	for _, b := range [][]byte{pending, body} {
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++ // an escaped quote is not one
			case '"':
				n++
			}
		}
	}
	return n%2 == 1
}

// confContinuation reports whether body (a physical line without its comment) continues on
// the next line, as _strip_continuation decides: blanks at the end are skipped, then an odd
// number of '\' continues the line. cut is where the continued text ends: at the last '\'.
func confContinuation(body []byte) (cut int, ok bool) {
	i := len(body) - 1
	for i >= 0 && confIsSpace(body[i]) {
		i--
	}
	bs := 0
	for i >= 0 && body[i] == '\\' {
		bs++
		i--
	}
	if bs%2 == 0 {
		return 0, false
	}
	return i + bs, true
}

// confUnescape removes each '\' and keeps the character after it, as _strip_escapes does
// (a '\' at the very end goes).
func confUnescape(b []byte) string {
	k := -1
	for i, c := range b {
		if c == '\\' {
			k = i
			break
		}
	}
	if k < 0 {
		return string(b)
	}
	out := make([]byte, k, len(b))
	copy(out, b[:k])
	for i := k; i < len(b); i++ {
		if b[i] == '\\' {
			i++
			if i == len(b) {
				break
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}

// confIssue is something wrong in a line's fields, for the scanner to report.
type confIssue struct {
	sev      string
	msg      string
	unclosed bool
}

// confSplitFields splits a logical line into fields as Slurm's key=value expression does:
// Key=Value with blanks allowed around '=', the value a double-quoted string (quotes removed)
// or a run of non-blank characters; any other word is a bare field (HasEq false). It is
// lenient where Slurm stops with a parse error (a key with characters other than letters,
// digits, '_' and '.', an empty value, text after a closing quote) and says so in issues.
func confSplitFields(s string) (fields []confField, issues []confIssue) {
	skip := func(i int) int {
		for i < len(s) && confIsSpace(s[i]) {
			i++
		}
		return i
	}
	i := skip(0)
	for i < len(s) {
		start := i
		for i < len(s) && !confIsSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[start:i]
		eq := skip(i)
		if eq >= len(s) || s[eq] != '=' {
			fields = append(fields, confField{Key: key})
			i = skip(i)
			continue
		}
		i = eq + 1
		vs := skip(i)
		spaced := vs > i
		i = vs
		if i >= len(s) {
			issues = append(issues, confIssue{sev: SeverityError, msg: fmt.Sprintf("%s= has no value: Slurm refuses the file (Parse error): give a value or remove %s=", key, key)})
			fields = append(fields, confField{Key: key, HasEq: true})
			break
		}
		var value string
		value, i = confValue(s, i, key, &issues)
		if n := len(key); n > 1 && strings.IndexByte("-*+/", key[n-1]) >= 0 {
			// keyvalue_pattern reads `CPUs+=4` as CPUs with an operator, which nothing
			// that reads a configuration file looks at.
			issues = append(issues, confIssue{sev: SeverityWarning, msg: fmt.Sprintf("%s=%s: Slurm ignores the '%c' before '=' in a configuration file and sets %s=%s: write that",
				key, text.OneLine(value, 80), key[n-1], key[:n-1], text.OneLine(value, 80))})
			key = key[:n-1]
		}
		if spaced && strings.Contains(value, "=") {
			issues = append(issues, confIssue{sev: SeverityWarning, msg: fmt.Sprintf("%s= is followed by a blank, so Slurm takes the next word as its value (%s=%s) and never sees %s as a setting: remove the blank, or give %s= its value",
				key, key, text.OneLine(value, 80), text.OneLine(value, 80), key)})
		}
		fields = append(fields, confField{Key: key, Value: value, HasEq: true})
		i = skip(i)
	}
	return fields, issues
}

// confValue reads the value that starts at s[i] and returns it and the index after it.
func confValue(s string, i int, key string, issues *[]confIssue) (string, int) {
	if s[i] == '"' {
		if end := strings.IndexByte(s[i+1:], '"'); end >= 0 {
			after := i + 1 + end + 1
			if after == len(s) || confIsSpace(s[after]) {
				return s[i+1 : after-1], after
			}
			j := after
			for j < len(s) && !confIsSpace(s[j]) {
				j++
			}
			*issues = append(*issues, confIssue{sev: SeverityError, msg: fmt.Sprintf("%s=%s: text after the closing '\"': Slurm refuses the file (Parse error): quote the whole value", key, text.OneLine(s[i:j], 80))})
		} else {
			*issues = append(*issues, confIssue{sev: SeverityError, unclosed: true, msg: fmt.Sprintf("unclosed '\"' in %s=%s: add the closing quote", key, text.OneLine(s[i:], 80))})
		}
	}
	// Unquoted, or a quote Slurm's expression does not take as one: a run of non-blanks,
	// quotes and all.
	j := i
	for j < len(s) && !confIsSpace(s[j]) {
		j++
	}
	return s[i:j], j
}

func confContainsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}
