package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// linuxTopology lays out sockets x cores x threads as x86 Linux enumerates them: the first
// threads of every core, socket after socket, then the second threads in the same order
// (CPU = t*sockets*cores + s*cores + c); one NUMA node per socket.
func linuxTopology(sockets, cores, threads int) node.CPUTopology {
	var t node.CPUTopology
	for s := range sockets {
		n := node.NUMANode{ID: s}
		for c := range cores {
			core := node.CPUCore{Package: s}
			for th := range threads {
				cpu := th*sockets*cores + s*cores + c
				core.CPUs = append(core.CPUs, cpu)
			}
			t.Cores = append(t.Cores, core)
		}
		t.NUMANodes = append(t.NUMANodes, n)
	}
	for _, c := range t.Cores {
		t.NUMANodes[c.Package].CPUs = append(t.NUMANodes[c.Package].CPUs, c.CPUs...)
	}
	sortTopology(&t)
	return t
}

// interleavedTopology is 2 sockets whose CPUs alternate (CPU 0 on socket 0, CPU 1 on socket
// 1, ...), one thread per core, as some BIOSes enumerate them: Slurm's core 1 is CPU 2.
func interleavedTopology(cores int) node.CPUTopology {
	t := node.CPUTopology{NUMANodes: []node.NUMANode{{ID: 0, CPUs: []int{}}, {ID: 1, CPUs: []int{}}}}
	for cpu := range 2 * cores {
		t.Cores = append(t.Cores, node.CPUCore{Package: cpu % 2, CPUs: []int{cpu}})
		t.NUMANodes[cpu%2].CPUs = append(t.NUMANodes[cpu%2].CPUs, cpu)
	}
	return t
}

func sortTopology(t *node.CPUTopology) {
	for i := range t.Cores {
		for j := i + 1; j < len(t.Cores); j++ {
			if t.Cores[j].CPUs[0] < t.Cores[i].CPUs[0] {
				t.Cores[i], t.Cores[j] = t.Cores[j], t.Cores[i]
			}
		}
	}
	for i := range t.NUMANodes {
		c := t.NUMANodes[i].CPUs
		for a := range c {
			for b := a + 1; b < len(c); b++ {
				if c[b] < c[a] {
					c[a], c[b] = c[b], c[a]
				}
			}
		}
	}
}

// snc2 is linuxTopology(2, 4, 2) with each socket split in two NUMA nodes (sub-NUMA
// clustering): nodes 0 and 1 on socket 0, 2 and 3 on socket 1, two cores each.
func snc2() node.CPUTopology {
	t := linuxTopology(2, 4, 2)
	t.NUMANodes = nil
	for n := range 4 {
		nn := node.NUMANode{ID: n}
		for _, c := range t.Cores[2*n : 2*n+2] {
			nn.CPUs = append(nn.CPUs, c.CPUs...)
		}
		t.NUMANodes = append(t.NUMANodes, nn)
	}
	sortTopology(&t)
	return t
}

func TestNumberCores(t *testing.T) {
	// coresOf lists, per Slurm core id, "socket:cpus".
	coresOf := func(sc slurmCores) []string {
		var out []string
		for _, c := range sc.cores {
			out = append(out, fmt.Sprintf("%d:%s", c.socket, node.FormatKernelList(c.cpus)))
		}
		return out
	}
	reversed := linuxTopology(2, 2, 1)
	for i := range reversed.Cores {
		reversed.Cores[i].Package = 1 - reversed.Cores[i].Package // package 1 holds CPU 0
	}
	tests := []struct {
		name         string
		topo         node.CPUTopology
		numaAsSocket bool
		want         []string
		sockets      int
	}{
		{"two sockets, two threads: socket by socket, whatever the thread numbers",
			linuxTopology(2, 3, 2), false, []string{"0:0,6", "0:1,7", "0:2,8", "1:3,9", "1:4,10", "1:5,11"}, 2},
		{"CPUs alternating between sockets: core 1 is CPU 2, core 2 is CPU 1",
			interleavedTopology(3), false, []string{"0:0", "0:2", "0:4", "1:1", "1:3", "1:5"}, 2},
		{"sockets ordered by their lowest CPU, not by physical_package_id",
			reversed, false, []string{"0:0", "0:1", "1:2", "1:3"}, 2},
		{"sub-NUMA clustering counts packages as sockets by default",
			snc2(), false, []string{"0:0,8", "0:1,9", "0:2,10", "0:3,11", "1:4,12", "1:5,13", "1:6,14", "1:7,15"}, 2},
		{"numa_node_as_socket counts NUMA nodes",
			snc2(), true, []string{"0:0,8", "0:1,9", "1:2,10", "1:3,11", "2:4,12", "2:5,13", "3:6,14", "3:7,15"}, 4},
		{"no NUMA", node.CPUTopology{Cores: []node.CPUCore{{Package: 0, CPUs: []int{0, 1}}, {Package: 0, CPUs: []int{2, 3}}}},
			true, []string{"0:0-1", "0:2-3"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := numberCores(tc.topo, tc.numaAsSocket)
			if diff := cmp.Diff(tc.want, coresOf(sc)); diff != "" {
				t.Errorf("cores (-want +got):\n%s", diff)
			}
			if sc.sockets != tc.sockets {
				t.Errorf("sockets = %d, want %d", sc.sockets, tc.sockets)
			}
		})
	}
}

