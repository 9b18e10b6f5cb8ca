package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
)

// drainResult is what the sweep did (or, in a dry run, would do) to one node.
type drainResult struct {
	Node    string `json:"node"`
	Action  string `json:"action"` // drain's: drained, kept, held, unreachable, ...
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
	Command string `json:"command,omitempty"`
	DryRun  bool   `json:"dry_run,omitempty"`
}

// drainItem is one node to drain and why: the summary after "nodecheck: fleet: ".
type drainItem struct {
	Node    string
	Summary string // "slow: busbw 405.0 GB/s at 4 GiB, 15.0% below the h100 median 476.5"
	Remedy  string // the remedy the reason ends with ("[reset_gpu]"); "" for none
}

// fleetCheck is the check id of the sweep's own drains: "nodecheck: fleet: slow: ...".
const fleetCheck = "fleet"

// slowDrains turns the slow findings into drains: one per node, for its figure furthest below
// the median (the findings come in that order), with how many more figures are slow.
func slowDrains(slow []slowFinding) []drainItem {
	var items []drainItem
	count := map[string]int{}
	for _, f := range slow {
		count[f.Node]++
	}
	for _, f := range slow {
		if count[f.Node] == 0 {
			continue
		}
		sum := "slow: " + slowSummary(f)
		if n := count[f.Node] - 1; n > 0 {
			sum += fmt.Sprintf(" (+%d more slow figures)", n)
		}
		count[f.Node] = 0
		items = append(items, drainItem{Node: f.Node, Summary: sum})
	}
	return items
}

// drainNodes drains each node through drain.Apply, as `nodecheck run --drain` would: it reads
// the node first (a reason someone else set is never overwritten, a node nodecheck drained
// keeps its first reason), formats the reason ("nodecheck: fleet: slow: ...", one line of
// printable ASCII, at most 200 bytes), holds back at max_drained counted over the whole
// cluster, and runs scontrol by absolute path without a shell. On top, the sweep itself stops
// at the same limit counted over the swept nodes, so a dry run, which drains nothing for
// drain.Apply to count, also stops where a real run would.
func drainNodes(ctx context.Context, s *slurmClient, o options, swept int, items []drainItem, log io.Writer) []drainResult {
	client := countedDrain{
		c: drain.New(filepath.Join(o.slurmBin, "scontrol"), filepath.Join(o.slurmBin, "sinfo"),
			drain.WithTimeout(o.slurmTimeout), drain.WithSlurmConf(envValue(o.env, "SLURM_CONF")),
			// The text form works on every Slurm version and spares a `scontrol --version`
			// call the counter would not see.
			drain.WithFormat(drain.FormatText)),
		calls: s.calls,
	}
	policy := drain.Policy{Prefix: o.drainPrefix, MaxDrained: o.maxDrained}
	var out []drainResult
	done := 0
	for _, it := range items {
		res := drainResult{Node: it.Node, DryRun: o.dryRun}
		if o.maxDrained.Reached(done, swept) {
			res.Action = string(drain.ActionHeld)
			res.Message = fmt.Sprintf("safety limit reached: this sweep has drained %d of %d nodes, at or above max_drained %s: NOT drained; look for a fleet-wide cause", done, swept, o.maxDrained)
			out = append(out, res)
			continue
		}
		oc := drain.Apply(ctx, client, policy, drain.Request{Node: it.Node, Mode: config.ModeManual,
			Results: []drain.CheckResult{{Check: fleetCheck, Status: drain.StatusFail, Summary: it.Summary, Remedy: it.Remedy}}, Drain: true, DryRun: o.dryRun})
		res.Action, res.Message, res.Reason = string(oc.Action), oc.Message, oc.Reason
		if len(oc.Commands) > 0 {
			res.Command = oc.Commands[0]
		}
		if oc.Action == drain.ActionDrained {
			done++
		}
		fmt.Fprintf(log, "fleet-sweep: %s: %s\n", it.Node, oc.Message)
		out = append(out, res)
	}
	return out
}

// writeDrainsText prints what the drains did.
func writeDrainsText(b *strings.Builder, drains []drainResult) {
	if len(drains) == 0 {
		return
	}
	b.WriteString("drains:\n")
	for _, d := range drains {
		line := fmt.Sprintf("  %s  %s: %s", d.Node, strings.ToUpper(d.Action), d.Message)
		if d.DryRun {
			line = fmt.Sprintf("  %s  %s", d.Node, d.Message) // "dry run, would drain: ..."
			if d.Command != "" {
				line += "\n    would run: " + d.Command
			}
		}
		b.WriteString(line + "\n")
	}
}

// countedDrain is drain's scontrol and sinfo client, counting its commands with the sweep's.
type countedDrain struct {
	c     *drain.Client
	calls *callCounter
}

var _ drain.Slurm = countedDrain{}

func (d countedDrain) Node(ctx context.Context, name string) (drain.NodeState, error) {
	d.calls.add("scontrol")
	return d.c.Node(ctx, name)
}

func (d countedDrain) Nodes(ctx context.Context) ([]drain.NodeState, error) {
	d.calls.add("sinfo")
	return d.c.Nodes(ctx)
}

func (d countedDrain) Update(ctx context.Context, u drain.Update) error {
	d.calls.add("scontrol")
	return d.c.Update(ctx, u)
}

func (d countedDrain) Argv(u drain.Update) []string { return d.c.Argv(u) }

// envValue is the value of key in env ("KEY=value" entries); "" when absent.
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
