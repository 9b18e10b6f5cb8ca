package slurm

// topology.conf against the fabric.
//
// Each channel adapter cabled to a switch is named to a node (AdapterNaming). A node's
// position in the fabric is the leaf its adapter is cabled to; a node with several adapters
// has one position per rail:
//
// Rails. A node's adapters are told apart by the device number in their name ("mlx5_3" is 3,
// "HCA-4" is 3 too, the older name counting from 1) and port; where a name has no number, by
// their order. The fabric is rail-optimized when at least two nodes have adapters on two or
// more leaves and most such nodes "follow the rails": each of their adapters sits on a
// different leaf, and on a leaf where most adapters of multi-adapter nodes have the same
// device number as it. Then every leaf carries one rail, a node's k-th adapter meets the k-th
// adapters of its neighbours, and topology.conf's leaf (one per scalable unit) is compared
// with the fabric rail by rail; nodes whose adapters leave their rails are named. When the
// fabric is not rail-optimized, a node whose adapters reach several leaves is named (Slurm
// places a node under one leaf) and its position is the leaf most of its adapters reach.
//
// Matching. The names of topology.conf's switches are the admin's, so its leaves are matched
// with the fabric's rail by rail: a leaf named after a switch (its "S-<guid>", its 0x GUID or
// its node description) is that switch; the others are paired greedily, the pair sharing the
// most nodes first, each side used once. A node is away when its leaf in topology.conf is not
// paired with the leaf it is cabled to; a node away on most of its rails was moved (named,
// with where the file puts it and where it is cabled); one away on fewer rails has a cable
// in the wrong place (named, with the adapter).
//
// Blocks. BlockName= lines are compared the same way when blocks and leaves pair one to one.
// When a block spans several whole leaves, a node is away when its leaf holds mostly another
// block's nodes; when several blocks share a leaf, when it is not on the leaf holding most of
// its block. The reading that leaves the fewest nodes away is taken, and only when that is at
// most a tenth of the nodes (at least two): otherwise blocks do not follow the leaves (as NVLink
// domains need not) and a note says so. NVLink domains are not in ibnetdiscover's output and
// are not checked.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// adPort is an adapter port of a node, cabled to a switch.
type adPort struct {
	ca       int32 // the adapter, in Fabric.Nodes
	caPort   int
	leaf     int32 // the switch, in Fabric.Nodes
	leafPort int
	rail     int32  // device number << 8 | port, or 1<<24 | order where the name has no number
	adapter  string // "mlx5_0", "HCA-1"; the adapter's GUID name when its description has none
}

// fabricView is the fabric as the comparison sees it.
type fabricView struct {
	l     *topoLinter
	f     *Fabric
	ports [][]adPort // per node (topoLinter.names)
	// others are the ports of hosts that are not nodes: they count when finding the rails.
	others [][]adPort

	railed   bool
	offRail  map[int32]bool       // nodes named for leaving their rails
	leafRail map[int32]int32      // leaf -> the rail most of its multi-adapter ports carry
	matches  map[int32]*railMatch // rail -> how topology.conf's groups pair with leaves
	railName map[int32]string     // rail -> the adapter name most used for it
	idents   map[string]int32     // lower-case switch identities -> switch, -1 when shared
}

// compareFabric names adapters, finds the rails and compares topology.conf with the leaves.
func (l *topoLinter) compareFabric() {
	v := &fabricView{l: l, f: l.in.Fabric, matches: map[int32]*railMatch{}, offRail: map[int32]bool{}}
	l.fab = v
	for _, name := range l.names {
		if len(name) > 2 && (name[:2] == "H-" || name[:2] == "0x") {
			l.guidNames = true
			break
		}
	}
	if !v.nameAdapters() {
		return
	}
	v.findRails()
	if len(l.groups) > 0 {
		v.compare()
	}
	v.noteUncaptured()
}

