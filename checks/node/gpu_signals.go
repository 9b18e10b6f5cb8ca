package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The degradation signals NVML gives for the price of a call or two per GPU: NVLink
// and PCIe error counters, clock event reasons, temperatures, power limits, persistence mode
// and the driver's recovery action. They are facts only; checks judge them.

// NVLinkErrors are a GPU's NVLink error counters (nvmlDeviceGetNvLinkErrorCounter), summed
// over its active links. They count since the driver loaded, and restart at 0 when the driver
// reloads or the GPU is reset, so their meaning is in their rate between two readings
// (checks/history, gpu_error_rates).
type NVLinkErrors struct {
	CRCFlit  uint64 `json:"crc_flit"` // NVML_NVLINK_ERROR_DL_CRC_FLIT: flow-control CRC errors
	CRCData  uint64 `json:"crc_data"` // NVML_NVLINK_ERROR_DL_CRC_DATA: data CRC errors
	Replay   uint64 `json:"replay"`   // NVML_NVLINK_ERROR_DL_REPLAY: replays
	Recovery uint64 `json:"recovery"` // NVML_NVLINK_ERROR_DL_RECOVERY: link recoveries
	// Links is the number of active links summed.
	Links int `json:"links"`
	// Unread names the counters ("crc_data", ...) that some active link would not give
	// (Hopper answers ERROR_NOT_SUPPORTED for some): their sum is 0 and means nothing.
	Unread []string `json:"unread,omitempty"`
}

// ClockEvents is a GPU's current clocks event reasons (nvml.h nvmlClocksEventReasons; named
// throttle reasons before driver 535).
type ClockEvents struct {
	// Mask is the bit mask NVML returned; it is what checks judge.
	Mask uint64 `json:"mask"`
	// Reasons names the bits set in Mask (ClockEventReasonNames), for people reading the
	// file. A snapshot written by hand may give Reasons alone: Mask is then made from them.
	Reasons []string `json:"reasons"`
}

// The clocks event reason bits (nvml.h, nvmlClocksEventReason* / nvmlClocksThrottleReason*),
// and their names as ClockEvents.Reasons writes them.
const (
	ClockGPUIdle              uint64 = 0x1   // nothing runs; clocks drop to idle
	ClockApplicationsSetting  uint64 = 0x2   // clocks set to application clocks (deprecated)
	ClockSWPowerCap           uint64 = 0x4   // clocks lowered to stay under the power limit
	ClockHWSlowdown           uint64 = 0x8   // HW slowdown: clocks cut by 2x or more
	ClockSyncBoost            uint64 = 0x10  // held to a sync boost group's clocks
	ClockSWThermalSlowdown    uint64 = 0x20  // clocks lowered to stay under max operating temperatures
	ClockHWThermalSlowdown    uint64 = 0x40  // HW slowdown because the temperature is too high
	ClockHWPowerBrakeSlowdown uint64 = 0x80  // HW slowdown because an external power brake is asserted
	ClockDisplaySetting       uint64 = 0x100 // limited by the display clock setting
	ClockBoardLimit           uint64 = 0x200 // the board limit policy limits the clocks
	ClockReliability          uint64 = 0x400 // the reliability policy limits the clocks
)

