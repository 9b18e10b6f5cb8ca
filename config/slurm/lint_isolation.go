package slurm

// Lint's GPU isolation rule: GPU nodes that can run more than one job at once must fence
// each job to the GPUs Slurm gave it, or co-located jobs open each other's GPUs and run out
// of each other's memory. The fence is the devices cgroup: cgroup.conf ConstrainDevices=yes
// (cgroup.conf(5), default "no"), applied by TaskPlugin=task/cgroup (slurm.conf(5): "Unset by
// default"; cgroup.conf(5) lists "ProctrackType=proctrack/cgroup" and "TaskPlugin=task/cgroup"
// as "the entries required in slurm.conf to activate the cgroup enforcement mechanisms").
// The alternative is whole nodes per job: OverSubscribe=EXCLUSIVE on the partition, or
// select/linear without OverSubscribe.

import (
	"fmt"
	"strings"

	"github.com/nodecheck/nodecheck/config/text"
)

// WithCgroupConf has Lint check GPU isolation against cg, the cgroup.conf read from path; cg
// is nil when there is none at path (then every key has Slurm's default). Without this
// option Lint does not check isolation.
func WithCgroupConf(cg *CgroupConf, path string) LintOption {
	return func(o *lintOptions) {
		o.isolation = true
		o.cgroup = cg
		o.cgroupPath = path
	}
}

// partitionShares reports whether a partition can put several jobs on one node, as Slurm's
// OverSubscribe (or Shared) and SelectType decide it: EXCLUSIVE gives each job whole nodes;
// NO (the default) shares a node's free cores and GPUs under select/cons_tres and cons_res,
// but not under select/linear, which allocates whole nodes unless YES or FORCE.
func partitionShares(overSubscribe, selectType string) bool {
	v := strings.ToUpper(strings.TrimSpace(overSubscribe))
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[:i] // FORCE:4, YES:2
	}
	switch v {
	case "EXCLUSIVE":
		return false
	case "YES", "FORCE":
		return true
	}
	return !strings.EqualFold(strings.TrimSpace(selectType), "select/linear")
}

// isolationFacts are the settings that fence a job to its GPUs, as written; a zero Pos
// means the key is not set.
type isolationFacts struct {
	ConstrainDevices    string // cgroup.conf ConstrainDevices
	ConstrainDevicesSet bool
	HaveCgroupConf      bool   // a cgroup.conf exists
	TaskPlugin          string // slurm.conf TaskPlugin; unset is none
	ProctrackType       string // slurm.conf ProctrackType; unset is proctrack/cgroup
	// ConstrainAt, TaskPluginAt and ProctrackAt say where each was written ("slurm.conf:12").
	ConstrainAt, TaskPluginAt, ProctrackAt string
}

// at is " at REF", or "" where nothing says where.
func at(ref string) string {
	if ref == "" {
		return ""
	}
	return " at " + ref
}

// hasCgroupTask reports whether a TaskPlugin list has task/cgroup; slurm.conf(5): "The
// prefix of "task/" is optional".
func hasCgroupTask(list string) bool {
	for _, p := range confSplitList(list) {
		if strings.EqualFold(p, "task/cgroup") || strings.EqualFold(p, "cgroup") {
			return true
		}
	}
	return false
}

