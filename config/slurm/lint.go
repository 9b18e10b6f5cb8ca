package slurm

// Lint: slurm.conf and gres.conf checked against each other for every node, the way slurmd
// and slurmctld will judge them (src/interfaces/gres.c: _check_conf_mismatch, _merge_gres2),
// before they do it by draining nodes or leaving jobs PENDING.
//
// Cost is linear in the number of nodes: nodes are indexed by name once; each gres.conf
// NodeName= hostlist is matched either by walking its names (when it has fewer names than the
// cluster has nodes) or by testing each node with Contains (when it has more); and nodes that
// share a slurm.conf line and the same gres.conf lines share one evaluation, so a 100,000-node
// cluster in a few thousand lines is checked a few thousand times, not 100,000.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// Report is the result of Lint. Its JSON form is the documented output of `nodecheck lint
// --format json`; keys may be added, existing keys keep their meaning:
//
//	{"slurm_conf": "/etc/slurm/slurm.conf", "gres_conf": "/etc/slurm/gres.conf",
//	 "nodes": [{"name": "gpu01",
//	            "configured": [{"name": "gpu", "type": "h100", "count": 8}],
//	            "gres_conf":  [{"name": "gpu", "type": "h100", "count": 8,
//	                            "files": ["/dev/nvidia0", "..."], "autodetect": "",
//	                            "file": "/etc/slurm/gres.conf", "line": 3}],
//	            "autodetect": ""}],
//	 "problems": [{"severity": "error", "file": "gres.conf", "line": 3, "nodes": "gpu[01-04]", "message": "..."}],
//	 "notes": [{"severity": "info", ...}]}
//
// nodes lists every node slurm.conf defines, in slurm.conf order, hostlists expanded;
// configured is its Gres=; gres_conf the gres.conf lines that apply to it in file order (the
// order SLURM_JOB_GPUS indexes), files expanded. problems are sorted by file and line; a
// problem shared by many nodes is reported once with their compressed hostlist. notes say
// what lint could not check (AutoDetect takes GPUs from the hardware).
type Report struct {
	SlurmConf string       `json:"slurm_conf"`
	GresConf  string       `json:"gres_conf"` // empty when there is no gres.conf
	Nodes     []NodeReport `json:"nodes"`
	Problems  []Problem    `json:"problems"`
	Notes     []Problem    `json:"notes"`
}

// NodeReport is one node of a Report.
type NodeReport struct {
	Name       string      `json:"name"`
	Configured []GresSpec  `json:"configured"` // slurm.conf Gres=
	GresConf   []GresEntry `json:"gres_conf"`  // gres.conf lines for this node, in file order
	// AutoDetect is the node's effective gres.conf AutoDetect (node-local, else global);
	// empty when unset.
	AutoDetect string `json:"autodetect"`
}

// GresEntry is one gres.conf line as it applies to a node.
type GresEntry struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Count      uint64   `json:"count"` // GresLine.Total
	Files      []string `json:"files"` // File= (or MultipleFiles=) expanded; empty for count-only GRES
	AutoDetect string   `json:"autodetect"`
	File       string   `json:"file"` // where the line is
	Line       int      `json:"line"`
}

// Errors returns the number of error-severity problems.
func (r Report) Errors() int { return r.count(SeverityError) }

// Warnings returns the number of warning-severity problems.
func (r Report) Warnings() int { return r.count(SeverityWarning) }

func (r Report) count(sev string) int {
	n := 0
	for _, p := range r.Problems {
		if p.Severity == sev {
			n++
		}
	}
	return n
}

// maxLintNodes bounds the nodes Lint expands. Far beyond any cluster; it only stops a
// slurm.conf whose ranges are typos from exhausting memory.
const maxLintNodes = 1 << 22

// nodesPlaceholder stands for the node list in a problem message until all nodes sharing the
// problem are known.
const nodesPlaceholder = "\x00nodes\x00"

