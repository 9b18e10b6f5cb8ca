package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/text"
)

// valNode is one node in the validation summary.
type valNode struct {
	Node      string              `json:"node"`
	Verdict   string              `json:"verdict"` // passed, failed, undecided, not_run
	Why       string              `json:"why,omitempty"`
	Remedy    string              `json:"remedy,omitempty"`
	JobID     string              `json:"job_id,omitempty"`
	RunTimeS  float64             `json:"run_time_s,omitempty"` // measured at squeue's polls
	DurationS float64             `json:"duration_s,omitempty"` // as the node reports it
	Model     string              `json:"model,omitempty"`
	Figures   []validation.Figure `json:"figures,omitempty"`
	Outcome   string              `json:"outcome,omitempty"` // --return-to-service
	Extra     string              `json:"extra,omitempty"`
	ExtraErr  string              `json:"extra_error,omitempty"`
}

// valSummary is what a validation sweep prints (text or JSON) and keeps in OUT/validation.json.
type valSummary struct {
	Level           string                `json:"level"`
	Nodes           int                   `json:"nodes"`
	Passed          int                   `json:"passed"`
	Failed          int                   `json:"failed"`
	Undecided       int                   `json:"undecided"`
	NotRun          int                   `json:"not_run"`
	SlowFraction    float64               `json:"slow_fraction"`
	Results         []valNode             `json:"results"`
	Slow            []validation.Slow     `json:"slow"`
	Baselines       []validation.Baseline `json:"baselines"`
	Extra           string                `json:"extra"` // what publishing did, in words
	Drains          []drainResult         `json:"drains,omitempty"`
	SlurmCalls      map[string]int        `json:"slurm_calls"`
	SlurmCallsTotal int                   `json:"slurm_calls_total"`
	ElapsedS        float64               `json:"elapsed_s"`
	OutDir          string                `json:"out_dir"`
}

// runValidate is the whole --validate command after the flags: the sweep, the judgement, the
// drains, Extra, the state, the summary. It returns the exit status.
func runValidate(ctx context.Context, s *slurmClient, o options, format string, start time.Time, stdout, stderr io.Writer) int {
	info, err := s.config(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\n", err)
		return exitError
	}
	runs, err := validateSweep(ctx, s, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\n", err)
		return exitError
	}
	sum := judgeValidation(runs, o)
	if items := failDrains(runs, sum.Slow, o); len(items) > 0 && ctx.Err() == nil { // an interrupted sweep drains nothing more
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(len(items)*3+1)*o.slurmTimeout)
		sum.Drains = drainNodes(dctx, s, o, len(runs), items, stderr)
		cancel()
	}
	sum.Extra = publishExtra(ctx, s, o, info, runs, &sum)
	saveValidation(o, runs, &sum, stderr)
	sum.SlurmCalls, sum.SlurmCallsTotal = s.calls.counts()
	sum.ElapsedS = float64(time.Since(start).Milliseconds()) / 1000
	if herr := writeValidationHTML(o, sum); herr != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the HTML report: %v\n", herr)
	}
	if format == "json" {
		err = json.NewEncoder(stdout).Encode(sum)
	} else {
		_, err = io.WriteString(stdout, validationText(sum))
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the summary: %v\n", err)
		return exitError
	}
	if sum.Failed+sum.Undecided+len(sum.Slow) > 0 {
		return exitUnhealthy
	}
	if o.validate.returnToService {
		// The nodes were listed to come back: one that did not is not a success.
		for _, n := range sum.Results {
			if !strings.HasPrefix(n.Outcome, "returned") {
				return exitUnhealthy
			}
		}
	}
	return exitHealthy
}

