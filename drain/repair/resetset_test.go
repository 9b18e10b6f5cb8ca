package repair

import (
	"strings"
	"testing"
	"time"
)

// The nodes below are literal facts. The HGX H100 and A100 bus ids are those of the bundled
// snapshots testdata/snapshots/h100-healthy and a100-healthy (18 and 12 NVLinks per GPU, as
// NVML lists them there); the DGX-1 (8x V100 SXM2, 6 NVLinks each, a hybrid cube mesh without
// NVSwitch) and the PCIe nodes are invented in the shape NVML gives them.

// board is n GPUs of arch at the given bus ids, each with links NVLinks of which active are up.
func board(arch string, links, active int, buses ...string) []GPU {
	var out []GPU
	for _, b := range buses {
		out = append(out, GPU{Bus: b, Arch: arch, Links: links, ActiveLinks: active})
	}
	return out
}

var (
	hgxH100 = board(ArchHopper, 18, 18, "0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0")
	hgxA100 = board(ArchAmpere, 12, 12, "0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0", "000b:00:00.0", "000c:00:00.0", "000d:00:00.0", "000e:00:00.0")
	dgx1    = board(ArchVolta, 6, 6, "0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0", "0000:89:00.0", "0000:8a:00.0")
	pcieL40 = board(ArchAda, 0, 0, "0000:17:00.0", "0000:31:00.0", "0000:b1:00.0", "0000:ca:00.0")
	pcieV   = board(ArchVolta, 0, 0, "0000:3b:00.0", "0000:d8:00.0")
)

// withProcs is gpus with n processes on the GPU at bus.
func withProcs(gpus []GPU, bus string, n int) []GPU {
	out := append([]GPU(nil), gpus...)
	for i := range out {
		if out[i].Bus == bus {
			out[i].Processes = n
		}
	}
	return out
}

// linksDown is gpus with every NVLink inactive, as GPU 6 of the a100-nvlink-all-inactive
// snapshot: on a node with NVSwitches they still count as NVLink GPUs.
func linksDown(gpus []GPU) []GPU {
	out := append([]GPU(nil), gpus...)
	for i := range out {
		out[i].ActiveLinks = 0
	}
	return out
}

func TestResetSet(t *testing.T) {
	fm := func(switches int, state string) Fabric { return Fabric{NVSwitches: switches, FabricManager: state} }
	tests := []struct {
		name    string
		want    []GPU // the faulty GPUs: the first n of all
		all     []GPU
		fab     Fabric
		set     int    // how many GPUs the set holds (0: refused)
		why     string // a part of why (together) or refused; "" for a GPU alone
		refused bool
	}{
		{"HGX H100, FM running: alone", hgxH100[4:5], hgxH100, fm(4, "active"), 1, "", false},
		{"HGX H100, FM down: Hopper needs no FM, alone", hgxH100[4:5], hgxH100, fm(4, "failed"), 1, "", false},
		{"HGX H100, FM unknown: alone", hgxH100[4:5], hgxH100, fm(4, ""), 1, "", false},
		{"HGX H100, a process on another GPU: alone, not concerned", hgxH100[4:5], withProcs(hgxH100, "0000:19:00.0", 1), fm(4, "active"), 1, "", false},
		{"HGX A100, FM running: alone", hgxA100[0:1], hgxA100, fm(6, "active"), 1, "", false},
		{"HGX A100, FM inactive: all NVLink GPUs", hgxA100[0:1], hgxA100, fm(6, "inactive"), 8, "Fabric Manager is not running (service inactive)", false},
		{"HGX A100, FM down, links untrained: all GPUs on the switches", hgxA100[0:1], linksDown(hgxA100), fm(6, "failed"), 8, "Fabric Manager is not running (service failed)", false},
		{"HGX A100, FM state unknown: all NVLink GPUs", hgxA100[0:1], hgxA100, fm(6, ""), 8, "Fabric Manager's state is unknown", false},
		{"HGX A100, NVSwitches not listed: all NVLink GPUs", hgxA100[0:1], hgxA100, fm(-1, "active"), 8, "NVSwitches could not be listed", false},
		{"HGX A100, FM down, a process on a peer: reboot", hgxA100[0:1], withProcs(hgxA100, "000e:00:00.0", 2), fm(6, "inactive"), 0,
			"2 process(es) hold GPU 000e:00:00.0", true},
		{"HGX A100, FM down, processes of a peer unknown: reboot", hgxA100[0:1], withProcs(hgxA100, "000c:00:00.0", -1), fm(6, "inactive"), 0,
			"could not list the processes on GPU 000c:00:00.0", true},
		{"HGX A100, FM running, a process on a peer: alone", hgxA100[0:1], withProcs(hgxA100, "000e:00:00.0", 2), fm(6, "active"), 1, "", false},
		{"DGX-1 V100: all NVLink peers", dgx1[2:3], dgx1, fm(0, ""), 8, "GPU 0000:0a:00.0 is Volta, before Ampere", false},
		{"DGX-1 V100, two faulty GPUs: one set", dgx1[2:4], dgx1, fm(0, ""), 8, "before Ampere", false},
		{"DGX-1 V100, a process on a peer: reboot", dgx1[2:3], withProcs(dgx1, "0000:89:00.0", 1), fm(0, ""), 0, "hold GPU 0000:89:00.0", true},
		{"PCIe L40S without NVLink: alone", pcieL40[1:2], pcieL40, fm(0, ""), 1, "", false},
		{"PCIe V100 without NVLink: alone", pcieV[0:1], pcieV, fm(0, ""), 1, "", false},
		{"PCIe A100 pair bridged, no NVSwitch: alone", board(ArchAmpere, 12, 4, "0000:17:00.0")[:1],
			append(board(ArchAmpere, 12, 4, "0000:17:00.0", "0000:31:00.0"), board(ArchAmpere, 12, 0, "0000:b1:00.0")...), fm(0, ""), 1, "", false},
		{"unknown model with NVLink: its peers too", board("", 4, 4, "0000:17:00.0"), board("", 4, 4, "0000:17:00.0", "0000:31:00.0"), fm(0, ""), 2,
			"does not know the architecture", false},
		{"NVLinks of the GPU not read: reboot", board(ArchHopper, -1, 0, "0000:19:00.0"), board(ArchHopper, -1, 0, "0000:19:00.0"), fm(4, "active"), 0,
			"NVLinks of GPU 0000:19:00.0 were not read", true},
		{"NVLinks of a peer not read, V100: reboot", dgx1[0:1], append(dgx1[0:1:1], GPU{Bus: "0000:07:00.0", Arch: ArchVolta, Links: -1}), fm(0, ""), 0,
			"NVLinks of GPU 0000:07:00.0 were not read", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, why, refused := ResetSet(tc.want, tc.all, tc.fab)
			if got := refused != ""; got != tc.refused {
				t.Fatalf("refused %q, want refused %v", refused, tc.refused)
			}
			if len(set) != tc.set {
				t.Errorf("set %s, want %d GPUs", busList(set), tc.set)
			}
			for i, g := range tc.want {
				if !tc.refused && set[i].Bus != g.Bus {
					t.Errorf("set %s does not start with the GPUs to reset (%s)", busList(set), busList(tc.want))
				}
			}
			text := why + refused
			if tc.why == "" && text != "" || !strings.Contains(text, tc.why) {
				t.Errorf("why %q, want %q", text, tc.why)
			}
		})
	}
}