var clockReasonNames = []struct {
	bit  uint64
	name string
}{
	{ClockGPUIdle, "gpu_idle"},
	{ClockApplicationsSetting, "applications_clocks_setting"},
	{ClockSWPowerCap, "sw_power_cap"},
	{ClockHWSlowdown, "hw_slowdown"},
	{ClockSyncBoost, "sync_boost"},
	{ClockSWThermalSlowdown, "sw_thermal_slowdown"},
	{ClockHWThermalSlowdown, "hw_thermal_slowdown"},
	{ClockHWPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{ClockDisplaySetting, "display_clock_setting"},
	{ClockBoardLimit, "board_limit"},
	{ClockReliability, "reliability"},
}

// ClockEventReasonNames names the bits of mask in bit order; a bit nvml.h does not define
// (as of go-nvml v0.13.4-1) is "bit_0x800".
func ClockEventReasonNames(mask uint64) []string {
	names := []string{}
	for b := uint64(1); b != 0; b <<= 1 {
		if mask&b == 0 {
			continue
		}
		names = append(names, ClockEventReasonName(b))
	}
	return names
}

// ClockEventReasonName names one bit.
func ClockEventReasonName(bit uint64) string {
	for _, r := range clockReasonNames {
		if r.bit == bit {
			return r.name
		}
	}
	return "bit_0x" + strconv.FormatUint(bit, 16)
}

// ClockEventReasonBit is the bit a name of ClockEventReasonNames stands for.
func ClockEventReasonBit(name string) (uint64, error) {
	for _, r := range clockReasonNames {
		if r.name == name {
			return r.bit, nil
		}
	}
	if h, ok := strings.CutPrefix(name, "bit_0x"); ok {
		if b, err := strconv.ParseUint(h, 16, 64); err == nil && b != 0 && b&(b-1) == 0 {
			return b, nil
		}
	}
	known := make([]string, len(clockReasonNames))
	for i, r := range clockReasonNames {
		known[i] = r.name
	}
	return 0, fmt.Errorf("%q is not a clocks event reason (known: %s, or bit_0xN)", name, strings.Join(known, ", "))
}

// NewClockEvents is the ClockEvents of mask.
func NewClockEvents(mask uint64) *ClockEvents {
	return &ClockEvents{Mask: mask, Reasons: ClockEventReasonNames(mask)}
}

// UnmarshalJSON reads a ClockEvents, making Mask from Reasons where only the names are
// given, and refusing a mask and names that disagree.
func (c *ClockEvents) UnmarshalJSON(b []byte) error {
	type plain ClockEvents
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var fromNames uint64
	for _, n := range p.Reasons {
		bit, err := ClockEventReasonBit(n)
		if err != nil {
			return err
		}
		fromNames |= bit
	}
	switch {
	case p.Mask == 0:
		p.Mask = fromNames
	case p.Reasons != nil && fromNames != p.Mask:
		return fmt.Errorf("mask 0x%x but reasons %v (0x%x): give one, or both agreeing", p.Mask, p.Reasons, fromNames)
	}
	p.Reasons = ClockEventReasonNames(p.Mask)
	*c = ClockEvents(p)
	return nil
}

// Thermal is a GPU's temperatures and its own limits, in °C. An absolute value is 0 where NVML
// would not give it (no GPU runs at 0 °C, and no threshold is 0 °C). Ada, Hopper and later
// GPUs also state their limits relative to the GPU's T.Limit (nvml.h NVML_FI_DEV_TEMPERATURE_
// *_TLIMIT, which "supersedes nvmlDeviceGetTemperatureThreshold" there; nvidia-smi 535 and
// later prints only those for them): a margin is how many °C the GPU is below T.Limit, and
// may be 0 or negative, hence the pointers.
type Thermal struct {
	GPUC       int `json:"gpu_c,omitempty"`        // nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)
	SlowdownC  int `json:"slowdown_c,omitempty"`   // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: HW slowdown begins
	ShutdownC  int `json:"shutdown_c,omitempty"`   // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: the GPU shuts down
	GPUMaxC    int `json:"gpu_max_c,omitempty"`    // NVML_TEMPERATURE_THRESHOLD_GPU_MAX: may throttle below base clock
	MemoryC    int `json:"memory_c,omitempty"`     // NVML_FI_DEV_MEMORY_TEMP: HBM, where reported
	MemoryMaxC int `json:"memory_max_c,omitempty"` // NVML_TEMPERATURE_THRESHOLD_MEM_MAX: SW slowdown for memory begins

	MarginC         *int `json:"tlimit_margin_c,omitempty"`   // nvmlDeviceGetMarginTemperature: °C below T.Limit now
	SlowdownMarginC *int `json:"slowdown_tlimit_c,omitempty"` // NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT
	ShutdownMarginC *int `json:"shutdown_tlimit_c,omitempty"` // NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT
	GPUMaxMarginC   *int `json:"gpu_max_tlimit_c,omitempty"`  // NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT
}

// Power is a GPU's power limits and draw in W (NVML gives mW). A value NVML would not give is
// 0; Power is nil when it gave none.
type Power struct {
	EnforcedLimitW float64 `json:"enforced_limit_w,omitempty"` // nvmlDeviceGetEnforcedPowerLimit: the limit in force
	DefaultLimitW  float64 `json:"default_limit_w,omitempty"`  // nvmlDeviceGetPowerManagementDefaultLimit
	DrawW          float64 `json:"draw_w,omitempty"`           // nvmlDeviceGetPowerUsage
}

// The GPU recovery actions (nvml.h nvmlDeviceGpuRecoveryAction_t, driver 550 and later), as
// GPU.RecoveryAction holds them.
var recoveryActionNames = []string{
	"NONE",                // 0: no action needed
	"GPU_RESET",           // 1: reset the GPU
	"NODE_REBOOT",         // 2: reboot the node
	"DRAIN_P2P",           // 3: quiesce peer-to-peer traffic, then ask again
	"DRAIN_AND_RESET",     // 4: drain peer-to-peer traffic and reset the GPU
	"RECOVER_IMEX_DOMAIN", // 5: recover the IMEX domain
	"BUS_RESET",           // 6: reset the GPU's PCIe bus
	"SYSTEM_REBOOT",       // 7: reboot the system
}

// RecoveryActionName names an nvmlDeviceGpuRecoveryAction_t value; one newer than this
// table is "ACTION_<n>".
func RecoveryActionName(v uint64) string {
	if v < uint64(len(recoveryActionNames)) {
		return recoveryActionNames[v]
	}
	return "ACTION_" + strconv.FormatUint(v, 10)
}

// cloneSignals deep-copies the signal fields of g.
func (g GPU) cloneSignals() GPU {
	if g.NVLinkErrors != nil {
		e := *g.NVLinkErrors
		e.Unread = slices.Clone(e.Unread)
		g.NVLinkErrors = &e
	}
	if g.PCIeReplays != nil {
		v := *g.PCIeReplays
		g.PCIeReplays = &v
	}
	if g.ClockEvents != nil {
		c := *g.ClockEvents
		c.Reasons = slices.Clone(c.Reasons)
		g.ClockEvents = &c
	}
	if g.Thermal != nil {
		t := *g.Thermal
		for _, p := range []**int{&t.MarginC, &t.SlowdownMarginC, &t.ShutdownMarginC, &t.GPUMaxMarginC} {
			if *p != nil {
				v := **p
				*p = &v
			}
		}
		g.Thermal = &t
	}
	if g.Power != nil {
		p := *g.Power
		g.Power = &p
	}
	if g.Persistence != nil {
		v := *g.Persistence
		g.Persistence = &v
	}
	if g.ResetStatus != nil {
		r := *g.ResetStatus
		g.ResetStatus = &r
	}
	return g
}
