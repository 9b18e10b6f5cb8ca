package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
)

// nvlinksFile is a snapshot's record of NVLinkTopology.
const nvlinksFile = "nvlinks.json"

// NVLinkTopology is where the active NVLinks of each GPU lead, as NVML says
// (nvmlDeviceGetNvLinkState, then nvmlDeviceGetNvLinkRemotePciInfo and, where the driver has
// it, nvmlDeviceGetNvLinkRemoteDeviceType for each active link); its JSON form is a
// snapshot's nvlinks.json. It is read apart from GPUs, and only when a check asks for it
// (gres_affinity, where gres.conf gives Links=): a run without such a check makes none of
// these calls.
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
	// NVLinkTopology follows Facts.NVLinkTopology's contract. It must return when ctx is
	// done, even when an NVML call is blocked.
	NVLinkTopology(ctx context.Context) (NVLinkTopology, error)
}

// NVLinkTopology implements Facts through the GPUSource given with WithGPUSource, where it
// can read NVLinks (NVLinkSource); otherwise it reports Init InitNotBuilt.
func (l *Live) NVLinkTopology(ctx context.Context) (NVLinkTopology, error) {
	if err := ctx.Err(); err != nil {
		return NVLinkTopology{}, fmt.Errorf("read NVLink topology: %w", err)
	}
	src, ok := l.gpus.(NVLinkSource)
	if !ok {
		return NVLinkTopology{Init: InitNotBuilt}, nil
	}
	return src.NVLinkTopology(ctx)
}

// nvlinkRecord is nvlinks.json: an NVLinkTopology plus the replay-only keys, as nvml.json.
type nvlinkRecord struct {
	NVLinkTopology
	DelayMS  int  `json:"delay_ms,omitempty"`  // stall this long before answering
	TimedOut bool `json:"timed_out,omitempty"` // the recording's reading never answered: replay hangs
}

// parseNVLinks decodes and checks nvlinks.json. Unknown keys are allowed, as in nvml.json.
func parseNVLinks(b []byte) (nvlinkRecord, error) {
	var r nvlinkRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nvlinkRecord{}, jsonError(nvlinksFile, b, err, r)
	}
	switch {
	case r.Init == "" && !r.TimedOut:
		return nvlinkRecord{}, fmt.Errorf("%s: no \"init\" (SUCCESS or an NVML error name such as ERROR_LIBRARY_NOT_FOUND)", nvlinksFile)
	case r.DelayMS < 0:
		return nvlinkRecord{}, fmt.Errorf("%s: delay_ms %d is negative", nvlinksFile, r.DelayMS)
	}
	for i, d := range r.Devices {
		for _, l := range d.Links {
			if l.Link < 0 {
				return nvlinkRecord{}, fmt.Errorf("%s: device %d (index %d): link %d is negative", nvlinksFile, i+1, d.Index, l.Link)
			}
		}
	}
	return r, nil
}

// NVLinkTopology implements Facts from nvlinks.json. A snapshot without it has no NVLink
// topology recorded: an error wrapping fs.ErrNotExist.
func (s *Snapshot) NVLinkTopology(ctx context.Context) (NVLinkTopology, error) {
	if err := ctx.Err(); err != nil {
		return NVLinkTopology{}, fmt.Errorf("read NVLink topology: %w", err)
	}
	rec := s.nvlinks
	if rec == nil {
		return NVLinkTopology{}, fmt.Errorf("read NVLink topology: not recorded (the snapshot has no %s): %w", nvlinksFile, fs.ErrNotExist)
	}
	if err := stall(ctx, rec.DelayMS); err != nil {
		return NVLinkTopology{}, fmt.Errorf("read NVLink topology: %w", err)
	}
	if rec.TimedOut {
		if ctx.Done() == nil {
			return NVLinkTopology{}, fmt.Errorf("read NVLink topology: recorded as timed out: %w", context.DeadlineExceeded)
		}
		<-ctx.Done()
		return NVLinkTopology{}, fmt.Errorf("read NVLink topology: recorded as timed out: %w", ctx.Err())
	}
	return rec.NVLinkTopology.Clone(), nil
}

// nvlinksKey stands for the NVLink reading in Recorder.pending.
const nvlinksKey = "nvlinks"

// NVLinkTopology implements Facts and records the answer as nvlinks.json: a reading cut off
// by ctx as timed out (replayed as a hang), one that failed otherwise not at all.
func (r *Recorder) NVLinkTopology(ctx context.Context) (NVLinkTopology, error) {
	r.noteListed(nvlinksKey)
	r.mu.Lock()
	r.pending[nvlinksKey]++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.pending[nvlinksKey]--
		r.mu.Unlock()
	}()
	t, err := r.inner.NVLinkTopology(ctx)
	var rec nvlinkRecord
	switch {
	case err == nil:
		rec = nvlinkRecord{NVLinkTopology: t.Clone()}
	case isDeadline(err):
		rec = nvlinkRecord{TimedOut: true}
	default:
		return t, err
	}
	r.mu.Lock()
	r.nvlinks = &rec
	r.mu.Unlock()
	return t, err
}

// settleNVLinks is the NVLink record Save writes: a timed-out one where a reading never
// returned; nil for none. r.mu is held.
func (r *Recorder) settleNVLinks() *nvlinkRecord {
	if r.nvlinks == nil && r.pending[nvlinksKey] > 0 {
		return &nvlinkRecord{TimedOut: true}
	}
	return r.nvlinks
}

// NVLinkTopology is f.NVLinkTopology, read once. Callers share the devices and must not
// modify them.
func (m *Memo) NVLinkTopology(ctx context.Context) (NVLinkTopology, error) {
	return m.nvlinks.Get(ctx, m.Facts.NVLinkTopology)
}
