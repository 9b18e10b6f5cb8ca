//go:build cgo

package nvml

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
)

// The healthy H100's signals as withSignals answers them: the temperatures and thresholds of
// an H100 SXM5 `nvidia-smi -q` from a driver that still printed absolute thresholds ("GPU
// Current Temp : 35 C", "GPU Shutdown Temp : 92 C", "GPU Slowdown Temp : 89 C", "GPU Max
// Operating Temp : 87 C", "Memory Current Temp : 44 C", "Memory Max Operating Temp : 95 C",
// "Power Limit : 700.00 W"), idle clocks, persistence on, no recovery action, NVLink and PCIe
// counters at zero.
const (
	h100TempC, h100SlowdownC, h100ShutdownC, h100GPUMaxC, h100MemC, h100MemMaxC = 35, 89, 92, 87, 44, 95
	h100PowerMW, h100DrawMW                                                     = 700000, 74710
)

// h100Serial is the serial withSignals gives GPU i.
func h100Serial(i int) string { return fmt.Sprintf("16501240%05d", i) }

// uintField is a field value of NVML_VALUE_TYPE_UNSIGNED_INT holding v.
func uintField(id uint32, v uint32) nvml.FieldValue {
	f := nvml.FieldValue{FieldId: id, ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_INT)}
	binary.LittleEndian.PutUint32(f.Value[:], v)
	return f
}

// intField is a field value of NVML_VALUE_TYPE_SIGNED_INT holding v.
func intField(id uint32, v int32) nvml.FieldValue {
	f := nvml.FieldValue{FieldId: id, ValueType: uint32(nvml.VALUE_TYPE_SIGNED_INT)}
	binary.LittleEndian.PutUint32(f.Value[:], uint32(v))
	return f
}

// fieldAnswers makes a GetFieldValuesFunc from answers by field id; a field without an
// answer gets ERROR_NOT_SUPPORTED in its value, as a driver answers a field it lacks.
func fieldAnswers(answers ...nvml.FieldValue) func([]nvml.FieldValue) nvml.Return {
	return func(vals []nvml.FieldValue) nvml.Return {
		for i := range vals {
			j := slices.IndexFunc(answers, func(a nvml.FieldValue) bool { return a.FieldId == vals[i].FieldId })
			if j < 0 {
				vals[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			vals[i] = answers[j]
		}
		return nvml.SUCCESS
	}
}

// withSignals gives every device of s the signal reads the mocks leave unset, as a healthy
// H100 answers them.
func withSignals(s *server.Server) {
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetSerialFunc = func() (string, nvml.Return) { return h100Serial(i), nvml.SUCCESS }
		dev.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS }
		dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return h100TempC, nvml.SUCCESS }
		dev.GetTemperatureThresholdFunc = func(t nvml.TemperatureThresholds) (uint32, nvml.Return) {
			switch t {
			case nvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
				return h100SlowdownC, nvml.SUCCESS
			case nvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
				return h100ShutdownC, nvml.SUCCESS
			case nvml.TEMPERATURE_THRESHOLD_GPU_MAX:
				return h100GPUMaxC, nvml.SUCCESS
			case nvml.TEMPERATURE_THRESHOLD_MEM_MAX:
				return h100MemMaxC, nvml.SUCCESS
			}
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		dev.GetMarginTemperatureFunc = func() (nvml.MarginTemperature, nvml.Return) {
			return nvml.MarginTemperature{MarginTemperature: 54}, nvml.SUCCESS
		}
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return h100PowerMW, nvml.SUCCESS }
		dev.GetPowerManagementDefaultLimitFunc = func() (uint32, nvml.Return) { return h100PowerMW, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return h100DrawMW, nvml.SUCCESS }
		dev.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
		dev.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC), uintField(fieldRecoveryAction, uint32(nvml.GPU_RECOVERY_ACTION_NONE)))
		dev.GetNvLinkErrorCounterFunc = func(int, nvml.NvLinkErrorCounter) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	}
}

// healthySignals is what Source should make of withSignals' reads for GPU i.
func healthySignals(g *node.GPU, i int) {
	g.Serial = h100Serial(i)
	g.PCIeReplays = new(uint64(0))
	g.ClockEvents = node.NewClockEvents(node.ClockGPUIdle)
	g.Thermal = &node.Thermal{GPUC: h100TempC, SlowdownC: h100SlowdownC, ShutdownC: h100ShutdownC, GPUMaxC: h100GPUMaxC,
		MemoryC: h100MemC, MemoryMaxC: h100MemMaxC}
	g.Power = &node.Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 74.71}
	g.Persistence = new(true)
	g.RecoveryAction = "NONE"
	g.NVLinkErrors = &node.NVLinkErrors{Links: h100Links}
}

