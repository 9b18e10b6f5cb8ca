// Package preempt measures a preemption window on a real Slurm: how long a preempted job's
// application has between the first signal Slurm sends it and its end (requeue, cancel or
// suspension), against the window the site requires. It submits its own two test jobs, on a
// node the admin names that is idle (or in a reservation), and cancels them when done; it never
// touches other jobs.
package preempt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultWindow is the deployment checklist's window: preemption sends SIGCONT/SIGTERM "at
// least 180 seconds before job suspension".
const DefaultWindow = 180 * time.Second

// Options say where and how to measure.
type Options struct {
	Partition string // the preempted job's partition (-p)
	QOS       string // its QOS (-q); empty for the partition's default
	// PreemptorPartition and PreemptorQOS are the preempting job's; empty keeps the victim's.
	PreemptorPartition string
	PreemptorQOS       string
	// PreemptorExclusive makes the preempting job take the whole node (--exclusive), as
	// whole-node jobs do; by default it asks for one CPU of the node the test job holds. Under
	// PreemptMode=...,GANG that decides how the test job is preempted (see Measure).
	PreemptorExclusive bool
	Node               string // the node both jobs run on (-w); it must be idle unless Reservation is set
	Reservation        string // --reservation for both jobs, where the node is set aside
	// Dir is a directory the node and this host both see (a shared file system, or this
	// host's when it is the node): the test job writes its script's record there.
	Dir      string
	Window   time.Duration // the required window (DefaultWindow when zero)
	Timeout  time.Duration // how long to wait for the preemption to end the job (10 min when zero)
	SlurmBin string        // the directory of sbatch, squeue, scancel, sinfo ("/usr/bin" when empty)
	Env      []string      // the Slurm clients' environment (SLURM_CONF ...); nil for this process's
	Poll     time.Duration // how often to look (200 ms when zero)
	// MemMB is --mem for both jobs; 0 leaves it out. SUSPEND needs it: Slurm suspends only
	// where memory is a consumable resource (CR_*_Memory), a suspended job keeps its memory,
	// and the preempting job must fit beside it (without --mem the test job gets all of it).
	MemMB int
}

// Measurement is what one preemption did to the test job.
type Measurement struct {
	Partition, QOS, Node string
	Victim, Preemptor    string    // job ids
	Preempted            time.Time // when the preempting job was submitted
	FirstSignal          time.Time // the first SIGTERM, SIGCONT or SIGTSTP the application got; zero for none
	Signals              []string  // "TERM +0.01s", in order
	// Ended is the application's last sign of life: before it was killed, requeued, or
	// stopped (SIGSTOP, which no program can record: the signs of life stop while Slurm
	// says SUSPENDED).
	Ended    time.Time
	Outcome  string // the test job's state after: PENDING (requeued), SUSPENDED, gone (cancelled)...
	Window   time.Duration
	Required time.Duration
	Promise  Promise // what the configuration promises: GraceTime, or suspend_grace_time
	// PreemptorExclusive: the preempting job took the whole node.
	PreemptorExclusive bool
}

// Verdict is the judgement of a measurement.
type Verdict struct {
	OK bool // the window is at least the required one
	// BelowPromise: the window is more than PromiseSlack shorter than the configured grace
	// time (Slurm did not give what the configuration says, or it was read wrong).
	BelowPromise bool
	Summary      string
}

// PromiseSlack is how much shorter than the configured grace time a window may be before the
// report flags it: the signs of life come every 100 ms, and a loaded node delays them.
const PromiseSlack = time.Second

