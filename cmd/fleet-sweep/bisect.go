package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Locating a bad node or link with multi-node all_reduce_perf runs, as a pure function of an
// injected runner, so that it is tested exhaustively without Slurm.
//
// Round 1 runs the nodes in sets of opts.Group (pairs by default), in the order given (the
// caller orders them by topology), all at once. A set is bad when its run failed or its busbw is
// under the threshold (opts.MinBusBW, and the fleet-relative line over round 1's sets: the
// slow rule of the per-node judgement). Then each bad set is narrowed down, every round running
// at once every test whose nodes are free:
//
//   - split: a bad set is cut in two halves (order kept), each run on its own; a half of one
//     node runs with a reference, a node of a set that passed. A bad half of one node names
//     that node; a bad larger half is split again. Both halves good means the fault needs
//     nodes of both: a cross.
//   - cross: two parts, each good on its own, bad together. Each part is halved and the
//     halves of one are run with the halves of the other; a bad combination is narrowed down
//     again until both parts are single nodes: the link between those two nodes (their
//     cables, or the switch path between them) is the culprit. No bad combination: the set
//     fails only as a whole, and is named as it is.
//
// One bad node among N, with pairs, takes 2 rounds (the pairs, then its pair's two nodes with
// references); with one set of all N, 1 + ceil(log2 N) rounds. A set that did not run (not
// scheduled before the deadline) is no verdict: its nodes stay suspects and are reported as
// unresolved, never as good.

// setOutcome is one all_reduce_perf run over a set of nodes.
type setOutcome struct {
	BusBW  float64 `json:"busbw_gbps,omitempty"` // at large messages, when the run completed
	At     string  `json:"at,omitempty"`         // the message size of BusBW: "16 GiB"
	Failed string  `json:"failed,omitempty"`     // why the run failed (exit status, wrong data, no result)
	NotRun string  `json:"not_run,omitempty"`    // why there is no verdict at all
	JobID  string  `json:"job_id,omitempty"`
	RunS   float64 `json:"run_s,omitempty"` // how long the job ran, measured at squeue's polls
}

// roundRunner runs the sets of one round at once (one Slurm job each) and returns their
// outcomes in order.
type roundRunner func(ctx context.Context, round int, sets [][]string) []setOutcome

// locateOptions tune locate.
type locateOptions struct {
	Group     int      // round 1's set size: 2 for pairs; the sets of round 1 hold at least 2
	MinBusBW  float64  // a set under this busbw is bad; 0: no absolute threshold
	Slow      slowRule // the relative threshold over round 1 (MinNodes counts sets there)
	MaxRounds int      // stop after this many rounds; 0: 2 x ceil(log2 N) + 4
}

// setRun is one test: a set of nodes run together, in a round.
type setRun struct {
	Round   int        `json:"round"`
	Nodes   []string   `json:"nodes"`
	Ref     string     `json:"reference,omitempty"` // the known-good node added to test one suspect
	Outcome setOutcome `json:"outcome"`
	Bad     bool       `json:"bad"`
	Why     string     `json:"why,omitempty"` // why bad: "failed: ...", "busbw 320.0 GB/s under 380.0"
}

// culprit is what locate names.
type culprit struct {
	// Kind: "node"; "link" (two nodes that pass with others but fail together); "set" (fails
	// only as a whole, every part passes); "unresolved" (could not be narrowed down: a run did
	// not happen, no reference node, rounds or time ran out).
	Kind  string   `json:"kind"`
	Nodes []string `json:"nodes"`
	Why   string   `json:"why"`
}

// locateResult is the whole search.
type locateResult struct {
	Runs         []setRun  `json:"runs"`
	Rounds       int       `json:"rounds"`
	Jobs         int       `json:"jobs"`
	Threshold    float64   `json:"threshold_gbps"` // busbw under which a set is bad; 0: failures only
	ThresholdWhy string    `json:"threshold_why"`
	Culprits     []culprit `json:"culprits"`
	Aborted      string    `json:"aborted,omitempty"` // why the search stopped before narrowing down
}

// suspect kinds.
const (
	kindSplit = iota // a bad set, to halve
	kindCross        // two parts good alone, bad together
)

type suspect struct {
	kind  int
	nodes []string // split: the set; cross: a then b
	a, b  []string // cross
	tests []*test
}

// test is one run a suspect waits for.
type test struct {
	nodes    []string
	needsRef bool   // a single suspect node, run with a reference
	noRef    string // why no reference could be found: no verdict
	run      *setRun
}

