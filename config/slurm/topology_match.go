package slurm

// Pairing topology.conf's leaves (or blocks) with the fabric's leaves, rail by rail, and
// naming the nodes that are away from theirs. See topology_compare.go for the rules.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// How a rail's groups pair with its leaves.
const (
	matchOne    = iota // each group with one leaf, each leaf with one group
	matchCoarse        // a group spans whole leaves: a leaf belongs to the group most of its nodes are in
	matchFine          // groups share leaves: a group belongs to the leaf most of its nodes are on
)

// railMatch is how one rail's groups pair with its leaves.
type railMatch struct {
	mode     int
	match    map[int32]int32   // group -> leaf (matchOne)
	matched  map[int32]int32   // leaf -> group (matchOne)
	byCount  map[int32]int32   // leaf -> the group with most nodes there
	homeLeaf map[int32]int32   // group -> the leaf with most of its nodes
	homedOn  map[int32][]int32 // leaf -> the groups whose home leaf it is, in order
}

// home reports whether a node of group g on leaf is where the pairing expects it.
func (m *railMatch) home(g, leaf int32) bool {
	switch m.mode {
	case matchCoarse:
		return m.byCount[leaf] == g
	case matchFine:
		return m.homeLeaf[g] == leaf
	}
	lf, ok := m.match[g]
	return ok && lf == leaf
}

// targets returns the groups other than own whose nodes leaf holds: one, or in matchFine
// every group at home there.
func (m *railMatch) targets(leaf, own int32) []int32 {
	var out []int32
	switch m.mode {
	case matchOne:
		if g, ok := m.matched[leaf]; ok {
			out = append(out, g)
		}
	case matchCoarse:
		if g, ok := m.byCount[leaf]; ok {
			out = append(out, g)
		}
	case matchFine:
		out = append(out, m.homedOn[leaf]...)
	}
	return slices.DeleteFunc(out, func(g int32) bool { return g == own })
}

// expected returns the leaf group g's nodes are on, or -1 when there is not one.
func (m *railMatch) expected(g int32) int32 {
	switch m.mode {
	case matchOne:
		if lf, ok := m.match[g]; ok {
			return lf
		}
	case matchFine:
		if lf, ok := m.homeLeaf[g]; ok {
			return lf
		}
	}
	return -1
}

// placed is a node of a topology.conf group at one of its positions.
type placed struct {
	node  int32
	group int32
	port  *adPort
}

// awayPort is a position of a node that is not where its group is.
type awayPort struct {
	port     adPort
	target   int32   // the group whose nodes that leaf holds, or -1
	others   []int32 // more groups that leaf holds (blocks sharing a leaf)
	expected int32   // the leaf the rest of the node's group is on, or -1
}

type verdict struct {
	rails int
	away  []awayPort
}

// compare pairs groups with leaves rail by rail and names the nodes away from theirs.
func (v *fabricView) compare() {
	l := v.l
	byRail := map[int32][]placed{}
	var rails []int32
	for n, ps := range v.ports {
		if len(ps) == 0 || n >= len(l.groupOf) || l.groupOf[n] < 0 {
			continue
		}
		v.positions(ps, func(p *adPort, rail int32) {
			es, ok := byRail[rail]
			if !ok {
				rails = append(rails, rail)
				es = make([]placed, 0, len(v.ports)-n)
			}
			byRail[rail] = append(es, placed{int32(n), l.groupOf[n], p})
		})
	}
	slices.Sort(rails)
	verdicts := make([]verdict, len(l.names))
	var unaligned []string
	for _, r := range rails {
		es := byRail[r]
		m, away := v.pair(es)
		if m == nil {
			unaligned = append(unaligned, fmt.Sprintf("%d of %d nodes on %s", away, len(es), v.railText(r)))
			continue
		}
		v.matches[r] = m
		for _, e := range es {
			vd := &verdicts[e.node]
			vd.rails++
			if m.home(e.group, e.port.leaf) {
				continue
			}
			a := awayPort{port: *e.port, target: -1, expected: m.expected(e.group)}
			if ts := m.targets(e.port.leaf, e.group); len(ts) > 0 {
				a.target, a.others = ts[0], ts[1:]
			}
			vd.away = append(vd.away, a)
		}
	}
	for n := range verdicts {
		vd := &verdicts[n]
		switch {
		case len(vd.away) == 0:
		case 2*len(vd.away) > vd.rails:
			v.moved(int32(n), vd)
		case !v.offRail[int32(n)]: // a node off its rails is named already
			v.miscabled(int32(n), vd)
		}
	}
	if len(unaligned) > 0 {
		l.problem(SeverityInfo, Pos{File: l.tc.Path}, "", "BlockName= blocks do not follow the fabric's leaves (%s would be away from their block's leaf, however blocks and leaves are paired): blocks were not compared with the fabric; NVLink domains, which blocks often describe, are not in ibnetdiscover's output",
			strings.Join(unaligned, ", "))
	}
}

