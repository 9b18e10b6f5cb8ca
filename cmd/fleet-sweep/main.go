// Command fleet-sweep runs nodecheck on every node of a Slurm partition, or on a list of
// nodes, as Slurm jobs, and prints one summary: the nodes slow against the fleet's median for
// their GPU model, the healthy nodes, each failing node with its first failing check, the nodes
// that gave no report and why, the NCCL bus bandwidth per node, and the Slurm calls it took.
// With --multinode it then runs all_reduce_perf across the healthy nodes, in pairs, and narrows
// every bad run down to the node or link at fault (see bisect.go). With --lldp it instead
// runs `nodecheck topology capture --lldp` on each node and prints the node -> leaf switch map
// of a RoCE fabric, compared with topology.conf (see lldp.go).
//
//	go build -o /usr/local/sbin/nodecheck-fleet-sweep ./cmd/fleet-sweep
//	nodecheck-fleet-sweep --partition gpu --out /shared/sweeps/$(date +%F) --timeout 20m
//	nodecheck-fleet-sweep --nodes 'gpu[001-016]' --format json --drain-slow --dry-run
//
// Slurm is the engine: one exclusive batch job per node (sbatch --nodelist=NODE --exclusive
// --no-requeue), running `nodecheck run --all --format json --mode manual` with its stdout in
// OUT/NODE.json and stderr in OUT/NODE.err, so OUT must be a directory the nodes and this host
// share. The sweep polls squeue, one call for all its jobs, until every job has ended or the
// --timeout passes, cancels the jobs still pending or running in one scancel, and reads the
// reports. Nodes that are down, drained or not responding get no job: their state is the
// reason they are missing; so are nodes whose names are not plain host names (checkNodeName),
// which never become paths. No SSH. docs/fleet-sweep.md has the costs, measured.
//
// Exit status: 0 every node healthy; 1 a node slow, failing or missing, or a multi-node
// culprit (--lldp: a node without a capture or a neighbour, or topology.conf off the map); 2
// usage error, or Slurm could not list the nodes or take any job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
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
	s := &slurmClient{bin: o.slurmBin, env: o.env, timeout: o.slurmTimeout, calls: &callCounter{}}
	if o.validate.levelName != "" {
		return runValidate(ctx, s, o, format, start, stdout, stderr)
	}
	if o.lldp.enabled {
		return runLLDP(ctx, s, o, format, start, stdout, stderr)
	}
	runs, err := sweep(ctx, s, o, reportJob(o), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\n", err)
		if runs == nil {
			return exitError
		}
	}
	sum := summarize(runs, o.slow)
	sum.OutDir = o.out
	if err == nil && o.multinode.enabled && ctx.Err() == nil {
		sum.Multinode = multinode(ctx, s, o, sum.reported(runs), stderr)
	}
	var drains []drainItem
	if o.drainSlow {
		drains = append(drains, slowDrains(sum.Slow)...)
	}
	if o.multinode.drain {
		drains = append(drains, multinodeCulpritDrains(sum.Multinode)...)
	}
	if len(drains) > 0 && ctx.Err() == nil { // an interrupted sweep drains nothing
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(len(drains)*3+1)*o.slurmTimeout)
		sum.Drains = drainNodes(dctx, s, o, len(runs), drains, stderr)
		cancel()
	}
	sum.SlurmCalls, sum.SlurmCallsTotal = s.calls.counts()
	sum.ElapsedS = float64(time.Since(start).Milliseconds()) / 1000
	write := writeText
	if format == "json" {
		write = writeJSON
	}
	if werr := write(stdout, sum); werr != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the summary: %v\n", werr)
		return exitError
	}
	if herr := writeHTMLFile(o, sum, runs, stderr); herr != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the HTML report: %v\n", herr)
		return exitError
	}
	switch {
	case err != nil:
		return exitError
	case sum.AllHealthy && (sum.Multinode == nil || len(sum.Multinode.Culprits) == 0 && sum.Multinode.Aborted == "" && sum.Multinode.Error == ""):
		return exitHealthy
	}
	return exitUnhealthy
}

