package slurm

// The tree form of topology.conf as switch_record_validate
// (src/plugins/topology/tree/switch_record.c) judges it: switch names, children, loops, and
// whether a switch reaches every node.

import (
	"fmt"
	"slices"
	"strings"
)

// checkTree reports what switch_record_validate refuses or warns about: names defined twice,
// children that are not defined, loops, empty switches, and several tops.
func (l *topoLinter) checkTree() {
	byName := map[string]int{}
	for i, s := range l.tc.Switches {
		if first, dup := byName[s.Name]; dup {
			l.problem(SeverityError, s.Pos, "", "SwitchName=%s is defined again (first at %s): Slurm refuses the file (Switch (%s) has already been defined); keep one", s.Name, topoRef(l.tc.Switches[first].Pos), s.Name)
			continue
		}
		byName[s.Name] = i
	}
	children := make([][]int, len(l.tc.Switches))
	isChild := make([]bool, len(l.tc.Switches))
	broken := false
	for i, s := range l.tc.Switches {
		if s.Switches == nil {
			if s.Nodes == nil {
				// topology_tree.c _parse_switches (22.05; switch_record.c in 24.11): "switch %s has
				// neither child switches nor nodes", and the file is refused. An empty Nodes= is
				// reported where it is parsed.
				l.problem(SeverityError, s.Pos, "", "SwitchName=%s has neither Nodes= nor Switches=: Slurm refuses the file (\"switch %s has neither child switches nor nodes\"); list its nodes (Nodes=) or remove it", s.Name, s.Name)
			}
			continue
		}
		if s.Nodes != nil {
			continue // both: the parser reported it
		}
		if s.Switches.Len() == 0 {
			l.problem(SeverityWarning, s.Pos, "", "SwitchName=%s has an empty Switches=: no node and no child switch; list its children or remove it", s.Name)
		}
		var undefined []string // the first maxListed of them
		nUndefined := 0
		s.Switches.Each(func(c string) bool {
			j, ok := byName[c]
			switch {
			case ok && j == i:
				l.problem(SeverityError, s.Pos, "", "SwitchName=%s Switches= names %s, itself: Slurm refuses the file (Switch configuration %s has invalid child (%s)); remove it", s.Name, c, s.Name, c)
				broken = true
			case !ok:
				nUndefined++
				if len(undefined) < maxListed {
					undefined = append(undefined, c)
				}
				broken = true
			default:
				children[i] = append(children[i], j)
				isChild[j] = true
			}
			return true
		})
		switch {
		case nUndefined == 1:
			l.problem(SeverityError, s.Pos, "", "SwitchName=%s Switches= names %s, which no SwitchName= line defines: Slurm refuses the file (Switch configuration %s has invalid child (%s)); define it or remove it", s.Name, undefined[0], s.Name, undefined[0])
		case nUndefined > 1:
			// One problem a switch, however many names: Switches=s[0-999999] is one typo.
			l.problem(SeverityError, s.Pos, "", "SwitchName=%s Switches= names %d switches no SwitchName= line defines%s: Slurm refuses the file (Switch configuration %s has invalid child (%s)); define them or remove them",
				s.Name, nUndefined, listed(undefined, nUndefined), s.Name, undefined[0])
		}
	}
	if broken || l.checkLoops(children) {
		return
	}
	l.children = children
	for i, s := range l.tc.Switches {
		if !isChild[i] && byName[s.Name] == i {
			l.tops = append(l.tops, i)
		}
	}
}

// maxRootWork bounds the switch links checkRoot follows: a tree of many tops over shared
// switches costs tops × links, and past this a note says the check was not made.
const maxRootWork = 1 << 26

// checkRoot warns when no switch reaches every node topology.conf places, as
// switch_record_validate (src/plugins/topology/tree/switch_record.c) warns when no switch's
// node bitmap holds every node: several tops are fine when one of them reaches all nodes (the
// multi-spine example of Slurm's topology guide: four spines, each over every leaf). Only
// nodes slurm.conf defines count, as in Slurm's bitmaps; nodes no leaf lists are
// checkOmitted's. A switch that reaches every node has a top above it that does too, so
// only tops are tried.
func (l *topoLinter) checkRoot() {
	if len(l.tops) < 2 {
		return // one top is above every leaf, so it reaches every node
	}
	valid := func(n int32) bool { return !l.useSlurm || int(n) < l.nSlurm }
	perGroup := make([]int, len(l.groups))
	total := 0
	for n, g := range l.groupOf {
		if g >= 0 && valid(int32(n)) {
			perGroup[g]++
			total++
		}
	}
	if total == 0 {
		return
	}
	stamp := make([]int, len(l.children)) // the top (plus one) that last reached a switch
	work := 0
	for k, top := range l.tops {
		covered := 0
		reached := func(g int32) bool { return g >= 0 && stamp[l.groups[g].sw] == k+1 }
		stack := []int{top}
		stamp[top] = k + 1
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if g := l.leafGroup[i]; g >= 0 {
				covered += perGroup[g]
			}
			for _, c := range l.children[i] {
				if work++; work > maxRootWork {
					l.problem(SeverityInfo, l.tc.Switches[l.tops[0]].Pos, "", "did not check whether a switch reaches every node: the %d top switches share more than %d switch links", len(l.tops), maxRootWork)
					return
				}
				if stamp[c] != k+1 {
					stamp[c] = k + 1
					stack = append(stack, c)
				}
			}
		}
		// A node two leaves list counts once, under its first leaf or under another.
		var extra map[int32]bool
		for _, a := range l.again {
			if valid(a.node) && !reached(l.groupOf[a.node]) && reached(a.group) {
				if extra == nil {
					extra = map[int32]bool{}
				}
				extra[a.node] = true
			}
		}
		if covered+len(extra) == total {
			return
		}
	}
	var names []string
	for _, t := range l.tops {
		names = append(names, "SwitchName="+l.tc.Switches[t].Name+" ("+topoRef(l.tc.Switches[t].Pos)+")")
	}
	shown := names
	if len(shown) > 8 {
		shown = append(shown[:8:8], fmt.Sprintf("and %d more", len(names)-8))
	}
	l.problem(SeverityWarning, l.tc.Switches[l.tops[0]].Pos, "", "no switch is above all the others: %d switches head separate trees (%s) and none reaches every node; Slurm warns (TOPOLOGY: no switch can reach all nodes through its descendants) and gives a job nodes under one of them only; if they are connected, add a top switch with Switches= naming them",
		len(l.tops), strings.Join(shown, ", "))
}

// checkLoops reports a switch that is its own descendant and returns whether there is one.
func (l *topoLinter) checkLoops(children [][]int) bool {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(children))
	var path []int
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = onPath
		path = append(path, i)
		for _, c := range children[i] {
			switch state[c] {
			case onPath:
				start := slices.Index(path, c)
				var names []string
				for _, p := range path[start:] {
					names = append(names, l.tc.Switches[p].Name)
				}
				names = append(names, l.tc.Switches[c].Name)
				s := l.tc.Switches[c]
				l.problem(SeverityError, s.Pos, "", "SwitchName=%s is its own descendant (%s): not a tree; Slurm refuses the file (Switch configuration is not a tree); remove the switch that closes the loop", s.Name, strings.Join(names, " -> "))
				return true
			case unseen:
				if visit(c) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return false
	}
	for i := range children {
		if state[i] == unseen && visit(i) {
			return true
		}
	}
	return false
}
