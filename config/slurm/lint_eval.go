package slurm

// Lint's per-node rules: each distinct signature (a slurm.conf line, its gres.conf lines and
// AutoDetect) is evaluated once, the way slurmd matches gres.conf against slurm.conf.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

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
		e.emit(SeverityError, e.gresPos, "says %s for %s but %s %s %s: each node registers with fewer, slurmctld marks it INVAL and jobs stay PENDING: add File= entries or set Gres=%s",
			s.String(), nodesPlaceholder, linesRef(took), text.Plural(len(took), "gives", "give"), givenText(took, given), gresText(fix))
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

// checkCores reports Cores= (or CPUs=) naming a core the node does not have. Both count
// cores, not CPUs (gres.conf(5)): slurmd's _parse_gres_config hands the value to
// xcpuinfo_abs_to_mac, whose bitmap has Sockets × CoresPerSocket bits, so on a node of 2
// cores with 2 threads each CPUs=0-3 fails. Seen on slurmd 22.05.8 (and the same code in
// 23.02 to 25.05): "error: xcpuinfo_abs_to_mac: failed", then "error: Invalid GRES data for
// gpu, CPUs=0-3", and slurmd goes on with the GRES unbound to any core: an error in the log,
// not a fatal one, so lint warns. (The "fatal: ... only N CPUs are available" in the same
// function is for callers without the conversion, such as the testsuite's test7.17.prog,
// which is why test7.17.1's Cores=[4-7] on a node of 4 cores and 8 CPUs passes there.)
func (e *evalCtx) checkCores(ls []*GresLine) {
	cores, ok := e.nl.CoreCount()
	if !ok {
		return
	}
	for _, g := range ls {
		m := g.MaxCore()
		if m < cores {
			continue
		}
		e.emit(SeverityWarning, g.Pos, "%s=%s names core %d, but %s gives %s %d %s (%s); %s= counts cores, not CPUs: slurmd logs \"error: Invalid GRES data for %s, %s=%s\" and goes on with the line's %s bound to no core (an error, not fatal, in Slurm 22.05 and later): %s",
			g.CoresKey, g.CoresText, m, ref(topologyPos(e.nl)), nodesPlaceholder, cores, text.Plural(cores, "core", "cores"), topologyText(e.nl), g.CoresKey, g.Name, g.CoresKey, g.CoresText, g.Name, coreFix(e.nl, g, cores))
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
	var parts []string
	for _, kv := range []struct {
		k string
		v int
	}{{"Boards", n.Boards}, {"SocketsPerBoard", n.SocketsPerBoard}, {"Sockets", n.Sockets}, {"CoresPerSocket", n.CoresPerSocket}, {"ThreadsPerCore", n.ThreadsPerCore}} {
		if kv.v > 0 {
			parts = append(parts, kv.k+"="+strconv.Itoa(kv.v))
		}
	}
	if n.CPUs > 0 {
		parts = append(parts, "CPUs="+strconv.Itoa(n.CPUs))
	}
	return strings.Join(parts, " ")
}
