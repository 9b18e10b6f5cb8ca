package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

// slurm runs the Slurm client commands, each by absolute path (bin/sbatch, ...) and under its
// own deadline: a controller that does not answer stalls a client for minutes otherwise.
// Every command it runs is counted in calls, so that a sweep can say what it cost slurmctld.
type slurmClient struct {
	bin     string        // directory of sbatch, squeue, sinfo, scontrol, scancel: /usr/bin
	env     []string      // environment of every command (SLURM_CONF comes from here)
	timeout time.Duration // each command's limit
	calls   *callCounter
}

// callCounter counts Slurm client commands by program name. Each command is one or a few RPCs
// to slurmctld; the count is what the sweep costs of docs/fleet-sweep.md are stated in.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(prog string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[prog]++
}

// counts returns a copy of the counts and their total.
func (c *callCounter) counts() (map[string]int, int) {
	out := map[string]int{}
	total := 0
	if c == nil {
		return out, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.n {
		out[k] = v
		total += v
	}
	return out, total
}

// maxSlurmOutput bounds what one command's stdout may bring back: sinfo for 10,000 nodes is
// about half a MiB.
const maxSlurmOutput = 16 << 20

// cmd runs bin/prog args and returns its stdout. An error names the command and carries the
// last line of its stderr ("sbatch: error: Invalid partition name specified").
func (s *slurmClient) cmd(ctx context.Context, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.calls.add(prog)
	path := filepath.Join(s.bin, prog)
	c := exec.CommandContext(ctx, path, args...)
	c.Env = s.env
	c.Dir = "/"
	c.WaitDelay = time.Second
	var stdout, stderr capped
	stdout.max, stderr.max = maxSlurmOutput, 4<<10
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	if err == nil {
		return stdout.String(), nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		return stdout.String(), fmt.Errorf("%s: %w within %s (slurmctld unreachable?)", prog, errNoAnswer, s.timeout)
	}
	// Slurm's clients print "sbatch: error: ..." or "slurm_load_jobs error: ...".
	msg := lastLine(stderr.String())
	switch {
	case msg == "":
		return stdout.String(), fmt.Errorf("%s: %w", prog, err)
	case strings.HasPrefix(msg, prog+": "):
		return stdout.String(), fmt.Errorf("%s (%w)", msg, err)
	}
	return stdout.String(), fmt.Errorf("%s: %s (%w)", prog, msg, err)
}

// capped is a writer that keeps the first max bytes and drops the rest, so a child that
// prints without end neither blocks nor fills memory.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// maxLine is what text.OneLine keeps of one line of outside text in the sweep's summary.
const maxLine = 200

// lastLine is the last non-blank line of s, trimmed and cut to maxLine bytes: what goes into
// a one-line reason.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return text.OneLine(lines[len(lines)-1], maxLine)
}

// nodeState is one node as sinfo lists it.
type nodeState struct {
	name   string
	state  string // sinfo %T: idle, mixed, drained, down*, idle~ ...
	reason string // sinfo %E; "" for none
}

// sinfoFormat is what nodeStates asks sinfo for: name, long state, reason. The reason is last
// because it is free text.
const sinfoFormat = "%N|%T|%E"

// nodeStates lists the nodes of a partition, or the given nodes (in the partition, when one
// is given), with their states. sinfo lists nothing, without an error, for an unknown
// partition or node: the caller checks what is missing.
func (s *slurmClient) nodeStates(ctx context.Context, partition string, nodes []string) ([]nodeState, error) {
	args := []string{"-h", "-N", "-o", sinfoFormat}
	if partition != "" {
		args = append(args, "-p", partition)
	}
	if len(nodes) > 0 {
		args = append(args, "-n", slurm.CompressHostlist(nodes))
	}
	out, err := s.cmd(ctx, "sinfo", args...)
	if err != nil {
		return nil, err
	}
	return parseSinfo(out), nil
}

// parseSinfo reads `sinfo -h -N -o '%N|%T|%E'` lines. A node in several partitions is listed
// once per partition: the first line counts. The order is sinfo's (by name).
func parseSinfo(out string) []nodeState {
	var nodes []nodeState
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok || name == "" || seen[name] {
			continue
		}
		seen[name] = true
		state, reason, _ := strings.Cut(rest, "|")
		if reason == "none" {
			reason = ""
		}
		nodes = append(nodes, nodeState{name: name, state: state, reason: strings.TrimSpace(reason)})
	}
	return nodes
}

// unavailable says why a node in this state cannot run a job (so no job is submitted, and
// the sweep does not wait for one that never starts), or "" when it can. sinfo's long states
// end in flag characters: '*' not responding, '~' powered off (a job powers it up), '#'
// powering up, '$' maintenance reservation, '@' reboot pending, ... (sinfo(1), NODE STATE
// CODES). A drained node runs no new job; resume it, or sweep it in a reservation.
func (n nodeState) unavailable() string {
	base := strings.TrimRight(n.state, "*~#!%$@^-+")
	why := ""
	switch base {
	case "down", "drained", "draining", "drain", "fail", "failing", "future", "inval":
		why = base
	default:
		if strings.Contains(n.state, "*") {
			why = base + ", not responding"
		}
	}
	if why == "" {
		return ""
	}
	why = "node " + why
	if n.reason != "" {
		why += ": " + n.reason
	}
	return why
}

