package node

import (
	"context"
	"encoding/json"
	"slices"
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
	// FileStat is what stat, lstat and faccessat say of a path (test(1)'s file operators),
	// without reading it. A missing path is not an error: it gives FileStat{Missing: true}.
	FileStat(ctx context.Context, path string) (FileStat, error)
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
	// PCIDevices lists the PCI functions under /sys/bus/pci/devices, sorted by address. Link
	// widths and speeds are read only for network, display and 0x0680 bridge functions (the
	// HCAs, GPUs and NVSwitches checks judge); other functions carry zeros.
	// A device whose attributes cannot be read is kept with what could be read (zeros for
	// the rest) so that one odd function does not hide the others; unparsable attribute text
	// reads as zero too. Read errors other than absence are joined into the error, which then
	// comes with every device that could be listed. No /sys/bus/pci/devices gives an empty
	// list and a nil error.
	PCIDevices(ctx context.Context) ([]PCIDevice, error)
	// GPUs is what NVML reports. NVML failing to initialise is not an error: it is
	// GPUInventory.Init holding the NVML error name (ERROR_LIBRARY_NOT_FOUND on a node without
	// the driver, InitNotBuilt where this nodecheck has no NVML adapter); checks treat every
	// Init but InitSuccess as "NVML unavailable". The error return is for a call that could
	// not be made at all: ctx ending first (a wedged GPU can block NVML for minutes), or a
	// snapshot without nvml.json (an error wrapping fs.ErrNotExist: no NVML facts recorded).
	GPUs(ctx context.Context) (GPUInventory, error)
	// Fact reads a declared fact (see Fact; checks call Read, which types the answer): on the
	// live node its reader, in a snapshot its <Name>.json. A snapshot without that file gives
	// an error wrapping fs.ErrNotExist (the fact was not recorded); each declaration states
	// what else its value and errors mean. The answer is a T of the *Fact[T] given.
	Fact(ctx context.Context, d FactDecl) (any, error)
}

// Inventory is the node's CPUs and memory, in slurm.conf's terms (InventoryFact); its JSON
// form is a snapshot's inventory.json. A zero means the node could not tell.
type Inventory struct {
	Sockets         int    `json:"sockets"`           // physical packages
	CoresPerSocket  int    `json:"cores_per_socket"`  // cores of all sockets / sockets
	ThreadsPerCore  int    `json:"threads_per_core"`  // online logical CPUs / cores
	CPUs            int    `json:"cpus"`              // online logical CPUs
	MemoryUsableMiB uint64 `json:"memory_usable_mib"` // /proc/meminfo MemTotal, in MiB (rounded down)
}

// GPUInventory.Init values that are not NVML return names.
const (
	// InitSuccess is GPUInventory.Init when nvmlInit succeeded: NVML's own name, "SUCCESS".
	InitSuccess = "SUCCESS"
	// InitNotBuilt is GPUInventory.Init when this nodecheck cannot call NVML at all: a
	// CGO_ENABLED=0 build (go-nvml needs cgo), or a Live made without WithGPUSource. It is
	// deliberately not an NVML name, so that a report tells "the driver is missing"
	// (ERROR_LIBRARY_NOT_FOUND) apart from "this binary was built without NVML".
	InitNotBuilt = "NOT_BUILT_WITH_NVML"
)

// GPUSource reads the NVML inventory. checks/node/nvml implements it; it lives behind this
// interface so that everything but that package builds with CGO_ENABLED=0.
type GPUSource interface {
	// GPUs follows Facts.GPUs' contract for the facts in want, and makes no NVML call for
	// the others (GPUInventory.Fields says which were asked for). It must return when ctx is
	// done, even when an NVML call is blocked (the call may be abandoned, running on, until
	// the process exits).
	GPUs(ctx context.Context, want GPUFields) (GPUInventory, error)
}

// GPUFieldsReader is a Facts whose NVML reading can be limited to some facts of each GPU:
// Live. Memo reads through it when the run names the facts its checks judge.
type GPUFieldsReader interface {
	// GPUsFields is GPUs for the facts in want only.
	GPUsFields(ctx context.Context, want GPUFields) (GPUInventory, error)
}

