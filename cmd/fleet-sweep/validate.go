package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
	"github.com/nodecheck/nodecheck/drain"
)

// A validation sweep (--validate LEVEL) runs `nodecheck validate --level LEVEL --json` on
// idle nodes as exclusive jobs, at most --max-parallel at a time, stalest first, each job
// with the level's time limit; with --maint-reservation each job runs in a MAINT reservation
// of its node, created just before and always removed. Nodes are checked idle with sinfo right
// before each submission, and a reservation is refused by Slurm while a job holds the node:
// a node with a user job is never validated. The policy (order, baselines, slow, Extra, drain
// summaries) is in ./validation; this file runs the jobs.

// validateArgs are what every validation job gives nodecheck before --args and --args-for.
func validateArgs(level string) []string { return []string{"validate", "--level", level, "--json"} }

// valRun is one node of a validation sweep.
type valRun struct {
	Node        string
	Skipped     string // why it was not validated: its state, a refused reservation, sbatch
	Reservation string // the reservation this sweep made for it; "" none (or removed: Removed)
	Removed     bool
	Resumed     bool // --return-to-service: resumed into its reservation
	JobID       string
	State       string // the job's last squeue state
	ExitCode    string
	Cancelled   string // "deadline" or "interrupted"
	Started     time.Time
	RunTime     time.Duration
	Result      *validation.Result
	ResultErr   string // why there is no result
	Stderr      string
	Outcome     string // --return-to-service: "returned to service", "kept drained: ..."
	Extra       string // the Extra written
	ExtraErr    string
}

// verdict is the node's verdict: passed, failed, undecided (no usable result counts as
// undecided, never passed), or "" when it was not validated.
func (r *valRun) verdict() string {
	switch {
	case r.JobID == "":
		return ""
	case r.Result != nil:
		return r.Result.Verdict
	}
	return validation.Undecided
}

// valSweep is one validation sweep's state while it runs.
type valSweep struct {
	s     *slurmClient
	o     options
	log   io.Writer
	user  string
	stamp string // in reservation names, so that two sweeps never share one
	runs  []*valRun
}