// nameAdapters fills ports and notes adapters it cannot name; it returns false when no
// adapter of a node is cabled to a switch.
func (v *fabricView) nameAdapters() bool {
	l, f := v.l, v.f
	cas, links := v.adapterLinks()
	var guids []uint64
	var noHost, sharp []int32
	unknown := map[string][]int32{}
	hostPorts := map[string][]adPort{}
	var unknownOrder []string
	mapped := 0
	for _, ca := range cas {
		n := &f.Nodes[ca]
		guids = append(guids[:0], n.GUID)
		for _, lk := range links(ca) {
			if lk.guid != 0 {
				guids = append(guids, lk.guid)
			}
		}
		node, host, adapter := l.nameAdapter(n, guids)
		switch {
		case node >= 0:
			mapped++
			for int(node) >= len(v.ports) {
				v.ports = append(v.ports, nil)
			}
			for _, lk := range links(ca) {
				v.ports[node] = append(v.ports[node], adPort{ca: ca, caPort: lk.port, leaf: int32(lk.sw), leafPort: lk.swPort, adapter: adapter})
			}
		case host != "":
			if _, ok := unknown[host]; !ok {
				unknownOrder = append(unknownOrder, host)
			}
			unknown[host] = append(unknown[host], ca)
			for _, lk := range links(ca) {
				hostPorts[host] = append(hostPorts[host], adPort{ca: ca, caPort: lk.port, leaf: int32(lk.sw), leafPort: lk.swPort, adapter: adapter})
			}
		case strings.Contains(n.Desc, "Aggregation Node"):
			sharp = append(sharp, ca) // SHARP aggregation nodes live inside switches
		default:
			noHost = append(noHost, ca)
		}
	}
	v.noteUnnamed(noHost, sharp, unknown, unknownOrder)
	if mapped == 0 {
		pos := Pos{File: f.Path}
		l.problem(SeverityInfo, pos, "", "no channel adapter in the capture could be named to a node (%d adapters cabled to a switch): topology.conf was not compared with the fabric; see the notes on unnamed adapters", len(cas))
		return false
	}
	for n := range v.ports {
		v.setRails(v.ports[n])
	}
	for _, h := range unknownOrder {
		v.setRails(hostPorts[h])
		v.others = append(v.others, hostPorts[h])
	}
	return true
}

// caLink is a channel adapter's port cabled to a switch.
type caLink struct {
	port, sw, swPort int
	guid             uint64 // the adapter port's GUID, 0 when not printed
}

// adapterLinks returns the channel adapters cabled to switches, in capture order, and their
// links: all of them at once, grouped by adapter (offsets by node), not a map of slices.
func (v *fabricView) adapterLinks() (cas []int32, links func(ca int32) []caLink) {
	f := v.f
	start := make([]int32, len(f.Nodes)+1)
	isCALink := func(lk FabricLink) (ca, sw FabricPort, ok bool) {
		ca, sw = lk.A, lk.B
		if f.Nodes[ca.Node].Type == FabricSwitch {
			ca, sw = sw, ca
		}
		return ca, sw, f.Nodes[ca.Node].Type == FabricCA && f.Nodes[sw.Node].Type == FabricSwitch
	}
	for _, lk := range f.Links {
		if ca, _, ok := isCALink(lk); ok {
			start[ca.Node+1]++
		}
	}
	for i := range f.Nodes {
		if start[i+1] > 0 {
			cas = append(cas, int32(i))
		}
		start[i+1] += start[i]
	}
	caLinks := make([]caLink, start[len(f.Nodes)])
	fill := slices.Clone(start)
	for _, lk := range f.Links {
		if ca, sw, ok := isCALink(lk); ok {
			caLinks[fill[ca.Node]] = caLink{ca.Port, int(sw.Node), sw.Port, ca.GUID}
			fill[ca.Node]++
		}
	}
	return cas, func(ca int32) []caLink { return caLinks[start[ca]:start[ca+1]] }
}