// PCIDevice is one PCI function as /sys/bus/pci/devices/<address>/ describes it. A zero
// means "absent or unknown": a function without a PCIe link (a host bridge, a legacy PCI
// device) has no link attributes, and the kernel writes "Unknown" speeds and width 255 when
// it cannot tell.
type PCIDevice struct {
	Address         string  `json:"address"`            // "0000:19:00.0", as sysfs names it (lowercase hex)
	Vendor          uint32  `json:"vendor"`             // vendor: 0x10de
	Device          uint32  `json:"device"`             // device: 0x2330
	Class           uint32  `json:"class"`              // class: 0x030200 (3D controller)
	CurLinkWidth    int     `json:"cur_link_width"`     // current_link_width; 0 when absent or unknown
	MaxLinkWidth    int     `json:"max_link_width"`     // max_link_width; 0 when absent or unknown
	CurLinkSpeedGTs float64 `json:"cur_link_speed_gts"` // current_link_speed: "32.0 GT/s PCIe" -> 32; 0 when absent or "Unknown"
	MaxLinkSpeedGTs float64 `json:"max_link_speed_gts"` // max_link_speed
	// SysfsPath is the function's directory once the /sys/bus/pci/devices link is resolved,
	// "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0": the
	// bridges on the way are the device's place in the PCIe tree. It is the bus path itself
	// where the entry is not a link (fixture trees).
	SysfsPath string `json:"sysfs_path,omitempty"`
}

// GPUInventory is the NVML view of the node; its JSON form is a snapshot's nvml.json.
type GPUInventory struct {
	// Init is "SUCCESS" or the NVML error name of nvmlInit (ERROR_LIBRARY_NOT_FOUND,
	// ERROR_DRIVER_NOT_LOADED, ...). When it is not SUCCESS the other fields are empty. It is
	// empty only in a snapshot's record of a reading that timed out, which leaves "init" out.
	Init              string `json:"init,omitempty"`
	DriverVersion     string `json:"driver_version,omitempty"`      // "535.161.08"
	CUDADriverVersion int    `json:"cuda_driver_version,omitempty"` // 12020 for CUDA 12.2
	DeviceCount       int    `json:"device_count"`
	Devices           []GPU  `json:"devices,omitempty"`
	// Fields are the facts this reading asked NVML for (see GPUFields; Read): a fact outside
	// them was not looked at, and checks say so instead of judging its absence. A live run
	// asks for what its checks judge; `nodecheck snapshot` for everything.
	Fields GPUFields `json:"fields,omitzero"`
}

// Clone returns a deep copy of inv, sharing no PCIe or Fabric with it.
func (inv GPUInventory) Clone() GPUInventory {
	devs := inv.Devices
	inv.Devices = nil
	for _, g := range devs {
		inv.Devices = append(inv.Devices, g.Clone())
	}
	return inv
}