// validateSweep runs the validation jobs and returns each node's run. The error stops the
// sweep as a whole: no nodes, Slurm not answering, an unwritable --out.
func validateSweep(ctx context.Context, s *slurmClient, o options, log io.Writer) ([]*valRun, error) {
	v := o.validate
	nodes, err := resolveNodes(ctx, s, o)
	if err != nil {
		return nil, err
	}
	if !v.timeoutSet {
		// Enough for every node in turn, --max-parallel at a time, each to its limit.
		rounds := (len(nodes) + v.maxParallel - 1) / v.maxParallel
		o.timeout = time.Duration(rounds*v.level.JobMinutes())*time.Minute + 2*time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, usagef("--out: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("who runs the sweep (the reservations' user): %w", err)
	}
	vs := &valSweep{s: s, o: o, log: log, user: u.Username, stamp: time.Now().UTC().Format("20060102T150405")}
	perNode, err := perNodeArgs(o, nodes)
	if err != nil {
		return nil, err
	}
	var eligible []string
	byName := map[string]*valRun{}
	for _, n := range nodes {
		r := &valRun{Node: n.name}
		vs.runs = append(vs.runs, r)
		byName[n.name] = r
		if err := checkNodeName(n.name); err != nil {
			r.Skipped = fmt.Sprintf("refused: the node name is not a plain host name (%v)", err)
			continue
		}
		if why := vs.notEligible(n); why != "" {
			r.Skipped = why
			continue
		}
		for _, ext := range []string{".validate.json", ".validate.err"} {
			if err := os.Remove(filepath.Join(o.out, n.name+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, usagef("--out: %v", err)
			}
		}
		eligible = append(eligible, n.name)
	}
	order := validation.Stalest(eligible, vs.lastPassed(ctx))
	fmt.Fprintf(log, "fleet-sweep: validate %s: %d of %d nodes eligible, %d at a time, stalest first: %s; until %s at the latest\n",
		v.level.Name, len(order), len(nodes), v.maxParallel, strings.Join(order, " "), time.Now().Add(o.timeout).Format(time.TimeOnly))
	// Reservations go, and a node resumed for --return-to-service is drained again, whatever
	// ends the sweep.
	defer vs.cleanup(ctx)
	vs.loop(ctx, order, byName, perNode)
	return vs.runs, nil
}

// perNodeArgs are the --args-for arguments of each node; a node named there must be swept.
func perNodeArgs(o options, nodes []nodeState) (map[string][]string, error) {
	perNode := map[string][]string{}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.name] = true
	}
	for _, a := range o.argsFor {
		for _, n := range a.nodes {
			if !known[n] {
				return nil, usagef("--args-for %s: node %s is not swept (nodes: %s)", a.expr, n, slurm.CompressHostlist(names(nodes)))
			}
			perNode[n] = append(perNode[n], a.args...)
		}
	}
	return perNode, nil
}

// notEligible says why a node in this state is not validated now; "" when it is. A sweep
// validates idle nodes only: "idle" exactly, no flag (a job, a reservation, a drain, a node
// not responding all show in sinfo's state). --return-to-service takes drained nodes: idle
// ones are in service already.
func (vs *valSweep) notEligible(n nodeState) string {
	if vs.o.validate.returnToService {
		if n.state == "drained" {
			return ""
		}
		return "not drained (" + n.state + "): --return-to-service takes drained nodes only"
	}
	if n.state == "idle" {
		return ""
	}
	why := "not idle: " + n.state
	switch strings.TrimRight(n.state, "*~#!%$@^-+") {
	case "mixed", "allocated", "completing":
		why += " (a job holds it)"
	}
	if n.reason != "" {
		why += ": " + n.reason
	}
	return why
}

// lastPassed is each node's last pass: from --validation-state, and from validated_at in the
// nodes' Extra where Slurm has it (23.11+), the later of the two.
func (vs *valSweep) lastPassed(ctx context.Context) map[string]time.Time {
	last := map[string]time.Time{}
	if vs.o.validate.statePath != "" {
		st, err := validation.LoadState(vs.o.validate.statePath)
		if err != nil {
			fmt.Fprintf(vs.log, "fleet-sweep: --validation-state: %v (ordering by name)\n", err)
		}
		last = st.LastPassed()
	}
	extras, err := vs.s.nodeExtras(ctx, "")
	if err != nil {
		return last // 22.05 has no --json: the state file alone orders
	}
	for node, extra := range extras {
		if at, ok := validatedAt(extra); ok && at.After(last[node]) {
			last[node] = at
		}
	}
	return last
}

// validatedAt reads validated_at from a node's Extra.
func validatedAt(extra string) (time.Time, bool) {
	_, rest, ok := strings.Cut(extra, `"`+validation.KeyAt+`":`)
	if !ok {
		return time.Time{}, false
	}
	end := strings.IndexAny(rest, ",}")
	if end < 0 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(rest[:end]), 10, 64)
	if err != nil || sec <= 0 {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// loop submits the nodes in order, at most --max-parallel at a time, and waits for them. Each
// batch of free slots is filled after one sinfo of the nodes about to get a job and one list
// of the active reservations: a node someone else reserved is left alone.
func (vs *valSweep) loop(ctx context.Context, order []string, byName map[string]*valRun, perNode map[string][]string) {
	var active []*valRun
	for ctx.Err() == nil {
		if free := vs.o.validate.maxParallel - len(active); free > 0 && len(order) > 0 {
			batch := order[:min(free, len(order))]
			order = order[len(batch):]
			states, err := vs.s.nodeStates(ctx, "", batch)
			now := map[string]nodeState{}
			for _, st := range states {
				now[st.name] = st
			}
			var held map[string][]string
			if err == nil {
				held, err = vs.s.activeReservations(ctx)
			}
			for _, n := range batch {
				r := byName[n]
				st, ok := now[n]
				switch {
				case err != nil:
					r.Skipped = "not submitted: reading its state right before: " + err.Error()
				case len(held[n]) > 0:
					r.Skipped = "not submitted: in reservation " + strings.Join(held[n], ",") + ", not this sweep's"
				case !ok:
					r.Skipped = "not submitted: sinfo no longer lists it"
				default:
					if why := vs.notEligible(st); why != "" {
						r.Skipped = "changed before submission: " + why
					} else if vs.start(ctx, r, perNode[n]) {
						active = append(active, r)
					}
				}
			}
		}
		if len(active) == 0 && len(order) == 0 {
			return
		}
		if len(active) > 0 {
			active = vs.poll(ctx, active)
		}
		if len(active) < vs.o.validate.maxParallel && len(order) > 0 {
			continue // a slot is free: fill it now
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollInterval(vs.o.poll, len(active))):
		}
	}
	vs.cancelActive(ctx, active)
}

// start makes the node's reservation (and, for --return-to-service, resumes the node into
// it), writes the job script and submits it. It reports whether a job was submitted; if not,
// r.Skipped says why, and what it made is undone by cleanup.
func (vs *valSweep) start(ctx context.Context, r *valRun, perNode []string) bool {
	o, l := vs.o, vs.o.validate.level
	if o.validate.reservation {
		name := "nodecheck-validate-" + r.Node + "-" + vs.stamp
		// The reservation outlives the job's limit by a little; it is removed when the job ends.
		if err := vs.s.createReservation(ctx, name, r.Node, vs.user, l.JobMinutes()+5); err != nil {
			r.Skipped = "not submitted: the reservation was refused: " + err.Error()
			fmt.Fprintf(vs.log, "fleet-sweep: %s: %s\n", r.Node, r.Skipped)
			return false
		}
		r.Reservation = name
		if o.validate.returnToService {
			if err := vs.s.updateNode(ctx, r.Node, "State=RESUME"); err != nil {
				r.Skipped = "not submitted: resume into the reservation: " + err.Error()
				return false
			}
			r.Resumed = true
			vs.waitResponding(ctx, r.Node)
		}
	}
	script := filepath.Join(o.out, r.Node+".validate.sh")
	args := []string{"--parsable", "--job-name=nodecheck-validate",
		"--nodelist=" + r.Node, "--nodes=1", "--ntasks=1", "--exclusive",
		"--output=" + filepath.Join(o.out, r.Node+".validate.json"),
		"--error=" + filepath.Join(o.out, r.Node+".validate.err"),
		"--open-mode=truncate", "--no-requeue", "--chdir=/",
		"--time=" + strconv.Itoa(l.JobMinutes())}
	if o.partition != "" {
		args = append(args, "--partition="+o.partition)
	}
	if r.Reservation != "" {
		args = append(args, "--reservation="+r.Reservation)
	}
	args = append(append(args, o.sbatchArgs...), script)
	argv := append(append(append([]string{o.nodecheck}, validateArgs(l.Name)...), o.args...), perNode...)
	body := batchScript("validate "+l.Name+" on node "+r.Node, filepath.Join(vs.s.bin, "sbatch"), args, argv)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		r.Skipped = "sbatch not run: " + err.Error()
		return false
	}
	id, err := vs.s.submit(ctx, args)
	if err != nil {
		r.Skipped = err.Error()
		fmt.Fprintf(vs.log, "fleet-sweep: %s: %v\n", r.Node, err)
		return false
	}
	r.JobID = id
	return true
}