// Judge compares the measured window with the required one: the application must get its
// first signal at least Required before its end. No signal at all is a window of zero. It
// also flags a window shorter than the configured grace time promises.
func Judge(m Measurement) Verdict {
	where := "partition " + m.Partition
	if m.QOS != "" {
		where += " QOS " + m.QOS
	}
	promised := "grace time not known"
	if m.Promise.Source != "" {
		promised = "configured: " + m.Promise.Source
	}
	suspend := m.Outcome == "SUSPENDED"
	if m.FirstSignal.IsZero() {
		return Verdict{false, m.Promise.Known && m.Promise.Grace > PromiseSlack,
			fmt.Sprintf("%s: the job was ended (%s) with no SIGTERM, SIGCONT or SIGTSTP first: no time to checkpoint, want %s (%s)", where, m.Outcome, m.Required, promised)}
	}
	w := m.Window.Round(10 * time.Millisecond)
	v := Verdict{OK: m.Window >= m.Required}
	end := "end"
	if suspend {
		end = "suspension (SIGSTOP)"
	}
	if v.OK {
		v.Summary = fmt.Sprintf("%s: %s from the first signal to the job's %s (%s), at least the required %s (%s)", where, w, end, m.Outcome, m.Required, promised)
	} else {
		raise := "raise GraceTime"
		if suspend {
			raise = "raise PreemptParameters=suspend_grace_time (Slurm 23.02.5 and later; GraceTime does not apply to SUSPEND)"
		}
		v.Summary = fmt.Sprintf("%s: %s from the first signal to the job's %s (%s), less than the required %s (%s): %s", where, w, end, m.Outcome, m.Required, promised, raise)
	}
	if m.Promise.Known && m.Window < m.Promise.Grace-PromiseSlack {
		v.BelowPromise = true
		v.Summary += fmt.Sprintf("; %s shorter than the configured %s promises", (m.Promise.Grace - m.Window).Round(10*time.Millisecond), m.Promise.Grace)
		if m.Promise.Gang && !suspend && !m.PreemptorExclusive {
			v.Summary += " (with GANG in PreemptMode, Slurm starts a preempting job that does not take the whole node on top of this one and ends this one without GraceTime)"
		}
	}
	return v
}

// victimScript runs the application as a job step (Slurm signals a batch job's steps, not its
// batch shell, when it preempts) that records each SIGTERM, SIGCONT and SIGTSTP (the first
// signal of a suspension), with the time, and leaves a sign of life every 100 ms. Its record
// is DIR/preempt-JOBID-RESTARTS.events and .alive. The times come from bash 5's
// EPOCHREALTIME, which starts no process: SIGTSTP stops every process of the step but the
// shell (which records it), so a date or mv caught by it would hold the heartbeat, and the
// record, until the job is resumed. Older bash uses date.
const victimScript = `#!/bin/bash
# nodecheck preempt-window: the test job that is preempted.
exec srun --ntasks=1 /bin/bash -c '
export LC_ALL=C
f="$0/preempt-$SLURM_JOB_ID-${SLURM_RESTART_COUNT:-0}"
echo "start ${EPOCHREALTIME:-$(date +%s.%N)}" >> "$f.events"
for s in TERM CONT TSTP; do trap "echo $s \${EPOCHREALTIME:-\$(date +%s.%N)} >> \"$f.events\"" $s; done
while :; do echo "${EPOCHREALTIME:-$(date +%s.%N)}" > "$f.alive"; sleep 0.1 & wait $!; done
' "$1"
`

