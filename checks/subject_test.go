package checks

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/history"
)

// subjectGPU is the subject of a detail about the GPU NVML numbers i at bus (sysfs form).
func subjectGPU(i int, bus string) Subject {
	return Subject{GPU: GPURef{Index: i, HasIndex: true, Bus: bus}}
}

// subjectRow is the subject a case of TestRemedyMapping gives its failure.
type subjectRow struct {
	name string
	want Subject
}

// remedyCaseSubjects are the subjects of the cases of TestRemedyMapping, by case name.
func remedyCaseSubjects() []subjectRow {
	gpu3, gpu0 := subjectGPU(3, "0000:9b:00.0"), subjectGPU(0, "0000:19:00.0")
	port := Subject{IB: IBPortRef{Device: "mlx5_0", Port: 1}}
	file := func(f string) Subject { return Subject{File: f} }
	slot := func(s string) Subject { return Subject{GPU: GPURef{Slot: s}} }
	return []subjectRow{
		{"pending row remap", gpu3},
		{"uncorrectable volatile ECC", gpu3},
		{"failed row remap", gpu3},
		{"failed remap and uncorrectable: the GPU needs service", gpu3},
		{"retired pages at the limit", gpu3},
		{"page retirement pending", gpu3},
		{"ECC off", gpu3},
		{"ECC on after the next reset", gpu3},
		{"GPU lost from NVML, on the PCI bus", subjectGPU(1, "0000:3b:00.0")},
		{"GPU on the PCI bus, not in NVML", Subject{GPU: GPURef{Bus: "0000:3b:00.0"}}},
		{"GPU that requires a reset", subjectGPU(1, "0000:3b:00.0")},
		{"GPU in NVML, gone from the PCI bus", subjectGPU(1, "0000:3b:00.0")},
		// Counts and NVML as a whole are the node's.
		{"GPU absent from the PCI bus", Subject{}},
		{"GPU absent from the bus and from gres.conf's 3 files", Subject{}},
		{"slurm.conf counts more than gres.conf and the node", Subject{}},
		{"more GPUs than slurm.conf says", Subject{}},
		{"driver not loaded", Subject{}},
		{"driver and library apart", Subject{}},
		{"no driver installed", Subject{}},
		{"models do not match Feature=", Subject{}}, // a group of GPUs, no one device
		{"driver made no device file", file("/dev/nvidia1")},
		{"one GPU file missing beside the others (its GPU in NVML)", file("/dev/nvidia1")},
		{"MIG capability missing", file("/dev/nvidia-caps/nvidia-cap21")},
		{"a regular file", file("/dev/nvidia0")},
		{"wrong minor", file("/dev/nvidia1")},
		{"a DIMM lost", Subject{}},
		{"RealMemory a little high", Subject{}},
		{"a socket missing", Subject{}},
		{"SMT off", Subject{}},
		{"NVLink inactive", gpu3},
		{"PCIe width degraded", gpu3},
		{"IB port polling", port},
		{"IB port disabled", port},
		{"RoCE port without carrier", port},
		{"IB port waiting for the subnet manager", port},
		{"IB port slow", port},
		{"FM and driver versions apart", Subject{}},
		{"FM not installed", Subject{}},
		{"FM not running", Subject{Service: "nvidia-fabricmanager"}},
		{"fabric not completed", subjectGPU(5, "0000:bb:00.0")},
		{"versions apart and FM down: admin for the node", Subject{}},
		{"a process left after the job", gpu3},
		{"memory held with no process", gpu3},
		{"NCCL busbw low", Subject{}},
		{"NCCL wrong data", Subject{}},
		{"NCCL exited non-zero", Subject{}},
		// The kernel alone names these GPUs: no function, so no bus id a reset could take.
		{"XID 79 fallen off the bus", slot("0000:9b:00")},
		{"XID 48 double-bit ECC", slot("0000:19:00")},
		{"XID 79 and 48: the node needs the reboot", slot("0000:19:00")},
		{"recovery action GPU_RESET", gpu0},
		{"recovery action DRAIN_P2P", gpu0},
		{"recovery action DRAIN_AND_RESET", gpu0},
		{"recovery action NODE_REBOOT", gpu0},
		{"recovery action BUS_RESET", gpu0},
		{"recovery action unknown", gpu0},
		{"recovery action RECOVER_IMEX_DOMAIN", gpu0},
		{"HW thermal slowdown", gpu0},
		{"HW power brake", gpu0},
		{"SW power cap failed by the site", gpu0},
		{"over the slowdown temperature", gpu0},
		{"IMEX service inactive", Subject{Service: "nvidia-imex"}},
		{"IMEX channel missing", file(imexChannelDir + "channel0")},
		{"GB200 tray fabric not registered", subjectGPU(0, "0008:01:00.0")},
	}
}