// judgeValidation turns the runs into the summary: verdicts, baselines over the passed nodes,
// the slow ones.
func judgeValidation(runs []*valRun, o options) valSummary {
	sum := valSummary{Level: o.validate.level.Name, Nodes: len(runs), SlowFraction: o.validate.slowFraction, OutDir: o.out,
		Results: []valNode{}, Slow: []validation.Slow{}, Baselines: []validation.Baseline{}}
	var results []validation.Result
	for _, r := range runs {
		n := valNode{Node: r.Node, Verdict: r.verdict(), JobID: r.JobID, RunTimeS: r.RunTime.Seconds(), Outcome: r.Outcome}
		if r.Result != nil {
			results = append(results, *r.Result)
			n.Model, n.Figures, n.DurationS = r.Result.Model, r.Result.Figures, r.Result.DurationS
		}
		switch n.Verdict {
		case "":
			n.Verdict, n.Why = "not_run", r.Skipped
			sum.NotRun++
		case validation.Passed:
			sum.Passed++
		case validation.Failed:
			sum.Failed++
			n.Why, n.Remedy = validation.FailSummary(*r.Result)
		default:
			sum.Undecided++
			n.Why = r.why()
		}
		sum.Results = append(sum.Results, n)
	}
	sum.Baselines = validation.Baselines(results, o.slow.MinNodes)
	sum.Slow = validation.JudgeSlow(results, sum.Baselines, o.validate.slowFraction)
	return sum
}

// failDrains are the failed nodes to drain, with the failing test or figure and its remedy
// (--return-to-service drained its failed nodes already, before their reservations went),
// and with --drain-slow the slow ones, each for its figure furthest below the P50.
func failDrains(runs []*valRun, slow []validation.Slow, o options) []drainItem {
	var items []drainItem
	for _, r := range runs {
		if o.validate.returnToService {
			break
		}
		if r.verdict() == validation.Failed {
			sum, remedy := validation.FailSummary(*r.Result)
			items = append(items, drainItem{Node: r.Node, Summary: sum, Remedy: remedy})
		}
	}
	seen := map[string]bool{}
	for _, sl := range slow {
		if o.drainSlow && !seen[sl.Node] {
			seen[sl.Node] = true
			items = append(items, drainItem{Node: sl.Node, Summary: "validate " + o.validate.level.Name + ": slow: " + sl.Text()})
		}
	}
	return items
}

// publishExtra writes each passed node's level, time and figures into its Extra, where Slurm
// filters on it, and says what it did.
func publishExtra(ctx context.Context, s *slurmClient, o options, info slurmInfo, runs []*valRun, sum *valSummary) string {
	switch {
	case !o.validate.publishExtra:
		return "not published (--publish-extra=false)"
	case !info.extraSupported():
		return fmt.Sprintf("not published: Slurm %s has no Extra constraints (23.11 and later: SchedulerParameters=extra_constraints)", info.version)
	case !info.extraConstraints:
		return fmt.Sprintf("not published: Slurm %s ignores Extra without SchedulerParameters=extra_constraints in slurm.conf", info.version)
	case ctx.Err() != nil:
		return "not published: the sweep was interrupted"
	}
	var done, withdrawn, failed []string
	for i, r := range runs {
		pass := r.verdict() == validation.Passed && (!o.validate.returnToService || strings.HasPrefix(r.Outcome, "returned"))
		if !pass && r.verdict() != validation.Failed {
			continue // not run, undecided: what the node carries stays
		}
		extra, err := mergeNodeExtra(ctx, s, o, r, pass)
		if err == nil {
			err = s.updateNode(ctx, r.Node, "Extra="+extra)
		}
		if err != nil {
			r.ExtraErr = text.OneLine(err.Error(), maxLine)
			failed = append(failed, r.Node)
		} else if pass {
			r.Extra = extra
			done = append(done, r.Node)
		} else {
			r.Extra = extra
			withdrawn = append(withdrawn, r.Node)
		}
		sum.Results[i].Extra, sum.Results[i].ExtraErr = r.Extra, r.ExtraErr
	}
	msg := fmt.Sprintf("published on %d %s", len(done), text.Plural(len(done), "node", "nodes"))
	if len(done) > 0 {
		msg += " (" + strings.Join(done, ",") + ")"
	}
	if len(withdrawn) > 0 {
		msg += "; withdrawn from the failed " + strings.Join(withdrawn, ",")
	}
	if len(failed) > 0 {
		msg += "; FAILED on " + strings.Join(failed, ",")
	}
	return msg
}

// mergeNodeExtra reads the node's Extra just before writing, so that keys a site keeps there
// stay; a failed node's validation keys are withdrawn.
func mergeNodeExtra(ctx context.Context, s *slurmClient, o options, r *valRun, pass bool) (string, error) {
	cur, err := s.nodeExtras(ctx, r.Node)
	if err != nil {
		return "", err
	}
	ours := validation.WithdrawValues(*r.Result)
	if pass {
		ours = validation.ExtraValues(*r.Result, o.validate.level, time.Now())
	}
	return validation.MergeExtra(cur[r.Node], ours)
}