// Measure submits the test job, waits until its application runs, submits the preempting
// job, and follows the test job until it has ended; both jobs are cancelled on return.
func Measure(ctx context.Context, o Options) (Measurement, error) {
	o.defaults()
	m := Measurement{Partition: o.Partition, QOS: o.QOS, Node: o.Node, Required: o.Window, PreemptorExclusive: o.PreemptorExclusive}
	if err := o.check(ctx); err != nil {
		return m, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	script := filepath.Join(o.Dir, "preempt-victim.sh")
	if err := os.WriteFile(script, []byte(victimScript), 0o755); err != nil {
		return m, fmt.Errorf("write the test job: %w", err)
	}
	defer os.Remove(script)
	// The test job holds the whole node (--exclusive), so the preempting job, even of one
	// CPU, must preempt it. Observed on 22.05.8 and 24.11.5 with PreemptMode=SUSPEND,GANG:
	// a preempting job of one CPU is started on top of the test job and the gang scheduler
	// suspends it, or kills or requeues it at once, without GraceTime; an --exclusive one is
	// started only once the test job is gone: GraceTime applies, and a SUSPEND partition's
	// job was not suspended (the preempting job stayed pending, Reason=Resources).
	args := o.jobArgs(o.Partition, o.QOS, "nodecheck-preempt-victim", true)
	out, err := o.slurm(ctx, "sbatch", append(args, "--requeue", script, o.Dir)...)
	if err != nil {
		return m, err
	}
	m.Victim = strings.TrimSpace(strings.Split(out, ";")[0])
	defer o.cancel(m.Victim)
	defer o.removeRecord(m.Victim)
	if err := o.waitAlive(ctx, m.Victim); err != nil {
		return m, err
	}
	args = o.jobArgs(o.PreemptorPartition, o.PreemptorQOS, "nodecheck-preemptor", o.PreemptorExclusive)
	m.Preempted = time.Now()
	// It runs until it is cancelled: gang scheduling resumes a suspended job when its
	// preemptor ends, and a requeued one would start again; suspend_grace_time can be long.
	sleep := fmt.Sprintf("sleep %d", int(o.Timeout/time.Second)+60)
	out, err = o.slurm(ctx, "sbatch", append(args, "--wrap", sleep)...)
	if err != nil {
		return m, err
	}
	m.Preemptor = strings.TrimSpace(strings.Split(out, ";")[0])
	defer o.cancel(m.Preemptor)
	if err := o.follow(ctx, &m); err != nil {
		return m, err
	}
	if m.Promise, err = o.readPromise(ctx, o.Partition, m.Outcome); err != nil {
		return m, err
	}
	return m, nil
}

func (o *Options) defaults() {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.SlurmBin == "" {
		o.SlurmBin = "/usr/bin"
	}
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.PreemptorPartition == "" {
		o.PreemptorPartition = o.Partition
	}
}

// check refuses to run where it could touch other work: the node must be idle, unless it is
// in the reservation named.
func (o *Options) check(ctx context.Context) error {
	switch {
	case o.Partition == "" || o.Node == "" || o.Dir == "":
		return errors.New("the partition, the node and the directory are required")
	case !filepath.IsAbs(o.Dir) || !filepath.IsAbs(o.SlurmBin):
		return errors.New("the directory and the Slurm clients' directory must be absolute paths")
	}
	if o.Reservation != "" {
		return nil
	}
	out, err := o.slurm(ctx, "sinfo", "-h", "-N", "-n", o.Node, "-o", "%t")
	if err != nil {
		return err
	}
	states := strings.Fields(out)
	if len(states) == 0 {
		return fmt.Errorf("node %s: sinfo knows no such node", o.Node)
	}
	for _, s := range states {
		if s != "idle" {
			return fmt.Errorf("node %s is %s, not idle: measure on an idle node or in a reservation (--reservation), never beside users' jobs", o.Node, s)
		}
	}
	return nil
}

func (o *Options) jobArgs(partition, qos, name string, exclusive bool) []string {
	a := []string{"--parsable", "-p", partition, "-w", o.Node, "-N", "1", "-J", name, "-o", "/dev/null", "-t", "30"}
	if exclusive {
		a = append(a, "--exclusive")
	}
	if qos != "" {
		a = append(a, "-q", qos)
	}
	if o.MemMB > 0 {
		a = append(a, "--mem", strconv.Itoa(o.MemMB))
	}
	if o.Reservation != "" {
		a = append(a, "--reservation", o.Reservation)
	}
	return a
}

// maxClientOutput bounds what a Slurm client may print to this package.
const maxClientOutput = 1 << 20

// slurm runs a Slurm client without a shell, under ctx, and returns its stdout.
func (o *Options) slurm(ctx context.Context, prog string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := exec.CommandContext(cctx, filepath.Join(o.SlurmBin, prog), args...)
	if o.Env != nil {
		c.Env = o.Env
	}
	c.WaitDelay = time.Second
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &limited{w: &stdout}, &limited{w: &stderr}
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

type limited struct {
	w *strings.Builder
}

func (l *limited) Write(p []byte) (int, error) {
	if room := maxClientOutput - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (o *Options) cancel(job string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = o.slurm(ctx, "scancel", job)
}

func (o *Options) record(job string) string { return filepath.Join(o.Dir, "preempt-"+job+"-0") }

func (o *Options) removeRecord(job string) {
	for _, s := range []string{".events", ".alive", ".alive.tmp"} {
		_ = os.Remove(o.record(job) + s)
	}
}

// waitAlive waits for the test job's application to run.
func (o *Options) waitAlive(ctx context.Context, job string) error {
	for {
		if _, err := os.Stat(o.record(job) + ".alive"); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("test job %s did not start on %s: %w", job, o.Node, ctx.Err())
		case <-time.After(o.Poll):
		}
	}
}

// follow watches the test job from the preemption on, until its application shows no life
// for a second and Slurm no longer runs it: it is requeued, cancelled, or SUSPENDED (stopped
// with SIGSTOP, which leaves no record but the end of the signs of life).
func (o *Options) follow(ctx context.Context, m *Measurement) error {
	var alive time.Time // the last sign of life read
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("test job %s still runs %s after the preemption: %w (is %s able to preempt %s?)", m.Victim, time.Since(m.Preempted).Round(time.Second), ctx.Err(), o.PreemptorPartition, o.Partition)
		case <-time.After(o.Poll):
		}
		// The file is rewritten in place (a rename would need a process): it reads empty
		// while being written, and stays so where the application was killed then.
		if t, err := readTime(o.record(m.Victim) + ".alive"); err == nil {
			alive = t
		}
		if alive.IsZero() || time.Since(alive) < time.Second {
			continue
		}
		seen := time.Now()
		state, err := o.slurm(ctx, "squeue", "-h", "-j", m.Victim, "-o", "%T")
		if err != nil && !strings.Contains(err.Error(), "Invalid job id") {
			return err
		}
		state = strings.TrimSpace(state)
		if state == "RUNNING" || state == "SIGNALING" {
			continue // alive but slow to write
		}
		if state == "" {
			state = "gone (cancelled)"
		}
		m.Outcome, m.Ended = state, alive
		return o.readEvents(m, seen)
	}
}

