package checks

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// NCCLRun is what one run of an nccl-tests binary (all_reduce_perf) printed on stdout. The
// format is nccl-tests' src/common.cu (NVIDIA/nccl-tests): a "#" header, one row per message
// size, then a "#" summary. Fields a run did not print keep the values ParseNCCLTests starts
// from: empty, 0 or -1 as each field says.
type NCCLRun struct {
	// TestsVersion is nccl-tests' own version from "# nccl-tests version 2.17.8 ...";
	// empty before nccl-tests 2.17, which did not print it.
	TestsVersion string
	// NCCLVersion is the NCCL library in use: "2.29.2" from that line's nccl-library=22902,
	// or "2.18.3+cuda12.2" from an "NCCL INFO NCCL version" line (NCCL_DEBUG=INFO).
	NCCLVersion string
	Threads     int // "# nThread 1 nGpus 8 ...": nThread; 0 when absent
	GPUs        int // the same line's nGpus (GPUs per thread, -g); 0 when absent
	// Validation is the same line's "validation: N", the -c option: 0 means the data was
	// not checked and every #wrong is "N/A". -1 when absent.
	Validation int
	Ranks      []NCCLRank // the "#  Rank" lines, in order
	Rows       []NCCLRow  // the result rows, in order
	// OutOfBounds is "# Out of bounds values : N OK|FAILED": how many results failed the
	// data check. -1 when the line is absent: the run did not reach its summary.
	OutOfBounds int64
	// AvgBusBW is "# Avg bus bandwidth : X" in GB/s, the mean busbw over every row (small
	// messages included); -1 when absent.
	AvgBusBW float64
	// Failures are the lines that report a failed call or test, trimmed, in order:
	// "Test CUDA failure", "Test NCCL failure", "Test timeout" (CUDACHECK, NCCLCHECK and -T
	// in src/common.h and common.cu), the " .. host pid N: Test failure file:line" trace
	// that follows them, and an average bus bandwidth marked FAILED (NCCL_TESTS_MIN_BW).
	Failures []string
	// Warnings are NCCL's own "NCCL WARN" lines (printed with NCCL_DEBUG=WARN or INFO). They
	// explain a failure; alone they do not make one, since NCCL warns about harmless things too.
	Warnings []string
}

// NCCLRank is one "#  Rank  0 Group  0 Pid 295203 on node005 device  0 [0x18] NVIDIA H100
// 80GB HBM3" line: which GPU of which host took that rank.
type NCCLRank struct {
	Rank   int
	Host   string
	Device int    // CUDA device index
	BusID  string // as printed in brackets: "0x18" (PCI bus number) or "0009:01:00"
	Name   string // CUDA device name, the same as NVML's: "NVIDIA H100 80GB HBM3"
}

// NCCLRow is one result row: one message size, timed out of place and in place.
type NCCLRow struct {
	Size       int64  // size (B), the bytes each rank sends
	Count      int64  // count (elements)
	Type       string // type: "float"
	RedOp      string // redop: "sum"
	OutOfPlace NCCLResult
	InPlace    NCCLResult
}

// NCCLResult is one half of a row.
type NCCLResult struct {
	TimeUS float64 // time (us), or cputime with -C 1
	AlgBW  float64 // algbw (GB/s)
	BusBW  float64 // busbw (GB/s)
	// Wrong is #wrong, the number of wrong elements. -1 when not reported: "N/A" (-c 0),
	// a negative value, or an nccl-tests older than 2.13 whose column is "error", the
	// largest deviation rather than a count (its "Out of bounds values" still counts).
	Wrong int64
}

// ncclFailureMarkers are the texts nccl-tests prints when a call or the test fails
// (src/common.h CUDACHECK, NCCLCHECK, TESTCHECK; src/common.cu "Test timeout"). They are
// searched anywhere in a line: a failure during a size is printed after that row's first
// columns, on the same line.
var ncclFailureMarkers = []string{"Test CUDA failure", "Test NCCL failure", "Test timeout", "Test failure"}

// ncclRankLine matches a "#  Rank" line without its "#", in the forms with and without the
// "Group N" column (added in nccl-tests 2.11).
var ncclRankLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
})

// ncclMaxLine bounds one line of output; Exec bounds the whole.
const ncclMaxLine = 1 << 20

