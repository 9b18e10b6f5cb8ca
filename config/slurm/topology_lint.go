package slurm

// Topology lint: topology.conf on its own and against slurm.conf (what Slurm's topology
// plugins refuse or warn about), and against the fabric as ibnetdiscover shows it (which
// nodes are cabled to which leaf switch). The comparison with the fabric is in
// topology_compare.go.
//
// Words used here and in the messages:
//   - a leaf in topology.conf is a SwitchName= line with Nodes= (or with neither Nodes= nor
//     Switches=: an empty leaf); in the block form each BlockName= line plays that part;
//   - a leaf in the fabric is a switch with at least one channel adapter cabled to it.
//
// Cost is linear in the number of nodes and adapters.

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// TopologyInput is what LintTopology checks.
type TopologyInput struct {
	// Slurm is slurm.conf; nil when there is none: node names are then taken as topology.conf
	// writes them, and nodes topology.conf omits cannot be found.
	Slurm    *SlurmConf
	Topology *TopologyConf
	// Fabric is the ibnetdiscover capture; nil checks topology.conf alone.
	Fabric *Fabric
	Naming AdapterNaming
}

// AdapterNaming says how lint finds the host of a channel adapter. In order:
//  1. GUIDs, when it has the adapter's node GUID or one of its port GUIDs;
//  2. a node named after the adapter's GUID, as generated files do (topology.conf
//     Nodes=H-0002c90300080e84 or Nodes=0x0002c90300080e85);
//  3. HostRegexp on the node description, when set;
//  4. otherwise the description's first word, when the description is "HOST DEVICE" as the
//     kernel and rdma-ndd write it ("gpu001 mlx5_0", "gpu001 HCA-1"), or when that word is
//     a node or host name slurm.conf or topology.conf knows.
//
// The host is then the node whose NodeHostname= it is, else the node of that name (a fully
// qualified host is also tried by its short name). An adapter no rule names is reported in a
// note, never guessed.
type AdapterNaming struct {
	GUIDs map[uint64]string // node or port GUID -> host (ParseGUIDMap)
	// HostRegexp finds the host in a node description: its group named "host", else its
	// first group, else the whole match.
	HostRegexp *regexp.Regexp
}

// TopologyResult is what LintTopology finds, in the shape of a lint Report: Problems
// (errors and warnings) and Notes (what it could not check), each sorted by file and line.
type TopologyResult struct {
	Problems []Problem
	Notes    []Problem
	// RailOptimized is true when the fabric's multi-adapter nodes follow rails (see
	// topology_compare.go); the comparison is then made rail by rail.
	RailOptimized bool
}

// maxNodeProblems bounds the problems that name single nodes (a node away from its leaf, an
// adapter off its rail); past it one problem lists the rest.
const maxNodeProblems = 1000

// LintTopology checks topology.conf, against slurm.conf when given, and against the fabric
// when given.
func LintTopology(in TopologyInput) TopologyResult {
	// The index holds slurm.conf's nodes and topology.conf's names: sized once, it does not
	// grow (and rehash) its way up to a large file's names.
	l := &topoLinter{in: in, tc: in.Topology, idx: make(map[string]int32, in.Topology.Names), hostOf: map[string]int32{}}
	l.res.Problems = append(l.res.Problems, in.Topology.Problems...)
	if in.Fabric != nil {
		l.res.Problems = append(l.res.Problems, in.Fabric.Problems...)
	}
	if cut := in.Topology.NamesCut; !cut.IsZero() {
		// The lists past the cut stand for no names: every check of nodes would report
		// what lint did not read. The parser's error says where and why.
		l.problem(SeverityInfo, cut, "", "lint read no names from here on (more than %d): nodes were not checked against slurm.conf, the switches or the fabric", maxTopologyNames)
		return l.finish()
	}
	l.indexSlurm()
	switch in.Topology.Form() {
	case "tree":
		l.readTree()
		l.checkTree()
	case "block":
		l.readBlocks()
		l.checkBlocks()
	}
	l.checkUnknown()
	if l.children != nil {
		l.checkRoot()
	}
	if in.Fabric != nil {
		l.compareFabric()
	}
	l.checkOmitted()
	l.res.Problems = append(l.res.Problems, l.overflow()...)
	return l.finish()
}

