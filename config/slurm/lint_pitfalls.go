package slurm

// Lint's scheduling pitfalls: settings Slurm accepts that cost a GPU cluster throughput or
// work, from the checklists GPU sites keep. Each pitfall a file shows is reported
// once, at the first place it shows, naming the others; a file that is right gets nothing.
// Defaults are slurm.conf(5)'s: SchedulerType is sched/backfill unless set; PriorityType is
// priority/basic up to 23.02 and priority/multifactor from 23.11; PreemptType is none and
// PreemptMode OFF; a partition's GraceTime is 0 and its PriorityTier 1.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/config/text"
)

// DefaultCheckpointWindow is how long a preempted GPU job needs to write a checkpoint, unless
// the site says otherwise (WithCheckpointWindow, `nodecheck lint --checkpoint-window`).
const DefaultCheckpointWindow = 180 * time.Second

// maxAlsoAt bounds the other places a pitfall message names; the nodes field has them all.
const maxAlsoAt = 8

// alsoAt names the other places a pitfall shows, after the first: " (also slurm.conf:14,
// slurm.conf:16)", the first maxAlsoAt of them and how many more.
func alsoAt(ps []Pos) string {
	if len(ps) < 2 {
		return ""
	}
	refs := make([]string, 0, maxAlsoAt+1)
	for _, p := range ps[1:min(len(ps), maxAlsoAt+1)] {
		refs = append(refs, ref(p))
	}
	if more := len(ps) - 1 - maxAlsoAt; more > 0 {
		refs = append(refs, fmt.Sprintf("and %d more", more))
	}
	return " (also " + strings.Join(refs, ", ") + ")"
}

// migProfile matches a MIG profile at the end of a GRES type: "a100_3g.20gb" is a slice of
// an a100, "1g.10gb" a slice of an unnamed GPU.
var migProfile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[_-])\d+g\.\d+gb$`) })

// gpuModel is the GPU model a Gres= type names, lower case, without a MIG profile; "" for a
// MIG profile alone.
func gpuModel(typ string) string {
	t := strings.ToLower(typ)
	if loc := migProfile().FindStringIndex(t); loc != nil {
		t = t[:loc[0]]
	}
	return t
}

// gpuModels returns the distinct GPU models of a Gres= value, in order.
func gpuModels(gs []GresSpec) []string {
	var out []string
	for _, g := range gs {
		if !strings.EqualFold(g.Name, "gpu") || g.Count == 0 {
			continue
		}
		if m := gpuModel(g.Type); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// knownGPUModel matches a word that names an NVIDIA or AMD data-centre or workstation GPU, or
// its generation: what sites put in Feature= for --constraint.
var knownGPUModel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(k\d{2}|m\d{2}|p\d{1,3}|v100s?|t4|a\d{1,4}|l4|l40s?|h\d{2,3}|b\d{3}|gb\d{3}|gh\d{3}|mi\d{2,3}[a-z]?|gp100|gv100|rtx\w*|gtx\w*|titan\w*|quadro\w*|tesla|kepler|pascal|volta|turing|ampere|ada|hopper|blackwell)$`)
})

