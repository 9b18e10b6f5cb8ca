package checks

import (
	"slices"
	"sync"

	"github.com/nodecheck/nodecheck/checks/node"
)

// Remedy is what brings a failing device, or the node, back into service (README
// "Remedies"): the step the repair flow takes, cheapest first, and what an admin reads in
// the drain reason. Every failing detail names one, from the remedy table below, and a
// failing result summarises them (settleRemedy).
type Remedy string

// The remedies, from the cheapest to the most drastic.
const (
	// RemedyResetGPU: reset the GPU the detail names (nvidia-smi -r -i N, once nothing holds
	// it); a result whose reset_gpu names no GPU means every GPU of the node. Minutes.
	RemedyResetGPU Remedy = "reset_gpu"
	// RemedyReboot: reboot the node (scontrol reboot). About 30 minutes on bare metal.
	RemedyReboot Remedy = "reboot"
	// RemedyAdmin: a person changes configuration or software; no reset or reboot fixes it.
	RemedyAdmin Remedy = "admin"
	// RemedyService: hardware to replace, or a vendor case (RMA).
	RemedyService Remedy = "service"
)

// Remedies lists every remedy, cheapest first, in the order metrics and docs list them.
func Remedies() []Remedy {
	return []Remedy{RemedyResetGPU, RemedyReboot, RemedyAdmin, RemedyService}
}

// rank orders remedies by what they cost: a reset takes minutes, a reboot half an hour, and
// the last two need a person (service also a part or a vendor). 0 is no remedy.
func (r Remedy) rank() int { return slices.Index(Remedies(), r) + 1 }

// Valid reports whether r is one of Remedies.
func (r Remedy) Valid() bool { return r.rank() > 0 }

// MostDrastic is the most drastic of rs ("" for none): what a node needs when its devices
// need each of rs, since a cheaper remedy leaves the other devices failing.
func MostDrastic(rs ...Remedy) Remedy {
	var out Remedy
	for _, r := range rs {
		if r.rank() > out.rank() {
			out = r
		}
	}
	return out
}

// settleRemedy sets res.Remedy, the result's summary of its remedies: for a failing result
// the most drastic of the remedies of its failing details and of the one the check set on
// the result itself (a failure no device carries: a timeout, a count that is short);
// nothing for any other status. The most drastic, not the first: a reset that fixes GPU 3
// leaves GPU 5 waiting for its replacement, so the node needs what the worst device needs.
// The cheaper per-device remedies stay on the details, where the repair flow reads them to
// take the cheapest first (docs/remedies.md).
func settleRemedy(res *Result) {
	if res.Status != StatusFail {
		res.Remedy = ""
		return
	}
	for _, d := range res.Details {
		if d.Status == StatusFail {
			res.Remedy = MostDrastic(res.Remedy, d.Remedy)
		}
	}
}

// fault names one way a check fails: a row of the remedy table. Judges set the remedy of a
// failing detail or result with remedyOf(fault), so that every failure maps to one
// documented row (TestRemedyTable holds each fault constant to one row, and each row to a
// judge that gives it). A check declares its own faults in its own file, named
// "<check>/<what>", with their rows (Check.Faults); the faults below belong to no one
// check, and their names start with a word that is no check id.
type fault string

// The generic and the shared faults.
const (
	// faultTimeout is any check's: the check, or a read of the node, did not end in time.
	faultTimeout fault = "any/timeout"
	// The shared faults: a check that may give one names it in its Faults (shared).
	faultSlurmTimeout fault = "any/slurm_files_timeout"
	faultNVMLDriver   fault = "any/nvml_driver"
	faultNVMLMissing  fault = "any/nvml_not_installed"
)

// remedyRow is one row of the remedy table: a way a check fails, the remedy, and why.
type remedyRow struct {
	fault  fault
	when   string // the failure, as `nodecheck explain` and the README print it
	remedy Remedy
	source string // where the mapping comes from
}

// Faults is what a check declares about the ways it fails (Check.Faults): the rows of the
// remedy table that are its own, the shared faults it gives too, and a note for explain.
type Faults struct {
	own    []remedyRow // the check's own faults, in the order explain lists them
	shared []fault     // the faults of sharedRows the check gives
	// note is a paragraph explain adds after the check's remedies; nil for none. A function,
	// since it may read the table that Faults builds.
	note func() string
}

// srcXIDCatalog is NVIDIA's XID catalog, which the rows of several checks cite.
const srcXIDCatalog = "NVIDIA XID catalog, Resolution Bucket (Immediate Action), https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

