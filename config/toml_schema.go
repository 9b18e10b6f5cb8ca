package config

// The strict schema check of nodecheck.toml and its errors. The raw TOML table is compared
// with the Go types before decoding, so that every unknown key and wrong type is known by its
// key path, and thus its line (toml_lines.go); tomlErrors then reports all problems of a step
// together, one per line in file order.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/text"
)

var (
	tomlConfigType   = reflect.TypeOf(Config{})
	tomlChecksType   = reflect.TypeOf(Checks{})
	tomlGroupType    = reflect.TypeOf(Group{})
	tomlDurationType = reflect.TypeOf(time.Duration(0))
)

type tomlField struct {
	key string
	typ reflect.Type
}

// tomlShape is what a file is checked against: Config's types, with the [checks] table made
// of the sections of one Checks value (a table per check id, of its section's struct type).
type tomlShape struct {
	checks []tomlField
}

// shapeOf is the shape of a config holding the sections cs.
func shapeOf(cs Checks) tomlShape {
	var s tomlShape
	for _, c := range cs {
		t := reflect.TypeOf(c.Section)
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil {
			s.checks = append(s.checks, tomlField{c.ID, t})
		}
	}
	return s
}

// fieldsOf lists the TOML keys of a table: the sections for [checks] (and a group's checks,
// raw maps in Go that follow the same sections); for a struct, the keys of tomlFieldsOf.
func (s tomlShape) fieldsOf(t reflect.Type) []tomlField {
	switch t {
	case tomlChecksType:
		return s.checks
	case tomlGroupType:
		return []tomlField{{"nodes", reflect.TypeOf("")}, {"checks", tomlChecksType}}
	}
	return tomlFieldsOf(t)
}

// tomlFieldsOf lists the TOML keys of a struct as the decoder sees them: tag names, embedded
// structs flattened.
func tomlFieldsOf(t reflect.Type) []tomlField {
	var out []tomlField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("toml") == "-" {
			continue
		}
		if f.Anonymous && f.Tag.Get("toml") == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, tomlFieldsOf(f.Type)...)
			continue
		}
		out = append(out, tomlField{tomlKey(f), f.Type})
	}
	return out
}

func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// checkTable compares a decoded TOML table with the table type t and appends one
// tomlKeyError per unknown key or wrong type. Keys are visited in sorted order, so errors are
// stable.
func (s tomlShape) checkTable(raw map[string]any, t reflect.Type, path []string, errs *[]tomlKeyError) {
	fields := s.fieldsOf(t)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := append(slices.Clip(path), k)
		i := slices.IndexFunc(fields, func(f tomlField) bool { return f.key == k })
		if i < 0 {
			known := make([]string, len(fields))
			for j, f := range fields {
				known[j] = f.key
			}
			*errs = append(*errs, tomlKeyError{path: p, msg: tomlUnknownHint(k, known), unknown: true})
			continue
		}
		s.checkValue(raw[k], fields[i].typ, p, errs)
	}
}

func (s tomlShape) checkValue(v any, t reflect.Type, p []string, errs *[]tomlKeyError) {
	bad := func(want string) {
		*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(": want %s, got %s", want, tomlDescribe(v))})
	}
	switch {
	case t == tomlDurationType:
		switch v := v.(type) {
		case string:
			if _, err := time.ParseDuration(v); err != nil {
				*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(" = %q is not a duration; write it like \"30s\", \"1m30s\" or \"500ms\"", v)})
			}
		case int64:
			*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(" = %d: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as \"%ds\"", v, v)})
		default:
			bad(`a duration string such as "30s"`)
		}
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case t.Kind() == reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case t.Kind() == reflect.Int:
		if _, ok := v.(int64); !ok {
			bad("a whole number")
		}
	case t.Kind() == reflect.Float64:
		switch v.(type) {
		case int64, float64:
		default:
			bad("a number")
		}
	case t.Kind() == reflect.Struct || t == tomlChecksType:
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		s.checkTable(m, t, p, errs)
	case t.Kind() == reflect.Slice:
		var elems []any
		switch v := v.(type) {
		case []any:
			elems = v
		case []map[string]any: // [[name]] tables
			for _, m := range v {
				elems = append(elems, m)
			}
		default:
			if t.Elem().Kind() == reflect.Struct {
				bad("[[" + p[len(p)-1] + "]] tables")
			} else {
				bad(`an array such as ["a", "b"]`)
			}
			return
		}
		for i, e := range elems {
			s.checkValue(e, t.Elem(), append(slices.Clip(p), tomlIndex(i)), errs)
		}
	default:
		// A field type the schema check does not know: a bug in this file, not in the config.
		bad("a value nodecheck cannot decode (" + t.String() + "); report this as a nodecheck bug")
	}
}