// locate runs round 1 over nodes and narrows down every bad set.
func locate(ctx context.Context, nodes []string, opts locateOptions, run roundRunner) locateResult {
	res := locateResult{Culprits: []culprit{}, Runs: []setRun{}}
	if len(nodes) < 2 {
		res.Aborted = "fewer than 2 nodes to test"
		return res
	}
	maxRounds := opts.MaxRounds
	if maxRounds <= 0 {
		maxRounds = 2*int(math.Ceil(math.Log2(float64(len(nodes))))) + 4
	}
	groups := chunk(nodes, max(opts.Group, 2))
	first := run(ctx, 1, groups)
	res.Rounds, res.Jobs = 1, len(groups)
	good, pending := firstRound(&res, groups, first, opts)
	for len(pending) > 0 && res.Aborted == "" {
		if res.Rounds >= maxRounds || ctx.Err() != nil {
			why := fmt.Sprintf("stopped after %d rounds", res.Rounds)
			if ctx.Err() != nil {
				why = "the multi-node deadline passed"
			}
			for _, s := range pending {
				res.Culprits = append(res.Culprits, culprit{Kind: "unresolved", Nodes: s.all(), Why: why})
			}
			break
		}
		pending = nextRound(ctx, &res, pending, good, run)
	}
	return res
}

// firstRound judges round 1: the threshold from its busbw, the good nodes, the bad sets to
// narrow down. When every set failed it aborts the search.
func firstRound(res *locateResult, groups [][]string, first []setOutcome, opts locateOptions) (map[string]bool, []*suspect) {
	var bw []float64
	for _, o := range first {
		if o.Failed == "" && o.NotRun == "" {
			bw = append(bw, o.BusBW)
		}
	}
	res.Threshold, res.ThresholdWhy = setThreshold(bw, opts)
	good := map[string]bool{}
	var pending []*suspect
	failed, ran := 0, 0
	for i, g := range groups {
		r := judgeSet(1, g, "", outcomeAt(first, i), res.Threshold)
		res.Runs = append(res.Runs, r)
		switch {
		case r.Outcome.NotRun != "":
			res.Culprits = append(res.Culprits, culprit{Kind: "unresolved", Nodes: g, Why: "not tested: " + r.Outcome.NotRun})
			continue
		case r.Bad:
			pending = append(pending, &suspect{kind: kindSplit, nodes: g})
		default:
			for _, n := range g {
				good[n] = true
			}
		}
		ran++
		if r.Outcome.Failed != "" {
			failed++
		}
	}
	if ran >= 2 && failed == ran {
		res.Aborted = fmt.Sprintf("every set failed in round 1 (the first: %s): a setup problem (--mpi, --allreduce, the MPI build of nccl-tests), not a node; nothing narrowed down", res.Runs[0].Outcome.Failed)
		for _, s := range pending {
			res.Culprits = append(res.Culprits, culprit{Kind: "unresolved", Nodes: s.nodes, Why: "failed with every other set"})
		}
		return good, nil
	}
	return good, pending
}

// nextRound runs one round of the suspects' tests and returns the suspects left.
func nextRound(ctx context.Context, res *locateResult, pending []*suspect, good map[string]bool, run roundRunner) []*suspect {
	for _, s := range pending {
		if s.tests == nil {
			s.expand()
		}
	}
	batch := schedule(pending, good, res.Rounds+1)
	if len(batch) > 0 {
		res.Rounds++
		sets := make([][]string, len(batch))
		for i, t := range batch {
			sets[i] = t.run.Nodes
		}
		outs := run(ctx, res.Rounds, sets)
		res.Jobs += len(batch)
		for i, t := range batch {
			*t.run = judgeSet(res.Rounds, t.run.Nodes, t.run.Ref, outcomeAt(outs, i), res.Threshold)
			res.Runs = append(res.Runs, *t.run)
			if !t.run.Bad && t.run.Outcome.NotRun == "" {
				for _, n := range t.run.Nodes {
					good[n] = true
				}
			}
		}
	}
	var next []*suspect
	for _, s := range pending {
		if !s.resolved() {
			next = append(next, s)
			continue
		}
		more, found := s.resolve()
		next = append(next, more...)
		res.Culprits = append(res.Culprits, found...)
	}
	if len(batch) == 0 && len(next) == len(pending) {
		// Nothing could run and nothing changed (cannot happen: a test either runs or is
		// settled without a reference), but never loop.
		for _, s := range next {
			res.Culprits = append(res.Culprits, culprit{Kind: "unresolved", Nodes: s.all(), Why: "no test could be scheduled"})
		}
		return nil
	}
	return next
}

