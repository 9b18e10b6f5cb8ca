package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// addCaptures seeds f with every capture of testdata/nvsmi and a few small documents. The
// 8-GPU -q captures (70 KB each) are cut to their first GPU block, announced as the only one:
// the same layout at an eighth of the cost per run, so the fuzzer mutates more inputs.
func addCaptures(f *testing.F, small ...string) {
	files, err := filepath.Glob(filepath.Join(nvsmiDir, "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no captures in %s: %v", nvsmiDir, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		s := string(b)
		if i := strings.Index(s, "\nGPU 0"); i >= 0 && strings.Contains(s, "Attached GPUs                             : 8\n") {
			if j := strings.Index(s[i+1:], "\nGPU 0"); j >= 0 {
				s = strings.Replace(s[:i+1+j+1], "Attached GPUs                             : 8\n", "Attached GPUs                             : 1\n", 1)
			}
		}
		f.Add(s)
	}
	for _, s := range small {
		f.Add(s)
	}
}

// checkSMIError holds an error to the parsers' contract: an *NvidiaSMIError whose line is
// within the input (one past the last line for "end of input" and over-long lines).
func checkSMIError(t *testing.T, in string, err error) {
	t.Helper()
	var se *NvidiaSMIError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not an *NvidiaSMIError", err, err)
	}
	if lines := strings.Count(in, "\n") + 1; se.Line < 0 || se.Line > lines+1 {
		t.Fatalf("error names line %d of a %d-line input: %v", se.Line, lines, err)
	}
	if se.Msg == "" {
		t.Fatal("error without a message")
	}
}

// FuzzParseNvidiaSMIQuery feeds arbitrary text to the -q parser: it must not panic, must fail
// only with a line-numbered error, and what it accepts must be a consistent inventory that
// survives nvml.json: written by MarshalNVMLJSON, accepted by the snapshot reader, and read
// back unchanged.
func FuzzParseNvidiaSMIQuery(f *testing.F) {
	addCaptures(f,
		smiDoc(0, ""),
		smiDoc(1, "GPU 00000000:01:00.0\n    Processes\n        Process ID : 1\n            Type : C+G\n            Used GPU Memory : 5 MiB\n"),
		smiDoc(1, "GPU 00000000:01:00.0\n    ECC Mode\n        Current : Enabled\n    ECC Errors\n        Volatile\n            Double Bit\n                Total : 3\n"),
		"==============NVSMI LOG==============\nAttached GPUs : 1\nGPU 0001:02:03.4\n  Remapped Rows\n   Pending : Yes\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		inv, err := ParseNvidiaSMIQuery(strings.NewReader(in))
		if err != nil {
			checkSMIError(t, in, err)
			return
		}
		if inv.Init != InitSuccess || len(inv.Devices) != inv.DeviceCount {
			t.Fatalf("init %q, %d devices for device_count %d", inv.Init, len(inv.Devices), inv.DeviceCount)
		}
		for i, g := range inv.Devices {
			if g.Index != i || g.MinorNumber < -1 || !smiBusID().MatchString(g.PCIBusID) {
				t.Fatalf("device %d: index %d, minor %d, bus id %q", i, g.Index, g.MinorNumber, g.PCIBusID)
			}
			if g.Compute != nil && g.Compute.Processes == nil {
				t.Fatalf("device %d: Compute with a nil list (would write null)", i)
			}
			if g.Fabric != nil && g.Fabric.State == "" {
				t.Fatalf("device %d: Fabric without a state", i)
			}
			if g.NVLinks != nil {
				t.Fatalf("device %d: NVLinks from -q output", i)
			}
		}
		b, err := MarshalNVMLJSON(inv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseNVML(b); err != nil {
			t.Fatalf("the snapshot reader refuses the import: %v\n%s", err, b)
		}
		var back GPUInventory
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		// A reading of exactly the legacy facts is written without "fields", which reads
		// back as those facts.
		inv.Fields, back.Fields = inv.Read(), back.Read()
		if reflect.DeepEqual(inv, back) {
			return
		}
		if diff := cmp.Diff(inv, back); diff != "" {
			t.Fatalf("nvml.json does not read back as the inventory (-parsed +read back):\n%s", diff)
		}
	})
}

// FuzzParseNvidiaSMINvLinkStatus: no panic, line-numbered errors only, and every GPU's links
// sorted, distinct and in range.
func FuzzParseNvidiaSMINvLinkStatus(f *testing.F) {
	addCaptures(f,
		"GPU 0: X (UUID: GPU-0)\nNVML: Unable to retrieve NVLink information as all links are inactive\nGPU 1: X (UUID: GPU-1)\n\t Link 2: 1.5 GB/s\n",
		"GPU 0: X (UUID: GPU-0)\n Link 1: <inactive>\n Link 0: 25 GB/s\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseNvidiaSMINvLinkStatus(strings.NewReader(in))
		if err != nil {
			checkSMIError(t, in, err)
			return
		}
		for uuid, ls := range got {
			if uuid == "" {
				t.Fatal("empty UUID key")
			}
			for i, l := range ls {
				if l.Link < 0 || l.Link >= smiMaxLinks || i > 0 && ls[i-1].Link >= l.Link {
					t.Fatalf("%s: links %v not sorted, distinct and in range", uuid, ls)
				}
			}
		}
	})
}

// FuzzParseNvidiaSMINvLinkErrors: no panic, line-numbered errors only, and only the counters
// NVLinkErrors keeps, on links in range.
func FuzzParseNvidiaSMINvLinkErrors(f *testing.F) {
	addCaptures(f,
		"GPU 0: X (UUID: GPU-0)\n\t Link 0: Replay Errors: 3\n\t Link 0: CRC Errors: 1\n\n\t Link 17: Recovery Errors: 0\n",
		"GPU 0: X (UUID: GPU-0)\n Link 1: Rx remote Errors: 9\n Link 1: CRC Data Errors: 2\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseNvidiaSMINvLinkErrors(strings.NewReader(in))
		if err != nil {
			checkSMIError(t, in, err)
			return
		}
		for uuid, links := range got {
			if uuid == "" {
				t.Fatal("empty UUID key")
			}
			for l, c := range links {
				if l < 0 || l >= smiMaxLinks {
					t.Fatalf("%s: link %d out of range", uuid, l)
				}
				for name := range c {
					if name != "replay" && name != "recovery" && name != "crc_flit" && name != "crc_data" {
						t.Fatalf("%s link %d: counter %q", uuid, l, name)
					}
				}
			}
			if e := sumLinkCounters(links, nil); e != nil && e.Links != len(links) {
				t.Fatalf("%s: %d links summed of %d", uuid, e.Links, len(links))
			}
		}
	})
}
