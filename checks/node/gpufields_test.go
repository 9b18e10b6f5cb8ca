package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGPUFieldsKeys(t *testing.T) {
	if n := len(gpuFieldKeys); GPUFields(1)<<n != gpuFieldsEnd {
		t.Fatalf("%d keys for %d facts", n, bitsOf(AllGPUFields))
	}
	for _, k := range AllGPUFields.Keys() {
		f, err := ParseGPUField(k)
		if err != nil || f.Keys()[0] != k {
			t.Errorf("ParseGPUField(%q) = %s, %v", k, f, err)
		}
	}
	if got := (GPUSerial | GPUName).String(); got != "name,serial" {
		t.Errorf("String = %q", got)
	}
	if got := GPUFields(0).String(); got != "none" {
		t.Errorf("String of none = %q", got)
	}
	// Every key is a JSON key of GPU or GPUInventory: the list names nvml.json's keys. One
	// fact is part of another key: ecc_corrected is ecc's volatile_corrected.
	inv, _ := json.Marshal(GPUInventory{DriverVersion: "x", CUDADriverVersion: 1})
	for _, k := range AllGPUFields.Keys() {
		key := map[string]string{"ecc_corrected": "volatile_corrected"}[k]
		if key == "" {
			key = k
		}
		if !strings.Contains(string(inv)+gpuJSONKeys(), `"`+key+`"`) {
			t.Errorf("%q is no nvml.json key", k)
		}
	}
}

// bitsOf counts the facts of f.
func bitsOf(f GPUFields) int { return len(f.Keys()) }

// gpuJSONKeys is the JSON of a GPU with every field set, for key lookups.
func gpuJSONKeys() string {
	g := GPU{MinorNumber: 1, UUID: "u", Name: "n", PCIBusID: "b", Serial: "s", PCIe: &PCIe{}, Fabric: &Fabric{},
		ECC: &ECC{VolatileCorrected: ptr[uint64](0)}, RemappedRows: &RemappedRows{}, RetiredPages: &RetiredPages{}, NVLinks: []NVLink{{}},
		NVLinkErrors: &NVLinkErrors{}, PCIeReplays: ptr[uint64](0), Memory: &Memory{}, Compute: &Compute{},
		ClockEvents: &ClockEvents{}, Thermal: &Thermal{}, Power: &Power{}, Persistence: ptr(true), RecoveryAction: "NONE"}
	b, _ := json.Marshal(g)
	return string(b)
}

func TestGPUFieldsJSON(t *testing.T) {
	b, err := json.Marshal(GPUThermal | GPUName)
	if err != nil || string(b) != `["name","temperature"]` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var f GPUFields
	if err := json.Unmarshal([]byte(`["serial","power"]`), &f); err != nil || f != GPUSerial|GPUPower {
		t.Errorf("Unmarshal = %s, %v", f, err)
	}
	if err := json.Unmarshal([]byte(`["serial","fan_speed"]`), &f); err == nil || !strings.Contains(err.Error(), `"fan_speed" is not a GPU fact nodecheck reads`) {
		t.Errorf("unknown key: %v", err)
	}
	// In nvml.json: an unknown fact names the key path.
	if _, err := parseNVML([]byte(`{"init": "SUCCESS", "fields": ["fan_speed"]}`)); err == nil || !strings.Contains(err.Error(), "fan_speed") {
		t.Errorf("parseNVML with an unknown fact: %v", err)
	}
}

