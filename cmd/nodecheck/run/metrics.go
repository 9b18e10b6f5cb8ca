package run

import (
	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/report"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
	"github.com/rs/zerolog"
)

// metricsOptions gathers what the textfile says besides the report: what drain and the repair
// step did, the drain they leave, and slurm.conf's health check interval.
func (o Options) metricsOptions(cfg *config.Config, setup Setup, d *drain.Outcome, fix *repair.Outcome) report.MetricsOptions {
	mo := report.MetricsOptions{Version: o.Version, Repair: repairMetrics(cfg, fix), Drill: o.Drill,
		HealthInterval: setup.HealthInterval, HealthIntervalKnown: setup.HealthIntervalKnown}
	if d != nil {
		mo.DrainAction = d.Action
		mo.Drain = drainMetrics(d.Current, fix, cfg.Drain.ReasonPrefix)
	}
	return mo
}

// drainMetrics is the drain the run leaves (drain's Current), after the repair step: a repair
// that resumed the node ends the drain, and one that tagged or escalated it changes the
// reason, not when the drain began. Nil when drain did not read the node.
func drainMetrics(cur *drain.Current, fix *repair.Outcome, prefix string) *report.DrainMetrics {
	if cur == nil {
		return nil
	}
	c := *cur
	if fix != nil && c.Drained {
		switch fix.Action {
		case repair.StepResume:
			c = drain.Current{}
		case repair.StepReset, repair.StepReboot, repair.StepEscalate:
			if fix.Reason != "" {
				c.Reason = fix.Reason
			}
		}
	}
	m := &report.DrainMetrics{Drained: c.Drained, Since: c.Since}
	if !c.Drained {
		return m
	}
	m.Check, _ = drain.ReasonCheck(c.Reason, prefix)
	m.Remedy, _ = drain.ReasonRemedy(c.Reason)
	if m.Remedy == "" && m.Check == repair.ServiceCheck {
		m.Remedy = repair.RemedyService // an escalation waits for a person: service
	}
	return m
}

// writeMetrics writes the run's Prometheus textfile when path is set. A failure is logged and
// never changes the exit code: metrics describe the run, they do not judge the node.
func writeMetrics(log zerolog.Logger, path string, rep checks.Report, mo report.MetricsOptions) {
	if path == "" {
		return
	}
	if err := report.WriteMetricsFile(path, rep, mo); err != nil {
		log.Error().Err(err).Msg("metrics not written; the exit code is unchanged")
	}
}
