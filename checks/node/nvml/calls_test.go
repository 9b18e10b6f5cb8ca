//go:build cgo

package nvml

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// countingAPI is mockAPI that also counts the fabric calls, which go through the adapter's
// own method rather than the mock.
type countingAPI struct {
	mockAPI
	fabrics *int
}

func (c countingAPI) fabric(d nvml.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
	*c.fabrics++
	return c.mockAPI.fabric(d)
}

// notNVMLCalls are mock methods that are not NVML calls: symbol look-ups (dlsym).
var notNVMLCalls = []string{"LookupSymbol", "Extensions"}

// callCounts counts the NVML calls made of s, by go-nvml method name, from the mock's own
// call records (every XxxCalls method of the server and of its devices), plus fabrics.
func callCounts(s *server.Server, fabrics int) map[string]int {
	out := map[string]int{}
	add := func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumMethod() {
			m := t.Method(i)
			name, ok := strings.CutSuffix(m.Name, "Calls")
			if !ok || m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Slice || slices.Contains(notNVMLCalls, name) {
				continue
			}
			if n := v.Method(i).Call(nil)[0].Len(); n > 0 {
				out[name] += n
			}
		}
	}
	add(reflect.ValueOf(s))
	for _, d := range s.Devices {
		add(reflect.ValueOf(d))
	}
	if fabrics > 0 {
		out["fabric"] = fabrics
	}
	return out
}

// readCounting reads s for want and returns the calls made.
func readCounting(t testing.TB, s *server.Server, want node.GPUFields) map[string]int {
	t.Helper()
	fabrics := 0
	inv, err := read(countingAPI{mockAPI{s, fabricCompleted}, &fabrics}, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range inv.Devices {
		if g.Error != "" {
			t.Fatalf("GPU %d: %s", g.Index, g.Error)
		}
	}
	return callCounts(s, fabrics)
}

// allowedCalls are the calls a reading of want may make: readingCalls and each fact's.
func allowedCalls(want node.GPUFields) map[string]string {
	allowed := map[string]string{}
	for _, c := range readingCalls {
		allowed[c] = "every reading"
	}
	for _, k := range want.Keys() {
		for _, c := range fieldCalls[k] {
			allowed[c] = k
		}
	}
	return allowed
}

// TestFieldCalls: asked for one fact, the adapter makes only that fact's calls (fieldCalls),
// and at least one of them: the table says what each fact costs.
func TestFieldCalls(t *testing.T) {
	for _, k := range node.AllGPUFields.Keys() {
		t.Run(k, func(t *testing.T) {
			if _, ok := fieldCalls[k]; !ok {
				t.Fatalf("fieldCalls has no entry for %s", k)
			}
			f, err := node.ParseGPUField(k)
			if err != nil {
				t.Fatal(err)
			}
			got := readCounting(t, newH100(), f)
			allowed := allowedCalls(f)
			own := 0
			for _, c := range slices.Sorted(maps.Keys(got)) {
				if _, ok := allowed[c]; !ok {
					t.Errorf("reading %s alone called %s (%d times), which fieldCalls does not give it", k, c, got[c])
				}
				if slices.Contains(fieldCalls[k], c) {
					own++
				}
			}
			if own == 0 {
				t.Errorf("reading %s alone called none of its calls %v: %v", k, fieldCalls[k], got)
			}
		})
	}
	t.Run("nothing", func(t *testing.T) {
		got := readCounting(t, newH100(), 0)
		want := map[string]int{"Init": 1, "DeviceGetCount": 1, "DeviceGetHandleByIndex": 8, "Shutdown": 1}
		if !maps.Equal(got, want) {
			t.Errorf("a reading of no fact made %v, want %v", got, want)
		}
	})
}

// modeFields are the GPU facts of the checks of each mode with the default config.
func modeFields(mode config.Mode) node.GPUFields {
	return checks.GPUFieldsFor(checks.All(), config.Default(checks.Schema()), mode)
}

// TestModeCalls: a run in each mode makes only the NVML calls of the facts its
// checks judge; a call no check of the mode uses fails the test, naming the call.
func TestModeCalls(t *testing.T) {
	for _, mode := range config.Modes() {
		t.Run(string(mode), func(t *testing.T) {
			want := modeFields(mode)
			got := readCounting(t, newH100(), want)
			allowed := allowedCalls(want)
			for _, c := range slices.Sorted(maps.Keys(got)) {
				if _, ok := allowed[c]; !ok {
					t.Errorf("a %s-mode run called %s %d times: no %s-mode check uses it (the checks judge %s)", mode, c, got[c], mode, want)
				}
			}
			t.Logf("%s: facts %s; calls %v", mode, want, got)
		})
	}
}

// withoutNVLink makes every GPU of s a PCIe board without NVLink: NVML answers every link
// index ERROR_NOT_SUPPORTED.
func withoutNVLink(s *server.Server) {
	for _, d := range s.Devices {
		d.(*server.Device).GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	}
}

// BenchmarkNVMLCalls reports the NVML calls a run makes per GPU on an 8x H100 mock, by mode
// and with and without NVLink: the table of docs/speed.md. The time it reports is the mock's, not a
// driver's.
func BenchmarkNVMLCalls(b *testing.B) {
	for _, mode := range append(config.Modes(), "snapshot") {
		want := node.AllGPUFields
		if mode != "snapshot" {
			want = modeFields(mode)
		}
		for _, links := range []string{"nvlink", "no-nvlink"} {
			b.Run(string(mode)+"/"+links, func(b *testing.B) {
				var calls map[string]int
				for b.Loop() {
					s := newH100()
					if links == "no-nvlink" {
						withoutNVLink(s)
					}
					calls = readCounting(b, s, want)
				}
				perGPU, perRun := 0, 0
				for c, n := range calls {
					if c == "Init" || c == "Shutdown" || c == "DeviceGetCount" || strings.HasPrefix(c, "System") {
						perRun += n
						continue
					}
					perGPU += n
				}
				b.ReportMetric(float64(perGPU)/float64(len(h100Bus)), "calls/GPU")
				b.ReportMetric(float64(perRun), "calls/run")
			})
		}
	}
}

// TestECCCounterCalls: the correctable count is its own fact (the history's, health and
// manual), so that a prolog reads only the two uncorrectable counts gpu_memory_errors judges.
func TestECCCounterCalls(t *testing.T) {
	for _, tc := range []struct {
		want node.GPUFields
		n    int // GetTotalEccErrors calls per GPU
	}{
		{node.GPUECC, 2},
		{node.GPUECCCorrected, 1},
		{node.GPUECC | node.GPUECCCorrected, 3},
		{modeFields(config.ModeProlog), 2},
		{modeFields(config.ModeHealth), 3},
	} {
		got := readCounting(t, newH100(), tc.want)
		if n := got["GetTotalEccErrors"]; n != tc.n*len(h100Bus) || got["GetEccMode"] != len(h100Bus) {
			t.Errorf("%s: %d GetTotalEccErrors and %d GetEccMode calls, want %d and %d", tc.want, n, got["GetEccMode"], tc.n*len(h100Bus), len(h100Bus))
		}
	}
}