// coresGPU is a GPU of gres.conf with Cores=text, followed to bus on NUMA node numa.
func coresGPU(file, bus, text string, numa int) affinityGPU {
	rs, err := slurm.ParseRangeList(text, 1<<20)
	if err != nil {
		panic(err)
	}
	return affinityGPU{file: file, where: "gres.conf:3", coresKey: "Cores", coresText: text, cores: rs, bus: bus, numa: numa}
}

func TestJudgeCores(t *testing.T) {
	spr := numberCores(linuxTopology(2, 56, 2), false) // 224 CPUs, as h100-healthy
	one := numberCores(linuxTopology(1, 16, 2), false)
	inter := numberCores(interleavedTopology(4), false)
	sncSocket, sncNUMA := numberCores(snc2(), false), numberCores(snc2(), true)
	cpuless := numberCores(linuxTopology(2, 4, 1), false)
	cpuless.nodes[2] = true // a GH200-style memory-only node
	const gpu4 = "gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3 "
	tests := []struct {
		name   string
		gpu    affinityGPU
		sc     slurmCores
		byNUMA bool
		status Status
		line   string
	}{
		{"own socket", coresGPU("/dev/nvidia4", "0000:9b:00.0", "56-111", 1), spr, false, StatusOK,
			gpu4 + "Cores=56-111) on NUMA node 1 (cores 56-111)"},
		{"part of its own socket", coresGPU("/dev/nvidia4", "0000:9b:00.0", "56-63", 1), spr, false, StatusOK,
			gpu4 + "Cores=56-63) on NUMA node 1 (cores 56-111)"},
		{"the other socket's cores", coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-55", 1), spr, false, StatusWarn,
			gpu4 + "Cores=0-55) is on NUMA node 1 (cores 56-111); its Cores= name NUMA node 0's cores"},
		{"some of the other socket's cores", coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-15", 1), spr, false, StatusWarn,
			gpu4 + "Cores=0-15) is on NUMA node 1 (cores 56-111); its Cores= name cores 0-15 of NUMA node 0"},
		{"partly its own", coresGPU("/dev/nvidia4", "0000:9b:00.0", "48-63", 1), spr, false, StatusWarn,
			gpu4 + "Cores=48-63) is on NUMA node 1 (cores 56-111); its Cores= also name cores 48-55 of NUMA node 0"},
		{"CPU numbers written as cores: the second threads are cores the node does not have",
			coresGPU("/dev/nvidia0", "0000:19:00.0", "0-55,112-167", 0), spr, false, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0-55,112-167) names cores 112-167, but the node has 112 cores (0-111 in Slurm's numbering, socket by socket); it is on NUMA node 0 (cores 0-55)"},
		{"every core: no affinity", coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-111", 1), spr, false, StatusOK,
			gpu4 + "Cores=0-111) names every core of the node: no affinity (leaving Cores= out tells Slurm the same, and schedules faster); it is on NUMA node 1 (cores 56-111)"},
		{"alternating CPUs: Slurm's cores 0-3 are socket 0's", coresGPU("/dev/nvidia0", "0000:19:00.0", "0-3", 0), inter, false, StatusOK,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0-3) on NUMA node 0 (cores 0-3)"},
		{"alternating CPUs: socket 0's CPU numbers are not its cores", coresGPU("/dev/nvidia0", "0000:19:00.0", "0,2,4,6", 0), inter, false, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0,2,4,6) is on NUMA node 0 (cores 0-3); its Cores= also name cores 4,6 of NUMA node 1"},
		{"no NUMA node on a single socket", coresGPU("/dev/nvidia0", "0000:19:00.0", "0-15", -1), one, false, StatusOK,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0-15) on the node's only socket (cores 0-15)"},
		{"no NUMA node on two sockets", coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-55", -1), spr, false, StatusSkip,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3): the kernel gives its PCI device no NUMA node (numa_node -1: the firmware's ACPI tables do not place it), so its socket cannot be told among 2; Cores=0-55 not judged"},
		{"a NUMA node the kernel does not list", coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-55", 5), spr, false, StatusSkip,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3): numa_node says NUMA node 5, which /sys/devices/system/node does not list; Cores=0-55 not judged"},
		{"a NUMA node without CPUs", coresGPU("/dev/nvidia0", "0000:19:00.0", "0-3", 2), cpuless, false, StatusSkip,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3): its NUMA node 2 has no CPUs (a memory-only node), so its cores cannot be told; Cores=0-3 not judged"},
		{"sub-NUMA clustering: the socket's other NUMA node is the same socket", coresGPU("/dev/nvidia0", "0000:19:00.0", "0-1", 1), sncSocket, false, StatusOK,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0-1) on NUMA node 1, in socket 0 (the socket's cores 0-3; the NUMA node's 2-3)"},
		{"sub-NUMA clustering: the other socket", coresGPU("/dev/nvidia0", "0000:19:00.0", "4-7", 1), sncSocket, false, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=4-7) is on NUMA node 1, in socket 0 (the socket's cores 0-3; the NUMA node's 2-3); its Cores= name cores 4-5 (NUMA node 2) and 6-7 (NUMA node 3)"},
		{"numa_node_as_socket: another NUMA node of the same package is another socket", coresGPU("/dev/nvidia0", "0000:19:00.0", "0-1", 1), sncNUMA, true, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Cores=0-1) is on NUMA node 1 (cores 2-3); its Cores= name NUMA node 0's cores"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeCores(tc.gpu, tc.sc, tc.byNUMA)
			if v.Status != tc.status || v.line != tc.line {
				t.Errorf("judgeCores = %s %q\nwant %s %q", v.Status, v.line, tc.status, tc.line)
			}
			if v.Device != tc.gpu.label() {
				t.Errorf("detail device %q, want %q", v.Device, tc.gpu.label())
			}
		})
	}
}