// parseFlags reads the command line into options and the output format.
func parseFlags(argv, env []string, stderr io.Writer) (options, string, error) {
	o := options{env: env}
	fs := flag.NewFlagSet("fleet-sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f rawFlags
	defineFlags(fs, &o, &f)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fleet-sweep (--partition P | --nodes HOSTLIST) [options]\n\n"+
			"Runs `nodecheck run --all --format json --mode manual` on each node as an exclusive Slurm job\n"+
			"and summarizes: nodes slow against the fleet's median for their GPU model, healthy nodes,\n"+
			"failing nodes with their first failing check, nodes without a report and why, NCCL busbw per\n"+
			"node; with --multinode, all_reduce_perf across nodes and the culprits of bad runs. Exit 0 all\n"+
			"healthy, 1 slow, failing, missing or a multinode culprit, 2 usage or Slurm error.\n"+
			"With --lldp: `nodecheck topology capture --lldp` on each node instead, and the node -> leaf\n"+
			"switch map, compared with topology.conf; exit 1 a node without a capture or a neighbour, or\n"+
			"topology.conf off the map. /usr/share/doc/nodecheck/docs/fleet-sweep.md\n\nOptions:\n")
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
	fs.Visit(func(f *flag.Flag) {
		o.validate.timeoutSet = o.validate.timeoutSet || f.Name == "timeout"
		o.lldp.htmlSet = o.lldp.htmlSet || f.Name == "html"
	})
	if err := checkFlags(&o, f); err != nil {
		return o, "", err
	}
	return o, f.format, nil
}

// rawFlags are the flags that checkFlags turns into options.
type rawFlags struct {
	args, sbatchExtra, format, slowFloor, maxDrained, allreduceArgs string
}