// TestRemedyCaseSubjects holds the subject each judge sets on the failure of every case of
// TestRemedyMapping: the failing detail's (or, for a case about the result, the result's).
// A case without a row in remedyCaseSubjects fails, so a new failure says what device it is
// about.
func TestRemedyCaseSubjects(t *testing.T) {
	rows := remedyCaseSubjects()
	var cases []remedyCase
	for _, f := range []func() []remedyCase{memoryRemedyCases, countRemedyCases, deviceRemedyCases, linkRemedyCases, jobRemedyCases, signalRemedyCases} {
		cases = append(cases, f()...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(rows, func(r subjectRow) bool { return r.name == tc.name })
			if i < 0 {
				t.Fatalf("no subject row for %q: say what device its failure is about", tc.name)
			}
			got := tc.res.Subject
			if tc.device != "" {
				j := slices.IndexFunc(tc.res.Details, func(d Detail) bool { return d.Device == tc.device && d.Status == StatusFail })
				if j < 0 {
					t.Fatalf("no failing detail %q", tc.device)
				}
				got = tc.res.Details[j].Subject
			}
			if diff := cmp.Diff(rows[i].want, got); diff != "" {
				t.Errorf("subject of %q (-want +got):\n%s", tc.device, diff)
			}
		})
	}
	if len(rows) != len(cases) {
		t.Errorf("%d subject rows for %d cases: remove the rows of cases that are gone", len(rows), len(cases))
	}
}

// TestOverTimeSubjects: a judgement over time gives its detail, and the result, the GPU's
// identity or the port from the judgement's fields, not from its label.
func TestOverTimeSubjects(t *testing.T) {
	js := []history.Judgement{
		{Rule: "xid_sticky", Status: history.StatusFail, Target: "gpu", Device: "a GPU", Summary: "XID 79", XID: 79,
			GPU: history.GPUID{UUID: "GPU-1", Serial: "1652", Bus: "0000:9b:00.0", Index: 4}},
		{Rule: "xid_recent", Status: history.StatusWarn, Target: "gpu", Device: "gpu 0000:19:00.0", Summary: "XID 13", XID: 13,
			GPU: history.GPUID{Bus: "0000:19:00.0", Index: -1}},
		{Rule: "ib_flap", Status: history.StatusFail, Target: "port", Device: "a port", Summary: "flaps",
			Port: history.PortID{Device: "mlx5_0", Port: 1, Netdev: "ib0"}},
		{Rule: "ib_flap", Status: history.StatusWarn, Target: "port", Device: "netdev:ib3", Summary: "a down",
			Port: history.PortID{Netdev: "ib3"}},
	}
	res := (&runHistory{}).overTimeResult(js, func(history.Judgement) Remedy { return RemedyReboot }, "ok", "")
	want := []Subject{
		{GPU: GPURef{Index: 4, HasIndex: true, Bus: "0000:9b:00.0", UUID: "GPU-1", Serial: "1652"}},
		{IB: IBPortRef{Device: "mlx5_0", Port: 1}},
		{GPU: GPURef{Bus: "0000:19:00.0"}},
		{IB: IBPortRef{Netdev: "ib3"}},
	}
	var got []Subject
	for _, d := range res.Details {
		got = append(got, d.Subject)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("details' subjects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[0], res.Subject); diff != "" {
		t.Errorf("the result's subject (-want +got):\n%s", diff)
	}
}