// switchTopology is n GPUs (minor i at bus bus[i]) whose active links (links of them) all
// lead to NVSwitches.
func switchTopology(bus []string, links int) node.NVLinkTopology {
	t := node.NVLinkTopology{Init: node.InitSuccess}
	for i, b := range bus {
		g := node.GPULinkEnds{Index: i, MinorNumber: i, PCIBusID: b}
		for l := range links {
			g.Links = append(g.Links, node.NVLinkEnd{Link: l, RemoteBusID: fmt.Sprintf("00000000:%02X:00.0", 0x83+l%4), RemoteType: "SWITCH"})
		}
		t.Devices = append(t.Devices, g)
	}
	return t
}

var h100NVMLBus = []string{"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0",
	"00000000:9B:00.0", "00000000:BB:00.0", "00000000:CB:00.0", "00000000:DB:00.0"}

// meshTopology is 4 GPUs, each linked to every other by 4 NVLinks (HGX A100 4-GPU), with
// minor numbers in reverse bus order (minor 0 on the last bus), as Slurm's test39.18 has them.
func meshTopology() node.NVLinkTopology {
	t := node.NVLinkTopology{Init: node.InitSuccess}
	for i := range 4 {
		g := node.GPULinkEnds{Index: i, MinorNumber: 3 - i, PCIBusID: h100NVMLBus[i]}
		l := 0
		for k := range 4 {
			if k == i {
				continue
			}
			for range 4 {
				g.Links = append(g.Links, node.NVLinkEnd{Link: l, RemoteBusID: h100NVMLBus[k], RemoteType: "GPU"})
				l++
			}
		}
		t.Devices = append(t.Devices, g)
	}
	return t
}

func linksGPU(minor int, bus string, links ...int) affinityGPU {
	return affinityGPU{file: fmt.Sprintf("/dev/nvidia%d", minor), where: "gres.conf:3", minor: minor, bus: bus, links: links, linksText: formatLinks(links)}
}