// describe names a decoded TOML value's type and shows it, cut short, for an error message.
func tomlDescribe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case time.Time:
		return "a date-time"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// tomlUnknownHint says what an unknown key was probably meant to be, or lists the keys allowed.
func tomlUnknownHint(key string, known []string) string {
	if s := tomlDidYouMean(key, known); s != "" {
		return s
	}
	if len(known) == 0 {
		return ""
	}
	return " (keys allowed here: " + strings.Join(known, ", ") + ")"
}

// tomlDidYouMean returns ` (did you mean "x"?)` for the candidate s is probably a typo of
// (text.DidYouMean), or "".
func tomlDidYouMean(s string, candidates []string) string {
	if best := text.DidYouMean(s, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func tomlOrList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ---- errors with lines ----

// tomlKeyError is one problem with one key. msg follows the key: ": want ..." or " = ...",
// except for an unknown key, where it is the hint after `unknown key "K"`.
type tomlKeyError struct {
	path    []string // TOML key path; an element of an array of tables is "[N]"
	msg     string
	unknown bool
}

func (e tomlKeyError) text() string {
	if e.unknown {
		return fmt.Sprintf("unknown key %q%s", tomlKeyString(e.path), e.msg)
	}
	return tomlKeyString(e.path) + e.msg
}

// tomlMaxErrors bounds how many problems one message lists; the first ones are the useful ones.
const tomlMaxErrors = 20

// tomlErrors makes one error of errs, one problem per line, each as "name:line: text" in
// file order (or "name: text" when the line is unknown). It returns nil for no errs.
func tomlErrors(name string, lines tomlKeyLines, errs []tomlKeyError) error {
	if len(errs) == 0 {
		return nil
	}
	type located struct {
		line int
		text string
	}
	ls := make([]located, len(errs))
	for i, e := range errs {
		ls[i] = located{lines.lineOf(e.path), e.text()}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].line < ls[j].line })
	var out []error
	for i, l := range ls {
		if i == tomlMaxErrors {
			out = append(out, fmt.Errorf("%s: and %d more problems", name, len(ls)-tomlMaxErrors))
			break
		}
		text := text.EscapeLine(l.text)
		switch {
		case name == "":
			out = append(out, errors.New(text))
		case l.line > 0:
			out = append(out, fmt.Errorf("%s:%d: %s", name, l.line, text))
		default:
			out = append(out, fmt.Errorf("%s: %s", name, text))
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

func tomlIndex(i int) string { return "[" + strconv.Itoa(i) + "]" }

// tomlKeyString writes a key path as TOML would, with array elements as [N]:
// group[1].checks.ib_ports.timeout.
func tomlKeyString(path []string) string {
	var b strings.Builder
	for i, k := range path {
		switch {
		case strings.HasPrefix(k, "[") && strings.HasSuffix(k, "]") && i > 0:
			b.WriteString(k)
			continue
		case i > 0:
			b.WriteByte('.')
		}
		if k != "" && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	return b.String()
}