// GPU is one device as NVML reports it.
type GPU struct {
	Index       int    `json:"index"`
	MinorNumber int    `json:"minor_number"` // N of /dev/nvidiaN; -1 when NVML could not say
	UUID        string `json:"uuid,omitempty"`
	Name        string `json:"name,omitempty"`       // "NVIDIA H100 80GB HBM3"
	PCIBusID    string `json:"pci_bus_id,omitempty"` // NVML's form: "00000000:19:00.0" (8-digit domain, upper-case hex)
	// Serial is the board's serial number (nvmlDeviceGetSerial), which with the UUID tells a
	// replaced GPU from the one that sat in its slot; "" where NVML has none (consumer boards:
	// ERROR_NOT_SUPPORTED).
	Serial string `json:"serial,omitempty"`
	// PCIe is nil when NVML could read none of the four link values; a value it could not
	// read is 0.
	PCIe *PCIe `json:"pcie,omitempty"`
	// Fabric is nil where NVML has no fabric information (before Hopper, or no NVSwitch:
	// ERROR_NOT_SUPPORTED, or state NOT_SUPPORTED).
	Fabric *Fabric `json:"fabric,omitempty"`
	// ECC is nil where NVML has no ECC for the GPU (consumer GPUs: ERROR_NOT_SUPPORTED) or
	// could not read its mode.
	ECC *ECC `json:"ecc,omitempty"`
	// RemappedRows is nil before Ampere (nvmlDeviceGetRemappedRows: ERROR_NOT_SUPPORTED).
	RemappedRows *RemappedRows `json:"remapped_rows,omitempty"`
	// RetiredPages is nil where the GPU does not retire pages (Ampere and later remap rows
	// instead: ERROR_NOT_SUPPORTED).
	RetiredPages *RetiredPages `json:"retired_pages,omitempty"`
	// NVLinks holds every link index NVML answered nvmlDeviceGetNvLinkState for, in link order;
	// nil where the GPU has no NVLink (link 0 ERROR_NOT_SUPPORTED) or it was not read.
	NVLinks []NVLink `json:"nvlinks,omitempty"`
	// Memory is the framebuffer's use; nil when NVML could not say.
	Memory *Memory `json:"memory,omitempty"`
	// Compute is nil when NVML could not list the GPU's compute processes (or a snapshot did
	// not record them); a Compute with no processes means none runs.
	Compute *Compute `json:"compute,omitempty"`
	// NVLinkErrors sums the NVLink error counters over the GPU's active links; nil where the
	// GPU has no active NVLink or NVML has no counters for it.
	NVLinkErrors *NVLinkErrors `json:"nvlink_errors,omitempty"`
	// PCIeReplays is nvmlDeviceGetPcieReplayCounter: PCIe replays since the driver loaded
	// (nvidia-smi's "Replays Since Reset"); nil where NVML would not say.
	PCIeReplays *uint64 `json:"pcie_replay_counter,omitempty"`
	// ClockEvents is why the clocks are below their maximum now
	// (nvmlDeviceGetCurrentClocksEventReasons); nil where NVML would not say.
	ClockEvents *ClockEvents `json:"clock_event_reasons,omitempty"`
	// Thermal is the GPU's temperatures and its own thresholds; nil where NVML gave none.
	Thermal *Thermal `json:"temperature,omitempty"`
	// Power is the GPU's power limits and draw; nil where NVML gave none of them.
	Power *Power `json:"power,omitempty"`
	// Persistence is nvmlDeviceGetPersistenceMode: whether the driver stays initialised with
	// no client; nil where NVML would not say.
	Persistence *bool `json:"persistence_mode,omitempty"`
	// RecoveryAction is what the driver (550 and later) says the GPU needs before it can be
	// used again (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): NONE, GPU_RESET, NODE_REBOOT,
	// DRAIN_P2P, DRAIN_AND_RESET, ... (see RecoveryActionName); "" where NVML would not say
	// (older drivers).
	RecoveryAction string `json:"recovery_action,omitempty"`
	// ResetStatus is the older drivers' reset advice, read where NVML gives no recovery
	// action (and recorded from nvidia-smi captures that print it); nil where not read.
	ResetStatus *ResetStatus `json:"reset_status,omitempty"`
	// Error is the NVML error name when the device handle could not be had, or when a read
	// said the device is gone (ERROR_GPU_IS_LOST, ERROR_RESET_REQUIRED); the other fields are
	// then partial.
	Error string `json:"error,omitempty"`
}

// ECC is a GPU's ECC mode and its error counters (nvmlDeviceGetEccMode,
// nvmlDeviceGetTotalEccErrors). A counter is nil when NVML could not read it (ECC off, or not
// supported); 0 is a read zero.
type ECC struct {
	Enabled        bool `json:"enabled"`         // current mode
	PendingEnabled bool `json:"pending_enabled"` // mode after the next reset or reboot
	// VolatileUncorrected counts uncorrectable errors since the driver loaded
	// (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC).
	VolatileUncorrected *uint64 `json:"volatile_uncorrected,omitempty"`
	VolatileCorrected   *uint64 `json:"volatile_corrected,omitempty"`
	// AggregateUncorrected counts uncorrectable errors over the GPU's life (NVML_AGGREGATE_ECC).
	AggregateUncorrected *uint64 `json:"aggregate_uncorrected,omitempty"`
}

