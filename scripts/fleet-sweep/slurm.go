package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

// slurmClient runs the Slurm client commands, each by absolute path (bin/sbatch, ...) and under its
// own deadline: a controller that does not answer stalls a client for minutes otherwise.
type slurmClient struct {
	bin     string        // directory of sbatch, squeue, sinfo, scontrol, scancel: /usr/bin
	env     []string      // environment of every command (SLURM_CONF comes from here)
	timeout time.Duration // each command's limit
}

// maxSlurmOutput bounds what one command's stdout may bring back: sinfo for 10,000 nodes is
// about half a MiB.
const maxSlurmOutput = 16 << 20

// cmd runs bin/prog args and returns its stdout. An error names the command and carries the
// last line of its stderr ("sbatch: error: Invalid partition name specified").
func (s *slurmClient) cmd(ctx context.Context, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
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

// maxLine is what text.OneLine keeps of one line of outside text in the sweep's summary; with
// the "..." of a cut, at most 200 bytes.
const maxLine = 197

// lastLine is the last non-blank line of s, trimmed and cut to 200 bytes: what goes into a
// one-line reason.
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
	state  string // %T: PENDING, RUNNING, COMPLETED, FAILED, ...
	reason string // %r: Resources, Priority, NonZeroExitCode, None
}

// squeueFormat is what queue asks squeue for.
const squeueFormat = "%i|%T|%r"

// queue returns the states of the given jobs that squeue still knows, finished ones included
// (-t all) until MinJobAge (300 s by default) after their end. A job missing from the map is
// gone from the controller.
func (s *slurmClient) queue(ctx context.Context, ids []string) (map[string]jobState, error) {
	out, err := s.cmd(ctx, "squeue", "-h", "-t", "all", "-o", squeueFormat, "-j", strings.Join(ids, ","))
	if err != nil {
		// squeue -j with only unknown ids fails: "slurm_load_jobs error: Invalid job id specified".
		if strings.Contains(err.Error(), "Invalid job id specified") {
			return map[string]jobState{}, nil
		}
		return nil, err
	}
	return parseSqueue(out), nil
}

// parseSqueue reads `squeue -h -o '%i|%T|%r'` lines.
func parseSqueue(out string) map[string]jobState {
	jobs := map[string]jobState{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), "|", 3)
		if len(f) < 2 || f[0] == "" {
			continue
		}
		j := jobState{state: f[1]}
		if len(f) == 3 && f[2] != "None" {
			j.reason = f[2]
		}
		jobs[f[0]] = j
	}
	return jobs
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

// showJob returns the fields of `scontrol show job -o ID` (JobState, Reason, ExitCode, ...).
func (s *slurmClient) showJob(ctx context.Context, id string) (map[string]string, error) {
	out, err := s.cmd(ctx, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return nil, err
	}
	return parseShowJob(out), nil
}

// parseShowJob splits a `scontrol show job -o` line into its Key=Value fields. Values with
// blanks (Command=, WorkDir= with a space) come out cut; the fields read here (JobState,
// Reason, ExitCode) have none.
func parseShowJob(out string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(out) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, dup := f[k]; !dup {
				f[k] = v
			}
		}
	}
	return f
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