// noSignals clears the signals read after the health reads: what a GPU lost before them has.
func noSignals(g *node.GPU) {
	g.PCIeReplays, g.ClockEvents, g.Thermal, g.Power, g.Persistence, g.RecoveryAction = nil, nil, nil, nil, nil, ""
}

// signalCalls counts the signal reads made of d, by go-nvml method.
func signalCalls(d *server.Device) map[string]int {
	return map[string]int{
		"GetSerial":                       len(d.GetSerialCalls()),
		"GetPcieReplayCounter":            len(d.GetPcieReplayCounterCalls()),
		"GetCurrentClocksEventReasons":    len(d.GetCurrentClocksEventReasonsCalls()),
		"GetCurrentClocksThrottleReasons": len(d.GetCurrentClocksThrottleReasonsCalls()),
		"GetTemperature":                  len(d.GetTemperatureCalls()),
		"GetTemperatureThreshold":         len(d.GetTemperatureThresholdCalls()),
		"GetMarginTemperature":            len(d.GetMarginTemperatureCalls()),
		"GetEnforcedPowerLimit":           len(d.GetEnforcedPowerLimitCalls()),
		"GetPowerManagementDefaultLimit":  len(d.GetPowerManagementDefaultLimitCalls()),
		"GetPowerUsage":                   len(d.GetPowerUsageCalls()),
		"GetPersistenceMode":              len(d.GetPersistenceModeCalls()),
		"GetFieldValues":                  len(d.GetFieldValuesCalls()),
		"GetNvLinkErrorCounter":           len(d.GetNvLinkErrorCounterCalls()),
	}
}

