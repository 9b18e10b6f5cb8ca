package history

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fillEvery sets every field of v (a pointer) to a value that is not its zero, by
// reflection: a field added to the file's types is then covered here without anyone
// remembering to, and the codec tests fail until the encoder and decoder know it.
func fillEvery(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		fillEvery(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fillEvery(v.Field(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillEvery(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillEvery(v.Index(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> \"q\" \\ é", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) * 1_000_003)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	default:
		panic("fillEvery: a " + v.Kind().String() + " field: teach the codec tests about it")
	}
}

func everyField() *History {
	var h History
	n := 0
	fillEvery(reflect.ValueOf(&h), &n)
	return &h
}

// TestDecodeEveryField reads back what the encoder wrote, every field set: a field added to
// the file's types without a JSON name that reads back fails here.
func TestDecodeEveryField(t *testing.T) {
	h := everyField()
	data, err := encodeJSON(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("(-written +read)\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"format":1,"gpus":[{"xids":[{"x":"79"}]}]}`, "gpus.xids.x: want int, not a JSON string, at byte 38"},
		{`{"format":1,"gpus":[{"xids":[{"x":7.9}]}]}`, "gpus.xids.x: want int, not a JSON number 7.9"},
		{`{"format":1,"gpus":[{"xids":[{"x":07}]}]}`, "not valid JSON at byte 36: invalid character '7' after object key:value pair"},
		{`{"format":1,"gpus":[{"xids":[{"x":99999999999999999999}]}]}`, "want int, not a JSON number 99999999999999999999"},
		{`{"format":1,"node":"a` + "\x01" + `"}`, "invalid character '\\x01' in string literal"},
		{`{"format":1,"node":"a\q"}`, `invalid character 'q' in string escape code`},
		{`{"format":1 "node":"a"}`, "not valid JSON at byte 13: invalid character '\"' after object key:value pair"},
		{`{"format":1}x`, "data after the file's object"},
		{`{"format":1,"node":"gpu`, "truncated: the JSON stops at byte 23, inside a value"},
		{`{"format":1,"node":nul`, "truncated: the JSON stops at byte 22, inside a value"},
		{`[1,2]`, "the file: want history.History, not a JSON array"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 40)], func(t *testing.T) {
			_, err := decodeJSON([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// FuzzDecode feeds Decode anything: it never panics, and what it takes passes validation,
// survives Merge, Judge and the timeline, and reads back the same after Encode.
func FuzzDecode(f *testing.F) {
	valid, err := encodeJSON(sampleHistory(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte(`{"format":2,"node":"gpu01"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Decode(data, "gpu01", 1<<20)
		if err != nil {
			if h != nil {
				t.Fatal("a history with an error")
			}
			return
		}
		// A file may leave updated_at out (0): the run then happens at a valid time.
		now := time.Unix(max(h.UpdatedAt, minTime), 0).Add(time.Hour)
		h.Judge(now, DefaultRules())
		var buf bytes.Buffer
		if err := h.BuildTimeline(now, DefaultRules(), TimelineOptions{}).WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		h.Merge(now, benchObservation2(h, now), DefaultLimits())
		h.Judge(now, DefaultRules())
		out, err := Encode(h, now, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(out, "gpu01", 1<<20)
		if err != nil {
			t.Fatalf("what Encode wrote does not decode: %v\n%s", err, out)
		}
		// An empty list and no list are the same file ("ports":[] is left out when written).
		if !cmp.Equal(h, back, cmpopts.EquateEmpty()) {
			t.Fatalf("(-encoded +decoded)\n%s", cmp.Diff(h, back, cmpopts.EquateEmpty()))
		}
	})
}

// benchObservation2 is a run on whatever GPUs and ports h knows, in its current boot.
func benchObservation2(h *History, now time.Time) Observation {
	o := Observation{Time: now, BootID: "fuzz-boot"}
	if b := h.current(); b != nil {
		o.BootID = b.ID
	}
	for i, g := range h.GPUs {
		ob := GPUObs{UUID: g.UUID, Serial: g.Serial, Bus: g.Bus, Index: i}
		ob.Counters[ECCCorrected] = Read(uint64(i))
		o.GPUs = append(o.GPUs, ob)
		if bus, ok := NormalizeBus(g.Bus); ok {
			o.XIDs = append(o.XIDs, XIDLine{Bus: bus[:len(bus)-2], XID: 79, KernelUS: int64(i + 1)})
		}
	}
	for _, p := range h.Ports {
		if p.Device != "" {
			o.Ports = append(o.Ports, PortObs{Device: p.Device, Port: p.Port, GUID: p.GUID, Netdevs: p.Netdevs, State: 1})
		}
	}
	return o
}
