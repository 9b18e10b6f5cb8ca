package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// NVLinkTopology is where the active NVLinks of each GPU lead, as NVML says
// (nvmlDeviceGetNvLinkState, then nvmlDeviceGetNvLinkRemotePciInfo and, where the driver has
// it, nvmlDeviceGetNvLinkRemoteDeviceType for each active link); its JSON form is a
// snapshot's nvlinks.json (NVLinkTopologyFact). It is read apart from GPUs, and in a run
// only when a check asks for it (gres_affinity, where gres.conf gives Links=): a run without
// such a check makes none of these calls. `nodecheck snapshot` records it always.
type NVLinkTopology struct {
	// Init is as GPUInventory.Init: "SUCCESS", an NVML error name, or InitNotBuilt; the
	// devices are empty unless it is SUCCESS.
	Init    string        `json:"init,omitempty"`
	Devices []GPULinkEnds `json:"devices,omitempty"`
}

// GPULinkEnds is one GPU's active NVLinks.
type GPULinkEnds struct {
	Index       int    `json:"index"`
	MinorNumber int    `json:"minor_number"`         // -1 when NVML could not say
	PCIBusID    string `json:"pci_bus_id,omitempty"` // NVML's form: "00000000:19:00.0"
	// Links lists the active links in link order; none for a GPU without NVLink, or whose
	// links are all down (the nvlink check judges that).
	Links []NVLinkEnd `json:"links,omitempty"`
	// Error is the NVML error name where the device could not be read (no handle, or
	// ERROR_GPU_IS_LOST on the way); Links is then partial.
	Error string `json:"error,omitempty"`
}

// NVLinkEnd is the far end of one active NVLink.
type NVLinkEnd struct {
	Link int `json:"link"`
	// RemoteBusID is the PCI bus id of the device at the other end, in NVML's form: another
	// GPU, or an NVSwitch. Empty where NVML could not say (Error).
	RemoteBusID string `json:"remote_pci_bus_id,omitempty"`
	// RemoteType is GPU, SWITCH, IBMNPU or UNKNOWN (nvmlIntNvLinkDeviceType_t); empty where
	// the driver has no nvmlDeviceGetNvLinkRemoteDeviceType or it failed.
	RemoteType string `json:"remote_type,omitempty"`
	// Error is the NVML error name of a remote read that failed.
	Error string `json:"error,omitempty"`
}

// Clone returns a deep copy of t.
func (t NVLinkTopology) Clone() NVLinkTopology {
	t.Devices = slices.Clone(t.Devices)
	for i := range t.Devices {
		t.Devices[i].Links = slices.Clone(t.Devices[i].Links)
	}
	return t
}

// NVLinkSource is a GPUSource that can also read the NVLink topology: checks/node/nvml's
// Source in a cgo build.
type NVLinkSource interface {
	// NVLinkTopology follows NVLinkTopologyFact's contract. It must return when ctx is
	// done, even when an NVML call is blocked.
	NVLinkTopology(ctx context.Context) (NVLinkTopology, error)
}

// NVLinkTopologyFact is where each GPU's active NVLinks lead (NVLinkTopology), recorded as
// nvlinks.json. It follows GPUInventory's contract: NVML failing to initialise is Init, not an
// error. Live reads it through the GPUSource given with WithGPUSource, where that can read
// NVLinks (NVLinkSource), and otherwise reports Init InitNotBuilt. It is a reading of its
// own, in an NVML session of its own.
var NVLinkTopologyFact = &Fact[NVLinkTopology]{
	Name: "nvlinks",
	What: "NVLink topology",
	Live: func(ctx context.Context, l *Live) (NVLinkTopology, error) {
		src, ok := l.gpus.(NVLinkSource)
		if !ok {
			return NVLinkTopology{Init: InitNotBuilt}, nil
		}
		return src.NVLinkTopology(ctx)
	},
	Check: checkNVLinks,
}

// checkNVLinks refuses a replayed topology without "init" or with a negative link.
func checkNVLinks(t NVLinkTopology) error {
	if t.Init == "" {
		return errors.New(`no "init" (SUCCESS or an NVML error name such as ERROR_LIBRARY_NOT_FOUND)`)
	}
	for i, d := range t.Devices {
		for _, l := range d.Links {
			if l.Link < 0 {
				return fmt.Errorf("device %d (index %d): link %d is negative", i+1, d.Index, l.Link)
			}
		}
	}
	return nil
}
