package run

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/report"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
	"github.com/rs/zerolog"
)

// bootIDPath is where the kernel gives this boot's id; a replay reads the snapshot's copy.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// applyRepair runs the repair step after drain acted (repair.Apply), within what is left of
// the run's budget, and returns its outcome; nil when the run does not repair at all
// ([repair] off, not a health run), so that with [repair] absent a run is exactly as before.
// A replay repairs only with --repair and --node, and only the host its snapshot was
// recorded on (--test-bed lifts that for a test bed).
func (o Options) applyRepair(ctx context.Context, log zerolog.Logger, rep checks.Report, env *checks.Env, setup Setup, client *drain.Client, d *drain.Outcome) *repair.Outcome {
	replay := setup.Snapshot != nil
	if ok, why := repair.Permitted(env.Config, env.Mode, replay, o.Repair, o.NodeName != ""); !ok {
		if o.Repair {
			// Asked for by name: say why not where the report is read, not only in the log.
			out := &repair.Outcome{Action: repair.StepSkipped, Node: rep.Node, DryRun: o.DryRun, Message: "--repair: no repair: " + why}
			logRepair(log, *out)
			return out
		}
		return nil
	}
	out := &repair.Outcome{Action: repair.StepSkipped, Node: rep.Node, DryRun: o.DryRun}
	policy, err := repair.PolicyFrom(env.Config)
	switch {
	case err != nil:
		out.Message = err.Error()
	case replay && !o.TestBed && !sameHost(ctx, setup.Snapshot.Meta().Hostname):
		out.Message = fmt.Sprintf("the snapshot was recorded on host %q, not on this one: a replay repairs only the host it recorded (--test-bed on a test bed)", setup.Snapshot.Meta().Hostname)
	case rep.Interrupted:
		out.Message = "interrupted: no repair"
	case o.Partial:
		out.Message = "only some checks ran (--check): no repair"
	case d == nil:
		out.Message = "drain did not act in this run: no repair"
	}
	if out.Message != "" {
		logRepair(log, *out)
		return out
	}
	if dl := rep.Budget.Deadline; !dl.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	req := repair.Request{Node: rep.Node, Faults: repairFaults(rep, env.Config.ErrorIsFailure), BootID: bootID(ctx, env.Facts),
		Passes: d.Passes, PassesKnown: true, State: setup.State.State, DryRun: o.DryRun, DrainReason: d.Reason}
	req.GPUs, req.GPUsKnown = repairGPUs(ctx, env.Facts)
	req.Fabric = repairFabric(ctx, env.Facts, rep)
	res := repair.Apply(ctx, client, repair.Exec, policy, req)
	recordRepairs(ctx, setup.State, env.Node, &res)
	logRepair(log, res)
	return &res
}

// sameHost reports whether recorded, a snapshot's meta.json hostname, is this host. A
// snapshot without a hostname names no host, so it is not this one.
func sameHost(ctx context.Context, recorded string) bool {
	if recorded == "" {
		return false
	}
	h, err := os.Hostname()
	if err != nil {
		return false
	}
	short := func(s string) string { s, _, _ = strings.Cut(s, "."); return strings.ToLower(s) }
	return short(h) == short(recorded)
}

// recordRepairs writes what the repair did to the hardware into the node's history
// (checks.RecordRepairs), where `nodecheck history` shows it and a GPU reset ends the faults
// a reset clears: a reset per GPU (ok when the command succeeded), a reboot for the node
// (pending until the repair closes it: ok once the node is back in service, failed when it
// did not help or never happened). The repair's own state (what is under way, the boot it
// started in) stays in the state directory's repair.json. The file is the run's own history
// (node: env.Node, which a replay names from its snapshot). A failure to record is a warning.
func recordRepairs(ctx context.Context, st StatePaths, node string, out *repair.Outcome) {
	rs := historyRepairs(out)
	if len(rs) == 0 || out.DryRun || st.History.ReadOnly() {
		return
	}
	if st.History == nil {
		out.Warnings = append(out.Warnings, "the repair is not in the node's history ("+st.HistoryOff+")")
		return
	}
	dir, err := st.History.Open()
	if err == nil {
		var path string
		if path, err = checks.RecordRepairs(ctx, dir, node, rs, time.Now(), drain.DefaultLockWait); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the repair is not in the node's history %v", err))
	}
}

// historyRepairs is what the history records of out: the repair it started and, for a
// reboot, the one it closed.
func historyRepairs(out *repair.Outcome) []history.Repair {
	var rs []history.Repair
	if e := out.Started; e != nil {
		if e.Action == repair.RemedyReset {
			outcome := history.OutcomeOK
			if e.Outcome == repair.OutcomeFailed {
				outcome = history.OutcomeFailed
			}
			for _, g := range e.ResetGPUs() {
				hg := history.GPU{UUID: g.UUID, Serial: g.Serial, Bus: g.Bus}
				rs = append(rs, history.Repair{Target: "gpu", Key: hg.Key(), Bus: g.Bus, Serial: g.Serial, Action: e.Action, Fault: e.Fault,
					Started: e.Started.Unix(), Finished: e.Started.Unix(), Outcome: outcome, Detail: e.Detail, Who: "nodecheck repair"})
			}
		} else {
			rs = append(rs, nodeRepair(*e, history.OutcomePending))
		}
	}
	if e := out.Closed; e != nil && e.Action == repair.RemedyReboot {
		r := nodeRepair(*e, e.Outcome)
		r.Finished = e.Finished.Unix()
		rs = append(rs, r)
	}
	return rs
}

