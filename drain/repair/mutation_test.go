package repair

// Boundary tests found by mutation testing (docs/development.md, "Mutation testing").

import (
	"strings"
	"testing"
	"time"
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