// railText names a rail for a message.
func (v *fabricView) railText(r int32) string {
	if !v.railed {
		return "their leaves"
	}
	return "rail " + v.railName[r]
}

// pair pairs one rail's groups with its leaves. For blocks it returns nil, and how many
// nodes would be away, when no pairing fits.
func (v *fabricView) pair(es []placed) (*railMatch, int) {
	type pairCount struct {
		g, leaf int32
		n       int
	}
	counts := map[[2]int32]int{}
	for _, e := range es {
		counts[[2]int32{e.group, e.port.leaf}]++
	}
	pairs := make([]pairCount, 0, len(counts))
	for k, n := range counts {
		pairs = append(pairs, pairCount{k[0], k[1], n})
	}
	slices.SortFunc(pairs, func(a, b pairCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.g, b.g), cmp.Compare(a.leaf, b.leaf))
	})
	m := &railMatch{match: map[int32]int32{}, matched: map[int32]int32{}, byCount: map[int32]int32{}, homeLeaf: map[int32]int32{}, homedOn: map[int32][]int32{}}
	for _, p := range pairs {
		if _, ok := m.byCount[p.leaf]; !ok {
			m.byCount[p.leaf] = p.g
		}
		if _, ok := m.homeLeaf[p.g]; !ok {
			m.homeLeaf[p.g] = p.leaf
			m.homedOn[p.leaf] = append(m.homedOn[p.leaf], p.g)
		}
	}
	for _, gs := range m.homedOn {
		slices.Sort(gs)
	}
	if v.l.tc.Form() == "tree" {
		leaves := map[int32]bool{}
		for _, p := range pairs {
			leaves[p.leaf] = true
		}
		for g := range v.l.groups {
			if sw := v.switchNamed(v.l.groups[g].name); sw >= 0 && leaves[sw] {
				if _, used := m.matched[sw]; !used {
					m.match[int32(g)], m.matched[sw] = sw, int32(g)
				}
			}
		}
	}
	for _, p := range pairs {
		_, gUsed := m.match[p.g]
		_, lUsed := m.matched[p.leaf]
		if !gUsed && !lUsed {
			m.match[p.g], m.matched[p.leaf] = p.leaf, p.g
		}
	}
	if v.l.tc.Form() == "tree" {
		return m, 0
	}
	home := func(mode int) int {
		m.mode = mode
		h := 0
		for _, e := range es {
			if m.home(e.group, e.port.leaf) {
				h++
			}
		}
		return h
	}
	best, bestHome := matchOne, home(matchOne)
	for _, mode := range []int{matchFine, matchCoarse} {
		if h := home(mode); h > bestHome {
			best, bestHome = mode, h
		}
	}
	m.mode = best
	if away := len(es) - bestHome; away > max(2, len(es)/10) {
		return nil, away
	}
	return m, 0
}