func TestInventoryReadAndOnly(t *testing.T) {
	if got := (GPUInventory{}).Read(); got != LegacyGPUFields {
		t.Errorf("Read of a reading without fields = %s, want the legacy facts", got)
	}
	inv := GPUInventory{Init: InitSuccess, DriverVersion: "565.57.01", CUDADriverVersion: 12070, DeviceCount: 1, Fields: AllGPUFields,
		Devices: []GPU{{Index: 0, MinorNumber: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:18:00.0", Serial: "1654423001593",
			Memory: &Memory{TotalMiB: 81559}, ClockEvents: NewClockEvents(ClockGPUIdle), RecoveryAction: "NONE", Persistence: ptr(true),
			ResetStatus: &ResetStatus{ResetRequired: true}}}}
	got := inv.Only(GPUPCIBusID | GPURecoveryAction)
	want := GPUInventory{Init: InitSuccess, DeviceCount: 1, Fields: GPUPCIBusID | GPURecoveryAction,
		Devices: []GPU{{Index: 0, MinorNumber: -1, PCIBusID: "00000000:18:00.0", RecoveryAction: "NONE", ResetStatus: &ResetStatus{ResetRequired: true}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Only (-want +got):\n%s", diff)
	}
	// A legacy reading keeps only what it read.
	legacy := inv
	legacy.Fields = 0
	if got := legacy.Only(GPUSerial | GPUName).Fields; got != GPUName {
		t.Errorf("Only of a legacy reading: fields %s, want name only", got)
	}
	// Only shares nothing with inv.
	got = inv.Only(AllGPUFields)
	got.Devices[0].ClockEvents.Mask = 8
	if inv.Devices[0].ClockEvents.Mask != ClockGPUIdle {
		t.Error("Only shares ClockEvents with its inventory")
	}
	got.Devices[0].ResetStatus.ResetRequired = false
	if !inv.Devices[0].ResetStatus.ResetRequired {
		t.Error("Only shares ResetStatus with its inventory")
	}
	if got := inv.Only(GPUPCIBusID); got.Devices[0].ResetStatus != nil {
		t.Error("Only without the recovery action keeps the reset status")
	}
}

func TestNVMLRecordLegacyFields(t *testing.T) {
	// A reading of the legacy facts is written without "fields", as nodecheck wrote it before
	// the list; any other set is written.
	for _, tc := range []struct {
		fields GPUFields
		want   string
	}{
		{LegacyGPUFields, ""},
		{0, ""},
		{LegacyGPUFields | GPUSerial, `"fields"`},
	} {
		b, err := MarshalNVMLJSON(GPUInventory{Init: InitSuccess, Fields: tc.fields})
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"fields"`); has != (tc.want != "") {
			t.Errorf("fields %s: %s", tc.fields, b)
		}
	}
}

func TestClockEventsJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *ClockEvents
		wantErr  string
	}{
		{"mask", `{"mask": 136}`, &ClockEvents{Mask: 0x88, Reasons: []string{"hw_slowdown", "hw_power_brake_slowdown"}}, ""},
		{"names only, as a hand-written snapshot", `{"reasons": ["hw_thermal_slowdown"]}`, NewClockEvents(ClockHWThermalSlowdown), ""},
		{"both agreeing", `{"mask": 4, "reasons": ["sw_power_cap"]}`, NewClockEvents(ClockSWPowerCap), ""},
		{"unknown bit by number", `{"reasons": ["bit_0x800"]}`, &ClockEvents{Mask: 0x800, Reasons: []string{"bit_0x800"}}, ""},
		{"none", `{"mask": 0, "reasons": []}`, NewClockEvents(0), ""},
		{"disagreeing", `{"mask": 1, "reasons": ["sw_power_cap"]}`, nil, "mask 0x1 but reasons [sw_power_cap] (0x4)"},
		{"unknown name", `{"reasons": ["overheated"]}`, nil, `"overheated" is not a clocks event reason`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got ClockEvents
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, &got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := ClockEventReasonNames(ClockGPUIdle | ClockReliability | 0x1000); !cmp.Equal(got, []string{"gpu_idle", "reliability", "bit_0x1000"}) {
		t.Errorf("names = %v", got)
	}
}

func TestRecoveryActionName(t *testing.T) {
	for v, want := range map[uint64]string{0: "NONE", 1: "GPU_RESET", 2: "NODE_REBOOT", 3: "DRAIN_P2P", 4: "DRAIN_AND_RESET",
		5: "RECOVER_IMEX_DOMAIN", 6: "BUS_RESET", 7: "SYSTEM_REBOOT", 8: "ACTION_8"} {
		if got := RecoveryActionName(v); got != want {
			t.Errorf("RecoveryActionName(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestGPUFieldsPassThrough: Live asks its source for every fact from GPUs and for the run's
// facts from GPUsFields; Memo reads through GPUsFields with the facts it was given, once.
func TestGPUFieldsPassThrough(t *testing.T) {
	ctx := context.Background()
	src := &fakeGPUs{inv: GPUInventory{Init: InitSuccess}}
	l, _ := fixtureLive(t, WithGPUSource(src))
	if _, err := l.GPUs(ctx); err != nil || src.want != AllGPUFields {
		t.Errorf("Live.GPUs asked for %s (%v), want every fact", src.want, err)
	}
	m := NewMemo(l, WithGPUFields(GPUName|GPURecoveryAction))
	for range 3 {
		if _, err := m.GPUs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if src.want != GPUName|GPURecoveryAction || src.calls != 2 {
		t.Errorf("Memo asked for %s in %d readings in all, want name,recovery_action in one more", src.want, src.calls)
	}
	// A Facts that cannot limit its reading (a snapshot, a fake) answers GPUs.
	f := &gpuCountingFacts{}
	if _, err := NewMemo(f, WithGPUFields(GPUName)).GPUs(ctx); err != nil || f.gpus != 1 {
		t.Errorf("Memo over a Facts without GPUsFields: %d readings, %v", f.gpus, err)
	}
}

// gpuCountingFacts is a Facts (nil methods but GPUs) that counts GPUs calls.
type gpuCountingFacts struct {
	Facts
	gpus int
}

func (c *gpuCountingFacts) GPUs(context.Context) (GPUInventory, error) {
	c.gpus++
	return GPUInventory{Init: InitSuccess}, nil
}
