package validate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the floors table in docs/validation.md")

const validationDoc = "../../docs/validation.md"

// floorsTable renders the built-in floors as docs/validation.md shows them.
func floorsTable() string {
	var b strings.Builder
	b.WriteString("| model (NVML name words) | figure | expected | floor | source |\n|---|---|---|---|---|\n")
	row := func(label, words, fig string, fl Floor, unit string) {
		num := func(v float64) string {
			if v == 0 {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
		}
		fmt.Fprintf(&b, "| %s (`%s`) | %s | %s | %s | %s |\n", label, words, fig, num(fl.Expected), num(fl.Floor), fl.Source)
	}
	for _, m := range Models() {
		w := strings.Join(m.words, " ")
		row(m.Label, w, "`nccl_busbw`, 8 GPUs", m.NCCL, "GB/s")
		row(m.Label, w, "`d2d_bw`", m.D2D, "GB/s")
		h := hostFloors[m.PCIeGen]
		row(m.Label, w, fmt.Sprintf("`h2d_bw` (PCIe %d.0)", m.PCIeGen), h.H2D, "GB/s")
		row(m.Label, w, fmt.Sprintf("`d2h_bw` (PCIe %d.0)", m.PCIeGen), h.D2H, "GB/s")
		row(m.Label, w, "GPU memory bandwidth (DCGM)", m.MemBW, "MB/s")
	}
	return b.String()
}

var floorsBlock = regexp.MustCompile(`(?s)(<!-- floors table: [^\n]*-->\n)(.*?)(<!-- end floors table -->)`)

// TestFloorsDoc keeps the floors table in docs/validation.md equal to the code's.
func TestFloorsDoc(t *testing.T) {
	doc, err := os.ReadFile(validationDoc)
	if err != nil {
		t.Fatal(err)
	}
	m := floorsBlock.FindSubmatchIndex(doc)
	if m == nil {
		t.Fatal("no floors table markers in docs/validation.md")
	}
	want := floorsTable()
	if string(doc[m[4]:m[5]]) == want {
		return
	}
	if !*update {
		t.Fatalf("docs/validation.md's floors table differs from the code: run go test ./checks/validate -run TestFloorsDoc -update and review the diff")
	}
	out := append(append(append([]byte{}, doc[:m[4]]...), want...), doc[m[5]:]...)
	if err := os.WriteFile(validationDoc, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJSONContractDoc: the JSON example in docs/validation.md decodes strictly into Report
// (no key the type lacks), holds every key the type writes, and the key table names them all.
func TestJSONContractDoc(t *testing.T) {
	doc, err := os.ReadFile(validationDoc)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("no JSON example in docs/validation.md")
	}
	dec := json.NewDecoder(bytes.NewReader(block[1]))
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("the documented example does not decode into Report: %v", err)
	}
	var doced map[string]any
	if err := json.Unmarshal(block[1], &doced); err != nil {
		t.Fatal(err)
	}
	for _, k := range jsonKeys(reflect.TypeOf(Report{})) {
		if _, ok := doced[k]; !ok && k != "refused" {
			t.Errorf("the documented example lacks %q", k)
		}
		if !bytes.Contains(doc, []byte("| `"+k+"`")) && !bytes.Contains(doc, []byte("| `"+k+"[]`")) {
			t.Errorf("the key table does not describe %q", k)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(Figure{}), reflect.TypeOf(Test{})} {
		for _, k := range jsonKeys(typ) {
			if !bytes.Contains(doc, []byte("`"+k+"`")) {
				t.Errorf("the docs do not name %s's key %q", typ.Name(), k)
			}
		}
	}
}

func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