func TestJudgeLinks(t *testing.T) {
	nvswitch := switchTopology(h100NVMLBus, 18)
	mesh := meshTopology()
	oneDown := meshTopology()
	oneDown.Devices[0].Links = oneDown.Devices[0].Links[1:] // link 0 of GPU 0 (to GPU 1) down
	unread := meshTopology()
	unread.Devices[1].Links[2].RemoteBusID, unread.Devices[1].Links[2].Error = "", "ERROR_UNKNOWN"
	lost := meshTopology()
	lost.Devices[2].Error = "ERROR_GPU_IS_LOST"
	tests := []struct {
		name   string
		gpu    affinityGPU
		topo   node.NVLinkTopology
		status Status
		line   string
	}{
		{"NVSwitch: AutoDetect's zeros", linksGPU(4, "0000:9b:00.0", 0, 0, 0, 0, -1, 0, 0, 0), nvswitch, StatusOK,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3 Links=0,0,0,0,-1,0,0,0) as NVML sees the NVLinks"},
		{"NVSwitch: every other GPU alike", linksGPU(4, "0000:9b:00.0", 18, 18, 18, 18, -1, 18, 18, 18), nvswitch, StatusOK,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3 Links=18,18,18,18,-1,18,18,18): its 18 active NVLinks lead to NVSwitches, so it reaches every other GPU alike; giving each the same number tells Slurm what AutoDetect's 0s tell it"},
		{"NVSwitch: islands that are not there", linksGPU(0, "0000:19:00.0", -1, 2, 2, 0, 0, 0, 0, 0), nvswitch, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Links=-1,2,2,0,0,0,0,0): 0 NVLinks to device 1 (0000:3b:00.0), Links= says 2, 0 NVLinks to device 2 (0000:4c:00.0), Links= says 2; its other 18 active NVLinks lead to NVSwitches; AutoDetect=nvml would write Links=-1,0,0,0,0,0,0,0"},
		{"NVSwitch: itself not at its own place", linksGPU(4, "0000:9b:00.0", -1, 0, 0, 0, 0, 0, 0, 0), nvswitch, StatusWarn,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3 Links=-1,0,0,0,0,0,0,0): -1 at place 1 marks device 0 (0000:19:00.0) as itself, which has 0 NVLinks from this GPU, place 5 is this GPU itself (device 4 by PCI bus id) and should be -1, not 0; its other 18 active NVLinks lead to NVSwitches; AutoDetect=nvml would write Links=0,0,0,0,-1,0,0,0"},
		{"too few numbers", linksGPU(0, "0000:19:00.0", -1, 0, 0, 0), nvswitch, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Links=-1,0,0,0): it gives 4 numbers where the node has 8 GPUs (one number per GPU in PCI bus id order, -1 for this one); its other 18 active NVLinks lead to NVSwitches; AutoDetect=nvml would write Links=-1,0,0,0,0,0,0,0"},
		{"direct mesh, minors reversed: /dev/nvidia0 is the last by bus id", linksGPU(0, "0000:5d:00.0", 4, 4, 4, -1), mesh, StatusOK,
			"gpu 0000:5d:00.0 (/dev/nvidia0, gres.conf:3 Links=4,4,4,-1) as NVML sees the NVLinks"},
		{"direct mesh, written in minor order", linksGPU(0, "0000:5d:00.0", -1, 4, 4, 4), mesh, StatusWarn,
			"gpu 0000:5d:00.0 (/dev/nvidia0, gres.conf:3 Links=-1,4,4,4): -1 at place 1 marks device 0 (0000:19:00.0) as itself, which has 4 NVLinks from this GPU, place 4 is this GPU itself (device 3 by PCI bus id) and should be -1, not 4; AutoDetect=nvml would write Links=4,4,4,-1"},
		{"direct mesh, a link down", linksGPU(3, "0000:19:00.0", -1, 4, 4, 4), oneDown, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia3, gres.conf:3 Links=-1,4,4,4): 3 NVLinks to device 1 (0000:3b:00.0), Links= says 4; AutoDetect=nvml would write Links=-1,3,4,4"},
		{"direct mesh: uniform numbers are no excuse without switches", linksGPU(3, "0000:19:00.0", -1, 1, 1, 1), mesh, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia3, gres.conf:3 Links=-1,1,1,1): 4 NVLinks to device 1 (0000:3b:00.0), Links= says 1, 4 NVLinks to device 2 (0000:4c:00.0), Links= says 1, 4 NVLinks to device 3 (0000:5d:00.0), Links= says 1; AutoDetect=nvml would write Links=-1,4,4,4"},
		{"a far end NVML could not give", linksGPU(2, "0000:3b:00.0", 4, -1, 4, 4), unread, StatusError,
			"gpu 0000:3b:00.0 (/dev/nvidia2, gres.conf:3 Links=4,-1,4,4): NVML could not say where 1 active NVLink lead (link 2: ERROR_UNKNOWN): cannot judge Links="},
		{"a GPU lost while reading", linksGPU(1, "0000:4c:00.0", 4, 4, -1, 4), lost, StatusError,
			"gpu 0000:4c:00.0 (/dev/nvidia1, gres.conf:3 Links=4,4,-1,4): NVML ERROR_GPU_IS_LOST while reading its NVLinks: cannot judge Links="},
		{"a minor NVML does not have", linksGPU(9, "0000:4c:00.0", 4, 4, -1, 4), mesh, StatusError,
			"gpu 0000:4c:00.0 (/dev/nvidia9, gres.conf:3 Links=4,4,-1,4): none of the 4 GPUs NVML lists has minor 9: cannot judge Links="},
		{"NVML down", linksGPU(0, "0000:19:00.0", -1, 0), node.NVLinkTopology{Init: "ERROR_DRIVER_NOT_LOADED"}, StatusError,
			"gpu 0000:19:00.0 (/dev/nvidia0, gres.conf:3 Links=-1,0): NVML init ERROR_DRIVER_NOT_LOADED: cannot see its NVLinks to judge Links="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeLinks(tc.gpu, tc.topo)
			if v.Status != tc.status || v.line != tc.line {
				t.Errorf("judgeLinks = %s %q\nwant %s %q", v.Status, v.line, tc.status, tc.line)
			}
		})
	}
}