// defineFlags declares every flag.
func defineFlags(fs *flag.FlagSet, o *options, f *rawFlags) {
	fs.StringVar(&o.partition, "partition", "", "sweep every node of this partition; with --nodes, submit to it")
	fs.StringVar(&o.nodes, "nodes", "", "sweep these nodes: a Slurm `HOSTLIST` such as gpu[001-032,040]")
	fs.StringVar(&o.nodecheck, "nodecheck", "/usr/sbin/nodecheck", "nodecheck's absolute `path` on the nodes")
	fs.StringVar(&f.args, "args", "", "extra nodecheck `ARGS` for every node, split like a shell line: '--config /etc/nodecheck/sweep.toml'")
	fs.Func("args-for", "extra nodecheck arguments for some nodes, after --args: `NODES=ARGS`, NODES a hostlist (repeatable)", func(v string) error {
		a, err := parseNodeArgs(v)
		if err == nil {
			o.argsFor = append(o.argsFor, a)
		}
		return err
	})
	fs.StringVar(&f.sbatchExtra, "sbatch-args", "", "extra sbatch `OPTIONS` for every job, after the sweep's own (the last one wins): '--account=ops --reservation=maint'")
	fs.StringVar(&o.jobName, "job-name", "nodecheck-sweep", "the jobs' name in squeue")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "the per-node sweep's deadline; jobs still pending or running then are cancelled")
	fs.DurationVar(&o.poll, "poll", 0, "interval between squeue calls (one call for all jobs); 0: 2s plus 2ms per job waited for, at most 10s")
	fs.DurationVar(&o.outputWait, "output-wait", 5*time.Second, "how long a finished job's report may take to appear here (shared filesystem caches)")
	fs.StringVar(&o.out, "out", "", "`directory` for job scripts and reports, on a filesystem the nodes share (default ./nodecheck-sweep-TIMESTAMP)")
	fs.StringVar(&f.format, "format", "text", "summary format: text or json")
	fs.StringVar(&o.slurmBin, "slurm-bin", "/usr/bin", "`directory` of sbatch, srun, squeue, sinfo, scontrol and scancel")
	fs.DurationVar(&o.slurmTimeout, "slurm-timeout", 30*time.Second, "limit for each Slurm command")
	fs.Float64Var(&o.slow.MAD, "slow-mad", 3, "a healthy node is slow when a figure is more than this many scaled MADs (robust standard deviations) below its GPU model's median ...")
	fs.StringVar(&f.slowFloor, "slow-floor", "5%", "... and more than this `percentage` of the median below it")
	fs.IntVar(&o.slow.MinNodes, "slow-min-nodes", 5, "judge a model's figure only over at least this many healthy nodes")
	fs.BoolVar(&o.drainSlow, "drain-slow", false, "drain the slow nodes: reason \"nodecheck: fleet: slow: ...\"")
	fs.BoolVar(&o.dryRun, "dry-run", false, "with --drain-slow or --drain-culprits: print the scontrol commands, change nothing")
	fs.StringVar(&f.maxDrained, "max-drained", "10%", "drain nothing more once this many nodes (\"N\") or this share of the cluster (\"N%\") carry nodecheck's reason; \"\" no limit")
	fs.StringVar(&o.drainPrefix, "reason-prefix", "nodecheck:", "drain reason prefix: nodecheck.toml's [drain] reason_prefix")
	fs.BoolVar(&o.multinode.enabled, "multinode", false, "after the per-node sweep, run all_reduce_perf across the healthy nodes and name the culprits of bad runs")
	fs.StringVar(&o.multinode.mpi, "mpi", "pmix", "srun's --mpi `plugin` for all_reduce_perf (pmix, pmi2, ...); \"\" for slurm.conf's MpiDefault")
	fs.StringVar(&o.multinode.allreduce, "allreduce", "/usr/bin/all_reduce_perf", "nccl-tests' all_reduce_perf built with MPI=1, absolute `path` on the nodes")
	fs.StringVar(&f.allreduceArgs, "allreduce-args", "-b 1G -e 4G -f 2 -g 1", "all_reduce_perf's `ARGS`: one GPU per rank")
	fs.IntVar(&o.multinode.tasksPerNode, "tasks-per-node", 8, "MPI ranks per node: one per GPU")
	fs.IntVar(&o.multinode.group, "multinode-group", 2, "nodes per job in the first round (2: pairs); bad sets are then halved")
	fs.BoolVar(&o.multinode.crossLeaf, "cross-leaf", false, "first-round sets span leaf switches of topology.conf, to test the links between them")
	fs.StringVar(&o.multinode.topology, "topology", "", "topology.conf `path`: the HTML report's leaf switch groups, --multinode's sets, what --lldp compares (default: beside SLURM_CONF, else /etc/slurm/topology.conf, when present); none: ignore it")
	fs.StringVar(&o.html, "html", "", "write the HTML report to this `path` (default OUT/report.html; none: no report)")
	fs.Float64Var(&o.multinode.minBusBW, "multinode-min-busbw", 0, "a multi-node run under this busbw (`GB/s`) is bad; 0: only runs well under the first round's median")
	fs.DurationVar(&o.multinode.timeout, "multinode-timeout", 30*time.Minute, "the multi-node phase's deadline, all rounds")
	fs.DurationVar(&o.multinode.minJobLimit, "multinode-min-job-limit", 2*time.Minute, "a multi-node job running longer than 3x the median run of round 1's completed jobs, and longer than this, is cancelled: a failed run (hung)")
	defineValidateFlags(fs, &o.validate)
	fs.BoolVar(&o.lldp.enabled, "lldp", false, "instead of nodecheck run, run `nodecheck topology capture --lldp` on each node (captures in OUT/lldp) and print the node -> leaf switch map, compared with topology.conf (--topology) as `nodecheck lint --lldp` does; drains nothing")
	fs.StringVar(&o.lldp.switchMap, "lldp-switch-map", "", "with --lldp: a `file` of \"LLDP-NAME TOPOLOGY-NAME\" lines naming the switches as topology.conf does")
	fs.BoolVar(&o.multinode.drain, "drain-culprits", false, "drain the nodes --multinode names as culprits (never a link or a set): reason \"nodecheck: fleet: multinode: ...\"")
}

