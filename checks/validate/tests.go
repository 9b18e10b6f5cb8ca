package validate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node/dcgm"
	"github.com/nodecheck/nodecheck/config/text"
)

// dcgm runs DCGM's diagnostic at level (dcgmi diag -r LEVEL -j, through the site's host
// engine) and judges it as the dcgm_diag check does. A site floor for the memory bandwidth
// goes to DCGM's memory_bandwidth plugin (levels 3 and 4), which judges it.
func (s *state) dcgm(ctx context.Context, level int) Test {
	c := s.o.Config
	argv := dcgm.DiagArgv(c.DCGMI, c.DCGMHost, level)
	if c.Floors.MemBW > 0 && level >= 3 {
		argv = append(argv, "-p", "memory_bandwidth.minimum_bandwidth="+strconv.FormatFloat(c.Floors.MemBW, 'f', 0, 64))
	}
	out, t, ok := exec(ctx, s.h, TestDCGM, argv)
	if !ok {
		return t
	}
	switch dcgm.Classify(out.Stdout, out.Stderr, out.ExitCode) {
	case dcgm.OutcomeNoHostEngine:
		return Test{Name: TestDCGM, Status: checks.StatusSkip, Summary: "no DCGM host engine answers at " + c.DCGMHost + ": start nv-hostengine (systemctl start nvidia-dcgm), or set [validate] dcgm_host"}
	case dcgm.OutcomeUsage:
		return Test{Name: TestDCGM, Status: checks.StatusSkip, Summary: c.DCGMI + " does not know dcgmi diag -j: install DCGM 3.0 or later" + lastLine(out)}
	}
	res := checks.JudgeDCGMDiagOutput([]byte(out.Stdout), level)
	return Test{Name: TestDCGM, Status: res.Status, Summary: res.Summary, Remedy: res.Remedy}
}

// nvbTests are the nvbandwidth test cases validation runs: copy-engine copies host to each
// GPU, each GPU to host, and between every pair of GPUs (reads).
var nvbTests = []string{"host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"}

// nvbandwidth runs nvbandwidth and judges each GPU's host<->device and device<->device figures.
func (s *state) nvbandwidth(ctx context.Context) Test {
	argv := append([]string{s.o.Config.NVBandwidth, "-t"}, nvbTests...)
	out, t, ok := exec(ctx, s.h, TestNVBandwidth, argv)
	if !ok {
		return t
	}
	nv, err := ParseNVBandwidth(strings.NewReader(out.Stdout))
	if err != nil {
		return Test{Name: TestNVBandwidth, Status: checks.StatusError, Summary: text.OneLine(fmt.Sprintf("cannot read nvbandwidth's output (exit %d): %s", out.ExitCode, err), 200)}
	}
	s.learn(nv.Devices)
	figs := nvbFigures(nv, s.floors())
	if len(figs) == 0 {
		return Test{Name: TestNVBandwidth, Status: checks.StatusError, Summary: fmt.Sprintf("nvbandwidth printed no bandwidth matrix (exit %d)%s", out.ExitCode, lastLine(out))}
	}
	s.report.Figures = append(s.report.Figures, figs...)
	res := judgeFigures(TestNVBandwidth, figs, nvbSummary(figs), checks.RemedyService)
	if w, bad := worst(figs); bad && w.Name == "d2d_bw" {
		res.Summary = text.OneLine(fmt.Sprintf("%s; slowest peer of %s: %s", res.Summary, w.Device, nvbSlowestPeer(nv, w.Device)), 300)
	}
	if out.ExitCode != 0 && res.Status != checks.StatusFail {
		res.Status, res.Summary = checks.StatusError, fmt.Sprintf("nvbandwidth exited %d%s", out.ExitCode, lastLine(out))
	}
	return res
}