// finish sorts the result and makes its empty lists non-nil.
func (l *topoLinter) finish() TopologyResult {
	l.sort(l.res.Problems)
	l.sort(l.res.Notes)
	if l.res.Problems == nil {
		l.res.Problems = []Problem{}
	}
	if l.res.Notes == nil {
		l.res.Notes = []Problem{}
	}
	return l.res
}

// MergeTopology adds a topology result to a lint report, keeping the report's order: each
// file's problems together, by line.
func MergeTopology(r *Report, t TopologyResult) {
	r.Problems = append(r.Problems, t.Problems...)
	r.Notes = append(r.Notes, t.Notes...)
	for _, ps := range [][]Problem{r.Problems, r.Notes} {
		rank := map[string]int{}
		for _, p := range ps {
			if _, ok := rank[p.File]; !ok {
				rank[p.File] = len(rank)
			}
		}
		slices.SortStableFunc(ps, func(a, b Problem) int {
			return cmp.Or(cmp.Compare(rank[a.File], rank[b.File]), cmp.Compare(a.Line, b.Line))
		})
	}
}

// confGroup is a leaf switch (tree form) or a block (block form) of topology.conf.
type confGroup struct {
	kind  string // "SwitchName" or "BlockName"
	name  string
	pos   Pos
	nodes *Hostlist
	count int // names it lists that lint placed in it
	sw    int // its switch in TopologyConf.Switches (tree form)
}

func (g confGroup) String() string { return g.kind + "=" + g.name }

type topoLinter struct {
	in  TopologyInput
	tc  *TopologyConf
	res TopologyResult

	// Nodes: slurm.conf's first, in its order, then names only topology.conf has.
	names     []string
	idx       map[string]int32
	nSlurm    int              // names[:nSlurm] are slurm.conf's nodes
	slurmLine []int32          // per slurm.conf node: its NodeName line in Slurm.Nodes
	hostOf    map[string]int32 // NodeHostname= -> node, when one node has that host
	useSlurm  bool             // slurm.conf given and it defines some of topology.conf's nodes
	guidNames bool             // some node is named after a GUID (H-<guid>, 0x<guid>)

	groups  []confGroup
	groupOf []int32 // per node: its group in groups, or -1
	// again lists the other groups of nodes that several groups list (groupOf has the first).
	again []nodeGroup

	// The tree, once checkTree found it whole (no undefined child, no loop): each switch's
	// children, its group when it is a leaf (else -1), and the switches no other lists.
	children  [][]int
	leafGroup []int32
	tops      []int

	fab     *fabricView
	away    []nodeProblem // per-node problems past the first maxNodeProblems, by kind
	perNode int           // per-node problems emitted
}

// nodeGroup is a node and a group that lists it.
type nodeGroup struct{ node, group int32 }

// nodeProblem is a per-node problem held back past maxNodeProblems.
type nodeProblem struct {
	kind string
	node string
}

func (l *topoLinter) problem(sev string, pos Pos, nodes, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r := topoRef(pos); r != "" {
		msg = r + " " + msg
	}
	p := Problem{Severity: sev, File: pos.File, Line: pos.Line, Nodes: nodes, Message: msg}
	if sev == SeverityInfo {
		l.res.Notes = append(l.res.Notes, p)
	} else {
		l.res.Problems = append(l.res.Problems, p)
	}
}

// nodeProblem reports a problem about one node, up to maxNodeProblems; the rest are counted
// by kind and listed by overflow.
func (l *topoLinter) nodeProblem(kind, node string, pos Pos, format string, args ...any) {
	if l.perNode >= maxNodeProblems {
		l.away = append(l.away, nodeProblem{kind, node})
		return
	}
	l.perNode++
	l.problem(SeverityWarning, pos, node, format, args...)
}