// waitResponding waits, up to 10 s, for a node just resumed to lose sinfo's '*' (not
// responding), which it shows for a moment after `State=RESUME`: a job submitted then waits
// for the next periodic scheduling pass (30-40 s seen on 24.11.5) instead of starting at once.
func (vs *valSweep) waitResponding(ctx context.Context, node string) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		st, err := vs.s.nodeStates(ctx, "", []string{node})
		if err == nil && len(st) == 1 && !strings.Contains(st[0].state, "*") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// poll asks squeue about the active jobs (one call), finishes those that ended and returns the
// others.
func (vs *valSweep) poll(ctx context.Context, active []*valRun) []*valRun {
	ids := make([]string, len(active))
	for i, r := range active {
		ids[i] = r.JobID
	}
	jobs, err := vs.s.queue(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(vs.log, "fleet-sweep: %v (retrying)\n", err)
		}
		return active
	}
	now := time.Now()
	var left []*valRun
	for _, r := range active {
		j, ok := jobs[r.JobID]
		if ok {
			r.State, r.ExitCode = j.state, j.exitCode
			if r.Started.IsZero() && j.state != "PENDING" {
				r.Started = now
			}
		}
		if ok && !finished(j.state) {
			left = append(left, r)
			continue
		}
		if !r.Started.IsZero() {
			r.RunTime = now.Sub(r.Started)
		}
		vs.finish(ctx, r)
	}
	return left
}

// cancelActive cancels, in one scancel, the jobs still running when the sweep ended, and
// finishes them: no result, undecided.
func (vs *valSweep) cancelActive(ctx context.Context, active []*valRun) {
	if len(active) == 0 {
		return
	}
	why := "deadline"
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "interrupted"
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*vs.s.timeout)
	defer cancel()
	ids := make([]string, len(active))
	for i, r := range active {
		ids[i] = r.JobID
		r.Cancelled = why
	}
	if err := vs.s.cancel(cctx, ids); err != nil {
		fmt.Fprintf(vs.log, "fleet-sweep: cancel the validation jobs left (%s): %v\n", strings.Join(ids, ","), err)
	}
	for _, r := range active {
		vs.finish(cctx, r)
	}
}