// RemappedRows is nvmlDeviceGetRemappedRows: rows of HBM the GPU replaced with spares.
type RemappedRows struct {
	Correctable   int  `json:"correctable"`   // rows remapped after correctable errors
	Uncorrectable int  `json:"uncorrectable"` // rows remapped after uncorrectable errors
	Pending       bool `json:"pending"`       // a remap waits for a GPU reset to take effect
	Failed        bool `json:"failed"`        // a remap failed: no spare row was left
}

// RetiredPages is dynamic page retirement (before Ampere): nvmlDeviceGetRetiredPages per
// cause and nvmlDeviceGetRetiredPagesPendingStatus.
type RetiredPages struct {
	SingleBit int  `json:"single_bit"` // pages retired after multiple single-bit errors
	DoubleBit int  `json:"double_bit"` // pages retired after a double-bit error
	Pending   bool `json:"pending"`    // a retirement waits for the next driver reload
}

// NVLink is one link of a GPU (nvmlDeviceGetNvLinkState).
type NVLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"` // NVML_FEATURE_ENABLED
}

// Memory is a GPU's framebuffer in MiB (nvmlDeviceGetMemoryInfo_v2 where the driver has it:
// Used then leaves out what the driver reserves; with the older call Reserved is 0 and Used
// includes it).
type Memory struct {
	TotalMiB    uint64 `json:"total_mib"`
	UsedMiB     uint64 `json:"used_mib"`
	ReservedMiB uint64 `json:"reserved_mib,omitempty"`
}

// Compute is what runs on a GPU (nvmlDeviceGetComputeRunningProcesses).
type Compute struct {
	Processes []Process `json:"processes"`
}

// Process is one compute process on a GPU. NVML gives the PID and memory; the live node adds
// the owner and command from /proc (a snapshot records them as read).
type Process struct {
	PID uint32 `json:"pid"`
	// UsedMiB is the GPU memory the process holds; 0 when NVML could not say (MIG without
	// privileges reports NVML_VALUE_NOT_AVAILABLE).
	UsedMiB uint64 `json:"used_mib"`
	UID     int    `json:"uid"`               // owner's uid from /proc/<pid>/status; -1 when unknown (the process is gone)
	User    string `json:"user,omitempty"`    // owner's name from /etc/passwd; empty when not listed there
	Command string `json:"command,omitempty"` // /proc/<pid>/comm
}

// UnmarshalJSON reads a process with no "uid" as owner unknown (-1), not as root: an
// nvml.json written by hand or from nvidia-smi output may leave the owner out.
func (p *Process) UnmarshalJSON(b []byte) error {
	type plain Process
	q := plain{UID: -1}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = Process(q)
	return nil
}

// Clone returns a deep copy of g, sharing no pointer or slice with it.
func (g GPU) Clone() GPU {
	if g.PCIe != nil {
		p := *g.PCIe
		g.PCIe = &p
	}
	if g.Fabric != nil {
		f := *g.Fabric
		g.Fabric = &f
	}
	if g.ECC != nil {
		e := *g.ECC
		for _, c := range []**uint64{&e.VolatileUncorrected, &e.VolatileCorrected, &e.AggregateUncorrected} {
			if *c != nil {
				v := **c
				*c = &v
			}
		}
		g.ECC = &e
	}
	if g.RemappedRows != nil {
		r := *g.RemappedRows
		g.RemappedRows = &r
	}
	if g.RetiredPages != nil {
		r := *g.RetiredPages
		g.RetiredPages = &r
	}
	g.NVLinks = slices.Clone(g.NVLinks)
	if g.Memory != nil {
		m := *g.Memory
		g.Memory = &m
	}
	if g.Compute != nil {
		c := Compute{Processes: slices.Clone(g.Compute.Processes)}
		if c.Processes == nil {
			c.Processes = []Process{}
		}
		g.Compute = &c
	}
	return g.cloneSignals()
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
	// State is NOT_STARTED, IN_PROGRESS or COMPLETED (NVML_GPU_FABRIC_STATE_*); UNKNOWN when
	// the query itself failed, with Status then holding the query's error name; STATE_<n>
	// for a value this nodecheck does not know.
	State  string `json:"state"`
	Status string `json:"status"` // NVML return name of the registration: SUCCESS, ...
	// Health is what the driver says of the GPU's fabric once registered: the health mask of
	// nvmlGpuFabricInfo_v2 and later, and the summary of v3 (nvidia-smi -q "Fabric/Health").
	// It is zero where the driver reports none (the v1 call, drivers before the mask, or
	// every part NOT_SUPPORTED, as on GPUs outside a multi-node NVLink rack).
	Health FabricHealth `json:"health,omitzero"`
}

