//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// h100Switches are the PCI bus numbers of the 4 NVSwitches of testdata/snapshots/h100-healthy
// (10de:22a3 at 0000:83:00.0 to 0000:86:00.0).
var h100Switches = []int{0x83, 0x84, 0x85, 0x86}

// switchOf is the NVSwitch an HGX H100 GPU's link leads to in these tests: links 0-4 to the
// first, 5-8 to the second, 9-12 to the third, 13-17 to the fourth (5, 4, 4 and 5 links, as
// HGX H100 8-GPU boards wire the four third-generation NVSwitches). The split is the board's;
// which link goes where is made up for the tests.
func switchOf(link int) int {
	switch {
	case link < 5:
		return 0
	case link < 9:
		return 1
	case link < 13:
		return 2
	}
	return 3
}

// withSwitchLinks wires every GPU of s to the NVSwitches: remote bus and type SWITCH.
func withSwitchLinks(s *server.Server) {
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			if link >= h100Links {
				return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.PciInfo{BusId: cBusID(fmt.Sprintf("00000000:%02X:00.0", h100Switches[switchOf(link)]))}, nvml.SUCCESS
		}
		dev.GetNvLinkRemoteDeviceTypeFunc = func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		}
	}
}

// wantSwitchLinks is what NVLinkTopology should make of withSwitchLinks on newH100.
func wantSwitchLinks() node.NVLinkTopology {
	t := node.NVLinkTopology{Init: "SUCCESS"}
	for i := range 8 {
		g := node.GPULinkEnds{Index: i, MinorNumber: i, PCIBusID: fmt.Sprintf("00000000:%02X:00.0", h100Bus[i])}
		for l := range h100Links {
			g.Links = append(g.Links, node.NVLinkEnd{Link: l, RemoteBusID: fmt.Sprintf("00000000:%02X:00.0", h100Switches[switchOf(l)]), RemoteType: "SWITCH"})
		}
		t.Devices = append(t.Devices, g)
	}
	return t
}

func TestNVLinkTopologyNVSwitch(t *testing.T) {
	s := newH100()
	withSwitchLinks(s)
	var inits, shutdowns atomic.Int32
	s.InitFunc = func() nvml.Return { inits.Add(1); return nvml.SUCCESS }
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	src := New(withAPI(mockAPI{s, fabricCompleted}))
	got, err := src.NVLinkTopology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSwitchLinks(), got); diff != "" {
		t.Errorf("NVLinkTopology (-want +got):\n%s", diff)
	}
	// A second call answers from the same session, as a fresh copy.
	got.Devices[0].Links[0].RemoteBusID = "changed"
	again, err := src.NVLinkTopology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSwitchLinks(), again); diff != "" {
		t.Errorf("second NVLinkTopology (-want +got):\n%s", diff)
	}
	if inits.Load() != 1 || shutdowns.Load() != 1 {
		t.Errorf("nvmlInit %d times and nvmlShutdown %d, want one session", inits.Load(), shutdowns.Load())
	}
	// Per GPU: every link index's state (past the 18th NVML says ERROR_INVALID_ARGUMENT, and
	// the walk goes on, as Slurm's does), and the far end and its type of each of the 18
	// active links.
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		calls := []int{len(dev.GetNvLinkStateCalls()), len(dev.GetNvLinkRemotePciInfoCalls()), len(dev.GetNvLinkRemoteDeviceTypeCalls())}
		if diff := cmp.Diff([]int{nvml.NVLINK_MAX_LINKS, 18, 18}, calls); diff != "" {
			t.Errorf("GPU %d: calls to GetNvLinkState, GetNvLinkRemotePciInfo, GetNvLinkRemoteDeviceType (-want +got):\n%s", dev.Index, diff)
		}
	}
}

// TestGPUsReadsNoFarEnd holds the inventory reading to what it has always read: a run whose
// checks never ask for the NVLink topology makes none of its calls.
func TestGPUsReadsNoFarEnd(t *testing.T) {
	s := newH100()
	withSwitchLinks(s)
	if _, err := New(withAPI(mockAPI{s, fabricCompleted})).GPUs(context.Background(), node.AllGPUFields); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		if n := len(dev.GetNvLinkRemotePciInfoCalls()) + len(dev.GetNvLinkRemoteDeviceTypeCalls()); n != 0 {
			t.Errorf("GPU %d: GPUs made %d calls for NVLink far ends, want none", dev.Index, n)
		}
	}
}

