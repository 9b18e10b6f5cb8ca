package history

import "time"

// Observation is what one run saw, in plain values the gatherers fill: the live node, a
// snapshot replay and the tests build it the same way. Merge folds it into a History.
type Observation struct {
	// Time is when the run looked: the live clock, or the snapshot's taken_at.
	Time time.Time
	// BootID is /proc/sys/kernel/random/boot_id. Without it no event or sample is merged:
	// a reboot could not be told from a long uptime, and a sticky fault could never clear.
	BootID string
	// BootTime is when this boot began (Time less /proc/uptime); zero when unknown, and
	// kernel times then fall back to Time as wall time.
	BootTime time.Time
	GPUs     []GPUObs
	// XIDs are the kernel log's XID lines, in log order (ScanKernelLog).
	XIDs []XIDLine
	// DriverLoads are the kernel times (µs) of the "NVRM: loading NVIDIA UNIX" lines.
	DriverLoads []int64
	// KernelLinks are the kernel log's link lines, SyslogLinks the syslog's (ScanSyslog).
	KernelLinks []LinkLine
	SyslogLinks []LinkLine
	// Resets are GPU resets the run knows of (nodecheck's own, or reported by a tool).
	Resets []ResetObs
	Ports  []PortObs
}

// GPUObs is one GPU as NVML showed it, with its counters.
type GPUObs struct {
	UUID   string
	Serial string
	// Bus in any of NVML's, sysfs's or the kernel's forms ("00000000:9B:00.0").
	Bus   string
	Index int
	Name  string
	// SampledAt is when the counters were read; zero: the Observation's Time.
	SampledAt time.Time
	Counters  [NumCounters]Reading
}

// Reading is one counter value and whether it was read at all (NVML may not support it).
type Reading struct {
	V  uint64
	OK bool
}

// Read is a counter reading of v.
func Read(v uint64) Reading { return Reading{V: v, OK: true} }

// XIDLine is one "NVRM: Xid" kernel log line.
type XIDLine struct {
	// Bus as the driver prints it: "0000:9b:00" (no function).
	Bus string
	XID int
	// KernelUS is the line's kernel time in µs since boot; 0 when the line had none.
	KernelUS int64
	// Loc is "GPC/TPC" when an XID 13 line names them, IntrInfo/ErrorStatus in hex for an
	// NVLink5 XID (144-150), else empty.
	Loc string
	// Message is the text after the XID number.
	Message string
}

// LinkLine is one link down or up line: the kernel's ("mlx5_core 0000:41:00.0
// enp65s0f0np0: Link down") or systemd-networkd's in the syslog ("ib6: lost carrier").
type LinkLine struct {
	Netdev string
	// PCI is the adapter's address when the line names it.
	PCI string
	Up  bool
	// KernelUS is the kernel time (µs) of a kernel line; 0 for a syslog line.
	KernelUS int64
	// Wall is a syslog line's time; zero for a kernel line.
	Wall time.Time
	// Src is "kernel" or "syslog".
	Src string
}

// ResetObs is a GPU reset the run knows of.
type ResetObs struct {
	UUID   string
	Bus    string
	At     time.Time
	Source string
}

// PortObs is one InfiniBand port as sysfs showed it.
type PortObs struct {
	Device string // mlx5_0
	Port   int    // ports/<n>
	GUID   string // ports/<n>/gids/0 interface id, or the node GUID; empty when unknown
	// Netdevs are the interfaces on the port (/sys/class/net/*/device/infiniband/<dev>
	// with dev_port), which the kernel log and syslog name.
	Netdevs   []string
	State     int // state, number part: 4 for "4: ACTIVE"
	PhysState int // phys_state, number part: 5 for "5: LinkUp"
	// LinkDowned is counters/link_downed, read only where that is configured to be safe.
	LinkDowned Reading
	SampledAt  time.Time
}