// featureNamesGPU reports whether Feature= word f names a GPU model: one of models (the node's
// Gres= types, as gpuModel gives them), or a word knownGPUModel matches.
func featureNamesGPU(f string, models []string) bool {
	lf := strings.ToLower(f)
	for _, m := range models {
		if lf == m || (len(lf) >= 3 && strings.Contains(m, lf)) || (len(m) >= 3 && strings.Contains(lf, m)) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(lf, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if knownGPUModel().MatchString(w) {
			return true
		}
	}
	return false
}

func namesGPU(features []string, models []string) bool {
	for _, f := range features {
		if featureNamesGPU(f, models) {
			return true
		}
	}
	return false
}

// checkPitfalls reports the scheduling pitfalls.
func (l *linter) checkPitfalls() {
	l.checkScheduler()
	l.checkBackfillWindow()
	l.checkPriority()
	l.checkFairshare()
	l.checkNodeGPUs()
	// Partition membership costs a walk of every partition's names: it is built only when a
	// check needs it.
	var members [][]int32
	get := func() [][]int32 {
		if members == nil {
			members = l.partitionMembers()
		}
		return members
	}
	l.checkPartitionGPUs(get)
	l.checkPreemption(get)
}

// checkScheduler: SchedulerType other than backfill. An absent key is Slurm's default,
// sched/backfill.
func (l *linter) checkScheduler() {
	s, ok := l.sc.Setting("SchedulerType")
	if !ok || strings.EqualFold(s.Value, "sched/backfill") {
		return
	}
	l.emit(SeverityWarning, s.Pos, "SchedulerType=%s starts jobs strictly in priority order: a job waiting for many GPUs holds back every job behind it in its partition, so GPUs idle while it waits; sched/backfill (Slurm's default) starts smaller jobs in the gaps when that delays no higher-priority job: set SchedulerType=sched/backfill or remove the line",
		s.Value)
}

// checkPriority: several partitions and no multifactor priority.
func (l *linter) checkPriority() {
	parts := l.sc.Partitions
	if len(parts) < 2 {
		return
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Name
	}
	list := strings.Join(names, ", ")
	s, ok := l.sc.Setting("PriorityType")
	switch {
	case ok && !strings.EqualFold(s.Value, "priority/multifactor"):
		l.emit(SeverityWarning, s.Pos, "PriorityType=%s with %d partitions (%s): jobs are ordered first come, first served, with no fair share between users, no weight for age, size or partition: set PriorityType=priority/multifactor (and its PriorityWeight* keys)",
			s.Value, len(parts), list)
	case !ok:
		l.emit(SeverityInfo, parts[0].Pos, "%d partitions (%s) and no PriorityType: Slurm 23.02 and older order jobs first come, first served (priority/basic), 23.11 and later by priority/multifactor: set PriorityType=priority/multifactor to have fair share on every version",
			len(parts), list)
	}
}

// checkNodeGPUs: a node whose Gres= mixes GPU models, and GPU nodes whose Feature= names no
// GPU model.
func (l *linter) checkNodeGPUs() {
	var mixed, bare []int
	// The GPU models nodes differ by, as sets: what --constraint would choose between.
	kinds := map[string]bool{}
	for li, n := range l.sc.Nodes {
		if n.GPUCount() == 0 {
			continue
		}
		models := gpuModels(n.Gres)
		kinds[strings.Join(models, ",")] = true
		if len(models) > 1 {
			mixed = append(mixed, li)
		}
		if !namesGPU(n.Features, models) {
			bare = append(bare, li)
		}
	}
	if len(mixed) > 0 {
		first := l.sc.Nodes[mixed[0]]
		g := l.emit(SeverityWarning, gresPos(first), "Gres=%s puts GPUs of different models (%s) in %s%s: a job asking --gres=gpu:N may get some of each and runs at the pace of the slower, and --constraint cannot tell the nodes apart: give each node one GPU model and mix models across nodes, told apart by Gres type and Feature=",
			gresText(first.Gres), strings.Join(gpuModels(first.Gres), ", "), nodesPlaceholder, alsoAt(l.linePositions(mixed, gresPos)))
		for _, li := range mixed {
			l.addLine(g, li)
		}
	}
	if len(bare) > 0 {
		first := l.sc.Nodes[bare[0]]
		sev, why := SeverityInfo, ""
		if len(kinds) > 1 {
			sev, why = SeverityWarning, fmt.Sprintf(" though the cluster's GPU nodes differ in model (%d kinds)", len(kinds))
		}
		example, fix := "MODEL", "Feature=MODEL naming the card, e.g. Feature=a100"
		if ms := gpuModels(first.Gres); len(ms) > 0 {
			example, fix = ms[0], "Feature="+ms[0]
		}
		count := 0
		for _, li := range bare {
			count += l.sc.Nodes[li].Names.Len()
		}
		g := l.emit(sev, first.Pos, "%s %s GPUs (Gres=%s) but no Feature= naming %s model%s: jobs cannot ask for the model with --constraint (sbatch --constraint=%s)%s: add %s",
			nodesPlaceholder, text.Plural(count, "has", "have"), gpuText(first.Gres), text.Plural(count, "its", "their"), why, example, alsoAt(l.linePositions(bare, func(n NodeLine) Pos { return n.Pos })), fix)
		for _, li := range bare {
			l.addLine(g, li)
		}
	}
}

// linePositions returns where each of the slurm.conf node lines lis is, as at gives it.
func (l *linter) linePositions(lis []int, at func(NodeLine) Pos) []Pos {
	ps := make([]Pos, len(lis))
	for i, li := range lis {
		ps[i] = at(l.sc.Nodes[li])
	}
	return ps
}

// partitionMembers returns the nodes of each partition (indices into l.names), in partition
// order. Names that are not nodes (NodeSets, typos checkPartitions reports) are left out.
func (l *linter) partitionMembers() [][]int32 {
	out := make([][]int32, len(l.sc.Partitions))
	for pi, p := range l.sc.Partitions {
		if p.AllNodes {
			out[pi] = make([]int32, len(l.names))
			for i := range out[pi] {
				out[pi][i] = int32(i)
			}
			continue
		}
		if p.Nodes == "" {
			continue
		}
		h, err := ParseHostlist(p.Nodes)
		if err != nil {
			continue
		}
		l.matchHostlist(h, func(i int32) { out[pi] = append(out[pi], i) })
	}
	return out
}

// gpuEvidence reports whether node i, which configures no GPU, looks like a GPU node: its
// Feature= names a GPU model, or a gres.conf line for it by name gives it GPUs.
func (l *linter) gpuEvidence(i int32) bool {
	n := l.sc.Nodes[l.lineOf[i]]
	if namesGPU(n.Features, nil) {
		return true
	}
	if l.gc == nil {
		return false
	}
	for _, j := range l.gresIdx[l.gresOff[i]:l.gresOff[i+1]] {
		if strings.EqualFold(l.gc.Lines[j].Name, "gpu") {
			return true
		}
	}
	return false
}

// checkPartitionGPUs: GPU nodes without Gres= in a partition with GPU nodes (a warning), and
// partitions that mix GPU nodes with nodes without GPUs (a note: some sites want it).
func (l *linter) checkPartitionGPUs(getMembers func() [][]int32) {
	gpuLines, otherLines := 0, 0
	for _, n := range l.sc.Nodes {
		if n.GPUCount() > 0 {
			gpuLines++
		} else {
			otherLines++
		}
	}
	if gpuLines == 0 || otherLines == 0 {
		return // every node alike: no partition can mix them
	}
	members := getMembers()
	hasGPU := func(i int32) bool { return l.sc.Nodes[l.lineOf[i]].GPUCount() > 0 }
	var hidden []int32 // GPU nodes without Gres=, in some partition with GPU nodes
	var hiddenParts []string
	var mixedParts []int
	var cpuNodes []int32
	for pi, ms := range members {
		gpus := 0
		for _, i := range ms {
			if hasGPU(i) {
				gpus++
			}
		}
		if gpus == 0 || gpus == len(ms) {
			continue
		}
		cpuOnly := false
		for _, i := range ms {
			switch {
			case hasGPU(i):
			case l.gpuEvidence(i):
				hidden = append(hidden, i)
				if name := l.sc.Partitions[pi].Name; !slices.Contains(hiddenParts, name) {
					hiddenParts = append(hiddenParts, name)
				}
			default:
				cpuOnly = true
				cpuNodes = append(cpuNodes, i)
			}
		}
		if cpuOnly {
			mixedParts = append(mixedParts, pi)
		}
	}
	if len(hidden) > 0 {
		slices.Sort(hidden)
		hidden = slices.Compact(hidden)
		lines := l.linesOf(hidden)
		first := l.sc.Nodes[lines[0]]
		g := l.emit(SeverityWarning, first.Pos, "%s %s (a GPU model in Feature=, or gres.conf gives %s GPUs) but %s no Gres=gpu, in %s %s with other GPU nodes%s: Slurm never gives %s GPUs to jobs that ask --gres=gpu, and jobs that do not ask get all of them unfenced: add Gres=gpu:TYPE:N to the NodeName line",
			nodesPlaceholder, text.Plural(len(hidden), "looks like a GPU node", "look like GPU nodes"), text.Plural(len(hidden), "it", "them"),
			text.Plural(len(hidden), "configures", "configure"), text.Plural(len(hiddenParts), "partition", "partitions"), strings.Join(hiddenParts, ", "), alsoAt(l.linePositions(lines, func(n NodeLine) Pos { return n.Pos })), text.Plural(len(hidden), "its", "their"))
		g.nodes = append(g.nodes, hidden...)
	}
	if len(mixedParts) > 0 {
		first := l.sc.Partitions[mixedParts[0]]
		names := make([]string, len(mixedParts))
		ps := make([]Pos, len(mixedParts))
		for k, pi := range mixedParts {
			names[k], ps[k] = l.sc.Partitions[pi].Name, l.sc.Partitions[pi].Pos
		}
		g := l.emit(SeverityInfo, first.Pos, "PartitionName=%s mixes GPU nodes with nodes without GPUs (%s)%s: CPU jobs may fill the GPU nodes' cores and memory and leave their GPUs idle; some sites want one partition for both: if not, split them into a GPU and a CPU partition",
			strings.Join(names, ", "), nodesPlaceholder, alsoAt(ps))
		g.nodes = append(g.nodes, cpuNodes...)
	}
}

// linesOf returns the distinct slurm.conf lines that define nodes (ascending indices, so
// their lines ascend too: names are numbered in slurm.conf order).
func (l *linter) linesOf(nodes []int32) []int {
	var out []int
	for _, i := range nodes {
		if li := int(l.lineOf[i]); len(out) == 0 || out[len(out)-1] != li {
			out = append(out, li)
		}
	}
	return out
}

// preemptKills reports whether a PreemptMode ends the preempted job (CANCEL, or REQUEUE,
// which cancels what cannot be requeued) rather than suspending it or turning preemption off.
func preemptKills(mode string) bool {
	for _, m := range confSplitList(mode) {
		if strings.EqualFold(m, "CANCEL") || strings.EqualFold(m, "REQUEUE") {
			return true
		}
	}
	return false
}

// checkPreemption: preemption that ends jobs with a GraceTime shorter than the checkpoint
// window. With preempt/partition_prio the grace time is the preempted job's partition's
// GraceTime (preempt_partition_prio.c), and a partition can be preempted only by a partition
// of a higher PriorityTier that shares nodes with it; with preempt/qos it is the QOS's
// GraceTime, which lint cannot see (a note says so).
func (l *linter) checkPreemption(getMembers func() [][]int32) {
	pt, ok := l.sc.Setting("PreemptType")
	if !ok {
		return
	}
	typ := strings.ToLower(pt.Value)
	gm, _ := l.sc.Setting("PreemptMode")
	switch {
	case strings.HasSuffix(typ, "/qos"):
		if preemptKills(gm.Value) {
			l.emit(SeverityInfo, pt.Pos, "PreemptType=%s with PreemptMode=%s ends preempted jobs after the GraceTime of their QOS, which is in Slurm's database, not here: check that every QOS that can be preempted has GraceTime=%d or more (sacctmgr show qos format=name,gracetime), so that GPU jobs can write a checkpoint",
				pt.Value, gm.Value, int(l.opts.checkpoint.Seconds()))
		}
		return
	case !strings.HasSuffix(typ, "/partition_prio"):
		return
	}
	window := l.opts.checkpoint
	var short []int
	for pi, p := range l.sc.Partitions {
		mode := gm.Value
		if p.PreemptMode != "" {
			mode = p.PreemptMode
		}
		if !preemptKills(mode) || p.GraceTime >= window || !l.outranked(pi, getMembers()) {
			continue
		}
		short = append(short, pi)
	}
	if len(short) == 0 {
		return
	}
	p := l.sc.Partitions[short[0]]
	pos := p.Pos
	if gp, ok := p.Set["GraceTime"]; ok {
		pos = gp
	}
	names := make([]string, len(short))
	ps := make([]Pos, len(short))
	for k, pi := range short {
		names[k], ps[k] = l.sc.Partitions[pi].Name, l.sc.Partitions[pi].Pos
	}
	mode := gm.Value
	if p.PreemptMode != "" {
		mode = p.PreemptMode
	}
	l.emit(SeverityWarning, pos, "PartitionName=%s: a job preempted here (PreemptMode=%s, by a partition of higher PriorityTier) gets SIGTERM and is killed %s later (GraceTime=%d), under the %s a GPU job needs to write a checkpoint (the window this site sets; --checkpoint-window): it loses the work since its last one: set GraceTime=%d or more on the partition%s",
		strings.Join(names, ", "), mode, graceText(p.GraceTime), int(p.GraceTime.Seconds()), window, int(window.Seconds()), alsoAt(ps))
}

func graceText(d time.Duration) string {
	if d == 0 {
		return "at once"
	}
	return d.String()
}

// outranked reports whether partition pi shares a node with a partition of a higher
// PriorityTier, whose jobs can then preempt its jobs.
func (l *linter) outranked(pi int, members [][]int32) bool {
	tier := l.sc.Partitions[pi].PriorityTier
	var mine map[int32]bool
	for qi, q := range l.sc.Partitions {
		if qi == pi || q.PriorityTier <= tier {
			continue
		}
		if mine == nil {
			mine = make(map[int32]bool, len(members[pi]))
			for _, i := range members[pi] {
				mine[i] = true
			}
		}
		for _, i := range members[qi] {
			if mine[i] {
				return true
			}
		}
	}
	return false
}
