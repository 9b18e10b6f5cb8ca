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
}

// nodecheckReport is the part of `nodecheck run --format json` the sweep reads.
type nodecheckReport struct {
	Node        string  `json:"node"`
	Mode        string  `json:"mode"`
	Healthy     *bool   `json:"healthy"`
	ConfigError string  `json:"config_error"`
	Results     []check `json:"results"`
}

type check struct {
	Check    string `json:"check"`
	Status   string `json:"status"`
	Summary  string `json:"summary"`
	Observed string `json:"observed"`
	Expected string `json:"expected"`
}

// parseReport reads a node's JSON report. It must be one JSON document with a "healthy" key.
func parseReport(b []byte) (nodecheckReport, error) {
	var r nodecheckReport
	if len(bytes.TrimSpace(b)) == 0 {
		return r, errors.New("empty")
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("invalid JSON: %v", err)
	}
	if r.Healthy == nil {
		return r, errors.New(`not a nodecheck report: no "healthy" key`)
	}
	return r, nil
}

// summary is the sweep's result: every node in exactly one of healthy, failing and missing,
// each list in the sweep's node order, and the NCCL bus bandwidths slowest first.
type summary struct {
	Schema          int       `json:"schema"`
	Nodes           int       `json:"nodes"`
	AllHealthy      bool      `json:"all_healthy"`
	Healthy         []string  `json:"healthy"`
	HealthyHostlist string    `json:"healthy_hostlist"`
	Failing         []failing `json:"failing"`
	Missing         []missing `json:"missing"`
	BusBW           []busBW   `json:"busbw"`
	OutDir          string    `json:"out_dir,omitempty"`
	ElapsedS        float64   `json:"elapsed_s"`
}

// failing is a node whose report says unhealthy: its first failing check.
type failing struct {
	Node    string `json:"node"`
	JobID   string `json:"job_id"`
	Check   string `json:"check"`
	Status  string `json:"status"` // fail, or error when no check failed
	Summary string `json:"summary"`
	More    int    `json:"more"` // further failing checks
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
}

// schemaVersion is the JSON summary's "schema" key; it changes only if a key changes meaning.
const schemaVersion = 1

// summarize judges every node's run. A node whose job left a valid report is healthy or
// failing by that report, whatever the job's state; any other node is missing, with a reason
// built from what is known: the job's state, its exit code, the output file, the last line of
// its stderr, and the node's state afterwards.
func summarize(runs []nodeRun) summary {
	s := summary{Schema: schemaVersion, Nodes: len(runs), Healthy: []string{}, Failing: []failing{}, Missing: []missing{}, BusBW: []busBW{}}
	order := map[string]int{}
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
		if bw, ok := ncclBusBW(r.Node, rep); ok {
			s.BusBW = append(s.BusBW, bw)
		}
		if *rep.Healthy {
			s.Healthy = append(s.Healthy, r.Node)
			continue
		}
		s.Failing = append(s.Failing, firstFailure(r, rep))
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

// reportOf is the node's report, or why there is none.
func reportOf(r nodeRun) (nodecheckReport, error) {
	if r.OutputErr != nil {
		return nodecheckReport{}, r.OutputErr
	}
	return parseReport(r.Output)
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
				f.Check, f.Status, f.Summary = c.Check, c.Status, text.OneLine(c.Summary, maxLine)
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
var ncclObserved = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) GB/s(?: at (.+))?$`)

// ncclBusBW is the node's busbw when nccl_allreduce ran: a result with status ok, warn or fail
// whose observed value is a bandwidth (a failed run observes "exit code 1", a skip nothing).
func ncclBusBW(node string, rep nodecheckReport) (busBW, bool) {
	for _, c := range rep.Results {
		if c.Check != "nccl_allreduce" || (c.Status != "ok" && c.Status != "warn" && c.Status != "fail") {
			continue
		}
		m := ncclObserved.FindStringSubmatch(strings.TrimSpace(c.Observed))
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

// writeText prints the summary for people.
func writeText(w io.Writer, s summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nodecheck fleet sweep: %d nodes, %d healthy, %d failing, %d missing", s.Nodes, len(s.Healthy), len(s.Failing), len(s.Missing))
	if s.ElapsedS > 0 {
		fmt.Fprintf(&b, " in %.1fs", s.ElapsedS)
	}
	if s.OutDir != "" {
		fmt.Fprintf(&b, " (reports in %s)", s.OutDir)
	}
	b.WriteString("\n")
	width := 0
	for _, f := range s.Failing {
		width = max(width, len(f.Node))
	}
	for _, m := range s.Missing {
		width = max(width, len(m.Node))
	}
	for _, bw := range s.BusBW {
		width = max(width, len(bw.Node))
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
		fmt.Fprintf(&b, "MISSING  %-*s  %s\n", width, m.Node, m.Reason)
	}
	if len(s.BusBW) > 0 {
		b.WriteString("nccl_allreduce busbw, slowest first:\n")
		for _, bw := range s.BusBW {
			line := fmt.Sprintf("  %-*s  %6.1f GB/s", width, bw.Node, bw.GBps)
			if bw.At != "" {
				line += " at " + bw.At
			}
			line += "  " + strings.ToUpper(bw.Status)
			if bw.Expected != "" {
				line += "  (want " + bw.Expected + ")"
			}
			b.WriteString(line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON prints the summary for programs.
func writeJSON(w io.Writer, s summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
