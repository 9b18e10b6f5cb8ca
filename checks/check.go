// Package checks owns the check contract, the ordered registry, the runner and the results.
// Each check keeps its nodecheck.toml section and its explanation beside it (Schema hands the
// sections to config). Checks read the node only through node.Facts and Slurm's files through
// config/slurm; they never call scontrol (drain does) and never write to the node.
package checks

import (
	"context"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// Status is the verdict of one check.
type Status string

// The statuses, from best to worst as a run summary ranks them.
const (
	StatusOK    Status = "ok"    // passed
	StatusSkip  Status = "skip"  // does not apply here; the summary says why
	StatusWarn  Status = "warn"  // worth attention, never drains
	StatusError Status = "error" // could not decide; the summary says why
	StatusFail  Status = "fail"  // the node is unfit
)

// rank orders statuses so that the worst one of a set can be picked.
func (s Status) rank() int {
	switch s {
	case StatusOK:
		return 0
	case StatusSkip:
		return 1
	case StatusWarn:
		return 2
	case StatusError:
		return 3
	case StatusFail:
		return 4
	}
	return 3
}

// Worse reports whether s is worse than t.
func (s Status) Worse(t Status) bool { return s.rank() > t.rank() }

// Detail is the verdict on one device, port or file.
type Detail struct {
	Device   string `json:"device"`
	Status   Status `json:"status"`
	Message  string `json:"message"`
	Observed string `json:"observed,omitempty"`
	Expected string `json:"expected,omitempty"`
	// Remedy is what brings this device back, set on every failing detail (remedy.go).
	Remedy Remedy `json:"remedy,omitempty"`
	// Subject is the device the detail is about, as the judge knew it: what code that acts
	// on the detail reads (the repair step takes the GPU to reset from it), never Device or
	// Message, which are for people. Not in the JSON report yet: exposing it is a later
	// schema change that only adds keys.
	Subject Subject `json:"-"`
}

// Subject names the device a finding is about, as fields the judge sets. Every judge that
// makes a detail about one device sets it: a GPU, an InfiniBand port, a service, a device
// file, the PCI function of an NVSwitch or HCA. A part left zero is unknown, or not that
// kind of device; a detail about the node, a configuration line, several GPUs at once
// (gpu_models' groups, fabric_manager's "fabric") or a run (a NCCL message size) has a zero
// Subject. A result carries the subject of the detail its summary names (Result.Subject),
// so a failure or an error with no failing detail still names its device as fields.
type Subject struct {
	GPU GPURef
	IB  IBPortRef
	// Service is a systemd unit: "nvidia-fabricmanager", "nvidia-imex".
	Service string
	// File is a device file: "/dev/nvidia3", "/dev/nvidia-caps-imex-channels/channel0".
	File string
	// PCI is the address of a PCI function that is no GPU, sysfs form: an NVSwitch or an
	// HCA whose link pcie_link judges.
	PCI string
	// Mount is a mount point; no check judges one yet.
	Mount string
}

// GPURef names one GPU by what the judge knew of it.
type GPURef struct {
	// Index is NVML's index of the GPU, where HasIndex says NVML gave one.
	Index    int
	HasIndex bool
	// Bus is the GPU's PCI bus id, sysfs form "0000:9b:00.0"; "" where unknown.
	Bus    string
	UUID   string // "GPU-..."; "" where not read
	Serial string // the board serial; "" where not read
	// Slot is the kernel's name of the GPU's PCI device where no bus id is known: the
	// driver's XID lines say "PCI:0000:9b:00", without the function, and only NVML ties
	// that to a GPU. "" otherwise.
	Slot string
}

// Known reports whether g names a GPU at all.
func (g GPURef) Known() bool {
	return g.HasIndex || g.Bus != "" || g.UUID != "" || g.Serial != "" || g.Slot != ""
}

// IBPortRef names an InfiniBand or RoCE port: its HCA as the kernel names it under
// /sys/class/infiniband ("mlx5_0") and its port number (from 1).
type IBPortRef struct {
	Device string
	Port   int
	// Netdev is the port's network interface ("ib0") where only a kernel or syslog line
	// named the port (the history's ib_flaps); "" otherwise.
	Netdev string
}

// Result is what one check says about the node.
type Result struct {
	Check    string   `json:"check"`
	Status   Status   `json:"status"`
	Summary  string   `json:"summary"` // one line, fit for a drain reason
	Observed string   `json:"observed,omitempty"`
	Expected string   `json:"expected,omitempty"`
	Details  []Detail `json:"details,omitempty"`
	// Remedy, on a failing result, is the most drastic remedy of its failing details, or
	// the one of a failure no device carries (settleRemedy); empty otherwise.
	Remedy Remedy `json:"remedy,omitempty"`
	// Subject is the device the summary speaks of: the subject of the detail it names
	// first, set by the judge with the summary; zero where the summary is about the node,
	// a file or several devices at once. Code that acts on a result without a failing
	// detail (an error counted as a failure) reads it, never the summary's text.
	Subject  Subject       `json:"-"`
	Duration time.Duration `json:"-"`
	// Err is the cause of an error status, for logs.
	Err error `json:"-"`
}

// Check is one ordered health check. Run must honour ctx and must not write to the node.
type Check interface {
	// ID is the check's stable name, used in config, reasons and metrics: "ib_ports".
	ID() string
	// Description is one line for `nodecheck list`.
	Description() string
	// Section returns a new [checks.ID] section of nodecheck.toml holding the check's
	// built-in defaults: a pointer to a struct that embeds config.CheckCommon (see
	// config.Section), with a ValidateSection method where the check has rules of its own.
	Section() config.Section
	// Explain is what `nodecheck explain ID` tells an admin about the check.
	Explain() Explanation
	// Faults declares the ways the check fails, beside its code: the rows of the remedy
	// table that are its own (each fault with its remedy and why), and the shared faults
	// it gives too (remedy.go). The remedy table, explain and the README are built from it.
	Faults() Faults
	// Run judges the node. It returns a Result, never panics on node data, and returns soon
	// after ctx is done.
	Run(ctx context.Context, env *Env) Result
}

// Env is everything a check may look at.
type Env struct {
	Facts  node.Facts
	Config *config.Config // effective for this node (groups applied)
	Mode   config.Mode
	Node   string // the node's Slurm name, as the checks look it up in slurm.conf and gres.conf
	// Target is the live Slurm node a replay reports on and acts on (--node with a
	// snapshot that names its own node); "" means Node.
	Target string
	Job    Job
	Slurm  *SlurmFiles
	// Budget is how long the whole run may take and why (NewEnv); zero outside a run.
	Budget Budget
	// ReadOnly forbids even the one write a check makes to the node: nccl_allreduce keeps
	// its last result in the state directory (State) so that the modes it does not run in
	// can report it. Set for snapshot replays (which must not touch the live node) and dry
	// runs.
	ReadOnly bool
	// State is the run's state directory ([state] dir), opened once by the run for every
	// file nodecheck keeps there; nil when none is configured.
	State *files.State
	// History says where the run keeps the node's history and at what time (NewEnv);
	// history is what Run loaded of it for the checks that judge over time.
	History HistorySetup
	history *runHistory
}

// Job is the Slurm job a prolog or epilog runs for; zero outside those.
type Job struct {
	ID   string // SLURM_JOB_ID
	GPUs string // SLURM_JOB_GPUS: indices into this node's gres.conf gpu entries, in file order
	// UID and User are the job's owner (SLURM_JOB_UID, SLURM_JOB_USER), as Slurm wrote them;
	// empty when not set. UID stays text so that an unset one is not uid 0 (root).
	UID  string
	User string
}

// Schema is nodecheck.toml's [checks] table: the section of every registered check, in run
// order. It is what config.Default, config.ParseConfig and config.LoadConfig take.
func Schema() config.Schema {
	out := make(config.Schema, len(ordered))
	for i, c := range ordered {
		out[i] = config.SectionSpec{ID: c.ID(), Default: c.Section}
	}
	return out
}

// Settings returns c's common settings in cfg: those of its [checks.ID] section, or its
// built-in ones where cfg has no section for it (a config made from another schema).
func Settings(cfg *config.Config, c Check) config.CheckCommon {
	if s := cfg.Checks.Get(c.ID()); s != nil {
		return *s.Common()
	}
	return *c.Section().Common()
}

// settings returns the [checks.id] section of cfg as its type T, for a check to read its
// own keys: settings[*ibPortsConfig](env.Config, idIBPorts). Where cfg has no such section
// (a config made from another schema) it gives the check's built-in defaults.
func settings[T config.Section](cfg *config.Config, id string) T {
	if s, ok := config.SectionOf[T](cfg, id); ok {
		return s
	}
	var zero T
	if c, ok := byID(id); ok {
		if s, ok := c.Section().(T); ok {
			return s
		}
	}
	return zero
}
