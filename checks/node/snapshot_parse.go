package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// parseMeta decodes and checks meta.json. Unknown keys are allowed: the format only gains
// keys, and an older nodecheck must still replay a newer snapshot.
func parseMeta(b []byte) (Meta, error) {
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, jsonError(metaFile, b, err, m)
	}
	switch m.Format {
	case SnapshotFormat:
	case 0:
		return Meta{}, fmt.Errorf("%s: no \"format\" (this nodecheck reads format %d)", metaFile, SnapshotFormat)
	default:
		return Meta{}, fmt.Errorf("%s: format %d is not supported (this nodecheck reads format %d)", metaFile, m.Format, SnapshotFormat)
	}
	for _, p := range slices.Sorted(maps.Keys(m.DelayMS)) {
		if c, err := cleanAbs(p); err != nil || c != p {
			return Meta{}, fmt.Errorf("%s: delay_ms: key %q is not a clean absolute path", metaFile, p)
		}
		if m.DelayMS[p] < 0 {
			return Meta{}, fmt.Errorf("%s: delay_ms: %q: %d is negative", metaFile, p, m.DelayMS[p])
		}
	}
	return m, nil
}

// devTypes are the values of DevNode.Type.
var devTypes = []string{"char", "block", "file", "dir", "symlink", "other"}

// parseDevices decodes and checks devices.json into a map by path.
func parseDevices(b []byte) (map[string]deviceRecord, error) {
	return recordsByPath(devicesFile, b, func(r deviceRecord) string { return r.Path }, func(r deviceRecord) error {
		switch {
		case r.Missing && (r.Type != "" || r.Major != 0 || r.Minor != 0):
			return errors.New("missing, yet has a type or numbers")
		case !r.Missing && !slices.Contains(devTypes, r.Type):
			return fmt.Errorf("type %q is not one of %s", r.Type, strings.Join(devTypes, ", "))
		case r.Type != "char" && r.Type != "block" && (r.Major != 0 || r.Minor != 0):
			return fmt.Errorf("a %s has no major or minor", r.Type)
		case r.DelayMS < 0:
			return fmt.Errorf("delay_ms %d is negative", r.DelayMS)
		}
		return nil
	})
}

// recordsByPath decodes a snapshot file that is a JSON list of records, one per path, into
// a map by path: every path clean and absolute, none listed twice, and each record as check
// wants it. Its errors name the file, the entry and its path.
func recordsByPath[T any](file string, b []byte, pathOf func(T) string, check func(T) error) (map[string]T, error) {
	var recs []T
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, jsonError(file, b, err, recs)
	}
	out := make(map[string]T, len(recs))
	for i, r := range recs {
		path := pathOf(r)
		where := fmt.Sprintf("%s: entry %d (%q)", file, i+1, path)
		p, err := cleanAbs(path)
		if err != nil || p != path {
			return nil, fmt.Errorf("%s: path is not a clean absolute path", where)
		}
		if _, dup := out[p]; dup {
			return nil, fmt.Errorf("%s: path listed twice", where)
		}
		if err := check(r); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out[p] = r
	}
	return out, nil
}

// parseCommands decodes and checks commands.json.
func parseCommands(b []byte) ([]commandRecord, error) {
	var recs []commandRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, jsonError(commandsFile, b, err, recs)
	}
	for i, r := range recs {
		switch {
		case len(r.Argv) == 0:
			return nil, fmt.Errorf("%s: entry %d: argv is empty", commandsFile, i+1)
		case !filepath.IsAbs(r.Argv[0]):
			return nil, fmt.Errorf("%s: entry %d: program %q is not an absolute path", commandsFile, i+1, r.Argv[0])
		case r.DelayMS < 0:
			return nil, fmt.Errorf("%s: entry %d (%s): delay_ms %d is negative", commandsFile, i+1, r.Argv[0], r.DelayMS)
		}
	}
	return recs, nil
}

// parseNVML decodes and checks nvml.json. Unknown keys are allowed, as in every snapshot
// file.
func parseNVML(b []byte) (nvmlRecord, error) {
	var r nvmlRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nvmlRecord{}, jsonError(nvmlFile, b, err, r)
	}
	switch {
	case r.Init == "" && !r.TimedOut:
		return nvmlRecord{}, fmt.Errorf("%s: no \"init\" (SUCCESS or an NVML error name such as ERROR_LIBRARY_NOT_FOUND)", nvmlFile)
	case r.DelayMS < 0:
		return nvmlRecord{}, fmt.Errorf("%s: delay_ms %d is negative", nvmlFile, r.DelayMS)
	case r.DeviceCount < 0:
		return nvmlRecord{}, fmt.Errorf("%s: device_count %d is negative", nvmlFile, r.DeviceCount)
	}
	for i, d := range r.Devices {
		if d.DelayMS < 0 {
			return nvmlRecord{}, fmt.Errorf("%s: device %d (index %d): delay_ms %d is negative", nvmlFile, i+1, d.Index, d.DelayMS)
		}
	}
	return r, nil
}

// jsonError names the file and, where encoding/json gives an offset, the line and column;
// into is what b was decoded into, to name a mistyped key by its path in the file.
func jsonError(name string, b []byte, err error, into any) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			err = fmt.Errorf("%s: %s value, want %s", jsonFieldPath(reflect.TypeOf(into), te.Field), te.Value, jsonKind(te.Type))
		} else {
			err = fmt.Errorf("%s value, want %s", te.Value, jsonKind(te.Type))
		}
	}
	if off < 0 {
		return fmt.Errorf("%s: %w", name, err)
	}
	// Offset counts the bytes read, the offending one included.
	line, col := lineCol(b, off-1)
	return fmt.Errorf("%s:%d:%d: %w", name, line, col, err)
}

// jsonFieldPath rewrites a key path of encoding/json ("devices.GPU.pcie.curr_link_width",
// where an embedded struct adds its Go type's name) as a user reads the file,
// "devices.pcie.curr_link_width", by following the path through root, the type decoded into.
// Where the path leaves the types it knows, the rest is kept as given.
func jsonFieldPath(root reflect.Type, path string) string {
	var out []string
	t := root
	elems := strings.Split(path, ".")
	for i, e := range elems {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return strings.Join(append(out, elems[i:]...), ".")
		}
		if f, ok := t.FieldByName(e); ok && f.Anonymous && jsonTagName(f) == "" {
			t = f.Type // an embedded struct's name: not a key of the file
			continue
		}
		out = append(out, e)
		t = jsonFieldType(t, e)
	}
	return strings.Join(out, ".")
}

// jsonTagName is the name a field's json tag gives it, "" when none.
func jsonTagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// jsonFieldType is the type of the field of struct t that decodes the key name, looking into
// embedded structs as encoding/json does (shallowest first); nil when none does.
func jsonFieldType(t reflect.Type, name string) reflect.Type {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		switch tag := jsonTagName(f); {
		case tag == "-":
		case tag == name || (tag == "" && !f.Anonymous && strings.EqualFold(f.Name, name)):
			return f.Type
		case f.Anonymous && tag == "":
			embedded = append(embedded, f.Type)
		}
	}
	for _, e := range embedded {
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		if e.Kind() == reflect.Struct {
			if ft := jsonFieldType(e, name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// jsonKind names what JSON value decodes into t, for errors that must not name Go types.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