// Lint checks slurm.conf against gres.conf (gc is nil when there is none) for every node
// slurm.conf defines and returns each node's configured and gres.conf GRES and every problem:
// the parsers' own problems, GPU counts that differ between the files (nodes then register
// with fewer GPUs than slurmctld expects and jobs stay PENDING), types in one file and not the
// other, duplicate device files, Cores= beyond the node's cores, gres.conf lines that match no
// node, GRES names missing from GresTypes, partitions naming undefined nodes.
//
// It also reports the scheduling pitfalls of a GPU cluster (lint_pitfalls.go) and, with
// WithHookBudgets, the hook limits that leave nodecheck less than its budget (lint_hooks.go).
func Lint(sc *SlurmConf, gc *GresConf, opts ...LintOption) Report {
	l := &linter{sc: sc, gc: gc, groupIdx: map[groupKey]int{}, index: map[string]int32{}}
	l.opts.checkpoint = DefaultCheckpointWindow
	for _, o := range opts {
		o(&l.opts)
	}
	l.fileRank = map[string]int{}
	for _, f := range sc.Files {
		l.rankFile(f)
	}
	r := Report{SlurmConf: sc.Path, Problems: []Problem{}, Notes: []Problem{}}
	r.Problems = append(r.Problems, sc.Problems...)
	if gc != nil {
		r.GresConf = gc.Path
		for _, f := range gc.Files {
			l.rankFile(f)
		}
		r.Problems = append(r.Problems, gc.Problems...)
	}
	if cg := l.opts.cgroup; cg != nil {
		l.rankFile(cg.Path)
		r.Problems = append(r.Problems, cg.Problems...)
	}
	l.expandNodes()
	l.checkSlurmLines()
	l.checkPartitions()
	if gc != nil {
		l.matchGres()
		l.checkGresTypesInGres()
	}
	r.Nodes = l.evaluateNodes()
	if !l.opts.noPitfalls {
		l.checkPitfalls()
	}
	l.checkHooks()
	l.checkIsolation()
	l.checkHealthRuns()
	l.checkRepairs()
	for _, g := range l.groups {
		p := g.problem(l)
		if g.sev == SeverityInfo {
			r.Notes = append(r.Notes, p)
		} else {
			r.Problems = append(r.Problems, p)
		}
	}
	l.sortProblems(r.Problems)
	l.sortProblems(r.Notes)
	return r
}

type linter struct {
	sc   *SlurmConf
	gc   *GresConf
	opts lintOptions

	names    []string // every node, slurm.conf order
	lineOf   []int32  // names[i] is defined by sc.Nodes[lineOf[i]]
	lineNode [][2]int32
	index    map[string]int32

	// gres.conf lines per node, in file order, as a compressed sparse row: node i has the
	// NodeName-specific lines gresIdx[gresOff[i]:gresOff[i+1]]. Lines without NodeName
	// (every node) are in global.
	gresOff []int32
	gresIdx []int32
	global  []int32
	adOf    []int32 // index into gc.NodeAutoDetect of the node's setting, or -1

	groups   []*group
	groupIdx map[groupKey]int
	fileRank map[string]int
}

func (l *linter) rankFile(f string) {
	if _, ok := l.fileRank[f]; !ok {
		l.fileRank[f] = len(l.fileRank)
	}
}

// group is one problem and the nodes it applies to. The message holds nodesPlaceholder where
// the compressed node list goes.
type group struct {
	groupKey
	nodes      []int32
	fixedNodes string // for problems about named hosts that are not nodes
}

type groupKey struct {
	sev string
	pos Pos
	msg string
}

func (g *group) problem(l *linter) Problem {
	nodes := g.fixedNodes
	if len(g.nodes) > 0 {
		// Nodes arrive in evaluation order, which can differ from slurm.conf order.
		slices.Sort(g.nodes)
		g.nodes = slices.Compact(g.nodes)
		names := make([]string, len(g.nodes))
		for i, n := range g.nodes {
			names[i] = l.names[n]
		}
		nodes = CompressHostlist(names)
	}
	return Problem{
		Severity: g.sev, File: g.pos.File, Line: g.pos.Line, Nodes: nodes,
		Message: strings.ReplaceAll(g.msg, nodesPlaceholder, nodes),
	}
}

// emit returns the group of a problem, creating it on first use. The message is a sentence
// whose subject is the position: "gres.conf:3 gives 3 more gpu:tesla than ...".
func (l *linter) emit(sev string, pos Pos, format string, args ...any) *group {
	msg := fmt.Sprintf(format, args...)
	if r := ref(pos); r != "" {
		msg = r + " " + msg
	}
	k := groupKey{sev: sev, pos: pos, msg: msg}
	if i, ok := l.groupIdx[k]; ok {
		return l.groups[i]
	}
	g := &group{groupKey: k}
	l.groupIdx[k] = len(l.groups)
	l.groups = append(l.groups, g)
	return g
}