func TestJudgeGresAffinity(t *testing.T) {
	spr := numberCores(linuxTopology(2, 56, 2), false)
	right := coresGPU("/dev/nvidia0", "0000:19:00.0", "0-55", 0)
	wrong := coresGPU("/dev/nvidia4", "0000:9b:00.0", "0-55", 1)
	unplaced := coresGPU("/dev/nvidia5", "0000:bb:00.0", "56-111", -1)
	stopped := affinityGPU{file: "/dev/nvidia6", numa: -1}
	stopped.stopf("cannot stat /dev/nvidia6")
	cores := affinityFacts{cores: &spr}
	tests := []struct {
		name    string
		gpus    []affinityGPU
		facts   affinityFacts
		status  Status
		summary string
		subject Subject // the result's: the GPU its summary names
	}{
		{"all right", []affinityGPU{right}, cores, StatusOK, "Cores= of 1 GPU within their own sockets' cores", Subject{}},
		{"a wrong one is named before one that could not be looked at", []affinityGPU{right, stopped, wrong}, cores, StatusError,
			"gpu 0000:9b:00.0 (/dev/nvidia4, gres.conf:3 Cores=0-55) is on NUMA node 1 (cores 56-111); its Cores= name NUMA node 0's cores (+1 more)",
			Subject{GPU: GPURef{Bus: "0000:9b:00.0"}, File: "/dev/nvidia4"}},
		{"a GPU without NUMA node is said, not hidden", []affinityGPU{right, unplaced}, cores, StatusOK,
			"Cores= of 1 GPU within their own sockets' cores (1 GPU entry not judged: gpu 0000:bb:00.0 (/dev/nvidia5, gres.conf:3): the kernel gives its PCI device no NUMA node (numa_node -1: the firmware's ACPI tables do not place it), so its socket cannot be told among 2; Cores=56-111 not judged)", Subject{}},
		{"nothing judged", []affinityGPU{unplaced}, cores, StatusSkip,
			"gpu 0000:bb:00.0 (/dev/nvidia5, gres.conf:3): the kernel gives its PCI device no NUMA node (numa_node -1: the firmware's ACPI tables do not place it), so its socket cannot be told among 2; Cores=56-111 not judged",
			Subject{}},
		{"cores and links", []affinityGPU{func() affinityGPU {
			g := linksGPU(4, "0000:9b:00.0", 0, 0, 0, 0, -1, 0, 0, 0)
			g.coresKey, g.coresText, g.cores, g.numa = "CPUs", "56-111", []slurm.Range{{First: 56, Last: 111}}, 1
			return g
		}()}, affinityFacts{cores: &spr, links: new(switchTopology(h100NVMLBus, 18))}, StatusOK,
			"Cores= of 1 GPU within their own sockets' cores; Links= of 1 GPU as NVML sees the NVLinks", Subject{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeGresAffinity(tc.gpus, tc.facts)
			assertRemedies(t, res)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("judgeGresAffinity = %s %q\nwant %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			if diff := cmp.Diff(tc.subject, res.Subject); diff != "" {
				t.Errorf("subject (-want +got):\n%s", diff)
			}
			for _, d := range res.Details {
				if d.Subject.File == "" {
					t.Errorf("detail %q names no device file in its subject", d.Device)
				}
			}
		})
	}
}