func (l *topoLinter) overflow() []Problem {
	if len(l.away) == 0 {
		return nil
	}
	byKind := map[string][]string{}
	var kinds []string
	for _, a := range l.away {
		if _, ok := byKind[a.kind]; !ok {
			kinds = append(kinds, a.kind)
		}
		byKind[a.kind] = append(byKind[a.kind], a.node)
	}
	var out []Problem
	for _, k := range kinds {
		nodes := CompressHostlist(byKind[k])
		out = append(out, Problem{Severity: SeverityWarning, File: l.tc.Path, Nodes: nodes,
			Message: fmt.Sprintf("%s: %d more nodes %s (past the first %d problems about single nodes): %s", filepath.Base(l.tc.Path), len(byKind[k]), k, maxNodeProblems, nodes)})
	}
	return out
}

// topoRef names a position: "topology.conf:3", or the file alone for line 0.
func topoRef(p Pos) string {
	if p.Line == 0 && p.File != "" {
		return filepath.Base(p.File) + ":"
	}
	return ref(p)
}

// sort orders problems by file (topology.conf's files, the capture, then the rest in order
// met), line, severity and message.
func (l *topoLinter) sort(ps []Problem) {
	rank := map[string]int{}
	for _, f := range l.tc.Files {
		rank[f] = len(rank)
	}
	if l.in.Fabric != nil {
		if _, ok := rank[l.in.Fabric.Path]; !ok {
			rank[l.in.Fabric.Path] = len(rank)
		}
	}
	for _, p := range ps {
		if _, ok := rank[p.File]; !ok {
			rank[p.File] = len(rank)
		}
	}
	sev := map[string]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(rank[a.File], rank[b.File]), cmp.Compare(a.Line, b.Line),
			cmp.Compare(sev[a.Severity], sev[b.Severity]), strings.Compare(a.Message, b.Message))
	})
}

// indexSlurm lists slurm.conf's nodes and their NodeHostname= names.
func (l *topoLinter) indexSlurm() {
	sc := l.in.Slurm
	if sc == nil {
		return
	}
	for li, n := range sc.Nodes {
		if len(l.names)+n.Names.Len() > maxLintNodes {
			break // Lint reports such a slurm.conf
		}
		start := len(l.names)
		n.Names.Each(func(name string) bool {
			if _, dup := l.idx[name]; !dup {
				l.idx[name] = int32(len(l.names))
				l.names = append(l.names, name)
				l.slurmLine = append(l.slurmLine, int32(li))
			}
			return true
		})
		if n.Hostnames == "" {
			continue
		}
		hosts, err := ParseHostlist(n.Hostnames)
		if err != nil || hosts.Len() != n.Names.Len() {
			continue // a shared or mismatched NodeHostname= names no single node
		}
		i := start
		hosts.Each(func(h string) bool {
			if i < len(l.names) {
				l.addHost(h, int32(i))
				if d := strings.IndexByte(h, '.'); d > 0 {
					l.addHost(h[:d], int32(i))
				}
			}
			i++
			return true
		})
	}
	l.nSlurm = len(l.names)
	l.useSlurm = true
}

// addHost records that host is node i's; a host two nodes share names neither.
func (l *topoLinter) addHost(host string, i int32) {
	if prev, seen := l.hostOf[host]; seen && prev != i {
		l.hostOf[host] = -1
		return
	}
	l.hostOf[host] = i
}

// node returns the index of a node name topology.conf uses, adding names slurm.conf does not
// define.
func (l *topoLinter) node(name string) int32 {
	if i, ok := l.idx[name]; ok {
		return i
	}
	i := int32(len(l.names))
	l.idx[name] = i
	l.names = append(l.names, name)
	return i
}