// setThreshold is the busbw under which a set is bad: the absolute minimum, raised to the
// fleet-relative line over round 1's completed sets when there are enough of them.
func setThreshold(bw []float64, opts locateOptions) (float64, string) {
	thr, why := opts.MinBusBW, ""
	if thr > 0 {
		why = fmt.Sprintf("--multinode-min-busbw %s GB/s", fmtValue(thr))
	}
	if len(bw) >= max(opts.Slow.MinNodes, 1) {
		groups, _ := judgeFleet(slices.Collect(func(yield func(figure) bool) {
			for _, v := range bw {
				if !yield(figure{Model: "sets", Metric: "busbw", Value: v}) {
					return
				}
			}
		}), opts.Slow)
		g := groups[0]
		if g.SlowBelow > thr {
			thr = g.SlowBelow
			why = fmt.Sprintf("round 1's median %s GB/s over %d sets, MAD %s: slow below %s", fmtValue(g.Median), g.Nodes, fmtValue(g.MAD), fmtValue(g.SlowBelow))
		}
	}
	if thr <= 0 {
		why = fmt.Sprintf("failures only: fewer than %d sets completed in round 1 for a fleet median, and no --multinode-min-busbw", max(opts.Slow.MinNodes, 1))
	}
	return thr, why
}

// judgeSet judges one outcome.
func judgeSet(round int, nodes []string, ref string, o setOutcome, thr float64) setRun {
	r := setRun{Round: round, Nodes: nodes, Ref: ref, Outcome: o}
	switch {
	case o.NotRun != "":
	case o.Failed != "":
		r.Bad, r.Why = true, "failed: "+o.Failed
	case thr > 0 && o.BusBW < thr:
		r.Bad, r.Why = true, fmt.Sprintf("busbw %s GB/s under %s", fmtValue(o.BusBW), fmtValue(thr))
	}
	return r
}

func outcomeAt(outs []setOutcome, i int) setOutcome {
	if i < len(outs) {
		return outs[i]
	}
	return setOutcome{NotRun: "the runner returned no outcome"}
}

// chunk cuts nodes into consecutive sets of size n; a last set smaller than 2 joins the one
// before it.
func chunk(nodes []string, n int) [][]string {
	var out [][]string
	for i := 0; i < len(nodes); i += n {
		out = append(out, slices.Clone(nodes[i:min(i+n, len(nodes))]))
	}
	if k := len(out); k > 1 && len(out[k-1]) < 2 {
		out[k-2] = append(out[k-2], out[k-1]...)
		out = out[:k-1]
	}
	return out
}

// halves cuts s in two, order kept: the first half has the smaller part.
func halves(s []string) ([]string, []string) {
	return s[:len(s)/2], s[len(s)/2:]
}

func (s *suspect) all() []string {
	if s.kind == kindCross {
		return append(slices.Clone(s.a), s.b...)
	}
	return s.nodes
}

// expand creates the suspect's tests.
func (s *suspect) expand() {
	add := func(nodes []string) {
		s.tests = append(s.tests, &test{nodes: nodes, needsRef: len(nodes) == 1})
	}
	switch s.kind {
	case kindSplit:
		a, b := halves(s.nodes)
		add(a)
		add(b)
	case kindCross:
		as, bs := parts(s.a), parts(s.b)
		// Disjoint combinations first, so that a round holds two of them.
		for _, ij := range [][2]int{{0, 0}, {1, 1}, {0, 1}, {1, 0}} {
			if ij[0] < len(as) && ij[1] < len(bs) {
				add(append(slices.Clone(as[ij[0]]), bs[ij[1]]...))
			}
		}
	}
}

// parts halves a part of a cross; a single node stays whole.
func parts(p []string) [][]string {
	if len(p) < 2 {
		return [][]string{p}
	}
	a, b := halves(p)
	return [][]string{a, b}
}