func nodeRepair(e repair.Entry, outcome string) history.Repair {
	return history.Repair{Target: "node", Key: "node", Action: e.Action, Fault: e.Fault, Started: e.Started.Unix(), Outcome: outcome, Detail: e.Detail, Who: "nodecheck repair"}
}

// repairFaults is the run's failures as a repair reads them: each failing detail with its
// remedy and the GPU its subject names, or the result itself, with the GPU of its subject,
// when no detail fails. The GPU comes from the fields the judge set (checks.Subject), never
// from a detail's or a summary's text, so rewording a message cannot change which GPU is
// reset; a subject that is no GPU (a port, a service, an NVSwitch) names none.
func repairFaults(rep checks.Report, errorIsFailure bool) []repair.Fault {
	var out []repair.Fault
	for _, r := range rep.Results {
		if r.Status != checks.StatusFail && !(errorIsFailure && r.Status == checks.StatusError) {
			continue
		}
		n := len(out)
		for _, dt := range r.Details {
			if dt.Status == checks.StatusFail {
				out = append(out, repair.Fault{Check: r.Check, Remedy: string(dt.Remedy), Bus: dt.Subject.GPU.Bus, Summary: dt.Device + ": " + dt.Message})
			}
		}
		if len(out) == n {
			out = append(out, repair.Fault{Check: r.Check, Remedy: string(r.Remedy), Bus: r.Subject.GPU.Bus, Summary: r.Summary})
		}
	}
	return out
}

// repairGPUs is NVML's view of the GPUs, and whether NVML could be read: the run's reading
// (checks.RepairGPUFields), with each GPU's architecture from the built-in model table and
// its NVLinks (-1 where they were not read, or NVML lost the GPU on the way).
func repairGPUs(ctx context.Context, facts node.Facts) ([]repair.GPU, bool) {
	inv, err := facts.GPUs(ctx)
	if err != nil || inv.Init != node.InitSuccess {
		return nil, false
	}
	linksRead := inv.Read().Has(node.GPUNVLinks)
	var out []repair.GPU
	for _, g := range inv.Devices {
		procs := -1
		if g.Compute != nil {
			procs = len(g.Compute.Processes)
		}
		links, active := -1, 0
		if linksRead && g.Error == "" {
			links = len(g.NVLinks)
			for _, l := range g.NVLinks {
				if l.Active {
					active++
				}
			}
		}
		out = append(out, repair.GPU{Bus: repair.BusID(g.PCIBusID), UUID: g.UUID, Serial: g.Serial, Processes: procs,
			Arch: checks.GPUArchitecture(g.Name), Links: links, ActiveLinks: active})
	}
	return out, true
}

// repairFabric is what decides which GPUs reset together besides the GPUs: the NVSwitches on
// the PCI bus (the run's listing, which fabric_manager read; -1 when it failed) and Fabric
// Manager's state as fabric_manager read it from systemd.
func repairFabric(ctx context.Context, facts node.Facts, rep checks.Report) repair.Fabric {
	f := repair.Fabric{NVSwitches: -1, FabricManager: checks.FabricManagerState(rep.Results)}
	if pci, err := facts.PCIDevices(ctx); err == nil {
		f.NVSwitches = checks.NVSwitches(pci)
	}
	return f
}

// bootID is the node's boot id ("" when it cannot be read: a repair then cannot tell a reboot
// from none, and never asks for a second).
func bootID(ctx context.Context, facts node.Facts) string {
	data, err := facts.ReadFile(ctx, bootIDPath)
	if err != nil || len(data) > 64 {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// repairMetrics is the metrics' repair part: nil with [repair] off (no repair family in the
// file, as before repairs existed); else the step the run took ("" when it did not repair)
// and the record's counts when the run read the record.
func repairMetrics(cfg *config.Config, fix *repair.Outcome) *report.RepairMetrics {
	if !cfg.Repair.Enabled {
		return nil
	}
	m := &report.RepairMetrics{}
	if fix != nil {
		m.Step, m.Counts = fix.Action, fix.Counts
	}
	return m
}

// logRepair logs the outcome and its warnings.
func logRepair(log zerolog.Logger, out repair.Outcome) {
	ev := log.Info()
	switch out.Action {
	case repair.StepNone:
		ev = log.Debug()
	case repair.StepHeld, repair.StepSkipped, repair.StepEscalate:
		ev = log.Warn()
	}
	logAction(log, ev.Str("repair", string(out.Action)), out.Node, out.DryRun, out.Reason, out.Commands, out.Message, out.Warnings)
}
