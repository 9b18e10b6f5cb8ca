//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/nodecheck/nodecheck/checks/node"
)

// onceReading is one NVML reading made at most once, in a goroutine that a caller's ctx can
// abandon (see Source).
type onceReading[T any] struct {
	once sync.Once
	done chan struct{}
	val  T
	err  error
}

// NVLinkTopology implements node.NVLinkSource: where each active NVLink of each GPU leads.
// It is a session of its own (Init, the reads, Shutdown), made once, at the first call, and
// only then: a run whose checks do not ask for it makes none of these calls. Per GPU it
// calls nvmlDeviceGetNvLinkState for every link index up to NVML_NVLINK_MAX_LINKS, and for
// each active link nvmlDeviceGetNvLinkRemotePciInfo and, where the library has it,
// nvmlDeviceGetNvLinkRemoteDeviceType: what Slurm's gpu/nvml plugin reads to fill Links=
// (_nvml_get_nvlink_info in src/plugins/gpu/nvml/gpu_nvml.c), plus the far end's type.
func (s *Source) NVLinkTopology(ctx context.Context) (node.NVLinkTopology, error) {
	if err := ctx.Err(); err != nil {
		return node.NVLinkTopology{}, fmt.Errorf("read NVLink topology: %w", err)
	}
	r := &s.links
	r.once.Do(func() {
		r.done = make(chan struct{})
		go func() {
			defer close(r.done)
			defer func() {
				if p := recover(); p != nil {
					r.val, r.err = node.NVLinkTopology{}, fmt.Errorf("read NVLink topology: panic: %v", p)
				}
			}()
			s.session.Lock()
			defer s.session.Unlock()
			r.val, r.err = readNVLinkTopology(s.open())
		}()
	})
	select {
	case <-r.done:
		return r.val.Clone(), r.err
	case <-ctx.Done():
		return node.NVLinkTopology{}, fmt.Errorf("read NVLink topology: no answer before the deadline (a wedged GPU can block NVML for minutes; check dmesg for Xid errors): %w", ctx.Err())
	}
}

// remoteTypeSymbol is the NVML function for the far end's type. It is newer than the other
// NVLink calls (nvmlDeviceGetNvLinkState and nvmlDeviceGetNvLinkRemotePciInfo date from the
// Pascal drivers), and calling a function the library lacks ends the process: looked up
// first.
const remoteTypeSymbol = "nvmlDeviceGetNvLinkRemoteDeviceType"

// readNVLinkTopology is one session: Init, the reads, Shutdown. Nothing but Init is called
// unless Init succeeded.
func readNVLinkTopology(lib api) (node.NVLinkTopology, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return node.NVLinkTopology{Init: returnName(ret)}, nil
	}
	defer lib.Shutdown()
	t := node.NVLinkTopology{Init: node.InitSuccess}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return t, fmt.Errorf("read NVLink topology: count GPUs: nvmlDeviceGetCount: %s", returnName(ret))
	}
	withType := lib.hasSymbol(remoteTypeSymbol)
	for i := range n {
		t.Devices = append(t.Devices, readDeviceNVLinks(lib, i, withType))
	}
	return t, nil
}

// readDeviceNVLinks reads GPU i's active links. A link index NVML refuses (past the GPU's
// links: ERROR_INVALID_ARGUMENT; a GPU without NVLink: ERROR_NOT_SUPPORTED) is left out and
// the walk goes on to NVML_NVLINK_MAX_LINKS, as Slurm's goes on past an invalid index: a
// board that leaves a link unwired in the middle loses nothing, for at most 36 cheap calls
// per GPU. A read saying the GPU is gone sets Error and ends the reading.
func readDeviceNVLinks(lib api, i int, withType bool) node.GPULinkEnds {
	g := node.GPULinkEnds{Index: i, MinorNumber: -1}
	d, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		g.Error = returnName(ret)
		return g
	}
	minor, ret := d.GetMinorNumber()
	if gone(ret) {
		g.Error = returnName(ret)
		return g
	}
	if ret == nvml.SUCCESS {
		g.MinorNumber = minor
	}
	pci, ret := d.GetPciInfo()
	if gone(ret) {
		g.Error = returnName(ret)
		return g
	}
	if ret == nvml.SUCCESS {
		g.PCIBusID = busID(pci.BusId)
	}
	for link := range nvml.NVLINK_MAX_LINKS {
		state, ret := d.GetNvLinkState(link)
		if gone(ret) {
			g.Error = returnName(ret)
			return g
		}
		if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		end, ret := readLinkEnd(d, link, withType)
		if gone(ret) {
			g.Error = returnName(ret)
			return g
		}
		g.Links = append(g.Links, end)
	}
	return g
}

// readLinkEnd reads where active link leads; the NVML result returned decides whether the
// GPU is gone.
func readLinkEnd(d nvml.Device, link int, withType bool) (node.NVLinkEnd, nvml.Return) {
	end := node.NVLinkEnd{Link: link}
	pci, ret := d.GetNvLinkRemotePciInfo(link)
	switch {
	case gone(ret):
		return end, ret
	case ret == nvml.SUCCESS:
		end.RemoteBusID = busID(pci.BusId)
	default:
		end.Error = returnName(ret)
	}
	if !withType {
		return end, nvml.SUCCESS
	}
	typ, ret := d.GetNvLinkRemoteDeviceType(link)
	switch {
	case gone(ret):
		return end, ret
	case ret == nvml.SUCCESS:
		end.RemoteType = remoteTypeName(typ)
	}
	return end, nvml.SUCCESS
}

// remoteTypeName names nvmlIntNvLinkDeviceType_t as nvml.h does, without its prefix.
func remoteTypeName(t nvml.IntNvLinkDeviceType) string {
	switch t {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return "GPU"
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return "IBMNPU"
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return "SWITCH"
	case nvml.NVLINK_DEVICE_TYPE_UNKNOWN:
		return "UNKNOWN"
	}
	return fmt.Sprintf("TYPE_%d", t)
}