// schedule picks this round's tests: every test not yet run whose nodes (and reference) no
// other test of the round uses, since each job takes its nodes whole. A test of one node gets
// a reference from good that no other test of the round uses, preferably from outside its
// suspect's nodes: the suspect's fault lies among those, so a reference from elsewhere cannot
// share a bad link with the tested node. A test that finds no reference waits while other
// tests run (they may add good nodes); when nothing else can run it is settled without a run.
func schedule(pending []*suspect, good map[string]bool, round int) []*test {
	busy := map[string]bool{}
	var batch, waiting []*test
	refs := make([]string, 0, len(good))
	for n := range good {
		refs = append(refs, n)
	}
	slices.Sort(refs)
	for _, s := range pending {
		own := s.all()
		for _, t := range s.tests {
			if t.run != nil || t.noRef != "" || slices.ContainsFunc(t.nodes, func(n string) bool { return busy[n] }) {
				continue
			}
			nodes := t.nodes
			ref := ""
			if t.needsRef {
				free := func(n string) bool { return !busy[n] && !slices.Contains(t.nodes, n) }
				i := slices.IndexFunc(refs, func(n string) bool { return free(n) && !slices.Contains(own, n) })
				if i < 0 {
					i = slices.IndexFunc(refs, free)
				}
				if i < 0 {
					waiting = append(waiting, t)
					continue
				}
				ref = refs[i]
				nodes = append(slices.Clone(t.nodes), ref)
			}
			for _, n := range nodes {
				busy[n] = true
			}
			t.run = &setRun{Round: round, Nodes: nodes, Ref: ref}
			batch = append(batch, t)
		}
	}
	if len(batch) == 0 {
		for _, t := range waiting {
			t.noRef = "no node passed a test to serve as a reference for " + t.nodes[0]
		}
	}
	return batch
}

// resolved reports whether every test of the suspect has a verdict or cannot have one.
func (s *suspect) resolved() bool {
	for _, t := range s.tests {
		if t.noRef == "" && t.run == nil {
			return false
		}
	}
	return true
}

// testState is what a test says about its nodes.
func (t *test) state() (bad bool, unknown string) {
	switch {
	case t.noRef != "":
		return false, t.noRef
	case t.run.Outcome.NotRun != "":
		return false, "not run: " + t.run.Outcome.NotRun
	}
	return t.run.Bad, ""
}

// resolve turns the suspect's test results into new suspects and culprits.
func (s *suspect) resolve() ([]*suspect, []culprit) {
	var next []*suspect
	var found []culprit
	var unknown []string
	var unknownTests []*test
	anyBad := false
	for _, t := range s.tests {
		bad, why := t.state()
		if why != "" {
			unknown = append(unknown, why)
			unknownTests = append(unknownTests, t)
			continue
		}
		if !bad {
			continue
		}
		anyBad = true
		switch {
		case s.kind == kindSplit && len(t.nodes) == 1:
			found = append(found, culprit{Kind: "node", Nodes: t.nodes, Why: t.run.Why + " with reference " + t.run.Ref})
		case s.kind == kindSplit:
			next = append(next, &suspect{kind: kindSplit, nodes: t.nodes})
		default: // cross: the combination, its two parts
			a := slices.DeleteFunc(slices.Clone(t.nodes), func(n string) bool { return !slices.Contains(s.a, n) })
			b := slices.DeleteFunc(slices.Clone(t.nodes), func(n string) bool { return !slices.Contains(s.b, n) })
			if len(a) == 1 && len(b) == 1 {
				found = append(found, culprit{Kind: "link", Nodes: t.nodes, Why: t.run.Why + "; each passes with other nodes"})
			} else {
				next = append(next, &suspect{kind: kindCross, a: a, b: b})
			}
		}
	}
	switch {
	case anyBad:
		// What could not be tested beside a bad part may hold a second fault: say so.
		for i, t := range unknownTests {
			found = append(found, culprit{Kind: "unresolved", Nodes: t.nodes, Why: unknown[i]})
		}
	case len(unknown) > 0:
		found = append(found, culprit{Kind: "unresolved", Nodes: s.all(), Why: strings.Join(unknown, "; ")})
	case s.kind == kindSplit:
		a, b := halves(s.nodes)
		if len(a) == 1 && len(b) == 1 {
			found = append(found, culprit{Kind: "link", Nodes: s.nodes, Why: "fail together; each passes with a reference node"})
		} else {
			next = append(next, &suspect{kind: kindCross, a: a, b: b})
		}
	default:
		found = append(found, culprit{Kind: "set", Nodes: s.all(), Why: "fails only as a whole: every combination of its parts passes"})
	}
	return next, found
}
