//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// mockAPI is api over one of go-nvml's mock servers, with the fabric call (which the mocks
// cannot fake) answered by fabricFn.
type mockAPI struct {
	*server.Server
	fabricFn func(d *server.Device) (nvml.GpuFabricInfo_v3, nvml.Return)
}

func (m mockAPI) fabric(d nvml.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
	return m.fabricFn(d.(*server.Device))
}

// hasSymbol asks the mock server, whose LookupSymbolFunc finds every symbol unless a test
// plays an older driver.
func (m mockAPI) hasSymbol(name string) bool { return m.LookupSymbol(name) == nil }

// lacking makes a LookupSymbolFunc for a library without the given functions.
func lacking(names ...string) func(string) error {
	return func(name string) error {
		if slices.Contains(names, name) {
			return fmt.Errorf("%s: undefined symbol", name)
		}
		return nil
	}
}

// h100Bus are the PCI bus numbers of the 8 GPUs of testdata/snapshots/h100-healthy.
var h100Bus = []int{0x19, 0x3b, 0x4c, 0x5d, 0x9b, 0xbb, 0xcb, 0xdb}

// cBusID is NVML's busId field for s.
func cBusID(s string) [32]int8 {
	var b [32]int8
	for i := range len(s) {
		b[i] = int8(s[i])
	}
	return b
}

// withLinks gives every device of s the PCI info and links the mocks leave unset: bus ids
// of the H100 snapshot and a Gen5 x16 link.
func withLinks(s *server.Server) {
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		bus := fmt.Sprintf("00000000:%02X:00.0", h100Bus[i])
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{Bus: uint32(h100Bus[i]), PciDeviceId: dev.Config.PciDeviceId, BusId: cBusID(bus)}, nvml.SUCCESS
		}
		dev.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		dev.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	}
}

// The healthy H100's framebuffer: what nvmlDeviceGetMemoryInfo_v2 says in bytes, and what
// Source should say in MiB. Used is a little over 1 MiB, to see it rounded down.
const (
	h100TotalMiB    = 81559
	h100ReservedMiB = 537
	h100UsedBytes   = 1<<20 + 12345
)

// h100Links is the number of NVLinks of an H100 SXM5.
const h100Links = 18

// withHealth gives every device of s the health reads the mocks leave unset, as a healthy
// H100 answers them: ECC on without errors, no remapped rows, no page retirement (Ampere and
// later remap rows instead), all NVLinks active, memory v2 and v1, no compute process.
func withHealth(s *server.Server) {
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
		dev.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
		dev.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link >= h100Links {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
			total, reserved := uint64(h100TotalMiB<<20), uint64(h100ReservedMiB<<20)
			return nvml.Memory_v2{Total: total, Reserved: reserved, Used: h100UsedBytes, Free: total - reserved - h100UsedBytes}, nvml.SUCCESS
		}
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			total, used := uint64(h100TotalMiB<<20), uint64(h100ReservedMiB<<20+h100UsedBytes)
			return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
		}
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return []nvml.ProcessInfo{}, nvml.SUCCESS }
	}
}

// healthyH100 is what Source should make of withHealth's reads.
func healthyH100(g *node.GPU) {
	g.ECC = &node.ECC{Enabled: true, PendingEnabled: true,
		VolatileUncorrected: new(uint64(0)), VolatileCorrected: new(uint64(0)), AggregateUncorrected: new(uint64(0))}
	g.RemappedRows = &node.RemappedRows{}
	for l := range h100Links {
		g.NVLinks = append(g.NVLinks, node.NVLink{Link: l, Active: true})
	}
	g.Memory = &node.Memory{TotalMiB: h100TotalMiB, UsedMiB: 1, ReservedMiB: h100ReservedMiB}
	g.Compute = &node.Compute{Processes: []node.Process{}}
}

func fabricCompleted(*server.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
	return fabricInfo(nvml.GPU_FABRIC_STATE_COMPLETED, nvml.SUCCESS), nvml.SUCCESS
}