// TestDecideResetSet: the policy resets the set ResetSet gives, records the peers apart from
// the GPUs the faults name (a peer's reset is not a repair of it toward escalation), and
// reboots when the set holds a GPU a process holds.
func TestDecideResetSet(t *testing.T) {
	a100Fault := Fault{Check: "xid_errors", Remedy: RemedyReset, Bus: "0001:00:00.0", Summary: "XID 48"}
	reason := "nodecheck: xid_errors: gpu 0001:00:00.0: XID 48 (DBE) [reset_gpu]"
	in := idle(reason, a100Fault)
	in.GPUs, in.Fabric = hgxA100, Fabric{NVSwitches: 6, FabricManager: "inactive"}
	d := testPolicy().Decide(in)
	if d.Step != StepReset || len(d.GPUs) != 1 || len(d.Peers) != 7 || d.Entry == nil || len(d.Entry.Peers) != 7 {
		t.Fatalf("FM down on HGX A100: %s, GPUs %s, peers %s (%s)", d.Step, busList(d.GPUs), busList(d.Peers), d.Message)
	}
	for _, part := range []string{"reset GPU 0001:00:00.0 together with its NVLink peers 0002:00:00.0,", "Fabric Manager is not running (service inactive)"} {
		if !strings.Contains(d.Message, part) {
			t.Errorf("message %q lacks %q", d.Message, part)
		}
	}
	if got := testPolicy().ResetArgv(d.Entry.ResetGPUs()); len(got) != 4 || strings.Count(got[3], ",") != 7 {
		t.Errorf("reset command %q, want the 8 GPUs in one -i list", got)
	}
	in.GPUs = withProcs(hgxA100, "000e:00:00.0", 1)
	d = testPolicy().Decide(in)
	if d.Step != StepReboot || !strings.Contains(d.Message, "1 process(es) hold GPU 000e:00:00.0") {
		t.Errorf("FM down, a process on a peer: %s (%s), want a reboot saying so", d.Step, d.Message)
	}
	in.Fabric.FabricManager = "active"
	d = testPolicy().Decide(in)
	if d.Step != StepReset || len(d.Peers) != 0 || strings.Contains(d.Message, "together") {
		t.Errorf("FM running: %s, peers %s (%s), want the GPU alone", d.Step, busList(d.Peers), d.Message)
	}
	// Peers do not count toward a GPU's escalation: three resets that took GPU 0002 along.
	in.Fabric.FabricManager = "inactive"
	in.GPUs = hgxA100
	faulty, peer := hgxA100[0], hgxA100[1]
	other := GPU{Bus: "0009:00:00.0"}
	for i := range 3 {
		in.Record.Entries = append(in.Record.Entries, Entry{Action: RemedyReset, GPUs: []GPU{other}, Peers: []GPU{faulty, peer},
			Started: t0.Add(-time.Duration(i+1) * time.Hour), Outcome: OutcomeOK})
	}
	if d := testPolicy().Decide(in); d.Step != StepReset {
		t.Errorf("a GPU reset three times as a peer: %s (%s), want a reset (peers are not repairs of theirs)", d.Step, d.Message)
	}
}
