package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/rs/zerolog"
)

// checkDrainFlags rejects --drain, --resume and --dry-run combinations that cannot mean what
// the user wants, before any check runs.
func checkDrainFlags(o runOpts, mode config.Mode, replay bool) error {
	if replay && (o.drain || o.resume) && o.nodeName == "" {
		return errors.New("--drain and --resume with --snapshot need --node: a replay acts on the live Slurm only for a node named on the command line")
	}
	if o.resume && (mode == config.ModeProlog || mode == config.ModeEpilog) {
		return fmt.Errorf("--resume: %s runs never resume a node; health and manual runs do", mode)
	}
	return nil
}

// drainPermissions says what this run may do to the node in Slurm. Hooks act as [drain]
// says: prolog and epilog drain, the health check drains and resumes. Manual runs only
// report, unless told --drain or --resume. A snapshot replay acts only when told, whatever
// its mode: it describes another node, and must not drain the live one by accident.
func drainPermissions(cfg *config.Config, mode config.Mode, o runOpts, replay bool) (mayDrain, mayResume bool) {
	if replay || mode == config.ModeManual {
		return o.drain, o.resume
	}
	d := cfg.Drain
	switch mode {
	case config.ModeHealth:
		return d.Enabled || o.drain, d.Enabled && d.Resume || o.resume
	default: // prolog, epilog
		return d.Enabled || o.drain, false
	}
}

// drainFailures lists what makes the node unhealthy, in run order: the failed checks, and the
// ones that could not decide when error_is_failure says those count.
func drainFailures(rep checks.Report, errorIsFailure bool) []drain.Failure {
	var out []drain.Failure
	for _, r := range rep.Results {
		if r.Status == checks.StatusFail || errorIsFailure && r.Status == checks.StatusError {
			out = append(out, drain.Failure{Check: r.Check, Summary: r.Summary})
		}
	}
	return out
}

// applyDrain acts on the run's verdict: drains, resumes or leaves the node, as drain.Apply
// decides, within what is left of the mode's budget (the budget covers the checks and the
// drain together, so a prolog ends in time even when slurmctld does not answer). It returns
// nil when the run may not act at all (a manual run without --drain or --resume), and the
// exit code: code as given, which says whether the node is healthy, so that an unhealthy
// prolog exits non-zero even when the drain could not be done and Slurm drains the node
// itself; except when max_drained held the drain back in a prolog or epilog, which then exit
// 0, since a non-zero exit would make Slurm drain the node after all ("Prolog error") and
// the limit would protect nothing.
func applyDrain(ctx context.Context, log zerolog.Logger, rep checks.Report, eff *config.Config, mode config.Mode, o runOpts, replay bool, slurmConf string, code int) (*drain.Outcome, int) {
	mayDrain, mayResume := drainPermissions(eff, mode, o, replay)
	if !mayDrain && !mayResume {
		return nil, code
	}
	hook := mode == config.ModeProlog || mode == config.ModeEpilog
	n, percent, err := config.ParseMaxDrained(eff.Drain.MaxDrained)
	if err != nil {
		// Validate rejected it already; a config built in code may not have been validated.
		log.Error().Err(err).Msg("max_drained unusable: no drain action taken")
		return &drain.Outcome{Action: drain.ActionSkipped, Node: rep.Node, Message: "max_drained: " + err.Error()}, code
	}
	if rep.Interrupted {
		// Told to stop: act on nothing, since the checks did not finish looking.
		return &drain.Outcome{Action: drain.ActionSkipped, Node: rep.Node, Message: "interrupted: no drain action taken"}, code
	}
	if d := rep.Budget.Deadline; !d.IsZero() {
		// The budget counts from the run's start, setup included (checks.NewEnv).
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	client := drain.New(eff.Drain.Scontrol, eff.Drain.Sinfo, drain.WithSlurmConf(slurmConf))
	policy := drain.Policy{
		Prefix:            eff.Drain.ReasonPrefix,
		ResumeAfterPasses: eff.Drain.ResumeAfterPasses,
		MaxDrained:        drain.Limit{N: n, Percent: percent},
		StateDir:          eff.State.Dir,
	}
	out := drain.Apply(ctx, client, policy, drain.Request{
		Node:     rep.Node,
		Mode:     mode,
		Failures: drainFailures(rep, eff.ErrorIsFailure),
		Drain:    mayDrain,
		Resume:   mayResume,
		// A run that could not decide is no clean run either: until drain knows the verdict
		// itself, it counts as a partial one (never a pass toward resume_after_passes).
		Partial: len(o.checkIDs) > 0 || rep.Verdict == checks.VerdictUndecided,
		DryRun:  o.dryRun,
	})
	if out.Action == drain.ActionHeld && hook {
		code = exitHealthy
		out.Message += fmt.Sprintf("; the %s exits 0 so that Slurm does not drain the node either", mode)
	}
	logDrain(log, out, code != exitHealthy && hook)
	return &out, code
}

// slurmConfForClients is the slurm.conf scontrol and sinfo are pointed at. HealthCheckProgram
// gets no SLURM_CONF, so the clients would find only /etc/slurm/slurm.conf; the run passes the
// file it found itself (--slurm-conf, slurm_conf, SLURM_CONF, slurmd's configless cache,
// /etc/slurm/slurm.conf). A replay reads slurm.conf from the snapshot, which says nothing about
// the live cluster: only the process's own SLURM_CONF counts then.
func slurmConfForClients(ctx context.Context, g *globals, slurm *checks.SlurmFiles, replay bool) string {
	if replay {
		return g.getenv("SLURM_CONF")
	}
	p, err := slurm.ConfPath(ctx)
	if err != nil {
		return ""
	}
	return p
}

func logDrain(log zerolog.Logger, out drain.Outcome, exitsNonZero bool) {
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
	ev = ev.Str("node", out.Node).Str("action", string(out.Action)).Bool("dry_run", out.DryRun)
	if out.Reason != "" {
		ev = ev.Str("reason", out.Reason)
	}
	if len(out.Commands) > 0 {
		ev = ev.Strs("commands", out.Commands)
	}
	msg := out.Message
	if exitsNonZero && out.Action != drain.ActionDrained && out.Action != drain.ActionKept {
		msg += "; exiting non-zero, so Slurm drains the node itself"
	}
	ev.Msg(msg)
	for _, w := range out.Warnings {
		log.Warn().Str("node", out.Node).Msg(w)
	}
}

// writeDrainText adds the drain outcome under the text table: what was done, and the
// commands run (or, with --dry-run, the ones that would have been).
func writeDrainText(w io.Writer, out *drain.Outcome) error {
	if out == nil {
		return nil
	}
	verb := "ran"
	if out.DryRun {
		verb = "would run"
	}
	s := fmt.Sprintf("drain: %s: %s\n", out.Action, out.Message)
	for _, c := range out.Commands {
		s += fmt.Sprintf("  %s: %s\n", verb, c)
	}
	for _, warn := range out.Warnings {
		s += fmt.Sprintf("  warning: %s\n", warn)
	}
	_, err := io.WriteString(w, s)
	return err
}
