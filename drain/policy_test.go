package drain

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/config"
)

func TestPermissions(t *testing.T) {
	on := config.Default(nil).Drain
	off := on
	off.Enabled = false
	noResume := on
	noResume.Resume = false
	tests := []struct {
		name                  string
		d                     config.DrainConfig
		mode                  config.Mode
		f                     Flags
		replay                bool
		wantDrain, wantResume bool
	}{
		{"prolog drains", on, config.ModeProlog, Flags{}, false, true, false},
		{"epilog drains", on, config.ModeEpilog, Flags{}, false, true, false},
		{"health drains and resumes", on, config.ModeHealth, Flags{}, false, true, true},
		{"health with resume = false", noResume, config.ModeHealth, Flags{}, false, true, false},
		{"health with resume = false, --resume wins", noResume, config.ModeHealth, Flags{Resume: true}, false, true, true},
		{"enabled = false: hooks only report", off, config.ModeHealth, Flags{}, false, false, false},
		{"enabled = false: prolog only reports", off, config.ModeProlog, Flags{}, false, false, false},
		{"enabled = false, --drain wins", off, config.ModeProlog, Flags{Drain: true}, false, true, false},
		{"manual reports only", on, config.ModeManual, Flags{}, false, false, false},
		{"manual --drain", on, config.ModeManual, Flags{Drain: true}, false, true, false},
		{"manual --resume", on, config.ModeManual, Flags{Resume: true}, false, false, true},
		{"replay in health mode only reports", on, config.ModeHealth, Flags{}, true, false, false},
		{"replay in prolog mode only reports", on, config.ModeProlog, Flags{}, true, false, false},
		{"replay with --drain --resume", on, config.ModeHealth, Flags{Drain: true, Resume: true}, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, r := Permissions(tc.d, tc.mode, tc.f, tc.replay)
			if d != tc.wantDrain || r != tc.wantResume {
				t.Errorf("got drain %v resume %v, want %v %v", d, r, tc.wantDrain, tc.wantResume)
			}
		})
	}
}

func TestCheckFlags(t *testing.T) {
	tests := []struct {
		name      string
		mode      config.Mode
		f         Flags
		replay    bool
		nodeNamed bool
		want      string // "" for no error
	}{
		{"replay --drain without --node", config.ModeManual, Flags{Drain: true}, true, false, "--drain with --snapshot need --node"},
		{"replay --repair without --node: the same rule as --drain", config.ModeHealth, Flags{Repair: true}, true, false, "--repair with --snapshot need --node"},
		{"replay --drain --repair without --node", config.ModeHealth, Flags{Drain: true, Repair: true}, true, false, "--drain and --repair with --snapshot need --node"},
		{"replay --repair --node in health mode", config.ModeHealth, Flags{Repair: true}, true, true, ""},
		{"--repair in a manual run", config.ModeManual, Flags{Repair: true}, true, true, "--repair: manual runs never repair a node; health runs do"},
		{"--repair in a prolog", config.ModeProlog, Flags{Repair: true}, false, false, "--repair: prolog runs never repair"},
		{"--repair in a live health run", config.ModeHealth, Flags{Repair: true}, false, false, ""},
		{"replay --resume without --node", config.ModeHealth, Flags{Resume: true}, true, false, "need --node"},
		{"replay --drain --node", config.ModeHealth, Flags{Drain: true}, true, true, ""},
		{"--resume in a prolog", config.ModeProlog, Flags{Resume: true}, false, true, "--resume: prolog runs never resume a node"},
		{"--resume in an epilog", config.ModeEpilog, Flags{Resume: true}, false, false, "--resume: epilog runs never resume a node"},
		{"--resume in a health run", config.ModeHealth, Flags{Resume: true}, false, false, ""},
		{"--drain in a prolog", config.ModeProlog, Flags{Drain: true}, false, false, ""},
		{"nothing asked", config.ModeManual, Flags{}, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFlags(tc.mode, tc.f, tc.replay, tc.nodeNamed)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestHookExit is the exit rule after drain acted, for every mode and action.
func TestHookExit(t *testing.T) {
	tests := []struct {
		mode     config.Mode
		code     int
		action   Action
		wantCode int
		note     string
	}{
		{config.ModeProlog, 1, ActionHeld, 0, "the prolog exits 0 so that Slurm does not drain the node either"},
		{config.ModeEpilog, 1, ActionHeld, 0, "the epilog exits 0"},
		{config.ModeHealth, 1, ActionHeld, 1, ""},
		{config.ModeManual, 1, ActionHeld, 1, ""},
		{config.ModeProlog, 1, ActionDrained, 1, ""},
		{config.ModeProlog, 1, ActionKept, 1, ""},
		{config.ModeProlog, 1, ActionUnreachable, 1, "exiting non-zero, so Slurm drains the node itself"},
		{config.ModeEpilog, 1, ActionLocked, 1, "Slurm drains the node itself"},
		{config.ModeProlog, 1, ActionSkipped, 1, "Slurm drains the node itself"},
		{config.ModeProlog, 0, ActionNone, 0, ""},
		{config.ModeProlog, 0, ActionUnreachable, 0, ""},
		{config.ModeHealth, 1, ActionUnreachable, 1, ""},
		{config.ModeManual, 3, ActionNone, 3, ""},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode)+" "+string(tc.action), func(t *testing.T) {
			code, note := HookExit(tc.mode, tc.code, tc.action)
			if code != tc.wantCode || tc.note == "" && note != "" || !strings.Contains(note, tc.note) {
				t.Errorf("got %d %q, want %d %q", code, note, tc.wantCode, tc.note)
			}
		})
	}
}

func TestPolicyFrom(t *testing.T) {
	cfg := config.Default(nil)
	cfg.ErrorIsFailure = true
	cfg.Drain.MaxDrained = "5%"
	cfg.State.Dir = "/run/nodecheck"
	got, err := PolicyFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{Prefix: "nodecheck:", ResumeAfterPasses: 2, MaxDrained: Limit{N: 5, Percent: true}, ErrorIsFailure: true}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Policy{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	cfg.Drain.MaxDrained = "0"
	if _, err := PolicyFrom(cfg); err == nil || !strings.HasPrefix(err.Error(), "max_drained: ") {
		t.Errorf("max_drained = \"0\": error %v", err)
	}
}
