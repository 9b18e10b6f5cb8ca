package repair

import (
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
)

// The inputs below are literal. The node states and reasons are Slurm's as the test bed's
// Slurm 22.05 and 24.11 print them (scripts/testbed TestReboot: "DOWN+DRAIN+REBOOT_ISSUED",
// "... : reboot issued : reboot complete"); bus ids, serials and UUIDs are invented in the
// shape NVML gives them.

var (
	t0    = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	gpu9b = GPU{Bus: "0000:9b:00.0", UUID: "GPU-5a0b8c1e-0000-4000-8000-00000000009b", Serial: "1652922000001", Processes: 0}
	gpu19 = GPU{Bus: "0000:19:00.0", UUID: "GPU-5a0b8c1e-0000-4000-8000-000000000019", Serial: "1652922000002", Processes: 0}
)

const (
	xidReason   = "nodecheck: xid_errors: gpu 0000:9b:00.0: XID 48 (DBE) [reset_gpu]"
	lostReason  = "nodecheck: gpu_count: gpu 3 (0000:9b:00.0) ERROR_GPU_IS_LOST [reboot]"
	resetTagged = xidReason + " [repair: reset_gpu]"
	bootTagged  = lostReason + " [repair: reboot]"
)

func testPolicy() Policy {
	return Policy{Prefix: "nodecheck:", GPUReset: []string{"/usr/bin/nvidia-smi", "-r", "-i", "{gpus}"}, ResetTimeout: 30 * time.Second, Reboot: true,
		MaxRepairing: drain.Limit{N: 1}, PassesToResume: 2, GPURepairs: 3, GPUWindow: 7 * 24 * time.Hour, NodeRepairs: 5, NodeWindow: 7 * 24 * time.Hour}
}

func node(state string, reason string, flags ...string) drain.NodeState {
	return drain.NodeState{Name: "gpu01", State: state, Flags: flags, Reason: reason}
}

// idle is a drained, idle node with the xid fault, 0 jobs, 1 other node of 10 in repair... none.
func idle(reason string, faults ...Fault) Input {
	return Input{Node: node("IDLE", reason, "DRAIN"), PassesKnown: true, Faults: faults, GPUs: []GPU{gpu19, gpu9b}, GPUsKnown: true,
		BootID: "boot-1", Total: 10, Now: t0}
}

var (
	xidFault  = Fault{Check: "xid_errors", Remedy: RemedyReset, Bus: "0000:9b:00.0", Summary: "XID 48"}
	lostFault = Fault{Check: "gpu_count", Remedy: RemedyReboot, Bus: "0000:9b:00.0", Summary: "ERROR_GPU_IS_LOST"}
)

func with(in Input, f func(*Input)) Input { f(&in); return in }

