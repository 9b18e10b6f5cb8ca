package repair

// Boundary tests found by mutation testing (docs/development.md, "Mutation testing").

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// TestDecideGPUIdentity: the repairs a GPU's limit counts are its own. A GPU known only by
// its UUID (no serial recorded) that was replaced in the same slot is a new GPU and starts
// again; the same UUID counts, whatever the slot. Serials decide where both sides know them.
func TestDecideGPUIdentity(t *testing.T) {
	three := func(g GPU) Record {
		var r Record
		for i := range 3 {
			r.Entries = append(r.Entries, entry(RemedyReset, OutcomeOK, "b", t0.Add(-time.Duration(3-i)*time.Hour), g))
		}
		return r
	}
	noSerial := GPU{Bus: gpu9b.Bus, UUID: gpu9b.UUID}
	for _, tc := range []struct {
		name string
		old  GPU  // the GPU of three earlier resets
		cur  *GPU // the GPU NVML shows in the slot now; nil: gpu9b
		step Step
	}{
		{"replaced, known only by UUID: starts again", GPU{Bus: gpu9b.Bus, UUID: "GPU-5a0b8c1e-0000-4000-8000-0000000000ff"}, nil, StepReset},
		{"same UUID, no serial recorded: at its limit", noSerial, nil, StepEscalate},
		{"same UUID, neither side has a serial: at its limit", noSerial, &noSerial, StepEscalate},
		{"same UUID, moved to another slot: at its limit", GPU{Bus: "0000:bb:00.0", UUID: gpu9b.UUID}, nil, StepEscalate},
		{"same slot, another serial: starts again", GPU{Bus: gpu9b.Bus, UUID: gpu9b.UUID, Serial: "1652922000999"}, nil, StepReset},
		{"serial recorded, none now, same UUID: at its limit", gpu9b, &noSerial, StepEscalate},
		{"serial on one side only, no UUID: the slot decides", GPU{Bus: gpu9b.Bus, Serial: "1652922000999"}, &GPU{Bus: gpu9b.Bus}, StepEscalate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := with(idle(xidReason, xidFault), func(in *Input) {
				in.Record = three(tc.old)
				if tc.cur != nil {
					in.GPUs = []GPU{gpu19, *tc.cur}
				}
			})
			d := testPolicy().Decide(in)
			if d.Step != tc.step {
				t.Errorf("step %s (%s), want %s", d.Step, d.Message, tc.step)
			}
			if tc.step == StepEscalate && !strings.Contains(d.Reason, "3 repairs in 7d") {
				t.Errorf("reason %q", d.Reason)
			}
		})
	}
}

// TestDecideClosesOnlyOpenRepairs: a node back in service closes its last repair when that
// one is under way or a reset that failed (a reboot would have followed); a reboot that failed
// was closed when the node was escalated, and stays as it is.
func TestDecideClosesOnlyOpenRepairs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		last  Entry
		close string
	}{
		{"a pending reset", entry(RemedyReset, OutcomePending, "boot-1", t0.Add(-time.Hour), gpu9b), OutcomeOK},
		{"a failed reset", entry(RemedyReset, OutcomeFailed, "boot-1", t0.Add(-time.Hour), gpu9b), OutcomeOK},
		{"a failed reboot", entry(RemedyReboot, OutcomeFailed, "boot-1", t0.Add(-time.Hour), gpu9b), ""},
		{"a reset that worked", entry(RemedyReset, OutcomeOK, "boot-1", t0.Add(-time.Hour), gpu9b), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := with(idle(""), func(in *Input) {
				in.Node = node("IDLE", "")
				in.Record = Record{Entries: []Entry{tc.last}}
			})
			if d := testPolicy().Decide(in); d.Step != StepNone || d.Close != tc.close {
				t.Errorf("step %s close %q, want none, close %q", d.Step, d.Close, tc.close)
			}
		})
	}
}