// nameAdapter finds the node of adapter n (guids: its node GUID and port GUIDs): the node,
// or -1 with the host it names (none when it names none), and the adapter's name.
func (l *topoLinter) nameAdapter(n *FabricNode, guids []uint64) (node int32, host, adapter string) {
	first, second, more := descWords(n.Desc)
	adapter = second
	if second == "" || more {
		adapter = n.Name()
	}
	for _, g := range guids {
		if h, ok := l.in.Naming.GUIDs[g]; ok {
			return l.hostNode(h), h, adapter
		}
	}
	for _, g := range guids {
		if !l.guidNames {
			break
		}
		for _, name := range []string{fmt.Sprintf("H-%016x", g), fmt.Sprintf("0x%016x", g), fmt.Sprintf("0x%x", g)} {
			if i, ok := l.idx[name]; ok {
				return i, name, n.Name()
			}
		}
	}
	if re := l.in.Naming.HostRegexp; re != nil {
		m := re.FindStringSubmatch(n.Desc)
		if m == nil {
			return -1, "", adapter
		}
		h := m[0]
		if i := re.SubexpIndex("host"); i > 0 {
			h = m[i]
		} else if len(m) > 1 {
			h = m[1]
		}
		if h == "" {
			return -1, "", adapter
		}
		return l.hostNode(h), h, adapter
	}
	if first == "" {
		return -1, "", adapter
	}
	if i := l.hostNode(first); i >= 0 {
		return i, first, adapter
	}
	if second != "" && !more && isIBDeviceName(second) {
		return -1, first, adapter
	}
	return -1, "", adapter
}

// descWords returns the first two blank-separated words of a node description and whether
// there are more, without splitting the whole of it.
func descWords(d string) (first, second string, more bool) {
	next := func() string {
		d = strings.TrimLeft(d, " \t")
		i := strings.IndexAny(d, " \t")
		if i < 0 {
			i = len(d)
		}
		w := d[:i]
		d = d[i:]
		return w
	}
	first, second = next(), next()
	return first, second, strings.TrimLeft(d, " \t") != ""
}

// hostNode returns the node host names, or -1.
func (l *topoLinter) hostNode(host string) int32 {
	tries := []string{host}
	if d := strings.IndexByte(host, '.'); d > 0 {
		tries = append(tries, host[:d])
	}
	for _, h := range tries {
		if i, ok := l.hostOf[h]; ok && i >= 0 {
			return i
		}
		if i, ok := l.idx[h]; ok {
			return i
		}
	}
	return -1
}

