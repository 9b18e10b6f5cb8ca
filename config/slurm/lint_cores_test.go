package slurm

import (
	"strings"
	"testing"
)

// TestCoreFix: what lint offers for a Cores= (or CPUs=) naming cores the node lacks keeps the
// GPU's socket. The H100 rows use the CPUs of the recorded H100 node's NUMA nodes
// (testdata/snapshots/h100-signals/fs/sys/devices/system/node/node*/cpulist: 0-55,112-167
// and 56-111,168-223; slurmd -C there says Sockets=2 CoresPerSocket=56 ThreadsPerCore=2);
// the 40-core rows are that layout at a smaller size, written for this test.
func TestCoreFix(t *testing.T) {
	const (
		h100   = "NodeName=g1 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2\n"
		forty  = "NodeName=g1 Sockets=2 CoresPerSocket=20 ThreadsPerCore=2\n"
		fortyC = "NodeName=g1 CPUs=80 CoresPerSocket=20 ThreadsPerCore=2\n"
	)
	tests := []struct {
		name, node, cores string
		want              string // the whole fix, or its start when it ends in "..."
	}{
		{"socket 0's CPUs on a 40-core node", forty, "CPUs=0-19,40-59",
			"use Cores=0-19: as CPU numbers, CPUs=0-19,40-59 are cores 0-19 (CPU c is core c mod 40 where the second threads are numbered after every first one, as Linux does on most servers; lscpu -e=CPU,SOCKET,CORE shows this node's), socket 0's; Cores=0-19 (socket 0), Cores=20-39 (socket 1)"},
		{"socket 1's CPUs", forty, "CPUs=20-39,60-79", "use Cores=20-39: as CPU numbers, CPUs=20-39,60-79 are cores 20-39 (...), socket 1's; ..."},
		{"sockets from CPUs=", fortyC, "Cores=60-79", "use Cores=20-39: as CPU numbers, Cores=60-79 are cores 20-39 (...), socket 1's; ..."},
		{"the H100 node's socket 0", h100, "Cores=0-55,112-167", "use Cores=0-55: ..., socket 0's; Cores=0-55 (socket 0), Cores=56-111 (socket 1)"},
		{"the H100 node's socket 1", h100, "Cores=56-111,168-223", "use Cores=56-111: ..., socket 1's; ..."},
		{"part of a socket", forty, "CPUs=5-9,45-49", "use Cores=5-9: ..., socket 0's; ..."},
		{"every CPU", forty, "CPUs=0-79", "leave Cores= out, or give the line its GPUs' socket: as CPU numbers, CPUs=0-79 are cores 0-39 (...), every core of the node; Cores=0-19 (socket 0), Cores=20-39 (socket 1)"},
		{"across sockets", forty, "CPUs=10-29,50-69", "use Cores=10-29: as CPU numbers, CPUs=10-29,50-69 are cores 10-29 (...), on 2 sockets; a GPU's cores are usually its own socket's: Cores=0-19 (socket 0), Cores=20-39 (socket 1)"},
		{"the last CPU", forty, "CPUs=79", "use Cores=39: ..., socket 1's; ..."},
		// Numbers past the node's CPUs are not CPU numbers: only the sockets are offered.
		{"past the CPUs", forty, "CPUs=0-80", "use the cores of the socket the line's GPUs are on: Cores=0-19 (socket 0), Cores=20-39 (socket 1)"},
		{"one socket, past the CPUs", "NodeName=c1 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2 CPUs=4\n", "CPUs=4-7", "use Cores=0-1 (every core of the node), or leave Cores= out"},
		{"one socket, CPU numbers", "NodeName=c1 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2 CPUs=4\n", "CPUs=0-3", "use Cores=0-1: as CPU numbers, CPUs=0-3 are cores 0-1 (...)"},
		{"one thread a core: no CPU numbers to read", "NodeName=n0 Sockets=8 CoresPerSocket=2 ThreadsPerCore=1\n", "Cores=16-31",
			"use the cores of the socket the line's GPUs are on: Cores=0-1 (socket 0), Cores=2-3 (socket 1), Cores=4-5 (socket 2), Cores=6-7 (socket 3), Cores=8-9 (socket 4), Cores=10-11 (socket 5), Cores=12-13 (socket 6), Cores=14-15 (socket 7)"},
		{"more sockets than listed", "NodeName=n0 Sockets=10 CoresPerSocket=2\n", "Cores=20", "use the cores of the socket the line's GPUs are on: Cores=0-1 (socket 0), ..., Cores=14-15 (socket 7), and 2 more sockets of 2 cores"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.node), "slurm.conf", nil)
			if err != nil || len(sc.Problems) > 0 {
				t.Fatalf("slurm.conf: %v %v", err, sc.Problems)
			}
			gc, err := ParseGresConf([]byte("Name=gpu File=/dev/nvidia0 "+tc.cores+"\n"), "gres.conf", nil)
			if err != nil || len(gc.Problems) > 0 {
				t.Fatalf("gres.conf: %v %v", err, gc.Problems)
			}
			n := sc.Nodes[0]
			cores, _ := n.CoreCount()
			got := coreFix(n, &gc.Lines[0], cores)
			if !matchElided(got, tc.want) {
				t.Errorf("coreFix =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// matchElided reports whether got is want, where each "..." in want stands for any text.
func matchElided(got, want string) bool {
	parts := strings.Split(want, "...")
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		j := strings.Index(got, p)
		if last {
			return p == "" || strings.HasSuffix(got, p)
		}
		if j < 0 {
			return false
		}
		got = got[j+len(p):]
	}
	return got == ""
}