// TestRepairWindowEdge: a repair started exactly a window ago still counts toward the GPU's
// limit and is listed in the counts; one second earlier it has left the window.
func TestRepairWindowEdge(t *testing.T) {
	p := testPolicy()
	for _, tc := range []struct {
		name   string
		oldest time.Duration // how long before now the oldest of three resets started
		step   Step
		listed bool // the oldest's GPU (another slot) in the counts
	}{
		{"exactly the window", p.GPUWindow, StepEscalate, true},
		{"a second before it", p.GPUWindow + time.Second, StepReset, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := with(idle(xidReason, xidFault), func(in *Input) {
				in.Record = Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0.Add(-tc.oldest), gpu9b),
					entry(RemedyReset, OutcomeOK, "b", t0.Add(-2*time.Hour), gpu9b), entry(RemedyReset, OutcomeOK, "b", t0.Add(-time.Hour), gpu9b)}}
			})
			if d := p.Decide(in); d.Step != tc.step {
				t.Errorf("step %s (%s), want %s", d.Step, d.Message, tc.step)
			}
			moved := GPU{Bus: "0000:bb:00.0", UUID: "GPU-5a0b8c1e-0000-4000-8000-0000000000bb"}
			c := p.countsOf(Record{Entries: []Entry{entry(RemedyReset, OutcomeOK, "b", t0.Add(-tc.oldest), moved)}}, []GPU{gpu9b}, t0)
			if listed := slices.ContainsFunc(c.GPUs, func(g GPUCount) bool { return g.Bus == moved.Bus && g.N == 1 }); listed != tc.listed {
				t.Errorf("counts %+v: GPU %s listed with 1: %v, want %v", c.GPUs, moved.Bus, listed, tc.listed)
			}
		})
	}
}

// TestDecideRebootWithoutBootID: a reboot whose entry has no boot id (none could be read when
// it was asked) is not taken as "never happened" when this run's boot id is unknown too: only
// a boot id seen before and after says the node did not reboot.
func TestDecideRebootWithoutBootID(t *testing.T) {
	for _, tc := range []struct {
		name        string
		entry, this string
		step        Step
	}{
		{"both unknown: wait", "", "", StepWait},
		{"the same boot id: never happened", "boot-1", "boot-1", StepEscalate},
		{"another boot id: wait for clean runs", "boot-1", "boot-2", StepWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := with(idle(bootTagged), func(in *Input) {
				in.BootID = tc.this
				in.Record = Record{Entries: []Entry{entry(RemedyReboot, OutcomePending, tc.entry, t0.Add(-time.Hour), gpu9b)}}
			})
			if d := testPolicy().Decide(in); d.Step != tc.step {
				t.Errorf("step %s (%s), want %s", d.Step, d.Message, tc.step)
			}
		})
	}
}

// TestPolicyFromCounts: a config built in code (not validated) with passes_to_resume,
// gpu_repairs or node_repairs of 0 is refused; 1, their least value, is taken.
func TestPolicyFromCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(r *config.RepairConfig)
		ok   bool
	}{
		{"the defaults", func(*config.RepairConfig) {}, true},
		{"passes_to_resume = 1", func(r *config.RepairConfig) { r.PassesToResume = 1 }, true},
		{"passes_to_resume = 0", func(r *config.RepairConfig) { r.PassesToResume = 0 }, false},
		{"gpu_repairs = 1", func(r *config.RepairConfig) { r.GPURepairs = 1 }, true},
		{"gpu_repairs = 0", func(r *config.RepairConfig) { r.GPURepairs = 0 }, false},
		{"node_repairs = 0", func(r *config.RepairConfig) { r.NodeRepairs = 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(nil)
			cfg.Repair.Enabled = true
			tc.set(&cfg.Repair)
			if _, err := PolicyFrom(cfg); (err == nil) != tc.ok {
				t.Errorf("PolicyFrom: %v, want ok: %v", err, tc.ok)
			}
		})
	}
}
