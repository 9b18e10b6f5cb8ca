package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

// multinodeOptions are the --multinode flags.
type multinodeOptions struct {
	enabled      bool
	mpi          string   // srun --mpi=; "" leaves it to slurm.conf's MpiDefault
	allreduce    string   // all_reduce_perf built with MPI=1, absolute
	args         []string // all_reduce_perf's arguments
	tasksPerNode int      // MPI ranks per node: one per GPU
	group        int      // round 1's set size
	crossLeaf    bool     // round 1's sets cross leaf switches
	topology     string   // topology.conf; "" none
	minBusBW     float64  // a set under this is bad; 0: relative only
	timeout      time.Duration
	minJobLimit  time.Duration // the floor of a job's run limit (jobLimit)
	drain        bool          // drain the culprit nodes
}

// multinodeSummary is the multi-node phase in the sweep's summary.
type multinodeSummary struct {
	Nodes        []string  `json:"nodes"` // tested: the nodes whose reports were healthy
	Group        int       `json:"group"`
	CrossLeaf    bool      `json:"cross_leaf"`
	Topology     string    `json:"topology,omitempty"` // the topology.conf followed
	Rounds       int       `json:"rounds"`
	Jobs         int       `json:"jobs"`
	Threshold    float64   `json:"threshold_gbps"`
	ThresholdWhy string    `json:"threshold_why"`
	First        []setRun  `json:"first_round"` // round 1: per set (per pair) busbw
	Culprits     []culprit `json:"culprits"`
	Runs         []setRun  `json:"runs"`
	// RunLimitS is the run limit the jobs after round 1 had (0: none), RunLimitWhy how it
	// came about (jobLimit).
	RunLimitS   float64 `json:"run_limit_s"`
	RunLimitWhy string  `json:"run_limit_why,omitempty"`
	Aborted     string  `json:"aborted,omitempty"`
	Error       string  `json:"error,omitempty"` // why the phase could not run at all
	ElapsedS    float64 `json:"elapsed_s"`
}

