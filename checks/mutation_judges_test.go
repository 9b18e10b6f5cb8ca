package checks

// Boundary tests found by mutation testing (docs/development.md, "Mutation testing"): each
// case holds a comparison or a condition of a judge that a flipped operator or a dropped
// clause got past before, with its neighbour on the other side of the boundary.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// TestThermalNoShutdownTemperature: a GPU that reports a slowdown temperature but no shutdown
// temperature (0, or no margin) is judged by its slowdown temperature alone; it is never "at
// its shutdown temperature (0 C)". Both forms, with the slowdown boundary and its neighbour.
func TestThermalNoShutdownTemperature(t *testing.T) {
	cfg := settings[*gpuThermalConfig](config.Default(Schema()), idGPUThermal)
	abs := func(c int) node.GPU {
		return sigGPU(func(g *node.GPU) { g.Thermal = &node.Thermal{GPUC: c, SlowdownC: 89} })
	}
	margin := func(m int) node.GPU {
		return sigGPU(func(g *node.GPU) { g.Thermal = &node.Thermal{GPUC: 30, MarginC: new(m), SlowdownMarginC: new(-2)} })
	}
	const ok = "1 GPU under their slowdown and max operating temperatures"
	for _, tc := range []struct {
		name string
		g    node.GPU
		want brief
	}{
		{"absolute, 40 C", abs(40), brief{"", "ok", ok}},
		{"absolute, one under slowdown", abs(88), brief{"", "ok", ok}},
		{"absolute, at slowdown", abs(89), brief{"", "fail", "gpu 0 (0000:19:00.0): 89 C, at its slowdown temperature (89 C): HW slowdown cuts its clocks by half or more"}},
		{"margin, 0 C below T.Limit", margin(0), brief{"", "ok", ok}},
		{"margin, one above slowdown", margin(-1), brief{"", "ok", ok}},
		{"margin, at slowdown", margin(-2), brief{"", "fail", "gpu 0 (0000:19:00.0): -2 C below T.Limit, at its slowdown temperature (-2 C below T.Limit): HW slowdown cuts its clocks by half or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUThermal([]node.GPU{tc.g}, cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGresDeviceBoundaries: /dev/nvidia0 (minor 0, the boundary of "an NVIDIA GPU file")
// missing alone is the driver's (reboot), like /dev/nvidia1; a MIG capability file missing is
// configuration (admin). A device file with the right minor but another major is not the GPU.
func TestGresDeviceBoundaries(t *testing.T) {
	ctl := gresWant{file: "/dev/nvidiactl", where: "needed by every NVIDIA GPU", minor: nvidiactlMinor}
	missing := devAnswer{dn: node.DevNode{Missing: true}}
	ctlOK := devAnswer{dn: charDev(nvidiaMajor, nvidiactlMinor)}
	for _, tc := range []struct {
		name       string
		want       gresWant
		found      devAnswer
		status     Status
		summary    string
		remedy     Remedy
		wantDetail string
	}{
		{"nvidia0 missing alone", gresWant{file: "/dev/nvidia0", where: "gres.conf:2", minor: 0}, missing, StatusFail,
			"/dev/nvidia0 missing (gres.conf:2)", RemedyReboot, "missing"},
		{"nvidia1 missing", gresWant{file: "/dev/nvidia1", where: "gres.conf:2", minor: 1}, missing, StatusFail,
			"/dev/nvidia1 missing (gres.conf:2)", RemedyReboot, "missing"},
		{"MIG capability missing", gresWant{file: "/dev/nvidia-caps/nvidia-cap21", where: "gres.conf:3", minor: -1}, missing, StatusFail,
			"/dev/nvidia-caps/nvidia-cap21 missing (gres.conf:3)", RemedyAdmin, "missing"},
		{"nvidia0 with another major", gresWant{file: "/dev/nvidia0", where: "gres.conf:2", minor: 0}, devAnswer{dn: charDev(194, 0)}, StatusFail,
			"/dev/nvidia0 is char 194:0, want 195:0 (gres.conf:2)", RemedyAdmin, "char 194:0"},
		{"nvidia0 with the NVIDIA major", gresWant{file: "/dev/nvidia0", where: "gres.conf:2", minor: 0}, devAnswer{dn: charDev(195, 0)}, StatusOK,
			"2 device files from gres.conf present as character devices (/dev/nvidia0,/dev/nvidiactl)", "", "char 195:0"},
		{"MIG capability, any major", gresWant{file: "/dev/nvidia-caps/nvidia-cap21", where: "gres.conf:3", minor: -1}, devAnswer{dn: charDev(508, 21)}, StatusOK,
			"2 device files from gres.conf present as character devices (/dev/nvidia-caps/nvidia-cap21,/dev/nvidiactl)", "", "char 508:21"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGresDevices([]gresWant{tc.want, ctl}, []devAnswer{tc.found, ctlOK}, nil)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.status), tc.summary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if d := got.Details[0]; d.Remedy != tc.remedy || d.Observed != tc.wantDetail {
				t.Errorf("detail remedy %q observed %q, want %q %q", d.Remedy, d.Observed, tc.remedy, tc.wantDetail)
			}
		})
	}
}

// TestGPUCountNVMLDownBoundaries: with NVML down and no GPU in slurm.conf, one NVIDIA GPU on
// the bus fails the node (something has a GPU the driver cannot reach); none skips.
func TestGPUCountNVMLDownBoundaries(t *testing.T) {
	down := node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}
	for _, tc := range []struct {
		name   string
		bus    []string
		exp    gpuExpectation
		want   brief
		remedy Remedy
	}{
		{"one GPU on the bus, none in slurm.conf", []string{"0000:19:00.0"}, gpuExpectation{}, brief{"", "fail", "NVML init: ERROR_DRIVER_NOT_LOADED, 1 NVIDIA GPU on PCI"}, remedyOf(nvmlInitFault(down.Init))},
		{"no GPU on the bus, none in slurm.conf", nil, gpuExpectation{}, brief{"", "skip", "no GPU Gres for cpu01 in slurm.conf and no NVIDIA GPU on the PCI bus (NVML init: ERROR_DRIVER_NOT_LOADED)"}, ""},
		// slurm.conf expects GPUs: with one on the bus the driver is to blame, with none the
		// GPUs themselves are gone.
		{"one GPU on the bus, slurm.conf expects 2", []string{"0000:19:00.0"}, gpuExpectation{count: 2, specs: []slurm.GresSpec{{Name: "gpu", Count: 2}}},
			brief{"", "fail", "NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 2 GPUs"}, remedyOf(nvmlInitFault(down.Init))},
		{"no GPU on the bus, slurm.conf expects 2", nil, gpuExpectation{count: 2, specs: []slurm.GresSpec{{Name: "gpu", Count: 2}}},
			brief{"", "fail", "NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 2 GPUs"}, remedyOf(faultGPUsShort)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUCount("cpu01", tc.bus, down, tc.exp)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Remedy != tc.remedy {
				t.Errorf("remedy %q, want %q", got.Remedy, tc.remedy)
			}
		})
	}
}

