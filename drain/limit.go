package drain

import (
	"fmt"
	"strconv"
)

// Limit is the safety limit max_drained: when at least N nodes (or N percent of the cluster's
// nodes) already carry nodecheck's reason, nodecheck drains no other node. It guards against
// a fleet-wide false alarm (a bad config or driver push) draining the whole cluster. The zero
// Limit is no limit. config.ParseMaxDrained reads it from nodecheck.toml.
type Limit struct {
	N       int  // nodes, or percent when Percent
	Percent bool // N is a percentage of the cluster's nodes
}

// Reached reports whether drained nodes out of total meet the limit, so that one more drain
// must be held back. A percentage is compared without rounding: 10% of 15 nodes holds back
// from 2 drained nodes on (2 >= 1.5).
func (l Limit) Reached(drained, total int) bool {
	switch {
	case l.N <= 0:
		return false
	case l.Percent:
		return drained*100 >= l.N*total
	}
	return drained >= l.N
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

// describe says how the limit reads against a cluster: "10% of 40 nodes = 4".
func (l Limit) describe(total int) string {
	if l.Percent {
		return fmt.Sprintf("max_drained = %q (%d%% of %d nodes)", l.String(), l.N, total)
	}
	return fmt.Sprintf("max_drained = %q", l.String())
}
