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
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

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
// other, duplicate device files, Cores= beyond the node's CPUs, gres.conf lines that match no
// node, GRES names missing from GresTypes, partitions naming undefined nodes.
func Lint(sc *SlurmConf, gc *GresConf) Report {
	l := &linter{sc: sc, gc: gc, groupIdx: map[groupKey]int{}, index: map[string]int32{}}
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
	l.expandNodes()
	l.checkSlurmLines()
	l.checkPartitions()
	if gc != nil {
		l.matchGres()
		l.checkGresTypesInGres()
	}
	r.Nodes = l.evaluateNodes()
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
	sc *SlurmConf
	gc *GresConf

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

// ref names a position in a message: the file's base name and the line, as an admin says it.
func ref(p Pos) string {
	if p.IsZero() {
		return ""
	}
	return filepath.Base(p.File) + ":" + strconv.Itoa(p.Line)
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

// sigEval is the evaluation shared by every node with the same slurm.conf line, gres.conf
// lines and AutoDetect setting.
type sigEval struct {
	groups  []*group
	entries []GresEntry
	ad      string
}

func (se *sigEval) add(g *group) {
	if !slices.Contains(se.groups, g) {
		se.groups = append(se.groups, g)
	}
}

// evaluateNodes checks every node, one evaluation per distinct signature, and builds the
// per-node part of the report.
func (l *linter) evaluateNodes() []NodeReport {
	out := make([]NodeReport, len(l.names))
	configured := make([][]GresSpec, len(l.sc.Nodes))
	for i, n := range l.sc.Nodes {
		configured[i] = n.Gres
		if configured[i] == nil {
			configured[i] = []GresSpec{}
		}
	}
	sigs := map[string]*sigEval{}
	var key, lastKey []byte
	var merged []int32
	var last *sigEval
	for i := range l.names {
		li := l.lineOf[i]
		ad := int32(-1)
		var spec []int32
		if l.gc != nil {
			ad = l.adOf[i]
			spec = l.gresIdx[l.gresOff[i]:l.gresOff[i+1]]
		}
		key = strconv.AppendInt(key[:0], int64(li), 36)
		key = append(key, '/')
		key = strconv.AppendInt(key, int64(ad), 36)
		for _, j := range spec {
			key = append(key, ',')
			key = strconv.AppendInt(key, int64(j), 36)
		}
		// Neighbouring nodes (a rack) usually share a signature: skip the map for them.
		se, ok := last, last != nil && bytes.Equal(key, lastKey)
		if !ok {
			se, ok = sigs[string(key)]
		}
		if !ok {
			merged = mergeSorted(merged[:0], l.global, spec)
			se = l.evaluate(int(li), merged, ad)
			sigs[string(key)] = se
		}
		if se != last {
			last, lastKey = se, append(lastKey[:0], key...)
		}
		for _, g := range se.groups {
			g.nodes = append(g.nodes, int32(i))
		}
		out[i] = NodeReport{Name: l.names[i], Configured: configured[li], GresConf: se.entries, AutoDetect: se.ad}
	}
	return out
}

// mergeSorted appends the union of two ascending lists to dst, ascending.
func mergeSorted(dst, a, b []int32) []int32 {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			dst = append(dst, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	return dst
}

var noFiles = []string{}

// evaluate checks one signature: slurm.conf line li with gres.conf lines (indices into
// gc.Lines, file order) and node-local AutoDetect ad (-1: none).
func (l *linter) evaluate(li int, lines []int32, ad int32) *sigEval {
	nl := l.sc.Nodes[li]
	se := &sigEval{entries: []GresEntry{}}
	var adPos Pos
	if l.gc != nil {
		se.ad, adPos = l.gc.AutoDetect, l.gc.AutoDetectPos
		if ad >= 0 {
			a := l.gc.NodeAutoDetect[ad]
			se.ad, adPos = a.Value, a.Pos
		}
	}
	ls := make([]*GresLine, len(lines))
	for k, j := range lines {
		g := &l.gc.Lines[j]
		ls[k] = g
		files := g.Files
		if len(g.MultipleFiles) > 0 {
			files = g.MultipleFiles
		}
		if files == nil {
			files = noFiles
		}
		se.entries = append(se.entries, GresEntry{Name: g.Name, Type: g.Type, Count: g.Total(), Files: files, AutoDetect: se.ad, File: g.Pos.File, Line: g.Pos.Line})
	}
	e := &evalCtx{l: l, se: se, nl: nl, gresPos: gresPos(nl), ad: se.ad, adPos: adPos,
		detect: se.ad != "" && se.ad != "off" && confContainsFold(autoDetectValues, se.ad)}
	var order []string
	for _, g := range nl.Gres {
		if n := strings.ToLower(g.Name); !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, g := range ls {
		if n := strings.ToLower(g.Name); !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, name := range order {
		var specs []GresSpec
		var named []*GresLine
		for _, g := range nl.Gres {
			if strings.EqualFold(g.Name, name) {
				specs = append(specs, g)
			}
		}
		for _, g := range ls {
			if strings.EqualFold(g.Name, name) {
				named = append(named, g)
			}
		}
		e.checkMixed(named)
		e.checkDuplicates(named)
		e.checkOver(specs, named)
		e.checkUnder(name, specs, named)
	}
	e.checkCores(ls)
	if e.detect && nl.GPUCount() > 0 && !e.notedDetect {
		se.add(l.emit(SeverityInfo, adPos, "AutoDetect=%s: slurmd takes the GPU device files, types, cores and links of %s from the hardware when it starts; lint checks only what gres.conf writes out, so it cannot confirm slurm.conf's %s: run nodecheck on a node to compare with what it has",
			se.ad, nodesPlaceholder, gpuText(nl.Gres)))
	}
	return se
}

func gpuText(gs []GresSpec) string {
	var out []GresSpec
	for _, g := range gs {
		if strings.EqualFold(g.Name, "gpu") {
			out = append(out, g)
		}
	}
	return gresText(out)
}

type evalCtx struct {
	l           *linter
	se          *sigEval
	nl          NodeLine
	gresPos     Pos
	ad          string
	adPos       Pos
	detect      bool // AutoDetect finds GPUs on the node: counts below slurm.conf are not errors
	notedDetect bool
}

func (e *evalCtx) emit(sev string, pos Pos, format string, args ...any) {
	e.se.add(e.l.emit(sev, pos, format, args...))
}

// checkMixed reports gres.conf lines of one name that mix typed and untyped, or with and
// without files, or repeat a count-only record: slurmd refuses all three (gres.c
// _foreach_gres_conf, fatal).
func (e *evalCtx) checkMixed(named []*GresLine) {
	if len(named) < 2 {
		return
	}
	first := named[0]
	for _, g := range named[1:] {
		if (g.Type != "") != (first.Type != "") {
			if g.Type != "" {
				e.emit(SeverityError, g.Pos, "has Type=%s but %s has Name=%s without Type= for %s: slurmd refuses this (fatal: some records have \"Type=\" specification while others do not): give every %s line a Type= or none",
					g.Type, ref(first.Pos), first.Name, nodesPlaceholder, first.Name)
			} else {
				e.emit(SeverityError, g.Pos, "has no Type= but %s has Name=%s with Type=%s for %s: slurmd refuses this (fatal: some records have \"Type=\" specification while others do not): give every %s line a Type= or none",
					ref(first.Pos), first.Name, first.Type, nodesPlaceholder, first.Name)
			}
			break
		}
	}
	for _, g := range named[1:] {
		if g.HasFiles() != first.HasFiles() {
			has, other := "without File=", "gives it with File="
			if g.HasFiles() {
				has, other = "with File=", "gives it without"
			}
			e.emit(SeverityError, g.Pos, "gives Name=%s %s but %s %s for %s: slurmd refuses this (fatal: some records have \"File\" specification while others do not): give every %s line its File= or none",
				first.Name, has, ref(first.Pos), other, nodesPlaceholder, first.Name)
			break
		}
	}
	if !first.HasFiles() && first.Type == "" {
		for _, g := range named[1:] {
			if !g.HasFiles() && g.Type == "" {
				e.emit(SeverityError, g.Pos, "Name=%s is defined again for %s (first at %s) with neither File= nor Type=: slurmd refuses duplicate records (fatal: gres.conf duplicate records for %s): merge them into one line with the total Count=",
					first.Name, nodesPlaceholder, ref(first.Pos), first.Name)
				break
			}
		}
	}
}

// checkDuplicates reports a device file given twice for one node and GRES name.
func (e *evalCtx) checkDuplicates(named []*GresLine) {
	if len(named) < 2 {
		return
	}
	seen := map[string]*GresLine{}
	type pair struct{ first, again *GresLine }
	dups := map[pair][]string{}
	var order []pair
	for _, g := range named {
		keys := g.Files
		if len(g.MultipleFiles) > 0 {
			keys = []string{strings.Join(g.MultipleFiles, ",")}
		}
		for _, f := range keys {
			if first, ok := seen[f]; ok {
				k := pair{first, g}
				if _, had := dups[k]; !had {
					order = append(order, k)
				}
				dups[k] = append(dups[k], f)
				continue
			}
			seen[f] = g
		}
	}
	for _, k := range order {
		e.emit(SeverityError, k.again.Pos, "%s repeats %s from %s for %s: slurmd refuses duplicate device files (%s duplicate device file name): remove them from one line",
			k.again.Name, CompressHostlist(dups[k]), ref(k.first.Pos), nodesPlaceholder, k.again.Name)
	}
}

// typeEq compares GRES types as Slurm does: case-insensitively, with no type equal only to
// no type.
func typeEq(a, b string) bool { return strings.EqualFold(a, b) }

// checkOver finds gres.conf lines that give more than slurm.conf configures, as slurmd's
// _check_conf_mismatch does: each slurm.conf element consumes the counts of gres.conf lines of
// the same type in file order, and each line left with a count is reported. slurmd logs these
// and ignores the extra, so they are warnings.
func (e *evalCtx) checkOver(specs []GresSpec, named []*GresLine) {
	if len(named) == 0 {
		return
	}
	rem := make([]uint64, len(named))
	for k, g := range named {
		rem[k] = g.Total()
	}
	for _, s := range specs {
		c := s.Count
		for k, g := range named {
			if !typeEq(g.Type, s.Type) {
				continue
			}
			if rem[k] > c {
				rem[k] -= c
				break
			}
			c -= rem[k]
			rem[k] = 0
		}
	}
	at := ref(e.gresPos)
	gres := gresText(e.nl.Gres)
	for k, g := range named {
		if rem[k] == 0 {
			continue
		}
		what := g.Name
		if g.Type != "" {
			what += ":" + g.Type
		}
		hasType, untypedSpec := false, false
		for _, s := range specs {
			hasType = hasType || typeEq(s.Type, g.Type)
			untypedSpec = untypedSpec || s.Type == ""
		}
		switch {
		case len(specs) == 0:
			has := "it has no Gres="
			if len(e.nl.Gres) > 0 {
				has = "Gres=" + gres
			}
			e.emit(SeverityWarning, g.Pos, "gives %s %s to %s, but %s configures no %s for them (%s): slurmd ignores the line there: add %s:%s to Gres= in slurm.conf, or limit this line with NodeName=",
				formatGresCount(rem[k]), what, nodesPlaceholder, at, g.Name, has, what, formatGresCount(g.Total()))
		case g.Type != "" && untypedSpec && !hasType:
			e.emit(SeverityWarning, g.Pos, "gives %s %s to %s, but %s configures %s without a type (Gres=%s): slurmd counts these %s as extra: write the type in slurm.conf (%s:%s:N) or drop Type= here",
				formatGresCount(rem[k]), what, nodesPlaceholder, at, g.Name, gres, g.Name, g.Name, g.Type)
		case g.Type != "" && !hasType:
			e.emit(SeverityWarning, g.Pos, "gives %s %s to %s, but %s has no %s of type %s (Gres=%s): slurmd ignores them: add %s:%s to Gres= or fix Type=",
				formatGresCount(rem[k]), what, nodesPlaceholder, at, g.Name, g.Type, gres, what, formatGresCount(g.Total()))
		case g.Type == "" && !hasType:
			e.emit(SeverityWarning, g.Pos, "gives %s %s without Type= to %s, but %s configures typed %s (Gres=%s): slurmd matches by type and ignores them: add Type= to this line",
				formatGresCount(rem[k]), g.Name, nodesPlaceholder, at, g.Name, gres)
		default:
			e.emit(SeverityWarning, g.Pos, "gives %s more %s than %s configures for %s (Gres=%s): slurmd ignores the extra: raise the count in Gres= or remove the extra devices from this line",
				formatGresCount(rem[k]), what, at, nodesPlaceholder, gres)
		}
	}
}

// checkUnder finds slurm.conf GRES that gres.conf does not provide, as slurmd's _merge_gres2
// matches them: an element with a type takes the gres.conf lines of that type in file order,
// one without a type takes any line. A node whose GPUs have no device file registers with
// fewer than slurm.conf says; slurmctld then marks it INVAL and jobs stay PENDING.
func (e *evalCtx) checkUnder(name string, specs []GresSpec, named []*GresLine) {
	used := make([]bool, len(named))
	isGPU := name == "gpu"
	for _, s := range specs {
		c := s.Count
		var took []*GresLine
		for k, g := range named {
			if c == 0 {
				break
			}
			if used[k] || (s.Type != "" && !typeEq(g.Type, s.Type)) {
				continue
			}
			used[k] = true
			took = append(took, g)
			c -= min(c, g.Total())
		}
		if c == 0 {
			continue
		}
		// Count-only GRES (mps, shard, bandwidth, ...) need no gres.conf line at all.
		if len(named) == 0 && !isGPU {
			continue
		}
		given := s.Count - c
		at := ref(e.gresPos)
		if isGPU && e.detect {
			e.notedDetect = true
			e.emit(SeverityInfo, e.adPos, "AutoDetect=%s: %s says %s for %s and gres.conf lines give %s; slurmd must find the other %s on the hardware when it starts, which lint cannot see: run nodecheck on a node to compare",
				e.ad, at, s.String(), nodesPlaceholder, formatGresCount(given), formatGresCount(c))
			continue
		}
		if len(named) == 0 {
			where := "gres.conf has no " + name + " line for them"
			if e.l.gc == nil {
				where = "there is no gres.conf"
			}
			adText := "AutoDetect is not set"
			if e.ad != "" {
				adText = "AutoDetect=" + e.ad
			}
			typ := ""
			if s.Type != "" {
				typ = " Type=" + s.Type
			}
			e.emit(SeverityError, e.gresPos, "says %s for %s, but %s and %s: slurmd finds no device files, each node registers without these GPUs, slurmctld marks it INVAL and jobs stay PENDING: add `NodeName=%s Name=%s%s File=/dev/nvidia[0-%d]` to gres.conf, or set AutoDetect=nvml",
				s.String(), nodesPlaceholder, where, adText, nodesPlaceholder, s.Name, typ, s.Count-1)
			continue
		}
		if given == 0 && s.Type != "" {
			e.emit(SeverityError, e.gresPos, "says %s for %s, but no gres.conf line for them has Type=%s (%s): slurmd matches GPUs by type, each node registers without these, slurmctld marks it INVAL and jobs stay PENDING: set Type=%s on the gres.conf lines or change the type in Gres=",
				s.String(), nodesPlaceholder, s.Type, linesRef(named), s.Type)
			continue
		}
		// The fix rewrites the whole Gres= value, so that pasting it keeps the other elements.
		fix := slices.Clone(e.nl.Gres)
		for i := range fix {
			if fix[i] == s {
				fix[i].Count = given
				break
			}
		}
		verb := "give"
		if len(took) == 1 {
			verb = "gives"
		}
		e.emit(SeverityError, e.gresPos, "says %s for %s but %s %s %s: each node registers with fewer, slurmctld marks it INVAL and jobs stay PENDING: add File= entries or set Gres=%s",
			s.String(), nodesPlaceholder, linesRef(took), verb, givenText(took, given), gresText(fix))
	}
}

// givenText says what gres.conf lines provide: files when they are all device files.
func givenText(took []*GresLine, given uint64) string {
	files := true
	for _, g := range took {
		files = files && len(g.Files) > 0 && !g.CountSet
	}
	if files {
		return fmt.Sprintf("%d %s", given, text.Plural(int(given), "file", "files"))
	}
	return "a count of " + formatGresCount(given)
}

// linesRef names gres.conf lines compactly: "gres.conf:3", "gres.conf lines 3-4".
func linesRef(ls []*GresLine) string {
	if len(ls) == 0 {
		return "gres.conf"
	}
	if len(ls) == 1 {
		return ref(ls[0].Pos)
	}
	file := ls[0].Pos.File
	var nums []string
	for _, g := range ls {
		if g.Pos.File != file {
			refs := make([]string, len(ls))
			for i, g := range ls {
				refs[i] = ref(g.Pos)
			}
			return strings.Join(refs, ", ")
		}
		nums = append(nums, "l"+strconv.Itoa(g.Pos.Line))
	}
	// CompressHostlist ranges the trailing numbers: l3,l4,l6 gives l[3-4,6].
	c := CompressHostlist(nums)
	c = strings.TrimPrefix(c, "l")
	c = strings.TrimSuffix(strings.TrimPrefix(c, "["), "]")
	return filepath.Base(file) + " lines " + c
}

// checkCores reports Cores= naming a CPU the node does not have. slurmd sizes the core bitmap
// to the node's CPU count and refuses the line (fatal: ... only N CPUs are available);
// test7.17.7 expects that failure for Cores=[0-10000] on an 8-CPU node, and test7.17.1
// success for Cores=[4-7] on the same count, so the bound is the CPU count, not the cores.
func (e *evalCtx) checkCores(ls []*GresLine) {
	cpus, ok := e.nl.CPUCount()
	if !ok {
		return
	}
	for _, g := range ls {
		if m := g.MaxCore(); m >= cpus {
			e.emit(SeverityError, g.Pos, "Cores=%s names CPU %d, but %s gives %s %d CPUs (%s): slurmd refuses the line (fatal: Invalid GRES data ... only %d CPUs are available): fix Cores=",
				FormatRangeList(g.Cores), m, ref(topologyPos(e.nl)), nodesPlaceholder, cpus, topologyText(e.nl), cpus)
		}
	}
}

func topologyPos(n NodeLine) Pos {
	for _, k := range []string{"CPUs", "Sockets", "CoresPerSocket", "ThreadsPerCore", "SocketsPerBoard", "Boards"} {
		if p, ok := n.Set[k]; ok {
			return p
		}
	}
	return n.Pos
}

func topologyText(n NodeLine) string {
	if n.CPUs > 0 {
		return "CPUs=" + strconv.Itoa(n.CPUs)
	}
	var parts []string
	for _, kv := range []struct {
		k string
		v int
	}{{"Boards", n.Boards}, {"SocketsPerBoard", n.SocketsPerBoard}, {"Sockets", n.Sockets}, {"CoresPerSocket", n.CoresPerSocket}, {"ThreadsPerCore", n.ThreadsPerCore}} {
		if kv.v > 0 {
			parts = append(parts, kv.k+"="+strconv.Itoa(kv.v))
		}
	}
	return strings.Join(parts, " ")
}

// WriteJSON writes the report as JSON (see Report for the schema): one node, problem or note a
// line, so that a 100,000-node report streams out quickly and diffs well.
func (r Report) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(struct {
		SlurmConf string `json:"slurm_conf"`
		GresConf  string `json:"gres_conf"`
	}{r.SlurmConf, r.GresConf})
	if err != nil {
		return fmt.Errorf("encode lint report: %w", err)
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(",\n\"nodes\": [")
	// Nodes that share a signature share their configured and gres_conf slices; encode
	// that tail once per distinct pair.
	tails := map[tailKey][]byte{}
	for i, n := range r.Nodes {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n{\"name\":")
		if err := writeJSONString(bw, n.Name); err != nil {
			return err
		}
		k := sharedKey(n)
		tail, ok := tails[k]
		if !ok {
			b, err := json.Marshal(struct {
				Configured []GresSpec  `json:"configured"`
				GresConf   []GresEntry `json:"gres_conf"`
				AutoDetect string      `json:"autodetect"`
			}{nonNil(n.Configured), nonNilEntries(n.GresConf), n.AutoDetect})
			if err != nil {
				return fmt.Errorf("encode lint report: node %s: %w", n.Name, err)
			}
			tail = b[1:]
			tails[k] = tail
		}
		bw.WriteByte(',')
		bw.Write(tail)
	}
	bw.WriteString("\n],\n\"problems\": [")
	if err := writeProblemsJSON(bw, r.Problems); err != nil {
		return err
	}
	bw.WriteString("],\n\"notes\": [")
	if err := writeProblemsJSON(bw, r.Notes); err != nil {
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// writeJSONString writes s as a JSON string. Node names are plain ASCII; anything else goes
// through encoding/json so escaping stays exactly its own.
func writeJSONString(bw *bufio.Writer, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, err := json.Marshal(s)
			if err != nil {
				return fmt.Errorf("encode lint report: %w", err)
			}
			bw.Write(b)
			return nil
		}
	}
	bw.WriteByte('"')
	bw.WriteString(s)
	bw.WriteByte('"')
	return nil
}

// tailKey identifies what a node shares with others: the same backing arrays (Lint hands
// nodes of one signature the same slices) and AutoDetect mean the same rendering.
type tailKey struct {
	c  *GresSpec
	nc int
	g  *GresEntry
	ng int
	ad string
}

func sharedKey(n NodeReport) tailKey {
	k := tailKey{nc: len(n.Configured), ng: len(n.GresConf), ad: n.AutoDetect}
	if k.nc > 0 {
		k.c = &n.Configured[0]
	}
	if k.ng > 0 {
		k.g = &n.GresConf[0]
	}
	return k
}

func nonNil(g []GresSpec) []GresSpec {
	if g == nil {
		return []GresSpec{}
	}
	return g
}

func nonNilEntries(g []GresEntry) []GresEntry {
	if g == nil {
		return []GresEntry{}
	}
	for i := range g {
		if g[i].Files == nil {
			// Copy rather than mutate a slice the caller owns.
			c := slices.Clone(g)
			for j := range c {
				if c[j].Files == nil {
					c[j].Files = noFiles
				}
			}
			return c
		}
	}
	return g
}

func writeProblemsJSON(bw *bufio.Writer, ps []Problem) error {
	for i, p := range ps {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode lint report: %w", err)
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	if len(ps) > 0 {
		bw.WriteString("\n")
	}
	return nil
}

// WriteText writes the report for people: a summary, the problems, the notes, then the nodes
// grouped by what they have (one row for a thousand identical nodes).
func (r Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "slurm.conf  %s\n", r.SlurmConf)
	if r.GresConf != "" {
		fmt.Fprintf(bw, "gres.conf   %s\n", r.GresConf)
	} else {
		fmt.Fprintf(bw, "gres.conf   (none)\n")
	}
	errs, warns := r.Errors(), r.Warnings()
	fmt.Fprintf(bw, "nodes       %d\n", len(r.Nodes))
	fmt.Fprintf(bw, "result      %d %s, %d %s\n", errs, text.Plural(errs, "error", "errors"), warns, text.Plural(warns, "warning", "warnings"))
	if len(r.Problems) > 0 {
		fmt.Fprintf(bw, "\nProblems:\n")
		for _, p := range r.Problems {
			writeProblemText(bw, p)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(bw, "\nNotes:\n")
		for _, p := range r.Notes {
			writeProblemText(bw, p)
		}
	}
	if len(r.Nodes) > 0 {
		fmt.Fprintf(bw, "\nNodes:\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  NODES\tSLURM.CONF GRES\tGRES.CONF\n")
		type row struct {
			names            []string
			configured, gres string
		}
		var rows []*row
		byKey := map[string]*row{}
		// Nodes that share their slices (a rack, a whole slurm.conf line) share a row: the
		// row text is built once per distinct pair of slices, not once per node.
		byShared := map[tailKey]*row{}
		for _, n := range r.Nodes {
			sk := sharedKey(n)
			rw, ok := byShared[sk]
			if !ok {
				c, g := gresText(n.Configured), entriesText(n.GresConf, n.AutoDetect)
				k := c + "\x00" + g
				if rw, ok = byKey[k]; !ok {
					rw = &row{configured: c, gres: g}
					byKey[k] = rw
					rows = append(rows, rw)
				}
				byShared[sk] = rw
			}
			rw.names = append(rw.names, n.Name)
		}
		for _, rw := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", CompressHostlist(rw.names), rw.configured, rw.gres)
		}
		tw.Flush()
	}
	return bw.Flush()
}

func writeProblemText(w io.Writer, p Problem) {
	msg := p.Message
	if p.Nodes != "" && !strings.Contains(msg, p.Nodes) {
		msg += " [nodes: " + p.Nodes + "]"
	}
	fmt.Fprintf(w, "  %-7s  %s\n", p.Severity, msg)
}

// entriesText describes a node's gres.conf lines in one cell: "gpu:h100 x8 /dev/nvidia[0-7]".
func entriesText(es []GresEntry, autodetect string) string {
	var parts []string
	if autodetect != "" {
		parts = append(parts, "AutoDetect="+autodetect)
	}
	for _, e := range es {
		s := e.Name
		if e.Type != "" {
			s += ":" + e.Type
		}
		s += " x" + formatGresCount(e.Count)
		if len(e.Files) > 0 {
			s += " " + CompressHostlist(e.Files)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