// nvbFigures are one figure per GPU and direction: h2d_bw and d2h_bw from the CPU row, and
// d2d_bw, the slowest of the GPU's reads from its peers.
func nvbFigures(nv NVBandwidth, fl Floors) []Figure {
	var figs []Figure
	for _, d := range []struct {
		prefix, name string
		fl           Floor
	}{{"host_to_device_memcpy_", "h2d_bw", fl.H2D}, {"device_to_host_memcpy_", "d2h_bw", fl.D2H}} {
		t, ok := nv.Test(d.prefix)
		if !ok {
			continue
		}
		for i, col := range t.Cols {
			if v := t.Rows[0].Values[i]; !math.IsNaN(v) {
				figs = append(figs, figure(d.name, "GB/s", "GPU "+strconv.Itoa(col), v, d.fl))
			}
		}
	}
	if t, ok := nv.Test("device_to_device_memcpy_read_"); ok {
		for _, r := range t.Rows {
			low, peer := math.Inf(1), -1
			for i, v := range r.Values {
				if !math.IsNaN(v) && v < low {
					low, peer = v, t.Cols[i]
				}
			}
			if peer >= 0 {
				figs = append(figs, figure("d2d_bw", "GB/s", "GPU "+strconv.Itoa(r.Label), low, fl.D2D))
			}
		}
	}
	return figs
}

// nvbSlowestPeer names the peer device reads most slowly from: "GPU 0 (162.45 GB/s)".
func nvbSlowestPeer(nv NVBandwidth, device string) string {
	t, _ := nv.Test("device_to_device_memcpy_read_")
	for _, r := range t.Rows {
		if "GPU "+strconv.Itoa(r.Label) != device {
			continue
		}
		low, peer := math.Inf(1), -1
		for i, v := range r.Values {
			if !math.IsNaN(v) && v < low {
				low, peer = v, t.Cols[i]
			}
		}
		return fmt.Sprintf("GPU %d (%.2f GB/s)", peer, low)
	}
	return "unknown"
}

// nvbSummary gives each figure's range: "h2d_bw 35.03-35.39, d2h_bw 52.76-52.78 GB/s over 8 GPUs".
func nvbSummary(figs []Figure) string {
	var parts []string
	gpus := map[string]bool{}
	for _, name := range []string{"h2d_bw", "d2h_bw", "d2d_bw"} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, f := range figs {
			if f.Name == name {
				lo, hi = min(lo, f.Value), max(hi, f.Value)
				gpus[f.Device] = true
			}
		}
		if !math.IsInf(lo, 0) {
			parts = append(parts, fmt.Sprintf("%s %.2f-%.2f", name, lo, hi))
		}
	}
	return fmt.Sprintf("%s GB/s over %d GPUs", strings.Join(parts, ", "), len(gpus))
}

// ncclArgs are all_reduce_perf's: 1 to 8 GiB, doubling, on every GPU of the node.
var ncclArgs = []string{"-b", "1G", "-e", "8G", "-f", "2"}