// TestThermalMissingFacts: a GPU that reports its limits but no temperature is "temperatures
// not reported", not judged by its limits; one that reports a T.Limit margin but no slowdown
// margin (and no absolute slowdown) is "slowdown temperature not reported"; a GPU with no max
// operating temperature (0) is judged by its slowdown temperature only.
func TestThermalMissingFacts(t *testing.T) {
	cfg := settings[*gpuThermalConfig](config.Default(Schema()), idGPUThermal)
	thermal := func(th node.Thermal) node.GPU { return sigGPU(func(g *node.GPU) { g.Thermal = &th }) }
	for _, tc := range []struct {
		name string
		g    node.GPU
		want brief
	}{
		{"limits without a temperature", thermal(node.Thermal{SlowdownC: 89, ShutdownC: 92, GPUMaxC: 87}),
			brief{"", "error", "gpu 0 (0000:19:00.0): temperatures not reported by NVML (h100 GPUs report them): not judged"}},
		{"a margin without a slowdown margin", thermal(node.Thermal{GPUC: 30, MarginC: new(57)}),
			brief{"", "error", "gpu 0 (0000:19:00.0): slowdown temperature not reported by NVML (h100 GPUs report them): not judged"}},
		{"a margin and a slowdown margin", thermal(node.Thermal{GPUC: 30, MarginC: new(57), SlowdownMarginC: new(-2)}),
			brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}},
		{"no max operating temperature, 40 C", thermal(node.Thermal{GPUC: 40, SlowdownC: 89, ShutdownC: 92}),
			brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}},
		{"no max operating margin, at T.Limit", thermal(node.Thermal{GPUC: 30, MarginC: new(0), SlowdownMarginC: new(-2), ShutdownMarginC: new(-8)}),
			brief{"", "ok", "1 GPU under their slowdown and max operating temperatures"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUThermal([]node.GPU{tc.g}, cfg)
			assertRemedies(t, got)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemoryBoundaries: one uncorrectable error is a fail (zero is not); a remap that failed
// is reported once, as failed, even when also pending; retired pages at the limit fail
// without the "over 15 double-bit pages" warning, which starts at 16 below the limit.
func TestMemoryBoundaries(t *testing.T) {
	cfg := gpuMemoryErrors{}.Section().(*gpuMemoryErrorsConfig)
	h100 := func(f func(g *node.GPU)) node.GPU {
		g := node.GPU{Index: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:19:00.0", ECC: eccOn(), RemappedRows: &node.RemappedRows{}}
		f(&g)
		return g
	}
	// v100 retires pages (see azureRetired); sbe and dbe are its retired pages.
	v100 := func(sbe, dbe int) node.GPU {
		return node.GPU{Index: 0, Name: "Tesla V100-SXM2-32GB", PCIBusID: "00000000:19:00.0", ECC: eccOn(),
			RetiredPages: &node.RetiredPages{SingleBit: sbe, DoubleBit: dbe}}
	}
	limit := cfg.RetiredPagesLimit
	for _, tc := range []struct {
		name   string
		g      node.GPU
		status Status
		msg    string // the GPU's detail message
	}{
		{"no uncorrectable error", h100(func(*node.GPU) {}), StatusOK, ""},
		{"one uncorrectable error", h100(func(g *node.GPU) { g.ECC.VolatileUncorrected = eccCount(1) }), StatusFail,
			"1 uncorrectable ECC error since driver load: reset the GPU"},
		{"remap failed and pending: failed only", h100(func(g *node.GPU) { g.RemappedRows.Failed, g.RemappedRows.Pending = true, true }), StatusFail,
			"row remapping failed: replace the GPU"},
		{"15 double-bit pages: no warning", v100(0, 15), StatusOK, ""},
		{"16 double-bit pages: a warning", v100(0, 16), StatusWarn,
			"16 pages retired after double-bit errors (over 15): run dcgmi diag -r 3 and watch for more"},
		{"one page under the limit", v100(limit-17, 16), StatusWarn,
			"16 pages retired after double-bit errors (over 15): run dcgmi diag -r 3 and watch for more"},
		{"at the limit: the limit only", v100(limit-16, 16), StatusFail,
			fmt.Sprintf("%d retired pages (limit %d): replace the GPU", limit, limit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGPUMemory([]node.GPU{tc.g}, cfg)
			assertRemedies(t, got)
			if got.Status != tc.status {
				t.Errorf("status %s (%s), want %s", got.Status, got.Summary, tc.status)
			}
			if tc.msg != "" && (len(got.Details) == 0 || got.Details[0].Message != tc.msg) {
				t.Errorf("details %+v, want the message %q", got.Details, tc.msg)
			}
		})
	}
}

// TestOverTimeSectionBoundaries: a warn level equal to its fail level, and a window equal to
// min_span, are accepted; their neighbours are refused (TestHistorySections).
func TestOverTimeSectionBoundaries(t *testing.T) {
	runSectionCases(t, []sectionCase{
		{name: "rates warn equal to fail", toml: "[checks.gpu_error_rates]\nnvlink_replay_warn_per_hour = 60.0\n",
			want: func(c *config.Config) any {
				return settings[*gpuErrorRatesConfig](c, idGPUErrorRates).rules(history.DefaultRules()).Rates[history.NVLinkReplay].Warn
			}, wantVal: 60.0},
		{name: "rates window equal to min_span", toml: "[checks.gpu_error_rates]\nwindow = \"5m\"\n",
			want: func(c *config.Config) any { return settings[*gpuErrorRatesConfig](c, idGPUErrorRates).Window }, wantVal: 5 * time.Minute},
		{name: "rates window just under min_span", toml: "[checks.gpu_error_rates]\nwindow = \"4m59s\"\n",
			wantErr: "nodecheck.toml:2: checks.gpu_error_rates.window = \"4m59s\" is shorter than min_span = \"5m0s\": no rate would fit in it"},
		{name: "flaps warn equal to fail", toml: "[checks.ib_flaps]\nwarn_at = 3\n",
			want: func(c *config.Config) any { return settings[*ibFlapsConfig](c, idIBFlaps).WarnAt }, wantVal: 3},
	})
}

// TestJudgeRatesOneRated: one GPU with a rate that is fine and one with only a first reading
// judge the node ok (the boundary: one rated); none rated is a skip.
func TestJudgeRatesOneRated(t *testing.T) {
	cfg := settings[*gpuErrorRatesConfig](config.Default(Schema()), idGPUErrorRates)
	ok := history.Judgement{Rule: "rate_ecc_corrected", Status: history.StatusOK, Target: "gpu", Device: "gpu 0", Summary: "fine"}
	first := history.Judgement{Rule: "rate_ecc_corrected", Status: history.StatusSkip, Target: "gpu", Device: "gpu 1", Summary: "gpu 1: one reading so far"}
	for _, tc := range []struct {
		name string
		js   []history.Judgement
		want brief
	}{
		{"one rated, one waiting", []history.Judgement{ok, first}, brief{"", "ok", "1 GPU: every counter below its warn rate (worst over 24h); 1 without a rate yet"}},
		{"none rated", []history.Judgement{first}, brief{"", "skip", "no rate yet on 1 GPU: one reading of the counters so far; a rate needs two at least 5m apart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeRates(&runHistory{}, tc.js, cfg)
			if diff := cmp.Diff(tc.want, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigBoundaries: the largest PCIe width (x32) is a valid min_width and x33 is not; an
// InfiniBand port selector names port 1 and up, never port 0; a clock event reason may be
// listed twice in one list, not in both.
func TestConfigBoundaries(t *testing.T) {
	for _, tc := range []struct {
		toml string
		ok   bool
	}{
		{"[checks.pcie_link]\nmin_width = 32\n", true},
		{"[checks.pcie_link]\nmin_width = 33\n", false},
		{"[checks.ib_ports]\ndevices = [\"mlx5_0/1\"]\n", true},
		{"[checks.ib_ports]\ndevices = [\"mlx5_0/0\"]\n", false},
		{"[checks.ib_ports]\nexclude_devices = [\"mlx5_0/0\"]\n", false},
		// A reason twice in one list is harmless; in both lists it is a contradiction.
		{"[checks.gpu_clocks]\nfail = [\"hw_slowdown\", \"hw_slowdown\"]\n", true},
		{"[checks.gpu_clocks]\nfail = [\"hw_slowdown\"]\nwarn = [\"hw_slowdown\"]\n", false},
	} {
		_, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want accepted: %v", tc.toml, err, tc.ok)
		}
	}
}

// TestNCCLBoundaries: busbw equal to the threshold passes and just under it fails; a sweep
// that reaches exactly 1 GiB is judged by the built-in threshold, one that stops below it
// only warns; one wrong element is wrong data.
func TestNCCLBoundaries(t *testing.T) {
	row := func(size int64, bw float64, wrong int64) NCCLRow {
		return NCCLRow{Size: size, Count: size / 4, Type: "float", RedOp: "sum",
			OutOfPlace: NCCLResult{TimeUS: 1000, AlgBW: bw / 1.75, BusBW: bw, Wrong: wrong}, InPlace: NCCLResult{TimeUS: 1000, AlgBW: bw / 1.75, BusBW: bw - 10, Wrong: 0}}
	}
	outcome := func(rows ...NCCLRow) ncclOutcome {
		return ncclOutcome{run: NCCLRun{Validation: 1, Rows: rows, OutOfBounds: 0, AvgBusBW: -1}, min: 360, minSource: "built-in for H100 SXM",
			argv: []string{"/usr/bin/all_reduce_perf"}}
	}
	for _, tc := range []struct {
		name   string
		o      ncclOutcome
		status Status
	}{
		{"at the threshold", outcome(row(1<<30, 360, 0)), StatusOK},
		{"just under it", outcome(row(1<<30, 359.99, 0)), StatusFail},
		{"a sweep ending at exactly 1 GiB is judged", outcome(row(1<<29, 100, 0), row(1<<30, 200, 0)), StatusFail},
		{"a sweep ending just below 1 GiB only warns", outcome(row(1<<28, 100, 0), row(1<<29, 200, 0)), StatusWarn},
		{"one wrong element", outcome(row(1<<30, 400, 1)), StatusFail},
		{"no wrong element", outcome(row(1<<30, 400, 0)), StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeNCCL(tc.o)
			assertRemedies(t, got)
			if got.Status != tc.status {
				t.Errorf("status %s (%s), want %s", got.Status, got.Summary, tc.status)
			}
		})
	}
}

// TestGPUCountOneExpected: NVML and the bus disagree on a node slurm.conf gives one GPU: a
// fail, as for more (only a node Slurm gives none warns).
func TestGPUCountOneExpected(t *testing.T) {
	bus := []string{"0000:19:00.0", "0000:3b:00.0"}
	inv := node.GPUInventory{Init: "SUCCESS", DeviceCount: 1, Devices: []node.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:19:00.0"}}}
	for _, tc := range []struct {
		name  string
		count uint64
		want  Status
	}{
		{"slurm.conf gives 1", 1, StatusFail},
		{"slurm.conf gives none", 0, StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := gpuExpectation{count: tc.count}
			if tc.count > 0 {
				exp.specs = []slurm.GresSpec{{Name: "gpu", Count: tc.count}}
			}
			got := judgeGPUCount("gpu01", bus, inv, exp)
			assertRemedies(t, got)
			if got.Status != tc.want {
				t.Errorf("status %s (%s), want %s", got.Status, got.Summary, tc.want)
			}
		})
	}
}

// TestGresDevicesNamesTheFailure: a device file that could not be stat'ed (error) listed
// before one that is missing (fail): the summary names the missing one.
func TestGresDevicesNamesTheFailure(t *testing.T) {
	wants := []gresWant{{file: "/dev/nvidia0", where: "gres.conf:2", minor: 0}, {file: "/dev/nvidia1", where: "gres.conf:2", minor: 1}}
	found := []devAnswer{{err: errors.New("stat /dev/nvidia0: permission denied")}, {dn: node.DevNode{Missing: true}}}
	got := judgeGresDevices(wants, found, nil)
	assertRemedies(t, got)
	if diff := cmp.Diff(brief{"", "fail", "/dev/nvidia1 missing (gres.conf:2) (+1 more)"}, brief{"", string(got.Status), got.Summary}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestGresWantsNvidiactl: /dev/nvidiactl is wanted where gres.conf lists a GPU device file,
// and only there: a node whose gres.conf lists only another GRES's files does not need it.
func TestGresWantsNvidiactl(t *testing.T) {
	files := func(ng slurm.NodeGres) []string {
		var out []string
		for _, w := range gresWants(ng) {
			out = append(out, w.file)
		}
		return out
	}
	gpu := slurm.NodeGres{Lines: []slurm.GresLine{{Name: "gpu", Files: []string{"/dev/nvidia0"}}}}
	fpga := slurm.NodeGres{Lines: []slurm.GresLine{{Name: "fpga", Files: []string{"/dev/fpga0"}}}}
	if diff := cmp.Diff([]string{"/dev/nvidia0", "/dev/nvidiactl"}, files(gpu)); diff != "" {
		t.Errorf("a GPU line (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/dev/fpga0"}, files(fpga)); diff != "" {
		t.Errorf("an fpga line (-want +got):\n%s", diff)
	}
}

// TestJudgeCoresEdge: Cores= reaching one past the node's last core names a core the node
// does not have; up to the last core it is the whole socket.
func TestJudgeCoresEdge(t *testing.T) {
	one := numberCores(linuxTopology(1, 16, 2), false) // cores 0-15
	for _, tc := range []struct {
		cores  string
		status Status
		part   string
	}{
		{"0-15", StatusOK, "Cores=0-15) on the node's only socket (cores 0-15)"},
		{"0-16", StatusWarn, "Cores=0-16) names cores 16, but the node has 16 cores (0-15 in Slurm's numbering"},
	} {
		v := judgeCores(coresGPU("/dev/nvidia0", "0000:19:00.0", tc.cores, -1), one, false)
		if v.Status != tc.status || !strings.Contains(v.line, tc.part) {
			t.Errorf("Cores=%s: %s %q, want %s with %q", tc.cores, v.Status, v.line, tc.status, tc.part)
		}
	}
}