// fabricInfo is a fabric answer without health (a driver before the health mask).
func fabricInfo(state uint8, status nvml.Return) nvml.GpuFabricInfo_v3 {
	return nvml.GpuFabricInfo_v3{State: state, Status: uint32(status)}
}

// newH100 is dgxh100 with withLinks, withHealth and withSignals.
func newH100() *server.Server {
	s := dgxh100.New()
	withLinks(s)
	withHealth(s)
	withSignals(s)
	return s
}

// wantH100 is what Source should make of newH100 with a completed fabric.
func wantH100(s *server.Server) node.GPUInventory {
	inv := node.GPUInventory{Init: "SUCCESS", DriverVersion: "550.54.15", CUDADriverVersion: 12040, DeviceCount: 8, Fields: node.AllGPUFields}
	for i, d := range s.Devices {
		g := node.GPU{
			Index: i, MinorNumber: i, UUID: d.(*server.Device).UUID, Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", h100Bus[i]),
			PCIe:     &node.PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric:   &node.Fabric{State: "COMPLETED", Status: "SUCCESS"},
		}
		healthyH100(&g)
		healthySignals(&g, i)
		inv.Devices = append(inv.Devices, g)
	}
	return inv
}

func TestGPUsH100(t *testing.T) {
	s := newH100()
	var shutdowns atomic.Int32
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	src := New(withAPI(mockAPI{s, fabricCompleted}))
	got, err := src.GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantH100(s), got); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if n := shutdowns.Load(); n != 1 {
		t.Errorf("nvmlShutdown ran %d times, want 1", n)
	}
	// A second call answers from the same reading, as a fresh copy.
	got.Devices[0].PCIe.CurLinkWidth = 1
	*got.Devices[0].ECC.VolatileCorrected = 1
	got.Devices[0].NVLinks[0].Active = false
	got.Devices[0].Memory.UsedMiB = 1 << 10
	again, err := src.GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantH100(s), again); diff != "" {
		t.Errorf("second GPUs (-want +got):\n%s", diff)
	}
	if n := shutdowns.Load(); n != 1 {
		t.Errorf("after two calls nvmlShutdown ran %d times, want 1 (one reading)", n)
	}
}