// sharedRows are the faults several checks give. Each check that gives one names it in its
// Faults, so the table lists those checks without a list here.
var sharedRows = []remedyRow{
	{faultNVMLDriver, "NVML does not initialise where GPUs are expected (ERROR_DRIVER_NOT_LOADED, ERROR_LIB_RM_VERSION_MISMATCH after a driver upgrade, other errors)", RemedyReboot,
		"nvml.h: the kernel module is not loaded, or differs from the library installed: a boot loads the installed driver"},
	{faultNVMLMissing, "NVML is not there to ask: ERROR_LIBRARY_NOT_FOUND (no driver installed), ERROR_NO_PERMISSION, or a nodecheck built without NVML", RemedyAdmin,
		"software to install or a permission to fix; no reboot installs a driver"},
	{faultSlurmTimeout, "reading slurm.conf or gres.conf did not end in time", RemedyAdmin,
		"the file system that holds Slurm's configuration (NFS, slurmd's configless cache) hangs: a person fixes the mount"},
}

// genericRows apply to every check.
var genericRows = []remedyRow{
	{faultTimeout, "a check, or a read of the node (NVML, sysfs, /dev, dmesg, systemd), did not end in time, or the run's budget ran out", RemedyReboot,
		"a wedged GPU blocks NVML calls for minutes (go-nvml gives no way to cancel one), and a task blocked in the kernel (state D) cannot be killed: only a reboot clears either"},
}

// tableRow is a row of the assembled table with the checks that give it (nil: every check).
type tableRow struct {
	remedyRow
	checks []string
}

// remedyTable is the one table of remedies (docs/remedies.md prints it), assembled from the
// registry on first use: each check's own rows in run order, then the shared rows with the
// checks that declare them, then the generic rows.
var remedyTable = sync.OnceValue(func() []tableRow {
	var out []tableRow
	for _, c := range ordered {
		for _, r := range c.Faults().own {
			out = append(out, tableRow{r, []string{c.ID()}})
		}
	}
	for _, r := range sharedRows {
		var ids []string
		for _, c := range ordered {
			if slices.Contains(c.Faults().shared, r.fault) {
				ids = append(ids, c.ID())
			}
		}
		out = append(out, tableRow{r, ids})
	}
	for _, r := range genericRows {
		out = append(out, tableRow{r, nil})
	}
	return out
})

// rowOf is f's row of the table; ok is false for a fault the table lacks (a bug
// TestRemedyTable catches).
func rowOf(f fault) (remedyRow, bool) {
	t := remedyTable()
	i := slices.IndexFunc(t, func(r tableRow) bool { return r.fault == f })
	if i < 0 {
		return remedyRow{}, false
	}
	return t[i].remedyRow, true
}

// remedyOf is the remedy of fault f ("" for a fault the table lacks).
func remedyOf(f fault) Remedy {
	r, _ := rowOf(f)
	return r.remedy
}

// failDetail makes d a failing detail with f's remedy.
func failDetail(d *Detail, f fault) {
	d.Status = StatusFail
	d.Remedy = remedyOf(f)
}

// rowsFor are the rows of the check id: its own, then the shared ones it declares, then the
// generic ones.
func rowsFor(id string) []remedyRow {
	var out []remedyRow
	for _, r := range remedyTable() {
		if r.checks == nil || slices.Contains(r.checks, id) {
			out = append(out, r.remedyRow)
		}
	}
	return out
}

// RemedyRow is one row of the remedy table as docs/remedies.md prints it.
type RemedyRow struct {
	Checks  []string // nil: every check
	Failure string
	Remedy  Remedy
	Source  string
}

// RemedyTable returns the remedy table, in its order.
func RemedyTable() []RemedyRow {
	t := remedyTable()
	out := make([]RemedyRow, len(t))
	for i, r := range t {
		out[i] = RemedyRow{Checks: slices.Clone(r.checks), Failure: r.when, Remedy: r.remedy, Source: r.source}
	}
	return out
}

// nvmlInitFault is the fault of NVML failing to initialise with init (GPUInventory.Init)
// where GPUs are expected: software to install or a permission where it is not there to
// ask, else the driver to load.
func nvmlInitFault(init string) fault {
	switch init {
	case "ERROR_LIBRARY_NOT_FOUND", "ERROR_NO_PERMISSION", "ERROR_FUNCTION_NOT_FOUND", node.InitNotBuilt:
		return faultNVMLMissing
	}
	return faultNVMLDriver
}
