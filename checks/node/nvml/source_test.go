//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	fabricFn func(d *server.Device) (uint8, uint32, nvml.Return)
}

func (m mockAPI) fabric(d nvml.Device) (uint8, uint32, nvml.Return) {
	return m.fabricFn(d.(*server.Device))
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

func fabricCompleted(*server.Device) (uint8, uint32, nvml.Return) {
	return nvml.GPU_FABRIC_STATE_COMPLETED, uint32(nvml.SUCCESS), nvml.SUCCESS
}

// wantH100 is what Source should make of dgxh100 with withLinks and a completed fabric.
func wantH100(s *server.Server) node.GPUInventory {
	inv := node.GPUInventory{Init: "SUCCESS", DriverVersion: "550.54.15", CUDADriverVersion: 12040, DeviceCount: 8}
	for i, d := range s.Devices {
		inv.Devices = append(inv.Devices, node.GPU{
			Index: i, MinorNumber: i, UUID: d.(*server.Device).UUID, Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", h100Bus[i]),
			PCIe:     &node.PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric:   &node.Fabric{State: "COMPLETED", Status: "SUCCESS"},
		})
	}
	return inv
}

func TestGPUsH100(t *testing.T) {
	s := dgxh100.New()
	withLinks(s)
	var shutdowns atomic.Int32
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	src := New(withAPI(mockAPI{s, fabricCompleted}))
	got, err := src.GPUs(context.Background())
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
	again, err := src.GPUs(context.Background())
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
	s := dgxh100.New()
	withLinks(s)
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
	// GPU 7 reports a state this nodecheck does not know.
	fabric := func(d *server.Device) (uint8, uint32, nvml.Return) {
		switch d.Index {
		case 1:
			return nvml.GPU_FABRIC_STATE_IN_PROGRESS, uint32(nvml.SUCCESS), nvml.SUCCESS
		case 2:
			return nvml.GPU_FABRIC_STATE_COMPLETED, uint32(nvml.ERROR_INSUFFICIENT_RESOURCES), nvml.SUCCESS
		case 4:
			return 0, 0, nvml.ERROR_UNKNOWN
		case 7:
			return 9, uint32(nvml.SUCCESS), nvml.SUCCESS
		}
		return fabricCompleted(d)
	}

	got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := wantH100(s)
	want.Devices[1].Fabric = &node.Fabric{State: "IN_PROGRESS", Status: "SUCCESS"}
	want.Devices[2].Fabric = &node.Fabric{State: "COMPLETED", Status: "ERROR_INSUFFICIENT_RESOURCES"}
	want.Devices[3] = node.GPU{Index: 3, MinorNumber: -1, Error: "ERROR_GPU_IS_LOST"}
	want.Devices[4].Fabric = &node.Fabric{State: "UNKNOWN", Status: "ERROR_UNKNOWN"}
	want.Devices[5].PCIe.CurLinkWidth = 8
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
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		notSupported := func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetCurrPcieLinkWidthFunc, dev.GetMaxPcieLinkWidthFunc = notSupported, notSupported
		dev.GetCurrPcieLinkGenerationFunc, dev.GetMaxPcieLinkGenerationFunc = notSupported, notSupported
	}
	states := []func() (uint8, uint32, nvml.Return){
		func() (uint8, uint32, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
		func() (uint8, uint32, nvml.Return) { return 0, 0, nvml.ERROR_FUNCTION_NOT_FOUND },
		func() (uint8, uint32, nvml.Return) {
			return nvml.GPU_FABRIC_STATE_NOT_SUPPORTED, uint32(nvml.SUCCESS), nvml.SUCCESS
		},
	}
	fabric := func(d *server.Device) (uint8, uint32, nvml.Return) { return states[d.Index%len(states)]() }
	got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background())
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
			fabric := func(*server.Device) (uint8, uint32, nvml.Return) { called("fabric"); return 0, 0, nvml.SUCCESS }
			got, err := New(withAPI(mockAPI{s, fabric})).GPUs(context.Background())
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
	s := dgxh100.New()
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	var shutdowns atomic.Int32
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	got, err := New(withAPI(mockAPI{s, fabricCompleted})).GPUs(context.Background())
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
	s := dgxh100.New()
	withLinks(s)
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
		_, err := src.GPUs(ctx)
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
	got, err := src.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantH100(s), got); diff != "" {
		t.Errorf("GPUs after the wedge (-want +got):\n%s", diff)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.GPUs(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("GPUs with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestGPUsPanic: a panic inside the reading (a mock without a function, a go-nvml bug)
// becomes an error rather than killing a process whose goroutine may have been abandoned.
func TestGPUsPanic(t *testing.T) {
	s := dgxh100.New() // GetCurrPcieLinkWidthFunc unset: the mock panics
	_, err := New(withAPI(mockAPI{s, fabricCompleted})).GPUs(context.Background())
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
