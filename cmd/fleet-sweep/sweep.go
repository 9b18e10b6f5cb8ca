package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
	"github.com/nodecheck/nodecheck/drain"
)

// options is the sweep as the command line asked for it.
type options struct {
	partition    string
	nodes        string // hostlist expression; "" for the whole partition
	nodecheck    string // nodecheck's path on the nodes
	args         []string
	argsFor      []nodeArgs
	sbatchArgs   []string
	jobName      string
	timeout      time.Duration // the per-node sweep: listing, submitting, waiting
	poll         time.Duration // between squeue calls; 0: pollInterval's choice
	outputWait   time.Duration // how long a finished job's report may take to show up here
	out          string        // directory for scripts and reports, shared with the nodes
	html         string        // the HTML report's path; "" for none
	slurmBin     string
	slurmTimeout time.Duration // each Slurm command
	env          []string
	slow         slowRule // fleet-relative judgement
	drainSlow    bool     // drain the slow nodes
	dryRun       bool     // print the drains instead
	maxDrained   drain.Limit
	drainPrefix  string
	multinode    multinodeOptions
	validate     validateOptions
	lldp         lldpOptions
}

// nodecheckArgs are the arguments every job gives nodecheck, before --args and --args-for:
// every check, nccl_allreduce included (it runs in manual mode on a node the job holds whole),
// as a JSON report on stdout.
var nodecheckArgs = []string{"run", "--all", "--format", "json", "--mode", "manual"}

// submitWorkers is how many sbatch run at once. Measured on the test bed (docs/fleet-sweep.md,
// 2026-12-03): 4,096 held jobs took 33 s one at a time, 14.8 s with 8 at once and 17.1 s with 16,
// slurmctld being the bottleneck; 8 keeps a 4,096-node submission near a quarter of a minute
// without queueing more RPCs than slurmctld's threads serve.
const submitWorkers = 8

// maxSubmitFailures stops the submission after that many sbatch failures in a row: a refusal
// that is not about one node (an account limit, MaxJobCount, a controller that does not
// answer) would otherwise cost one more call, and often a timeout, per node left.
const maxSubmitFailures = 8

// maxReport bounds a report read back: nodecheck's is tens of KiB.
const maxReport = 16 << 20

// jobKind is what each node's job runs and where its files go: the per-node sweep's
// `nodecheck run` (reportJob) or the LLDP sweep's capture (lldpJob).
type jobKind struct {
	dirs []string // made before any job: --out and what is under it
	// output is the file the sweep reads back (the job's stdout, or a file the job writes);
	// stdout, stderr and script are the job's; every one of them is removed before the job.
	output, stdout, stderr, script func(node string) string
	argv                           func(node string) []string // nodecheck and its arguments, --args and --args-for excluded
	valid                          func(r nodeRun) error      // the output read back is usable
}

// reportJob is the per-node sweep's job: `nodecheck run`, its JSON report on stdout in
// OUT/NODE.json and stderr in OUT/NODE.err.
func reportJob(o options) jobKind {
	in := func(ext string) func(string) string {
		return func(node string) string { return filepath.Join(o.out, node+ext) }
	}
	return jobKind{dirs: []string{o.out}, output: in(".json"), stdout: in(".json"), stderr: in(".err"), script: in(".sh"),
		argv:  func(string) []string { return append([]string{o.nodecheck}, nodecheckArgs...) },
		valid: func(r nodeRun) error { _, err := reportOf(r); return err }}
}