func (l *linter) sortProblems(ps []Problem) {
	rank := func(f string) int {
		if r, ok := l.fileRank[f]; ok {
			return r
		}
		return len(l.fileRank)
	}
	sevRank := map[string]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := rank(a.File) - rank(b.File); c != 0 {
			return c
		}
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		if c := a.Line - b.Line; c != 0 {
			return c
		}
		if c := sevRank[a.Severity] - sevRank[b.Severity]; c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
}

// expandNodes lists every node in slurm.conf order and indexes them by name. A name defined
// twice stays with its first line and is reported.
func (l *linter) expandNodes() {
	total := 0
	for _, n := range l.sc.Nodes {
		total += n.Names.Len()
	}
	total = min(total, maxLintNodes)
	l.names = make([]string, 0, total)
	l.lineOf = make([]int32, 0, total)
	l.index = make(map[string]int32, total)
	l.lineNode = make([][2]int32, len(l.sc.Nodes))
	type linePair struct{ first, again int32 }
	dups := map[linePair][]string{}
	var dupOrder []linePair
	stopped := false
	for li, n := range l.sc.Nodes {
		start := int32(len(l.names))
		l.lineNode[li] = [2]int32{start, start}
		if stopped {
			continue
		}
		if len(l.names)+n.Names.Len() > maxLintNodes {
			l.emit(SeverityError, n.Pos, "slurm.conf defines more than %d nodes by NodeName=%s: lint stopped here; check the ranges for typos", maxLintNodes, n.Names.String()).fixedNodes = n.Names.String()
			stopped = true
			continue
		}
		n.Names.Each(func(name string) bool {
			if first, dup := l.index[name]; dup {
				k := linePair{l.lineOf[first], int32(li)}
				if _, seen := dups[k]; !seen {
					dupOrder = append(dupOrder, k)
				}
				dups[k] = append(dups[k], name)
				return true
			}
			l.index[name] = int32(len(l.names))
			l.names = append(l.names, name)
			l.lineOf = append(l.lineOf, int32(li))
			return true
		})
		l.lineNode[li] = [2]int32{start, int32(len(l.names))}
	}
	for _, k := range dupOrder {
		first, again := l.sc.Nodes[k.first], l.sc.Nodes[k.again]
		l.emit(SeverityError, again.Pos, "%s defined again: %s already defines %s; slurmctld refuses duplicate node names: remove one definition",
			nodesPlaceholder, ref(first.Pos), text.Plural(len(dups[k]), "it", "them")).fixedNodes = CompressHostlist(dups[k])
	}
}

// addLine adds every node of slurm.conf line li to g.
func (l *linter) addLine(g *group, li int) {
	r := l.lineNode[li]
	for i := r[0]; i < r[1]; i++ {
		g.nodes = append(g.nodes, i)
	}
}

// gresTypesText says what GresTypes is, for messages.
func (l *linter) gresTypesText() string {
	if len(l.sc.GresTypes) > 0 {
		return "GresTypes=" + strings.Join(l.sc.GresTypes, ",") + " at " + ref(l.sc.GresTypesPos)
	}
	if !l.sc.GresTypesComment.IsZero() {
		return "GresTypes is not set: " + ref(l.sc.GresTypesComment) + " has it commented out"
	}
	return "GresTypes is not set"
}

func (l *linter) inGresTypes(name string) bool {
	return confContainsFold(l.sc.GresTypes, name)
}

