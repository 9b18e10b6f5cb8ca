package checks

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// assertRemedies fails the test when res, or one of its details, fails without a remedy of
// the table. Every check's table tests call it on what the judge or Run returned, so a new
// failing path without a row of remedyTable fails its own test.
func assertRemedies(t *testing.T, res Result) {
	t.Helper()
	for _, d := range res.Details {
		if d.Status == StatusFail && !d.Remedy.Valid() {
			t.Errorf("failing detail %q (%s) has no remedy (%q): give it one from remedyTable", d.Device, d.Message, d.Remedy)
		}
		if d.Status != StatusFail && d.Remedy != "" && res.Status != StatusWarn {
			t.Errorf("detail %q is %s but names remedy %q: only failures carry one", d.Device, d.Status, d.Remedy)
		}
	}
	settled := res
	settleRemedy(&settled)
	if res.Status == StatusFail && !settled.Remedy.Valid() {
		t.Errorf("failing result %q has no remedy: set one on the result or on a failing detail", res.Summary)
	}
}

func TestMostDrastic(t *testing.T) {
	tests := []struct {
		in   []Remedy
		want Remedy
	}{
		{nil, ""},
		{[]Remedy{RemedyResetGPU}, RemedyResetGPU},
		{[]Remedy{RemedyResetGPU, RemedyReboot}, RemedyReboot},
		{[]Remedy{RemedyService, RemedyResetGPU}, RemedyService},
		{[]Remedy{RemedyAdmin, RemedyReboot}, RemedyAdmin},
		{[]Remedy{"", RemedyResetGPU, "bogus"}, RemedyResetGPU},
	}
	for _, tc := range tests {
		if got := MostDrastic(tc.in...); got != tc.want {
			t.Errorf("MostDrastic(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSettleRemedy: a failing result takes the most drastic remedy of its failing details
// and its own; a result that does not fail names none.
func TestSettleRemedy(t *testing.T) {
	res := Result{Status: StatusFail, Details: []Detail{
		{Device: "gpu 3", Status: StatusFail, Remedy: RemedyResetGPU},
		{Device: "gpu 5", Status: StatusFail, Remedy: RemedyService},
		{Device: "gpu 6", Status: StatusWarn},
	}}
	settleRemedy(&res)
	if res.Remedy != RemedyService {
		t.Errorf("remedy %q, want service (gpu 5 needs its replacement whatever gpu 3 gets)", res.Remedy)
	}
	own := Result{Status: StatusFail, Remedy: RemedyAdmin}
	settleRemedy(&own)
	if own.Remedy != RemedyAdmin {
		t.Errorf("a result's own remedy was lost: %q", own.Remedy)
	}
	warn := Result{Status: StatusWarn, Remedy: RemedyReboot, Details: []Detail{{Status: StatusFail, Remedy: RemedyReboot}}}
	settleRemedy(&warn)
	if warn.Remedy != "" {
		t.Errorf("a warning names remedy %q", warn.Remedy)
	}
}

// TestRemedyForXID: NVIDIA's catalog for the XIDs nodecheck fails on by default, and XID
// 154's own action.
func TestRemedyForXID(t *testing.T) {
	want := map[int]Remedy{
		48: RemedyResetGPU, 61: RemedyService, 62: RemedyResetGPU, 63: RemedyResetGPU, 64: RemedyResetGPU,
		74: RemedyResetGPU, 79: RemedyReboot, 92: RemedyService, 94: RemedyResetGPU, 95: RemedyResetGPU,
		119: RemedyResetGPU, 120: RemedyResetGPU, 140: RemedyResetGPU,
		// Application XIDs, when a site fails them or history sees them repeat.
		13: RemedyAdmin, 31: RemedyAdmin, 43: RemedyService, 45: RemedyAdmin, 68: RemedyService,
		// Others of the catalog, and beyond it.
		46: RemedyResetGPU, 54: RemedyService, 78: RemedyAdmin, 145: RemedyResetGPU, 151: RemedyReboot, 1: RemedyService, 170: RemedyResetGPU,
	}
	// TestXIDCatalogEveryXID walks every XID of the catalog; these are spot checks.
	for xid, r := range want {
		if got := remedyForXID(xid, ""); got != r {
			t.Errorf("XID %d: %q, want %q", xid, got, r)
		}
	}
	for _, tc := range []struct {
		msg  string
		want Remedy
	}{
		{"GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", RemedyReboot},
		{"GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", RemedyResetGPU},
		{"GPU recovery action changed from 0x2 (Node Reboot Required) to 0x4 (Drain and Reset)", RemedyResetGPU},
		{"GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", RemedyResetGPU},
		{"something new", RemedyReboot},
		// A site that fails every 154 gets the cheapest remedy for "to None".
		{"GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", RemedyResetGPU},
	} {
		if got := remedyForXID(154, tc.msg); got != tc.want {
			t.Errorf("XID 154 %q: %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// remedyCase is one failing reading and the remedy its source gives, on the device named.
type remedyCase struct {
	name   string
	res    Result
	device string // the failing detail that carries want; "" for the result's own
	want   Remedy
}

// TestRemedyMapping feeds each check's judge a failure of every kind and checks the remedy
// the table documents, on the device it concerns.
func TestRemedyMapping(t *testing.T) {
	var cases []remedyCase
	cases = append(cases, memoryRemedyCases()...)
	cases = append(cases, countRemedyCases()...)
	cases = append(cases, deviceRemedyCases()...)
	cases = append(cases, linkRemedyCases()...)
	cases = append(cases, jobRemedyCases()...)
	cases = append(cases, signalRemedyCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRemedies(t, tc.res)
			res := tc.res
			settleRemedy(&res)
			if tc.device == "" {
				if res.Remedy != tc.want {
					t.Errorf("result remedy %q, want %q (%s)", res.Remedy, tc.want, res.Summary)
				}
				return
			}
			i := slices.IndexFunc(res.Details, func(d Detail) bool { return d.Device == tc.device && d.Status == StatusFail })
			if i < 0 {
				t.Fatalf("no failing detail %q in %+v", tc.device, res.Details)
			}
			if got := res.Details[i].Remedy; got != tc.want {
				t.Errorf("%s: remedy %q, want %q (%s)", tc.device, got, tc.want, res.Details[i].Message)
			}
		})
	}
}

func memoryRemedyCases() []remedyCase {
	zero, two := uint64(0), uint64(2)
	h100 := func(f func(g *node.GPU)) node.GPU {
		g := node.GPU{Index: 3, Name: h100Name, PCIBusID: "00000000:9B:00.0",
			ECC:          &node.ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: &zero, AggregateUncorrected: &zero},
			RemappedRows: &node.RemappedRows{}}
		f(&g)
		return g
	}
	v100 := func(p node.RetiredPages) node.GPU {
		return node.GPU{Index: 3, Name: "Tesla V100-SXM2-32GB", PCIBusID: "00000000:9B:00.0",
			ECC: &node.ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: &zero}, RetiredPages: &p}
	}
	cfg := gpuMemoryErrors{}.Section().(*gpuMemoryErrorsConfig)
	mem := func(g node.GPU) Result { return judgeGPUMemory([]node.GPU{g}, cfg) }
	const dev = "gpu 3 (0000:9b:00.0)"
	return []remedyCase{
		{"pending row remap", mem(h100(func(g *node.GPU) { g.RemappedRows.Pending = true })), dev, RemedyResetGPU},
		{"uncorrectable volatile ECC", mem(h100(func(g *node.GPU) { g.ECC.VolatileUncorrected = &two })), dev, RemedyResetGPU},
		{"failed row remap", mem(h100(func(g *node.GPU) { g.RemappedRows.Failed = true })), dev, RemedyService},
		{"failed remap and uncorrectable: the GPU needs service", mem(h100(func(g *node.GPU) { g.RemappedRows.Failed = true; g.ECC.VolatileUncorrected = &two })), dev, RemedyService},
		{"retired pages at the limit", mem(v100(node.RetiredPages{SingleBit: 40, DoubleBit: 23})), dev, RemedyService},
		{"page retirement pending", mem(v100(node.RetiredPages{DoubleBit: 1, Pending: true})), dev, RemedyResetGPU},
		{"ECC off", mem(h100(func(g *node.GPU) { g.ECC.Enabled, g.ECC.PendingEnabled = false, false })), dev, RemedyAdmin},
		{"ECC on after the next reset", mem(h100(func(g *node.GPU) { g.ECC.Enabled = false })), dev, RemedyResetGPU},
	}
}

func countRemedyCases() []remedyCase {
	bus := []string{"0000:19:00.0", "0000:3b:00.0"}
	two := func(f func(inv *node.GPUInventory)) node.GPUInventory {
		inv := node.GPUInventory{Init: node.InitSuccess, DeviceCount: 2, Devices: []node.GPU{
			{Index: 0, Name: h100Name, PCIBusID: "00000000:19:00.0"}, {Index: 1, Name: h100Name, PCIBusID: "00000000:3B:00.0"}}}
		if f != nil {
			f(&inv)
		}
		return inv
	}
	exp := func(n uint64) gpuExpectation {
		return gpuExpectation{count: n, specs: []slurm.GresSpec{{Name: "gpu", Type: "h100", Count: n}}}
	}
	withFiles := func(e gpuExpectation, n int) gpuExpectation { e.gresFiles = n; return e }
	count := func(b []string, inv node.GPUInventory, e gpuExpectation) Result {
		return judgeGPUCount("gpu01", b, inv, e)
	}
	models, _ := newGPUModelTable(nil)
	return []remedyCase{
		{"GPU lost from NVML, on the PCI bus", count(bus, two(func(inv *node.GPUInventory) { inv.Devices[1].Error = "ERROR_GPU_IS_LOST" }), exp(2)),
			"gpu 1 (0000:3b:00.0)", RemedyReboot},
		{"GPU on the PCI bus, not in NVML", count(bus, two(func(inv *node.GPUInventory) { inv.Devices = inv.Devices[:1]; inv.DeviceCount = 1 }), exp(2)),
			"gpu 0000:3b:00.0", RemedyReboot},
		{"GPU that requires a reset", count(bus, two(func(inv *node.GPUInventory) { inv.Devices[1].Error = "ERROR_RESET_REQUIRED" }), exp(2)),
			"gpu 1 (0000:3b:00.0)", RemedyResetGPU},
		{"GPU in NVML, gone from the PCI bus", count(bus[:1], two(nil), exp(2)), "gpu 1 (0000:3b:00.0)", RemedyReboot},
		{"GPU absent from the PCI bus", count(bus, two(nil), exp(3)), "", RemedyService},
		{"GPU absent from the bus and from gres.conf's 3 files", count(bus, two(nil), withFiles(exp(3), 3)), "", RemedyService},
		{"slurm.conf counts more than gres.conf and the node", count(bus, two(nil), withFiles(exp(3), 2)), "", RemedyAdmin},
		{"more GPUs than slurm.conf says", count(bus, two(nil), exp(1)), "", RemedyAdmin},
		{"driver not loaded", count(bus, node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, exp(2)), "", RemedyReboot},
		{"driver and library apart", count(bus, node.GPUInventory{Init: "ERROR_LIB_RM_VERSION_MISMATCH"}, exp(2)), "", RemedyReboot},
		{"no driver installed", count(bus, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, exp(2)), "", RemedyAdmin},
		{"models do not match Feature=", judgeGPUModels("gpu01", two(nil), []modelClaim{{token: "a100", what: "Feature=a100"}}, nil, models),
			"gpus 0, 1", RemedyAdmin},
	}
}

func deviceRemedyCases() []remedyCase {
	wants := []gresWant{{file: "/dev/nvidia0", minor: 0}, {file: "/dev/nvidia1", minor: 1}, {file: "/dev/nvidiactl", minor: nvidiactlMinor},
		{file: "/dev/nvidia-caps/nvidia-cap21", minor: -1}}
	present := []devAnswer{{dn: charDev(195, 0)}, {dn: charDev(195, 1)}, {dn: charDev(195, 255)}, {dn: charDev(508, 21)}}
	with := func(i int, a devAnswer) []devAnswer {
		out := slices.Clone(present)
		out[i] = a
		return out
	}
	missing := devAnswer{dn: node.DevNode{Missing: true}}
	allMissing := []devAnswer{missing, missing, missing, {dn: charDev(508, 21)}}
	inv := func(mem uint64, sockets, cpus int) Result {
		d := []Detail{judgeInventoryItem(inventoryItem{key: "RealMemory", have: mem, want: 1 << 20, unit: " MiB", moreIsOK: true}),
			judgeInventoryItem(inventoryItem{key: "Sockets", have: uint64(sockets), want: 2}),
			judgeInventoryItem(inventoryItem{key: "CPUs", have: uint64(cpus), want: 224})}
		return Result{Status: worstOf(d), Details: d}
	}
	return []remedyCase{
		{"driver made no device file", judgeGresDevices(wants, allMissing, nil), "/dev/nvidia1", RemedyReboot},
		{"one GPU file missing beside the others (its GPU in NVML)", judgeGresDevices(wants, with(1, missing), nil), "/dev/nvidia1", RemedyReboot},
		{"MIG capability missing", judgeGresDevices(wants, with(3, missing), nil), "/dev/nvidia-caps/nvidia-cap21", RemedyAdmin},
		{"a regular file", judgeGresDevices(wants, with(0, devAnswer{dn: node.DevNode{Type: "file"}}), nil), "/dev/nvidia0", RemedyAdmin},
		{"wrong minor", judgeGresDevices(wants, with(1, devAnswer{dn: charDev(195, 7)}), nil), "/dev/nvidia1", RemedyAdmin},
		{"a DIMM lost", inv(1<<20-1<<15, 2, 224), "RealMemory", RemedyService},
		{"RealMemory a little high", inv(1<<20-1<<10, 2, 224), "RealMemory", RemedyAdmin},
		{"a socket missing", inv(1<<20, 1, 224), "Sockets", RemedyService},
		{"SMT off", inv(1<<20, 2, 112), "CPUs", RemedyAdmin},
	}
}

func linkRemedyCases() []remedyCase {
	table, _ := newNVLinkTable(nil)
	noExcl, _ := newNVLinkExclusions(nil)
	port := func(state, phys string, stateID, physID uint, rate float64, linkLayer ...string) Result {
		ll := "InfiniBand"
		if len(linkLayer) > 0 {
			ll = linkLayer[0]
		}
		d := judgeIBPort(node.IBPort{Device: "mlx5_0", Port: 1, State: state, StateID: stateID, PhysState: phys, PhysStateID: physID,
			Rate: "400 Gb/sec (4X NDR)", RateGbps: rate, LinkLayer: ll}, 400)
		return Result{Status: d.Status, Details: []Detail{d}}
	}
	link, _ := judgeLink(nvmlLink(node.GPU{Index: 3, PCIBusID: "00000000:9B:00.0", PCIe: &node.PCIe{CurLinkWidth: 8, MaxLinkWidth: 16}}, "0000:9b:00.0"), 0, true)
	fm := func(cmds map[string]node.CmdResult, inv node.GPUInventory) Result {
		f := &execFacts{fakeFacts: &fakeFacts{pci: h100PCI(), gpus: inv}, cmds: cmds}
		return fabricManager{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
	}
	cmds := func(key string, r node.CmdResult) map[string]node.CmdResult {
		m := h100Commands()
		m[key] = r
		return m
	}
	inProgress := changeGPU(h100NVML(), 5, func(g *node.GPU) { g.Fabric = &node.Fabric{State: "IN_PROGRESS", Status: "N/A"} })
	return []remedyCase{
		{"NVLink inactive", judgeNVLinks([]node.GPU{{Index: 3, Name: h100Name, PCIBusID: "00000000:9B:00.0", NVLinks: nvlinks(18, 4)}}, table, noExcl),
			"gpu 3 (0000:9b:00.0)", RemedyResetGPU},
		{"PCIe width degraded", Result{Status: link.Status, Details: []Detail{link}}, "gpu 3 (0000:9b:00.0)", RemedyService},
		{"IB port polling", port("DOWN", "Polling", 1, 2, 400), "mlx5_0/1", RemedyService},
		{"IB port disabled", port("DOWN", "Disabled", 1, 3, 400), "mlx5_0/1", RemedyAdmin},
		{"RoCE port without carrier", port("DOWN", "Disabled", 1, 3, 400, "Ethernet"), "mlx5_0/1", RemedyService},
		{"IB port waiting for the subnet manager", port("INIT", "LinkUp", 2, 5, 400), "mlx5_0/1", RemedyAdmin},
		{"IB port slow", port("ACTIVE", "LinkUp", 4, 5, 200), "mlx5_0/1", RemedyService},
		{"FM and driver versions apart", fm(cmds(fmVersionCmd, node.CmdResult{Stdout: "Fabric Manager version is : 535.154.05\n"}), h100NVML()),
			"fabric manager", RemedyAdmin},
		{"FM not installed", fm(map[string]node.CmdResult{fmActiveCmd: {Stdout: "active\n"}}, h100NVML()), "fabric manager", RemedyAdmin},
		{"FM not running", fm(cmds(fmActiveCmd, node.CmdResult{Stdout: "failed\n", ExitCode: 3}), h100NVML()), "service nvidia-fabricmanager", RemedyReboot},
		{"fabric not completed", fm(h100Commands(), inProgress), "gpu 5 (0000:bb:00.0)", RemedyReboot},
		{"versions apart and FM down: admin for the node", fm(cmds(fmVersionCmd, node.CmdResult{Stdout: "Fabric Manager version is : 535.154.05\n"}), inProgress),
			"", RemedyAdmin},
	}
}

func jobRemedyCases() []remedyCase {
	gpu := func(procs []node.Process, used uint64) []jobGPU {
		g := node.GPU{Index: 3, Name: h100Name, PCIBusID: "00000000:9B:00.0", Compute: &node.Compute{Processes: procs}, Memory: &node.Memory{UsedMiB: used}}
		return []jobGPU{{index: 0, file: "/dev/nvidia3", minor: 3, gpu: &g}}
	}
	left := func(g []jobGPU) Result { return judgeJobLeftovers(g, config.ModeEpilog, 1024, 1000, Job{GPUs: "0"}) }
	nccl := func(o ncclOutcome) Result { return judgeNCCL(o) }
	rows := []NCCLRow{{Size: 1 << 32, OutOfPlace: NCCLResult{BusBW: 300}, InPlace: NCCLResult{BusBW: 300}}}
	done := NCCLRun{Rows: rows, AvgBusBW: 100, Validation: 1}
	wrong := NCCLRun{Rows: []NCCLRow{{Size: 1 << 32, OutOfPlace: NCCLResult{BusBW: 400, Wrong: 3}}}, Validation: 1}
	xid := judgeXIDs([]history.XIDLine{{Bus: "0000:9b:00", XID: 79, Message: "GPU has fallen off the bus."}, {Bus: "0000:19:00", XID: 48, Message: "An uncorrectable double bit error"}},
		"", (&xidErrorsConfig{FailXIDs: defaultFailXIDs(), WarnXIDs: defaultWarnXIDs()}).xidVerdicts(), nil)
	return []remedyCase{
		{"a process left after the job", left(gpu([]node.Process{{PID: 4242, UID: 1000, User: "alice"}}, 2048)), "gpu 3 (0000:9b:00.0)", RemedyReboot},
		{"memory held with no process", left(gpu(nil, 4096)), "gpu 3 (0000:9b:00.0)", RemedyResetGPU},
		{"NCCL busbw low", nccl(ncclOutcome{run: done, min: 390, minSource: "min_busbw_gbps", argv: []string{"all_reduce_perf"}}), "", RemedyService},
		{"NCCL wrong data", nccl(ncclOutcome{run: wrong, min: 390, argv: []string{"all_reduce_perf"}}), "4 GiB out of place", RemedyService},
		{"NCCL exited non-zero", nccl(ncclOutcome{run: NCCLRun{}, exit: 1, stderr: "CUDA failure 'initialization error'", argv: []string{"all_reduce_perf"}}), "", RemedyResetGPU},
		{"XID 79 fallen off the bus", xid, "gpu 0000:9b:00", RemedyReboot},
		{"XID 48 double-bit ECC", xid, "gpu 0000:19:00", RemedyResetGPU},
		{"XID 79 and 48: the node needs the reboot", xid, "", RemedyReboot},
	}
}

// TestREADMERemedies holds the manual's remedies page (docs/remedies.md) to remedyTable: its
// table of rows and its list of the built-in fail_xids by remedy are the code's (go test
// ./checks -update rewrites them).
func TestREADMERemedies(t *testing.T) {
	const path = "../docs/remedies.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the remedies page: %v", err)
	}
	readme := string(b)
	var table strings.Builder
	table.WriteString("| failure | remedy | source |\n|---|---|---|\n")
	for _, r := range RemedyTable() {
		checks := "any check"
		if r.Checks != nil {
			checks = "`" + strings.Join(r.Checks, "`, `") + "`"
		}
		cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		fmt.Fprintf(&table, "| %s: %s | `%s` | %s |\n", checks, cell(r.Failure), r.Remedy, cell(r.Source))
	}
	got := readme
	for _, part := range []struct{ begin, end, body string }{
		{"<!-- remedies: generated from checks/remedy.go by go test ./checks -update -->\n", "<!-- end of remedies -->", table.String()},
		{"<!-- xids: generated -->\n", "<!-- end of xids -->", xidDefaultsByRemedy() + ".\n"},
	} {
		i, j := strings.Index(got, part.begin), strings.Index(got, part.end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks %q ... %q", path, part.begin, part.end)
		}
		got = got[:i+len(part.begin)] + part.body + got[j:]
	}
	if got == readme {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s differs from remedyTable: run go test ./checks -run TestREADMERemedies -update and review the diff", path)
}