// sweep submits one exclusive job per node, waits for them until the deadline, cancels what
// has not finished, and reads back each node's output. The error is for what stops the sweep
// as a whole (no nodes, Slurm not answering, an unwritable --out): a usageError or a
// slurmError; runs is then nil, or holds every node when only the submission failed.
func sweep(ctx context.Context, s *slurmClient, o options, job jobKind, log io.Writer) ([]nodeRun, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	nodes, err := resolveNodes(ctx, s, o)
	if err != nil {
		return nil, err
	}
	perNode, err := perNodeArgs(o, nodes)
	if err != nil {
		return nil, err
	}
	for _, d := range job.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, usagef("--out: %v", err)
		}
	}

	runs := make([]nodeRun, len(nodes))
	for i, n := range nodes {
		runs[i] = nodeRun{Node: n.name}
		if err := checkNodeName(n.name); err != nil {
			// Before the name becomes a path: no file, no job, and never a drain.
			runs[i].Skipped = fmt.Sprintf("refused: the node name is not a plain host name (%v): no job, no file", err)
			fmt.Fprintf(log, "fleet-sweep: node %q: %s\n", n.name, runs[i].Skipped)
			continue
		}
		runs[i].OutputPath = job.output(n.name)
		if why := n.unavailable(); why != "" {
			runs[i].Skipped = why
			continue
		}
		// A report left by an earlier sweep must not pass for this one's.
		for _, p := range []string{job.output(n.name), job.stdout(n.name), job.stderr(n.name)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, usagef("--out: %v", err)
			}
		}
	}

	submitAll(ctx, s, runs, func(r *nodeRun) (jobSpec, error) {
		script := job.script(r.Node)
		args := sbatchArgs(o, r.Node, deadline, job.stdout(r.Node), job.stderr(r.Node), script)
		argv := append(append(job.argv(r.Node), o.args...), perNode[r.Node]...)
		return jobSpec{args: args, script: script, body: batchScript("node "+r.Node, filepath.Join(s.bin, "sbatch"), args, argv)}, nil
	}, log)
	submitted, sbatchErrs := 0, 0
	for _, r := range runs {
		switch {
		case r.JobID != "":
			submitted++
		case strings.HasPrefix(r.Skipped, "sbatch"):
			sbatchErrs++
		}
	}
	fmt.Fprintf(log, "fleet-sweep: jobs submitted: %d, nodes skipped: %d; waiting until %s at the latest\n", submitted, len(runs)-submitted, deadline.Format(time.TimeOnly))
	if submitted == 0 && sbatchErrs > 0 {
		return runs, slurmError{errors.New("no job could be submitted: " + firstSkip(runs))}
	}

	interrupted := wait(ctx, s, o.poll, runs, nil, log)
	cancelLeft(ctx, s, runs, interrupted, log)

	// Reading back gets its own budget too: the wait for late files, then one sinfo.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), o.outputWait+o.slurmTimeout)
	defer rcancel()
	collect(rctx, s, o, job, runs)
	return runs, nil
}

// resolveNodes lists the nodes to sweep with their states: the --nodes hostlist (each must be
// known to Slurm, in --partition when given), or every node of --partition.
func resolveNodes(ctx context.Context, s *slurmClient, o options) ([]nodeState, error) {
	var want []string
	if o.nodes != "" {
		all, err := slurm.ExpandHostlist(o.nodes)
		if err != nil {
			return nil, usagef("--nodes: %v", err)
		}
		seen := map[string]bool{}
		for _, n := range all {
			if !seen[n] {
				seen[n] = true
				want = append(want, n)
			}
		}
		if len(want) == 0 {
			return nil, usagef("--nodes %q: no node names", o.nodes)
		}
	}
	listed, err := s.nodeStates(ctx, o.partition, want)
	if err != nil {
		return nil, slurmError{err}
	}
	if want == nil {
		if len(listed) == 0 {
			return nil, usagef("sinfo lists no nodes in partition %q: does it exist?", o.partition)
		}
		return listed, nil
	}
	byName := map[string]nodeState{}
	for _, n := range listed {
		byName[n.name] = n
	}
	var nodes []nodeState
	var unknown []string
	for _, n := range want {
		st, ok := byName[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		nodes = append(nodes, st)
	}
	if len(unknown) > 0 {
		where := "Slurm"
		if o.partition != "" {
			where = "partition " + o.partition
		}
		return nil, usagef("--nodes: %s not in %s (sinfo lists no such node)", slurm.CompressHostlist(unknown), where)
	}
	return nodes, nil
}

// jobSpec is one batch job: its sbatch options (the script's path last) and the script.
type jobSpec struct {
	args   []string
	script string // where the script is written
	body   string
}

// submitAll writes each run's batch script and submits it, submitWorkers at a time, until the
// context ends. A run whose submission fails is skipped with sbatch's error; after
// maxSubmitFailures failures in a row the runs left are skipped without a call.
func submitAll(ctx context.Context, s *slurmClient, runs []nodeRun, spec func(r *nodeRun) (jobSpec, error), log io.Writer) {
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures int    // in a row
		lastErr  string // the last of them
	)
	stopped := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return failures >= maxSubmitFailures, lastErr
	}
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			failures = 0
			return
		}
		failures++
		lastErr = err.Error()
	}
	for range submitWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := &runs[i]
				if ctx.Err() != nil {
					r.Skipped = "sbatch not run: the sweep ended (deadline or interrupt) during submission"
					continue
				}
				if stop, last := stopped(); stop {
					r.Skipped = fmt.Sprintf("sbatch not run: the submission stopped after %d failures in a row (the last: %s)", maxSubmitFailures, last)
					continue
				}
				js, err := spec(r)
				if err == nil {
					err = os.WriteFile(js.script, []byte(js.body), 0o755)
				}
				if err != nil {
					r.Skipped = "sbatch not run: " + err.Error()
					continue
				}
				id, err := s.submit(ctx, js.args)
				note(err)
				if err != nil {
					r.Skipped = err.Error()
					fmt.Fprintf(log, "fleet-sweep: %s: %v\n", r.Node, err)
					continue
				}
				r.JobID = id
			}
		}()
	}
	for i := range runs {
		if runs[i].Skipped == "" {
			work <- i
		}
	}
	close(work)
	wg.Wait()
}

