package config

// The [checks] table, generic over its sections: config knows the keys every check has
// (CheckCommon) and how to decode, validate, override and encode a section, and nothing of
// any one check. The sections themselves, their defaults and their own rules live beside
// their checks, which hand config a Schema (checks.Schema()).

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"
)

// CheckCommon holds the keys every check has.
type CheckCommon struct {
	Enabled bool          `toml:"enabled"`
	Timeout time.Duration `toml:"timeout"`
	// Modes lists the modes the check runs in, by name (ModeNames); in the others it skips.
	Modes []string `toml:"modes"`
}

// Common returns cc itself: a section struct that embeds CheckCommon is a Section.
func (cc *CheckCommon) Common() *CheckCommon { return cc }

// Section is one check's [checks.ID] table: a pointer to a struct that embeds CheckCommon
// and tags each key of its own (`toml:"min_rate_gbps"`). Its fields may be bool, int,
// float64, string, time.Duration (written "30s") and slices of those.
type Section interface {
	Common() *CheckCommon
}

// SectionValidator is a Section with rules of its own beyond CheckCommon's (which config
// checks for every section). ValidateSection returns one Problem per broken rule, nil when
// the section is valid; it must not change the section.
type SectionValidator interface {
	Section
	ValidateSection() []Problem
}

// Problem is one thing wrong with one key of a section. Key is the key as nodecheck.toml
// spells it ("min_rate_gbps"); Msg follows the key path in the message, as `= -1: give ...`
// or `: "x" is not ...` does: config writes "nodecheck.toml:LINE: checks.ID.KEY" + Msg.
type Problem struct {
	Key string
	Msg string
}

