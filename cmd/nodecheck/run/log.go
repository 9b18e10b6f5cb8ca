package run

import (
	"github.com/nodecheck/nodecheck/checks"
	"github.com/rs/zerolog"
)

// logHistory logs what the run could not do with the node's history, and anything it set
// aside: an admin must see that earlier events stopped counting.
func logHistory(log zerolog.Logger, h *checks.RunHistory) {
	if h == nil {
		return
	}
	if h.Err != nil {
		log.Error().Err(h.Err).Msg("the node's history cannot be used: the checks that judge over time say error")
	}
	for _, n := range h.Notes {
		log.Warn().Str("history", h.File).Msg(n)
	}
}

func logResults(log zerolog.Logger, rep checks.Report) {
	for _, r := range rep.Results {
		ev := log.Debug()
		switch r.Status {
		case checks.StatusWarn:
			ev = log.Warn()
		case checks.StatusFail, checks.StatusError:
			ev = log.Error()
		}
		ev = ev.Str("check", r.Check).Str("status", string(r.Status)).Dur("duration", r.Duration)
		if r.Remedy != "" {
			ev = ev.Str("remedy", string(r.Remedy))
		}
		if r.Err != nil {
			ev = ev.AnErr("cause", r.Err)
		}
		ev.Msg(r.Summary)
	}
	ev := log.Info()
	msg := "run finished"
	if rep.Verdict == checks.VerdictUndecided {
		// Undecided exits 0 in a prolog or epilog: this line is where it must be seen.
		ev = log.Error()
		msg = "run finished undecided: a check could not look, nothing is known to be wrong"
		if rep.Interrupted {
			msg = "run interrupted before it could decide"
		}
	}
	ev.Str("node", rep.Node).Str("mode", string(rep.Mode)).Str("verdict", string(rep.Verdict)).Bool("healthy", rep.Healthy).
		Int("failed", len(rep.Failed())).Int("undecided", len(rep.Undecided())).Dur("duration", rep.Duration).
		Dur("budget", rep.Budget.Run).Msg(msg)
}