// place puts every node g lists into group gi, reporting nodes already in another group.
func (l *topoLinter) place(gi int, what string) {
	g := &l.groups[gi]
	dups := map[int32][]string{}
	var dupOrder []int32
	g.nodes.Each(func(name string) bool {
		n := l.node(name)
		for int(n) >= len(l.groupOf) {
			l.groupOf = append(l.groupOf, -1)
		}
		switch prev := l.groupOf[n]; {
		case prev < 0:
			l.groupOf[n] = int32(gi)
			g.count++
		case prev != int32(gi):
			l.again = append(l.again, nodeGroup{n, int32(gi)})
			if _, seen := dups[prev]; !seen {
				dupOrder = append(dupOrder, prev)
			}
			dups[prev] = append(dups[prev], name)
		}
		return true
	})
	for _, prev := range dupOrder {
		p := l.groups[prev]
		nodes := CompressHostlist(dups[prev])
		l.problem(SeverityWarning, g.pos, nodes, "%s lists %s, which %s (%s) lists too: Slurm warns (%s) and the node's place is ambiguous; keep each node in one %s",
			g, nodes, p, topoRef(p.pos), what, strings.TrimSuffix(g.kind, "Name"))
	}
}

// readTree makes a group of each leaf switch.
func (l *topoLinter) readTree() {
	l.leafGroup = make([]int32, len(l.tc.Switches))
	for i, s := range l.tc.Switches {
		l.leafGroup[i] = -1
		if !s.IsLeaf() {
			continue
		}
		l.leafGroup[i] = int32(len(l.groups))
		nodes := s.Nodes
		if nodes == nil {
			nodes, _ = ParseHostlist("")
		}
		l.groups = append(l.groups, confGroup{kind: "SwitchName", name: s.Name, pos: s.Pos, nodes: nodes, sw: i})
		l.place(len(l.groups)-1, "Multiple leaf switches contain nodes")
	}
}

// readBlocks makes a group of each block.
func (l *topoLinter) readBlocks() {
	for _, b := range l.tc.Blocks {
		l.groups = append(l.groups, confGroup{kind: "BlockName", name: b.Name, pos: b.Pos, nodes: b.Nodes})
		l.place(len(l.groups)-1, "a node in two blocks")
	}
}

// checkBlocks reports what block_record_validate refuses: names defined twice, blocks without
// nodes, and blocks smaller than the base block size.
func (l *topoLinter) checkBlocks() {
	byName := map[string]Pos{}
	base, baseWhy := 0, ""
	if len(l.tc.BlockSizes) > 0 {
		base, baseWhy = l.tc.BlockSizes[0], "BlockSizes= at "+topoRef(l.tc.BlockSizesPos)
	}
	for _, b := range l.tc.Blocks {
		if first, dup := byName[b.Name]; dup {
			l.problem(SeverityError, b.Pos, "", "BlockName=%s is defined again (first at %s): Slurm refuses the file (Block (%s) has already been defined); keep one", b.Name, topoRef(first), b.Name)
			continue
		}
		byName[b.Name] = b.Pos
		if b.Nodes == nil {
			continue // no Nodes=: the parser reported it
		}
		if b.Nodes.Len() == 0 {
			l.problem(SeverityError, b.Pos, "", "BlockName=%s lists no nodes: Slurm refuses the file (Block configuration lacks children); list its nodes", b.Name)
			continue
		}
		n := l.validCount(b.Nodes)
		if n == 0 {
			continue // only names slurm.conf does not define: checkUnknown reports them
		}
		if base == 0 {
			base, baseWhy = n, "the first block, BlockName="+b.Name
			continue
		}
		if n < base {
			l.problem(SeverityError, b.Pos, "", "BlockName=%s has %d nodes, fewer than the base block size %d (%s): Slurm refuses the file (children count lower than bblock_node_cnt); make every block at least that size",
				b.Name, n, base, baseWhy)
		}
	}
}

// validCount counts the names of h that are nodes, as node_name2bitmap counts them: every
// name when there is no slurm.conf to check them against.
func (l *topoLinter) validCount(h *Hostlist) int {
	if !l.useSlurm {
		return h.Len()
	}
	n := 0
	h.Each(func(name string) bool {
		if i, ok := l.idx[name]; ok && int(i) < l.nSlurm {
			n++
		}
		return true
	})
	return n
}

