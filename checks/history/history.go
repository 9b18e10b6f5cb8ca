package history

import (
	"strconv"
	"strings"
	"time"
)

// Format is the version of the history file this package reads and writes. A file with
// another format is set aside, never guessed at.
const Format = 1

// History is the whole file: one node's memory. Times are Unix seconds; kernel times are
// microseconds since the boot they belong to. Lists are kept sorted oldest first.
type History struct {
	Format int    `json:"format"`
	Node   string `json:"node"`
	// UpdatedAt is when the last Merge ran (the run's "now").
	UpdatedAt int64   `json:"updated_at"`
	Boots     []Boot  `json:"boots,omitempty"`
	GPUs      []GPU   `json:"gpus,omitempty"`
	Ports     []Port  `json:"ports,omitempty"`
	Clears    []Clear `json:"clears,omitempty"`
	// Repairs is the repair record: what was tried on a GPU or the node, when,
	// and how it ended.
	Repairs []Repair `json:"repairs,omitempty"`
	// Validations are the node's validations (`nodecheck validate`), oldest first.
	Validations []Validation `json:"validations,omitempty"`
	// SyslogMark is how far the syslog's carrier lines were merged (they carry a wall time
	// of whole seconds, not a kernel time).
	SyslogMark Mark `json:"syslog_mark,omitzero"`
	// Clock is what the merges found wrong with the node's clock (clock.go).
	Clock Clock `json:"clock,omitzero"`
}

// New returns an empty history for node.
func New(node string) *History { return &History{Format: Format, Node: node} }

// Boot is one boot of the node, known by /proc/sys/kernel/random/boot_id.
type Boot struct {
	// N numbers boots in the order this history met them; events and samples name their
	// boot by N, so that a 36-character boot id is written once.
	N  int    `json:"n"`
	ID string `json:"id"`
	// Time is when the boot began (the run's time less /proc/uptime); 0 when unknown.
	Time      int64 `json:"time,omitempty"`
	FirstSeen int64 `json:"first_seen"`
	LastSeen  int64 `json:"last_seen"`
	// XIDMark is the kernel time (µs) of the newest timestamped XID line merged from this
	// boot's kernel log, which dmesg shows again at every run: lines at or before it are
	// already counted.
	XIDMark int64 `json:"xid_mark,omitempty"`
	// XIDLines counts XID lines without a kernel time merged from this boot, by position.
	XIDLines int `json:"xid_lines,omitempty"`
	// LinkMark is XIDMark for the kernel's link up/down lines.
	LinkMark int64 `json:"link_mark,omitempty"`
	// DriverLoads are the kernel times (µs) of the "NVRM: loading NVIDIA UNIX" lines of this
	// boot: a load after an XID means the driver was reloaded, which resets every GPU.
	DriverLoads []int64 `json:"driver_loads,omitempty"`
}

// Mark is a position in a log whose lines have whole-second wall times: the newest second
// merged and how many lines of that second were.
type Mark struct {
	T int64 `json:"t"`
	N int   `json:"n"`
}

// GPU is one physical GPU, known by its UUID (and serial). The bus id is where it was last
// seen: a GPU moved to another slot keeps its record; a new GPU in an old slot gets a new one.
type GPU struct {
	UUID   string `json:"uuid,omitempty"`
	Serial string `json:"serial,omitempty"`
	// Bus is the PCI address last seen, sysfs form "0000:9b:00.0".
	Bus       string `json:"bus"`
	Index     int    `json:"index"`
	Name      string `json:"name,omitempty"`
	FirstSeen int64  `json:"first_seen"`
	LastSeen  int64  `json:"last_seen"`
	// LastBoot is the boot (Boot.N) the GPU was last seen in.
	LastBoot int      `json:"last_boot"`
	XIDs     []XID    `json:"xids,omitempty"`
	Samples  []Sample `json:"samples,omitempty"`
	Resets   []Reset  `json:"resets,omitempty"`
}

// Key is how Clear and Repair name a GPU: its UUID, else its serial, else its bus id (a GPU
// met only in the kernel log, say after it fell off the bus before NVML ever saw it).
func (g GPU) Key() string {
	switch {
	case g.UUID != "":
		return g.UUID
	case g.Serial != "":
		return "serial:" + g.Serial
	}
	return "bus:" + g.Bus
}