// TestReadDeviceSignals reads one GPU whose signal reads answer as each case sets them, on
// top of a healthy H100, and checks both the GPU read and the calls made.
func TestReadDeviceSignals(t *testing.T) {
	notSupported := func(d *server.Device) {
		d.GetSerialFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
		d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetPowerManagementDefaultLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetFieldValuesFunc = fieldAnswers()
		d.GetMarginTemperatureFunc = func() (nvml.MarginTemperature, nvml.Return) {
			return nvml.MarginTemperature{}, nvml.ERROR_NOT_SUPPORTED
		}
	}
	// linkCounters answers the NVLink error counters of link l from per-counter values.
	tests := []struct {
		name  string
		setup func(s *server.Server, d *server.Device)
		want  func(g *node.GPU)
		calls func(c map[string]int)
	}{
		{name: "healthy H100"},
		{
			name: "HW power brake: the mask and its names",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
					return nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, nvml.SUCCESS
				}
			},
			want: func(g *node.GPU) {
				g.ClockEvents = &node.ClockEvents{Mask: 0x88, Reasons: []string{"hw_slowdown", "hw_power_brake_slowdown"}}
			},
		},
		{
			name: "driver before 535: the throttle reasons call",
			setup: func(s *server.Server, _ *server.Device) {
				s.LookupSymbolFunc = lacking("nvmlDeviceGetCurrentClocksEventReasons")
			},
			calls: func(c map[string]int) {
				c["GetCurrentClocksEventReasons"], c["GetCurrentClocksThrottleReasons"] = 0, 1
			},
		},
		{
			name: "a library without either clocks call, the field values, the PCIe replay and NVLink counters, or the temperature call: none called",
			setup: func(s *server.Server, _ *server.Device) {
				s.LookupSymbolFunc = lacking("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
					"nvmlDeviceGetFieldValues", "nvmlDeviceGetPcieReplayCounter", "nvmlDeviceGetNvLinkErrorCounter", "nvmlDeviceGetTemperature")
			},
			want: func(g *node.GPU) {
				g.ClockEvents, g.PCIeReplays, g.NVLinkErrors, g.RecoveryAction = nil, nil, nil, ""
				g.Thermal.GPUC, g.Thermal.MemoryC = 0, 0
			},
			calls: func(c map[string]int) {
				c["GetCurrentClocksEventReasons"], c["GetFieldValues"], c["GetPcieReplayCounter"], c["GetNvLinkErrorCounter"], c["GetTemperature"] = 0, 0, 0, 0, 0
			},
		},
		{
			name:  "consumer GPU: every signal NOT_SUPPORTED",
			setup: func(_ *server.Server, d *server.Device) { notSupported(d) },
			want: func(g *node.GPU) {
				g.Serial, g.PCIeReplays, g.ClockEvents, g.Thermal, g.Power, g.Persistence, g.RecoveryAction = "", nil, nil, nil, nil, nil, ""
			},
			calls: func(c map[string]int) { c["GetMarginTemperature"] = 0 }, // no T.Limit thresholds either
		},
		{
			name: "T.Limit thresholds only: margins from the field values, and the current margin",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC), uintField(fieldRecoveryAction, 0),
					intField(fieldSlowdownTLimit, -2), intField(fieldShutdownTLimit, -8), intField(fieldGPUMaxTLimit, 0))
			},
			want: func(g *node.GPU) {
				g.Thermal = &node.Thermal{GPUC: h100TempC, MemoryC: h100MemC,
					MarginC: new(54), SlowdownMarginC: new(-2), ShutdownMarginC: new(-8), GPUMaxMarginC: new(0)}
			},
			calls: func(c map[string]int) { c["GetMarginTemperature"] = 1 },
		},
		{
			name: "recovery action: reset",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC), uintField(fieldRecoveryAction, uint32(nvml.GPU_RECOVERY_ACTION_GPU_RESET)))
			},
			want: func(g *node.GPU) { g.RecoveryAction = "GPU_RESET" },
		},
		{
			name: "recovery action: a value newer than the table",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC), uintField(fieldRecoveryAction, 12))
			},
			want: func(g *node.GPU) { g.RecoveryAction = "ACTION_12" },
		},
		{
			name: "driver before 550: no recovery action, no memory temperature",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers()
			},
			want: func(g *node.GPU) { g.RecoveryAction, g.Thermal.MemoryC = "", 0 },
		},
		{
			name: "no recovery action, the older reset status says a reset is required",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC), uintField(fieldResetStatus, 1), uintField(fieldDrainAndResetStatus, 0))
			},
			want: func(g *node.GPU) { g.RecoveryAction, g.ResetStatus = "", &node.ResetStatus{ResetRequired: true} },
		},
		{
			name: "no recovery action, drain and reset recommended",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldResetStatus, 1), uintField(fieldDrainAndResetStatus, 1))
			},
			want: func(g *node.GPU) {
				g.RecoveryAction, g.Thermal.MemoryC, g.ResetStatus = "", 0, &node.ResetStatus{ResetRequired: true, DrainAndReset: true}
			},
		},
		{
			name: "a recovery action given: the reset status is not kept",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = fieldAnswers(uintField(fieldMemoryTemp, h100MemC),
					uintField(fieldRecoveryAction, uint32(nvml.GPU_RECOVERY_ACTION_NONE)), uintField(fieldResetStatus, 1))
			},
		},
		{
			name: "NVLink counters summed over active links; one counter not supported",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
					switch {
					case link >= h100Links:
						return 0, nvml.ERROR_INVALID_ARGUMENT
					case link == 3:
						return nvml.FEATURE_DISABLED, nvml.SUCCESS
					}
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
				d.GetNvLinkErrorCounterFunc = func(link int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
					switch c {
					case nvml.NVLINK_ERROR_DL_CRC_DATA:
						return 0, nvml.ERROR_NOT_SUPPORTED
					case nvml.NVLINK_ERROR_DL_REPLAY:
						return uint64(link), nvml.SUCCESS
					}
					return 1, nvml.SUCCESS
				}
			},
			want: func(g *node.GPU) {
				g.NVLinks[3].Active = false
				// 17 active links: 0..17 without 3 sum to 153-3 = 150 replays.
				g.NVLinkErrors = &node.NVLinkErrors{CRCFlit: 17, Replay: 150, Recovery: 17, Links: 17, Unread: []string{"crc_data"}}
			},
			// flit, replay, recovery on 17 links; data CRC once, then not asked again.
			calls: func(c map[string]int) { c["GetNvLinkErrorCounter"] = 3*17 + 1 },
		},
		{
			name: "persistence off, power capped, replays",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_DISABLED, nvml.SUCCESS }
				d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 500000, nvml.SUCCESS }
				d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 67, nvml.SUCCESS }
			},
			want: func(g *node.GPU) {
				g.Persistence, g.Power.EnforcedLimitW, g.PCIeReplays = new(false), 500, new(uint64(67))
			},
		},
		{
			name: "GPU lost at the clock reasons: reading stops, what was read is kept",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
			},
			want: func(g *node.GPU) {
				g.ClockEvents, g.Thermal, g.Power, g.Persistence, g.RecoveryAction, g.NVLinkErrors = nil, nil, nil, nil, "", &node.NVLinkErrors{Links: h100Links}
				g.Error = "ERROR_GPU_IS_LOST"
			},
			calls: func(c map[string]int) {
				for _, k := range []string{"GetTemperature", "GetTemperatureThreshold", "GetEnforcedPowerLimit", "GetPowerManagementDefaultLimit",
					"GetPowerUsage", "GetPersistenceMode", "GetFieldValues"} {
					c[k] = 0
				}
			},
		},
		{
			name: "GPU lost in the field values",
			setup: func(_ *server.Server, d *server.Device) {
				d.GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_GPU_IS_LOST }
			},
			want: func(g *node.GPU) {
				g.Thermal, g.RecoveryAction, g.Error = nil, "", "ERROR_GPU_IS_LOST"
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newH100()
			d := s.Devices[0].(*server.Device)
			if tc.setup != nil {
				tc.setup(s, d)
			}
			want := wantH100(s).Devices[0]
			if tc.want != nil {
				tc.want(&want)
			}
			wantCalls := map[string]int{
				"GetSerial": 1, "GetPcieReplayCounter": 1, "GetCurrentClocksEventReasons": 1, "GetCurrentClocksThrottleReasons": 0,
				"GetTemperature": 1, "GetTemperatureThreshold": 4, "GetMarginTemperature": 0,
				"GetEnforcedPowerLimit": 1, "GetPowerManagementDefaultLimit": 1, "GetPowerUsage": 1,
				"GetPersistenceMode": 1, "GetFieldValues": 1, "GetNvLinkErrorCounter": 4 * h100Links,
			}
			if tc.calls != nil {
				tc.calls(wantCalls)
			}
			got := readDevice(mockAPI{s, fabricCompleted}, 0, node.AllGPUFields)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("readDevice (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCalls, signalCalls(d)); diff != "" {
				t.Errorf("NVML calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFieldValueRequest: the field values asked for follow the facts wanted, and the T.Limit
// fields only where the absolute slowdown threshold was not given.
func TestFieldValueRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		want     node.GPUFields
		slowdown int
		ids      []uint32
	}{
		{"thermal, absolute thresholds", node.GPUThermal, 89, []uint32{fieldMemoryTemp}},
		{"thermal, T.Limit only", node.GPUThermal, 0, []uint32{fieldMemoryTemp, fieldSlowdownTLimit, fieldShutdownTLimit, fieldGPUMaxTLimit}},
		{"recovery action, and the reset status older drivers give instead", node.GPURecoveryAction, 0,
			[]uint32{fieldRecoveryAction, fieldResetStatus, fieldDrainAndResetStatus}},
		{"both", node.GPUThermal | node.GPURecoveryAction, 89, []uint32{fieldMemoryTemp, fieldRecoveryAction, fieldResetStatus, fieldDrainAndResetStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newH100()
			d := s.Devices[0].(*server.Device)
			var g node.GPU
			if ret := readFieldValues(mockAPI{s, fabricCompleted}, d, &g, &node.Thermal{SlowdownC: tc.slowdown}, tc.want); ret != nvml.SUCCESS {
				t.Fatal(returnName(ret))
			}
			var got []uint32
			for _, v := range d.GetFieldValuesCalls()[0].FieldValues {
				got = append(got, v.FieldId)
			}
			if diff := cmp.Diff(tc.ids, got); diff != "" {
				t.Errorf("field ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldInt(t *testing.T) {
	put := func(typ nvml.ValueType, fill func(b []byte)) nvml.FieldValue {
		f := nvml.FieldValue{ValueType: uint32(typ)}
		fill(f.Value[:])
		return f
	}
	for _, tc := range []struct {
		name string
		v    nvml.FieldValue
		want int64
		ok   bool
	}{
		{"unsigned int", put(nvml.VALUE_TYPE_UNSIGNED_INT, func(b []byte) { binary.LittleEndian.PutUint32(b, 36) }), 36, true},
		{"signed int, negative", put(nvml.VALUE_TYPE_SIGNED_INT, func(b []byte) { binary.LittleEndian.PutUint32(b, uint32(0xfffffffe)) }), -2, true},
		{"unsigned long long", put(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, func(b []byte) { binary.LittleEndian.PutUint64(b, 4) }), 4, true},
		{"unsigned long long past int64", put(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, func(b []byte) { binary.LittleEndian.PutUint64(b, math.MaxUint64) }), math.MaxInt64, true},
		{"signed long long", put(nvml.VALUE_TYPE_SIGNED_LONG_LONG, func(b []byte) { binary.LittleEndian.PutUint64(b, uint64(0xfffffffffffffff8)) }), -8, true},
		{"unsigned short", put(nvml.VALUE_TYPE_UNSIGNED_SHORT, func(b []byte) { binary.LittleEndian.PutUint16(b, 7) }), 7, true},
		{"double", put(nvml.VALUE_TYPE_DOUBLE, func(b []byte) { binary.LittleEndian.PutUint64(b, math.Float64bits(41.7)) }), 41, true},
		{"NaN", put(nvml.VALUE_TYPE_DOUBLE, func(b []byte) { binary.LittleEndian.PutUint64(b, math.Float64bits(math.NaN())) }), 0, false},
		{"unknown type", put(nvml.ValueType(99), func([]byte) {}), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := fieldInt(tc.v)
			if got != tc.want || ok != tc.ok {
				t.Errorf("fieldInt = %d, %t; want %d, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}
