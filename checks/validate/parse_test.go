package validate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
)

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseNVBandwidth(t *testing.T) {
	tests := []struct {
		file     string
		version  string
		devices  int
		test     string  // a test case's prefix
		rows     int     // its rows
		cols     int     // its columns
		min, max float64 // over its values, N/A aside
		sum      float64
	}{
		{"nvbandwidth/azurehpc-fork-h100x8-nvbw-v04-d2d-read-ce-healthy.txt", "v0.4", 8, "device_to_device_memcpy_read_ce", 8, 8, 370.26, 372.96, 20785.58},
		{"nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt", "", 0, "host_to_device_memcpy_sm", 1, 8, 35.03, 35.39, -1},
		{"nvbandwidth/nvbandwidth-24-h100x8-h2d-sm-35-vs-d2h-sm-52.txt", "", 0, "device_to_host_memcpy_sm", 1, 8, 52.76, 52.78, -1},
		{"nvbandwidth/nvbandwidth-15-rtx4090x8-v02-h2d-d2h-ce-excerpt.txt", "v0.2", 8, "host_to_device_memcpy_ce", 1, 8, 23.90, 26.38, 205.04},
		{"nvbandwidth/nvbandwidth-15-rtx4090x8-v02-h2d-d2h-ce-excerpt.txt", "v0.2", 8, "device_to_host_memcpy_ce", 1, 8, 26.25, 27.11, 214.28},
		{"nvbandwidth/DERIVED-h100x8-d2d-gpu1-to-gpu0-162.txt", "v0.4", 8, "device_to_device_memcpy_read_ce", 8, 8, 162.45, 372.96, 20577.13},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file)+"/"+tc.test, func(t *testing.T) {
			nv, err := ParseNVBandwidth(strings.NewReader(readFixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			if nv.Version != tc.version || len(nv.Devices) != tc.devices {
				t.Errorf("version %q devices %d, want %q %d", nv.Version, len(nv.Devices), tc.version, tc.devices)
			}
			nt, ok := nv.Test(tc.test)
			if !ok {
				t.Fatalf("no %s in %+v", tc.test, nv.Tests)
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range nt.Rows {
				for _, v := range r.Values {
					if !math.IsNaN(v) {
						lo, hi = min(lo, v), max(hi, v)
					}
				}
			}
			if len(nt.Rows) != tc.rows || len(nt.Cols) != tc.cols || lo != tc.min || hi != tc.max || math.Abs(nt.Sum-tc.sum) > 0.001 {
				t.Errorf("%d rows %d cols, %v-%v, sum %v; want %d %d %v-%v %v", len(nt.Rows), len(nt.Cols), lo, hi, nt.Sum, tc.rows, tc.cols, tc.min, tc.max, tc.sum)
			}
		})
	}
}

func TestDeviceName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{" NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"},
		{" NVIDIA H100 80GB HBM3 (00000000:18:00)", "NVIDIA H100 80GB HBM3"},
		{"GPU (rev a)", "GPU (rev a)"},
	} {
		if got := deviceName(tc.in); got != tc.want {
			t.Errorf("deviceName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestParseNVBandwidthNoRunning: issue 50's paste has no "Running" line, so its matrix belongs
// to no test case and is not judged (validation then says nvbandwidth printed no matrix).
func TestParseNVBandwidthNoRunning(t *testing.T) {
	nv, err := ParseNVBandwidth(strings.NewReader(readFixture(t, "nvbandwidth/nvbandwidth-50-a6000x6-v08-d2d-read-ce-pcie-nvlink-pairs.txt")))
	if err != nil || len(nv.Tests) != 0 || nv.Version != "v0.8" {
		t.Errorf("got %+v, %v", nv, err)
	}
}

func TestParseNVBandwidthErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"short row", "Running a.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n   0  1\n0  1.5\n", "line 4: \"0  1.5\": 1 values, the header has 2 columns"},
		{"bad value", "Running a.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n   0  1\n0  1.5 x\n", "line 4: \"0  1.5 x\": value \"x\" is not a bandwidth"},
		{"negative", "Running a.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n   0\n0  -1\n", "value \"-1\" is not a bandwidth"},
		{"bad header", "Running a.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n   0  one\n", "line 3: column header"},
		{"bad sum", "SUM a x\n", "line 1: SUM \"x\" is not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNVBandwidth(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParsePerftest(t *testing.T) {
	tests := []struct {
		file   string
		device string
		link   string
		rows   int
		avg    float64 // AvgGbps; -1: none
		errors int
	}{
		{"perftest/dgxspark-cx7-roce-ib_write_bw-run-infinitely-2rails-92-97gbps.txt", "roceP2p1s0f0", "Ethernet", 11, (92.57*4 + 92.56 + 97.28*5 + 97.29) / 11, 0},
		{"perftest/DERIVED-cx7-ib_write_bw-18gbps.txt", "rocep1s0f0", "Ethernet", 5, 18.51, 0},
		{"perftest/COMPOSED-ib_write_bw-client-couldnt-connect.txt", "mlx5_0", "IB", 0, -1, 2},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			p, err := ParsePerftest(strings.NewReader(readFixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			avg, ok := p.AvgGbps()
			if !ok {
				avg = -1
			}
			if p.Device != tc.device || p.LinkType != tc.link || len(p.Rows) != tc.rows || math.Abs(avg-tc.avg) > 1e-9 || len(p.Errors) != tc.errors || p.Test != "RDMA_Write BW Test" {
				t.Errorf("got device %q link %q rows %d avg %v errors %q; want %q %q %d %v %d", p.Device, p.LinkType, len(p.Rows), avg, p.Errors, tc.device, tc.link, tc.rows, tc.avg, tc.errors)
			}
		})
	}
}

func TestParsePerftestErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bad number", " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 10 0.00 x 0.1\n", "line 2"},
		{"no unit", " #bytes #iterations BW peak BW average MsgRate\n", "line 1: header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePerftest(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// An MB/sec table (a run without --report_gbits) in Gb/s: perftest's MB is 2^20 bytes.
	p, err := ParsePerftest(strings.NewReader(" #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n 65536 10 11000.00 11000.00 0.1\n"))
	if v, ok := p.AvgGbps(); err != nil || !ok || math.Abs(v-92.274688) > 1e-6 {
		t.Errorf("MB/sec: %v %v %+v %v", v, ok, p, err)
	}
}

func TestParseGPUBurn(t *testing.T) {
	tests := []struct {
		file   string
		gpus   int
		lines  int
		gflops []float64
		errs   []int64
	}{
		{"gpuburn/gpuburn-124-rtx-a500-healthy-10s.txt", 1, 3, []float64{3519}, []int64{0}},
		{"gpuburn/gpuburn-48-gtx1080x2-docker-healthy-temps-to-83C-excerpt.txt", 2, 7, []float64{6981, 6485}, []int64{0, 0}},
		{"gpuburn/DERIVED-gtx1080x2-gpu1-20pct-slow.txt", 2, 7, []float64{6981, 5188}, []int64{0, 0}},
		{"gpuburn/DERIVED-gtx1080x2-gpu1-gemm-errors.txt", 2, 7, []float64{6981, 6485}, []int64{0, 148}},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			b, err := ParseGPUBurn(strings.NewReader(readFixture(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			g, e, ok := b.Summary()
			if len(b.GPUs) != tc.gpus || len(b.Progress) != tc.lines || !ok || !slicesEqual(g, tc.gflops) || !slicesEqual(e, tc.errs) {
				t.Errorf("gpus %d lines %d gflops %v errs %v; want %d %d %v %v", len(b.GPUs), len(b.Progress), g, e, tc.gpus, tc.lines, tc.gflops, tc.errs)
			}
		})
	}
	b, err := ParseGPUBurn(strings.NewReader("50.0%  proc'd: 2 (10 Gflop/s) - 2 (11 Gflop/s)   errors: 0 - 1 (WARNING!)   temps: 40 C - N/A\n100.0%  proc'd: 3 (10 Gflop/s) - 3 (11 Gflop/s)   errors: 0 - 2 (DIED!)   temps: 40 C - 41 C\nTested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: FAULTY\n"))
	if _, errs, _ := b.Summary(); err != nil || !b.Died || b.Verdicts[1] != "FAULTY" || b.Verdicts[0] != "OK" || errs[1] != 2 || len(b.Progress[0].Temps) != 1 {
		t.Errorf("verdicts: %+v %v", b, err)
	}
}

func TestParseGPUBurnErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"percent", "x%  proc'd: 1 (2 Gflop/s)   errors: 0   temps: 4 C\n", "line 1: progress"},
		{"gflops", "10%  proc'd: 1 (two Gflop/s)   errors: 0   temps: 4 C\n", "no \"(N Gflop/s)\""},
		{"errors", "10%  proc'd: 1 (2 Gflop/s)   errors: many   temps: 4 C\n", "errors \"many\""},
		{"errors marked", "10%  proc'd: 1 (2 Gflop/s)   errors: lots (WARNING!)   temps: 4 C\n", "errors \"lots\""},
		{"count mismatch", "10%  proc'd: 1 (2 Gflop/s) - 1 (2 Gflop/s)   errors: 0   temps: 4 C\n", "1 error counts for 2 GPUs"},
		{"GPUs change", "10%  proc'd: 1 (2 Gflop/s)   errors: 0   temps: 4 C\n20%  proc'd: 1 (2 Gflop/s) - 1 (2 Gflop/s)   errors: 0 - 0   temps: 4 C - 4 C\n", "line 2: 2 GPUs, the line before had 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseGPUBurn(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The fuzz tests: no input panics, and what parses keeps its invariants.
func FuzzParseNVBandwidth(f *testing.F) {
	for _, p := range fixtures(f, "nvbandwidth") {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		nv, err := ParseNVBandwidth(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, tc := range nv.Tests {
			for _, r := range tc.Rows {
				if len(r.Values) != len(tc.Cols) {
					t.Fatalf("row of %d values under %d columns", len(r.Values), len(tc.Cols))
				}
				for _, v := range r.Values {
					if v < 0 || math.IsInf(v, 0) {
						t.Fatalf("value %v", v)
					}
				}
			}
		}
		_ = nvbFigures(nv, floorsFor("NVIDIA H100 80GB HBM3", 8, defaultFloors()))
	})
}

func FuzzParsePerftest(f *testing.F) {
	for _, p := range fixtures(f, "perftest") {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePerftest(strings.NewReader(in))
		if err != nil {
			return
		}
		if v, ok := p.AvgGbps(); ok && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("average %v", v)
		}
	})
}

func FuzzParseGPUBurn(f *testing.F) {
	for _, p := range fixtures(f, "gpuburn") {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ParseGPUBurn(strings.NewReader(in))
		if err != nil {
			return
		}
		g, e, ok := b.Summary()
		if ok && len(g) != len(e) {
			t.Fatalf("%d Gflop/s for %d error counts", len(g), len(e))
		}
		if ok && len(g) > 0 {
			figs := gemmFigures(g, 0.1)
			_, _ = gemmBroken(b, e)
			if len(figs) != len(g) {
				t.Fatal("a figure per GPU")
			}
		}
	})
}

