package validate

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Perftest is what one run of a perftest bandwidth tool (ib_write_bw, ib_read_bw;
// github.com/linux-rdma/perftest, perftest_parameters.c and perftest_resources.c) printed:
// its settings block, then "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec]
// MsgRate[Mpps]" and a row per message size (or per interval with --run_infinitely).
type Perftest struct {
	Test     string // "RDMA_Write BW Test"
	Device   string // "Device : mlx5_0"
	LinkType string // "Link type : IB" or "Ethernet"
	// Unit is the bandwidth unit of the table: "Gb/sec" with --report_gbits, else "MB/sec".
	Unit string
	Rows []PerftestRow
	// Errors are the lines that say the test could not run ("Couldn't connect", "Unable
	// to", "Failed to", "ERROR"), in order.
	Errors []string
}

// PerftestRow is one result row.
type PerftestRow struct {
	Bytes      int64
	Iterations int64
	Peak, Avg  float64 // BW peak and BW average, in Unit
	MsgRate    float64 // Mpps
}

const perftestMaxLine = 16 << 10

// perftestErrorMarkers are the starts of perftest's lines when it cannot run.
var perftestErrorMarkers = []string{"Couldn't", "Unable to", "Failed to", "ERROR", "Error", "Conflicting CPU frequency"}

// ParsePerftest reads a perftest bandwidth tool's stdout (and stderr, appended: its errors go
// there). A table row with five columns whose values are not numbers is an error naming the
// line.
func ParsePerftest(r io.Reader) (Perftest, error) {
	var p Perftest
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), perftestMaxLine)
	inTable := false
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case line == "" || strings.HasPrefix(line, "---"):
			inTable = false
		case strings.HasSuffix(line, "BW Test"):
			p.Test = line
		case strings.HasPrefix(line, "#bytes"):
			unit, err := perftestUnit(line)
			if err != nil {
				return p, fmt.Errorf("perftest output line %d: %w", n, err)
			}
			p.Unit, inTable = unit, true
		case inTable && len(f) == 5:
			row, err := perftestRow(f)
			if err != nil {
				return p, fmt.Errorf("perftest output line %d: %q: %w", n, line, err)
			}
			p.Rows = append(p.Rows, row)
		case perftestIsError(line):
			p.Errors = append(p.Errors, line)
		default:
			setPerftestField(&p, line)
		}
	}
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("perftest output line %d: %w", n+1, err)
	}
	return p, nil
}

// perftestUnit reads the unit from the header's "BW average[Gb/sec]".
func perftestUnit(header string) (string, error) {
	_, rest, ok := strings.Cut(header, "BW average[")
	unit, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 || (unit != "Gb/sec" && unit != "MB/sec") {
		return "", fmt.Errorf("header %q: no \"BW average[Gb/sec]\" or \"[MB/sec]\" column", header)
	}
	return unit, nil
}

func perftestRow(f []string) (PerftestRow, error) {
	var r PerftestRow
	var err error
	if r.Bytes, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.Bytes <= 0 {
		return r, fmt.Errorf("#bytes %q is not a size", f[0])
	}
	if r.Iterations, err = strconv.ParseInt(f[1], 10, 64); err != nil || r.Iterations < 0 {
		return r, fmt.Errorf("#iterations %q is not a count", f[1])
	}
	vals := []*float64{&r.Peak, &r.Avg, &r.MsgRate}
	for i, s := range f[2:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return r, fmt.Errorf("%q is not a rate", s)
		}
		*vals[i] = v
	}
	return r, nil
}

func perftestIsError(line string) bool {
	for _, m := range perftestErrorMarkers {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}

// setPerftestField reads the settings block's "Key : value" pairs that matter (two may share
// a line: " Dual-port : OFF  Device : mlx5_0").
func setPerftestField(p *Perftest, line string) {
	for _, key := range []struct {
		name string
		dst  *string
	}{{"Device", &p.Device}, {"Link type", &p.LinkType}} {
		i := strings.Index(line, key.name)
		if i < 0 {
			continue
		}
		rest := strings.TrimSpace(line[i+len(key.name):])
		if !strings.HasPrefix(rest, ":") {
			continue
		}
		if f := strings.Fields(rest[1:]); len(f) > 0 {
			*key.dst = f[0]
		}
	}
}

// perftestMBPerGb converts perftest's MB/sec to Gb/s: its MB is 2^20 bytes (print_report_bw
// divides by format_factor 0x100000 for MB/sec and 125000000 for Gb/sec, perftest_resources.c).
const perftestMBPerGb = float64(1<<20) * 8 / 1e9

// AvgGbps is the run's average bandwidth in Gb/s: the mean of the "BW average" column over the
// rows of the largest message size (one row in a normal run, one per interval with
// --run_infinitely), converted from MB/sec where the run was not given --report_gbits. ok is
// false when there is no row.
func (p Perftest) AvgGbps() (float64, bool) {
	if len(p.Rows) == 0 || (p.Unit != "Gb/sec" && p.Unit != "MB/sec") {
		return 0, false
	}
	factor := 1.0
	if p.Unit == "MB/sec" {
		factor = perftestMBPerGb
	}
	var largest int64
	for _, r := range p.Rows {
		largest = max(largest, r.Bytes)
	}
	sum, k := 0.0, 0
	for _, r := range p.Rows {
		if r.Bytes == largest {
			sum += r.Avg
			k++
		}
	}
	return sum / float64(k) * factor, true
}
