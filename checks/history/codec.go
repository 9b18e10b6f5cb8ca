package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The file is read and written with encoding/json: a full file (about 35 KB at the default
// caps) decodes in well under a millisecond of CPU (BenchmarkParts), and history is loaded
// only by runs whose checks judge over time (health and manual by default, never the
// prolog), so a hand-written codec would save nothing a run can feel. What encoding/json
// does not check, validate does. (encoding/json matches keys case-insensitively: "Format" reads
// as "format". What it reads is validated all the same.)

// decodeJSON reads one history file. Errors say where: the byte offset of a syntax error,
// the field of a value of the wrong type, and that a file that stops early is truncated.
func decodeJSON(data []byte) (*History, error) {
	var h History
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&h)
	if err == nil {
		// One JSON value and nothing after it but white space.
		if _, terr := dec.Token(); terr != io.EOF {
			return nil, fmt.Errorf("not valid JSON at byte %d: data after the file's object", dec.InputOffset()+1)
		}
		return &h, nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return nil, fmt.Errorf("truncated: the JSON stops at byte %d, inside a value", len(data))
	case errors.As(err, &syn):
		return nil, fmt.Errorf("not valid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		where := typ.Field
		if where == "" {
			where = "the file"
		}
		return nil, fmt.Errorf("%s: want %s, not a JSON %s, at byte %d", where, typ.Type, typ.Value, typ.Offset)
	}
	return nil, fmt.Errorf("not a history file: %w", err)
}

// encodeJSON writes h compactly, with a newline.
func encodeJSON(h *History) ([]byte, error) {
	data, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