// switchNamed returns the fabric switch a topology.conf switch name names (its "S-<guid>",
// its GUID in hex, or its node description, when only one switch has it), or -1.
func (v *fabricView) switchNamed(name string) int32 {
	if v.idents == nil {
		v.idents = map[string]int32{}
		add := func(k string, i int32) {
			k = strings.ToLower(k)
			if prev, ok := v.idents[k]; ok && prev != i {
				v.idents[k] = -1
				return
			}
			v.idents[k] = i
		}
		for i, n := range v.f.Nodes {
			if n.Type != FabricSwitch {
				continue
			}
			add(n.Name(), int32(i))
			add(fmt.Sprintf("0x%016x", n.GUID), int32(i))
			add(fmt.Sprintf("0x%x", n.GUID), int32(i))
			if n.Desc != "" {
				add(n.Desc, int32(i))
			}
		}
	}
	if i, ok := v.idents[strings.ToLower(name)]; ok {
		return i
	}
	return -1
}

// moved names a node away from its group on most of its rails.
func (v *fabricView) moved(n int32, vd *verdict) {
	l := v.l
	g := l.groups[l.groupOf[n]]
	name := l.names[n]
	tcount := map[int32]int{}
	for _, a := range vd.away {
		tcount[a.target]++
	}
	t, tn := int32(-1), 0
	for _, a := range vd.away {
		if c := tcount[a.target]; a.target >= 0 && c > tn || a.target >= 0 && c == tn && a.target < t {
			t, tn = a.target, c
		}
	}
	a := vd.away[0]
	for _, x := range vd.away {
		if x.target == t {
			a = x
			break
		}
	}
	verb, what := "under", "switch"
	if g.kind == "BlockName" {
		verb, what = "in", "block"
	}
	where := fmt.Sprintf("its adapter %s is cabled to leaf %s port %d", v.adapterText(a.port), v.leafText(a.port.leaf), a.port.leafPort)
	if vd.rails > 1 {
		where = fmt.Sprintf("%d of its %d rails are cabled elsewhere (%s to leaf %s port %d)", len(vd.away), vd.rails, v.adapterText(a.port), v.leafText(a.port.leaf), a.port.leafPort)
	}
	with := ", a leaf whose nodes topology.conf puts in no other " + what
	fix := fmt.Sprintf("give that leaf a %s= line with %s, or recable %s", g.kind, name, name)
	if t >= 0 {
		with = ", with the nodes of " + l.groupText(t)
		fix = fmt.Sprintf("move %s to %s", name, l.groups[t])
	}
	if len(a.others) > 0 {
		texts := []string{l.groupText(a.target)}
		for _, o := range a.others {
			texts = append(texts, l.groupText(o))
		}
		with = ", with the nodes of " + strings.Join(texts, ", ")
		fix = fmt.Sprintf("move %s to one of them", name)
	}
	rest := ""
	if a.expected >= 0 {
		rest = fmt.Sprintf("; the rest of %s is on leaf %s", g, v.leafText(a.expected))
	}
	l.nodeProblem("are away from their topology.conf "+what, name, g.pos, "puts %s %s %s, but %s%s%s: %s", name, verb, g, where, with, rest, fix)
}

// miscabled names a node whose adapters are away from its group on some rails only.
func (v *fabricView) miscabled(n int32, vd *verdict) {
	l := v.l
	g := l.groups[l.groupOf[n]]
	name := l.names[n]
	var parts []string
	for _, a := range vd.away {
		s := fmt.Sprintf("adapter %s is cabled to leaf %s port %d", v.adapterText(a.port), v.leafText(a.port.leaf), a.port.leafPort)
		if a.target >= 0 {
			s += ", with the nodes of " + l.groupText(a.target)
		}
		if a.expected >= 0 {
			s += fmt.Sprintf(", not to leaf %s like %s of the rest of %s", v.leafText(a.expected), v.railName[a.port.rail], g)
		}
		parts = append(parts, s)
	}
	l.nodeProblem("have adapters cabled away from their topology.conf leaf", name, g.pos, "lists %s in %s, and %s of its %d rails %s elsewhere: %s; check %s",
		name, g, fmt.Sprint(len(vd.away)), vd.rails, text.Plural(len(vd.away), "is", "are"), strings.Join(parts, "; "), text.Plural(len(vd.away), "that cable", "those cables"))
}