// finish reads a finished job's result and, for --return-to-service, returns the node to
// service (passed: its reservation goes) or drains it again with why (anything else) before
// its reservation goes, so that no user job reaches a node that did not pass.
func (vs *valSweep) finish(ctx context.Context, r *valRun) {
	ctx = context.WithoutCancel(ctx)
	path := filepath.Join(vs.o.out, r.Node+".validate.json")
	read := func() bool {
		data, err := readBounded(path, maxReport)
		if err != nil {
			r.ResultErr = err.Error()
			return false
		}
		res, err := validation.Parse(data, r.Node, vs.o.validate.level.Name)
		if err != nil {
			r.ResultErr = filepath.Base(path) + ": " + err.Error()
			return false
		}
		r.Result, r.ResultErr = &res, ""
		return true
	}
	if !read() && r.Cancelled == "" {
		for end := time.Now().Add(vs.o.outputWait); time.Now().Before(end) && !read(); {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if r.Result == nil {
		errb, _ := readTail(filepath.Join(vs.o.out, r.Node+".validate.err"), 4<<10)
		r.Stderr = lastLine(string(errb))
	}
	if vs.o.validate.returnToService && r.Resumed {
		vs.returnOrDrain(ctx, r)
	}
	vs.removeReservation(ctx, r)
}

// returnOrDrain decides a repaired node: in service when it passed, drained again otherwise.
func (vs *valSweep) returnOrDrain(ctx context.Context, r *valRun) {
	if r.verdict() == validation.Passed {
		r.Outcome = "returned to service: validate " + vs.o.validate.level.Name + " passed"
		return
	}
	verdict := r.verdict()
	if verdict == "" {
		verdict = "not run"
	}
	summary, remedy := "validate "+vs.o.validate.level.Name+": "+verdict+": "+r.why(), "admin"
	if r.Result != nil && r.Result.Verdict == validation.Failed {
		summary, remedy = validation.FailSummary(*r.Result)
	}
	reason := drain.FormatReason(vs.o.drainPrefix, []drain.Failure{{Check: fleetCheck, Summary: summary, Remedy: remedy}})
	if err := vs.s.updateNode(ctx, r.Node, "State=DRAIN", "Reason="+reason); err != nil {
		r.Outcome = "NOT drained again (" + err.Error() + "): its reservation is kept, so no user job reaches it"
		r.Reservation, r.Removed = "", false // never removed: the reservation is what holds it
		fmt.Fprintf(vs.log, "fleet-sweep: %s: %s\n", r.Node, r.Outcome)
		return
	}
	r.Resumed = false
	r.Outcome = "kept drained: " + reason
}

// why is a run without a passing result in words.
func (r *valRun) why() string {
	switch {
	case r.JobID == "":
		return r.Skipped
	case r.Result != nil && r.Result.Refused != "":
		return "refused: " + text.OneLine(r.Result.Refused, maxLine)
	case r.Result != nil && r.Result.Verdict == validation.Undecided:
		return "undecided" + firstTests(r.Result)
	case r.Cancelled != "":
		return "job " + r.JobID + " cancelled (" + r.Cancelled + ")"
	}
	s := "job " + r.JobID + " " + r.State
	if r.ExitCode != "" && r.ExitCode != "0:0" {
		s += " (exit " + r.ExitCode + ")"
	}
	if r.ResultErr != "" {
		s += ", " + r.ResultErr
	}
	if r.Stderr != "" {
		s += "; stderr: " + r.Stderr
	}
	return s
}

// firstTests names the tests that kept a result undecided: ": nvbandwidth skip, nccl skip".
func firstTests(res *validation.Result) string {
	var ts []string
	for _, t := range res.Tests {
		if t.Status != "ok" {
			ts = append(ts, t.Name+" "+t.Status)
		}
	}
	if len(ts) == 0 {
		return ""
	}
	return ": " + strings.Join(ts[:min(3, len(ts))], ", ")
}

// removeReservation removes the node's reservation, if this sweep made one.
func (vs *valSweep) removeReservation(ctx context.Context, r *valRun) {
	if r.Reservation == "" || r.Removed {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*vs.s.timeout)
	defer cancel()
	if err := vs.s.deleteReservation(cctx, r.Reservation); err != nil {
		fmt.Fprintf(vs.log, "fleet-sweep: %s: remove reservation %s: %v: remove it by hand (scontrol delete ReservationName=%s)\n", r.Node, r.Reservation, err, r.Reservation)
		return
	}
	r.Removed = true
}

// cleanup runs when the sweep ends, however: a node resumed for --return-to-service whose
// validation did not finish is drained again, and every reservation left is removed.
func (vs *valSweep) cleanup(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, r := range vs.runs {
		if r.Resumed && r.Outcome == "" {
			vs.returnOrDrain(ctx, r)
		}
		vs.removeReservation(ctx, r)
	}
}
