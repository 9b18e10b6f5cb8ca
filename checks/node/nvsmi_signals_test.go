package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// signals is the part of a GPU the signal sections fill, for comparing.
type signals struct {
	Serial         string
	Persistence    *bool
	PCIeReplays    *uint64
	ClockEvents    *ClockEvents
	Thermal        *Thermal
	Power          *Power
	RecoveryAction string
	ResetStatus    *ResetStatus
}

func signalsOf(g GPU) signals {
	return signals{g.Serial, g.Persistence, g.PCIeReplays, g.ClockEvents, g.Thermal, g.Power, g.RecoveryAction, g.ResetStatus}
}

// TestParseNvidiaSMISignals reads the signal sections of real captures, one GPU of each
// layout; the values are those the capture prints for that GPU.
func TestParseNvidiaSMISignals(t *testing.T) {
	for _, tc := range []struct {
		file       string
		index      int
		want       signals
		wantFields GPUFields // beyond the identity, PCIe and memory facts every full -q prints
	}{
		{"thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt", 1, signals{
			Serial: "1654223054577", Persistence: ptr(true), PCIeReplays: ptr[uint64](0),
			ClockEvents: NewClockEvents(ClockGPUIdle),
			// 565 prints the T.Limit form only for Hopper.
			Thermal:        &Thermal{GPUC: 30, MemoryC: 36, MarginC: ptr(57), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:          &Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 82.81},
			RecoveryAction: "NONE",
		}, GPURecoveryAction},
		{"thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt", 0, signals{
			Serial: "1654423001593", Persistence: ptr(true), PCIeReplays: ptr[uint64](7), // "Replays Since Reset : 7"
			ClockEvents:    NewClockEvents(ClockGPUIdle),
			Thermal:        &Thermal{GPUC: 30, MemoryC: 36, MarginC: ptr(57), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:          &Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 100.89},
			RecoveryAction: "NONE",
		}, GPURecoveryAction},
		{"thamada-gls-a40-x10-550.127.05-swpowercap-aggregate-ecc.txt", 0, signals{
			Serial: "1322221017584", Persistence: ptr(true), PCIeReplays: ptr[uint64](0),
			ClockEvents: NewClockEvents(ClockSWPowerCap), // "SW Power Cap : Active"
			Thermal:     &Thermal{GPUC: 29, ShutdownC: 98, SlowdownC: 95, GPUMaxC: 88},
			Power:       &Power{EnforcedLimitW: 300, DefaultLimitW: 300, DrawW: 29.7},
			ResetStatus: &ResetStatus{}, // "GPU Reset Status": No, No
		}, GPURecoveryAction},
		{"thamada-gls-rtx4060ti-x2-550.54.14-persistence-disabled.txt", 0, signals{
			Persistence: ptr(false), PCIeReplays: ptr[uint64](0), // "Serial Number : N/A"
			ClockEvents: NewClockEvents(ClockGPUIdle),
			Thermal:     &Thermal{GPUC: 32, MarginC: ptr(50), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-7), GPUMaxMarginC: ptr(0)},
			Power:       &Power{EnforcedLimitW: 165, DefaultLimitW: 165, DrawW: 30.5},
			ResetStatus: &ResetStatus{}, // "GPU Reset Status": No, No
		}, GPURecoveryAction},
		{"thamada-gls-rtx5090-570.124.06-swpowercap.txt", 0, signals{
			Serial: "0", Persistence: ptr(true), PCIeReplays: ptr[uint64](0),
			ClockEvents: NewClockEvents(ClockSWPowerCap),
			Thermal:     &Thermal{GPUC: 25, MarginC: ptr(65), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-5), GPUMaxMarginC: ptr(0)},
			// 570 prints "Average" and "Instantaneous Power Draw": the instantaneous one is the draw.
			Power:          &Power{EnforcedLimitW: 575, DefaultLimitW: 575, DrawW: 23.78},
			RecoveryAction: "NONE",
		}, GPURecoveryAction},
		{"thamada-gls-gtx680-470.256.02-old-layout.txt", 0, signals{
			// "Clocks Throttle Reasons : N/A", every power reading N/A, thresholds N/A.
			Persistence: ptr(false), PCIeReplays: ptr[uint64](0),
			Thermal: &Thermal{GPUC: 35},
		}, 0},
		{"thamada-gls-h200-550.90.12.txt", 0, signals{
			Serial: "1753724031847", Persistence: ptr(true), PCIeReplays: ptr[uint64](0),
			ClockEvents: NewClockEvents(ClockGPUIdle),
			Thermal:     &Thermal{GPUC: 28, MemoryC: 25, MarginC: ptr(59), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:       &Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 74.58},
			ResetStatus: &ResetStatus{}, // "GPU Reset Status": No, No
		}, GPURecoveryAction},
		{"gpud-q-h100x8-535.161.08.txt", 0, signals{
			// The capture behind h100-healthy: HW Slowdown with HW Power Brake Slowdown Active.
			Serial: "1650124031592", Persistence: ptr(true), PCIeReplays: ptr[uint64](67),
			ClockEvents: &ClockEvents{Mask: ClockHWSlowdown | ClockHWPowerBrakeSlowdown, Reasons: []string{"hw_slowdown", "hw_power_brake_slowdown"}},
			Thermal:     &Thermal{GPUC: 29, MemoryC: 39, MarginC: ptr(56), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:       &Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 67.74},
			ResetStatus: &ResetStatus{}, // "GPU Reset Status": No, No
		}, GPURecoveryAction},
	} {
		t.Run(tc.file, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(openCapture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, signalsOf(inv.Devices[tc.index])); diff != "" {
				t.Errorf("GPU %d signals (-want +got):\n%s", tc.index, diff)
			}
			want := GPUDriverVersion | GPUCUDAVersion | GPUMinorNumber | GPUUUID | GPUName | GPUPCIBusID | GPUSerial |
				GPUPCIe | GPUECC | GPUECCCorrected | GPURetiredPages | GPURemappedRows | GPUMemory | GPUCompute | GPUPCIeReplays |
				GPUClockEvents | GPUThermal | GPUPower | GPUPersistence | tc.wantFields
			if got := inv.Fields &^ GPUFabric; got != want {
				t.Errorf("Fields = %s, want %s", got, want)
			}
		})
	}
}