// isolationGaps returns what is missing for Slurm to fence jobs to their GPUs, each as the
// fix to make; none when jobs are fenced.
func isolationGaps(f isolationFacts) []string {
	var gaps []string
	on, _ := parseSlurmBool(f.ConstrainDevices)
	switch {
	case !f.HaveCgroupConf:
		gaps = append(gaps, "create cgroup.conf beside slurm.conf with ConstrainDevices=yes (there is none, so devices are not constrained)")
	case !f.ConstrainDevicesSet:
		gaps = append(gaps, "add ConstrainDevices=yes to cgroup.conf (unset, its default is no)")
	case !on:
		gaps = append(gaps, fmt.Sprintf("set ConstrainDevices=yes in cgroup.conf (it is %s%s)", f.ConstrainDevices, at(f.ConstrainAt)))
	}
	switch {
	case strings.TrimSpace(f.TaskPlugin) == "":
		gaps = append(gaps, "set TaskPlugin=task/cgroup,task/affinity in slurm.conf (unset, no task plugin applies cgroup.conf's constraints)")
	case !hasCgroupTask(f.TaskPlugin):
		gaps = append(gaps, fmt.Sprintf("add task/cgroup to TaskPlugin in slurm.conf (TaskPlugin=%s%s does not apply cgroup.conf's constraints)", f.TaskPlugin, at(f.TaskPluginAt)))
	}
	if p := strings.TrimSpace(f.ProctrackType); p != "" && !strings.EqualFold(p, "proctrack/cgroup") {
		gaps = append(gaps, fmt.Sprintf("set ProctrackType=proctrack/cgroup in slurm.conf (with %s%s, processes a job leaves behind escape the job and keep their GPU memory after it ends)", p, at(f.ProctrackAt)))
	}
	return gaps
}

// checkIsolation warns where GPU nodes are in a partition that shares nodes between jobs and
// jobs are not fenced to their GPUs; the warning names the nodes, the partitions and every
// setting to fix, at the first of those settings.
func (l *linter) checkIsolation() {
	if !l.opts.isolation {
		return
	}
	sel, _ := l.sc.Setting("SelectType")
	members := l.partitionMembers()
	shared := map[int32]bool{}
	var nodes []int32
	var parts []string
	var partPos Pos
	for pi, p := range l.sc.Partitions {
		if !partitionShares(p.OverSubscribe, sel.Value) {
			continue
		}
		found := false
		for _, i := range members[pi] {
			if l.sc.Nodes[l.lineOf[i]].GPUCount() == 0 {
				continue
			}
			found = true
			if !shared[i] {
				shared[i] = true
				nodes = append(nodes, i)
			}
		}
		if found {
			if len(parts) == 0 {
				partPos = p.Pos
			}
			parts = append(parts, p.Name)
		}
	}
	if len(nodes) == 0 {
		return
	}
	cg := l.opts.cgroup
	cd, cdSet := cg.Setting("ConstrainDevices")
	task, taskSet := l.sc.Setting("TaskPlugin")
	proc, procSet := l.sc.Setting("ProctrackType")
	gaps := isolationGaps(isolationFacts{ConstrainDevices: cd.Value, ConstrainDevicesSet: cdSet, HaveCgroupConf: cg != nil,
		TaskPlugin: task.Value, ProctrackType: proc.Value, ConstrainAt: ref(cd.Pos), TaskPluginAt: ref(task.Pos), ProctrackAt: ref(proc.Pos)})
	if len(gaps) == 0 {
		return
	}
	// The warning stands at the first setting to change: cgroup.conf's line, the file when
	// the key is missing, then slurm.conf's TaskPlugin or ProctrackType, then the partition.
	pos := partPos
	switch {
	case cg != nil && !cg.ConstrainDevices() && cdSet:
		pos = cd.Pos
	case cg != nil && !cdSet:
		pos = Pos{File: cg.Path}
	case taskSet && !hasCgroupTask(task.Value):
		pos = task.Pos
	case procSet && !strings.EqualFold(strings.TrimSpace(proc.Value), "proctrack/cgroup"):
		pos = proc.Pos
	}
	if !pos.IsZero() {
		l.rankFile(pos.File)
	}
	g := l.emit(SeverityWarning, pos, "GPU isolation: %s %s GPUs and can run several jobs at once (PartitionName=%s without OverSubscribe=EXCLUSIVE) while jobs are not fenced to the GPUs Slurm gives them: any job on the node can open every GPU, so co-located jobs use and run out of each other's GPU memory: %s; or give %s OverSubscribe=EXCLUSIVE (or jobs --exclusive) so a job has the node to itself",
		nodesPlaceholder, text.Plural(len(nodes), "has", "have"), strings.Join(parts, ","), strings.Join(gaps, "; "), text.Plural(len(parts), "the partition", "those partitions"))
	g.nodes = append(g.nodes, nodes...)
}