func TestGPUsDegraded(t *testing.T) {
	s := newH100()
	devs := s.Devices
	dev := func(i int) *server.Device { return devs[i].(*server.Device) }

	// GPU 3 fell off the bus: no handle.
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 3 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return devs[i], nvml.SUCCESS
	}
	// GPU 5 trained at x8.
	dev(5).GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
	// GPU 6 is lost after its handle was had: its reads stop at the first lost answer.
	var gpu6Reads atomic.Int32
	dev(6).GetUUIDFunc = func() (string, nvml.Return) { gpu6Reads.Add(1); return "", nvml.ERROR_GPU_IS_LOST }
	dev(6).GetNameFunc = func() (string, nvml.Return) { gpu6Reads.Add(1); return "late", nvml.SUCCESS }
	// GPU 7 cannot say its minor number or link generations.
	dev(7).GetMinorNumberFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION }
	dev(7).GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	dev(7).GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	// Fabric: GPU 1 still registering, GPU 2 registered with an error, GPU 4's query failed,
	// GPU 5 registered with a route unhealthy (v3: mask and summary), GPU 7 reports a state
	// this nodecheck does not know.
	fabric := func(d *server.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
		switch d.Index {
		case 1:
			return fabricInfo(nvml.GPU_FABRIC_STATE_IN_PROGRESS, nvml.SUCCESS), nvml.SUCCESS
		case 2:
			return fabricInfo(nvml.GPU_FABRIC_STATE_COMPLETED, nvml.ERROR_INSUFFICIENT_RESOURCES), nvml.SUCCESS
		case 4:
			return nvml.GpuFabricInfo_v3{}, nvml.ERROR_UNKNOWN
		case 5:
			info := fabricInfo(nvml.GPU_FABRIC_STATE_COMPLETED, nvml.SUCCESS)
			info.HealthMask, info.HealthSummary = 0x9a, nvml.GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY
			return info, nvml.SUCCESS
		case 7:
			return fabricInfo(9, nvml.SUCCESS), nvml.SUCCESS
		}
		return fabricCompleted(d)
	}

	got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	want := wantH100(s)
	want.Devices[1].Fabric = &node.Fabric{State: "IN_PROGRESS", Status: "SUCCESS"}
	want.Devices[2].Fabric = &node.Fabric{State: "COMPLETED", Status: "ERROR_INSUFFICIENT_RESOURCES"}
	want.Devices[3] = node.GPU{Index: 3, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"}
	want.Devices[4].Fabric = &node.Fabric{State: "UNKNOWN", Status: "ERROR_UNKNOWN"}
	want.Devices[5].PCIe.CurLinkWidth = 8
	want.Devices[5].Fabric.Health = node.FabricHealth{Summary: "UNHEALTHY",
		DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "TRUE", AccessTimeoutRecovery: "FALSE"}
	want.Devices[6] = node.GPU{Index: 6, MinorNumber: 6, Error: "ERROR_GPU_IS_LOST"}
	want.Devices[7].MinorNumber = -1
	want.Devices[7].PCIe = &node.PCIe{CurLinkWidth: 16, MaxLinkWidth: 16}
	want.Devices[7].Fabric = &node.Fabric{State: "STATE_9", Status: "SUCCESS"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if n := gpu6Reads.Load(); n != 1 {
		t.Errorf("GPU 6 was read %d times after its UUID said it is lost, want 1 read in all", n)
	}
}

// TestGPUsA100 reads an A100 server: no fabric information (pre-Hopper NVML says
// NOT_SUPPORTED) and, here, no PCIe link information either.
func TestGPUsA100(t *testing.T) {
	s := dgxa100.New()
	withHealth(s)
	withSignals(s)
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		notSupported := func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetCurrPcieLinkWidthFunc, dev.GetMaxPcieLinkWidthFunc = notSupported, notSupported
		dev.GetCurrPcieLinkGenerationFunc, dev.GetMaxPcieLinkGenerationFunc = notSupported, notSupported
	}
	states := []func() (nvml.GpuFabricInfo_v3, nvml.Return){
		func() (nvml.GpuFabricInfo_v3, nvml.Return) { return nvml.GpuFabricInfo_v3{}, nvml.ERROR_NOT_SUPPORTED },
		func() (nvml.GpuFabricInfo_v3, nvml.Return) {
			return nvml.GpuFabricInfo_v3{}, nvml.ERROR_FUNCTION_NOT_FOUND
		},
		func() (nvml.GpuFabricInfo_v3, nvml.Return) {
			return fabricInfo(nvml.GPU_FABRIC_STATE_NOT_SUPPORTED, nvml.SUCCESS), nvml.SUCCESS
		},
	}
	fabric := func(d *server.Device) (nvml.GpuFabricInfo_v3, nvml.Return) { return states[d.Index%len(states)]() }
	got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	if got.Init != "SUCCESS" || got.DeviceCount != 8 || len(got.Devices) != 8 {
		t.Fatalf("GPUs = %+v, want 8 devices", got)
	}
	for _, g := range got.Devices {
		if g.Fabric != nil || g.PCIe != nil || g.Error != "" || !strings.Contains(g.Name, "A100-SXM4") {
			t.Errorf("GPU %d = %+v, want an A100 without fabric or link information", g.Index, g)
		}
	}
}

