// Command fleet-sweep runs nodecheck on every node of a Slurm partition, or on a list of
// nodes, as Slurm jobs, and prints one summary: the healthy nodes, each failing node with its
// first failing check, the nodes that gave no report and why, and the NCCL bus bandwidth per
// node, slowest first.
//
//	go build -o /usr/local/sbin/nodecheck-fleet-sweep ./scripts/fleet-sweep
//	nodecheck-fleet-sweep --partition gpu --out /shared/sweeps/$(date +%F) --timeout 20m
//	nodecheck-fleet-sweep --nodes 'gpu[001-016]' --format json
//
// Slurm is the engine: one exclusive batch job per node (sbatch --nodelist=NODE --exclusive
// --no-requeue), running `nodecheck run --all --format json --mode manual` with its stdout in
// OUT/NODE.json and stderr in OUT/NODE.err, so OUT must be a directory the nodes and this host
// share. The sweep polls squeue until every job has ended or the --timeout passes, cancels
// the jobs still pending or running, and reads the reports. Nodes that are down, drained or
// not responding get no job: their state is the reason they are missing. No SSH.
//
// Exit status: 0 every node healthy; 1 a node failing or missing; 2 usage error, or Slurm
// could not list the nodes or take any job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	exitHealthy   = 0
	exitUnhealthy = 1
	exitError     = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops the wait and cancels the jobs; a second one kills at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: flags in, summary on stdout, progress and errors on stderr, the
// exit status returned.
func run(ctx context.Context, argv, env []string, stdout, stderr io.Writer) int {
	start := time.Now()
	o, format, err := parseFlags(argv, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitHealthy
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\nRun fleet-sweep -h for usage.\n", err)
		return exitError
	}
	runs, err := sweep(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\n", err)
		if runs == nil {
			return exitError
		}
	}
	s := summarize(runs)
	s.OutDir = o.out
	s.ElapsedS = float64(time.Since(start).Milliseconds()) / 1000
	write := writeText
	if format == "json" {
		write = writeJSON
	}
	if werr := write(stdout, s); werr != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the summary: %v\n", werr)
		return exitError
	}
	switch {
	case err != nil:
		return exitError
	case s.AllHealthy:
		return exitHealthy
	}
	return exitUnhealthy
}

// parseFlags reads the command line into options and the output format.
func parseFlags(argv, env []string, stderr io.Writer) (options, string, error) {
	o := options{env: env}
	fs := flag.NewFlagSet("fleet-sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var args, sbatchExtra, format string
	fs.StringVar(&o.partition, "partition", "", "sweep every node of this partition; with --nodes, submit to it")
	fs.StringVar(&o.nodes, "nodes", "", "sweep these nodes: a Slurm `HOSTLIST` such as gpu[001-032,040]")
	fs.StringVar(&o.nodecheck, "nodecheck", "/usr/sbin/nodecheck", "nodecheck's absolute `path` on the nodes")
	fs.StringVar(&args, "args", "", "extra nodecheck `ARGS` for every node, split like a shell line: '--config /etc/nodecheck/sweep.toml'")
	fs.Func("args-for", "extra nodecheck arguments for some nodes, after --args: `NODES=ARGS`, NODES a hostlist (repeatable)", func(v string) error {
		a, err := parseNodeArgs(v)
		if err == nil {
			o.argsFor = append(o.argsFor, a)
		}
		return err
	})
	fs.StringVar(&sbatchExtra, "sbatch-args", "", "extra sbatch `OPTIONS` for every job, after the sweep's own (the last one wins): '--account=ops --reservation=maint'")
	fs.StringVar(&o.jobName, "job-name", "nodecheck-sweep", "the jobs' name in squeue")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "the whole sweep's deadline; jobs still pending or running then are cancelled")
	fs.DurationVar(&o.poll, "poll", 2*time.Second, "interval between squeue calls")
	fs.DurationVar(&o.outputWait, "output-wait", 5*time.Second, "how long a finished job's report may take to appear here (shared filesystem caches)")
	fs.StringVar(&o.out, "out", "", "`directory` for job scripts and reports, on a filesystem the nodes share (default ./nodecheck-sweep-TIMESTAMP)")
	fs.StringVar(&format, "format", "text", "summary format: text or json")
	fs.StringVar(&o.slurmBin, "slurm-bin", "/usr/bin", "`directory` of sbatch, squeue, sinfo, scontrol and scancel")
	fs.DurationVar(&o.slurmTimeout, "slurm-timeout", 30*time.Second, "limit for each Slurm command")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fleet-sweep (--partition P | --nodes HOSTLIST) [options]\n\n"+
			"Runs `nodecheck run --all --format json --mode manual` on each node as an exclusive Slurm job\n"+
			"and summarizes: healthy nodes, failing nodes with their first failing check, nodes without a\n"+
			"report and why, NCCL busbw per node (slowest first). Exit 0 all healthy, 1 failing or missing,\n"+
			"2 usage or Slurm error.\n\nOptions:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, "", err
		}
		return o, "", usagef("%v", err) // flag has printed the usage
	}
	if fs.NArg() > 0 {
		return o, "", usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.partition == "" && o.nodes == "" {
		return o, "", usagef("give --partition or --nodes")
	}
	if format != "text" && format != "json" {
		return o, "", usagef("--format %q: want text or json", format)
	}
	for _, p := range []struct{ flag, path string }{{"--nodecheck", o.nodecheck}, {"--slurm-bin", o.slurmBin}} {
		if !filepath.IsAbs(p.path) {
			return o, "", usagef("%s %q: want an absolute path (jobs start in /, and hooks have no PATH)", p.flag, p.path)
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", o.timeout}, {"--poll", o.poll}, {"--slurm-timeout", o.slurmTimeout}} {
		if d.v <= 0 {
			return o, "", usagef("%s %s: want a positive duration", d.flag, d.v)
		}
	}
	if o.outputWait < 0 {
		return o, "", usagef("--output-wait %s: want zero or more", o.outputWait)
	}
	var err error
	if o.args, err = splitArgs(args); err != nil {
		return o, "", usagef("--args %v", err)
	}
	if o.sbatchArgs, err = splitArgs(sbatchExtra); err != nil {
		return o, "", usagef("--sbatch-args %v", err)
	}
	if o.out == "" {
		o.out = "nodecheck-sweep-" + time.Now().UTC().Format("20060102T150405Z")
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return o, "", usagef("--out: %v", err)
	}
	if strings.ContainsAny(o.out, "%\n") {
		// sbatch reads % in --output as a pattern (%j job id, %N node).
		return o, "", usagef("--out %q: no %% or newline, please: sbatch expands %% in file names", o.out)
	}
	return o, format, nil
}