// multinode runs the multi-node phase over the healthy nodes: round 1 on sets of m.group in
// topology order, then locate's narrowing down, each round's sets as one Slurm job each.
func multinode(ctx context.Context, s *slurmClient, o options, nodes []string, log io.Writer) *multinodeSummary {
	start := time.Now()
	m := o.multinode
	sum := &multinodeSummary{Nodes: nodes, Group: m.group, CrossLeaf: m.crossLeaf, Topology: m.topology, Culprits: []culprit{}, Runs: []setRun{}}
	defer func() { sum.ElapsedS = float64(time.Since(start).Milliseconds()) / 1000 }()
	var leaf map[string]string
	if m.topology != "" {
		b, err := readBounded(m.topology, 4<<20)
		if err == nil {
			leaf, err = parseTopologyLeaves(b, m.topology, func(p string) ([]byte, error) { return readBounded(p, 4<<20) })
		}
		if err != nil {
			sum.Error = fmt.Sprintf("--topology %s: %v", m.topology, err)
			return sum
		}
	}
	dir := filepath.Join(o.out, "multinode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		sum.Error = "--out: " + err.Error()
		return sum
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	lim := &jobLimit{floor: m.minJobLimit}
	run := func(ctx context.Context, round int, sets [][]string) []setOutcome {
		if round > 1 {
			lim.fixed = true
		}
		fmt.Fprintf(log, "fleet-sweep: multinode round %d: %d jobs (run limit: %s)\n", round, len(sets), limitText(lim.limit()))
		return runSets(ctx, s, o, dir, deadline, round, sets, lim, log)
	}
	res := locate(ctx, arrange(nodes, leaf, m.crossLeaf), locateOptions{Group: m.group, MinBusBW: m.minBusBW, Slow: o.slow}, run)
	sum.Rounds, sum.Jobs, sum.Threshold, sum.ThresholdWhy = res.Rounds, res.Jobs, res.Threshold, res.ThresholdWhy
	sum.Culprits, sum.Runs, sum.Aborted = res.Culprits, res.Runs, res.Aborted
	sum.RunLimitS, sum.RunLimitWhy = lim.limit().Seconds(), lim.why()
	for _, r := range res.Runs {
		if r.Round == 1 {
			sum.First = append(sum.First, r)
		}
	}
	return sum
}

// runSets runs one round: one exclusive batch job per set, `srun --mpi=M ALLREDUCE ARGS` over
// the set's nodes, all submitted at once and waited for with one squeue call per poll, as the
// per-node sweep does. A job that runs past lim's limit is cancelled: a failed run. Each job's
// stdout (rank 0's output) is parsed with nodecheck's nccl-tests parser and judged as
// nccl_allreduce judges a node.
func runSets(ctx context.Context, s *slurmClient, o options, dir string, deadline time.Time, round int, sets [][]string, lim *jobLimit, log io.Writer) []setOutcome {
	m := o.multinode
	runs := make([]nodeRun, len(sets))
	index := map[string]int{}
	for i := range sets {
		label := fmt.Sprintf("r%d-s%d", round, i+1)
		index[label] = i
		runs[i] = nodeRun{Node: label, OutputPath: filepath.Join(dir, label+".out")}
		for _, ext := range []string{".out", ".err"} {
			if err := os.Remove(filepath.Join(dir, label+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				runs[i].Skipped = "sbatch not run: " + err.Error()
			}
		}
	}
	submitAll(ctx, s, runs, func(r *nodeRun) (jobSpec, error) {
		i := index[r.Node]
		script := filepath.Join(dir, r.Node+".sh")
		args := multinodeSbatchArgs(o, sets[i], filepath.Join(dir, r.Node), deadline, script)
		argv := []string{filepath.Join(s.bin, "srun")}
		if m.mpi != "" {
			argv = append(argv, "--mpi="+m.mpi)
		}
		argv = append(append(argv, m.allreduce), m.args...)
		what := "all_reduce_perf over " + slurm.CompressHostlist(sets[i])
		return jobSpec{args: args, script: script, body: batchScript(what, filepath.Join(s.bin, "sbatch"), args, argv)}, nil
	}, log)
	interrupted := wait(ctx, s, o.poll, runs, lim, log)
	cancelLeft(ctx, s, runs, interrupted, log)
	out := make([]setOutcome, len(runs))
	end := time.Now().Add(o.outputWait)
	for i := range runs {
		r := &runs[i]
		out[i] = setOutcome{JobID: r.JobID}
		switch {
		case r.Skipped != "":
			out[i].NotRun = r.Skipped
			continue
		case r.Cancelled != "":
			// Still running (or pending) at the phase's deadline: no verdict, but what it
			// printed says how far it got.
			perr := error(fs.ErrNotExist)
			if r.State != "PENDING" {
				r.Output, r.OutputErr = readBounded(r.OutputPath, maxReport)
				perr = r.OutputErr
				if perr == nil {
					perr = fmt.Errorf("ran %s, stopped %s", seconds(time.Since(r.Started)), progress(r.Output))
				}
			}
			out[i].NotRun = missingReason(*r, perr)
			continue
		}
		for {
			r.Output, r.OutputErr = readBounded(r.OutputPath, maxReport)
			if r.OutputErr == nil && len(bytes.TrimSpace(r.Output)) > 0 || time.Now().After(end) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		errb, _ := readTail(filepath.Join(dir, r.Node+".err"), 4<<10)
		out[i] = judgeMultinode(*r, lastLine(string(errb)))
		if r.RunTime > 0 {
			out[i].RunS = math.Round(r.RunTime.Seconds()*10) / 10
		}
	}
	return out
}

// limitText is a run limit as the log says it.
func limitText(d time.Duration) string {
	if d <= 0 {
		return "none yet"
	}
	return seconds(d)
}

// progress says how far an all_reduce_perf run got by its output: "after its header (no
// result row)".
func progress(out []byte) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return "with no output"
	}
	run, err := checks.ParseNCCLTests(bytes.NewReader(out))
	switch {
	case err != nil:
		return "with output nccl-tests' parser cannot read (" + err.Error() + ")"
	case len(run.Rows) == 0:
		return "after its header (no result row)"
	case !run.Completed():
		return fmt.Sprintf("after %d result rows, before nccl-tests' summary", len(run.Rows))
	}
	return "after nccl-tests' summary, without exiting"
}

// multinodeSbatchArgs are one set's job options: those nodes whole, tasksPerNode ranks on each,
// output beside the script, no requeue, a time limit that ends with the phase.
func multinodeSbatchArgs(o options, set []string, stem string, deadline time.Time, script string) []string {
	minutes := max(1, int((time.Until(deadline)+time.Minute-1)/time.Minute))
	args := []string{"--parsable",
		"--job-name=" + o.jobName + "-multinode",
		"--nodelist=" + slurm.CompressHostlist(set), "--nodes=" + strconv.Itoa(len(set)),
		"--ntasks-per-node=" + strconv.Itoa(o.multinode.tasksPerNode), "--exclusive",
		"--output=" + stem + ".out", "--error=" + stem + ".err",
		"--open-mode=truncate", "--no-requeue", "--chdir=/",
		"--time=" + strconv.Itoa(minutes),
	}
	if o.partition != "" {
		args = append(args, "--partition="+o.partition)
	}
	args = append(args, o.sbatchArgs...)
	return append(args, script)
}

// judgeMultinode judges one finished job: wrong data, a failure line, a non-zero exit, output
// that stops before nccl-tests' summary or cannot be parsed fail the set; otherwise its busbw
// at large messages is the outcome.
func judgeMultinode(r nodeRun, stderr string) setOutcome {
	o := setOutcome{JobID: r.JobID}
	fail := func(why string) setOutcome {
		if stderr != "" && !strings.Contains(why, stderr) {
			why += "; stderr: " + stderr
		}
		o.Failed = text.OneLine(why, maxLine)
		return o
	}
	exit := ""
	if r.ExitCode != "" && r.ExitCode != "0:0" {
		exit = " (exit " + r.ExitCode + ")"
	}
	if r.Killed > 0 {
		// A hang is a failure whatever the output so far says; its stderr is Slurm's
		// cancellation notice.
		o.Failed = text.OneLine(fmt.Sprintf("job %s hung %s: killed at %s, past its run limit of %s", r.JobID, progress(r.Output), seconds(r.Killed), seconds(r.Limit)), maxLine)
		return o
	}
	if r.OutputErr != nil {
		return fail(fmt.Sprintf("job %s %s%s, %s: %v", r.JobID, r.State, exit, filepath.Base(r.OutputPath), r.OutputErr))
	}
	run, err := checks.ParseNCCLTests(bytes.NewReader(r.Output))
	if err != nil {
		return fail(fmt.Sprintf("%s: %v", filepath.Base(r.OutputPath), err))
	}
	var wrong int64
	for _, row := range run.Rows {
		wrong += max(row.OutOfPlace.Wrong, 0) + max(row.InPlace.Wrong, 0)
	}
	bw, size := run.LargeBusBW()
	switch {
	case wrong > 0 || run.OutOfBounds > 0:
		return fail(fmt.Sprintf("wrong data: %d wrong elements, %d out of bounds values%s", wrong, max(run.OutOfBounds, 0), exit))
	case len(run.Failures) > 0:
		return fail(run.Failures[0] + exit)
	case exit != "":
		return fail(fmt.Sprintf("job %s %s%s", r.JobID, r.State, exit))
	case len(run.Rows) == 0:
		return fail(fmt.Sprintf("job %s %s: no result rows in %s", r.JobID, r.State, filepath.Base(r.OutputPath)))
	case !run.Completed():
		return fail(fmt.Sprintf("job %s %s: output stops before nccl-tests' summary (after %d rows)", r.JobID, r.State, len(run.Rows)))
	}
	o.BusBW, o.At = bw, checks.NCCLSize(size)
	return o
}

// multinodeCulpritDrains are the drains --drain-culprits asks for: culprit nodes only. A link
// or a set is not one node's fault, and an unresolved suspect is not a verdict.
func multinodeCulpritDrains(m *multinodeSummary) []drainItem {
	var items []drainItem
	if m == nil {
		return nil
	}
	for _, c := range m.Culprits {
		if c.Kind == "node" && len(c.Nodes) == 1 {
			items = append(items, drainItem{Node: c.Nodes[0], Summary: "multinode: all_reduce_perf " + c.Why})
		}
	}
	return items
}

// maxSetLines bounds the text summary's round-1 table: the bad and slowest sets come first.
const maxSetLines = 20

// writeMultinodeText prints the multi-node phase.
func writeMultinodeText(b *strings.Builder, m *multinodeSummary) {
	if m == nil {
		return
	}
	kind := fmt.Sprintf("sets of %d", m.Group)
	if m.Group == 2 {
		kind = "pairs"
	}
	if m.CrossLeaf {
		kind += " across leaf switches"
	}
	if m.Topology != "" {
		kind += ", topology " + m.Topology
	}
	fmt.Fprintf(b, "multinode all_reduce_perf (%s): %d nodes, %d jobs in %d rounds, %.1fs\n", kind, len(m.Nodes), m.Jobs, m.Rounds, m.ElapsedS)
	if m.Error != "" {
		fmt.Fprintf(b, "  NOT RUN: %s\n", m.Error)
		return
	}
	if m.Threshold > 0 {
		fmt.Fprintf(b, "  bad: a failed run, or busbw under %s GB/s (%s)\n", fmtValue(m.Threshold), m.ThresholdWhy)
	} else {
		fmt.Fprintf(b, "  bad: a failed run (%s)\n", m.ThresholdWhy)
	}
	first := slices.Clone(m.First)
	slices.SortStableFunc(first, func(a, b setRun) int {
		if a.Bad != b.Bad {
			if a.Bad {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Outcome.BusBW, b.Outcome.BusBW)
	})
	for i, r := range first {
		if i == maxSetLines {
			fmt.Fprintf(b, "  ... %d more sets (--format json lists them all)\n", len(first)-i)
			break
		}
		fmt.Fprintf(b, "  %-24s %s\n", slurm.CompressHostlist(r.Nodes), setResultText(r))
	}
	if m.Aborted != "" {
		fmt.Fprintf(b, "  STOPPED: %s\n", m.Aborted)
	}
	for _, c := range m.Culprits {
		fmt.Fprintf(b, "  CULPRIT %s %s: %s\n", strings.ToUpper(c.Kind), slurm.CompressHostlist(c.Nodes), c.Why)
	}
	if len(m.Culprits) == 0 && m.Aborted == "" {
		b.WriteString("  no culprit: every set passed\n")
	}
	switch {
	case m.RunLimitS > 0:
		fmt.Fprintf(b, "  run limit: %s (%s); a job past it is cancelled, a failed run\n", seconds(time.Duration(m.RunLimitS*float64(time.Second))), m.RunLimitWhy)
	case m.RunLimitWhy != "":
		fmt.Fprintf(b, "  run limit: %s\n", m.RunLimitWhy)
	}
}

// setResultText is one set's result: "468.5 GB/s at 16 GiB", "BAD: failed: ...".
func setResultText(r setRun) string {
	o := r.Outcome
	switch {
	case o.NotRun != "":
		return "NOT RUN: " + o.NotRun
	case r.Bad:
		return "BAD: " + r.Why
	}
	return fmt.Sprintf("%s GB/s at %s", fmtValue(o.BusBW), o.At)
}