// checkFlags validates the flags and fills in what derives from them.
func checkFlags(o *options, f rawFlags) error {
	if o.partition == "" && o.nodes == "" {
		return usagef("give --partition or --nodes")
	}
	if f.format != "text" && f.format != "json" {
		return usagef("--format %q: want text or json", f.format)
	}
	for _, p := range []struct{ flag, path string }{{"--nodecheck", o.nodecheck}, {"--slurm-bin", o.slurmBin}, {"--allreduce", o.multinode.allreduce}} {
		if !filepath.IsAbs(p.path) {
			return usagef("%s %q: want an absolute path (jobs start in /, and hooks have no PATH)", p.flag, p.path)
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", o.timeout}, {"--slurm-timeout", o.slurmTimeout}, {"--multinode-timeout", o.multinode.timeout}, {"--multinode-min-job-limit", o.multinode.minJobLimit}} {
		if d.v <= 0 {
			return usagef("%s %s: want a positive duration", d.flag, d.v)
		}
	}
	if o.outputWait < 0 || o.poll < 0 {
		return usagef("--output-wait %s, --poll %s: want zero or more", o.outputWait, o.poll)
	}
	if err := checkJudgeFlags(o, f); err != nil {
		return err
	}
	if err := checkValidateFlags(o); err != nil {
		return err
	}
	if err := checkLLDPFlags(o); err != nil {
		return err
	}
	var err error
	if o.args, err = splitArgs(f.args); err != nil {
		return usagef("--args %v", err)
	}
	if o.sbatchArgs, err = splitArgs(f.sbatchExtra); err != nil {
		return usagef("--sbatch-args %v", err)
	}
	if o.multinode.args, err = splitArgs(f.allreduceArgs); err != nil {
		return usagef("--allreduce-args %v", err)
	}
	if o.out == "" {
		o.out = "nodecheck-sweep-" + time.Now().UTC().Format("20060102T150405Z")
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return usagef("--out: %v", err)
	}
	switch o.html {
	case "none":
		o.html = ""
	case "":
		o.html = filepath.Join(o.out, "report.html")
	default:
		if o.html, err = filepath.Abs(o.html); err != nil {
			return usagef("--html: %v", err)
		}
	}
	if strings.ContainsAny(o.out, "%\n") {
		// sbatch reads % in --output as a pattern (%j job id, %N node).
		return usagef("--out %q: no %% or newline, please: sbatch expands %% in file names", o.out)
	}
	return nil
}

// checkJudgeFlags validates the slow rule, the drain flags and the multi-node flags.
func checkJudgeFlags(o *options, f rawFlags) error {
	floor, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f.slowFloor), "%"), 64)
	if err != nil || floor < 0 || floor >= 100 || math.IsNaN(floor) {
		return usagef("--slow-floor %q: want a percentage from 0 to 99, such as 5%%", f.slowFloor)
	}
	o.slow.FloorPct = floor
	if o.slow.MAD < 0 || math.IsNaN(o.slow.MAD) || math.IsInf(o.slow.MAD, 0) {
		return usagef("--slow-mad %v: want 0 or more", o.slow.MAD)
	}
	if o.slow.MinNodes < 2 {
		return usagef("--slow-min-nodes %d: want at least 2 (a median of one node is that node)", o.slow.MinNodes)
	}
	n, percent, err := config.ParseMaxDrained(f.maxDrained)
	if err != nil {
		return usagef("--max-drained: %v", err)
	}
	o.maxDrained = drain.Limit{N: n, Percent: percent}
	if p := o.drainPrefix; p == "" || drain.Sanitize(p) != p || strings.Contains(p, "\"") || len(p) > 40 {
		return usagef("--reason-prefix %q: want printable ASCII, no double quote, no blank at either end or twice in a row, at most 40 characters", p)
	}
	if o.dryRun && !o.drainSlow && !o.multinode.drain {
		return usagef("--dry-run: give --drain-slow or --drain-culprits, whose drains it prints")
	}
	m := o.multinode
	if (m.drain || o.multinode.minBusBW != 0) && !m.enabled {
		return usagef("--drain-culprits and --multinode-min-busbw need --multinode")
	}
	if m.mpi != "" && strings.Trim(m.mpi, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return usagef("--mpi %q: want a plugin name such as pmix, pmi2 or none", m.mpi)
	}
	if m.tasksPerNode < 1 || m.group < 2 || m.minBusBW < 0 {
		return usagef("--tasks-per-node %d, --multinode-group %d, --multinode-min-busbw %v: want at least 1, at least 2, and 0 or more", m.tasksPerNode, m.group, m.minBusBW)
	}
	topo, err := topologyPath(m.topology, o.env)
	if err != nil {
		return err
	}
	o.multinode.topology = topo
	return nil
}

// topologyPath is the topology.conf to follow: the one given ("none": no file), or else the
// one beside SLURM_CONF, or /etc/slurm/topology.conf, when present.
func topologyPath(given string, env []string) (string, error) {
	switch given {
	case "none":
		return "", nil
	case "":
	default:
		if !filepath.IsAbs(given) {
			return "", usagef("--topology %q: want an absolute path", given)
		}
		return given, nil
	}
	dir := "/etc/slurm"
	if c := envValue(env, "SLURM_CONF"); c != "" {
		dir = filepath.Dir(c)
	}
	p := filepath.Join(dir, "topology.conf")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p, nil
	}
	return "", nil
}