// nccl runs all_reduce_perf across the node's GPUs (env, when given, through /usr/bin/env)
// and judges its large-message bus bandwidth and its data check.
func (s *state) nccl(ctx context.Context, name string, env []string) Test {
	if s.nGPUs == 0 {
		return Test{Name: name, Status: checks.StatusError, Summary: "cannot count the GPUs for all_reduce_perf -g: NVML unavailable and no earlier tool listed them"}
	}
	bin := s.o.Config.AllReducePerf
	argv := append(append([]string{bin}, ncclArgs...), "-g", strconv.Itoa(s.nGPUs))
	if len(env) > 0 {
		argv = append(append([]string{"/usr/bin/env"}, env...), argv...)
	}
	out, t, ok := exec(ctx, s.h, name, argv)
	if !ok {
		return t
	}
	if len(env) > 0 && out.ExitCode == 127 && strings.Contains(out.Stderr, "No such file") {
		// env(1) exits 127 when it cannot find the program.
		return Test{Name: name, Status: checks.StatusSkip, Summary: bin + " not installed: " + installHints[name]}
	}
	run, err := checks.ParseNCCLTests(strings.NewReader(out.Stdout))
	if err != nil {
		return Test{Name: name, Status: checks.StatusError, Summary: text.OneLine(fmt.Sprintf("cannot read all_reduce_perf's output (exit %d): %s", out.ExitCode, err), 200)}
	}
	s.learn(run.Models())
	if t, bad := ncclBroken(name, run, out.ExitCode, lastLine(out)); bad {
		return t
	}
	bw, size := run.LargeBusBW()
	fl := s.floors().NCCL
	fig := "nccl_busbw"
	if name == TestNCCLNet {
		fl, fig = s.floors().NCCLNet, "nccl_net_busbw"
	}
	f := figure(fig, "GB/s", "", bw, fl)
	s.report.Figures = append(s.report.Figures, f)
	return judgeFigures(name, []Figure{f}, fmt.Sprintf("busbw %.2f GB/s at %s on %d GPUs", bw, checks.NCCLSize(size), max(len(run.Ranks), s.nGPUs)), checks.RemedyAdmin)
}

// ncclBroken is the result of a run that failed or computed wrong results.
func ncclBroken(name string, run checks.NCCLRun, exit int, last string) (Test, bool) {
	var wrong int64
	for _, r := range run.Rows {
		wrong += max(r.OutOfPlace.Wrong, 0) + max(r.InPlace.Wrong, 0)
	}
	switch {
	case wrong > 0 || run.OutOfBounds > 0:
		return Test{Name: name, Status: checks.StatusFail, Remedy: checks.RemedyService,
			Summary: fmt.Sprintf("all_reduce_perf computed wrong results: %d wrong elements, %d out of bounds", wrong, max(run.OutOfBounds, 0))}, true
	case len(run.Failures) > 0:
		return Test{Name: name, Status: checks.StatusFail, Remedy: checks.RemedyAdmin, Summary: "all_reduce_perf failed: " + text.OneLine(run.Failures[0], 160)}, true
	case exit != 0:
		return Test{Name: name, Status: checks.StatusFail, Remedy: checks.RemedyAdmin, Summary: fmt.Sprintf("all_reduce_perf exited %d%s", exit, last)}, true
	case !run.Completed() || len(run.Rows) == 0:
		return Test{Name: name, Status: checks.StatusError, Summary: "all_reduce_perf printed no result rows and no summary" + last}, true
	}
	return Test{}, false
}

// ibServerGrace is how long the ib_write_bw server may run on after its client ended (a
// variable for the tests).
var ibServerGrace = 5 * time.Second

// waitOrStop waits for wg, calling stop once grace has passed without it finishing.
func waitOrStop(wg *sync.WaitGroup, grace time.Duration, stop func()) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stop()
		<-done
	}
}

// ibPortBase is the first TCP port ib_write_bw's server listens on; HCA i uses ibPortBase+i.
const ibPortBase = 18515

// ibWriteBW runs ib_write_bw in loopback on each HCA, GPUDirect from a GPU (HCA i uses GPU i
// modulo the GPUs), a server and its client on this node, each under timeout.
func (s *state) ibWriteBW(ctx context.Context, timeout time.Duration) Test {
	hcas, rates := s.hcas(ctx)
	if len(hcas) == 0 {
		return Test{Name: TestIBWriteBW, Status: checks.StatusSkip, Summary: "no InfiniBand HCA under /sys/class/infiniband: nothing to test (set [validate] hcas to name them)"}
	}
	var figs []Figure
	for i, hca := range hcas {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		f, t, ok := s.ibOne(tctx, i, hca, rates[hca])
		cancel()
		if !ok {
			return t
		}
		figs = append(figs, f)
	}
	s.report.Figures = append(s.report.Figures, figs...)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range figs {
		lo, hi = min(lo, f.Value), max(hi, f.Value)
	}
	return judgeFigures(TestIBWriteBW, figs, fmt.Sprintf("%.2f-%.2f Gb/s on %d %s", lo, hi, len(figs), text.Plural(len(figs), "HCA", "HCAs")), checks.RemedyService)
}

