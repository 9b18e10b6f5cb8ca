// Command pairtime times programs as processes, alternating them run by run so that a load that
// comes and goes on the machine falls on all of them alike (docs/speed.md uses it):
//
//	go build -o /tmp/empty ./scripts/pairtime/empty
//	go run ./scripts/pairtime -n 400 /tmp/empty '/usr/sbin/nodecheck version'
//
// Each argument is one command line, split at spaces (no shell, no quoting). Each round runs
// every command once, in an order that rotates from round to round; a run's time is from
// fork to the end of wait, stdout and stderr discarded. It prints, per command, the
// quartiles of its times, and the quartiles of its per-round ratio to the first command (the
// baseline): the ratio's spread is the honest error bar on a loaded machine. A command that
// exits non-zero stops the measurement (give -ok N to accept exit status N).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 200, "rounds")
	warmup := flag.Int("warmup", 5, "untimed rounds first")
	ok := flag.Int("ok", 0, "an exit status counted as success besides 0")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: pairtime [-n ROUNDS] [-warmup N] [-ok STATUS] 'BASELINE ARGS' 'COMMAND ARGS' ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	cmds := make([][]string, flag.NArg())
	for i, a := range flag.Args() {
		cmds[i] = strings.Fields(a)
		if len(cmds[i]) == 0 {
			fmt.Fprintf(os.Stderr, "pairtime: command %d is empty\n", i+1)
			os.Exit(2)
		}
	}
	times, cpu, err := measure(cmds, *n, *warmup, *ok)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pairtime: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(summary("wall", flag.Args(), times))
	fmt.Print(summary("CPU (user+sys, all threads)", flag.Args(), cpu))
}

// measure runs every command once per round, rotating the order, and returns each command's
// wall times and CPU times (the child's user and system time, from wait's rusage: what a
// loaded machine disturbs less than the wall clock) in round order.
func measure(cmds [][]string, rounds, warmup, ok int) (wall, cpu [][]time.Duration, err error) {
	wall = make([][]time.Duration, len(cmds))
	cpu = make([][]time.Duration, len(cmds))
	for r := -warmup; r < rounds; r++ {
		for k := range cmds {
			i := (k + max(r, 0)) % len(cmds)
			d, c, err := runOnce(cmds[i], ok)
			if err != nil {
				return nil, nil, err
			}
			if r >= 0 {
				wall[i] = append(wall[i], d)
				cpu[i] = append(cpu[i], c)
			}
		}
	}
	return wall, cpu, nil
}

func runOnce(argv []string, ok int) (wall, cpu time.Duration, err error) {
	c := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	err = c.Run()
	wall = time.Since(start)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == ok {
		err = nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return wall, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), nil
}

// summary is the table of one measure (wall or CPU time): per command its quartiles and, for
// all but the baseline, the quartiles of the per-round ratio to the baseline.
func summary(what string, names []string, times [][]time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rounds, order rotated each round\n", what, len(times[0]))
	fmt.Fprintf(&b, "%-50s %9s %9s %9s %9s   %s\n", "command", "min", "p25", "median", "p75", "ratio to the first: p25 median p75")
	for i, ts := range times {
		q := quartiles(ts, func(d time.Duration) float64 { return float64(d) / 1e6 })
		ratio := ""
		if i > 0 {
			rs := make([]float64, len(ts))
			for r := range ts {
				rs[r] = float64(ts[r]) / float64(times[0][r])
			}
			rq := quartiles(rs, func(f float64) float64 { return f })
			ratio = fmt.Sprintf("%.2fx %.2fx %.2fx", rq[1], rq[2], rq[3])
		}
		name := names[i]
		if len(name) > 50 {
			name = "..." + name[len(name)-47:]
		}
		fmt.Fprintf(&b, "%-50s %7.2fms %7.2fms %7.2fms %7.2fms   %s\n", name, q[0], q[1], q[2], q[3], ratio)
	}
	// Every later command against every other but the baseline: the ratio that compares two
	// programs (NHC against nodecheck), per round.
	for i := 1; i < len(times); i++ {
		for j := i + 1; j < len(times); j++ {
			rs := make([]float64, len(times[i]))
			for r := range rs {
				rs[r] = float64(times[i][r]) / float64(times[j][r])
			}
			q := quartiles(rs, func(f float64) float64 { return f })
			fmt.Fprintf(&b, "command %d / command %d per round: p25 %.1fx, median %.1fx, p75 %.1fx\n", i+1, j+1, q[1], q[2], q[3])
		}
	}
	return b.String()
}

// quartiles returns min, p25, median and p75 of xs as f converts them.
func quartiles[T any](xs []T, f func(T) float64) [4]float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	at := func(p float64) float64 { return v[int(p*float64(len(v)-1)+0.5)] }
	return [4]float64{v[0], at(0.25), at(0.5), at(0.75)}
}
