// Package nhc reads LBNL NHC's nhc.conf (https://github.com/mej/nhc) and translates its
// check lines into nodecheck.toml, for `nodecheck import-nhc`. It parses and translates
// text only: it never runs NHC, reads the node or writes a file.
package nhc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Line is one directive of nhc.conf: "TARGET || CHECK ARGS...".
type Line struct {
	File string // the file's name, as given to Parse
	Num  int    // its line number (the first, for a line continued with a backslash)
	Raw  string // the directive as written, continuations joined
	// Target is the host match before "||": "*", a glob, a /regex/, a {hostlist}, or any of
	// these negated with "!".
	Target string
	// Words are the command after "||", split as bash splits it; nil when Err is set.
	Words []string
	// Err says why the command could not be split: shell syntax beyond words and quotes.
	Err error
}

// Command is the line's check function or command ("check_fs_mount_rw"); "" for none.
func (l Line) Command() string {
	if len(l.Words) == 0 {
		return ""
	}
	return l.Words[0]
}

// Where is "FILE:LINE", as the importer names a line.
func (l Line) Where() string { return fmt.Sprintf("%s:%d", l.File, l.Num) }

// maxLine bounds one line of nhc.conf: real ones are under 200 bytes.
const maxLine = 64 << 10

// Parse reads nhc.conf as NHC's nhcmain_load_config does: '#' starts a comment line, a
// line ending in a backslash continues on the next, and each other line is "TARGET ||
// COMMAND". A line that is none of these is returned with Err set, never dropped, so that
// the importer can list it. The error return is for input that cannot be read at all.
func Parse(r io.Reader, file string) ([]Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var out []Line
	var cont strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		text := strings.TrimSuffix(sc.Text(), "\r") // a file written on Windows
		if cont.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(text, `\`); ok {
			cont.WriteString(s)
			continue
		}
		cont.WriteString(text)
		raw := strings.TrimSpace(cont.String())
		cont.Reset()
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		out = append(out, parseLine(file, start, raw))
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s:%d: %w", file, n+1, err)
	}
	if cont.Len() > 0 {
		out = append(out, Line{File: file, Num: start, Raw: strings.TrimSpace(cont.String()),
			Err: errors.New("the file ends inside a line continued with a backslash")})
	}
	return out, nil
}

// ErrNHCSkips marks a line NHC itself passes over without running anything: one without
// "||" (NHC then takes the whole line as a target, which a host name does not match) or with
// nothing after it. The importer lists such a line; the drop-in, like NHC, ignores it.
var ErrNHCSkips = errors.New("NHC skips this line")

func parseLine(file string, num int, raw string) Line {
	l := Line{File: file, Num: num, Raw: raw}
	// NHC reads each line with bash's read without -r, which takes a backslash as quoting the
	// next character and drops it, before it splits the target from the check.
	target, cmd, ok := strings.Cut(readUnescape(raw), "||")
	if !ok {
		l.Err = fmt.Errorf(`no "||": NHC reads each line as "TARGET || CHECK" (%w)`, ErrNHCSkips)
		return l
	}
	l.Target = strings.TrimSpace(target)
	if l.Target == "" {
		l.Err = errors.New("no target before ||")
		return l
	}
	l.Words, l.Err = splitWords(strings.TrimSpace(cmd))
	if l.Err == nil && len(l.Words) == 0 {
		l.Err = fmt.Errorf("no check after || (%w)", ErrNHCSkips)
	}
	return l
}

// readUnescape is what bash's read (without -r) makes of a line: each backslash quotes the
// character after it and is dropped.
func readUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// SplitWords splits text into words as bash would where it is only words (see splitWords):
// for nodecheck.toml entries written in NHC's argument syntax, such as file_contents'.
func SplitWords(s string) ([]string, error) { return splitWords(s) }

// splitWords splits a command as bash would where it is only words: blanks separate words,
// single quotes keep everything, double quotes keep all but \" \\ \$ \`, a backslash
// outside quotes keeps the next character. Anything a shell would expand or run ($, `,
// ;, |, &, <, >, (, a trailing comment) is an error: the importer does not guess at it.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unclosed single quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
					i++
					w.WriteByte(s[i])
				case s[i] == '$' || s[i] == '`':
					return nil, fmt.Errorf("shell expansion %q inside double quotes", s[i:min(len(s), i+8)])
				default:
					w.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, errors.New("an unclosed double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
			}
			inWord = true
		case strings.IndexByte("$`;|&<>()", c) >= 0 || c == '#' && !inWord:
			return nil, fmt.Errorf("shell syntax %q: the importer translates plain words only", string(c))
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