// hcas are the HCAs to test and each one's port rate in Gb/s (0 unknown).
func (s *state) hcas(ctx context.Context) ([]string, map[string]float64) {
	rates := map[string]float64{}
	ports, _ := s.h.IBPorts(ctx)
	var found []string
	for _, p := range ports {
		if !slices.Contains(found, p.Device) {
			found = append(found, p.Device)
		}
		rates[p.Device] = max(rates[p.Device], p.RateGbps)
	}
	if len(s.o.Config.HCAs) > 0 {
		return s.o.Config.HCAs, rates
	}
	slices.Sort(found)
	return found, rates
}

// ibOne runs one HCA's loopback.
func (s *state) ibOne(ctx context.Context, i int, hca string, rate float64) (Figure, Test, bool) {
	argv := []string{s.o.Config.IBWriteBW, "-d", hca, "-F", "--report_gbits", "-D", "10", "-p", strconv.Itoa(ibPortBase + i)}
	if s.nGPUs > 0 {
		argv = append(argv, "--use_cuda="+strconv.Itoa(i%s.nGPUs))
	}
	var wg sync.WaitGroup
	var srvOut string
	var srvT Test
	srvOK := true
	sctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, t, ok := exec(sctx, s.h, TestIBWriteBW, argv)
		srvOut, srvT, srvOK = out.Stdout+out.Stderr, t, ok
	}()
	head := s.o.IBHeadStart
	if head <= 0 {
		head = time.Second
	}
	select {
	case <-time.After(head):
	case <-ctx.Done():
	}
	out, t, ok := exec(ctx, s.h, TestIBWriteBW, append(slices.Clone(argv), "localhost"))
	// A server whose client never reached it would wait for one until the deadline: it gets
	// a few seconds to finish after its client, then its process group is killed.
	waitOrStop(&wg, ibServerGrace, stopServer)
	if !ok {
		return Figure{}, t, false
	}
	if !srvOK && srvT.Status == checks.StatusSkip {
		return Figure{}, srvT, false
	}
	p, err := ParsePerftest(strings.NewReader(out.Stdout + "\n" + out.Stderr))
	if err != nil {
		return Figure{}, Test{Name: TestIBWriteBW, Status: checks.StatusError, Summary: text.OneLine(fmt.Sprintf("%s: cannot read ib_write_bw's output: %s", hca, err), 200)}, false
	}
	bw, ok := p.AvgGbps()
	if !ok {
		why := fmt.Sprintf("exit %d", out.ExitCode)
		if len(p.Errors) > 0 {
			why = p.Errors[0]
		} else if srv, _ := ParsePerftest(strings.NewReader(srvOut)); len(srv.Errors) > 0 {
			why = "server: " + srv.Errors[0]
		}
		return Figure{}, Test{Name: TestIBWriteBW, Status: checks.StatusFail, Remedy: checks.RemedyService,
			Summary: text.OneLine(fmt.Sprintf("%s: ib_write_bw loopback measured nothing: %s", hca, why), 200)}, false
	}
	fl := s.floors().IB
	if fl.Floor == 0 && rate > 0 {
		fl.Floor, fl.Expected = round2(rate*ibFloorShare), round2(rate*ibExpectedShare)
		fl.Source = fmt.Sprintf("port rate %g Gb/s: %s", rate, ibSource)
	} else if fl.Floor == 0 {
		fl.Source = "the port's rate is unknown (no /sys/class/infiniband entry): set [validate.floors] ib_write_gbps"
	}
	return figure("ib_write_bw", "Gb/s", hca, bw, fl), Test{}, true
}