// sysfsTopology is the files ReadCPUTopology reads for t, as a snapshot records them.
func sysfsTopology(t node.CPUTopology) map[string]string {
	files := map[string]string{}
	var online, nodes []int
	for _, c := range t.Cores {
		online = append(online, c.CPUs...)
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", c.CPUs[0])
		files[dir+"physical_package_id"] = fmt.Sprintf("%d\n", c.Package)
		files[dir+"core_cpus_list"] = node.FormatKernelList(c.CPUs) + "\n"
	}
	sortInts(online)
	files["/sys/devices/system/cpu/online"] = node.FormatKernelList(online) + "\n"
	for _, n := range t.NUMANodes {
		nodes = append(nodes, n.ID)
		files[fmt.Sprintf("/sys/devices/system/node/node%d/cpulist", n.ID)] = node.FormatKernelList(n.CPUs) + "\n"
	}
	if nodes != nil {
		files["/sys/devices/system/node/online"] = node.FormatKernelList(nodes) + "\n"
	}
	return files
}

func sortInts(s []int) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

// affinityNode is an 8-GPU two-socket node as h100-healthy: GPUs 0-3 on NUMA node 0, 4-7 on 1.
func affinityNode(gres string) *fakeFacts {
	files := sysfsTopology(linuxTopology(2, 56, 2))
	files["/etc/slurm/slurm.conf"] = "GresTypes=gpu\nNodeName=gpu01 Gres=gpu:8 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2\n"
	if gres != "" {
		files["/etc/slurm/gres.conf"] = gres
	}
	inv := node.GPUInventory{Init: node.InitSuccess, DeviceCount: 8}
	for i, b := range h100NVMLBus {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, MinorNumber: i, PCIBusID: b})
		files["/sys/bus/pci/devices/"+sysfsBusID(b)+"/numa_node"] = fmt.Sprintf("%d\n", i/4)
	}
	return &fakeFacts{files: files, devs: nvidiaDevs(8), gpus: inv,
		facts: map[string]any{node.NVLinkTopologyFact.Name: switchTopology(h100NVMLBus, 18)}}
}

// noNVMLProc makes f a node whose NVML is down and whose driver's procfs names each GPU.
func noNVMLProc(f *fakeFacts) {
	f.gpus = node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}
	for i, b := range h100NVMLBus {
		f.pci = append(f.pci, node.PCIDevice{Address: sysfsBusID(b), Vendor: 0x10de, Class: 0x030200})
		f.files[node.NVIDIAProcGPUInfo(sysfsBusID(b))] = fmt.Sprintf("Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t %s\nDevice Minor: \t %d\n", sysfsBusID(b), i)
	}
}

func runGresAffinity(f *fakeFacts) Result {
	env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeHealth, Node: "gpu01",
		Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
	return gresAffinity{}.Run(context.Background(), env)
}

