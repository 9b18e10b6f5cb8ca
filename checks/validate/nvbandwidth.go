package validate

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// NVBandwidth is what one run of NVIDIA's nvbandwidth printed: its devices and, per test case,
// the bandwidth matrix (github.com/NVIDIA/nvbandwidth, output.cpp). A run may hold several
// test cases, each "Running NAME." then a title ("memcpy CE CPU(row) -> GPU(column) bandwidth
// (GB/s)"), a header of column numbers, one row per source, and "SUM NAME X".
type NVBandwidth struct {
	Version string   // "v0.4", from "nvbandwidth Version: v0.4"
	Devices []string // "Device N: NAME" lines, by N
	Tests   []NVBTest
}

// NVBTest is one test case's matrix.
type NVBTest struct {
	Name  string // "host_to_device_memcpy_ce"
	Title string // the title line
	Cols  []int  // the column header: GPU (or CPU) numbers
	Rows  []NVBRow
	Sum   float64 // "SUM NAME X"; -1 when absent
}

// NVBRow is one row: its label (a GPU number, or 0 for the CPU) and a value per column; NaN
// for "N/A" (a GPU with itself).
type NVBRow struct {
	Label  int
	Values []float64
}

// nvbMaxLine bounds one line; Exec bounds the whole output.
const nvbMaxLine = 64 << 10

// ParseNVBandwidth reads nvbandwidth's stdout. Lines it does not know (the notes, a shell
// prompt, "Waived" test cases) are skipped, and a quote marker "> " before a line, as a
// pasted output carries, is dropped. A matrix row with the wrong number of values or a value
// that is not a number is an error naming the line: a garbled matrix cannot be judged.
func ParseNVBandwidth(r io.Reader) (NVBandwidth, error) {
	var out NVBandwidth
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), nvbMaxLine)
	var cur *NVBTest
	inMatrix := false
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), ">"))
		f := strings.Fields(line)
		switch {
		case line == "":
			inMatrix = false
		case strings.HasPrefix(line, "nvbandwidth Version:"):
			out.Version = strings.TrimSpace(strings.TrimPrefix(line, "nvbandwidth Version:"))
		case strings.HasPrefix(line, "Device ") && strings.Contains(line, ":") && len(f) >= 3:
			if idx, err := strconv.Atoi(strings.TrimSuffix(f[1], ":")); err == nil && idx == len(out.Devices) {
				_, name, _ := strings.Cut(line, ":")
				out.Devices = append(out.Devices, deviceName(name))
			}
		case strings.HasPrefix(line, "Running ") && len(f) == 2:
			out.Tests = append(out.Tests, NVBTest{Name: strings.TrimSuffix(f[1], "."), Sum: -1})
			cur, inMatrix = &out.Tests[len(out.Tests)-1], false
		case strings.HasPrefix(line, "SUM ") && len(f) == 3:
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return out, fmt.Errorf("nvbandwidth output line %d: SUM %q is not a number", n, f[2])
			}
			if t := out.find(f[1]); t != nil {
				t.Sum = v
			}
			inMatrix = false
		case cur != nil && strings.Contains(line, "bandwidth (GB/s)"):
			cur.Title, cur.Cols, cur.Rows, inMatrix = line, nil, nil, true
		case inMatrix && cur.Cols == nil:
			cols, err := intFields(f)
			if err != nil {
				return out, fmt.Errorf("nvbandwidth output line %d: column header %q: %w", n, line, err)
			}
			cur.Cols = cols
		case inMatrix:
			row, err := nvbRow(f, len(cur.Cols))
			if err != nil {
				return out, fmt.Errorf("nvbandwidth output line %d: %q: %w", n, line, err)
			}
			cur.Rows = append(cur.Rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("nvbandwidth output line %d: %w", n+1, err)
	}
	return out, nil
}

func (o *NVBandwidth) find(name string) *NVBTest {
	for i := range o.Tests {
		if o.Tests[i].Name == name {
			return &o.Tests[i]
		}
	}
	return nil
}

// Test returns the first test case whose name starts with prefix ("host_to_device_memcpy_"
// finds the CE or the SM variant), with a matrix.
func (o NVBandwidth) Test(prefix string) (NVBTest, bool) {
	for _, t := range o.Tests {
		if strings.HasPrefix(t.Name, prefix) && len(t.Rows) > 0 {
			return t, true
		}
	}
	return NVBTest{}, false
}

func intFields(f []string) ([]int, error) {
	if len(f) == 0 {
		return nil, fmt.Errorf("empty")
	}
	out := make([]int, 0, len(f))
	for _, s := range f {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a device number", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func nvbRow(f []string, cols int) (NVBRow, error) {
	if len(f) != cols+1 {
		return NVBRow{}, fmt.Errorf("%d values, the header has %d columns", len(f)-1, cols)
	}
	label, err := strconv.Atoi(f[0])
	if err != nil || label < 0 {
		return NVBRow{}, fmt.Errorf("row label %q is not a device number", f[0])
	}
	row := NVBRow{Label: label, Values: make([]float64, cols)}
	for i, s := range f[1:] {
		if s == "N/A" {
			row.Values[i] = math.NaN()
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return NVBRow{}, fmt.Errorf("value %q is not a bandwidth", s)
		}
		row.Values[i] = v
	}
	return row, nil
}

// deviceName is a "Device N:" line's name without the PCI address later versions print after
// it ("NVIDIA H100 80GB HBM3 (00000000:18:00)"), so that it reads as NVML's name.
func deviceName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, " ("); i > 0 && strings.HasSuffix(s, ")") && strings.Count(s[i:], ":") >= 1 {
		s = s[:i]
	}
	return s
}