// GPUID is a GPU's identity as the history knows it, for a judgement to carry as fields.
type GPUID struct {
	UUID   string // "" where NVML never gave one
	Serial string
	Bus    string // sysfs form "0000:9b:00.0"
	Index  int    // NVML's index when last seen; -1 for a GPU known only from the kernel log
}

// ID is g's identity.
func (g GPU) ID() GPUID { return GPUID{UUID: g.UUID, Serial: g.Serial, Bus: g.Bus, Index: g.Index} }

// Label names the GPU for an admin: "gpu 0000:9b:00.0 (GPU-…, serial 1652…)".
func (g GPU) Label() string {
	var id []string
	if g.UUID != "" {
		id = append(id, g.UUID)
	}
	if g.Serial != "" {
		id = append(id, "serial "+g.Serial)
	}
	if len(id) == 0 {
		return "gpu " + g.Bus
	}
	return "gpu " + g.Bus + " (" + strings.Join(id, ", ") + ")"
}

// XID is a burst of one XID on one GPU: lines of the same XID (and, for XID 13, the same
// GPC/TPC) less than Limits.CollapseGap apart are kept as one record with a count, so that
// an XID storm costs one record.
type XID struct {
	Boot int `json:"b"`
	// K and KLast are the kernel times (µs) of the burst's first and last line; 0 when the
	// line had none.
	K     int64 `json:"k,omitempty"`
	KLast int64 `json:"kl,omitempty"`
	// T and TLast are the same as wall times (boot time plus kernel time, or the run's time
	// when either is unknown).
	T     int64 `json:"t"`
	TLast int64 `json:"tl"`
	N     int   `json:"n"`
	XID   int   `json:"x"`
	// Loc is "GPC/TPC" for XID 13 lines that name them ("7/7"), IntrInfo/ErrorStatus in hex
	// for NVLink5 XIDs 144-150 ("25525c6/0"), else empty.
	Loc string `json:"l,omitempty"`
	Msg string `json:"m,omitempty"`
}

// Counter names one sampled GPU counter; it indexes Sample.C.
type Counter int

// The sampled counters. All are "volatile": they restart at 0 when the driver reloads, the
// GPU is reset or the node reboots.
const (
	ECCCorrected   Counter = iota // nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE_ECC)
	NVLinkCRC                     // nvmlDeviceGetNvLinkErrorCounter DL_CRC_FLIT + DL_CRC_DATA, summed over links
	NVLinkReplay                  // nvmlDeviceGetNvLinkErrorCounter DL_REPLAY, summed over links
	NVLinkRecovery                // nvmlDeviceGetNvLinkErrorCounter DL_RECOVERY, summed over links
	PCIeReplay                    // nvmlDeviceGetPcieReplayCounter
	NumCounters
)

var counterNames = [NumCounters]string{"correctable ECC (volatile)", "NVLink CRC errors", "NVLink replays", "NVLink recoveries", "PCIe replays"}
var counterIDs = [NumCounters]string{"ecc_corrected", "nvlink_crc", "nvlink_replay", "nvlink_recovery", "pcie_replay"}

// String is the counter as an admin reads it: "correctable ECC (volatile)".
func (c Counter) String() string {
	if c < 0 || c >= NumCounters {
		return "counter " + strconv.Itoa(int(c))
	}
	return counterNames[c]
}

// ID is the counter's name in rule ids and JSON: "ecc_corrected".
func (c Counter) ID() string {
	if c < 0 || c >= NumCounters {
		return "counter_" + strconv.Itoa(int(c))
	}
	return counterIDs[c]
}

// Sample is one reading of a GPU's counters. C holds -1 for a counter not read.
type Sample struct {
	T    int64 `json:"t"`
	Boot int   `json:"b"`
	// Gen numbers the counter series: it goes up when the boot changes, a counter went down
	// (the driver reloaded or the GPU was reset) or a reset was seen, so that a rate is never
	// taken across a restart of the counters.
	Gen int                `json:"g"`
	C   [NumCounters]int64 `json:"c"`
}

// Reset is a GPU reset that was seen (by a repair, or reported by the run).
type Reset struct {
	T      int64  `json:"t"`
	Boot   int    `json:"b"`
	Source string `json:"src,omitempty"`
}

