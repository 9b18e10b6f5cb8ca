package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

// nodeRun is everything the sweep learnt about one node: its job and what the job left.
// summarize judges it; nothing here runs a command.
type nodeRun struct {
	Node        string
	Skipped     string // why no job ran: the node's state ("node drained: ..."), an sbatch error
	JobID       string
	State       string // the job's last state seen by squeue; "" when never seen
	StateReason string // squeue's reason for it: Resources, Priority, NonZeroExitCode; "" for None
	Gone        bool   // the job was no longer in squeue (ended more than MinJobAge ago)
	Cancelled   string // when the sweep cancelled the job: "deadline" or "interrupted"
	CancelErr   string // scancel's error, when it failed: the job may still be queued
	ExitCode    string // scontrol's ExitCode ("2:0": status, signal); "" when not read
	NodeNow     string // the node after a job that left no report: "node drained: Prolog error"
	OutputPath  string // the job's stdout: nodecheck's JSON report
	Output      []byte
	OutputErr   error  // reading OutputPath; fs.ErrNotExist when absent
	Stderr      string // the last line of the job's stderr
	// Started is when squeue first showed the job running (or already finished); RunTime is
	// from then to when it first showed it finished: both measured at the polls.
	Started time.Time
	RunTime time.Duration
	// Killed is how long the job had run when the sweep cancelled it for running past Limit,
	// its run limit (multi-node jobs only, jobLimit); 0 when it was not.
	Killed time.Duration
	Limit  time.Duration
}

// nodecheckReport is the part of `nodecheck run --format json` the sweep reads.
type nodecheckReport struct {
	Schema      *int    `json:"schema"`
	Node        string  `json:"node"`
	Mode        string  `json:"mode"`
	Healthy     *bool   `json:"healthy"`
	ConfigError string  `json:"config_error"`
	Results     []check `json:"results"`
}

type check struct {
	Check    string   `json:"check"`
	Status   string   `json:"status"`
	Summary  string   `json:"summary"`
	Remedy   string   `json:"remedy,omitempty"`
	Observed string   `json:"observed"`
	Expected string   `json:"expected"`
	Details  []detail `json:"details"`
}

type detail struct {
	Device   string `json:"device"`
	Status   string `json:"status"`
	Observed string `json:"observed"`
}

// reportSchema is the report schema this sweep reads: cmd/nodecheck/report.SchemaVersion. A report of
// another schema comes from another nodecheck version, whose keys may mean something else.
const reportSchema = 1

// parseReport reads the JSON report of node: one JSON document of schema reportSchema, with a
// "healthy" key, about that node. Anything else is no report: the node is listed as missing
// with the reason, never counted healthy, failing or slow.
func parseReport(b []byte, node string) (nodecheckReport, error) {
	var r nodecheckReport
	if len(bytes.TrimSpace(b)) == 0 {
		return r, errors.New("empty")
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("invalid JSON (cut short?): %v", err)
	}
	switch {
	case r.Schema == nil && r.Healthy == nil:
		return r, errors.New(`not a nodecheck report: no "schema" or "healthy" key`)
	case r.Schema == nil:
		return r, errors.New(`not a nodecheck report: no "schema" key`)
	case *r.Schema != reportSchema:
		return r, fmt.Errorf("report schema %d, this fleet-sweep reads schema %d: nodecheck on the node is another version; install the same version on the nodes and here", *r.Schema, reportSchema)
	case r.Healthy == nil:
		return r, errors.New(`not a nodecheck report: no "healthy" key`)
	case node != "" && r.Node != node:
		return r, fmt.Errorf("the report is about node %q: a stale or copied file, or --node in --args", r.Node)
	}
	return r, nil
}