func TestGresAffinityRun(t *testing.T) {
	const sockets = "NodeName=gpu01 Name=gpu File=/dev/nvidia[0-3] Cores=0-55\nNodeName=gpu01 Name=gpu File=/dev/nvidia[4-7] Cores=56-111\n"
	const swapped = "NodeName=gpu01 Name=gpu File=/dev/nvidia[0-3] Cores=56-111\nNodeName=gpu01 Name=gpu File=/dev/nvidia[4-7] Cores=0-55\n"
	noNVML := noNVMLProc
	tests := []struct {
		name    string
		gres    string
		change  func(*fakeFacts)
		status  Status
		summary string
	}{
		{"each GPU on its socket", sockets, nil, StatusOK, "Cores= of 8 GPUs within their own sockets' cores"},
		{"sockets swapped", swapped, nil, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, /etc/slurm/gres.conf:1 Cores=56-111) is on NUMA node 0 (cores 0-55); its Cores= name NUMA node 1's cores (+7 more)"},
		{"NVML down: the driver's procfs names the GPUs", swapped, noNVML, StatusWarn,
			"gpu 0000:19:00.0 (/dev/nvidia0, /etc/slurm/gres.conf:1 Cores=56-111) is on NUMA node 0 (cores 0-55); its Cores= name NUMA node 1's cores (+7 more)"},
		{"NVML and the driver's procfs both silent", sockets, func(f *fakeFacts) { f.gpus = node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"} }, StatusError,
			"cannot tell which PCI devices gres.conf's GPUs are: NVML init ERROR_LIBRARY_NOT_FOUND, and no NVIDIA GPU on the PCI bus has a readable /proc/driver/nvidia/gpus/<address>/information"},
		{"NVML down, the driver's procfs silent on one GPU", sockets, func(f *fakeFacts) {
			noNVMLProc(f)
			delete(f.files, node.NVIDIAProcGPUInfo("0000:cb:00.0"))
		}, StatusError,
			"cannot tell which PCI device /dev/nvidia6 (/etc/slurm/gres.conf:2) is: NVML init ERROR_DRIVER_NOT_LOADED, and no /proc/driver/nvidia/gpus/*/information of the NVIDIA GPUs on the PCI bus says Device Minor 6"},
		{"a lost GPU, named by the driver's procfs", sockets, func(f *fakeFacts) {
			noNVMLProc(f)
			f.gpus = affinityNode("").gpus
			f.gpus.Devices[5] = node.GPU{Index: 5, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"}
		}, StatusOK, "Cores= of 8 GPUs within their own sockets' cores"},
		{"numa_node_as_socket", sockets, func(f *fakeFacts) {
			f.files["/etc/slurm/slurm.conf"] += "SlurmdParameters=config_overrides,numa_node_as_socket\n"
		}, StatusOK, "Cores= of 8 GPUs within their own NUMA nodes' cores"},
		{"a missing device file", sockets, func(f *fakeFacts) { delete(f.devs, "/dev/nvidia5") }, StatusError,
			"/dev/nvidia5 (/etc/slurm/gres.conf:2) is not an NVIDIA GPU device (missing): cannot tell which GPU it is (gres_devices says more)"},
		{"topology not readable", sockets, func(f *fakeFacts) { delete(f.files, "/sys/devices/system/cpu/cpu60/topology/core_cpus_list") }, StatusError,
			"read the CPU topology to number cores as Slurm does: read /sys/devices/system/cpu/cpu60/topology/core_id: file does not exist (nor core_cpus_list nor thread_siblings_list beside it)"},
		{"a numa_node not readable", sockets, func(f *fakeFacts) { delete(f.files, "/sys/bus/pci/devices/0000:bb:00.0/numa_node") }, StatusError,
			"cannot tell which NUMA node 0000:bb:00.0 (/dev/nvidia5, /etc/slurm/gres.conf:2) is on: read /sys/bus/pci/devices/0000:bb:00.0/numa_node: file does not exist"},
		{"Links= with the NVSwitch topology", "NodeName=gpu01 Name=gpu File=/dev/nvidia4 Links=0,0,0,0,-1,0,0,0\n", nil, StatusOK,
			"Links= of 1 GPU as NVML sees the NVLinks"},
		{"Links= but NVLinks not recorded", "NodeName=gpu01 Name=gpu File=/dev/nvidia4 Links=0,0,0,0,-1,0,0,0\n",
			func(f *fakeFacts) {
				f.factErr = map[string]error{node.NVLinkTopologyFact.Name: fmt.Errorf("read NVLink topology: not recorded: %w", fs.ErrNotExist)}
			}, StatusError,
			"read the NVLink topology from NVML for Links=: read NVLink topology: not recorded: file does not exist"},
		{"AutoDetect", "AutoDetect=nvml\nNodeName=gpu01 Name=gpu File=/dev/nvidia[0-3] Cores=0-55\n", nil, StatusSkip,
			"gres.conf uses AutoDetect=nvml for gpu01 (/etc/slurm/gres.conf:1): slurmd takes each GPU's cores and links from the driver itself, and checks any Cores= or Links= given against them"},
		{"no Cores= nor Links=", "NodeName=gpu01 Name=gpu File=/dev/nvidia[0-7]\n", nil, StatusSkip,
			"gres.conf (/etc/slurm/gres.conf) gives no GPU of gpu01 Cores= or Links=: nothing to compare"},
		{"another node's lines", "NodeName=gpu02 Name=gpu File=/dev/nvidia[0-3] Cores=56-111\n", nil, StatusSkip,
			"gres.conf (/etc/slurm/gres.conf) gives no GPU of gpu01 Cores= or Links=: nothing to compare"},
		{"no gres.conf", "", nil, StatusSkip, "no gres.conf at /etc/slurm/gres.conf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := affinityNode(tc.gres)
			if tc.change != nil {
				tc.change(f)
			}
			res := runGresAffinity(f)
			assertRemedies(t, res)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("Run = %s %q\nwant %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
		})
	}
}

// slowFacts is a node whose reads of the paths under prefix, and whose NVLink topology,
// end with the deadline: a hung NFS mount of /etc/slurm, a wedged GPU.
type slowFacts struct {
	*fakeFacts
	prefix string
}

func (f slowFacts) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if strings.HasPrefix(path, f.prefix) {
		<-ctx.Done()
		return nil, fmt.Errorf("read %s: %w", path, ctx.Err())
	}
	return f.fakeFacts.ReadFile(ctx, path)
}

func (f slowFacts) Fact(ctx context.Context, d node.FactDecl) (any, error) {
	if d != node.NVLinkTopologyFact {
		return f.fakeFacts.Fact(ctx, d)
	}
	<-ctx.Done()
	return nil, fmt.Errorf("read NVLink topology: %w", ctx.Err())
}

// TestGresAffinityDeadline: the check fails only when a read does not end in time, and then
// with the remedy of what hung: Slurm's files are a mount for a person to fix (admin), a
// read of the node a reboot. A wrong map itself only warns (TestGresAffinityRun).
func TestGresAffinityDeadline(t *testing.T) {
	tests := []struct {
		name    string
		gres    string
		prefix  string
		summary string
		remedy  Remedy
	}{
		{"gres.conf hangs", "NodeName=gpu01 Name=gpu File=/dev/nvidia4 Cores=56-111\n", "/etc/slurm/",
			"timed out: find slurm.conf to read gres.conf", RemedyAdmin},
		{"the CPU topology hangs", "NodeName=gpu01 Name=gpu File=/dev/nvidia4 Cores=56-111\n", "/sys/devices/system/",
			"timed out: read the CPU topology to number cores as Slurm does", RemedyReboot},
		{"NVML's NVLinks hang", "NodeName=gpu01 Name=gpu File=/dev/nvidia4 Links=0,0,0,0,-1,0,0,0\n", "/nowhere/",
			"timed out: read the NVLink topology from NVML for Links=", RemedyReboot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := slowFacts{affinityNode(tc.gres), tc.prefix}
			env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeHealth, Node: "gpu01",
				Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // room for the reads before the hang on a loaded machine
			defer cancel()
			res := gresAffinity{}.Run(ctx, env)
			assertRemedies(t, res)
			settleRemedy(&res)
			if res.Status != StatusFail || res.Summary != tc.summary || res.Remedy != tc.remedy {
				t.Errorf("Run = %s %q [%s]\nwant fail %q [%s]", res.Status, res.Summary, res.Remedy, tc.summary, tc.remedy)
			}
		})
	}
}

