package drain

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Limit is a safety limit such as max_drained: when at least N nodes (or N percent of the cluster's
// nodes) already carry nodecheck's drain, nodecheck drains no other node. It guards against
// a fleet-wide false alarm (a bad config or driver push) draining the whole cluster. The zero
// Limit is no limit. config.ParseMaxDrained reads it from nodecheck.toml.
type Limit struct {
	N       int  // nodes, or percent when Percent
	Percent bool // N is a percentage of the cluster's nodes
}

// Allowed is how many nodes may carry nodecheck's drain at once in a cluster of total nodes:
// N, or N percent of total rounded up (10% of 15 nodes: 2). No limit allows any number.
func (l Limit) Allowed(total int) int {
	switch {
	case l.N <= 0:
		return math.MaxInt
	case l.Percent:
		return (l.N*total + 99) / 100
	}
	return l.N
}

// Reached reports whether drained nodes out of total meet the limit, so that one more drain
// must be held back: drained >= Allowed(total). A percentage is compared without rounding:
// 10% of 15 nodes holds back from 2 drained nodes on (2 >= 1.5). An empty listing holds.
func (l Limit) Reached(drained, total int) bool {
	return l.N > 0 && drained >= l.Allowed(total)
}

// String is the limit as written in nodecheck.toml: "10" or "10%"; "none" for no limit.
func (l Limit) String() string {
	switch {
	case l.N <= 0:
		return "none"
	case l.Percent:
		return strconv.Itoa(l.N) + "%"
	}
	return strconv.Itoa(l.N)
}

// describe says how the limit, set as key, reads against a cluster: `max_drained = "10%"
// (10% of 40 nodes)`.
func (l Limit) describe(key string, total int) string {
	if l.Percent {
		return fmt.Sprintf("%s = %q (%d%% of %d nodes)", key, l.String(), l.N, total)
	}
	return fmt.Sprintf("%s = %q", key, l.String())
}

// countDrained returns the nodes that count against max_drained, in drain order: out of
// service (drained, draining or down: OutOfService) with nodecheck's reason. A node in service
// whose reason is still nodecheck's does not count: Slurm 24.11 keeps the reason after a
// resume. The order is Guard's: the reason's time (slurmctld's clock, one second steps), then
// the name: the same for every run that reads the same listing.
func countDrained(nodes []NodeState, prefix string) []NodeState {
	return Guard{Counts: drainCounts(prefix)}.counted(nodes)
}

// drainCounts is max_drained's Guard.Counts.
func drainCounts(prefix string) func(NodeState) bool {
	return func(n NodeState) bool { return n.OutOfService() && Owned(n.Reason, prefix) }
}

// stepBack is the check after an entry (a drain, a repair) that keeps a Guard's limit when
// nodes enter together, without a shared file system: every run acts, waits until slurmctld's
// clock has passed the second of its own act, lists the cluster again (total nodes; counted
// are those that count, in Guard's order) and keeps its entry only when fewer than Allowed
// counted nodes come before its own. Every entry before it was made before its listing (the
// wait sees to that: a later entry gets a later second), so a run that keeps its entry has
// counted every entry it must yield to, and at most Allowed entries are kept; a run that steps
// back may have counted one that steps back too, so in a storm fewer than Allowed may stay,
// and those run again at the next health check.
//
// keep is true when the node keeps its entry (also when its entry no longer shows: nothing
// to step back from); ahead are the entries before it, n all that count.
func stepBack(counted []NodeState, self string, l Limit, total int) (keep bool, ahead []string, n int) {
	i := slices.IndexFunc(counted, func(n NodeState) bool { return n.Name == self })
	if i < 0 {
		return true, nil, len(counted)
	}
	for _, n := range counted[:i] {
		ahead = append(ahead, n.Name)
	}
	return i < l.Allowed(total), ahead, len(counted)
}

// nameList names at most five nodes: "n1, n2, n3, n4, n5, ...".
func nameList(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + ", ..."
	}
	return strings.Join(names, ", ")
}
