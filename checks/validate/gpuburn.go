package validate

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// GPUBurn is what one run of gpu_burn (github.com/wilicc/gpu-burn, gpu_burn-drv.cpp) printed:
// its GPUs, a progress line every few seconds with each GPU's iterations, Gflop/s, errors (a
// result that differs from the reference GEMM) and temperature, and at the end each GPU's
// verdict ("GPU 0: OK" or "FAULTY").
type GPUBurn struct {
	GPUs     []string // "GPU N: NAME (UUID: ...)" lines, by N
	Progress []GPUBurnLine
	// Verdicts are the final "GPU N: OK|FAULTY" lines by N; empty when the run was cut short.
	Verdicts map[int]string
	// Died is set when a progress line says a GPU's process died ("DIED!").
	Died bool
}

// GPUBurnLine is one progress line: per GPU, in order.
type GPUBurnLine struct {
	Percent float64
	Gflops  []float64
	Errors  []int64
	Temps   []int
}

const gpuBurnMaxLine = 16 << 10

// ParseGPUBurn reads gpu_burn's stdout. A progress line ("N%  proc'd: ... errors: ...")
// whose fields are not numbers, or whose GPU count changes, is an error naming the line.
func ParseGPUBurn(r io.Reader) (GPUBurn, error) {
	b := GPUBurn{Verdicts: map[int]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), gpuBurnMaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.Contains(line, "proc'd:") && strings.Contains(line, "errors:"):
			pl, died, err := gpuBurnProgress(line)
			if err != nil {
				return b, fmt.Errorf("gpu_burn output line %d: %w", n, err)
			}
			if k := len(b.Progress); k > 0 && len(b.Progress[k-1].Gflops) != len(pl.Gflops) {
				return b, fmt.Errorf("gpu_burn output line %d: %d GPUs, the line before had %d", n, len(pl.Gflops), len(b.Progress[k-1].Gflops))
			}
			b.Progress = append(b.Progress, pl)
			b.Died = b.Died || died
		case strings.HasPrefix(line, "GPU "):
			gpuBurnGPULine(&b, line)
		}
	}
	if err := sc.Err(); err != nil {
		return b, fmt.Errorf("gpu_burn output line %d: %w", n+1, err)
	}
	return b, nil
}

// gpuBurnGPULine reads "GPU 0: NVIDIA ... (UUID: ...)" at the start and "GPU 0: OK" at the end.
func gpuBurnGPULine(b *GPUBurn, line string) {
	head, rest, ok := strings.Cut(strings.TrimPrefix(line, "GPU "), ":")
	idx, err := strconv.Atoi(head)
	if !ok || err != nil || idx < 0 || idx > 1024 {
		return
	}
	rest = strings.TrimSpace(rest)
	switch rest {
	case "OK", "FAULTY":
		b.Verdicts[idx] = rest
		return
	}
	if idx == len(b.GPUs) {
		name, _, _ := strings.Cut(rest, " (UUID:")
		b.GPUs = append(b.GPUs, strings.TrimSpace(name))
	}
}

// gpuBurnProgress reads "11.7%  proc'd: 2947 (7124 Gflop/s) - 2664 (6963 Gflop/s)   errors:
// 0 - 0   temps: 56 C - 73 C".
func gpuBurnProgress(line string) (GPUBurnLine, bool, error) {
	var pl GPUBurnLine
	pct, rest, _ := strings.Cut(line, "proc'd:")
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(pct), "%"), 64)
	if err != nil || v < 0 || v > 100 {
		return pl, false, fmt.Errorf("progress %q is not a percentage", strings.TrimSpace(pct))
	}
	pl.Percent = v
	procd, rest, _ := strings.Cut(rest, "errors:")
	errs, temps, _ := strings.Cut(rest, "temps:")
	for _, p := range strings.Split(procd, " - ") {
		_, g, ok := strings.Cut(p, "(")
		g, _, ok2 := strings.Cut(g, "Gflop/s)")
		gf, err := strconv.ParseFloat(strings.TrimSpace(g), 64)
		if !ok || !ok2 || err != nil || gf < 0 || math.IsInf(gf, 0) || math.IsNaN(gf) {
			return pl, false, fmt.Errorf("proc'd %q: no \"(N Gflop/s)\"", strings.TrimSpace(p))
		}
		pl.Gflops = append(pl.Gflops, gf)
	}
	died := false
	for _, e := range strings.Split(errs, " - ") {
		e = strings.TrimSpace(e)
		// A count may carry a mark after it: "(WARNING!)" when it grew since the last line,
		// "(DIED!)" when the GPU's process died (gpu_burn-drv.cpp).
		died = died || strings.Contains(e, "DIED")
		e, _, _ = strings.Cut(e, " ")
		k, err := strconv.ParseInt(e, 10, 64)
		if err != nil || k < 0 {
			return pl, false, fmt.Errorf("errors %q is not a count", e)
		}
		pl.Errors = append(pl.Errors, k)
	}
	if len(pl.Errors) != len(pl.Gflops) {
		return pl, false, fmt.Errorf("%d error counts for %d GPUs", len(pl.Errors), len(pl.Gflops))
	}
	// Temperatures are kept where they read as "N C"; they are not judged, so one that does
	// not (a GPU whose sensor gives none) is left out rather than refused.
	for _, t := range strings.Split(temps, " - ") {
		if c, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "C"))); err == nil {
			pl.Temps = append(pl.Temps, c)
		}
	}
	return pl, died, nil
}

// Summary is each GPU's figures over the run: its Gflop/s on the last progress line and its
// largest error count (gpu_burn's counts are cumulative). ok is false with no progress line.
func (b GPUBurn) Summary() (gflops []float64, errs []int64, ok bool) {
	if len(b.Progress) == 0 {
		return nil, nil, false
	}
	last := b.Progress[len(b.Progress)-1]
	errs = make([]int64, len(last.Errors))
	for _, p := range b.Progress {
		for i, e := range p.Errors {
			errs[i] = max(errs[i], e)
		}
	}
	return last.Gflops, errs, true
}