// sbatchArgs are the options of one node's job: that node alone and whole (--exclusive: no
// other job on it, and on Slurm 22.05 every GPU of the node: SLURM_JOB_GPUS lists them all),
// stdout (the JSON report) and stderr to --out, no requeue (a failed launch, such as a prolog
// that drains the node, ends the job instead of holding it), and a time limit that ends with
// the sweep.
func sbatchArgs(o options, node string, deadline time.Time, stdout, stderr, script string) []string {
	minutes := max(1, int((time.Until(deadline)+time.Minute-1)/time.Minute))
	args := []string{"--parsable",
		"--job-name=" + o.jobName,
		"--nodelist=" + node, "--nodes=1", "--ntasks=1", "--exclusive",
		"--output=" + stdout, "--error=" + stderr,
		"--open-mode=truncate", "--no-requeue", "--chdir=/",
		"--time=" + strconv.Itoa(minutes),
	}
	if o.partition != "" {
		args = append(args, "--partition="+o.partition)
	}
	args = append(args, o.sbatchArgs...)
	return append(args, script)
}

// batchScript is the job: argv, exec'd so that its exit status is the job's. The sbatch
// command line is kept in a comment, to resubmit one job by hand. what names the job: "node
// n1".
func batchScript(what, sbatch string, sbatchArgs, argv []string) string {
	q := func(ws []string) string {
		out := make([]string, len(ws))
		for i, w := range ws {
			out[i] = shellQuote(w)
		}
		return strings.Join(out, " ")
	}
	return "#!/bin/sh\n" +
		"# nodecheck fleet sweep (cmd/fleet-sweep), " + what + ", submitted as:\n" +
		"#   " + q(append([]string{sbatch}, sbatchArgs...)) + "\n" +
		"exec " + q(argv) + "\n"
}

// pollInterval is the wait between squeue calls for n jobs: every 2 s, plus 2 ms per job, at
// most 10 s. Each call lists every job waited for, so the interval grows with them: 4,096 jobs
// cost slurmctld one 0.3 s listing every 10 s. A positive configured interval wins.
func pollInterval(configured time.Duration, n int) time.Duration {
	if configured > 0 {
		return configured
	}
	return min(2*time.Second+time.Duration(n)*2*time.Millisecond, 10*time.Second)
}

// wait polls squeue, one call for all the jobs still active, until every job has finished or
// left the queue, or the context ends. With a run limit (lim, non-nil for the multi-node
// jobs), a job running past it is cancelled (killOverdue) and waited for as the others. It
// reports whether the context ended by interruption rather than the deadline.
func wait(ctx context.Context, s *slurmClient, poll time.Duration, runs []nodeRun, lim *jobLimit, log io.Writer) bool {
	var lastErr string
	for {
		active := activeJobs(runs)
		if len(active) == 0 {
			return false
		}
		ids := make([]string, len(active))
		for i, r := range active {
			ids[i] = r.JobID
		}
		jobs, err := s.queue(ctx, ids)
		switch {
		case err == nil:
			now := time.Now()
			for _, r := range active {
				j, ok := jobs[r.JobID]
				if !ok {
					r.Gone = true
					continue
				}
				r.State, r.StateReason = j.state, j.reason
				if r.Started.IsZero() && (j.state == "RUNNING" || j.state == "COMPLETING" || finished(j.state)) {
					r.Started = now
				}
				if finished(j.state) {
					r.ExitCode = j.exitCode
					r.RunTime = now.Sub(r.Started)
					lim.observe(r)
				}
			}
			left := activeJobs(runs)
			if len(left) == 0 {
				return false
			}
			killOverdue(ctx, s, lim, left, now, log)
		case ctx.Err() == nil:
			// The controller may come back before the deadline: say so once, and go on.
			if msg := err.Error(); msg != lastErr {
				fmt.Fprintf(log, "fleet-sweep: %v (retrying)\n", err)
				lastErr = msg
			}
		}
		select {
		case <-ctx.Done():
			return !errors.Is(ctx.Err(), context.DeadlineExceeded)
		case <-time.After(pollInterval(poll, len(ids))):
		}
	}
}