// checkSlurmLines checks each NodeName line's Gres= on its own: names missing from GresTypes
// and a GRES given both with and without a type.
func (l *linter) checkSlurmLines() {
	for li, n := range l.sc.Nodes {
		pos := gresPos(n)
		seen := map[string]bool{}
		for _, g := range n.Gres {
			lname := strings.ToLower(g.Name)
			if seen[lname] {
				continue
			}
			seen[lname] = true
			if !l.inGresTypes(g.Name) {
				l.addLine(l.emit(SeverityError, pos, "Gres=%s uses %s, but %s: slurmctld refuses GRES it does not know (Invalid GRES): add %s to GresTypes= in slurm.conf",
					gresText(n.Gres), g.Name, l.gresTypesText(), g.Name), li)
			}
			typed, untyped := false, false
			for _, h := range n.Gres {
				if strings.EqualFold(h.Name, g.Name) {
					typed = typed || h.Type != ""
					untyped = untyped || h.Type == ""
				}
			}
			if typed && untyped {
				l.addLine(l.emit(SeverityError, pos, "Gres=%s gives %s both with and without a type: Slurm refuses this (fatal: Some %s GRES in slurm.conf have a type while others do not): give every %s element a type",
					gresText(n.Gres), g.Name, g.Name, g.Name), li)
			}
		}
	}
}

// gresPos is where a node line's Gres= was written: the line itself or a NodeName=DEFAULT.
func gresPos(n NodeLine) Pos {
	if p, ok := n.Set["Gres"]; ok {
		return p
	}
	return n.Pos
}