func fixtures(f *testing.F, dir string) []string {
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// FuzzNCCLJudge feeds validation's NCCL judging (nccl-tests output through
// checks.ParseNCCLTests, then ncclBroken and the busbw figure) arbitrary output: no panic, and
// a judged figure is a finite, non-negative number.
func FuzzNCCLJudge(f *testing.F) {
	for _, p := range fixtures(f, "nccl") {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		run, err := checks.ParseNCCLTests(strings.NewReader(in))
		if err != nil {
			return
		}
		if _, bad := ncclBroken(TestNCCL, run, 0, ""); bad {
			return
		}
		bw, _ := run.LargeBusBW()
		fig := figure("nccl_busbw", "GB/s", "", bw, Floor{Floor: 390})
		if math.IsNaN(fig.Value) || math.IsInf(fig.Value, 0) {
			t.Fatalf("figure %v", fig.Value)
		}
	})
}

// FuzzDCGMDiagJudge feeds `dcgmi diag -j` output to the judge validation uses
// (checks.JudgeDCGMDiagOutput, over checks/node/dcgm's ParseDiag): no panic, a status always,
// and a remedy only on a failure.
func FuzzDCGMDiagJudge(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "node", "dcgm", "testdata", "diag*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		res := checks.JudgeDCGMDiagOutput(in, 2)
		if res.Status == "" || (res.Remedy != "" && res.Status != checks.StatusFail) {
			t.Fatalf("result %+v", res)
		}
	})
}