// gpuBurn loads every GPU with gpu_burn's GEMM for the burn-in time and compares the GPUs: a
// result that differs from the reference (gpu_burn's errors) fails the GPU; so does a GPU
// slower than the node's median by more than the spread.
func (s *state) gpuBurn(ctx context.Context) Test {
	bin := s.o.Config.GPUBurn
	secs := strconv.Itoa(int(s.o.Config.BurnIn / time.Second))
	argv := []string{bin, "-c", filepath.Join(filepath.Dir(bin), "compare.ptx"), secs}
	out, t, ok := exec(ctx, s.h, TestGPUBurn, argv)
	if !ok {
		return t
	}
	if out.Truncated {
		// The progress lines judged are the last ones, and errors may show only there.
		return Test{Name: TestGPUBurn, Status: checks.StatusError, Summary: fmt.Sprintf("gpu_burn printed more than nodecheck keeps (%d bytes kept): its last progress lines were not read; shorten burn_in", len(out.Stdout))}
	}
	b, err := ParseGPUBurn(strings.NewReader(out.Stdout))
	if err != nil {
		return Test{Name: TestGPUBurn, Status: checks.StatusError, Summary: text.OneLine(fmt.Sprintf("cannot read gpu_burn's output (exit %d): %s", out.ExitCode, err), 200)}
	}
	s.learn(b.GPUs)
	gflops, errs, ok := b.Summary()
	if !ok {
		return Test{Name: TestGPUBurn, Status: checks.StatusError, Summary: fmt.Sprintf("gpu_burn printed no progress line (exit %d)%s", out.ExitCode, lastLine(out))}
	}
	figs := gemmFigures(gflops, s.o.Config.Floors.GEMMSpread)
	s.report.Figures = append(s.report.Figures, figs...)
	if t, bad := gemmBroken(b, errs); bad {
		return t
	}
	return judgeFigures(TestGPUBurn, figs, fmt.Sprintf("%d GPUs, no GEMM errors, %s Gflop/s", len(gflops), spreadText(gflops)), checks.RemedyAdmin)
}

// gemmBroken fails a run where a GPU computed a wrong result or its process died.
func gemmBroken(b GPUBurn, errs []int64) (Test, bool) {
	var bad []string
	for i, e := range errs {
		if e > 0 {
			bad = append(bad, fmt.Sprintf("GPU %d: %d errors", i, e))
		}
	}
	for i := range 1024 {
		if b.Verdicts[i] == "FAULTY" && !slices.ContainsFunc(bad, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("GPU %d:", i)) }) {
			bad = append(bad, fmt.Sprintf("GPU %d: FAULTY", i))
		}
	}
	switch {
	case len(bad) > 0:
		return Test{Name: TestGPUBurn, Status: checks.StatusFail, Remedy: checks.RemedyService,
			Summary: text.OneLine("GEMM results differ from the reference (silent data corruption): "+strings.Join(bad, ", "), 200)}, true
	case b.Died:
		return Test{Name: TestGPUBurn, Status: checks.StatusFail, Remedy: checks.RemedyService, Summary: "a gpu_burn process died (DIED!) under load"}, true
	}
	return Test{}, false
}

// gemmFigures are each GPU's Gflop/s against the node's median: the floor is the median less
// the spread (SuperBench flags a GPU 10% below its peers).
func gemmFigures(gflops []float64, spread float64) []Figure {
	med := median(gflops)
	fl := Floor{Expected: round2(med), Floor: round2(med * (1 - spread)),
		Source: fmt.Sprintf("the node's median GPU less %g%% ([validate.floors] gemm_spread; SuperBench flags a GPU 10%% below its peers)", spread*100)}
	var figs []Figure
	for i, g := range gflops {
		figs = append(figs, figure("gemm_gflops", "Gflop/s", "GPU "+strconv.Itoa(i), g, fl))
	}
	return figs
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spreadText(v []float64) string {
	return fmt.Sprintf("%.0f-%.0f", slices.Min(v), slices.Max(v))
}