// readEvents reads the signals the application recorded until seen, when Slurm said the job
// no longer ran: a later one (the SIGCONT of a resumption) is not part of the window.
func (o *Options) readEvents(m *Measurement, seen time.Time) error {
	f, err := os.Open(o.record(m.Victim) + ".events")
	if err != nil {
		return fmt.Errorf("read the test job's record: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		what, ts, ok := strings.Cut(sc.Text(), " ")
		if !ok || (what != "TERM" && what != "CONT" && what != "TSTP") {
			continue
		}
		t, err := parseUnix(ts)
		if err != nil || t.Before(m.Preempted.Add(-time.Second)) || t.After(seen) {
			continue
		}
		if t.After(m.Ended) {
			// The application wrote this after its last sign of life (a busy node can
			// delay the heartbeat): it was alive then.
			m.Ended = t
		}
		if m.FirstSignal.IsZero() {
			m.FirstSignal = t
		}
		m.Signals = append(m.Signals, fmt.Sprintf("%s +%s", what, t.Sub(m.Preempted).Round(10*time.Millisecond)))
	}
	if !m.FirstSignal.IsZero() {
		m.Window = m.Ended.Sub(m.FirstSignal)
	}
	return sc.Err()
}

func readTime(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	return parseUnix(strings.TrimSpace(string(b)))
}

// parseUnix reads date +%s.%N and bash's EPOCHREALTIME (whose point is the locale's).
func parseUnix(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %w", s, err)
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("time %q: %w", s, err)
		}
	}
	return time.Unix(n, ns), nil
}
