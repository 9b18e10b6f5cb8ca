package checks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// leftoverBusIDs are the NVML bus ids of the fake GPUs: those of the 8-GPU H100 node in
// shared/corpus/nvsmi/gpud-table-550.90.07.txt.
var leftoverBusIDs = []string{"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0"}

// idleGPUs is n idle H100s as NVML v2 reports them: no process, 0 MiB used (551 reserved).
func idleGPUs(n int) node.GPUInventory {
	inv := node.GPUInventory{Init: node.InitSuccess, DriverVersion: "550.90.07", DeviceCount: n}
	for i := range n {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, MinorNumber: i, Name: "NVIDIA H100 80GB HBM3", PCIBusID: leftoverBusIDs[i],
			Memory:  &node.Memory{TotalMiB: 81559, UsedMiB: 0, ReservedMiB: 551},
			Compute: &node.Compute{Processes: []node.Process{}}})
	}
	return inv
}

// withProcs puts processes on GPU i, with the memory they hold.
func withProcs(inv node.GPUInventory, i int, procs ...node.Process) node.GPUInventory {
	inv = inv.Clone()
	inv.Devices[i].Compute = &node.Compute{Processes: procs}
	for _, p := range procs {
		inv.Devices[i].Memory.UsedMiB += p.UsedMiB
	}
	return inv
}

func alicePython(pid uint32) node.Process {
	return node.Process{PID: pid, UsedMiB: 1024, UID: 1001, User: "alice", Command: "python"}
}

const twoGPUGres = "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-1]\n"

type leftoverCase struct {
	name    string
	mode    config.Mode
	job     Job
	gres    string // "" for no gres.conf
	devs    map[string]node.DevNode
	gpus    node.GPUInventory
	gpuErr  error
	maxMiB  int // 0: the default
	status  Status
	summary string
	// never lists strings the result must not contain anywhere: other jobs' GPUs.
	never []string
}

