package repair

import (
	"slices"
	"time"

	"github.com/nodecheck/nodecheck/drain"
)

// The remedies a repair reads, in checks.Remedy's words (drain never imports checks).
const (
	RemedyReset   = "reset_gpu"
	RemedyReboot  = "reboot"
	RemedyService = "service"
	RemedyAdmin   = "admin"
)

// Fault is one failure of the run as a repair reads it: a failing detail with the GPU it
// concerns, or a failing result without failing details.
type Fault struct {
	Check   string // the check id
	Remedy  string // reset_gpu, reboot, service, admin; "" for none
	Bus     string // the GPU's PCI bus id, sysfs form "0000:9b:00.0"; "" for the node
	Summary string // one line
}

// GPU is one GPU as the run's NVML facts showed it.
type GPU struct {
	Bus    string `json:"bus"` // sysfs form: "0000:9b:00.0"
	UUID   string `json:"uuid,omitempty"`
	Serial string `json:"serial,omitempty"` // "" where the facts do not carry it
	// Processes is how many compute processes NVML listed on it; -1 when NVML could not say.
	Processes int `json:"-"`
	// Arch is the GPU's architecture (ArchAmpere, ...; "" for a model nodecheck does not
	// know), Links how many NVLinks NVML answered for (0: no NVLink; -1: not read), and
	// ActiveLinks how many of them are up: what ResetSet decides by.
	Arch        string `json:"-"`
	Links       int    `json:"-"`
	ActiveLinks int    `json:"-"`
}

// Outcomes of a repair entry.
const (
	OutcomePending = "pending" // under way: a reset done or a reboot asked, waiting for the clean runs
	OutcomeOK      = "ok"      // the node went back into service after it
	OutcomeFailed  = "failed"  // it did not help, or did not happen
)

// Entry is one repair in the record.
type Entry struct {
	Action string `json:"action"`         // reset_gpu or reboot
	GPUs   []GPU  `json:"gpus,omitempty"` // the GPUs it was for (a reset's, or a reboot's faulty GPUs)
	// Peers are the GPUs a reset took with GPUs because the driver resets them only together
	// (ResetSet): reset, but not counted as repairs of theirs toward escalation.
	Peers   []GPU     `json:"peers,omitempty"`
	Fault   string    `json:"fault"` // the failures that called for it: "xid_errors@0000:9b:00.0"
	Started time.Time `json:"started"`
	// BootID is the boot the repair started in: a reboot is done when the boot id changes.
	BootID   string    `json:"boot_id,omitempty"`
	Outcome  string    `json:"outcome"`
	Finished time.Time `json:"finished,omitzero"`
	Detail   string    `json:"detail,omitempty"` // what happened: the reset's output, why it failed
}

// ResetGPUs are the GPUs the entry's reset command names: its GPUs, then their peers.
func (e Entry) ResetGPUs() []GPU { return append(slices.Clone(e.GPUs), e.Peers...) }

// Record is one node's repair record, oldest first. The last entry is the repair under way
// while its outcome is pending (or a reset failed, the next rung not yet taken).
type Record struct {
	Entries []Entry `json:"entries"`
}

// Last returns the newest entry, if any.
func (r Record) Last() (Entry, bool) {
	if len(r.Entries) == 0 {
		return Entry{}, false
	}
	return r.Entries[len(r.Entries)-1], true
}

// Step is what Decide says to do next.
type Step string

// The steps, as the JSON report's "repair.action" spells them.
const (
	StepNone     Step = "none"     // nothing to repair (not drained by nodecheck, healthy, a person's remedy)
	StepWait     Step = "waiting"  // a repair is under way: a reboot not yet done, clean runs not yet enough
	StepReset    Step = "reset"    // reset the named GPUs
	StepReboot   Step = "reboot"   // ask Slurm to reboot the node
	StepEscalate Step = "escalate" // stop repairing: drain as "nodecheck: service: ..."
	StepResume   Step = "resume"   // the repaired node passed its clean runs: back into service
	StepHeld     Step = "held"     // max_repairing: wait for a turn
	StepBusy     Step = "busy"     // a job on the node, or its jobs unknown: no repair
)

// Steps lists every Step, in the order above.
func Steps() []Step {
	return []Step{StepNone, StepWait, StepReset, StepReboot, StepEscalate, StepResume, StepHeld, StepBusy}
}

// Input is everything Decide rests on, gathered by Apply.
type Input struct {
	Node drain.NodeState // as Slurm shows it after drain acted
	// Passes is drain's count of health runs in a row in which every check that drained the
	// node looked again and found the fault gone (this run included); a check that failed and
	// then errored or skipped breaks the row. PassesKnown is false without a state directory.
	Passes      int
	PassesKnown bool
	Faults      []Fault // this run's failures
	GPUs        []GPU   // NVML's GPUs in this run; GPUsKnown false when NVML could not be read
	GPUsKnown   bool
	Fabric      Fabric // the NVSwitches and Fabric Manager: which GPUs reset together (ResetSet)
	BootID      string // this boot's id (/proc/sys/kernel/random/boot_id)
	// Jobs is how many jobs squeue lists on the node in a state that holds it; -1 when squeue
	// could not say (JobsErr).
	Jobs    int
	JobsErr string
	// Repairing is how many other nodes of the cluster are in repair (drain.InRepair), of
	// Total nodes; Total 0 when the count could not be made (CountErr).
	Repairing int
	Total     int
	CountErr  string
	Record    Record
	Now       time.Time
}

// Decision is Decide's answer.
type Decision struct {
	Step    Step
	Message string // one line: what and why
	// GPUs are the GPUs to reset (StepReset), or the GPU an escalation names.
	GPUs []GPU
	// Peers are the GPUs a reset takes with GPUs (ResetSet), Together why; none when the
	// GPUs reset alone.
	Peers    []GPU
	Together string
	// Reason is the reason to set: the tagged drain reason for a reset or reboot, the service
	// reason for an escalation.
	Reason string
	// Close, when set, is the outcome the last entry gets (ok, failed), with CloseDetail.
	Close       string
	CloseDetail string
	// Entry is the new entry to record for a reset or reboot (pending).
	Entry *Entry
}