// summary is the sweep's result: every node in exactly one of healthy, slow, failing and
// missing, each list in the sweep's node order (slow: furthest below the median first), and
// the NCCL bus bandwidths slowest first.
type summary struct {
	Schema          int      `json:"schema"`
	Nodes           int      `json:"nodes"`
	AllHealthy      bool     `json:"all_healthy"`
	Healthy         []string `json:"healthy"`
	HealthyHostlist string   `json:"healthy_hostlist"`
	// Slow are healthy nodes (every check passed) with a figure well below the fleet's median
	// for their GPU model: one entry per slow figure.
	Slow    []slowFinding `json:"slow"`
	Failing []failing     `json:"failing"`
	Missing []missing     `json:"missing"`
	BusBW   []busBW       `json:"busbw"`
	// Fleet is each model's figures over the healthy nodes: median, MAD, the slow line;
	// Figures every figure of those nodes, the fleet's distribution (the HTML report draws it).
	Fleet   []fleetGroup `json:"fleet"`
	Figures []figure     `json:"figures"`
	// NotCompared are healthy nodes with figures but no GPU model in their report.
	NotCompared []string `json:"not_compared"`
	// Drains are what --drain-slow did, node by node.
	Drains    []drainResult     `json:"drains,omitempty"`
	Multinode *multinodeSummary `json:"multinode,omitempty"`
	OutDir    string            `json:"out_dir,omitempty"`
	ElapsedS  float64           `json:"elapsed_s"`
	// SlurmCalls counts the Slurm client commands the sweep ran, by program, and in all.
	SlurmCalls      map[string]int `json:"slurm_calls"`
	SlurmCallsTotal int            `json:"slurm_calls_total"`
}

// failing is a node whose report says unhealthy: its first failing check.
type failing struct {
	Node    string `json:"node"`
	JobID   string `json:"job_id"`
	Check   string `json:"check"`
	Status  string `json:"status"` // fail, or error when no check failed
	Summary string `json:"summary"`
	Remedy  string `json:"remedy,omitempty"` // the check's remedy: reset_gpu, reboot, admin, service
	More    int    `json:"more"`             // further failing checks
}

// missing is a node without a usable report, and why.
type missing struct {
	Node   string `json:"node"`
	JobID  string `json:"job_id,omitempty"`
	State  string `json:"job_state,omitempty"`
	Reason string `json:"reason"`
}

// busBW is one node's nccl_allreduce bus bandwidth at large messages.
type busBW struct {
	Node     string  `json:"node"`
	GBps     float64 `json:"busbw_gbps"`
	At       string  `json:"at,omitempty"`       // message size: "4 GiB"
	Status   string  `json:"status"`             // the check's: ok, warn, fail
	Expected string  `json:"expected,omitempty"` // ">= 390 GB/s"
	// Model is the node's GPU model group; VsMedianPct its distance from that model's median
	// busbw at the same size, in percent (negative: below), when the group was judged.
	Model       string   `json:"model,omitempty"`
	VsMedianPct *float64 `json:"vs_median_pct,omitempty"`
}

// schemaVersion is the JSON summary's "schema" key; it changes only if a key changes meaning.
// 2: "healthy" no longer holds the slow nodes ("slow"); "all_healthy" is false when one is slow.
const schemaVersion = 2