// Problemf returns the Problem of key with Msg made by fmt.Sprintf(format, args...).
func Problemf(key, format string, args ...any) Problem {
	return Problem{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// SectionSpec is one check's entry in a Schema.
type SectionSpec struct {
	ID string // the check's id: the section is [checks.ID]
	// Default returns a new section holding the check's built-in defaults, sharing no slice
	// with any other (decoding reuses a slice's backing array).
	Default func() Section
}

// Schema is the [checks] table nodecheck.toml may have: one section per check, in the order
// `nodecheck config show` writes them. checks.Schema() is nodecheck's.
type Schema []SectionSpec

// Checks holds one section per check, in its Schema's order.
type Checks []CheckSection

// CheckSection is the section of one check.
type CheckSection struct {
	ID      string
	Section Section
}

// Get returns the section of check id, nil when cs has none.
func (cs Checks) Get(id string) Section {
	for _, s := range cs {
		if s.ID == id {
			return s.Section
		}
	}
	return nil
}

// IDs lists the check ids of the sections, in order.
func (cs Checks) IDs() []string {
	out := make([]string, len(cs))
	for i, s := range cs {
		out[i] = s.ID
	}
	return out
}

// SectionOf returns c's [checks.id] section as its type T (checks.ibPortsConfig's *T),
// with false when c has no such section or it holds another type.
func SectionOf[T Section](c *Config, id string) (T, bool) {
	s, ok := c.Checks.Get(id).(T)
	return s, ok
}

// newChecks makes the sections of schema, each holding its defaults.
func newChecks(schema Schema) Checks {
	out := make(Checks, 0, len(schema))
	for _, spec := range schema {
		out = append(out, CheckSection{ID: spec.ID, Section: spec.Default()})
	}
	return out
}

// UnmarshalTOML decodes a [checks] table onto the sections cs already holds, key by key, so
// that a key the table leaves out keeps its value. The TOML decoder calls it for Config's
// checks; ParseConfig has checked the table against the sections' types before.
func (cs *Checks) UnmarshalTOML(v any) error {
	tables, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("checks: want a table, got %T", v)
	}
	for _, id := range slices.Sorted(maps.Keys(tables)) {
		t, ok := tables[id].(map[string]any)
		if !ok {
			return fmt.Errorf("checks.%s: want a table, got %T", id, tables[id])
		}
		if err := cs.decodeSection(id, t); err != nil {
			return err
		}
	}
	return nil
}

// decodeSection sets the keys of one section to the values of a decoded TOML table. The
// table has been checked against the section's types (tomlShape.checkTable); what does not
// fit is still an error here, never a silent zero.
func (cs Checks) decodeSection(id string, keys map[string]any) error {
	sec := cs.Get(id)
	if sec == nil {
		return fmt.Errorf("checks.%s: no such check", id)
	}
	v := reflect.ValueOf(sec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("checks.%s: the section is a %T, not a pointer to a struct", id, sec)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		f, ok := tomlFieldByKey(v.Elem(), k)
		if !ok {
			return fmt.Errorf("checks.%s: unknown key %q", id, k)
		}
		if err := tomlAssign(f, keys[k]); err != nil {
			return fmt.Errorf("checks.%s.%s: %w", id, k, err)
		}
	}
	return nil
}

// tomlFieldByKey finds the field of struct v that the TOML key names, in embedded structs too.
func tomlFieldByKey(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("toml") == "-" {
			continue
		}
		if f.Anonymous && f.Tag.Get("toml") == "" && f.Type.Kind() == reflect.Struct {
			if fv, ok := tomlFieldByKey(v.Field(i), key); ok {
				return fv, true
			}
			continue
		}
		if tomlKey(f) == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// tomlAssign sets dst to a value as the TOML decoder gives it (string, bool, int64, float64,
// []any), for the field types a section may have.
func tomlAssign(dst reflect.Value, v any) error {
	bad := func() error { return fmt.Errorf("cannot set a %s to %s", dst.Type(), tomlDescribe(v)) }
	switch {
	case dst.Type() == tomlDurationType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		dst.SetInt(int64(d))
	case dst.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		dst.SetString(s)
	case dst.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		dst.SetBool(b)
	case dst.Kind() == reflect.Int:
		n, ok := v.(int64)
		if !ok || dst.OverflowInt(n) {
			return bad()
		}
		dst.SetInt(n)
	case dst.Kind() == reflect.Float64:
		switch n := v.(type) {
		case int64:
			dst.SetFloat(float64(n))
		case float64:
			dst.SetFloat(n)
		default:
			return bad()
		}
	case dst.Kind() == reflect.Slice:
		elems, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := reflect.MakeSlice(dst.Type(), len(elems), len(elems))
		for i, e := range elems {
			if err := tomlAssign(out.Index(i), e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst.Set(out)
	default:
		return bad()
	}
	return nil
}

// validateChecks checks every section: its common keys, then its own rules, in order.
func validateChecks(cs Checks, b Budget, prefix []string) []tomlKeyError {
	var errs []tomlKeyError
	for _, s := range cs {
		p := append(slices.Clip(prefix), s.ID)
		if s.Section == nil {
			errs = append(errs, tomlKeyError{path: p, msg: ": no section (a nodecheck bug: its schema gave none)"})
			continue
		}
		errs = append(errs, s.Section.Common().validateCommon(p, b)...)
		if v, ok := s.Section.(SectionValidator); ok {
			for _, pr := range v.ValidateSection() {
				errs = append(errs, tomlKeyError{path: append(slices.Clip(p), pr.Key), msg: pr.Msg})
			}
		}
	}
	return errs
}

func (cc *CheckCommon) validateCommon(p []string, b Budget) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case cc.Timeout < 0:
		add("timeout", " = %q: must not be negative", cc.Timeout)
	case cc.Enabled && cc.Timeout == 0:
		add("timeout", " = \"0s\": an enabled check needs a time limit, such as \"2s\"; to turn the check off set enabled = false")
	}
	if cc.Enabled && len(cc.Modes) == 0 {
		add("modes", " is empty: list the modes the check runs in, such as [\"health\", \"manual\"]; to turn the check off set enabled = false")
	}
	names := ModeNames()
	seen := map[string]bool{}
	for _, m := range cc.Modes {
		switch budget := b.For(Mode(m)); {
		case !slices.Contains(names, m):
			add("modes", ": %q is not a mode; use %s%s", m, tomlOrList(names), tomlDidYouMean(m, names))
		case seen[m]:
			add("modes", ": %q is listed twice", m)
		case cc.Enabled && budget > 0 && cc.Timeout > budget:
			add("timeout", " = %q is longer than budget.%s = %q, and the check runs in %s; lower the timeout or take %q out of modes",
				cc.Timeout, m, budget, m, m)
		}
		seen[m] = true
	}
	return errs
}