// isIBDeviceName reports whether w is an RDMA device name as the kernel gives it (mlx5_0,
// mlx4_1, hfi1_0, qib0, irdma1) or OFED's older HCA-1.
func isIBDeviceName(w string) bool {
	if n, ok := strings.CutPrefix(w, "HCA-"); ok {
		_, err := strconv.Atoi(n)
		return err == nil
	}
	if w == "" || len(w) > 24 || w[0] < 'a' || w[0] > 'z' || w[len(w)-1] < '0' || w[len(w)-1] > '9' {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// deviceNumber returns the device number in an adapter name: 3 for mlx5_3 and for HCA-4.
func deviceNumber(adapter string) (int, bool) {
	if n, ok := strings.CutPrefix(adapter, "HCA-"); ok {
		d, err := strconv.Atoi(n)
		return d - 1, err == nil && d > 0
	}
	if !isIBDeviceName(adapter) {
		return 0, false
	}
	i := len(adapter)
	for i > 0 && adapter[i-1] >= '0' && adapter[i-1] <= '9' {
		i--
	}
	d, err := strconv.Atoi(adapter[i:])
	return d, err == nil && d < 1<<15
}

// setRails gives a node's ports their rail and sorts them by it.
func (v *fabricView) setRails(ps []adPort) {
	if len(ps) == 1 {
		d, ok := deviceNumber(ps[0].adapter)
		if !ok {
			ps[0].rail = 1 << 24
			return
		}
		ps[0].rail = int32(d)<<8 | int32(ps[0].caPort&0xff)
		return
	}
	numbered := true
	for i := range ps {
		d, ok := deviceNumber(ps[i].adapter)
		numbered = numbered && ok
		ps[i].rail = int32(d)<<8 | int32(ps[i].caPort&0xff)
	}
	if !numbered {
		slices.SortFunc(ps, func(a, b adPort) int {
			if a.adapter != b.adapter {
				if natLess(a.adapter, b.adapter) {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.caPort, b.caPort)
		})
		for i := range ps {
			ps[i].rail = 1<<24 | int32(i)
		}
	}
	slices.SortStableFunc(ps, func(a, b adPort) int { return cmp.Compare(a.rail, b.rail) })
}

// findRails decides whether the fabric is rail-optimized and names the nodes whose
// adapters break its layout.
func (v *fabricView) findRails() {
	votes := map[int32]map[int32]int{}
	names := map[int32]map[string]int{}
	multi := 0
	all := append(slices.Clip(v.ports), v.others...)
	for _, ps := range all {
		if !spansLeaves(ps) {
			continue
		}
		multi++
		for _, p := range ps {
			if votes[p.leaf] == nil {
				votes[p.leaf] = map[int32]int{}
			}
			votes[p.leaf][p.rail]++
			if names[p.rail] == nil {
				names[p.rail] = map[string]int{}
			}
			names[p.rail][p.adapter]++
		}
	}
	v.leafRail = map[int32]int32{}
	for leaf, vs := range votes {
		v.leafRail[leaf] = argmaxKey(vs)
	}
	v.railName = map[int32]string{}
	for r, ns := range names {
		best, bestN := "", -1
		for n, c := range ns {
			if c > bestN || c == bestN && n < best {
				best, bestN = n, c
			}
		}
		v.railName[r] = best
	}
	follow := 0
	for _, ps := range all {
		if spansLeaves(ps) && v.followsRails(ps) {
			follow++
		}
	}
	v.railed = multi >= 2 && follow*2 > multi
	v.l.res.RailOptimized = v.railed
	if v.railed {
		v.noteRails(multi, follow)
	}
	for n, ps := range v.ports {
		switch {
		case !spansLeaves(ps):
		case v.railed && !v.followsRails(ps):
			v.offRail[int32(n)] = true
			v.offRails(int32(n), ps)
		case !v.railed:
			v.splitAdapters(int32(n), ps)
		}
	}
}

// spansLeaves reports whether a node's adapters reach more than one leaf.
func spansLeaves(ps []adPort) bool {
	for _, p := range ps[min(1, len(ps)):] {
		if p.leaf != ps[0].leaf {
			return true
		}
	}
	return false
}

// followsRails reports whether every adapter of a node is on its own leaf, of its rail.
func (v *fabricView) followsRails(ps []adPort) bool {
	seen := map[int32]bool{}
	for _, p := range ps {
		if seen[p.leaf] {
			return false
		}
		seen[p.leaf] = true
		if r, ok := v.leafRail[p.leaf]; !ok || r != p.rail {
			return false
		}
	}
	return true
}

func argmaxKey(m map[int32]int) int32 {
	best, bestN := int32(0), -1
	for k, c := range m {
		if c > bestN || c == bestN && k < best {
			best, bestN = k, c
		}
	}
	return best
}

// leafText names a fabric switch for a message: 'its description' (S-<guid>).
func (v *fabricView) leafText(sw int32) string {
	n := v.f.Nodes[sw]
	if n.Desc == "" {
		return n.Name()
	}
	return fmt.Sprintf("'%s' (%s)", n.Desc, n.Name())
}

// adapterText names an adapter: mlx5_0 (H-<guid>).
func (v *fabricView) adapterText(p adPort) string {
	name := v.f.Nodes[p.ca].Name()
	if p.adapter == name {
		return name
	}
	return p.adapter + " (" + name + ")"
}

// posOf is where a message about node n points: its topology.conf line, else its slurm.conf
// line, else the capture's line of its first adapter.
func (v *fabricView) posOf(n int32) Pos {
	l := v.l
	if int(n) < len(l.groupOf) && l.groupOf[n] >= 0 {
		return l.groups[l.groupOf[n]].pos
	}
	if l.in.Slurm != nil && int(n) < l.nSlurm {
		return l.in.Slurm.Nodes[l.slurmLine[n]].Pos
	}
	return Pos{File: v.f.Path, Line: v.f.Nodes[v.ports[n][0].ca].Line}
}

// offRails names a node of a rail-optimized fabric whose adapters leave their rails.
func (v *fabricView) offRails(n int32, ps []adPort) {
	var parts []string
	seen := map[int32]bool{}
	for _, p := range ps {
		r, ok := v.leafRail[p.leaf]
		switch {
		case seen[p.leaf]:
			parts = append(parts, fmt.Sprintf("%s shares leaf %s (port %d) with another of its adapters", v.adapterText(p), v.leafText(p.leaf), p.leafPort))
		case ok && r != p.rail:
			parts = append(parts, fmt.Sprintf("%s is on leaf %s port %d, which carries %s of the other nodes", v.adapterText(p), v.leafText(p.leaf), p.leafPort, v.railName[r]))
		}
		seen[p.leaf] = true
	}
	name := v.l.names[n]
	v.l.nodeProblem("have adapters off their rails", name, v.posOf(n), "%s's adapters leave the rails the other nodes follow: %s; check the cabling (swapped cables?)", name, strings.Join(parts, "; "))
}

// splitAdapters names a node whose adapters reach several leaves of a fabric that is not
// rail-optimized.
func (v *fabricView) splitAdapters(n int32, ps []adPort) {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s on leaf %s port %d", v.adapterText(p), v.leafText(p.leaf), p.leafPort))
	}
	name := v.l.names[n]
	v.l.nodeProblem("have adapters on different leaves", name, v.posOf(n), "%s's adapters reach different leaf switches (%s) and the fabric is not rail-optimized: Slurm places a node under one leaf, so jobs on it cross switches; cable its adapters to one leaf (or, for rails, every multi-adapter node's k-th adapter to the k-th rail's leaves)",
		name, strings.Join(parts, "; "))
}

// noteRails says the fabric was recognised as rail-optimized.
func (v *fabricView) noteRails(multi, follow int) {
	leaves := map[int32][]string{}
	for leaf, r := range v.leafRail {
		leaves[r] = append(leaves[r], v.f.Nodes[leaf].Name())
	}
	rails := make([]int32, 0, len(leaves))
	for r := range leaves {
		rails = append(rails, r)
	}
	slices.Sort(rails)
	var parts []string
	for _, r := range rails {
		parts = append(parts, fmt.Sprintf("%s on %d %s", v.railName[r], len(leaves[r]), text.Plural(len(leaves[r]), "leaf", "leaves")))
	}
	v.l.problem(SeverityInfo, Pos{File: v.f.Path}, "", "rail-optimized fabric: %d of %d nodes with adapters on several leaves follow %d rails (%s): their adapters are on different leaves by design, and topology.conf is compared rail by rail",
		follow, multi, len(rails), strings.Join(parts, ", "))
}

// noteUnnamed notes adapters lint could not name to a node.
func (v *fabricView) noteUnnamed(noHost, sharp []int32, unknown map[string][]int32, order []string) {
	f := v.f
	if len(noHost) > 0 {
		descs := map[string]int{}
		var ex []string
		for _, ca := range noHost {
			d := f.Nodes[ca].Desc
			if descs[d]++; descs[d] == 1 && len(ex) < 3 {
				ex = append(ex, fmt.Sprintf("'%s' %s, line %d", d, f.Nodes[ca].Name(), f.Nodes[ca].Line))
			}
		}
		fix := "set the hosts' node descriptions to \"HOST DEVICE\" (rdma-ndd does), or pass --ib-guid-map or --ib-host-regexp"
		if v.l.in.Naming.HostRegexp != nil {
			fix = "--ib-host-regexp matched none of these descriptions; adjust it or pass --ib-guid-map"
		}
		v.l.problem(SeverityInfo, Pos{File: f.Path, Line: f.Nodes[noHost[0]].Line}, "", "%d channel %s cabled to switches name no host in their node description (%s): not compared; %s",
			len(noHost), text.Plural(len(noHost), "adapter", "adapters"), strings.Join(ex, "; "), fix)
	}
	if len(sharp) > 0 {
		v.l.problem(SeverityInfo, Pos{File: f.Path, Line: f.Nodes[sharp[0]].Line}, "", "%d SHARP aggregation %s (switch-internal channel adapters) not compared", len(sharp), text.Plural(len(sharp), "node", "nodes"))
	}
	if len(order) > 0 {
		what := "neither slurm.conf nor topology.conf names"
		if !v.l.useSlurm {
			what = "topology.conf does not name"
		}
		shown := order[:min(len(order), 20)]
		more := ""
		if len(order) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(order)-len(shown))
		}
		first := unknown[order[0]][0]
		v.l.problem(SeverityInfo, Pos{File: f.Path, Line: f.Nodes[first].Line}, "", "channel adapters of %d %s that %s (%s%s): not compared (storage, login or management hosts?)",
			len(order), text.Plural(len(order), "host", "hosts"), what, strings.Join(shown, ", "), more)
	}
}

