package history

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The history file is read at every run, prolog included, and encoding/json's reflection
// costs about a millisecond of CPU for a full file: this decoder reads the file's own schema
// in one pass, several times faster. It takes what encoding/json takes for these types
// (unknown keys are skipped, null is the zero value, a later duplicate key wins), except that
// keys match exactly, and it is checked against encoding/json by FuzzDecodeMatchesJSON.

// maxDepth bounds the nesting of skipped values.
const maxDepth = 64

// decoder reads one JSON document; the first error stops it.
type decoder struct {
	b    []byte
	i    int
	err  error
	path []step
}

// step is one level of the path to a value, for error messages: a key, or an index (key nil).
type step struct {
	key []byte
	idx int
}

func (d *decoder) failf(format string, args ...any) {
	if d.err != nil {
		return
	}
	if d.i >= len(d.b) {
		d.err = fmt.Errorf("truncated: the JSON stops at byte %d, inside a value", len(d.b))
		return
	}
	d.err = fmt.Errorf("not valid JSON at byte %d: %s: %s", d.i+1, d.where(), fmt.Sprintf(format, args...))
}

// want reports that the value at hand is not what belongs there: a type mismatch when it
// starts another JSON value, else a syntax error.
func (d *decoder) want(what string) {
	if d.err != nil {
		return
	}
	if d.i < len(d.b) && strings.IndexByte(`"{[tfn-0123456789`, d.b[d.i]) >= 0 {
		d.err = fmt.Errorf("%s: want %s, at byte %d", d.where(), what, d.i+1)
		return
	}
	d.failf("want %s", what)
}

// where is the path to the value at hand: "gpus[0].xids[3].x".
func (d *decoder) where() string {
	var b strings.Builder
	for _, p := range d.path {
		if p.key != nil {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(p.key)
		} else {
			b.WriteString("[" + strconv.Itoa(p.idx) + "]")
		}
	}
	if b.Len() == 0 {
		return "the file"
	}
	return b.String()
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// null consumes a null and says so.
func (d *decoder) null() bool {
	if d.peek() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

func (d *decoder) literal(s string) {
	if len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		if len(d.b)-d.i < len(s) && string(d.b[d.i:]) == s[:len(d.b)-d.i] {
			d.i = len(d.b)
		}
		d.failf("want %s", s)
		return
	}
	d.i += len(s)
}

// object reads an object, calling field for each key with the decoder at its value; field
// must read the value (or skip it). The key aliases the input (or a decoded copy): switch on
// string(key) costs no allocation.
func (d *decoder) object(field func(key []byte)) {
	if d.err != nil || d.null() {
		return
	}
	if d.peek() != '{' {
		d.want("an object")
		return
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		return
	}
	for d.err == nil {
		if d.peek() != '"' {
			d.failf("want a key")
			return
		}
		key := d.key()
		if d.peek() != ':' {
			d.failf("want ':' after a key")
			return
		}
		d.i++
		d.path = append(d.path, step{key: key})
		field(key)
		d.path = d.path[:len(d.path)-1]
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.failf("want ',' or '}'")
		}
	}
}

// list reads an array of T; as encoding/json, null is a nil slice and [] an empty one.
func list[T any](d *decoder, elem func() T) []T {
	var out []T
	if d.array(func(int) { out = append(out, elem()) }) && out == nil {
		out = []T{}
	}
	return out
}

// array reads an array, calling elem for each element with its index. It says whether it
// read one (not a null).
func (d *decoder) array(elem func(i int)) bool {
	if d.err != nil || d.null() {
		return false
	}
	if d.peek() != '[' {
		d.want("an array")
		return false
	}
	d.i++
	if d.peek() == ']' {
		d.i++
		return true
	}
	for n := 0; d.err == nil; n++ {
		d.path = append(d.path, step{idx: n})
		elem(n)
		d.path = d.path[:len(d.path)-1]
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			d.failf("want ',' or ']'")
		}
	}
	return false
}