// killOverdue cancels, in one scancel, the active jobs that have run longer than lim's limit
// (none while it has none), and marks them killed. A failed scancel is said and tried again at
// the next poll.
func killOverdue(ctx context.Context, s *slurmClient, lim *jobLimit, active []*nodeRun, now time.Time, log io.Writer) {
	limit := lim.limit()
	if limit <= 0 {
		return
	}
	var over []*nodeRun
	var ids []string
	for _, r := range active {
		if r.Killed == 0 && !r.Started.IsZero() && now.Sub(r.Started) > limit {
			over = append(over, r)
			ids = append(ids, r.JobID)
		}
	}
	if len(over) == 0 {
		return
	}
	if err := s.cancel(ctx, ids); err != nil {
		fmt.Fprintf(log, "fleet-sweep: cancel the jobs past their run limit of %s (%s): %v (retrying)\n", seconds(limit), strings.Join(ids, ","), err)
		return
	}
	for _, r := range over {
		r.Killed, r.Limit = now.Sub(r.Started), limit
		fmt.Fprintf(log, "fleet-sweep: job %s (%s) cancelled after %s: past its run limit of %s\n", r.JobID, r.Node, seconds(r.Killed), seconds(limit))
	}
}

// cancelLeft cancels, in one scancel, the jobs still queued or running when the wait ended,
// with a context of its own: the wait's is done.
func cancelLeft(ctx context.Context, s *slurmClient, runs []nodeRun, interrupted bool, log io.Writer) {
	var left []string
	for i := range runs {
		if runs[i].JobID != "" && !runs[i].Gone && !finished(runs[i].State) {
			left = append(left, runs[i].JobID)
			runs[i].Cancelled = "deadline"
			if interrupted {
				runs[i].Cancelled = "interrupted"
			}
		}
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer ccancel()
	if err := s.cancel(cctx, left); err != nil {
		fmt.Fprintf(log, "fleet-sweep: cancel the jobs left (%s): %v\n", strings.Join(left, ","), err)
		for i := range runs {
			if runs[i].Cancelled != "" {
				runs[i].CancelErr = err.Error()
			}
		}
	}
}

// activeJobs are the submitted jobs that squeue last showed neither finished nor gone.
func activeJobs(runs []nodeRun) []*nodeRun {
	var active []*nodeRun
	for i := range runs {
		if r := &runs[i]; r.JobID != "" && !r.Gone && !finished(r.State) {
			active = append(active, r)
		}
	}
	return active
}

// collect reads each job's report and stderr. A job that finished without a valid report gets
// up to o.outputWait for one to appear (a shared filesystem may show a file written on another
// host a moment late); then one sinfo gives the state of every node left without a report: a
// failed prolog, say, has drained the node with its reason. The jobs' exit codes came with
// their states from squeue: no per-job call.
func collect(ctx context.Context, s *slurmClient, o options, job jobKind, runs []nodeRun) {
	read := func(r *nodeRun) bool {
		r.Output, r.OutputErr = readBounded(r.OutputPath, maxReport)
		return job.valid(*r) == nil
	}
	var bad, late []*nodeRun
	for i := range runs {
		r := &runs[i]
		if r.JobID == "" || read(r) {
			continue
		}
		bad = append(bad, r)
		if r.Cancelled == "" {
			late = append(late, r)
		}
	}
	end := time.Now().Add(o.outputWait)
	for len(late) > 0 && time.Now().Before(end) {
		time.Sleep(min(250*time.Millisecond, time.Until(end)))
		late = slices.DeleteFunc(late, read)
	}
	bad = slices.DeleteFunc(bad, func(r *nodeRun) bool { return job.valid(*r) == nil })
	var nodes []string
	for _, r := range bad {
		if r.State != "PENDING" {
			errb, _ := readTail(job.stderr(r.Node), 4<<10)
			r.Stderr = lastLine(string(errb))
		}
		nodes = append(nodes, r.Node)
	}
	if len(nodes) == 0 {
		return
	}
	if states, err := s.nodeStates(ctx, "", nodes); err == nil {
		by := map[string]nodeState{}
		for _, n := range states {
			by[n.name] = n
		}
		for _, r := range bad {
			if why := by[r.Node].unavailable(); why != "" {
				r.NodeNow = "now " + text.OneLine(why, maxLine)
			}
		}
	}
}

// readBounded reads at most max bytes of path; a longer file is an error.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d MiB", limit>>20)
	}
	return b, nil
}

// readTail reads the last n bytes of path.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

func firstSkip(runs []nodeRun) string {
	for _, r := range runs {
		if strings.HasPrefix(r.Skipped, "sbatch") {
			return r.Node + ": " + r.Skipped
		}
	}
	return ""
}

func names(nodes []nodeState) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.name
	}
	return out
}
