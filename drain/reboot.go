package drain

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// What drain/repair asks of Slurm beyond a node's state: the jobs on a node (squeue) and a
// reboot through Slurm's own flow (scontrol reboot, which runs RebootProgram).

// WithSqueue sets the squeue Jobs runs (an absolute path; [repair] squeue). Without it Jobs
// fails: a repair never starts on a node whose jobs it could not list.
func WithSqueue(path string) Option { return func(c *Client) { c.squeue = path } }

// ActiveJobStates are the job states that hold a node, as `squeue --states` takes them:
// CONFIGURING, RUNNING, SUSPENDED, COMPLETING, STOPPED, SIGNALING, STAGE_OUT and RESIZING
// (squeue(1) JOB STATE CODES). A suspended or stopped job keeps its GPU memory, and a
// completing one may still have processes on the node.
const ActiveJobStates = "CONFIGURING,RUNNING,SUSPENDED,COMPLETING,STOPPED,SIGNALING,STAGE_OUT,RESIZING"

// Job is one job squeue lists on a node.
type Job struct {
	ID    string // "1234", "1234_7" for an array task
	State string // "RUNNING"
}

// JobsArgv is the squeue command Jobs runs for node.
func (c *Client) JobsArgv(node string) []string {
	return []string{c.squeue, "--noheader", "--nodelist=" + node, "--states=" + ActiveJobStates, "--format=%i|%T"}
}

// Jobs lists the jobs on node in an ActiveJobStates state. A failure is an error: the node's
// jobs are then unknown, and nothing may be repaired.
func (c *Client) Jobs(ctx context.Context, node string) ([]Job, error) {
	if c.squeue == "" {
		return nil, &CommandError{Argv: []string{"squeue"}, ExitCode: -1, Err: fmt.Errorf("no squeue configured")}
	}
	argv := c.JobsArgv(node)
	out, err := c.run(ctx, showNodeLimit, nil, argv[0], argv[1:]...)
	if err != nil {
		return nil, err
	}
	return ParseJobs(bytes.NewReader(out))
}

// ParseJobs reads `squeue --noheader --format=%i|%T`: one "ID|STATE" line per job.
func ParseJobs(r io.Reader) ([]Job, error) {
	var out []Job
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		id, state, ok := strings.Cut(line, "|")
		id, state = strings.TrimSpace(id), strings.TrimSpace(state)
		if !ok || id == "" || state == "" || strings.ContainsAny(id, " \t") {
			return nil, fmt.Errorf("squeue line %d: %q: want JOBID|STATE", n, cutLine(line))
		}
		out = append(out, Job{ID: id, State: state})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read squeue output: %w", err)
	}
	return out, nil
}

// RebootArgv is the command Reboot runs: `scontrol reboot ASAP nextstate=DOWN reason=REASON
// NODE`. ASAP drains the node until the reboot (it is drained already, with no job) so no job
// starts on it; nextstate=DOWN brings it back out of service, under the reason, for nodecheck
// to resume once the post-boot checks passed, where slurm.conf has ReturnToService=0 or 1 (the
// test bed's TestReboot on 22.05 and 24.11: DOWN with "REASON : reboot issued : reboot
// complete"). With ReturnToService=2 Slurm returns a DOWN node to service as soon as it
// registers, so nodecheck lint warns about it where [repair] is on.
func (c *Client) RebootArgv(node, reason string) []string {
	return []string{c.scontrol, "reboot", "ASAP", "nextstate=DOWN", "reason=" + reason, node}
}

// Reboot asks Slurm to reboot node (RebootArgv), without a shell. It returns once slurmctld
// accepted or refused the request; the reboot itself comes later.
func (c *Client) Reboot(ctx context.Context, node, reason string) error {
	argv := c.RebootArgv(node, reason)
	_, err := c.run(ctx, shortLimit, nil, argv[0], argv[1:]...)
	// slurmctld may accept the request and still skip a node it cannot reboot now (already
	// rebooting, powered down: "Skipping reboot of nodes ..."): the next run reads the node's
	// state (REBOOT_REQUESTED) and its boot id to tell.
	return err
}