// saveValidation keeps the summary in OUT/validation.json and, with --validation-state, each
// node's validation and the baselines between sweeps.
func saveValidation(o options, runs []*valRun, sum *valSummary, log io.Writer) {
	data, _ := json.MarshalIndent(sum, "", "  ")
	if err := files.WriteAtomic(filepath.Join(o.out, "validation.json"), append(data, '\n'), 0o644); err != nil {
		fmt.Fprintf(log, "fleet-sweep: keep the validation summary: %v\n", err)
	}
	if o.validate.statePath == "" {
		return
	}
	st, err := validation.LoadState(o.validate.statePath)
	if err != nil {
		fmt.Fprintf(log, "fleet-sweep: --validation-state not updated: %v\n", err)
		return
	}
	now := time.Now().UTC()
	for _, r := range runs {
		if r.Result != nil {
			st.Record(*r.Result, now)
		}
	}
	if len(sum.Baselines) > 0 {
		st.Baselines = sum.Baselines
	}
	if err := st.Save(o.validate.statePath); err != nil {
		fmt.Fprintf(log, "fleet-sweep: --validation-state not updated: %v\n", err)
	}
}

// validationText is the text summary.
func validationText(sum valSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodecheck validation sweep (%s): %d %s, %d passed, %d failed, %d undecided, %d not run in %.1fs (results in %s)\n",
		sum.Level, sum.Nodes, text.Plural(sum.Nodes, "node", "nodes"), sum.Passed, sum.Failed, sum.Undecided, sum.NotRun, sum.ElapsedS, sum.OutDir)
	for _, verdict := range []string{validation.Failed, validation.Undecided} {
		for _, n := range sum.Results {
			if n.Verdict == verdict {
				line := fmt.Sprintf("%-10s %s  %s", strings.ToUpper(verdict), n.Node, n.Why)
				if n.Remedy != "" {
					line += " [" + n.Remedy + "]"
				}
				b.WriteString(line + "\n")
			}
		}
	}
	for _, sl := range sum.Slow {
		fmt.Fprintf(&b, "%-10s %s  %s\n", "SLOW", sl.Node, sl.Text())
	}
	for _, n := range sum.Results {
		if n.Verdict == validation.Passed {
			fmt.Fprintf(&b, "%-10s %s  %.1fs\n", "PASSED", n.Node, n.DurationS)
		}
	}
	for _, n := range sum.Results {
		if n.Verdict == "not_run" {
			fmt.Fprintf(&b, "%-10s %s  %s\n", "NOT RUN", n.Node, n.Why)
		}
	}
	for _, n := range sum.Results {
		if n.Outcome != "" {
			fmt.Fprintf(&b, "%-10s %s  %s\n", "SERVICE", n.Node, n.Outcome)
		}
	}
	if len(sum.Baselines) > 0 {
		fmt.Fprintf(&b, "fleet P50 (passed nodes, by GPU model; slow more than %.0f%% worse):\n", sum.SlowFraction*100)
		for _, bl := range sum.Baselines {
			fmt.Fprintf(&b, "  %s %s: %s %s over %d %s\n", bl.Model, bl.Figure, trimNum(bl.P50), bl.Unit, bl.Nodes, text.Plural(bl.Nodes, "node", "nodes"))
		}
	}
	fmt.Fprintf(&b, "Extra: %s\n", sum.Extra)
	writeDrainsText(&b, sum.Drains)
	fmt.Fprintf(&b, "Slurm calls: %d", sum.SlurmCallsTotal)
	if len(sum.SlurmCalls) > 0 {
		b.WriteString(" (" + callsText(sum.SlurmCalls) + ")")
	}
	b.WriteString("\n")
	return b.String()
}

func trimNum(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }

// callsText is the Slurm calls by program: "sbatch 3, scontrol 9, sinfo 2, squeue 4".
func callsText(calls map[string]int) string {
	parts := make([]string, 0, len(calls))
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, calls[k]))
	}
	return strings.Join(parts, ", ")
}
