package slurm

// What lint offers instead of a gres.conf Cores= (or CPUs=) that names cores a node lacks:
// most such lists are CPU numbers (Cores=0-19,40-59 for the CPUs of one socket of a 40-core,
// 80-CPU node), and the fix keeps what the admin meant, the GPU's socket, in Slurm's core
// numbers.

import (
	"fmt"
	"strings"
)

// maxCoreFix bounds the cores coreFix maps one by one; a node with more (a typo in
// CoresPerSocket) gets the per-socket lists only.
const maxCoreFix = 1 << 16

// maxSocketsListed bounds the per-socket lists a fix names.
const maxSocketsListed = 8

// coreFix returns what to write instead of g's Cores= on nodes of line n, which have cores
// cores: "use ...". Where every number g names is below the node's CPU count, the numbers are
// read as CPU numbers as Linux numbers them on most servers (each core's first thread, then
// every second thread: CPU c is core c mod cores; the H100 nodes of testdata/snapshots have
// socket 0's CPUs at 0-55 and 112-167), and the fix is the cores they stand for, which keeps
// the GPU's socket. Otherwise it names each socket's cores, for the admin to pick the GPU's.
func coreFix(n NodeLine, g *GresLine, cores int) string {
	sockets, perSocket := n.SocketLayout()
	perSocketText := socketCores(sockets, perSocket)
	cpus, _ := n.CPUCount()
	if cores > maxCoreFix || cpus <= cores || cpus%cores != 0 || g.MaxCore() >= cpus {
		if sockets > 1 {
			return "use the cores of the socket the line's GPUs are on: " + perSocketText
		}
		return fmt.Sprintf("use Cores=%s (every core of the node), or leave Cores= out", FormatRangeList([]Range{{0, cores - 1}}))
	}
	mapped := make([]bool, cores)
	for _, r := range g.Cores {
		for c := r.First; c <= r.Last; c++ {
			mapped[c%cores] = true
			if c-r.First >= cores {
				break // every core of the node is already in
			}
		}
	}
	var ranges []Range
	inSocket := map[int]bool{}
	for c := 0; c < cores; c++ {
		if !mapped[c] {
			continue
		}
		inSocket[c/perSocket] = true
		if k := len(ranges); k > 0 && ranges[k-1].Last == c-1 {
			ranges[k-1].Last = c
		} else {
			ranges = append(ranges, Range{c, c})
		}
	}
	fix := FormatRangeList(ranges)
	how := fmt.Sprintf("as CPU numbers, %s=%s are cores %s (CPU c is core c mod %d where the second threads are numbered after every first one, as Linux does on most servers; lscpu -e=CPU,SOCKET,CORE shows this node's)",
		g.CoresKey, g.CoresText, fix, cores)
	switch {
	case len(inSocket) == 1 && sockets > 1:
		return fmt.Sprintf("use Cores=%s: %s, socket %d's; %s", fix, how, ranges[0].First/perSocket, perSocketText)
	case len(inSocket) == 1:
		return fmt.Sprintf("use Cores=%s: %s", fix, how)
	case len(ranges) == 1 && ranges[0] == Range{0, cores - 1}:
		return fmt.Sprintf("leave Cores= out, or give the line its GPUs' socket: %s, every core of the node; %s", how, perSocketText)
	}
	return fmt.Sprintf("use Cores=%s: %s, on %d sockets; a GPU's cores are usually its own socket's: %s", fix, how, len(inSocket), perSocketText)
}

// socketCores names each socket's cores in Slurm's numbering: "Cores=0-19 (socket 0),
// Cores=20-39 (socket 1)", the first maxSocketsListed sockets and how many more.
func socketCores(sockets, perSocket int) string {
	var parts []string
	for s := 0; s < min(sockets, maxSocketsListed); s++ {
		parts = append(parts, fmt.Sprintf("Cores=%s (socket %d)", FormatRangeList([]Range{{s * perSocket, (s+1)*perSocket - 1}}), s))
	}
	if sockets > maxSocketsListed {
		parts = append(parts, fmt.Sprintf("and %d more sockets of %d cores", sockets-maxSocketsListed, perSocket))
	}
	return strings.Join(parts, ", ")
}