// Port is one InfiniBand (or RoCE) port, known by device and port number, and by its GUID
// where known: a port whose GUID changes is a new adapter, and its record starts afresh.
type Port struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	GUID   string `json:"guid,omitempty"`
	// Netdevs are the network interfaces on the port (ib0, enp65s0f0np0), which name it in
	// the kernel log and the syslog. A port known only by such a line has no Device.
	Netdevs   []string `json:"netdevs,omitempty"`
	FirstSeen int64    `json:"first_seen"`
	LastSeen  int64    `json:"last_seen"`
	LastBoot  int      `json:"last_boot"`
	// States are the port's state changes as the runs saw them: a new entry when state or
	// phys_state differ from the last, else the last entry's Until moves on.
	States []PortState `json:"states,omitempty"`
	Events []LinkEvent `json:"events,omitempty"`
	// Downed samples counters/link_downed, read only where the run was configured to.
	Downed []Count `json:"link_downed,omitempty"`
}

// Key names the port: "mlx5_0/1", or "netdev:ib6" for a port known only by its interface.
func (p Port) Key() string {
	if p.Device == "" {
		if len(p.Netdevs) > 0 {
			return "netdev:" + p.Netdevs[0]
		}
		return "netdev:?"
	}
	return p.Device + "/" + strconv.Itoa(p.Port)
}

// PortID names a port as fields: its HCA and port number, or, for a port known only from a
// kernel or syslog line, its network interface.
type PortID struct {
	Device string // "mlx5_0"; "" for a port known only by its netdev
	Port   int
	Netdev string // the first network interface on the port; "" where none is known
}

// ID is p's name as fields.
func (p Port) ID() PortID {
	id := PortID{Device: p.Device, Port: p.Port}
	if len(p.Netdevs) > 0 {
		id.Netdev = p.Netdevs[0]
	}
	return id
}

// Label names the port for an admin: "mlx5_0/1 (ib0)".
func (p Port) Label() string {
	if p.Device == "" || len(p.Netdevs) == 0 {
		return p.Key()
	}
	return p.Key() + " (" + strings.Join(p.Netdevs, ", ") + ")"
}

// PortState is a port's state from T to Until, as sysfs numbers it (state 4 ACTIVE,
// phys_state 5 LinkUp).
type PortState struct {
	T     int64 `json:"t"`
	Until int64 `json:"u"`
	Boot  int   `json:"b"`
	State int   `json:"s"`
	Phys  int   `json:"p"`
}

// Active is the InfiniBand state ACTIVE in sysfs's numbering ("4: ACTIVE").
const Active = 4

// LinkEvent is one link down or up line of the kernel log or the syslog.
type LinkEvent struct {
	T    int64 `json:"t"`
	Boot int   `json:"b"`
	// K is the kernel time (µs); 0 for a syslog line.
	K   int64  `json:"k,omitempty"`
	Up  bool   `json:"up"`
	Src string `json:"src"`
}

// Count is one reading of a counter that only ever grows within a boot.
type Count struct {
	T    int64 `json:"t"`
	Boot int   `json:"b"`
	V    int64 `json:"v"`
}

// Clear is an admin's "nodecheck history clear": everything the target held up to At no
// longer counts.
type Clear struct {
	// Target is "all", "gpu" or "port"; Key is the GPU's or port's Key for the latter two.
	Target string `json:"target"`
	Key    string `json:"key,omitempty"`
	Bus    string `json:"bus,omitempty"`
	Who    string `json:"who"`
	At     int64  `json:"at"`
	Reason string `json:"reason,omitempty"`
}

// Repair is one repair tried on a GPU or the node (the repair step writes them; escalation counts
// them).
type Repair struct {
	// Target is "gpu" or "node"; Key, Bus and Serial name the GPU.
	Target string `json:"target"`
	Key    string `json:"key,omitempty"`
	Bus    string `json:"bus,omitempty"`
	Serial string `json:"serial,omitempty"`
	// Action is the remedy tried: "reset_gpu", "reboot", ...
	Action string `json:"action"`
	// Fault is what called for it: "xid_sticky: XID 79".
	Fault    string `json:"fault,omitempty"`
	Started  int64  `json:"started"`
	Finished int64  `json:"finished,omitempty"`
	// Outcome is "pending", "ok", "failed" or "refused".
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
	Who     string `json:"who,omitempty"`
}

