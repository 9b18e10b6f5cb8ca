// Command allreduce-standin stands in for nccl-tests' all_reduce_perf in the fleet sweep's
// tests on the Slurm test bed, which has no GPUs and no network between its nodes.
//
// IT IS A SIMULATION OF THE NETWORK, NOT OF THE PARSER: it prints a REAL captured nccl-tests
// log (-log, from ../nccl, see SOURCE there), unchanged except for one thing, the bandwidth a
// network fault would change. When one of the -slow nodes is in the job's node list
// (SLURM_JOB_NODELIST, a Slurm hostlist), every result row's algbw and busbw are multiplied by
// -factor and its times divided by it (and the average likewise), as a slower node or link
// would make them. When one of the -fail nodes is in the list it prints -fail-log (a real log
// of a failed run) and exits 1, as that run did. When one of the -hang nodes is in the list it
// prints the real log up to its first result row (the header: command line, MPI's warnings, the
// rank lines, the column header), then waits without printing, as a run stuck in NCCL's
// bootstrap or on a link that passes no traffic does, until it is killed or -hang-for passes
// (so that a stray stand-in never outlives a test by long). The parser and the judge see real
// output; only which output, and how fast, is simulated.
//
// As all_reduce_perf under srun with MPI does, only rank 0 (SLURM_PROCID 0) prints. Arguments
// after "--" (all_reduce_perf's: -- -b 1G -e 4G ...) are ignored.
//
//	go build -o /tmp/standin ./cmd/fleet-sweep/testdata/allreduce-standin
//	SLURM_JOB_NODELIST='n[1-2]' /tmp/standin -log .../nccltests-309-h100-2node-16gpu-mpi.log -slow n2 -factor 0.5
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
)

func main() {
	logPath := flag.String("log", "", "the real log to print")
	failLog := flag.String("fail-log", "", "the real log of a failed run, printed when a -fail node is in the job")
	slow := flag.String("slow", "", "comma-separated nodes whose presence scales the bandwidth")
	fail := flag.String("fail", "", "comma-separated nodes whose presence fails the run")
	factor := flag.Float64("factor", 0.5, "the bandwidth factor for -slow")
	hang := flag.String("hang", "", "comma-separated nodes whose presence hangs the run after its header")
	hangFor := flag.Duration("hang-for", 10*time.Minute, "how long a hung run waits before it exits 1")
	flag.Parse()
	if os.Getenv("SLURM_PROCID") != "" && os.Getenv("SLURM_PROCID") != "0" {
		return
	}
	nodes, err := slurm.ExpandHostlist(os.Getenv("SLURM_JOB_NODELIST"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "allreduce-standin: SLURM_JOB_NODELIST: %v\n", err)
		os.Exit(2)
	}
	in := func(list string) string {
		for _, n := range strings.Split(list, ",") {
			if n != "" && slices.Contains(nodes, n) {
				return n
			}
		}
		return ""
	}
	if n := in(*fail); n != "" {
		b, err := os.ReadFile(*failLog)
		if err != nil {
			fmt.Fprintf(os.Stderr, "allreduce-standin: %v\n", err)
			os.Exit(2)
		}
		fmt.Printf("# all_reduce_perf STAND-IN (fleet-sweep testdata): a real failed run's log, printed because %s is in this job: a simulation of the network, not of the parser\n", n)
		os.Stdout.Write(b)
		os.Exit(1)
	}
	b, err := os.ReadFile(*logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "allreduce-standin: %v\n", err)
		os.Exit(2)
	}
	if n := in(*hang); n != "" {
		fmt.Printf("# all_reduce_perf STAND-IN (fleet-sweep testdata): a real log's header, then nothing, because %s is in this job: a simulation of a hung run\n", n)
		os.Stdout.WriteString(header(string(b)))
		time.Sleep(*hangFor)
		fmt.Fprintf(os.Stderr, "allreduce-standin: hung for %s, exiting\n", *hangFor)
		os.Exit(1)
	}
	f := 1.0
	why := "no simulated fault in this job"
	if n := in(*slow); n != "" {
		f = *factor
		why = fmt.Sprintf("bandwidth x %.2f because %s is in this job", f, n)
	}
	fmt.Printf("# all_reduce_perf STAND-IN (fleet-sweep testdata): a real log, %s: a simulation of the network, not of the parser\n", why)
	os.Stdout.WriteString(scale(string(b), f))
}

// header is the log up to its first result row.
func header(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if isRow(l) {
			return strings.Join(lines[:i], "\n") + "\n"
		}
	}
	return log
}

// isRow reports whether l is a result row: 13 fields, the first a size in bytes.
func isRow(l string) bool {
	fields := strings.Fields(l)
	if len(fields) != 13 || strings.HasPrefix(l, "#") {
		return false
	}
	_, err := strconv.ParseInt(fields[0], 10, 64)
	return err == nil
}

// scale multiplies the algbw and busbw columns of every result row, and the average bus
// bandwidth, by f, and divides the times by it; every other line is printed as it is.
func scale(log string, f float64) string {
	if f == 1 {
		return log
	}
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		fields := strings.Fields(l)
		if rest, ok := strings.CutPrefix(l, "# Avg bus bandwidth    : "); ok && len(fields) >= 6 {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				lines[i] = "# Avg bus bandwidth    : " + strconv.FormatFloat(v*f, 'f', 3, 64)
			}
			continue
		}
		if !isRow(l) {
			continue
		}
		for _, c := range []int{5, 9} { // time, algbw, busbw out of place and in place
			t, err1 := strconv.ParseFloat(fields[c], 64)
			a, err2 := strconv.ParseFloat(fields[c+1], 64)
			bw, err3 := strconv.ParseFloat(fields[c+2], 64)
			if err1 != nil || err2 != nil || err3 != nil {
				continue
			}
			fields[c] = strconv.FormatFloat(t/f, 'f', 2, 64)
			fields[c+1] = strconv.FormatFloat(a*f, 'f', 2, 64)
			fields[c+2] = strconv.FormatFloat(bw*f, 'f', 2, 64)
		}
		lines[i] = fmt.Sprintf("%12s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s", toAny(fields)...)
	}
	return strings.Join(lines, "\n")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