// ParseNCCLTests reads the stdout of an nccl-tests binary such as all_reduce_perf. Lines it
// does not know (a shell prompt, NCCL INFO lines, blank lines, a row cut short by a crash)
// are skipped. A row with the shape of a result (two whole numbers, then 12 or 13 columns in
// all) whose values are not numbers is an error naming the line, as are header and summary
// lines whose numbers are not numbers: output that garbled cannot be judged.
func ParseNCCLTests(r io.Reader) (NCCLRun, error) {
	run := NCCLRun{Validation: -1, OutOfBounds: -1, AvgBusBW: -1}
	// The "#wrong" column counts wrong elements since nccl-tests 2.13; before, it was
	// "error", the largest deviation, which is not a count. A run without a column header
	// is taken to be the current format.
	wrongIsCount := true
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), ncclMaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case line == "":
		case ncclIsFailure(line):
			run.Failures = append(run.Failures, line)
		case strings.Contains(line, "NCCL WARN"):
			run.Warnings = append(run.Warnings, line)
		case strings.HasPrefix(line, "#"):
			err = parseNCCLComment(&run, strings.TrimSpace(line[1:]), &wrongIsCount)
		case strings.Contains(line, "NCCL INFO NCCL version "):
			if run.NCCLVersion == "" {
				_, v, _ := strings.Cut(line, "NCCL INFO NCCL version ")
				run.NCCLVersion = strings.TrimSpace(v)
			}
		default:
			var row NCCLRow
			var ok bool
			row, ok, err = parseNCCLRow(line, wrongIsCount)
			if ok && err == nil {
				run.Rows = append(run.Rows, row)
			}
		}
		if err != nil {
			return run, fmt.Errorf("nccl-tests output line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return run, fmt.Errorf("read nccl-tests output after line %d: %w", n, err)
	}
	return run, nil
}

func ncclIsFailure(line string) bool {
	for _, m := range ncclFailureMarkers {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// parseNCCLComment reads one "#" line, given without its "#".
func parseNCCLComment(run *NCCLRun, body string, wrongIsCount *bool) error {
	switch {
	case strings.HasPrefix(body, "nccl-tests version "):
		// "nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902"
		f := strings.Fields(body)
		run.TestsVersion = f[2]
		for _, kv := range f[3:] {
			if v, ok := strings.CutPrefix(kv, "nccl-library="); ok {
				code, err := strconv.Atoi(v)
				if err != nil || code <= 0 {
					return fmt.Errorf("nccl-library=%q is not a version code", v)
				}
				run.NCCLVersion = ncclVersionFromCode(code)
			}
		}
	case strings.HasPrefix(body, "nThread "):
		return parseNCCLSetup(run, body)
	case strings.HasPrefix(body, "Rank "):
		m := ncclRankLine().FindStringSubmatch(body)
		if m == nil {
			return fmt.Errorf("rank line %q: want \"Rank N [Group N] Pid N on HOST device N [BUS] NAME\"", body)
		}
		rank, err1 := strconv.Atoi(m[1])
		dev, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("rank line %q: rank or device is not a number", body)
		}
		run.Ranks = append(run.Ranks, NCCLRank{Rank: rank, Host: m[2], Device: dev, BusID: m[4], Name: strings.TrimSpace(m[5])})
	case strings.HasPrefix(body, "Out of bounds values"):
		// "Out of bounds values : 0 OK" or "... : 4 FAILED"
		_, v, _ := strings.Cut(body, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			return fmt.Errorf("out of bounds line %q has no count", body)
		}
		c, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || c < 0 {
			return fmt.Errorf("out of bounds count %q is not a count", f[0])
		}
		run.OutOfBounds = c
	case strings.HasPrefix(body, "Avg bus bandwidth"):
		// "Avg bus bandwidth    : 439.369", with " OK" or " FAILED" when NCCL_TESTS_MIN_BW is set
		_, v, _ := strings.Cut(body, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			return fmt.Errorf("average bus bandwidth line %q has no value", body)
		}
		bw, err := parseNCCLFloat(f[0])
		if err != nil || bw < 0 {
			return fmt.Errorf("average bus bandwidth %q is not a bandwidth", f[0])
		}
		run.AvgBusBW = bw
		if len(f) > 1 && f[1] == "FAILED" {
			run.Failures = append(run.Failures, "# "+body)
		}
	case strings.Contains(body, "busbw"):
		// The column header: "size count type redop root time algbw busbw #wrong time ...".
		*wrongIsCount = strings.Contains(body, "#wrong")
	}
	return nil
}

// parseNCCLSetup reads the line of the run's parameters: "nThread 1 nGpus 8 minBytes 8
// maxBytes 134217728 step: 2(factor) ... validation: 1 graph: 0".
func parseNCCLSetup(run *NCCLRun, body string) error {
	f := strings.Fields(body)
	for i := 0; i+1 < len(f); i++ {
		var dst *int
		switch f[i] {
		case "nThread":
			dst = &run.Threads
		case "nGpus":
			dst = &run.GPUs
		case "validation:":
			dst = &run.Validation
		default:
			continue
		}
		v, err := strconv.Atoi(f[i+1])
		if err != nil || v < 0 {
			return fmt.Errorf("%s %q is not a count", strings.TrimSuffix(f[i], ":"), f[i+1])
		}
		*dst = v
		i++
	}
	return nil
}

// parseNCCLRow reads a result row. ok is false for a line that is not one: a row needs a
// whole number in each of its first two columns and 12 columns (before nccl-tests added
// "root") or 13.
func parseNCCLRow(line string, wrongIsCount bool) (row NCCLRow, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) != 12 && len(f) != 13 || !ncclAllDigits(f[0]) || !ncclAllDigits(f[1]) {
		return NCCLRow{}, false, nil
	}
	if row.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return NCCLRow{}, true, fmt.Errorf("size %q: %w", f[0], ncclNumErr(err))
	}
	if row.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return NCCLRow{}, true, fmt.Errorf("count %q: %w", f[1], ncclNumErr(err))
	}
	row.Type, row.RedOp = f[2], f[3]
	rest := f[4:]
	if len(f) == 13 {
		if _, err := strconv.Atoi(f[4]); err != nil {
			return NCCLRow{}, true, fmt.Errorf("root %q is not a number", f[4])
		}
		rest = f[5:]
	}
	if row.OutOfPlace, err = parseNCCLResult(rest[:4], wrongIsCount); err != nil {
		return NCCLRow{}, true, fmt.Errorf("out-of-place %w", err)
	}
	if row.InPlace, err = parseNCCLResult(rest[4:], wrongIsCount); err != nil {
		return NCCLRow{}, true, fmt.Errorf("in-place %w", err)
	}
	return row, true, nil
}

