package run

import (
	"context"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/rs/zerolog"
)

// drainResults is the run's report as drain reads it: every check's status, in run order.
func drainResults(rep checks.Report) []drain.CheckResult {
	out := make([]drain.CheckResult, len(rep.Results))
	for i, r := range rep.Results {
		out[i] = drain.CheckResult{Check: r.Check, Status: drain.Status(r.Status), Summary: r.Summary, Remedy: string(r.Remedy)}
	}
	return out
}

// applyDrain acts on the run's verdict through drain.Apply, within what is left of the mode's
// budget (the budget covers the checks and the drain together, so a prolog ends in time even
// when slurmctld does not answer), and returns the outcome (nil when the run may not act at
// all: a manual run without --drain or --resume) and the exit code by drain.HookExit: code
// is the verdict's.
func (o Options) applyDrain(ctx context.Context, log zerolog.Logger, rep checks.Report, eff *config.Config, setup Setup, client *drain.Client, code int) (*drain.Outcome, int) {
	mode := rep.Mode
	mayDrain, mayResume := drain.Permissions(eff.Drain, mode, drain.Flags{Drain: o.Drain, Resume: o.Resume}, setup.Snapshot != nil)
	if !mayDrain && !mayResume {
		return nil, code
	}
	policy, err := drain.PolicyFrom(eff)
	if err != nil {
		log.Error().Err(err).Msg("no drain action taken")
		return &drain.Outcome{Action: drain.ActionSkipped, Node: rep.Node, Message: err.Error()}, code
	}
	policy.State = setup.State.State
	if rep.Interrupted {
		// Told to stop: act on nothing, since the checks did not finish looking.
		return &drain.Outcome{Action: drain.ActionSkipped, Node: rep.Node, Message: "interrupted: no drain action taken"}, code
	}
	if d := rep.Budget.Deadline; !d.IsZero() {
		// The budget counts from the run's start, setup included (NewEnv).
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	out := drain.Apply(ctx, client, policy, drain.Request{
		Node:    rep.Node,
		Mode:    mode,
		Results: drainResults(rep),
		Known:   checks.IDs(),
		Drain:   mayDrain,
		Resume:  mayResume,
		// An undecided run needs no flag: drain reads every check's status.
		Partial: o.Partial,
		DryRun:  o.DryRun,
	})
	code, note := drain.HookExit(mode, code, out.Action)
	if out.Action == drain.ActionHeld && note != "" {
		out.Message += "; " + note
		note = ""
	}
	logDrain(log, out, note)
	return &out, code
}

// slurmConfForClients is the slurm.conf scontrol and sinfo are pointed at. HealthCheckProgram
// gets no SLURM_CONF, so the clients would find only /etc/slurm/slurm.conf; the run passes the
// file it found itself (--slurm-conf, slurm_conf, SLURM_CONF, slurmd's configless cache,
// /etc/slurm/slurm.conf). A replay reads slurm.conf from the snapshot, which says nothing about
// the live cluster: only the process's own SLURM_CONF counts then.
func slurmConfForClients(ctx context.Context, getenv func(string) string, slurm *checks.SlurmFiles, replay bool) string {
	if replay {
		return getenv("SLURM_CONF")
	}
	p, err := slurm.ConfPath(ctx)
	if err != nil {
		return ""
	}
	return p
}

// logDrain logs the outcome, with note (drain.HookExit's) after the message.
func logDrain(log zerolog.Logger, out drain.Outcome, note string) {
	var ev *zerolog.Event
	switch out.Action {
	case drain.ActionHeld:
		ev = log.Error() // a fleet-wide alarm: someone must look now
	case drain.ActionUnreachable, drain.ActionLocked, drain.ActionSkipped:
		ev = log.Warn()
	case drain.ActionNone:
		ev = log.Debug()
	default:
		ev = log.Info()
	}
	msg := out.Message
	if note != "" {
		msg += "; " + note
	}
	logAction(log, ev.Str("action", string(out.Action)), out.Node, out.DryRun, out.Reason, out.Commands, msg, out.Warnings)
}

// logAction ends ev, a step's log line (drain, repair) at the level its action asks, with the
// node, the reason it set and the commands it ran, and logs its warnings after it.
func logAction(log zerolog.Logger, ev *zerolog.Event, node string, dryRun bool, reason string, commands []string, msg string, warnings []string) {
	ev = ev.Str("node", node).Bool("dry_run", dryRun)
	if reason != "" {
		ev = ev.Str("reason", reason)
	}
	if len(commands) > 0 {
		ev = ev.Strs("commands", commands)
	}
	ev.Msg(msg)
	for _, w := range warnings {
		log.Warn().Str("node", node).Msg(w)
	}
}