// noteUncaptured notes topology.conf's nodes with no adapter in the capture.
func (v *fabricView) noteUncaptured() {
	l := v.l
	var missing []string
	for n := range l.names {
		if n < len(l.groupOf) && l.groupOf[n] >= 0 && (n >= len(v.ports) || len(v.ports[n]) == 0) {
			missing = append(missing, l.names[n])
		}
	}
	if len(missing) > 0 {
		nodes := CompressHostlist(missing)
		l.problem(SeverityInfo, Pos{File: l.tc.Path}, nodes, "%d %s topology.conf places %s no adapter in the capture that lint could name (%s): not compared (down, not cabled, or described otherwise)",
			len(missing), text.Plural(len(missing), "node", "nodes"), text.Plural(len(missing), "has", "have"), nodes)
	}
}

// suggest returns the group whose nodes share node n's leaf (on its first rail), or -1.
func (v *fabricView) suggest(n int32) int32 {
	if int(n) >= len(v.ports) || len(v.ports[n]) == 0 {
		return -1
	}
	target, done := int32(-1), false
	v.positions(v.ports[n], func(p *adPort, rail int32) {
		if done {
			return
		}
		done = true
		if m := v.matches[rail]; m != nil {
			if ts := m.targets(p.leaf, -1); len(ts) > 0 {
				target = ts[0]
			}
		}
	})
	return target
}

// positions calls fn with the ports that place a node and the rail each stands for: one per
// rail when the fabric is rail-optimized, else the one port on the leaf most of its adapters
// reach, for rail 0.
func (v *fabricView) positions(ps []adPort, fn func(p *adPort, rail int32)) {
	if v.railed {
		for i := range ps {
			if i == 0 || ps[i].rail != ps[i-1].rail {
				fn(&ps[i], ps[i].rail)
			}
		}
		return
	}
	best := 0
	if len(ps) > 1 {
		count := map[int32]int{}
		for i, p := range ps {
			count[p.leaf]++
			if count[p.leaf] > count[ps[best].leaf] {
				best = i
			}
		}
	}
	fn(&ps[best], 0)
}