// parseJobID reads `sbatch --parsable`: "42" or "42;cluster".
func parseJobID(out string) (string, error) {
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", fmt.Errorf("sbatch --parsable printed %q, not a job id", text.OneLine(out, maxLine))
	}
	return id, nil
}

// submit submits a batch job and returns its id.
func (s *slurmClient) submit(ctx context.Context, args []string) (string, error) {
	out, err := s.cmd(ctx, "sbatch", args...)
	if err != nil {
		return "", err
	}
	return parseJobID(out)
}

// jobState is a job as squeue shows it.
type jobState struct {
	state    string // State: PENDING, RUNNING, COMPLETED, FAILED, ...
	reason   string // Reason: Resources, Priority, NonZeroExitCode; "" for None
	exitCode string // exit_code as scontrol spells it, "2:0" (status:signal); "" when not known
}

// squeueFields is what queue asks squeue for (-O, --Format): job id, state, exit code, reason.
// The reason is last because it is free text ("ReqNodeNotAvail, UnavailableNodes:n2"). Each
// field ends with "|" and no width, so squeue neither pads nor cuts it (observed on 22.05).
// exit_code puts the job's exit status in every poll, so a job that left no report needs no
// `scontrol show job` of its own: one squeue call per poll for the whole sweep.
const squeueFields = "JobID:|,State:|,exit_code:|,Reason:|"

// queue returns the states of the given jobs that squeue still knows, finished ones included
// (-t all) until MinJobAge (300 s by default) after their end. A job missing from the map is
// gone from the controller. It is one squeue call whatever the number of jobs: 4,096 ids took
// 0.3 s on the test bed (docs/fleet-sweep.md).
func (s *slurmClient) queue(ctx context.Context, ids []string) (map[string]jobState, error) {
	out, err := s.cmd(ctx, "squeue", "-h", "-t", "all", "-O", squeueFields, "-j", strings.Join(ids, ","))
	if err != nil {
		// squeue -j with only unknown ids fails: "slurm_load_jobs error: Invalid job id specified".
		if strings.Contains(err.Error(), "Invalid job id specified") {
			return map[string]jobState{}, nil
		}
		return nil, err
	}
	return parseSqueue(out), nil
}

// parseSqueue reads `squeue -h -O 'JobID:|,State:|,exit_code:|,Reason:|'` lines:
// "41|FAILED|512|NonZeroExitCode|" (22.05), "41|FAILED|2:0|NonZeroExitCode|" (24.11).
func parseSqueue(out string) map[string]jobState {
	jobs := map[string]jobState{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSuffix(strings.TrimSpace(line), "|"), "|", 4)
		if len(f) < 2 || f[0] == "" {
			continue
		}
		j := jobState{state: f[1]}
		if len(f) > 2 {
			j.exitCode = exitCodeText(f[2])
		}
		if len(f) == 4 && f[3] != "None" {
			j.reason = f[3]
		}
		jobs[f[0]] = j
	}
	return jobs
}

// exitCodeText spells squeue's exit_code as scontrol does: "3:0", "0:9". Slurm 22.05 prints
// the raw wait(2) status (768 for exit 3, 9 for SIGKILL); 24.11 prints it spelled already
// ("3:0", "0:9", observed with 24.11.5). Anything else is "".
func exitCodeText(raw string) string {
	raw = strings.TrimSpace(raw)
	if status, signal, ok := strings.Cut(raw, ":"); ok {
		st, err1 := strconv.Atoi(status)
		sig, err2 := strconv.Atoi(signal)
		if err1 != nil || err2 != nil || st < 0 || st > 255 || sig < 0 || sig > 127 {
			return ""
		}
		return strconv.Itoa(st) + ":" + strconv.Itoa(sig)
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return ""
	}
	return strconv.Itoa(n>>8&0xff) + ":" + strconv.Itoa(n&0x7f)
}

// finished reports whether a job state is final. Anything else (PENDING, RUNNING,
// CONFIGURING, COMPLETING, SUSPENDED, REQUEUED, ...) may still produce output.
func finished(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
		"DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT":
		return true
	}
	return false
}

// cancel cancels jobs.
func (s *slurmClient) cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.cmd(ctx, "scancel", ids...)
	return err
}

// errNoAnswer is a Slurm command that ran out of time: the controller is unreachable or
// stalled, and the next command would wait as long.
var errNoAnswer = errors.New("no answer")

// errSlurm marks an error from Slurm itself (exit 2).
var errSlurm = errors.New("slurm")

type slurmError struct{ err error }

func (e slurmError) Error() string   { return e.err.Error() }
func (e slurmError) Unwrap() error   { return e.err }
func (e slurmError) Is(t error) bool { return t == errSlurm }
