package preempt

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Promise is the window the configuration promises a preempted job: GraceTime for REQUEUE and
// CANCEL, suspend_grace_time for SUSPEND (GraceTime does not apply there).
type Promise struct {
	Known  bool          // false where the grace time could not be read (preempt/qos: the QOS's)
	Grace  time.Duration // the promised time from the first signal to the end
	Source string        // where Grace comes from, as the report says it: "GraceTime=40 (partition long)"
	// Gang: the cluster's PreemptMode has GANG. Then a preempting job that Slurm can start on
	// top of the preempted one (one that is not --exclusive) makes the gang scheduler cancel
	// or requeue it at once, without GraceTime (observed on 22.05.8 and 24.11.5; gang.c's
	// _preempt_job_dequeue), or suspend it.
	Gang bool
}

// SlurmConfig is what the preemption promise depends on in `scontrol show config`.
type SlurmConfig struct {
	Version           string // SLURM_VERSION: 22.05.8
	PreemptType       string // preempt/partition_prio
	PreemptMode       string // the cluster's default: GANG,SUSPEND
	PreemptParameters string // (null) or suspend_grace_time=5,...
}

// PartitionConfig is what it depends on in `scontrol show partition -o P`.
type PartitionConfig struct {
	Name        string
	GraceTime   time.Duration
	PreemptMode string // the partition's, or the cluster's where the partition sets none
}

// parseConfig reads `scontrol show config` ("Key = value" lines).
func parseConfig(out string) SlurmConfig {
	var c SlurmConfig
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "SLURM_VERSION":
			c.Version = v
		case "PreemptType":
			c.PreemptType = v
		case "PreemptMode":
			c.PreemptMode = v
		case "PreemptParameters":
			c.PreemptParameters = v
		}
	}
	return c
}

// parsePartition reads `scontrol show partition -o P` (one line of Key=value fields).
func parsePartition(out string) (PartitionConfig, error) {
	var p PartitionConfig
	grace := ""
	for _, f := range strings.Fields(out) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "PartitionName":
			p.Name = v
		case "GraceTime":
			grace = v
		case "PreemptMode":
			p.PreemptMode = v
		}
	}
	if p.Name == "" || grace == "" {
		return p, fmt.Errorf("no PartitionName= or GraceTime= in %q", truncate(out, 200))
	}
	n, err := strconv.ParseUint(grace, 10, 32)
	if err != nil {
		return p, fmt.Errorf("GraceTime=%s: %w", grace, err)
	}
	p.GraceTime = time.Duration(n) * time.Second
	return p, nil
}

// defaultSuspendGrace is slurmstepd's wait between SIGTSTP and SIGSTOP: fixed before 23.02.5,
// PreemptParameters=suspend_grace_time's default since.
const defaultSuspendGrace = 2 * time.Second

// promise says what the configuration promises a job of partition p that was preempted with
// outcome (SUSPENDED, PENDING, gone ...): the suspend grace time where it was suspended (or
// the partition's mode is SUSPEND), the partition's GraceTime under preempt/partition_prio,
// and nothing known under preempt/qos (the QOS's GraceTime, in the accounting database).
func promise(c SlurmConfig, p PartitionConfig, outcome string) Promise {
	pr := promiseOf(c, p, outcome)
	pr.Gang = slices.Contains(strings.Split(c.PreemptMode, ","), "GANG")
	return pr
}

func promiseOf(c SlurmConfig, p PartitionConfig, outcome string) Promise {
	if outcome == "SUSPENDED" || strings.Contains(p.PreemptMode, "SUSPEND") {
		if !versionAtLeast(c.Version, 23, 2, 5) {
			return Promise{Known: true, Grace: defaultSuspendGrace, Source: fmt.Sprintf("the suspend grace time, fixed at 2 s before Slurm 23.02.5 (this is %s; GraceTime does not apply to SUSPEND)", c.Version)}
		}
		for _, kv := range strings.Split(c.PreemptParameters, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "suspend_grace_time="); ok {
				if n, err := strconv.ParseUint(v, 10, 32); err == nil {
					return Promise{Known: true, Grace: time.Duration(n) * time.Second, Source: "PreemptParameters=suspend_grace_time=" + v + " (GraceTime does not apply to SUSPEND)"}
				}
				return Promise{Source: "PreemptParameters=suspend_grace_time=" + v + ", not a number of seconds"}
			}
		}
		return Promise{Known: true, Grace: defaultSuspendGrace, Source: "suspend_grace_time's default of 2 s (no PreemptParameters=suspend_grace_time; GraceTime does not apply to SUSPEND)"}
	}
	if c.PreemptType == "preempt/qos" {
		return Promise{Source: "the QOS's GraceTime under preempt/qos (sacctmgr show qos), not read"}
	}
	return Promise{Known: true, Grace: p.GraceTime, Source: fmt.Sprintf("GraceTime=%d (partition %s)", int(p.GraceTime/time.Second), p.Name)}
}

// versionAtLeast compares a Slurm version (22.05.8, 24.11.5-1) with major.minor.micro; an
// unreadable version counts as older.
func versionAtLeast(v string, major, minor, micro int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	parts = append(parts, "0")
	for i, want := range []int{major, minor, micro} {
		digits := parts[i] // 5-1: the leading digits
		if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = digits[:j]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			return false
		}
		if n != want {
			return n > want
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// readPromise asks slurmctld for its configuration and the partition's, after the
// measurement (the outcome says whether the job was suspended).
func (o *Options) readPromise(ctx context.Context, partition, outcome string) (Promise, error) {
	cfg, err := o.slurm(ctx, "scontrol", "show", "config")
	if err != nil {
		return Promise{}, fmt.Errorf("read Slurm's configuration: %w", err)
	}
	part, err := o.slurm(ctx, "scontrol", "show", "partition", "-o", partition)
	if err != nil {
		return Promise{}, fmt.Errorf("read partition %s: %w", partition, err)
	}
	p, err := parsePartition(part)
	if err != nil {
		return Promise{}, fmt.Errorf("read partition %s: %w", partition, err)
	}
	return promise(parseConfig(cfg), p, outcome), nil
}