// summarize judges every node's run. A node whose job left a valid report is healthy or
// failing by that report, whatever the job's state, and a healthy one is slow when a figure is
// well below its fleet's (judgeFleet); any other node is missing, with a reason built from
// what is known: the job's state, its exit code, the output file, the last line of its
// stderr, and the node's state afterwards.
func summarize(runs []nodeRun, rule slowRule) summary {
	s := summary{Schema: schemaVersion, Nodes: len(runs), Healthy: []string{}, Slow: []slowFinding{}, Failing: []failing{},
		Missing: []missing{}, BusBW: []busBW{}, Fleet: []fleetGroup{}, Figures: []figure{}, NotCompared: []string{}, SlurmCalls: map[string]int{}}
	order := map[string]int{}
	var healthy []string
	var figs []figure
	models := map[string]string{}
	for i, r := range runs {
		order[r.Node] = i
		if r.Skipped != "" {
			s.Missing = append(s.Missing, missing{Node: r.Node, Reason: "not submitted: " + r.Skipped})
			continue
		}
		rep, perr := reportOf(r)
		if perr != nil {
			s.Missing = append(s.Missing, missing{Node: r.Node, JobID: r.JobID, State: r.State, Reason: missingReason(r, perr)})
			continue
		}
		model := modelOf(rep)
		models[r.Node] = model
		if bw, ok := ncclBusBW(r.Node, rep); ok {
			bw.Model = model
			s.BusBW = append(s.BusBW, bw)
		}
		if !*rep.Healthy {
			s.Failing = append(s.Failing, firstFailure(r, rep))
			continue
		}
		healthy = append(healthy, r.Node)
		nf := figuresOf(r.Node, model, rep)
		switch {
		case len(nf) > 0 && model == "":
			s.NotCompared = append(s.NotCompared, r.Node)
		default:
			figs = append(figs, nf...)
		}
	}
	groups, slow := judgeFleet(figs, rule)
	s.Fleet = append(s.Fleet, groups...)
	s.Figures = append(s.Figures, figs...)
	s.Slow = append(s.Slow, slow...)
	isSlow := map[string]bool{}
	for _, f := range slow {
		isSlow[f.Node] = true
	}
	for _, n := range healthy {
		if !isSlow[n] {
			s.Healthy = append(s.Healthy, n)
		}
	}
	for i, bw := range s.BusBW {
		for _, g := range groups {
			if g.Judged && g.Model == bw.Model && g.Metric == "busbw" && g.At == bw.At && g.Median > 0 {
				pct := (bw.GBps - g.Median) / g.Median * 100
				s.BusBW[i].VsMedianPct = &pct
			}
		}
	}
	s.HealthyHostlist = slurm.CompressHostlist(s.Healthy)
	s.AllHealthy = len(runs) > 0 && len(s.Healthy) == len(runs)
	slices.SortStableFunc(s.BusBW, func(a, b busBW) int {
		if a.GBps != b.GBps {
			if a.GBps < b.GBps {
				return -1
			}
			return 1
		}
		return order[a.Node] - order[b.Node]
	})
	return s
}

// reported lists the nodes whose reports were healthy, slow ones included, in the sweep's
// order: the nodes the multi-node phase tests.
func (s summary) reported(runs []nodeRun) []string {
	ok := map[string]bool{}
	for _, n := range append(slices.Clone(s.Healthy), s.slowNodes()...) {
		ok[n] = true
	}
	var out []string
	for _, r := range runs {
		if ok[r.Node] {
			out = append(out, r.Node)
		}
	}
	return out
}

// slowNodes lists the nodes of the slow findings, each once, in their order.
func (s summary) slowNodes() []string {
	var out []string
	for _, f := range s.Slow {
		if !slices.Contains(out, f.Node) {
			out = append(out, f.Node)
		}
	}
	return out
}

// reportOf is the node's report, or why there is none.
func reportOf(r nodeRun) (nodecheckReport, error) {
	if r.OutputErr != nil {
		return nodecheckReport{}, r.OutputErr
	}
	return parseReport(r.Output, r.Node)
}

// firstFailure names the first check that failed, or else the first that could not decide
// (an error status that policy counts as unhealthy), as a drain reason would.
func firstFailure(r nodeRun, rep nodecheckReport) failing {
	f := failing{Node: r.Node, JobID: r.JobID}
	for _, want := range []string{"fail", "error"} {
		n := 0
		for _, c := range rep.Results {
			if c.Status != want {
				continue
			}
			if n == 0 {
				f.Check, f.Status, f.Summary, f.Remedy = c.Check, c.Status, text.OneLine(c.Summary, maxLine), c.Remedy
			}
			n++
		}
		if n > 0 {
			f.More = n - 1
			return f
		}
	}
	f.Status = "unhealthy"
	f.Summary = "report says unhealthy, with no failing check"
	if rep.ConfigError != "" {
		f.Summary += "; config error: " + text.OneLine(rep.ConfigError, maxLine)
	}
	return f
}