func gresText(gs []GresSpec) string {
	if len(gs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// checkPartitions reports partitions whose Nodes= names hosts that are neither nodes nor
// NodeSets: slurmctld will not start with them.
func (l *linter) checkPartitions() {
	for _, p := range l.sc.Partitions {
		if p.AllNodes || p.Nodes == "" {
			continue
		}
		h, err := ParseHostlist(p.Nodes)
		if err != nil {
			l.emit(SeverityError, p.Pos, "PartitionName=%s Nodes=%s: %s; slurmctld refuses the partition", p.Name, p.Nodes, confHostlistReason(err))
			continue
		}
		var unknown []string
		count := 0
		if h.Len() <= len(l.names)+len(l.sc.NodeSets)+maxListed {
			cursor := int32(0)
			h.Each(func(name string) bool {
				if _, ok := l.lookup(name, &cursor); ok || confContainsFold(l.sc.NodeSets, name) {
					return true
				}
				count++
				if len(unknown) < maxListed {
					unknown = append(unknown, name)
				}
				return true
			})
		} else {
			matched := 0
			for _, n := range l.names {
				if h.Contains(n) {
					matched++
				}
			}
			for _, n := range l.sc.NodeSets {
				if h.Contains(n) {
					matched++
				}
			}
			count = h.Len() - matched
		}
		if count > 0 {
			l.emit(SeverityError, p.Pos, "PartitionName=%s Nodes= names %d %s that slurm.conf does not define%s: slurmctld refuses to start (Invalid node names in partition): define them with NodeName= or fix Nodes=",
				p.Name, count, text.Plural(count, "host", "hosts"), listed(unknown, count)).fixedNodes = CompressHostlist(unknown)
		}
	}
}

// maxListed bounds the names collected for a message about hosts that are not nodes.
const maxListed = 4096

// listed formats names collected for a message, saying when the list was cut.
func listed(names []string, count int) string {
	if len(names) == 0 {
		return ""
	}
	s := " (" + CompressHostlist(names)
	if count > len(names) {
		s += fmt.Sprintf(" and %d more", count-len(names))
	}
	return s + ")"
}

// lookup returns the index of node name. Hostlists in gres.conf and partitions usually list
// nodes in slurm.conf order, so the node after the previous hit (cursor) is tried before the
// map: at 100,000 nodes that skips most hashing and cache misses.
func (l *linter) lookup(name string, cursor *int32) (int32, bool) {
	if c := *cursor; int(c) < len(l.names) && l.names[c] == name {
		*cursor = c + 1
		return c, true
	}
	i, ok := l.index[name]
	if ok {
		*cursor = i + 1
	}
	return i, ok
}

// matchHostlist calls fn with the index of each node h names, and returns how many it matched
// and the names that are not nodes. It walks h's names when there are not many more of them
// than nodes, and otherwise tests each node with Contains, so it is linear either way.
func (l *linter) matchHostlist(h *Hostlist, fn func(node int32)) (matched int, unknown []string, unknownCount int) {
	if h.Len() <= len(l.names)+maxListed {
		cursor := int32(0)
		h.Each(func(name string) bool {
			if i, ok := l.lookup(name, &cursor); ok {
				matched++
				fn(i)
				return true
			}
			unknownCount++
			if len(unknown) < maxListed {
				unknown = append(unknown, name)
			}
			return true
		})
		return matched, unknown, unknownCount
	}
	for i, n := range l.names {
		if h.Contains(n) {
			matched++
			fn(int32(i))
		}
	}
	return matched, nil, h.Len() - matched
}

// matchGres finds the gres.conf lines and the AutoDetect setting of every node.
func (l *linter) matchGres() {
	var pairNode, pairLine []int32
	linePos := map[Pos]bool{}
	for j, line := range l.gc.Lines {
		linePos[line.Pos] = true
		if line.NodeNames == nil {
			l.global = append(l.global, int32(j))
			continue
		}
		matched, unknown, unknownCount := l.matchHostlist(line.NodeNames, func(i int32) {
			if n := len(pairNode); n > 0 && pairNode[n-1] == i && pairLine[n-1] == int32(j) {
				return // NodeName=a,a: the node gets the line once
			}
			pairNode = append(pairNode, i)
			pairLine = append(pairLine, int32(j))
		})
		l.reportUnmatched(line.Pos, line.NodeNames, matched, unknown, unknownCount)
	}
	// Counting sort by node keeps each node's lines in file order.
	n := len(l.names)
	l.gresOff = make([]int32, n+1)
	for _, i := range pairNode {
		l.gresOff[i+1]++
	}
	for i := 0; i < n; i++ {
		l.gresOff[i+1] += l.gresOff[i]
	}
	l.gresIdx = make([]int32, len(pairNode))
	next := slices.Clone(l.gresOff[:n])
	for k, i := range pairNode {
		l.gresIdx[next[i]] = pairLine[k]
		next[i]++
	}

	l.adOf = make([]int32, n)
	for i := range l.adOf {
		l.adOf[i] = -1
	}
	for k, a := range l.gc.NodeAutoDetect {
		matched, unknown, unknownCount := l.matchHostlist(a.NodeNames, func(i int32) {
			first := l.adOf[i]
			if first < 0 {
				l.adOf[i] = int32(k)
				return
			}
			if f := l.gc.NodeAutoDetect[first]; f.Value != a.Value {
				g := l.emit(SeverityError, a.Pos, "AutoDetect=%s for %s contradicts AutoDetect=%s at %s: slurmd refuses to start (fatal: duplicate node-local AutoDetect specification does not match the first): keep one",
					a.Value, nodesPlaceholder, f.Value, ref(f.Pos))
				g.nodes = append(g.nodes, i)
			}
		})
		if !linePos[a.Pos] {
			l.reportUnmatched(a.Pos, a.NodeNames, matched, unknown, unknownCount)
		}
	}
}

// reportUnmatched warns about a gres.conf NodeName= that names hosts slurm.conf does not
// define: Slurm only ever applies a line to the node that reads it, so these names are typos
// or leftovers.
func (l *linter) reportUnmatched(pos Pos, h *Hostlist, matched int, unknown []string, unknownCount int) {
	switch {
	case matched == 0:
		l.emit(SeverityWarning, pos, "NodeName=%s matches no node in slurm.conf: no node uses this line; fix the names or remove the line", h.String()).fixedNodes = h.String()
	case unknownCount > 0:
		l.emit(SeverityWarning, pos, "NodeName=%s names %d %s that slurm.conf does not define%s: the line does nothing there; check for typos",
			h.String(), unknownCount, text.Plural(unknownCount, "host", "hosts"), listed(unknown, unknownCount)).fixedNodes = CompressHostlist(unknown)
	}
}

// checkGresTypesInGres reports gres.conf Name= values missing from slurm.conf GresTypes:
// Slurm ignores those lines (test7.17.6 expects the failure).
func (l *linter) checkGresTypesInGres() {
	for _, line := range l.gc.Lines {
		if l.inGresTypes(line.Name) {
			continue
		}
		g := l.emit(SeverityError, line.Pos, "Name=%s is not in slurm.conf's GresTypes (%s): Slurm ignores this line (Ignoring gres.conf record, invalid name) and its nodes get no %s: add %s to GresTypes= in slurm.conf",
			line.Name, l.gresTypesText(), line.Name, line.Name)
		if line.NodeNames != nil {
			g.fixedNodes = line.NodeNames.String()
		}
	}
}