func runJobLeftovers(t *testing.T, tc leftoverCase) Result {
	t.Helper()
	files := map[string]string{"/etc/slurm/slurm.conf": "GresTypes=gpu\nNodeName=gpu[01-04] Gres=gpu:4\n"}
	if tc.gres != "" {
		files["/etc/slurm/gres.conf"] = tc.gres
	}
	f := &fakeFacts{files: files, devs: tc.devs, gpus: tc.gpus, gpuErr: tc.gpuErr}
	cfg := config.Default(Schema())
	if tc.maxMiB != 0 {
		settings[*jobLeftoversConfig](cfg, idJobLeftovers).MemoryUsedMaxMiB = tc.maxMiB
	}
	env := &Env{Facts: f, Config: cfg, Mode: tc.mode, Node: "gpu01", Job: tc.job,
		Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
	return jobLeftovers{}.Run(context.Background(), env)
}

func TestJobLeftovers(t *testing.T) {
	alice := Job{ID: "4711", GPUs: "0", UID: "1001", User: "alice"}
	bothBusy := withProcs(withProcs(idleGPUs(2), 0, alicePython(4242), alicePython(4243)), 1,
		node.Process{PID: 5151, UsedMiB: 2048, UID: 1002, User: "bob", Command: "torchrun"})
	otherBusy := withProcs(idleGPUs(2), 1, node.Process{PID: 5151, UsedMiB: 2048, UID: 1002, User: "bob", Command: "torchrun"})
	gpu1Never := []string{"gpu 1", "3b:00.0", "3B:00.0", "5151", "bob", "torchrun"}

	held := idleGPUs(2)
	held.Devices[0].Memory.UsedMiB = 2048
	v1Idle := idleGPUs(2) // the older call: Used includes the reserve
	v1Idle.Devices[0].Memory = &node.Memory{TotalMiB: 81559, UsedMiB: 552}
	noCompute := idleGPUs(2)
	noCompute.Devices[0].Compute = nil
	noMemory := idleGPUs(2)
	noMemory.Devices[0].Memory = nil
	lost := idleGPUs(2)
	lost.Devices[0] = node.GPU{Index: 0, MinorNumber: 0, PCIBusID: leftoverBusIDs[0], Error: "ERROR_GPU_IS_LOST"}
	gone := withProcs(idleGPUs(2), 0, node.Process{PID: 4242, UsedMiB: 10, UID: -1})
	uidOnly := withProcs(idleGPUs(2), 0, node.Process{PID: 4242, UsedMiB: 10, UID: 2000, Command: "a.out"})
	many := withProcs(idleGPUs(2), 0, alicePython(1), alicePython(2), alicePython(3), alicePython(4), alicePython(5), alicePython(6))
	strayOnBoth := withProcs(withProcs(idleGPUs(2), 0, alicePython(4242)), 1, alicePython(4343))

	// gres.conf numbers /dev/nvidia2 and 3 as 0 and 1 (SLURM.md: "with File=.../nvidia[2-3]
	// the jobs got 0 and 1").
	upper := withProcs(idleGPUs(4), 0, node.Process{PID: 5151, UsedMiB: 2048, UID: 1002, User: "bob", Command: "torchrun"})
	upper = withProcs(upper, 2, alicePython(4242))
	// The device node decides, not the name: /dev/nvidia0 here is the GPU with minor 3.
	swapped := nvidiaDevs(4)
	swapped["/dev/nvidia0"] = charDev(195, 3)
	onMinor3 := withProcs(idleGPUs(4), 3, alicePython(4242))
	notNVIDIA := nvidiaDevs(2)
	notNVIDIA["/dev/nvidia1"] = charDev(10, 1)
	regular := nvidiaDevs(2)
	regular["/dev/nvidia0"] = node.DevNode{Type: "file"}
	oneGPU := idleGPUs(1)
	reordered := idleGPUs(2) // NVML index 0 is minor 1
	reordered.Devices[0].MinorNumber, reordered.Devices[1].MinorNumber = 1, 0

	tests := []leftoverCase{
		{name: "manual mode", mode: config.ModeManual, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusSkip, summary: summaryNotInJob + " (mode manual)"},
		{name: "health mode", mode: config.ModeHealth, job: Job{}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusSkip, summary: summaryNotInJob + " (mode health)"},
		{name: "job without GPUs", mode: config.ModeEpilog, job: Job{ID: "4711", UID: "1001", User: "alice"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusSkip, summary: summaryNoJobGPUs},

		{name: "epilog: clean, another job busy", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: otherBusy,
			status: StatusOK, summary: "no compute process left and memory released on the job's 1 GPU (gpu 0 (0000:19:00.0))", never: gpu1Never},
		{name: "epilog: processes left", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 2 processes left: pid 4242 (alice, python), pid 4243 (alice, python)", never: gpu1Never},
		{name: "epilog: the other job's GPU", mode: config.ModeEpilog, job: Job{ID: "4712", GPUs: "1", UID: "1002", User: "bob"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusFail, summary: "gpu 1 (0000:3b:00.0): 1 process left: pid 5151 (bob, torchrun)",
			never: []string{"gpu 0", "19:00.0", "4242", "4243", "alice", "python"}},
		{name: "epilog: both GPUs, both busy", mode: config.ModeEpilog, job: Job{ID: "4711", GPUs: "0,1"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: strayOnBoth,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process left: pid 4242 (alice, python) (+1 more)"},
		{name: "epilog: a range", mode: config.ModeEpilog, job: Job{ID: "4711", GPUs: "0-1"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: idleGPUs(2),
			status: StatusOK, summary: "no compute process left and memory released on the job's 2 GPUs (gpu 0 (0000:19:00.0), gpu 1 (0000:3b:00.0))"},
		{name: "epilog: many processes", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: many,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 6 processes left: pid 1 (alice, python), pid 2 (alice, python), pid 3 (alice, python), pid 4 (alice, python) (+2 more)"},
		{name: "epilog: process gone from /proc", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: gone,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process left: pid 4242 (owner unknown)"},
		{name: "epilog: uid not in passwd", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: uidOnly,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process left: pid 4242 (uid 2000, a.out)"},
		{name: "epilog: memory not released", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: held,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): memory not released: 2048 MiB used with no process, max 1024 MiB"},
		{name: "epilog: memory under a lower max", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: v1Idle, maxMiB: 100,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): memory not released: 552 MiB used with no process, max 100 MiB"},
		{name: "epilog: idle under NVML v1 passes the default", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: v1Idle,
			status: StatusOK, summary: "no compute process left and memory released on the job's 1 GPU (gpu 0 (0000:19:00.0))"},
		{name: "epilog: processes not listed", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: noCompute,
			status: StatusError, summary: "gpu 0 (0000:19:00.0): NVML could not list its compute processes (SLURM_JOB_GPUS index 0, /dev/nvidia0)"},
		{name: "epilog: memory not read", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: noMemory,
			status: StatusError, summary: "gpu 0 (0000:19:00.0): NVML could not read its memory use (SLURM_JOB_GPUS index 0, /dev/nvidia0)"},
		{name: "epilog: GPU lost", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: lost,
			status: StatusError, summary: "gpu 0 (0000:19:00.0): NVML: ERROR_GPU_IS_LOST: cannot list its processes (SLURM_JOB_GPUS index 0, /dev/nvidia0)"},
		{name: "epilog: a leftover outranks an unreadable GPU", mode: config.ModeEpilog, job: Job{GPUs: "0,1"}, gres: twoGPUGres, devs: nvidiaDevs(2),
			gpus: func() node.GPUInventory {
				g := withProcs(idleGPUs(2), 1, alicePython(4343))
				g.Devices[0].Compute = nil
				return g
			}(),
			status: StatusFail, summary: "gpu 1 (0000:3b:00.0): 1 process left: pid 4343 (alice, python) (+1 more)"},

		{name: "prolog: a stray process", mode: config.ModeProlog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2),
			gpus:   withProcs(idleGPUs(2), 0, node.Process{PID: 5151, UsedMiB: 2048, UID: 1002, User: "bob", Command: "torchrun"}),
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process before the job starts: pid 5151 (bob, torchrun)"},
		{name: "prolog: the job's own user is still a stray", mode: config.ModeProlog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 2 processes before the job starts: pid 4242 (alice, python, the job's own user), pid 4243 (alice, python, the job's own user)", never: gpu1Never},
		{name: "prolog: own user by uid alone", mode: config.ModeProlog, job: Job{GPUs: "0", UID: "2000"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: uidOnly,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process before the job starts: pid 4242 (uid 2000, a.out, the job's own user)"},
		{name: "prolog: memory held", mode: config.ModeProlog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: held,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): memory held before the job starts: 2048 MiB used with no process, max 1024 MiB"},
		{name: "prolog: clean", mode: config.ModeProlog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: otherBusy,
			status: StatusOK, summary: "no process and no held memory on the job's 1 GPU (gpu 0 (0000:19:00.0)) before it starts", never: gpu1Never},

		{name: "index follows gres.conf order, not /dev numbers", mode: config.ModeEpilog, job: alice,
			gres: "NodeName=gpu01 Name=gpu File=/dev/nvidia[2-3]\n", devs: nvidiaDevs(4), gpus: upper,
			status: StatusFail, summary: "gpu 2 (0000:4c:00.0): 1 process left: pid 4242 (alice, python)", never: []string{"gpu 0", "5151", "bob"}},
		{name: "several gres.conf lines count in file order", mode: config.ModeEpilog, job: Job{GPUs: "2"},
			gres: "NodeName=gpu01 Name=gpu Type=h100 File=/dev/nvidia3\nNodeName=gpu01 Name=mps Count=200 File=/dev/nvidia0\nNodeName=gpu01 Name=gpu Type=h100 File=/dev/nvidia[1,0]\n",
			devs: nvidiaDevs(4), gpus: withProcs(idleGPUs(4), 0, alicePython(4242)),
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 1 process left: pid 4242 (alice, python)"},
		{name: "the device node's minor decides, not the name", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: swapped, gpus: onMinor3,
			status: StatusFail, summary: "gpu 3 (0000:5d:00.0): 1 process left: pid 4242 (alice, python)"},
		{name: "a MIG instance is not judged", mode: config.ModeEpilog, job: alice,
			gres: "NodeName=gpu01 Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21\n", devs: nvidiaDevs(1), gpus: withProcs(idleGPUs(1), 0, alicePython(4242)),
			status: StatusSkip, summary: "SLURM_JOB_GPUS index 0: a MultipleFiles= GPU (/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21, /etc/slurm/gres.conf:1): a MIG instance, and NVML lists processes per GPU, not per instance, so its GPU is not judged"},

		{name: "index beyond gres.conf", mode: config.ModeEpilog, job: Job{GPUs: "0,2"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: idleGPUs(2),
			status: StatusError, summary: "SLURM_JOB_GPUS index 2: gres.conf lists 2 GPU device files for gpu01: cannot tell which GPU it is"},
		{name: "device file missing", mode: config.ModeEpilog, job: Job{GPUs: "1"}, gres: twoGPUGres, devs: nvidiaDevs(1), gpus: idleGPUs(2),
			status: StatusError, summary: "SLURM_JOB_GPUS index 1: gres.conf File=/dev/nvidia1 (/etc/slurm/gres.conf:1): it is missing: cannot tell which GPU it is"},
		{name: "device file is a regular file", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: regular, gpus: idleGPUs(2),
			status: StatusError, summary: "SLURM_JOB_GPUS index 0: gres.conf File=/dev/nvidia0 (/etc/slurm/gres.conf:1): it is a regular file, not a character device: cannot tell which GPU it is"},
		{name: "device file is not an NVIDIA GPU", mode: config.ModeEpilog, job: Job{GPUs: "1"}, gres: twoGPUGres, devs: notNVIDIA, gpus: idleGPUs(2),
			status: StatusError, summary: "SLURM_JOB_GPUS index 1: gres.conf File=/dev/nvidia1 (/etc/slurm/gres.conf:1): it is char 10:1, not an NVIDIA GPU (195:N, N below 255): cannot tell which GPU it is"},
		{name: "no NVML device has the minor", mode: config.ModeEpilog, job: Job{GPUs: "1"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: oneGPU,
			status: StatusError, summary: "SLURM_JOB_GPUS index 1: gres.conf File=/dev/nvidia1 (/etc/slurm/gres.conf:1) is GPU minor 1, which none of the 1 GPU NVML lists has: cannot tell which GPU it is"},
		{name: "no gres.conf", mode: config.ModeEpilog, job: alice, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusError, summary: "no gres.conf at /etc/slurm/gres.conf: cannot tell which GPUs SLURM_JOB_GPUS=0 names"},
		{name: "no File= for this node", mode: config.ModeEpilog, job: alice, gres: "NodeName=gpu09 Name=gpu File=/dev/nvidia[0-1]\n", devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusError, summary: "cannot tell which GPUs SLURM_JOB_GPUS=0 names: gpu01 has no gres.conf GPU line with File= in /etc/slurm/gres.conf"},
		{name: "AutoDetect alone", mode: config.ModeEpilog, job: alice, gres: "AutoDetect=nvml\nName=gpu Type=h100 Count=2\n", devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusError, summary: "cannot tell which GPUs SLURM_JOB_GPUS=0 names: gres.conf uses AutoDetect=nvml for gpu01 without File= lines, and then Slurm numbers the GPUs in an order nodecheck does not know"},
		{name: "AutoDetect with File= in NVML's order", mode: config.ModeEpilog, job: alice, gres: "AutoDetect=nvml\n" + twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusFail, summary: "gpu 0 (0000:19:00.0): 2 processes left: pid 4242 (alice, python), pid 4243 (alice, python)"},
		{name: "AutoDetect with File= in another order", mode: config.ModeEpilog, job: alice, gres: "AutoDetect=nvml\n" + twoGPUGres, devs: nvidiaDevs(2), gpus: reordered,
			status: StatusError, summary: "SLURM_JOB_GPUS index 0: gres.conf (/etc/slurm/gres.conf:2, AutoDetect=nvml) puts /dev/nvidia0 at position 0 but NVML at index 1, and slurmd may number either way: cannot tell which GPU it is"},
		{name: "AutoDetect=off is plain File= order", mode: config.ModeEpilog, job: alice, gres: "AutoDetect=off\n" + twoGPUGres, devs: nvidiaDevs(2), gpus: reordered,
			status: StatusOK, summary: "no compute process left and memory released on the job's 1 GPU (gpu 1 (0000:3b:00.0))"},
		{name: "NVML unavailable", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"},
			status: StatusError, summary: "cannot list the processes on the job's GPUs (SLURM_JOB_GPUS=0): NVML ERROR_DRIVER_NOT_LOADED"},
		{name: "NVML not read", mode: config.ModeEpilog, job: alice, gres: twoGPUGres, devs: nvidiaDevs(2), gpuErr: errors.New("no NVML facts recorded"),
			status: StatusError, summary: "query NVML: no NVML facts recorded"},
		{name: "SLURM_JOB_GPUS garbage", mode: config.ModeEpilog, job: Job{GPUs: "gpu0"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusError, summary: `SLURM_JOB_GPUS="gpu0": "gpu0" is not an index; want indices into gres.conf's GPU files such as "0,1"`},
		{name: "SLURM_JOB_GPUS NoDevFiles", mode: config.ModeEpilog, job: Job{GPUs: "NoDevFiles"}, gres: twoGPUGres, devs: nvidiaDevs(2), gpus: bothBusy,
			status: StatusError, summary: `SLURM_JOB_GPUS="NoDevFiles": Slurm knows no device files for the job's GPUs (gres.conf has no File= for them); want indices into gres.conf's GPU files such as "0,1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runJobLeftovers(t, tc)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.status), tc.summary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
			if len(tc.never) > 0 {
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range tc.never {
					if strings.Contains(string(b), s) {
						t.Errorf("the result mentions %q, which is another job's:\n%s", s, b)
					}
				}
			}
		})
	}
}

// TestJobLeftoversDetails: one detail per entry of SLURM_JOB_GPUS, in its order, with the
// mapping an admin needs to follow it.
func TestJobLeftoversDetails(t *testing.T) {
	got := runJobLeftovers(t, leftoverCase{mode: config.ModeEpilog, job: Job{GPUs: "1,0,3"}, gres: twoGPUGres, devs: nvidiaDevs(2),
		gpus: withProcs(idleGPUs(2), 1, alicePython(4343))})
	want := Result{Status: StatusFail, Summary: "gpu 1 (0000:3b:00.0): 1 process left: pid 4343 (alice, python) (+1 more)",
		Expected: "no compute process and at most 1024 MiB used on the job's GPUs (SLURM_JOB_GPUS=1,0,3)",
		Observed: "1 of 2 GPUs with leftovers", Subject: subjectGPU(1, "0000:3b:00.0"),
		Details: []Detail{
			{Device: "gpu 1 (0000:3b:00.0)", Status: StatusFail, Message: "1 process left: pid 4343 (alice, python)",
				Observed: "1 process, 1024 MiB used", Expected: "no process, at most 1024 MiB used", Remedy: RemedyReboot, Subject: subjectGPU(1, "0000:3b:00.0")},
			{Device: "gpu 0 (0000:19:00.0)", Status: StatusOK, Message: "no process, 0 MiB used (SLURM_JOB_GPUS index 0, /dev/nvidia0)",
				Observed: "0 processes, 0 MiB used", Expected: "no process, at most 1024 MiB used", Subject: subjectGPU(0, "0000:19:00.0")},
			{Device: "SLURM_JOB_GPUS index 3", Status: StatusError, Message: "gres.conf lists 2 GPU device files for gpu01: cannot tell which GPU it is"},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseJobGPUs(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"0,1", []int{0, 1}, false}, // what Slurm 22.05 writes for --gres=gpu:2
		{"3,1", []int{3, 1}, false},
		{"0-2,5", []int{0, 1, 2, 5}, false},
		{" 1 , 2 ", []int{1, 2}, false},
		{"1,1,0-1", []int{1, 0}, false},
		{"", nil, true},
		{"0,", nil, true},
		{"-1", nil, true},
		{"2-1", nil, true},
		{"0-99999999", nil, true},
		{"gpu:0", nil, true},
		{"NoDevFiles", nil, true},
		{"GPU-5e0cd5b0-4e1f-2fc9-b6f2-32b2b1a8a2a3", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseJobGPUs(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseJobGPUs(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseJobGPUs: SLURM_JOB_GPUS comes from the environment; whatever it holds, parsing
// gives an error or distinct indices in range, and those indices written back as Slurm
// writes them ("0,1") parse to themselves.
func FuzzParseJobGPUs(f *testing.F) {
	for _, s := range []string{"0", "0,1", "0-3", "2,0-1", " 1 , 2 ", "NoDevFiles", "", "1-", "-1", "3-1", "65536", "0,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseJobGPUs(s)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		parts := make([]string, 0, len(got))
		for _, i := range got {
			if i < 0 || i >= maxJobGPUIndex || seen[i] {
				t.Fatalf("parseJobGPUs(%q) = %v: index %d out of range or repeated", s, got, i)
			}
			seen[i] = true
			parts = append(parts, strconv.Itoa(i))
		}
		again, err := parseJobGPUs(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("parseJobGPUs(%q) = %v, but its re-written form gives %v, %v", s, got, again, err)
		}
	})
}

// TestJobLeftoversConfig: memory_used_max_mib decodes with its default, reaches a node through
// a group, and a value that cannot be MiB names its line and the fix.
func TestJobLeftoversConfig(t *testing.T) {
	section := func(c *config.Config) any { return *settings[*jobLeftoversConfig](c, idJobLeftovers) }
	common := func(modes ...string) config.CheckCommon {
		return config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: modes}
	}
	runSectionCases(t, []sectionCase{
		{
			name:    "defaults",
			toml:    "",
			want:    section,
			wantVal: jobLeftoversConfig{CheckCommon: common("prolog", "epilog"), MemoryUsedMaxMiB: 1024},
		},
		{
			name:    "memory_used_max_mib and modes",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = 64\nmodes = [\"epilog\"]\n",
			want:    section,
			wantVal: jobLeftoversConfig{CheckCommon: common("epilog"), MemoryUsedMaxMiB: 64},
		},
		{
			name:    "zero: any memory in use fails",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = 0\n",
			want:    section,
			wantVal: jobLeftoversConfig{CheckCommon: common("prolog", "epilog"), MemoryUsedMaxMiB: 0},
		},
		{
			name:    "group sets the max for its nodes",
			toml:    "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.job_leftovers]\nmemory_used_max_mib = 2048\n",
			node:    "gpu02",
			want:    section,
			wantVal: jobLeftoversConfig{CheckCommon: common("prolog", "epilog"), MemoryUsedMaxMiB: 2048},
		},
		{
			name:    "negative",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = -1\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib = -1: give MiB from 0 to 1048576, such as 1024 (not bytes)",
		},
		{
			name:    "bytes instead of MiB",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = 1073741824\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib = 1073741824: give MiB from 0 to 1048576, such as 1024 (not bytes)",
		},
		{
			name:    "not a number",
			toml:    "[checks.job_leftovers]\nmemory_used_max_mib = \"1G\"\n",
			wantErr: "nodecheck.toml:2: checks.job_leftovers.memory_used_max_mib: want a whole number, got the string \"1G\"",
		},
	})
}

// TestJudgeJobLeftovers feeds the judge literal GPUs of a job, as gres.conf and NVML gave them.
func TestJudgeJobLeftovers(t *testing.T) {
	idle := &node.GPU{Index: 2, PCIBusID: "00000000:4C:00.0", Memory: &node.Memory{UsedMiB: 1}, Compute: &node.Compute{Processes: []node.Process{}}}
	busy := &node.GPU{Index: 3, PCIBusID: "00000000:5D:00.0", Memory: &node.Memory{UsedMiB: 4000},
		Compute: &node.Compute{Processes: []node.Process{{PID: 4242, UID: 1000, User: "alice", Command: "python"}}}}
	unlisted := &node.GPU{Index: 4, PCIBusID: "00000000:9B:00.0", Memory: &node.Memory{UsedMiB: 1}}
	held := &node.GPU{Index: 5, PCIBusID: "00000000:BB:00.0", Memory: &node.Memory{UsedMiB: 2048}, Compute: &node.Compute{Processes: []node.Process{}}}
	job := Job{GPUs: "0", UID: "1000", User: "alice"}
	gpu := func(g *node.GPU) jobGPU { return jobGPU{index: 0, file: "/dev/nvidia2", gpu: g} }
	tests := []struct {
		name        string
		gpus        []jobGPU
		mode        config.Mode
		wantStatus  Status
		wantSummary string
	}{
		{"epilog, clean", []jobGPU{gpu(idle)}, config.ModeEpilog, StatusOK, "no compute process left and memory released on the job's 1 GPU (gpu 2 (0000:4c:00.0))"},
		{"epilog, a process left", []jobGPU{gpu(busy)}, config.ModeEpilog, StatusFail, "gpu 3 (0000:5d:00.0): 1 process left: pid 4242 (alice, python)"},
		{"prolog, the job's own user", []jobGPU{gpu(busy)}, config.ModeProlog, StatusFail,
			"gpu 3 (0000:5d:00.0): 1 process before the job starts: pid 4242 (alice, python, the job's own user)"},
		{"processes not listed", []jobGPU{gpu(unlisted)}, config.ModeEpilog, StatusError,
			"gpu 4 (0000:9b:00.0): NVML could not list its compute processes (SLURM_JOB_GPUS index 0, /dev/nvidia2)"},
		{"memory held", []jobGPU{gpu(held)}, config.ModeEpilog, StatusFail, "gpu 5 (0000:bb:00.0): memory not released: 2048 MiB used with no process, max 1024 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeJobLeftovers(tc.gpus, tc.mode, 1024, 1000, job)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