// missingReason says in one line why a node has no report, e.g.
// "job 12 FAILED (exit 2:0), n2.json: empty; stderr: nodecheck: unknown flag: --bogus".
func missingReason(r nodeRun, perr error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s ", r.JobID)
	state := r.State
	if state == "" {
		state = "in an unknown state"
	}
	if r.StateReason != "" && (state == "PENDING" || r.Cancelled != "") {
		state += " (" + r.StateReason + ")"
	}
	cancelled := "cancelled"
	if r.CancelErr != "" {
		cancelled = "not cancelled (" + r.CancelErr + "): scancel " + r.JobID + " by hand"
	}
	switch {
	case r.Cancelled == "deadline":
		fmt.Fprintf(&b, "still %s at the deadline: %s", state, cancelled)
	case r.Cancelled == "interrupted":
		fmt.Fprintf(&b, "%s when the sweep was interrupted: %s", state, cancelled)
	case r.Gone && r.State == "":
		b.WriteString("gone from squeue")
	default:
		b.WriteString(state)
		if r.ExitCode != "" && r.ExitCode != "0:0" {
			fmt.Fprintf(&b, " (exit %s)", r.ExitCode)
		}
	}
	if r.State != "PENDING" { // a job that never started has no output to speak of
		// The file's base name: the summary's first line names the directory.
		file := filepath.Base(r.OutputPath)
		b.WriteString(", ")
		if errors.Is(perr, fs.ErrNotExist) {
			fmt.Fprintf(&b, "no %s", file)
			if r.Stderr == "" && r.Cancelled == "" && (r.State == "COMPLETED" || r.State == "FAILED") {
				// The job ran and left nothing we can see: its stdout and stderr are written
				// on the node, so --out must be a directory the nodes share with this host.
				b.WriteString(" (is --out on a filesystem the nodes share?)")
			}
		} else {
			fmt.Fprintf(&b, "%s: %v", file, perr)
		}
	}
	if r.Stderr != "" {
		b.WriteString("; stderr: " + r.Stderr)
	}
	if r.NodeNow != "" {
		b.WriteString("; " + r.NodeNow)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// ncclObserved reads nccl_allreduce's observed value: "476.5 GB/s at 4 GiB".
var ncclObserved = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) GB/s(?: at (.+))?$`) })

// ncclBusBW is the node's busbw when nccl_allreduce ran: a result with status ok, warn or fail
// whose observed value is a bandwidth (a failed run observes "exit code 1", a skip nothing).
func ncclBusBW(node string, rep nodecheckReport) (busBW, bool) {
	for _, c := range rep.Results {
		if c.Check != "nccl_allreduce" || (c.Status != "ok" && c.Status != "warn" && c.Status != "fail") {
			continue
		}
		m := ncclObserved().FindStringSubmatch(strings.TrimSpace(c.Observed))
		if m == nil {
			return busBW{}, false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return busBW{}, false
		}
		return busBW{Node: node, GBps: v, At: m[2], Status: c.Status, Expected: c.Expected}, true
	}
	return busBW{}, false
}

// maxBusBWLines bounds the text summary's busbw table: the slowest nodes are the ones to read;
// the JSON summary has every node.
const maxBusBWLines = 20

// writeText prints the summary for people: the counts, then the slow nodes (furthest below
// their median first), the healthy hostlist, the failing and the missing nodes, the fleet's
// medians, the busbw table, the multi-node results, the drains and the Slurm calls.
func writeText(w io.Writer, s summary) error {
	var b strings.Builder
	slowNodes := s.slowNodes()
	fmt.Fprintf(&b, "nodecheck fleet sweep: %d nodes, %d healthy, %d slow, %d failing, %d missing", s.Nodes, len(s.Healthy), len(slowNodes), len(s.Failing), len(s.Missing))
	if s.ElapsedS > 0 {
		fmt.Fprintf(&b, " in %.1fs", s.ElapsedS)
	}
	if s.OutDir != "" {
		fmt.Fprintf(&b, " (reports in %s)", s.OutDir)
	}
	b.WriteString("\n")
	width := 0
	for _, f := range s.Slow {
		width = max(width, len(f.Node))
	}
	for _, f := range s.Failing {
		width = max(width, len(f.Node))
	}
	for _, m := range s.Missing {
		width = max(width, len(shownName(m.Node)))
	}
	for _, bw := range s.BusBW {
		width = max(width, len(bw.Node))
	}
	for _, f := range s.Slow {
		z := ""
		if f.RobustZ >= 0 {
			z = fmt.Sprintf(" (robust z %.1f)", f.RobustZ)
		}
		fmt.Fprintf(&b, "SLOW     %-*s  %s%s\n", width, f.Node, slowSummary(f), z)
	}
	if len(s.Healthy) > 0 {
		fmt.Fprintf(&b, "HEALTHY  %s\n", s.HealthyHostlist)
	}
	for _, f := range s.Failing {
		what := f.Check
		if f.Status != "fail" && f.Check != "" {
			what += " (" + f.Status + ")"
		}
		line := f.Summary
		if what != "" {
			line = what + ": " + line
		}
		if f.More > 0 {
			line += fmt.Sprintf(" (+%d more)", f.More)
		}
		fmt.Fprintf(&b, "FAILING  %-*s  %s\n", width, f.Node, line)
	}
	for _, m := range s.Missing {
		fmt.Fprintf(&b, "MISSING  %-*s  %s\n", width, shownName(m.Node), m.Reason)
	}
	writeFleetText(&b, s, width)
	writeMultinodeText(&b, s.Multinode)
	writeDrainsText(&b, s.Drains)
	if s.SlurmCallsTotal > 0 {
		names := make([]string, 0, len(s.SlurmCalls))
		for k := range s.SlurmCalls {
			names = append(names, k)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = fmt.Sprintf("%s %d", k, s.SlurmCalls[k])
		}
		fmt.Fprintf(&b, "Slurm calls: %d (%s)\n", s.SlurmCallsTotal, strings.Join(parts, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFleetText prints the fleet's medians and the busbw table, slowest first.
func writeFleetText(b *strings.Builder, s summary, width int) {
	if len(s.NotCompared) > 0 {
		fmt.Fprintf(b, "not compared with the fleet (no GPU model in the report: gpu_models did not run or NVML did not answer): %s\n", slurm.CompressHostlist(s.NotCompared))
	}
	// Every busbw group; the others (one per InfiniBand port) only where a node is slow.
	var shown []fleetGroup
	for _, g := range s.Fleet {
		if g.Metric == "busbw" || slices.ContainsFunc(s.Slow, func(f slowFinding) bool {
			return f.Model == g.Model && f.Metric == g.Metric && f.At == g.At
		}) {
			shown = append(shown, g)
		}
	}
	if len(shown) > 0 {
		b.WriteString("fleet medians (healthy nodes, by GPU model):\n")
	}
	for _, g := range shown {
		at := ""
		if g.At != "" {
			at = " at " + g.At
		}
		line := fmt.Sprintf("  %s %s%s: median %s %s over %d nodes, MAD %s", g.ModelName, g.Metric, at, fmtValue(g.Median), g.Unit, g.Nodes, fmtValue(g.MAD))
		if g.Judged {
			line += fmt.Sprintf(": slow below %s", fmtValue(g.SlowBelow))
		} else {
			line += ": too few nodes to judge"
		}
		b.WriteString(line + "\n")
	}
	if len(s.BusBW) == 0 {
		return
	}
	b.WriteString("nccl_allreduce busbw, slowest first:\n")
	for i, bw := range s.BusBW {
		if i == maxBusBWLines {
			fmt.Fprintf(b, "  ... %d more at %s GB/s or above (--format json lists every node)\n", len(s.BusBW)-i, fmtValue(bw.GBps))
			break
		}
		line := fmt.Sprintf("  %-*s  %6.1f GB/s", width, bw.Node, bw.GBps)
		if bw.At != "" {
			line += " at " + bw.At
		}
		line += "  " + strings.ToUpper(bw.Status)
		if bw.Expected != "" {
			line += "  (want " + bw.Expected + ")"
		}
		if bw.VsMedianPct != nil {
			line += fmt.Sprintf("  %+.1f%% vs %s median", *bw.VsMedianPct, modelName(bw.Model))
		}
		b.WriteString(line + "\n")
	}
}

// writeJSON prints the summary for programs.
func writeJSON(w io.Writer, s summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// shownName is a node name as the text summary prints it: as it is, or quoted and cut when it
// is not a plain host name (a refused node: its name may hold control characters, or be long).
func shownName(node string) string {
	if checkNodeName(node) == nil {
		return node
	}
	return text.OneLine(strconv.Quote(node), 40)
}