// TestGresAffinityReadsOnlyWhatItNeeds: without Links=, the NVLink topology (an NVML
// session of its own) is never asked for; without Cores=, no CPU topology is read.
func TestGresAffinityReadsOnlyWhatItNeeds(t *testing.T) {
	f := affinityNode("NodeName=gpu01 Name=gpu File=/dev/nvidia[0-7] Cores=0-111\n")
	f.factErr = map[string]error{node.NVLinkTopologyFact.Name: errors.New("NVLinkTopology read")}
	if res := runGresAffinity(f); res.Status != StatusOK {
		t.Errorf("Cores= only: %s %q, want ok without the NVLink topology", res.Status, res.Summary)
	}
	f = affinityNode("NodeName=gpu01 Name=gpu File=/dev/nvidia4 Links=0,0,0,0,-1,0,0,0\n")
	for p := range f.files {
		if strings.HasPrefix(p, "/sys/devices/system/") {
			delete(f.files, p)
		}
	}
	if res := runGresAffinity(f); res.Status != StatusOK {
		t.Errorf("Links= only: %s %q, want ok without the CPU topology", res.Status, res.Summary)
	}
}

// FuzzGresAffinity runs the whole check on a node whose gres.conf line, numa_node, CPU lists
// and NVLink counts are arbitrary: it must never panic, and must always say something.
func FuzzGresAffinity(f *testing.F) {
	f.Add("Cores=0-55", "1\n", "0-223\n", "0-55,112-167\n", "56-111,168-223\n", uint8(18), uint8(1))
	f.Add("CPUs=0-3 Links=-1,2", "-1\n", "0-3\n", "0-3", "", uint8(0), uint8(3))
	f.Add("Links=0,0,0,0,-1,0,0,0", "7", "", "x", "0", uint8(4), uint8(255))
	f.Fuzz(func(t *testing.T, keys, numa, online, node0, node1 string, links, remote uint8) {
		fk := affinityNode("NodeName=gpu01 Name=gpu File=/dev/nvidia4 " + strings.ReplaceAll(keys, "\n", " ") + "\n")
		fk.files["/sys/bus/pci/devices/0000:9b:00.0/numa_node"] = numa
		fk.files["/sys/devices/system/cpu/online"] = online
		fk.files["/sys/devices/system/node/node0/cpulist"] = node0
		fk.files["/sys/devices/system/node/node1/cpulist"] = node1
		topo := switchTopology(h100NVMLBus, int(links%40))
		for i := range topo.Devices[4].Links {
			if remote%3 == 0 {
				topo.Devices[4].Links[i].RemoteBusID = h100NVMLBus[int(remote)%8]
			}
		}
		fk.facts[node.NVLinkTopologyFact.Name] = topo
		res := runGresAffinity(fk)
		if res.Summary == "" || res.Status == "" {
			t.Fatalf("empty result for %q: %+v", keys, res)
		}
	})
}