func TestParseNvidiaSMISignalErrors(t *testing.T) {
	gpu := "GPU 00000000:19:00.0\n"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"persistence not a mode", gpu + "    Persistence Mode : On\n", `line 10: Persistence Mode "On": want Enabled, Disabled or N/A`},
		{"replays not a count", gpu + "    PCI\n        Replays Since Reset : many\n", `line 11: Replays Since Reset "many": want a count or N/A`},
		{"temperature without unit", gpu + "    Temperature\n        GPU Current Temp : 35\n", `line 11: GPU Current Temp "35": want a temperature such as "35 C" or N/A`},
		{"negative absolute temperature", gpu + "    Temperature\n        GPU Slowdown Temp : -2 C\n", `line 11: GPU Slowdown Temp "-2 C": want a temperature`},
		{"power without unit", gpu + "    GPU Power Readings\n        Current Power Limit : 700\n", `line 11: Current Power Limit "700": want a power such as "700.00 W" or N/A`},
		{"clock reason neither", gpu + "    Clocks Event Reasons\n        Idle : Maybe\n", `line 11: Idle "Maybe": want Active, Not Active or N/A`},
		{"unknown reason active", gpu + "    Clocks Event Reasons\n        Thermal Runaway : Active\n", `line 11: clocks event reason "Thermal Runaway" is Active, but nodecheck does not know its NVML bit`},
		{"reasons section with a value", gpu + "    Clocks Throttle Reasons : 0x1\n", `line 10: Clocks Throttle Reasons "0x1": want a section of reasons or N/A`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNvidiaSMIQuery(strings.NewReader(smiDoc(1, tc.body)))
			var se *NvidiaSMIError
			if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %v, want one starting %q", err, tc.want)
			}
		})
	}
	t.Run("unknown reason not active is skipped", func(t *testing.T) {
		// The mangled keys of the truncated 535.183.01 capture read "Not Active".
		inv, err := ParseNvidiaSMIQuery(strings.NewReader(smiDoc(1, gpu+"    Clocks Event Reasons\n        Idle : Active\n        Invalid HW Slowdown : Not Active\n")))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(NewClockEvents(ClockGPUIdle), inv.Devices[0].ClockEvents); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestSMIRecoveryAction(t *testing.T) {
	for in, want := range map[string]string{
		"None": "NONE", "N/A": "", "Reset": "GPU_RESET", "GPU Reset": "GPU_RESET", "Reboot": "NODE_REBOOT",
		"Node Reboot": "NODE_REBOOT", "Drain P2P": "DRAIN_P2P", "Drain and Reset": "DRAIN_AND_RESET",
		"Recover IMEX Domain": "RECOVER_IMEX_DOMAIN",
	} {
		if got := smiRecoveryAction(in); got != want {
			t.Errorf("smiRecoveryAction(%q) = %q, want %q", in, got, want)
		}
	}
}

// nvlinkErrorsExcerpt is the ml-engineering excerpt of `nvidia-smi nvlink -e` without the
// author's "[...]" line (see testdata/nvsmi/SOURCE).
func nvlinkErrorsExcerpt(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nvsmiDir, "mlengineering-nvlink-e-h100-excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "         [...]\n", "", 1)
}

func TestParseNvidiaSMINvLinkErrors(t *testing.T) {
	got, err := ParseNvidiaSMINvLinkErrors(strings.NewReader(nvlinkErrorsExcerpt(t)))
	if err != nil {
		t.Fatal(err)
	}
	zero := map[string]uint64{"replay": 0, "recovery": 0, "crc_flit": 0}
	want := map[string]SMILinkCounters{"GPU-abcdefab-cdef-abdc-abcd-abababababab": {0: zero, 1: zero, 17: zero}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"link before GPU", "Link 0: Replay Errors: 0\n", `line 1: "Link 0: Replay Errors: 0" before any`},
		{"not a count", "GPU 0: X (UUID: GPU-1)\n Link 0: Replay Errors: lots\n", `line 2: "Link 0: Replay Errors: lots": want`},
		{"repeated counter", "GPU 0: X (UUID: GPU-1)\n Link 0: CRC Errors: 1\n Link 0: CRC Errors: 2\n", "line 3: link 0 CRC Errors of the GPU on line 1 listed twice"},
		{"repeated GPU", "GPU 0: X (UUID: GPU-1)\nGPU 1: X (UUID: GPU-1)\n", "line 2: GPU 1 (UUID GPU-1) listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNvidiaSMINvLinkErrors(strings.NewReader(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %v, want one starting %q", err, tc.want)
			}
		})
	}
	t.Run("counters nodecheck does not keep are skipped", func(t *testing.T) {
		got, err := ParseNvidiaSMINvLinkErrors(strings.NewReader("GPU 0: X (UUID: GPU-1)\n Link 0: Rx remote Errors: 3\n Link 0: Replay Errors: 2\n"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]SMILinkCounters{"GPU-1": {0: {"replay": 2}}}, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestMergeNVLinkErrors(t *testing.T) {
	counters := map[string]SMILinkCounters{"GPU-a": {
		0: {"replay": 1, "recovery": 0, "crc_flit": 5},
		1: {"replay": 2, "recovery": 1, "crc_flit": 0},
		2: {"replay": 40, "recovery": 9, "crc_flit": 7},
	}}
	inv := GPUInventory{Init: InitSuccess, Fields: GPUUUID | GPUNVLinks, Devices: []GPU{
		{Index: 0, UUID: "GPU-a", NVLinks: []NVLink{{Link: 0, Active: true}, {Link: 1, Active: true}, {Link: 2}}},
		{Index: 1, UUID: "GPU-b"},
	}}
	got, err := MergeNVLinkErrors(inv, counters)
	if err != nil {
		t.Fatal(err)
	}
	// Link 2 is inactive: not summed, as NVML's reading sums the active links. No data CRC
	// counter in the capture: unread.
	want := &NVLinkErrors{CRCFlit: 5, Replay: 3, Recovery: 1, Links: 2, Unread: []string{"crc_data"}}
	if diff := cmp.Diff(want, got.Devices[0].NVLinkErrors); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Devices[1].NVLinkErrors != nil || !got.Fields.Has(GPUNVLinkErrors) {
		t.Errorf("GPU-b %+v, fields %s: want no counters, nvlink_errors among the fields", got.Devices[1].NVLinkErrors, got.Fields)
	}
	// Without link states every listed link is summed.
	inv.Devices[0].NVLinks = nil
	got, _ = MergeNVLinkErrors(inv, counters)
	if e := got.Devices[0].NVLinkErrors; e == nil || e.Links != 3 || e.Replay != 43 {
		t.Errorf("without link states: %+v, want 3 links, 43 replays", e)
	}
	if _, err := MergeNVLinkErrors(inv, map[string]SMILinkCounters{"GPU-z": {}}); err == nil || !strings.Contains(err.Error(), "GPU-z, which the nvidia-smi -q capture does not list") {
		t.Errorf("foreign UUID: %v", err)
	}
}
