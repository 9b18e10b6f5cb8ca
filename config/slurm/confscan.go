package slurm

// The syntax shared by slurm.conf and gres.conf, as Slurm's own parser reads it
// (src/common/parse_config.c): one setting or record a line, fields separated by blanks or
// tabs, keys in any case, `#` to the end of the line is a comment (`\#` is a literal '#'), a
// '\' at the end of a line continues it, values may be double-quoted
// (Reason="power,ETA=Dec25"), and `Include FILE` reads another file in place, relative to the
// including file's directory, with guards against Include loops and depth.

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
	lineNo := 0
	var pending []byte // a logical line continued with '\'
	continued := false
	startLine := 0
	for len(data) > 0 {
		var raw []byte
		if i := confIndexNewline(data); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			raw, data = data, nil
		}
		lineNo++
		raw = confTrimCR(raw)
		if !continued {
			startLine = lineNo
		}
		if n := len(raw); n > 0 && raw[n-1] == '\\' && len(data) > 0 {
			pending = append(pending, raw[:n-1]...)
			continued = true
			continue
		}
		if continued {
			raw = append(pending, raw...)
			pending, continued = nil, false
		}
		pos := Pos{File: file, Line: startLine}
		text, comment, hasComment := confStripComment(raw)
		if hasComment && r.onComment != nil {
			r.onComment(pos, comment)
		}
		fields, unclosed := confSplitFields(text)
		if unclosed {
			r.problem(SeverityError, pos, "unclosed '\"' in %q: add the closing quote", strings.TrimSpace(text))
		}
		if len(fields) == 0 {
			continue
		}
		if !fn(confLine{Pos: pos, Text: strings.TrimSpace(text), Fields: fields}) {
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

func confTrimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// confStripComment cuts raw at the first '#' that is neither inside double quotes nor escaped as
// `\#`, and turns `\#` into '#'.
func confStripComment(raw []byte) (text, comment string, hasComment bool) {
	var b []byte
	quoted := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw) && raw[i+1] == '#':
			if b == nil {
				b = append([]byte(nil), raw[:i]...)
			}
			b = append(b, '#')
			i++
			continue
		case c == '"':
			quoted = !quoted
		case c == '#' && !quoted:
			if b == nil {
				return string(raw[:i]), string(raw[i:]), true
			}
			return string(b), string(raw[i:]), true
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if b == nil {
		return string(raw), "", false
	}
	return string(b), "", false
}

// confSplitFields splits a line at blanks and tabs outside double quotes. A field is Key=Value
// (quotes removed from the value) or a bare word.
func confSplitFields(s string) (fields []confField, unclosed bool) {
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		start := i
		quoted := false
		for i < len(s) && (quoted || (s[i] != ' ' && s[i] != '\t')) {
			if s[i] == '"' {
				quoted = !quoted
			}
			i++
		}
		if quoted {
			unclosed = true
		}
		tok := s[start:i]
		f := confField{Key: tok}
		if k, v, ok := strings.Cut(tok, "="); ok {
			f = confField{Key: k, Value: strings.ReplaceAll(v, `"`, ""), HasEq: true}
		}
		fields = append(fields, f)
	}
	return fields, unclosed
}

func confContainsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}