// healthCalls counts the health reads made of d, by go-nvml method.
func healthCalls(d *server.Device) map[string]int {
	return map[string]int{
		"GetEccMode":                   len(d.GetEccModeCalls()),
		"GetTotalEccErrors":            len(d.GetTotalEccErrorsCalls()),
		"GetRemappedRows":              len(d.GetRemappedRowsCalls()),
		"GetRetiredPages":              len(d.GetRetiredPagesCalls()),
		"GetRetiredPagesPendingStatus": len(d.GetRetiredPagesPendingStatusCalls()),
		"GetNvLinkState":               len(d.GetNvLinkStateCalls()),
		"GetMemoryInfo_v2":             len(d.GetMemoryInfo_v2Calls()),
		"GetMemoryInfo":                len(d.GetMemoryInfoCalls()),
		"GetComputeRunningProcesses":   len(d.GetComputeRunningProcessesCalls()),
	}
}

// TestReadDeviceHealth reads one GPU whose health reads answer as each case sets them, on
// top of a healthy H100 (withHealth), and checks both the GPU read and the calls made.
func TestReadDeviceHealth(t *testing.T) {
	notSupported := func(d *server.Device) {
		d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
		d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_NOT_SUPPORTED }
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NOT_SUPPORTED }
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	}
	// nvLinks makes a GetNvLinkStateFunc from one answer per link; past them, the link index
	// is invalid.
	type answer struct {
		state nvml.EnableState
		ret   nvml.Return
	}
	up, down := answer{nvml.FEATURE_ENABLED, nvml.SUCCESS}, answer{nvml.FEATURE_DISABLED, nvml.SUCCESS}
	nvLinks := func(links ...answer) func(int) (nvml.EnableState, nvml.Return) {
		return func(l int) (nvml.EnableState, nvml.Return) {
			if l >= len(links) {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return links[l].state, links[l].ret
		}
	}
	a100Links := func(down ...int) []node.NVLink {
		var out []node.NVLink
		for l := range 12 {
			out = append(out, node.NVLink{Link: l, Active: !slices.Contains(down, l)})
		}
		return out
	}

	tests := []struct {
		name  string
		setup func(s *server.Server, d *server.Device)
		want  func(g *node.GPU)      // changes to the healthy H100
		calls func(c map[string]int) // changes to the healthy H100's calls
	}{
		{
			name: "healthy H100",
		},
		{
			name: "ECC on with error counts",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetTotalEccErrorsFunc = func(e nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
					switch {
					case e == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && c == nvml.VOLATILE_ECC:
						return 2, nvml.SUCCESS
					case e == nvml.MEMORY_ERROR_TYPE_CORRECTED && c == nvml.VOLATILE_ECC:
						return 117, nvml.SUCCESS
					case e == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && c == nvml.AGGREGATE_ECC:
						return 5, nvml.SUCCESS
					}
					return 0, nvml.ERROR_INVALID_ARGUMENT
				}
			},
			want: func(g *node.GPU) {
				g.ECC.VolatileUncorrected, g.ECC.VolatileCorrected, g.ECC.AggregateUncorrected = new(uint64(2)), new(uint64(117)), new(uint64(5))
			},
		},
		{
			name: "an ECC counter NVML will not give stays nil",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetTotalEccErrorsFunc = func(_ nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
					if c == nvml.AGGREGATE_ECC {
						return 0, nvml.ERROR_NO_PERMISSION
					}
					return 0, nvml.SUCCESS
				}
			},
			want: func(g *node.GPU) { g.ECC.AggregateUncorrected = nil },
		},
		{
			name: "ECC off, on after the next reset: no counters read",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
					return nvml.FEATURE_DISABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
			},
			want:  func(g *node.GPU) { g.ECC = &node.ECC{PendingEnabled: true} },
			calls: func(c map[string]int) { c["GetTotalEccErrors"] = 0 },
		},
		{
			name: "ECC mode unreadable",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) { return 0, 0, nvml.ERROR_UNKNOWN }
			},
			want:  func(g *node.GPU) { g.ECC = nil },
			calls: func(c map[string]int) { c["GetTotalEccErrors"] = 0 },
		},
		{
			name:  "consumer GPU: every health read NOT_SUPPORTED",
			setup: func(_ *server.Server, d *server.Device) { notSupported(d) },
			want: func(g *node.GPU) {
				g.ECC, g.RemappedRows, g.RetiredPages, g.NVLinks, g.Memory, g.Compute = nil, nil, nil, nil, nil, nil
			},
			calls: func(c map[string]int) {
				c["GetTotalEccErrors"] = 0
				c["GetNvLinkState"] = nvml.NVLINK_MAX_LINKS // no link is invalid, none supported
				c["GetMemoryInfo"] = 1                      // after v2 failed
			},
		},
		{
			name: "row remap pending",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 1, true, false, nvml.SUCCESS }
			},
			want: func(g *node.GPU) { g.RemappedRows = &node.RemappedRows{Uncorrectable: 1, Pending: true} },
		},
		{
			name: "row remap failed",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 3, 8, false, true, nvml.SUCCESS }
			},
			want: func(g *node.GPU) { g.RemappedRows = &node.RemappedRows{Correctable: 3, Uncorrectable: 8, Failed: true} },
		},
		{
			name: "remapped rows: MIG with active instances",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
			},
			want: func(g *node.GPU) { g.RemappedRows = nil },
		},
		{
			name: "Volta: pages retired, one pending; no row remapping",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
				d.GetRetiredPagesFunc = func(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
					if c == nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR {
						return []uint64{0x1f000}, nvml.SUCCESS
					}
					return []uint64{0x2a000, 0x2b000}, nvml.SUCCESS
				}
				d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
			},
			want: func(g *node.GPU) {
				g.RemappedRows = nil
				g.RetiredPages = &node.RetiredPages{SingleBit: 2, DoubleBit: 1, Pending: true}
			},
			calls: func(c map[string]int) { c["GetRetiredPages"], c["GetRetiredPagesPendingStatus"] = 2, 1 },
		},
		{
			name: "retired pages: a count NVML will not give is no zero",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRetiredPagesFunc = func(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
					if c == nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR {
						return nil, nvml.ERROR_UNKNOWN
					}
					return nil, nvml.SUCCESS
				}
			},
			calls: func(c map[string]int) { c["GetRetiredPages"] = 2 },
		},
		{
			name: "A100: 12 NVLinks, link 3 down, links past 12 invalid",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetNvLinkStateFunc = nvLinks(up, up, up, down, up, up, up, up, up, up, up, up)
			},
			want:  func(g *node.GPU) { g.NVLinks = a100Links(3) },
			calls: func(c map[string]int) { c["GetNvLinkState"] = 13 },
		},
		{
			name: "links NVML does not support or cannot read are left out",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetNvLinkStateFunc = nvLinks(up, answer{0, nvml.ERROR_NOT_SUPPORTED}, up, up, answer{0, nvml.ERROR_UNKNOWN}, down)
			},
			want: func(g *node.GPU) {
				g.NVLinks = []node.NVLink{{Link: 0, Active: true}, {Link: 2, Active: true}, {Link: 3, Active: true}, {Link: 5}}
			},
			calls: func(c map[string]int) { c["GetNvLinkState"] = 7 },
		},
		{
			name: "no NVLink: link 0 invalid",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetNvLinkStateFunc = nvLinks()
			},
			want:  func(g *node.GPU) { g.NVLinks = nil },
			calls: func(c map[string]int) { c["GetNvLinkState"] = 1 },
		},
		{
			name:  "memory: v1 where the library has no v2",
			setup: func(s *server.Server, _ *server.Device) { s.LookupSymbolFunc = lacking("nvmlDeviceGetMemoryInfo_v2") },
			want: func(g *node.GPU) {
				g.Memory = &node.Memory{TotalMiB: h100TotalMiB, UsedMiB: h100ReservedMiB + 1}
			},
			calls: func(c map[string]int) { c["GetMemoryInfo_v2"], c["GetMemoryInfo"] = 0, 1 },
		},
		{
			name: "memory: v1 where v2 fails",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_UNKNOWN }
			},
			want: func(g *node.GPU) {
				g.Memory = &node.Memory{TotalMiB: h100TotalMiB, UsedMiB: h100ReservedMiB + 1}
			},
			calls: func(c map[string]int) { c["GetMemoryInfo"] = 1 },
		},
		{
			name: "old driver: no remapped rows and no compute process call at all",
			setup: func(s *server.Server, _ *server.Device) {
				s.LookupSymbolFunc = lacking("nvmlDeviceGetRemappedRows", "nvmlDeviceGetComputeRunningProcesses",
					"nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3")
			},
			want:  func(g *node.GPU) { g.RemappedRows, g.Compute = nil, nil },
			calls: func(c map[string]int) { c["GetRemappedRows"], c["GetComputeRunningProcesses"] = 0, 0 },
		},
		{
			name: "old driver: only the unversioned compute process call",
			setup: func(s *server.Server, _ *server.Device) {
				s.LookupSymbolFunc = lacking("nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3")
			},
		},
		{
			name: "compute processes, one whose memory NVML cannot tell",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
					return []nvml.ProcessInfo{
						{Pid: 4242, UsedGpuMemory: 2<<30 + 5, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF},
						{Pid: 77, UsedGpuMemory: ^uint64(0), GpuInstanceId: 1, ComputeInstanceId: 0}, // NVML_VALUE_NOT_AVAILABLE
					}, nvml.SUCCESS
				}
			},
			want: func(g *node.GPU) {
				g.Compute = &node.Compute{Processes: []node.Process{{PID: 4242, UsedMiB: 2048, UID: -1}, {PID: 77, UID: -1}}}
			},
		},
		{
			name: "no compute process, as a nil list",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
			},
		},
		{
			name: "compute processes not listable",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NO_PERMISSION }
			},
			want: func(g *node.GPU) { g.Compute = nil },
		},
		{
			name: "GPU lost at the retired pages: reading stops",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
			},
			want: func(g *node.GPU) {
				g.NVLinks, g.Memory, g.Compute, g.NVLinkErrors = nil, nil, nil, nil
				noSignals(g)
				g.Error = "ERROR_GPU_IS_LOST"
			},
			calls: func(c map[string]int) {
				c["GetNvLinkState"], c["GetMemoryInfo_v2"], c["GetComputeRunningProcesses"] = 0, 0, 0
			},
		},
		{
			name: "GPU lost between ECC counters: what was read is kept",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetTotalEccErrorsFunc = func(_ nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
					if c == nvml.AGGREGATE_ECC {
						return 0, nvml.ERROR_GPU_IS_LOST
					}
					return 1, nvml.SUCCESS
				}
			},
			want: func(g *node.GPU) {
				g.ECC = &node.ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: new(uint64(1)), VolatileCorrected: new(uint64(1))}
				g.RemappedRows, g.NVLinks, g.Memory, g.Compute, g.NVLinkErrors = nil, nil, nil, nil, nil
				noSignals(g)
				g.Error = "ERROR_GPU_IS_LOST"
			},
			calls: func(c map[string]int) {
				c["GetRemappedRows"], c["GetRetiredPages"], c["GetNvLinkState"], c["GetMemoryInfo_v2"], c["GetComputeRunningProcesses"] = 0, 0, 0, 0, 0
			},
		},
		{
			name: "reset required halfway through the links: no partial list",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetNvLinkStateFunc = nvLinks(up, up, up, answer{0, nvml.ERROR_RESET_REQUIRED}, up)
			},
			want: func(g *node.GPU) {
				g.NVLinks, g.Memory, g.Compute, g.NVLinkErrors = nil, nil, nil, nil
				noSignals(g)
				g.Error = "ERROR_RESET_REQUIRED"
			},
			calls: func(c map[string]int) {
				c["GetNvLinkState"], c["GetMemoryInfo_v2"], c["GetComputeRunningProcesses"] = 4, 0, 0
			},
		},
		{
			name: "GPU lost at the memory v2 read: no v1 fallback",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_GPU_IS_LOST }
			},
			want: func(g *node.GPU) {
				g.Memory, g.Compute = nil, nil
				noSignals(g)
				g.Error = "ERROR_GPU_IS_LOST"
			},
			calls: func(c map[string]int) { c["GetComputeRunningProcesses"] = 0 },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newH100()
			d := s.Devices[0].(*server.Device)
			if tc.setup != nil {
				tc.setup(s, d)
			}
			want := wantH100(s).Devices[0]
			if tc.want != nil {
				tc.want(&want)
			}
			// The NVLink error counters cover the active links read.
			want.NVLinkErrors = nil
			if active := slices.IndexFunc(want.NVLinks, func(l node.NVLink) bool { return l.Active }); active >= 0 {
				n := 0
				for _, l := range want.NVLinks {
					if l.Active {
						n++
					}
				}
				want.NVLinkErrors = &node.NVLinkErrors{Links: n}
			}
			wantCalls := map[string]int{
				"GetEccMode": 1, "GetTotalEccErrors": 3, "GetRemappedRows": 1, "GetRetiredPages": 1,
				"GetRetiredPagesPendingStatus": 0, "GetNvLinkState": h100Links + 1, "GetMemoryInfo_v2": 1,
				"GetMemoryInfo": 0, "GetComputeRunningProcesses": 1,
			}
			if tc.calls != nil {
				tc.calls(wantCalls)
			}
			got := readDevice(mockAPI{s, fabricCompleted}, 0, node.AllGPUFields)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("readDevice (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCalls, healthCalls(d)); diff != "" {
				t.Errorf("NVML calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGPUsInitFails: after a failed Init nothing else may be called, not even Shutdown: on a
// real node the dynamic linker would kill the process.
func TestGPUsInitFails(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_NO_PERMISSION, nvml.Return(77)} {
		t.Run(returnName(ret), func(t *testing.T) {
			s := dgxh100.New()
			s.InitFunc = func() nvml.Return { return ret }
			called := func(name string) { t.Errorf("%s called after a failed Init", name) }
			s.ShutdownFunc = func() nvml.Return { called("Shutdown"); return nvml.SUCCESS }
			s.SystemGetDriverVersionFunc = func() (string, nvml.Return) { called("SystemGetDriverVersion"); return "", nvml.SUCCESS }
			s.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { called("SystemGetCudaDriverVersion"); return 0, nvml.SUCCESS }
			s.DeviceGetCountFunc = func() (int, nvml.Return) { called("DeviceGetCount"); return 0, nvml.SUCCESS }
			s.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { called("DeviceGetHandleByIndex"); return nil, nvml.SUCCESS }
			s.LookupSymbolFunc = func(string) error { called("LookupSymbol"); return nil }
			fabric := func(*server.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
				called("fabric")
				return nvml.GpuFabricInfo_v3{}, nvml.SUCCESS
			}
			got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background(), node.AllGPUFields)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(node.GPUInventory{Init: returnName(ret)}, got); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGPUsCountFails(t *testing.T) {
	s := newH100()
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	var shutdowns atomic.Int32
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	got, err := New(withAPI(mockAPI{s, fabricCompleted})).GPUs(context.Background(), node.AllGPUFields)
	if err == nil || !strings.Contains(err.Error(), "count GPUs: nvmlDeviceGetCount: ERROR_UNKNOWN") {
		t.Errorf("GPUs error = %v, want one naming nvmlDeviceGetCount", err)
	}
	if got.Init != "SUCCESS" || got.DriverVersion != "550.54.15" {
		t.Errorf("GPUs = %+v, want what was read before the count", got)
	}
	if shutdowns.Load() != 1 {
		t.Error("nvmlShutdown did not run after a successful Init")
	}
}

// TestGPUsDeadline: an NVML call that blocks (a wedged GPU) does not hold the caller past
// its deadline, and later calls wait on the same reading instead of starting another.
func TestGPUsDeadline(t *testing.T) {
	s := newH100()
	release := make(chan struct{})
	var inits atomic.Int32
	s.InitFunc = func() nvml.Return {
		inits.Add(1)
		<-release
		return nvml.SUCCESS
	}
	src := New(withAPI(mockAPI{s, fabricCompleted}))
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := src.GPUs(ctx, node.AllGPUFields)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wedged GPU") {
			t.Errorf("call %d: GPUs = %v, want context.DeadlineExceeded saying why", i, err)
		}
		if e := time.Since(start); e > 2*time.Second {
			t.Errorf("call %d: GPUs returned after %v, want about 50ms", i, e)
		}
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("nvmlInit ran %d times, want 1", n)
	}
	close(release) // the wedge clears: the reading finishes, and the next call gets it
	got, err := src.GPUs(context.Background(), node.AllGPUFields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantH100(s), got); diff != "" {
		t.Errorf("GPUs after the wedge (-want +got):\n%s", diff)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.GPUs(cancelled, node.AllGPUFields); !errors.Is(err, context.Canceled) {
		t.Errorf("GPUs with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestGPUsPanic: a panic inside the reading (a mock without a function, a go-nvml bug)
// becomes an error rather than killing a process whose goroutine may have been abandoned.
func TestGPUsPanic(t *testing.T) {
	s := dgxh100.New() // GetCurrPcieLinkWidthFunc unset: the mock panics
	_, err := New(withAPI(mockAPI{s, fabricCompleted})).GPUs(context.Background(), node.AllGPUFields)
	if err == nil || !strings.Contains(err.Error(), "read NVML: panic:") {
		t.Errorf("GPUs = %v, want the panic as an error", err)
	}
}

func TestReturnName(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		// Once a real library is loaded, Return.String asks it, in prose.
		t.Skip("an NVIDIA driver is present: go-nvml's names are not the oracle here")
	}
	for r := nvml.Return(0); r <= 40; r++ {
		if want := r.String(); !strings.HasPrefix(want, "unknown return value") {
			if got := returnName(r); got != want {
				t.Errorf("returnName(%d) = %q, want %q", r, got, want)
			}
		}
	}
	for _, tc := range []struct {
		r    nvml.Return
		want string
	}{
		{nvml.SUCCESS, "SUCCESS"},
		{nvml.ERROR_LIBRARY_NOT_FOUND, "ERROR_LIBRARY_NOT_FOUND"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "ERROR_DRIVER_NOT_LOADED"},
		{nvml.ERROR_GPU_IS_LOST, "ERROR_GPU_IS_LOST"},
		{nvml.ERROR_UNKNOWN, "ERROR_UNKNOWN"},
		{nvml.Return(31), "RETURN_31"},
		{nvml.Return(-1), "RETURN_-1"},
	} {
		if got := returnName(tc.r); got != tc.want {
			t.Errorf("returnName(%d) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestFabricStateName(t *testing.T) {
	for _, tc := range []struct {
		s    uint8
		want string
	}{
		{0, "NOT_SUPPORTED"}, {1, "NOT_STARTED"}, {2, "IN_PROGRESS"}, {3, "COMPLETED"}, {4, "STATE_4"}, {255, "STATE_255"},
	} {
		if got := fabricStateName(tc.s); got != tc.want {
			t.Errorf("fabricStateName(%d) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestBusID(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   [32]int8
		want string
	}{
		{"nvml form", cBusID("00000000:19:00.0"), "00000000:19:00.0"},
		{"empty", [32]int8{}, ""},
		{"full, no NUL", func() (b [32]int8) {
			for i := range b {
				b[i] = 'f'
			}
			return b
		}(), strings.Repeat("f", 32)},
		{"stops at the first NUL", [32]int8{'a', 0, 'b'}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busID(tc.in); got != tc.want {
				t.Errorf("busID = %q, want %q", got, tc.want)
			}
		})
	}
}
