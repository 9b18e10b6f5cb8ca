package slurm

import "strings"

// WithExtraPublishing tells Lint that the fleet sweep publishes validations in the nodes'
// Extra (`nodecheck-fleet-sweep --validate` with --publish-extra, docs/validation-fleet.md),
// so that jobs can ask for a validated node with --extra. Slurm (23.11 and later) filters on
// Extra only with SchedulerParameters=extra_constraints; without it --extra is accepted and
// ignored, and a job that asked for a validated node may land on any node.
func WithExtraPublishing(on bool) LintOption {
	return func(o *lintOptions) { o.publishExtra = on }
}

// checkExtraPublishing is WithExtraPublishing's rule.
func (l *linter) checkExtraPublishing() {
	if !l.opts.publishExtra {
		return
	}
	sp, ok := l.sc.Setting("SchedulerParameters")
	if ok {
		for _, p := range strings.Split(sp.Value, ",") {
			if strings.TrimSpace(p) == "extra_constraints" {
				return
			}
		}
	}
	at := Pos{File: l.sc.Path}
	if ok {
		at = sp.Pos
	}
	l.emit(SeverityWarning, at, "the fleet sweep publishes validations in node Extra (--publish-extra), but SchedulerParameters lacks extra_constraints: Slurm ignores --extra, so a job asking for a validated node (--extra \"validated_at>=...\") may run on any node: add extra_constraints to SchedulerParameters (Slurm 23.11 and later), or run the sweep with --publish-extra=false")
}
