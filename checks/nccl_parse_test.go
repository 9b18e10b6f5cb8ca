package checks

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ncclCorpus lists the real logs in testdata/nccl (see SOURCE there); each has a .expect
// sidecar with values computed from the log itself.
var ncclCorpus = []struct {
	name string
	file string
}{
	{"8x H100 single node, completed", "nccltests-290-h100-1node-8gpu-g8"},
	{"2x GH200 on 2 nodes, wrong elements", "nccltests-369-gh200-2node-wrong-nonzero-failed"},
	{"2x RTX 5090, NCCL failure before the first row", "nccltests-287-rtx5090-2gpu-failed"},
}

func readNCCLLog(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nccl", file+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readExpect reads a key=value sidecar, leaving out what is prose ("file", "notes").
func readExpect(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "nccl", file+".expect"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || k == "file" || k == "notes" {
			continue
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// expectOf computes the sidecar's keys from a parsed run, with the sidecar's conventions:
// "none" for a summary line the log lacks, busbw with two decimals as logged.
func expectOf(run NCCLRun) map[string]string {
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var wrongOOP, wrongIP int64
	for _, r := range run.Rows {
		wrongOOP += max(r.OutOfPlace.Wrong, 0)
		wrongIP += max(r.InPlace.Wrong, 0)
	}
	m := map[string]string{
		"avg_bus_bandwidth_GBps": "none",
		"nranks":                 strconv.Itoa(len(run.Ranks)),
		"nodes":                  strconv.Itoa(len(run.Hosts())),
		"gpu_model":              strings.Join(run.Models(), ","),
		"data_rows":              strconv.Itoa(len(run.Rows)),
		"out_of_bounds_values":   "none",
		"out_of_bounds_status":   "none",
		"sum_wrong_out_of_place": strconv.FormatInt(wrongOOP, 10),
		"sum_wrong_in_place":     strconv.FormatInt(wrongIP, 10),
		"test_failure_lines":     yesNo(len(run.Failures) > 0),
	}
	corrupt := wrongOOP+wrongIP > 0 || run.OutOfBounds > 0
	m["errors"] = yesNo(corrupt || len(run.Failures) > 0)
	if run.AvgBusBW >= 0 {
		m["avg_bus_bandwidth_GBps"] = strconv.FormatFloat(run.AvgBusBW, 'f', -1, 64)
	}
	switch {
	case !run.Completed():
		m["status"] = "failed"
	case m["errors"] == "yes":
		m["status"] = "completed_with_errors"
	default:
		m["status"] = "completed"
	}
	if run.Completed() {
		m["out_of_bounds_values"] = strconv.FormatInt(run.OutOfBounds, 10)
		m["out_of_bounds_status"] = "OK"
		if run.OutOfBounds > 0 {
			m["out_of_bounds_status"] = "FAILED"
		}
	}
	if len(run.Rows) > 0 {
		last := run.Rows[len(run.Rows)-1]
		m["largest_size_bytes"] = strconv.FormatInt(last.Size, 10)
		m["largest_size_busbw_out_of_place_GBps"] = strconv.FormatFloat(last.OutOfPlace.BusBW, 'f', 2, 64)
		m["largest_size_busbw_in_place_GBps"] = strconv.FormatFloat(last.InPlace.BusBW, 'f', 2, 64)
	}
	return m
}

// TestParseNCCLTestsCorpus compares the parse of each real log with its sidecar.
func TestParseNCCLTestsCorpus(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join("testdata", "nccl", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		name := strings.TrimSuffix(filepath.Base(l), ".log")
		if !slices.ContainsFunc(ncclCorpus, func(c struct{ name, file string }) bool { return c.file == name }) {
			t.Errorf("%s is not in ncclCorpus: add it with its .expect sidecar", l)
		}
	}
	for _, tc := range ncclCorpus {
		t.Run(tc.name, func(t *testing.T) {
			run, err := ParseNCCLTests(strings.NewReader(readNCCLLog(t, tc.file)))
			if err != nil {
				t.Fatalf("ParseNCCLTests: %v", err)
			}
			want := readExpect(t, tc.file)
			got := expectOf(run)
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k) // the sidecar has no value for it (no rows, no largest size)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parse differs from %s.expect (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

// TestParseNCCLTestsH100 pins the whole parse of the 8x H100 log.
func TestParseNCCLTestsH100(t *testing.T) {
	run, err := ParseNCCLTests(strings.NewReader(readNCCLLog(t, "nccltests-290-h100-1node-8gpu-g8")))
	if err != nil {
		t.Fatal(err)
	}
	busIDs := []string{"0x18", "0x6d", "0x97", "0xc0", "0x19", "0x6c", "0x96", "0xc1"}
	var ranks []NCCLRank
	for i, b := range busIDs {
		ranks = append(ranks, NCCLRank{Rank: i, Host: "node005", Device: i, BusID: b, Name: "NVIDIA H100 80GB HBM3"})
	}
	row := func(size, count int64, t1, a1, b1, t2, a2, b2 float64) NCCLRow {
		return NCCLRow{Size: size, Count: count, Type: "float", RedOp: "sum",
			OutOfPlace: NCCLResult{TimeUS: t1, AlgBW: a1, BusBW: b1},
			InPlace:    NCCLResult{TimeUS: t2, AlgBW: a2, BusBW: b2}}
	}
	want := NCCLRun{Threads: 1, GPUs: 8, Validation: 1, Ranks: ranks, OutOfBounds: 0, AvgBusBW: 439.369,
		Rows: []NCCLRow{
			row(134217728, 33554432, 613.3, 218.85, 382.99, 614.3, 218.48, 382.34),
			row(268435456, 67108864, 1139.2, 235.63, 412.35, 1134.8, 236.56, 413.97),
			row(536870912, 134217728, 2175.8, 246.75, 431.81, 2181.4, 246.11, 430.69),
			row(1073741824, 268435456, 4038.8, 265.85, 465.25, 4043.6, 265.54, 464.70),
			row(2147483648, 536870912, 8020.3, 267.76, 468.57, 8002.1, 268.36, 469.64),
			row(4294967296, 1073741824, 15870, 270.63, 473.60, 15773, 272.30, 476.53),
		}}
	if diff := cmp.Diff(want, run); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseNCCLTests(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    NCCLRun
		wantErr string
	}{
		{
			// Real excerpt, NVIDIA/nccl#428 (2020, nccl-tests before 2.11): Rank lines without
			// "Group", no root column, and an "error" column holding the largest deviation.
			name: "old format without root and with an error column",
			in: `# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 
#
# Using devices
#   Rank  0 Pid 110419 on test-a device  0 [0x3b] Tesla T4
#   Rank  1 Pid 110419 on test-a device  1 [0x86] Tesla T4
#
#                                                     out-of-place                       in-place          
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2   float     sum    20.36    0.00    0.00  0e+00    20.07    0.00    0.00  0e+00
`,
			want: NCCLRun{Threads: 1, GPUs: 2, Validation: 1, OutOfBounds: -1, AvgBusBW: -1,
				Ranks: []NCCLRank{{0, "test-a", 0, "0x3b", "Tesla T4"}, {1, "test-a", 1, "0x86", "Tesla T4"}},
				Rows: []NCCLRow{{Size: 8, Count: 2, Type: "float", RedOp: "sum",
					OutOfPlace: NCCLResult{TimeUS: 20.36, Wrong: -1}, InPlace: NCCLResult{TimeUS: 20.07, Wrong: -1}}}},
		},
		{
			// Real rows, NVIDIA/nccl#1184 (DGX H100, NCCL 2.18.3): wrong elements at 512 KiB.
			name: "wrong elements counted per half",
			in: `#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
      262144         65536     float     sum      -1    325.1    0.81    0.81      0    325.3    0.81    0.81      0
      524288        131072     float     sum      -1    663.1    0.79    0.79  237858    569.4    0.92    0.92  238038
`,
			want: NCCLRun{Validation: -1, OutOfBounds: -1, AvgBusBW: -1, Rows: []NCCLRow{
				{Size: 262144, Count: 65536, Type: "float", RedOp: "sum",
					OutOfPlace: NCCLResult{325.1, 0.81, 0.81, 0}, InPlace: NCCLResult{325.3, 0.81, 0.81, 0}},
				{Size: 524288, Count: 131072, Type: "float", RedOp: "sum",
					OutOfPlace: NCCLResult{663.1, 0.79, 0.79, 237858}, InPlace: NCCLResult{569.4, 0.92, 0.92, 238038}},
			}},
		},
		{
			// Written for the test in the format of src/common.cu: "%5s" "N/A" when -c 0, and
			// "%5g" of a large count; the version line of nccl-tests 2.17.
			name: "N/A without validation, %g counts, versions",
			in: `# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22703
# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
           8             2     float     sum      -1    17.49    0.00    0.00    N/A    16.41    0.00    0.00    N/A
          16             4     float     sum      -1    16.08    0.00    0.00  1.04858e+06    16.04    0.00    0.00      -1
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0 
`,
			want: NCCLRun{TestsVersion: "2.17.8", NCCLVersion: "2.27.3", Threads: 1, GPUs: 8, Validation: 0, OutOfBounds: 0, AvgBusBW: 0,
				Rows: []NCCLRow{
					{Size: 8, Count: 2, Type: "float", RedOp: "sum", OutOfPlace: NCCLResult{17.49, 0, 0, -1}, InPlace: NCCLResult{16.41, 0, 0, -1}},
					{Size: 16, Count: 4, Type: "float", RedOp: "sum", OutOfPlace: NCCLResult{16.08, 0, 0, 1048580}, InPlace: NCCLResult{16.04, 0, 0, -1}},
				}},
		},
		{
			name: "failure after a row's first columns, NCCL lines, FAILED average",
			in: `node1:123:123 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
node1:123:130 [2] NCCL WARN Cuda failure 'out of memory'
  4294967296    1073741824     float     sum      -1node1: Test CUDA failure common.cu:733 'out of memory'
 .. node1 pid 123: Test failure common.cu:891
# Avg bus bandwidth    : 12.5 FAILED
`,
			want: NCCLRun{NCCLVersion: "2.18.3+cuda12.2", Validation: -1, OutOfBounds: -1, AvgBusBW: 12.5,
				Warnings: []string{"node1:123:130 [2] NCCL WARN Cuda failure 'out of memory'"},
				Failures: []string{"4294967296    1073741824     float     sum      -1node1: Test CUDA failure common.cu:733 'out of memory'",
					".. node1 pid 123: Test failure common.cu:891", "# Avg bus bandwidth    : 12.5 FAILED"}},
		},
		{
			name: "nan and inf as printf writes them",
			in:   "  8  2  float  sum  -1  0.00  inf  -nan  0  0.00  inf  nan  0\n",
			want: NCCLRun{Validation: -1, OutOfBounds: -1, AvgBusBW: -1, Rows: []NCCLRow{{Size: 8, Count: 2, Type: "float", RedOp: "sum",
				OutOfPlace: NCCLResult{0, math.Inf(1), math.NaN(), 0}, InPlace: NCCLResult{0, math.Inf(1), math.NaN(), 0}}}},
		},
		{
			name: "a row cut short is not a row",
			in:   "  4294967296    1073741824     float     sum      -1    15870  270.63\n",
			want: NCCLRun{Validation: -1, OutOfBounds: -1, AvgBusBW: -1},
		},
		{name: "busbw not a number", in: "  8  2  float  sum  -1  1.0  2.0  fast  0  1.0  2.0  3.0  0\n",
			wantErr: `nccl-tests output line 1: out-of-place busbw "fast" is not a number`},
		{name: "wrong count not a count", in: "  8  2  float  sum  -1  1.0  2.0  3.0  0  1.0  2.0  3.0  many\n",
			wantErr: `nccl-tests output line 1: in-place #wrong "many" is not a count`},
		{name: "size out of range", in: "  99999999999999999999  2  float  sum  -1  1.0  2.0  3.0  0  1.0  2.0  3.0  0\n",
			wantErr: `nccl-tests output line 1: size "99999999999999999999": value out of range`},
		{name: "out of bounds count garbled", in: "#\n# Out of bounds values : lots OK\n",
			wantErr: `nccl-tests output line 2: out of bounds count "lots" is not a count`},
		{name: "rank line garbled", in: "#  Rank  0 on somewhere\n",
			wantErr: `nccl-tests output line 1: rank line "Rank  0 on somewhere": want "Rank N [Group N] Pid N on HOST device N [BUS] NAME"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNCCLTests(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNCCLTests: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(sameFloat)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// sameFloat is float equality in which NaN equals NaN.
func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestNCCLVersionFromCode(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{{22902, "2.29.2"}, {21805, "2.18.5"}, {2708, "2.7.8"}, {30001, "3.0.1"}}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := ncclVersionFromCode(tc.code); got != tc.want {
				t.Errorf("ncclVersionFromCode(%d) = %q, want %q", tc.code, got, tc.want)
			}
		})
	}
}

func FuzzParseNCCL(f *testing.F) {
	for _, c := range ncclCorpus {
		f.Add(readNCCLLog(f, c.file))
	}
	f.Add("  8  2  float  sum  -1  0.00  inf  -nan  N/A  0.00  inf  nan  1e+300\n# Out of bounds values : 3 FAILED\n")
	f.Add("#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] X\n# nccl-tests version 2.17.8 nccl-library=1\n")
	f.Fuzz(func(t *testing.T, in string) {
		run, err := ParseNCCLTests(strings.NewReader(in))
		again, err2 := ParseNCCLTests(strings.NewReader(in))
		if fmt.Sprint(err) != fmt.Sprint(err2) || !cmp.Equal(run, again, cmp.Comparer(sameFloat)) {
			t.Fatalf("two parses of the same input differ")
		}
		if err != nil {
			return
		}
		if run.OutOfBounds < -1 || run.Validation < -1 || run.Threads < 0 || run.GPUs < 0 {
			t.Fatalf("impossible counts: %+v", run)
		}
		if !(run.AvgBusBW >= 0 || run.AvgBusBW == -1 || math.IsNaN(run.AvgBusBW)) {
			t.Fatalf("AvgBusBW %v", run.AvgBusBW)
		}
		rows := 0
		for _, l := range strings.Split(in, "\n") {
			if f := strings.Fields(l); (len(f) == 12 || len(f) == 13) && ncclAllDigits(f[0]) && ncclAllDigits(f[1]) && !ncclIsFailure(l) && !strings.Contains(l, "NCCL WARN") && !strings.Contains(l, "NCCL INFO NCCL version ") {
				rows++
			}
		}
		if rows != len(run.Rows) {
			t.Fatalf("%d row-shaped lines, %d rows parsed", rows, len(run.Rows))
		}
		for _, r := range run.Rows {
			if r.Size < 0 || r.Count < 0 || r.OutOfPlace.Wrong < -1 || r.InPlace.Wrong < -1 {
				t.Fatalf("impossible row %+v", r)
			}
		}
		for _, l := range append(run.Failures, run.Warnings...) {
			if strings.Contains(l, "\n") {
				t.Fatalf("a failure line holds a newline: %q", l)
			}
		}
	})
}

func ExampleParseNCCLTests() {
	out := `#  Rank  0 Group  0 Pid 295203 on    node005 device  0 [0x18] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 439.369
`
	run, err := ParseNCCLTests(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := run.Rows[0]
	fmt.Println(run.Models(), r.Size, r.OutOfPlace.BusBW, r.InPlace.BusBW, r.InPlace.Wrong, run.OutOfBounds, run.AvgBusBW)
	// Output: [NVIDIA H100 80GB HBM3] 4294967296 473.6 476.53 0 0 439.369
}
