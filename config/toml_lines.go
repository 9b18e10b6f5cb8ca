package config

// The TOML key-line scanner: where each key and table header of nodecheck.toml is written, so
// that errors can name the line. The TOML decoder keeps key positions to itself.

import (
	"slices"
	"strconv"
	"strings"
)

// tomlKeyLines maps a key path, joined with tomlKeySep, to the line where the file first names it.
// The TOML decoder keeps key positions to itself, hence this small scanner.
type tomlKeyLines map[string]int

const tomlKeySep = "\x00"

// lineOf returns the line of path, or of its nearest enclosing table or key (a key inside
// an inline table is found at its table's line); 0 when unknown.
func (kl tomlKeyLines) lineOf(path []string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := kl[strings.Join(path[:n], tomlKeySep)]; ok {
			return l
		}
	}
	return 0
}

// scanTOMLKeyLines finds the line of every table header and key in src, which is expected to
// be valid TOML (it runs after the decoder accepted it) but must not fail on anything.
// Array-of-tables elements get an "[N]" path element, counted per parent element.
func scanTOMLKeyLines(src string) tomlKeyLines {
	s := &tomlLineScanner{src: src, line: 1, lines: tomlKeyLines{}, aot: map[string]int{}}
	for s.more() {
		switch c := s.src[s.pos]; c {
		case '\n':
			s.line++
			s.pos++
		case ' ', '\t', '\r':
			s.pos++
		case '#':
			s.skipLine()
		case '[':
			s.header()
		default:
			s.keyValue()
		}
	}
	return s.lines
}

type tomlLineScanner struct {
	src   string
	pos   int
	line  int
	table []string
	lines tomlKeyLines
	aot   map[string]int // array-of-tables path -> elements seen so far
}

func (s *tomlLineScanner) more() bool { return s.pos < len(s.src) }

func (s *tomlLineScanner) record(path []string, line int) {
	k := strings.Join(path, tomlKeySep)
	if _, ok := s.lines[k]; !ok {
		s.lines[k] = line
	}
}

func (s *tomlLineScanner) skipLine() {
	for s.more() && s.src[s.pos] != '\n' {
		s.pos++
	}
}

func (s *tomlLineScanner) skipBlanks() {
	for s.more() && (s.src[s.pos] == ' ' || s.src[s.pos] == '\t') {
		s.pos++
	}
}

func (s *tomlLineScanner) header() {
	line := s.line
	s.pos++ // [
	array := s.more() && s.src[s.pos] == '['
	if array {
		s.pos++
	}
	keys, ok := s.key()
	s.skipLine() // ] or ]], and any comment
	if !ok {
		return
	}
	var path []string
	for i, k := range keys {
		path = append(path, k)
		s.record(path, line)
		name := strings.Join(path, tomlKeySep)
		if array && i == len(keys)-1 {
			n := s.aot[name]
			s.aot[name] = n + 1
			path = append(path, tomlIndex(n))
			s.record(path, line)
		} else if n, ok := s.aot[name]; ok && n > 0 {
			path = append(path, tomlIndex(n-1))
		}
	}
	s.table = path
}

func (s *tomlLineScanner) keyValue() {
	line := s.line
	keys, ok := s.key()
	if !ok || !s.more() || s.src[s.pos] != '=' {
		s.skipLine()
		return
	}
	s.pos++
	path := slices.Clip(s.table)
	for _, k := range keys {
		path = append(path, k)
		s.record(path, line)
	}
	s.skipValue()
}

// key reads a dotted key (bare, "basic" or 'literal' parts) and the blanks after it.
func (s *tomlLineScanner) key() ([]string, bool) {
	var keys []string
	for {
		s.skipBlanks()
		k, ok := s.simpleKey()
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		s.skipBlanks()
		if s.more() && s.src[s.pos] == '.' {
			s.pos++
			continue
		}
		return keys, true
	}
}

func (s *tomlLineScanner) simpleKey() (string, bool) {
	if !s.more() {
		return "", false
	}
	switch s.src[s.pos] {
	case '"':
		s.pos++
		var b strings.Builder
		for s.more() {
			c := s.src[s.pos]
			switch {
			case c == '"':
				s.pos++
				return b.String(), true
			case c == '\n':
				return "", false
			case c == '\\':
				r, _, tail, err := strconv.UnquoteChar(s.src[s.pos:], '"')
				if err != nil {
					return "", false
				}
				b.WriteRune(r)
				s.pos = len(s.src) - len(tail)
			default:
				b.WriteByte(c)
				s.pos++
			}
		}
		return "", false
	case '\'':
		end := strings.IndexAny(s.src[s.pos+1:], "'\n")
		if end < 0 || s.src[s.pos+1+end] != '\'' {
			return "", false
		}
		k := s.src[s.pos+1 : s.pos+1+end]
		s.pos += end + 2
		return k, true
	}
	start := s.pos
	for s.more() {
		c := s.src[s.pos]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			break
		}
		s.pos++
	}
	return s.src[start:s.pos], s.pos > start
}

// skipValue moves past a value, which can span lines inside brackets, braces (TOML 1.1
// inline tables) and multi-line strings, and stops at the newline that ends it.
func (s *tomlLineScanner) skipValue() {
	depth := 0
	for s.more() {
		switch c := s.src[s.pos]; c {
		case '\n':
			if depth <= 0 {
				return
			}
			s.line++
			s.pos++
		case '#':
			s.skipLine()
		case '"', '\'':
			s.skipString(c)
		case '[', '{':
			depth++
			s.pos++
		case ']', '}':
			depth--
			s.pos++
		default:
			s.pos++
		}
	}
}

func (s *tomlLineScanner) skipString(q byte) {
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.src[s.pos:], triple) {
		s.pos += 3
		for s.more() {
			c := s.src[s.pos]
			switch {
			case c == '\\' && q == '"':
				s.pos++ // the escaped byte is looked at next, so a newline after \ is counted
				if s.more() && s.src[s.pos] != '\n' {
					s.pos++
				}
			case c == '\n':
				s.line++
				s.pos++
			case strings.HasPrefix(s.src[s.pos:], triple):
				s.pos += 3
				// Up to two more quotes belong to the string: """a""""" ends in two quotes.
				for i := 0; i < 2 && s.more() && s.src[s.pos] == q; i++ {
					s.pos++
				}
				return
			default:
				s.pos++
			}
		}
		return
	}
	s.pos++
	for s.more() {
		c := s.src[s.pos]
		switch {
		case c == '\n':
			return // unterminated: the caller counts the newline
		case c == '\\' && q == '"':
			s.pos++
			if s.more() && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == q:
			s.pos++
			return
		default:
			s.pos++
		}
	}
}