// Repair outcomes.
const (
	OutcomePending = "pending"
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeRefused = "refused"
)

// Limits bound the file. Older entries go first; an entry a sticky judgement still stands on
// is kept past MaxAge and the per-entity caps (see prune).
type Limits struct {
	// MaxBytes caps the encoded file; Save drops the oldest entries until it fits.
	MaxBytes int
	// MaxAge drops events and samples older than this.
	MaxAge time.Duration
	// Per-entity caps.
	XIDsPerGPU     int
	SamplesPerGPU  int
	ResetsPerGPU   int
	StatesPerPort  int
	EventsPerPort  int
	DownedPerPort  int
	Boots          int
	Clears         int
	Repairs        int
	Validations    int
	GPUs           int
	Ports          int
	KeptAside      int
	CollapseGap    time.Duration
	MinSampleSpace time.Duration
}

// DefaultLimits keep a full 8-GPU, 8-port node's file under 64 KiB (TestFullHistorySize);
// BenchmarkRun measures a run's Load, Merge, Judge and Save of such a file.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes: 64 << 10,
		MaxAge:   30 * 24 * time.Hour,
		// Bursts collapse XID storms, and the repeat rules need 5 bursts a day at most.
		XIDsPerGPU: 16,
		// 32 readings thin out to one every 45 min over the day the rate rules look back.
		SamplesPerGPU: 32,
		ResetsPerGPU:  4,
		StatesPerPort: 8,
		// Twice what the flap rule needs to see a storm, with its ups.
		EventsPerPort: 16,
		DownedPerPort: 8,
		Boots:         8,
		Clears:        16,
		// Issue 15's escalation counts 5 repairs in 7 days per node or GPU.
		Repairs: 32,
		// A week of daily quick validations, and the last that passed however old.
		Validations: 8,
		GPUs:        64,
		Ports:       64,
		KeptAside:   3,
		// The finest repeat rule's burst gap (NVSentinel's XID 13 rule, 15 s): coarser rules
		// merge records again when they count.
		CollapseGap: 15 * time.Second,
		// Readings closer than this are thinned (the newest always stays).
		MinSampleSpace: time.Minute,
	}
}

// NormalizeBus turns the bus ids NVML, sysfs and the kernel log print into sysfs's form:
// "00000000:9B:00.0" and "0000:9b:00" become "0000:9b:00.0". ok is false for anything else.
func NormalizeBus(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(s, "PCI:")))
	dev, fn, hasFn := strings.Cut(s, ".")
	if !hasFn {
		fn = "0"
	}
	parts := strings.Split(dev, ":")
	if len(parts) != 3 || len(parts[0]) < 4 || len(parts[0]) > 8 || len(parts[1]) != 2 || len(parts[2]) != 2 || len(fn) != 1 {
		return "", false
	}
	for _, p := range append(parts, fn) {
		if _, err := strconv.ParseUint(p, 16, 32); err != nil {
			return "", false
		}
	}
	dom := strings.TrimLeft(parts[0], "0")
	if len(dom) < 4 {
		dom = strings.Repeat("0", 4-len(dom)) + dom
	}
	return dom + ":" + parts[1] + ":" + parts[2] + "." + fn, true
}

// boot returns the boot numbered n, or nil.
func (h *History) boot(n int) *Boot {
	for i := range h.Boots {
		if h.Boots[i].N == n {
			return &h.Boots[i]
		}
	}
	return nil
}

// current is the newest boot, or nil before the first Merge that knew the boot id.
func (h *History) current() *Boot {
	if len(h.Boots) == 0 {
		return nil
	}
	return &h.Boots[len(h.Boots)-1]
}

// currentN is the newest boot's N, or -1.
func (h *History) currentN() int {
	if b := h.current(); b != nil {
		return b.N
	}
	return -1
}

func unix(t int64) time.Time { return time.Unix(t, 0).UTC() }

// Human writes a duration as admins write it: "24h", "3h", "5m", "1h30m", "59s".
func Human(d time.Duration) string { return human(d) }

func human(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func stamp(t int64) string { return unix(t).Format(time.RFC3339) }