// parseNCCLResult reads "time algbw busbw #wrong".
func parseNCCLResult(f []string, wrongIsCount bool) (NCCLResult, error) {
	var r NCCLResult
	for i, dst := range []*float64{&r.TimeUS, &r.AlgBW, &r.BusBW} {
		v, err := parseNCCLFloat(f[i])
		if err != nil {
			return NCCLResult{}, fmt.Errorf("%s %q is not a number", []string{"time", "algbw", "busbw"}[i], f[i])
		}
		*dst = v
	}
	r.Wrong = -1
	if !wrongIsCount || f[3] == "N/A" {
		return r, nil
	}
	// "%5g" of a double since nccl-tests 2.13: "0", "96", and "1.04858e+06" for large counts.
	w, err := strconv.ParseFloat(f[3], 64)
	if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
		return NCCLResult{}, fmt.Errorf("#wrong %q is not a count", f[3])
	}
	if w >= 0 {
		r.Wrong = int64(min(math.Round(w), math.MaxInt64/2))
	}
	return r, nil
}

// parseNCCLFloat reads a number as printf("%f") writes it, including glibc's "-nan".
func parseNCCLFloat(s string) (float64, error) {
	if strings.EqualFold(s, "-nan") {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, ncclNumErr(err)
	}
	return v, nil
}

func ncclAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ncclNumErr drops strconv's repetition of the input from its error.
func ncclNumErr(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

// ncclVersionFromCode spells NCCL_VERSION_CODE: major*10000 + minor*100 + patch since NCCL
// 2.9, major*1000 + minor*100 + patch before (nccl.h NCCL_VERSION).
func ncclVersionFromCode(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// Models lists the GPU names of the ranks, each once, in rank order.
func (r NCCLRun) Models() []string {
	var out []string
	for _, rk := range r.Ranks {
		if !slices.Contains(out, rk.Name) {
			out = append(out, rk.Name)
		}
	}
	return out
}

// Hosts lists the hosts of the ranks, each once, in rank order.
func (r NCCLRun) Hosts() []string {
	var out []string
	for _, rk := range r.Ranks {
		if !slices.Contains(out, rk.Host) {
			out = append(out, rk.Host)
		}
	}
	return out
}

// Completed reports whether the run printed its summary ("# Out of bounds values").
func (r NCCLRun) Completed() bool { return r.OutOfBounds >= 0 }

// LargeBusBW is the run's bus bandwidth at large messages, judged as nccl_allreduce judges a
// node: the best busbw, out of place or in place, among the rows of at least 1 GiB (or of the
// largest size, when the run stopped below), and that row's size. It is 0 and the largest size
// when no such row has a finite busbw. A multi-node run is judged the same way.
func (r NCCLRun) LargeBusBW() (gbps float64, size int64) {
	bw, size, _ := ncclLargeBusBW(r.Rows)
	return bw, size
}

// NCCLSize spells a message size as nodecheck's summaries do: "4 GiB", "128 MiB", "8 B".
func NCCLSize(n int64) string { return ncclSize(n) }