func entry(action, outcome, boot string, at time.Time, gpus ...GPU) Entry {
	return Entry{Action: action, GPUs: gpus, Fault: "xid_errors@0000:9b:00.0", Started: at, BootID: boot, Outcome: outcome}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		in     Input
		step   Step
		close  string
		reason string // the Decision's reason, exactly; "" for none
		msg    string // a part of the message
		gpus   string // busList of the GPUs
	}{
		{"in service, nothing to do", with(idle(""), func(in *Input) { in.Node = node("IDLE", "") }), StepNone, "", "", "not out of service", "no GPU"},
		{"someone else's drain", idle("maintenance: swap PSU", xidFault), StepNone, "", "", "not out of service under nodecheck's reason", "no GPU"},
		{"reset-class fault: reset the GPU", idle(xidReason, xidFault), StepReset, "", resetTagged, "reset GPU 0000:9b:00.0 for xid_errors@0000:9b:00.0", "GPU 0000:9b:00.0"},
		{"reboot-class fault: reboot", idle(lostReason, lostFault), StepReboot, "", bootTagged, "gpu_count's remedy is a reboot", "GPU 0000:9b:00.0"},
		{"a reset and a reboot fault: reboot", idle(xidReason, xidFault, lostFault), StepReboot, "", resetTaggedAs(RemedyReboot), "gpu_count's remedy is a reboot", "GPU 0000:9b:00.0"},
		{"a process holds the GPU: reboot instead", with(idle(xidReason, xidFault), func(in *Input) { in.GPUs = []GPU{{Bus: "0000:9b:00.0", Processes: 1}} }),
			StepReboot, "", resetTaggedAs(RemedyReboot), "1 process(es) hold GPU 0000:9b:00.0 on a node with no job", "GPU 0000:9b:00.0"},
		{"processes unknown: reboot instead", with(idle(xidReason, xidFault), func(in *Input) { in.GPUs = []GPU{{Bus: "0000:9b:00.0", Processes: -1}} }),
			StepReboot, "", resetTaggedAs(RemedyReboot), "could not list the processes", "GPU 0000:9b:00.0"},
		{"NVML unreadable: reboot instead", with(idle(xidReason, xidFault), func(in *Input) { in.GPUsKnown, in.GPUs = false, nil }),
			StepReboot, "", resetTaggedAs(RemedyReboot), "NVML could not list the GPUs", "GPU 0000:9b:00.0"},
		{"reboot not allowed", with(idle(lostReason, lostFault), func(in *Input) {}), StepReboot, "", bootTagged, "", "GPU 0000:9b:00.0"},
		{"service remedy: a person", idle("nodecheck: gpu_memory_errors: rows [service]", Fault{Check: "gpu_memory_errors", Remedy: RemedyService, Bus: "0000:9b:00.0"}),
			StepNone, "", "", "gpu_memory_errors needs service", "no GPU"},
		{"admin remedy with a reset one: a person", idle(xidReason, xidFault, Fault{Check: "gpu_models", Remedy: RemedyAdmin}), StepNone, "", "", "gpu_models needs an admin", "no GPU"},
		{"a job on the node", with(idle(xidReason, xidFault), func(in *Input) { in.Jobs = 1 }), StepBusy, "", "", "1 job(s) on the node", "no GPU"},
		{"the node's state shows a job", with(idle(xidReason, xidFault), func(in *Input) { in.Node = node("MIXED", xidReason, "DRAIN") }), StepBusy, "", "", "shows a job", "no GPU"},
		{"jobs unknown", with(idle(xidReason, xidFault), func(in *Input) { in.Jobs, in.JobsErr = -1, "squeue: timed out" }), StepBusy, "", "", "could not be listed (squeue: timed out)", "no GPU"},
		{"max_repairing reached", with(idle(xidReason, xidFault), func(in *Input) { in.Repairing = 1 }), StepHeld, "", "", "1 of 10 nodes already in repair", "no GPU"},
		{"no limit: nothing to count", with(idle(xidReason, xidFault), func(in *Input) { in.Total, in.Repairing = 0, 3 }), StepReset, "", resetTagged, "reset GPU", "GPU 0000:9b:00.0"},
		{"repairs not countable", with(idle(xidReason, xidFault), func(in *Input) { in.Total, in.CountErr = 0, "sinfo: exit 1" }), StepHeld, "", "", "could not be counted", "no GPU"},
		{"GPU at its limit: escalate", with(idle(xidReason, xidFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0.Add(-72*time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "b", t0.Add(-48*time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "b", t0.Add(-time.Hour), gpu9b)}}
		}), StepEscalate, "", "nodecheck: service: gpu 1652922000001 0000:9b:00.0 3 repairs in 7d: before a GPU reset", "repairs stopped", "GPU 0000:9b:00.0"},
		{"old repairs fall out of the window", with(idle(xidReason, xidFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0.Add(-200*time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "b", t0.Add(-48*time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "b", t0.Add(-time.Hour), gpu9b)}}
		}), StepReset, "", resetTagged, "reset GPU", "GPU 0000:9b:00.0"},
		{"a replaced GPU in the slot starts again", with(idle(xidReason, xidFault), func(in *Input) {
			old := GPU{Bus: gpu9b.Bus, Serial: "1652922000999"}
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0.Add(-3*time.Hour), old), entry(RemedyReset, OutcomeOK, "b", t0.Add(-2*time.Hour), old), entry(RemedyReset, OutcomeOK, "b", t0.Add(-time.Hour), old)}}
		}), StepReset, "", resetTagged, "reset GPU", "GPU 0000:9b:00.0"},
		{"node at its limit: escalate", with(idle(xidReason, xidFault), func(in *Input) {
			for i := range 5 {
				in.Record.Entries = append(in.Record.Entries, entry(RemedyReboot, OutcomeOK, "b", t0.Add(-time.Duration(i+1)*time.Hour), gpu19))
			}
		}), StepEscalate, "", "nodecheck: service: node 5 repairs in 7d: before a GPU reset", "repairs stopped", "no GPU"},
		{"after a reset, waiting for clean runs", with(idle(resetTagged), func(in *Input) {
			in.Passes, in.Record = 1, Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepWait, "", "", "1 of 2 clean health runs", "no GPU"},
		{"after a reset, clean runs counted: resume", with(idle(resetTagged), func(in *Input) {
			in.Passes, in.Record = 2, Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepResume, OutcomeOK, "", "resume: 2 clean health runs after the GPU reset", "no GPU"},
		{"after a reset, clean runs not countable", with(idle(resetTagged), func(in *Input) {
			in.PassesKnown, in.Record = false, Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepWait, "", "", "resume the node by hand", "no GPU"},
		{"the fault is back after a reset: reboot", with(idle(resetTagged, xidFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepReboot, OutcomeFailed, resetTaggedAs(RemedyReboot), "xid_errors still failing after the GPU reset; reboot for xid_errors@0000:9b:00.0: the reset did not help", "GPU 0000:9b:00.0"},
		{"the reset command failed: reboot", with(idle(resetTagged, xidFault), func(in *Input) {
			e := entry(RemedyReset, OutcomeFailed, "boot-1", t0.Add(-time.Minute), gpu9b)
			e.Detail = "exit 255: In use by another client"
			in.Record = Record{Entries: []Entry{e}}
		}), StepReboot, OutcomeFailed, resetTaggedAs(RemedyReboot), "the reset of GPU 0000:9b:00.0 failed (exit 255: In use by another client)", "GPU 0000:9b:00.0"},
		{"the fault is back after a reset, no reboot allowed", with(idle(resetTagged, xidFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepReboot, OutcomeFailed, resetTaggedAs(RemedyReboot), "", "GPU 0000:9b:00.0"},
		{"reboot requested, not yet issued: never asked twice", with(idle(bootTagged, lostFault), func(in *Input) {
			in.Node = node("IDLE", bootTagged, "DRAIN", "REBOOT_REQUESTED")
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepWait, "", "", "reboot asked at 2026-12-03T09:59:00Z, not yet done", "no GPU"},
		{"reboot issued", with(idle(bootTagged+" : reboot issued", lostFault), func(in *Input) {
			in.Node = node("DOWN", bootTagged+" : reboot issued", "DRAIN", "REBOOT_ISSUED")
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepWait, "", "", "not yet done", "no GPU"},
		{"reboot never happened: escalate", with(idle(bootTagged, lostFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepEscalate, OutcomeFailed, "nodecheck: service: gpu 1652922000001 0000:9b:00.0 1 repair in 7d: reboot never happened", "never happened", "GPU 0000:9b:00.0"},
		{"after the reboot, DOWN, one clean run: wait", with(idle(bootTagged+" : reboot issued : reboot complete"), func(in *Input) {
			in.Node = node("DOWN", bootTagged+" : reboot issued : reboot complete")
			in.BootID, in.Passes = "boot-2", 1
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepWait, "", "", "1 of 2 clean health runs before the node returns to service", "no GPU"},
		{"after the reboot, DOWN, clean runs: resume", with(idle(""), func(in *Input) {
			in.Node = node("DOWN", bootTagged+" : reboot issued : reboot complete")
			in.BootID, in.Passes = "boot-2", 2
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepResume, OutcomeOK, "", "after the reboot", "no GPU"},
		{"after the reboot, the fault is back: escalate, no second reboot", with(idle("", lostFault), func(in *Input) {
			in.Node = node("DOWN", bootTagged+" : reboot issued : reboot complete")
			in.BootID = "boot-2"
			in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepEscalate, OutcomeFailed, "nodecheck: service: gpu 1652922000001 0000:9b:00.0 1 repair in 7d: gpu_count after a reboot", "gpu_count still failing after the reboot", "GPU 0000:9b:00.0"},
		{"tag without a record, the fault back: no second reboot", with(idle("", lostFault), func(in *Input) {
			in.Node = node("DOWN", bootTagged+" : reboot issued : reboot complete")
		}), StepEscalate, OutcomeFailed, "nodecheck: service: gpu 1652922000001 0000:9b:00.0 0 repairs in 7d: gpu_count after a reboot", "after the reboot", "GPU 0000:9b:00.0"},
		{"escalated: a person takes over", idle("nodecheck: service: gpu 1652922000001 0000:9b:00.0 3 repairs in 7d", xidFault), StepNone, "", "", "marked for service", "no GPU"},
		{"a DOWN node with no repair: left alone", with(idle(xidReason, xidFault), func(in *Input) { in.Node = node("DOWN", xidReason) }), StepNone, "", "", "repairs nothing in this state", "no GPU"},
		// States drain leaves alone, a repair leaves alone too (drain.StateTable).
		{"MAINTENANCE: left to the admins", with(idle(xidReason, xidFault), func(in *Input) { in.Node = node("IDLE", xidReason, "DRAIN", "MAINTENANCE") }),
			StepNone, "", "", "repairs nothing in this state", "no GPU"},
		{"a reboot nodecheck did not ask for: never asked again", with(idle(lostReason, lostFault), func(in *Input) { in.Node = node("IDLE", lostReason, "DRAIN", "REBOOT_REQUESTED") }),
			StepNone, "", "", "repairs nothing in this state", "no GPU"},
		{"a state word nodecheck does not know", with(idle(xidReason, xidFault), func(in *Input) { in.Node = node("IDLE", xidReason, "DRAIN", "BRAND_NEW_FLAG") }),
			StepNone, "", "", "does not know", "no GPU"},
		{"a repair under way, then MAINTENANCE: not resumed", with(idle(resetTagged), func(in *Input) {
			in.Node = node("IDLE", resetTagged, "DRAIN", "MAINTENANCE")
			in.Passes, in.Record = 2, Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Minute), gpu9b)}}
		}), StepNone, "", "", "repairs nothing in this state", "no GPU"},
		{"resumed by drain: the repair closes ok", with(idle(""), func(in *Input) {
			in.Node = node("IDLE", resetTagged) // 24.11 keeps the reason after a resume
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepNone, OutcomeOK, "", "not out of service", "no GPU"},
		{"drained again without the tag: the old repair failed, a new one starts", with(idle(xidReason, xidFault), func(in *Input) {
			in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b)}}
		}), StepReset, OutcomeFailed, resetTagged, "reset GPU", "GPU 0000:9b:00.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			if strings.Contains(tc.name, "no reboot allowed") || tc.name == "reboot not allowed" {
				p.Reboot = false
				tc.step, tc.reason, tc.gpus = StepNone, "", "no GPU"
				tc.msg = "[repair] reboot = false: reboot it by hand"
			}
			if strings.HasPrefix(tc.name, "no limit") {
				p.MaxRepairing = drain.Limit{}
			}
			d := p.Decide(tc.in)
			if d.Step != tc.step || d.Close != tc.close || d.Reason != tc.reason || !strings.Contains(d.Message, tc.msg) || busList(d.GPUs) != tc.gpus {
				t.Errorf("Decide = step %s close %q reason %q gpus %s\n  message %q\nwant step %s close %q reason %q gpus %s, message with %q",
					d.Step, d.Close, d.Reason, busList(d.GPUs), d.Message, tc.step, tc.close, tc.reason, tc.gpus, tc.msg)
			}
			if (d.Entry != nil) != (d.Step == StepReset || d.Step == StepReboot) {
				t.Errorf("entry %+v for step %s", d.Entry, d.Step)
			}
			if d.Entry != nil && (d.Entry.Outcome != OutcomePending || d.Entry.BootID != tc.in.BootID || !d.Entry.Started.Equal(t0)) {
				t.Errorf("entry %+v: want pending, boot %s, started %s", d.Entry, tc.in.BootID, t0)
			}
			if len(d.Reason) > drain.MaxReasonLen {
				t.Errorf("reason %d bytes, over %d", len(d.Reason), drain.MaxReasonLen)
			}
		})
	}
}

// resetTaggedAs is the xid drain's reason with a repair tag for action.
func resetTaggedAs(action string) string { return xidReason + drain.RepairTag(action) }

func TestWindow(t *testing.T) {
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 36 * time.Hour: "36h", 90 * time.Minute: "90m", 1500 * time.Millisecond: "1.5s"} {
		if got := window(d); got != want {
			t.Errorf("window(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestPermitted(t *testing.T) {
	on := config.Default(nil)
	on.Repair.Enabled = true
	off := config.Default(nil)
	for _, tc := range []struct {
		cfg                     *config.Config
		mode                    config.Mode
		replay, flag, nodeNamed bool
		ok                      bool
	}{
		{off, config.ModeHealth, false, false, false, false},
		{on, config.ModeHealth, false, false, false, true},
		{on, config.ModeProlog, false, false, false, false},
		{on, config.ModeManual, false, true, true, false},
		{on, config.ModeHealth, true, false, true, false},
		{on, config.ModeHealth, true, true, false, false},
		{on, config.ModeHealth, true, true, true, true},
	} {
		if ok, why := Permitted(tc.cfg, tc.mode, tc.replay, tc.flag, tc.nodeNamed); ok != tc.ok || ok == (why != "") {
			t.Errorf("Permitted(enabled %v, %s, replay %v, --repair %v, --node %v) = %v %q", tc.cfg.Repair.Enabled, tc.mode, tc.replay, tc.flag, tc.nodeNamed, ok, why)
		}
	}
}