// checkUnknown reports names topology.conf lists that slurm.conf does not define; when it
// defines none of them, one problem says the files do not belong together.
func (l *topoLinter) checkUnknown() {
	if !l.useSlurm || len(l.names) == l.nSlurm {
		return
	}
	known := 0
	for n := 0; n < l.nSlurm && n < len(l.groupOf); n++ {
		if l.groupOf[n] >= 0 {
			known++
		}
	}
	if known == 0 {
		extra := l.names[l.nSlurm:]
		l.problem(SeverityWarning, Pos{File: l.tc.Path, Line: l.groups[0].pos.Line}, "", "topology.conf names %d nodes and %s defines none of them (%s): is this the cluster's slurm.conf? Node names are taken as topology.conf writes them",
			len(extra), filepath.Base(l.in.Slurm.Path), strings.TrimSuffix(listed(extra[:min(len(extra), 8)], len(extra))[2:], ")"))
		l.useSlurm = false
		return
	}
	for _, g := range l.groups {
		var unknown, hints []string
		g.nodes.Each(func(name string) bool {
			if int(l.idx[name]) >= l.nSlurm {
				unknown = append(unknown, name)
				if i, ok := l.hostOf[name]; ok && i >= 0 && len(hints) < 4 {
					hints = append(hints, fmt.Sprintf("%s is NodeHostname of %s", name, l.names[i]))
				}
			}
			return true
		})
		if len(unknown) == 0 {
			continue
		}
		nodes := CompressHostlist(unknown)
		fix := "fix the names or define the nodes"
		if len(hints) > 0 {
			fix = strings.Join(hints, ", ") + ": topology.conf takes node names (NodeName=)"
		}
		l.problem(SeverityWarning, g.pos, nodes, "%s lists %d %s slurm.conf does not define (%s): Slurm ignores %s (Invalid hostnames in %s configuration); %s",
			g, len(unknown), text.Plural(len(unknown), "name", "names"), nodes, text.Plural(len(unknown), "it", "them"),
			map[string]string{"SwitchName": "switch", "BlockName": "block"}[g.kind], fix)
	}
}

// checkOmitted reports slurm.conf's nodes that no leaf or block lists, one problem per
// NodeName line (and, with a fabric, per leaf they are cabled to).
func (l *topoLinter) checkOmitted() {
	if !l.useSlurm || len(l.groups) == 0 {
		return
	}
	type key struct {
		line   int32
		target int32
	}
	omitted := map[key][]string{}
	var order []key
	for n := 0; n < l.nSlurm; n++ {
		if n < len(l.groupOf) && l.groupOf[n] >= 0 {
			continue
		}
		k := key{line: l.slurmLine[n], target: -1}
		if l.fab != nil {
			k.target = l.fab.suggest(int32(n))
		}
		if _, ok := omitted[k]; !ok {
			order = append(order, k)
		}
		omitted[k] = append(omitted[k], l.names[n])
	}
	what, lack := "switch", "switches lack access"
	if l.tc.Form() == "block" {
		what, lack = "block", "blocks lack access"
	}
	for _, k := range order {
		names := omitted[k]
		nodes := CompressHostlist(names)
		them := text.Plural(len(names), "it", "them")
		fix := fmt.Sprintf("add %s to the %s %s cabled to", them, what, text.Plural(len(names), "it is", "they are"))
		if k.target >= 0 {
			g := l.groups[k.target]
			fix = fmt.Sprintf("the capture shows %s cabled with the nodes of %s (%s): add %s there", them, g, topoRef(g.pos), them)
		}
		l.problem(SeverityWarning, l.in.Slurm.Nodes[k.line].Pos, nodes, "defines %s, which %s puts in no %s: Slurm warns (%s to %d nodes) and cannot place %s in a job with the other nodes; %s",
			nodes, filepath.Base(l.tc.Path), what, lack, len(names), them, fix)
	}
}

// groupText names a group for a message: "SwitchName=s1 (topology.conf:3)".
func (l *topoLinter) groupText(g int32) string {
	if g < 0 {
		return ""
	}
	return l.groups[g].String() + " (" + topoRef(l.groups[g].pos) + ")"
}

// natLess orders adapter names so that mlx5_10 comes after mlx5_9.
func natLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func leadingDigits(s string) int {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
