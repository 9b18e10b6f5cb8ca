// Package node owns every fact nodecheck reads from a node (files, device nodes, sysfs, NVML
// facts, command output) behind one interface with a live and a snapshot implementation.
// It never judges what it reads: checks do that.
package node

import (
	"context"
	"strconv"
	"time"
)

// Facts is the node as checks see it. Every method honours ctx: when ctx is done the method
// returns ctx.Err() (wrapped) as soon as it can. An implementation may still block inside a
// system call; callers that must not hang run it where a deadline can abandon it (the runner
// does). Absence is reported with an error that satisfies errors.Is(err, fs.ErrNotExist).
type Facts interface {
	// ReadFile returns the content of an absolute path on the node, e.g. /etc/slurm/gres.conf.
	// A missing file gives an error wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// DevNode describes a device path without opening it. A missing path is not an error:
	// it gives DevNode{Path: path, Missing: true}.
	DevNode(ctx context.Context, path string) (DevNode, error)
	// IBPorts lists every port under /sys/class/infiniband, sorted by device then port.
	// No /sys/class/infiniband gives an empty list and a nil error (no InfiniBand here).
	IBPorts(ctx context.Context) ([]IBPort, error)
	// Exec runs argv[0] (an absolute path) without a shell. A program that does not exist gives
	// an error wrapping fs.ErrNotExist. stdout and stderr are bounded; a non-zero exit is not an
	// error (see CmdResult.ExitCode); a deadline kills the process and returns ctx's error along
	// with the partial output.
	Exec(ctx context.Context, argv []string) (CmdResult, error)
	// Hostname is the node's host name as the kernel reports it.
	Hostname(ctx context.Context) (string, error)
	// PCIDevices lists the PCI functions under /sys/bus/pci/devices, sorted by address.
	// A device whose attributes cannot be read is kept with what could be read (zeros for
	// the rest) so that one odd function does not hide the others.
	PCIDevices(ctx context.Context) ([]PCIDevice, error)
	// GPUs is what NVML reports. NVML failing to initialise is not an error: it is
	// GPUInventory.Init holding the NVML error name (ERROR_LIBRARY_NOT_FOUND on a node without
	// the driver). The error return is for a call that could not be made at all.
	GPUs(ctx context.Context) (GPUInventory, error)
}

// PCIDevice is one PCI function as /sys/bus/pci/devices/<address>/ describes it.
type PCIDevice struct {
	Address         string  `json:"address"`            // "0000:19:00.0", as sysfs names it (lowercase hex)
	Vendor          uint32  `json:"vendor"`             // vendor: 0x10de
	Device          uint32  `json:"device"`             // device: 0x2330
	Class           uint32  `json:"class"`              // class: 0x030200 (3D controller)
	CurLinkWidth    int     `json:"cur_link_width"`     // current_link_width; 0 when absent
	MaxLinkWidth    int     `json:"max_link_width"`     // max_link_width; 0 when absent
	CurLinkSpeedGTs float64 `json:"cur_link_speed_gts"` // current_link_speed: "32.0 GT/s PCIe" -> 32
	MaxLinkSpeedGTs float64 `json:"max_link_speed_gts"` // max_link_speed
}

// GPUInventory is the NVML view of the node; its JSON form is a snapshot's nvml.json.
type GPUInventory struct {
	// Init is "SUCCESS" or the NVML error name of nvmlInit (ERROR_LIBRARY_NOT_FOUND,
	// ERROR_DRIVER_NOT_LOADED, ...). When it is not SUCCESS the other fields are empty.
	Init              string `json:"init"`
	DriverVersion     string `json:"driver_version,omitempty"`      // "535.161.08"
	CUDADriverVersion int    `json:"cuda_driver_version,omitempty"` // 12020 for CUDA 12.2
	DeviceCount       int    `json:"device_count"`
	Devices           []GPU  `json:"devices,omitempty"`
}

// GPU is one device as NVML reports it.
type GPU struct {
	Index       int    `json:"index"`
	MinorNumber int    `json:"minor_number"` // N of /dev/nvidiaN
	UUID        string `json:"uuid,omitempty"`
	Name        string `json:"name,omitempty"`       // "NVIDIA H100 80GB HBM3"
	PCIBusID    string `json:"pci_bus_id,omitempty"` // NVML's form: "00000000:19:00.0" (8-digit domain, upper-case hex)
	PCIe        *PCIe  `json:"pcie,omitempty"`
	// Fabric is nil where NVML has no fabric information (before Hopper, or no NVSwitch).
	Fabric *Fabric `json:"fabric,omitempty"`
	// Error is the NVML error name when the device handle could not be had
	// (ERROR_GPU_IS_LOST); the other fields are then partial.
	Error string `json:"error,omitempty"`
}

// PCIe is a GPU's PCIe link as NVML reports it.
type PCIe struct {
	CurLinkWidth int `json:"curr_link_width"`
	MaxLinkWidth int `json:"max_link_width"`
	CurLinkGen   int `json:"curr_link_gen"`
	MaxLinkGen   int `json:"max_link_gen"`
}

// Fabric is a GPU's NVLink fabric registration (nvmlDeviceGetGpuFabricInfoV).
type Fabric struct {
	State  string `json:"state"`  // NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS, COMPLETED
	Status string `json:"status"` // NVML return name of the registration: SUCCESS, ...
}

// DevNode is what stat(2) says of a device path.
type DevNode struct {
	Path    string `json:"path"`
	Missing bool   `json:"missing,omitempty"`
	// Type is "char", "block", "file", "dir", "symlink" or "other"; empty when Missing.
	Type  string `json:"type,omitempty"`
	Major uint32 `json:"major,omitempty"`
	Minor uint32 `json:"minor,omitempty"`
}

// IBPort is one port of an RDMA device under /sys/class/infiniband/<dev>/ports/<n>.
type IBPort struct {
	Device      string  `json:"device"`        // mlx5_0
	Port        uint    `json:"port"`          // ports/<n>
	State       string  `json:"state"`         // state, name part: "ACTIVE"
	StateID     uint    `json:"state_id"`      // state, number part: 4
	PhysState   string  `json:"phys_state"`    // phys_state, name part: "LinkUp"
	PhysStateID uint    `json:"phys_state_id"` // phys_state, number part: 5
	Rate        string  `json:"rate"`          // rate as read: "400 Gb/sec (4X NDR)"
	RateGbps    float64 `json:"rate_gbps"`     // rate, number part: 400
	LinkLayer   string  `json:"link_layer"`    // link_layer: "InfiniBand" or "Ethernet"
}

// Name is the port as admins write it: "mlx5_0/1".
func (p IBPort) Name() string { return p.Device + "/" + strconv.FormatUint(uint64(p.Port), 10) }

// CmdResult is the bounded outcome of one command.
type CmdResult struct {
	Argv      []string      `json:"argv"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	ExitCode  int           `json:"exit_code"`
	Duration  time.Duration `json:"-"`
	Truncated bool          `json:"truncated,omitempty"`
}