// int64 reads an integer; a fraction or exponent is an error, as encoding/json makes it for
// an integer field.
func (d *decoder) int64() int64 {
	if d.err != nil || d.null() {
		return 0
	}
	start, digits := d.intPart()
	switch {
	case d.i == digits:
		d.want("a number")
		return 0
	case d.b[digits] == '0' && d.i-digits > 1:
		d.i = digits + 1
		d.failf("a number with a leading zero")
		return 0
	case d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E'):
		d.failf("want an integer")
		return 0
	}
	if d.i-digits > 18 { // may not fit: let strconv say
		v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
		if err != nil {
			d.failf("%s is out of range", d.b[start:d.i])
		}
		return v
	}
	var v int64
	for _, c := range d.b[digits:d.i] {
		v = v*10 + int64(c-'0')
	}
	if start != digits {
		v = -v
	}
	return v
}

func (d *decoder) int() int {
	v := d.int64()
	if int64(int(v)) != v {
		d.failf("%d is out of range", v)
	}
	return int(v)
}

func (d *decoder) bool() bool {
	if d.err != nil || d.null() {
		return false
	}
	switch d.peek() {
	case 't':
		d.literal("true")
		return true
	case 'f':
		d.literal("false")
		return false
	}
	d.want("true or false")
	return false
}

// key reads an object's key without a copy when it has no escapes.
func (d *decoder) key() []byte {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return d.b[start:j:j]
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	k := d.str()
	if k == "" {
		return []byte{}
	}
	return []byte(k)
}

// str reads a string, escapes decoded as JSON has them.
func (d *decoder) str() string {
	if d.err != nil || d.null() {
		return ""
	}
	if d.peek() != '"' {
		d.want("a string")
		return ""
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s
		case c == '\\' || c >= utf8.RuneSelf:
			return d.slowStr(start)
		case c < 0x20:
			d.failf("a control character in a string")
			return ""
		}
		d.i++
	}
	d.failf("an unterminated string")
	return ""
}

// slowStr finishes a string with escapes or non-ASCII bytes; invalid UTF-8 becomes U+FFFD,
// as encoding/json makes it.
func (d *decoder) slowStr(start int) string {
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out)
		case c < 0x20:
			d.failf("a control character in a string")
			return ""
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(d.b[d.i:])
			out = utf8.AppendRune(out, r)
			d.i += n
		case c != '\\':
			out = append(out, c)
			d.i++
		default:
			if d.i+1 >= len(d.b) {
				d.i = len(d.b)
				d.failf("an unterminated string")
				return ""
			}
			e := d.b[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := d.hex4()
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						if r2 = d.hex4(); utf16.DecodeRune(r, r2) == utf8.RuneError {
							d.i, r2 = save, -1
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				out = utf8.AppendRune(out, r)
			default:
				d.i--
				d.failf("an unknown escape \\%c", e)
				return ""
			}
		}
	}
	d.failf("an unterminated string")
	return ""
}

func (d *decoder) hex4() rune {
	if len(d.b)-d.i < 4 {
		d.i = len(d.b)
		d.failf("a short \\u escape")
		return 0
	}
	v, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
	if err != nil {
		d.failf("a bad \\u escape")
		return 0
	}
	d.i += 4
	return rune(v)
}

// skip reads and drops any value: a key this nodecheck does not know.
func (d *decoder) skip(depth int) {
	if depth > maxDepth {
		d.failf("nested deeper than %d", maxDepth)
		return
	}
	switch d.peek() {
	case '{':
		d.object(func([]byte) { d.skip(depth + 1) })
	case '[':
		d.array(func(int) { d.skip(depth + 1) })
	case '"':
		d.str()
	case 't', 'f':
		d.bool()
	case 'n':
		d.null()
	default:
		d.number()
	}
}

// intPart reads a number's sign and integer digits: where it starts, where its digits do.
func (d *decoder) intPart() (start, digits int) {
	start = d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits = d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return start, digits
}

// number reads any JSON number (for skip).
func (d *decoder) number() {
	start, digits := d.intPart()
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		d.failf("want a value")
		return
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if !d.digits() {
			return
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return
		}
	}
	if _, err := strconv.ParseFloat(string(d.b[start:d.i]), 64); err != nil {
		d.failf("%s is out of range", d.b[start:d.i])
	}
}

func (d *decoder) digits() bool {
	n := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == n {
		d.failf("want a digit")
		return false
	}
	return true
}
