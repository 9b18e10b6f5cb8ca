package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestEncodeMatchesJSON holds the hand-written encoder to encoding/json's output, byte for byte.
func TestEncodeMatchesJSON(t *testing.T) {
	sparse := sampleHistory(t)
	for name, h := range map[string]*History{"every field": everyField(), "sample": sparse, "full": fullHistory(t, DefaultLimits()), "empty": New("n")} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendHistory(nil, h); !bytes.Equal(got, want) {
			t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
}

// TestDecodeEveryField reads back what the encoder wrote, every field set.
func TestDecodeEveryField(t *testing.T) {
	h := everyField()
	got, skipped, err := decodeHistory(appendHistory(nil, h))
	if err != nil || skipped {
		t.Fatalf("%v (skipped keys: %v)", err, skipped)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("(-written +read)\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"format":1,"gpus":[{"xids":[{"x":"79"}]}]}`, "gpus[0].xids[0].x: want a number, at byte 35"},
		{`{"format":1,"gpus":[{"xids":[{"x":7.9}]}]}`, "not valid JSON at byte 36: gpus[0].xids[0].x: want an integer"},
		{`{"format":1,"gpus":[{"xids":[{"x":07}]}]}`, "not valid JSON at byte 36: gpus[0].xids[0].x: a number with a leading zero"},
		{`{"format":1,"gpus":[{"xids":[{"x":99999999999999999999}]}]}`, "99999999999999999999 is out of range"},
		{`{"format":1,"node":"a` + "\x01" + `"}`, "a control character in a string"},
		{`{"format":1,"node":"a\q"}`, `an unknown escape \q`},
		{`{"format":1 "node":"a"}`, "not valid JSON at byte 13: the file: want ',' or '}'"},
		{`{"format":1,"extra":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "nested deeper than 64"},
		{`{"format":1}x`, "data after the file's object"},
		{`{"format":1,"node":"gpu`, "truncated: the JSON stops at byte 23, inside a value"},
		{`{"format":1,"node":nul`, "truncated: the JSON stops at byte 22, inside a value"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 40)], func(t *testing.T) {
			_, _, err := decodeHistory([]byte(tc.in))
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
			if json.Valid([]byte(tc.in)) && json.Unmarshal([]byte(tc.in), new(History)) == nil {
				t.Errorf("encoding/json takes %s", tc.in)
			}
		})
	}
}

// FuzzDecodeMatchesJSON checks the decoder against encoding/json: on input without keys
// this nodecheck does not know (encoding/json matches those case-insensitively), both take
// it or both refuse it, and what they read is the same.
func FuzzDecodeMatchesJSON(f *testing.F) {
	for _, h := range []*History{sampleHistory(f), everyField()} {
		f.Add(appendHistory(nil, h))
	}
	f.Add([]byte(`{"format":1,"node":"a\ud800\udc00\u00e9\ud800x","gpus":[null,{"samples":[{"c":[1,2,3,4,5,6,7]},{"c":[-0]}]}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"boots":[{"driver_loads":[1e3]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, skipped, err := decodeHistory(data)
		var want History
		jerr := json.Unmarshal(data, &want)
		if skipped {
			return
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("decoder: %v; encoding/json: %v", err, jerr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(&want, got) {
			t.Fatalf("(-encoding/json +decoder)\n%s", cmp.Diff(&want, got))
		}
		if enc, _ := json.Marshal(got); !bytes.Equal(appendHistory(nil, got), enc) {
			t.Fatalf("encoder differs from encoding/json on %s", enc)
		}
	})
}

// FuzzDecode feeds Decode anything: it never panics, and what it takes passes validation,
// survives Merge, Judge and the timeline, and reads back the same after Encode.
func FuzzDecode(f *testing.F) {
	valid := appendHistory(nil, sampleHistory(f))
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
		now := time.Unix(h.UpdatedAt, 0).Add(time.Hour)
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
		if !reflect.DeepEqual(h, back) {
			t.Fatalf("(-encoded +decoded)\n%s", cmp.Diff(h, back))
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