// TestNVLinkTopologyDirect is four GPUs linked to each other without NVSwitches (HGX A100
// 4-GPU: every pair by 4 links), on a driver without nvmlDeviceGetNvLinkRemoteDeviceType,
// with one GPU whose links are down, one whose far ends cannot be read, and one lost halfway.
func TestNVLinkTopologyDirect(t *testing.T) {
	s := newH100()
	s.Devices = s.Devices[:4]
	bus := func(i int) string { return fmt.Sprintf("00000000:%02X:00.0", h100Bus[i]) }
	// peer is the GPU at the far end of GPU i's link l: 12 links, 4 to each other GPU.
	peer := func(i, l int) int { return (i + 1 + l/4) % 4 }
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		i := dev.Index
		dev.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			switch {
			case l >= 12:
				return 0, nvml.ERROR_INVALID_ARGUMENT
			case i == 1:
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			case i == 3 && l == 6:
				return 0, nvml.ERROR_GPU_IS_LOST
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
			if i == 2 && l%2 == 1 {
				return nvml.PciInfo{}, nvml.ERROR_UNKNOWN
			}
			return nvml.PciInfo{BusId: cBusID(bus(peer(i, l)))}, nvml.SUCCESS
		}
		dev.GetNvLinkRemoteDeviceTypeFunc = func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			t.Errorf("GPU %d: nvmlDeviceGetNvLinkRemoteDeviceType called on a library without it", i)
			return 0, nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}
	s.LookupSymbolFunc = lacking(remoteTypeSymbol)
	got, err := New(withAPI(mockAPI{s, fabricCompleted})).NVLinkTopology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := node.NVLinkTopology{Init: "SUCCESS"}
	for i := range 4 {
		g := node.GPULinkEnds{Index: i, MinorNumber: i, PCIBusID: bus(i)}
		for l := range 12 {
			switch {
			case i == 1:
				continue
			case i == 3 && l >= 6:
				g.Error = "ERROR_GPU_IS_LOST"
			case i == 2 && l%2 == 1:
				g.Links = append(g.Links, node.NVLinkEnd{Link: l, Error: "ERROR_UNKNOWN"})
			default:
				g.Links = append(g.Links, node.NVLinkEnd{Link: l, RemoteBusID: bus(peer(i, l))})
			}
		}
		want.Devices = append(want.Devices, g)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NVLinkTopology (-want +got):\n%s", diff)
	}
}

func TestNVLinkTopologyInitFails(t *testing.T) {
	s := newH100()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	s.DeviceGetCountFunc = func() (int, nvml.Return) {
		t.Error("nvmlDeviceGetCount called after a failed nvmlInit")
		return 0, nvml.ERROR_UNINITIALIZED
	}
	got, err := New(withAPI(mockAPI{s, fabricCompleted})).NVLinkTopology(context.Background())
	if err != nil || got.Init != "ERROR_DRIVER_NOT_LOADED" || got.Devices != nil {
		t.Errorf("NVLinkTopology = %+v, %v; want Init ERROR_DRIVER_NOT_LOADED and nothing else", got, err)
	}
}

// TestNVLinkTopologyWedged: a blocked NVML call holds only the abandoned goroutine; the
// caller gets its deadline.
func TestNVLinkTopologyWedged(t *testing.T) {
	s := newH100()
	release := make(chan struct{})
	defer close(release)
	s.DeviceGetCountFunc = func() (int, nvml.Return) { <-release; return 8, nvml.SUCCESS }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(withAPI(mockAPI{s, fabricCompleted})).NVLinkTopology(ctx); err == nil {
		t.Fatal("NVLinkTopology with a cancelled ctx returned no error")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := New(withAPI(mockAPI{s, fabricCompleted})).NVLinkTopology(ctx); err == nil {
		t.Fatal("NVLinkTopology blocked in NVML returned no error at its deadline")
	}
}

func TestRemoteTypeName(t *testing.T) {
	for _, tc := range []struct {
		in   nvml.IntNvLinkDeviceType
		want string
	}{
		{nvml.NVLINK_DEVICE_TYPE_GPU, "GPU"},
		{nvml.NVLINK_DEVICE_TYPE_IBMNPU, "IBMNPU"},
		{nvml.NVLINK_DEVICE_TYPE_SWITCH, "SWITCH"},
		{nvml.NVLINK_DEVICE_TYPE_UNKNOWN, "UNKNOWN"},
		{7, "TYPE_7"},
	} {
		if got := remoteTypeName(tc.in); got != tc.want {
			t.Errorf("remoteTypeName(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