// FabricHealth is a GPU's fabric health (nvml.h NVML_GPU_FABRIC_HEALTH_*), each part by the
// suffix of its nvml.h value name; "" where the driver does not report that part
// (..._NOT_SUPPORTED, or N/A in nvidia-smi), VALUE_<n> for a value this nodecheck does not
// know.
type FabricHealth struct {
	// Summary is NVML_GPU_FABRIC_HEALTH_SUMMARY_*: HEALTHY, UNHEALTHY or LIMITED_CAPACITY
	// (nvmlGpuFabricInfo_v3; nvidia-smi "Summary").
	Summary string `json:"summary,omitempty"`
	// DegradedBandwidth is TRUE when the GPU's fabric bandwidth is degraded (nvidia-smi
	// "Bandwidth : Degraded"), FALSE when it is full.
	DegradedBandwidth string `json:"degraded_bandwidth,omitempty"`
	// RouteRecovery is TRUE while a route recovery is in progress.
	RouteRecovery string `json:"route_recovery,omitempty"`
	// RouteUnhealthy is TRUE when a route is unhealthy.
	RouteUnhealthy string `json:"route_unhealthy,omitempty"`
	// AccessTimeoutRecovery is TRUE while an access timeout recovery is in progress.
	AccessTimeoutRecovery string `json:"access_timeout_recovery,omitempty"`
	// IncorrectConfiguration is NONE for a correct configuration, else what is wrong:
	// INCORRECT_SYSGUID, INCORRECT_CHASSIS_SN, NO_PARTITION, INSUFFICIENT_NVLINKS,
	// INCOMPATIBLE_GPU_FW, INVALID_LOCATION, GPU_STATE_INVALID.
	IncorrectConfiguration string `json:"incorrect_configuration,omitempty"`
}

// The values of FabricHealth's flags, and of its configuration when it is correct.
const (
	FabricTrue     = "TRUE"
	FabricFalse    = "FALSE"
	FabricConfigOK = "NONE"
)

// The values of FabricHealth.Summary.
const (
	FabricHealthy         = "HEALTHY"
	FabricUnhealthy       = "UNHEALTHY"
	FabricLimitedCapacity = "LIMITED_CAPACITY"
)

// ResetStatus is the reset advice of the drivers before the recovery action (NVML fields
// NVML_FI_DEV_RESET_STATUS and NVML_FI_DEV_DRAIN_AND_RESET_STATUS, which nvml.h deprecates
// for NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; nvidia-smi -q "GPU Reset Status", printed by
// drivers 535 to 565 and "deprecated" from 570).
type ResetStatus struct {
	ResetRequired bool `json:"reset_required"` // "Reset Required": the GPU needs a reset
	// DrainAndReset is "Drain and Reset Recommended": drain peer-to-peer traffic, then reset
	// (the recovery action DRAIN_AND_RESET); false where the GPU does not say (N/A).
	DrainAndReset bool `json:"drain_and_reset_recommended"`
}

// Action is the recovery action s stands for (see GPU.RecoveryAction): DRAIN_AND_RESET when
// a drain and reset is recommended, GPU_RESET when a reset is required, else NONE.
func (s ResetStatus) Action() string {
	switch {
	case s.DrainAndReset:
		return "DRAIN_AND_RESET"
	case s.ResetRequired:
		return "GPU_RESET"
	}
	return "NONE"
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
	// CutFront says the start of stdout was dropped, not its end: it holds the output's last
	// bytes from the start of a line (KeepsTail: dmesg's newest lines).
	CutFront bool `json:"cut_front,omitempty"`
}
