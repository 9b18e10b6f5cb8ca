//go:build cgo

package nvml

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/nodecheck/nodecheck/checks/node"
)

// The degradation signals (the serial is read with the GPU's identity): PCIe replays, clock event reasons,
// temperatures, power, persistence mode, the driver's recovery action and the NVLink error
// counters. Each read follows readDevice's rules: ERROR_NOT_SUPPORTED (or any failure but a
// lost GPU) leaves its field nil or zero, a lost GPU ends the GPU's reading.
//
// Functions a driver may lack are looked up before the first call (a missing one would end
// the process in the dynamic linker, see the note above readECC):
//   - nvmlDeviceGetSerial (source.go), nvmlDeviceGetTemperatureThreshold, nvmlDeviceGetEnforcedPowerLimit,
//     nvmlDeviceGetPowerManagementDefaultLimit, nvmlDeviceGetPowerUsage and
//     nvmlDeviceGetPersistenceMode date from the first NVML releases (Kepler era) and are not
//     deprecated: called as they are.
//   - nvmlDeviceGetCurrentClocksEventReasons came with driver 535 (the rename of
//     nvmlDeviceGetCurrentClocksThrottleReasons, which nvml.h deprecates for 13.0): the new
//     name where the library has it, the old one otherwise.
//   - nvmlDeviceGetTemperature is deprecated for 13.0 (nvml.h), nvmlDeviceGetFieldValues,
//     nvmlDeviceGetNvLinkErrorCounter and nvmlDeviceGetPcieReplayCounter are younger than the
//     first NVML, nvmlDeviceGetMarginTemperature came with driver 570: all looked up.

// signalReads are readDevice's reads of the signals, in call order.
func signalReads(lib api, d nvml.Device, g *node.GPU, want node.GPUFields) []deviceRead {
	th := &node.Thermal{}
	return []deviceRead{
		{node.GPUPCIeReplays, func() nvml.Return { return readPCIeReplays(lib, d, g) }},
		{node.GPUClockEvents, func() nvml.Return { return readClockEvents(lib, d, g) }},
		{node.GPUThermal, func() nvml.Return { return readThermal(lib, d, th) }},
		{node.GPUPower, func() nvml.Return { return readPower(d, g) }},
		{node.GPUPersistence, func() nvml.Return {
			mode, ret := d.GetPersistenceMode()
			if ret == nvml.SUCCESS {
				on := mode == nvml.FEATURE_ENABLED
				g.Persistence = &on
			}
			return ret
		}},
		{node.GPUThermal | node.GPURecoveryAction, func() nvml.Return { return readFieldValues(lib, d, g, th, want) }},
		{node.GPUThermal, func() nvml.Return {
			ret := readMargin(lib, d, th)
			if *th != (node.Thermal{}) {
				g.Thermal = th
			}
			return ret
		}},
	}
}

// readPCIeReplays fills g.PCIeReplays.
func readPCIeReplays(lib api, d nvml.Device, g *node.GPU) nvml.Return {
	if !lib.hasSymbol("nvmlDeviceGetPcieReplayCounter") {
		return nvml.ERROR_FUNCTION_NOT_FOUND
	}
	v, ret := d.GetPcieReplayCounter()
	if ret == nvml.SUCCESS && v >= 0 {
		n := uint64(v)
		g.PCIeReplays = &n
	}
	return ret
}

// readClockEvents fills g.ClockEvents with the reasons' mask, through the driver-535 name
// where the library has it, else the throttle-reasons name older drivers have.
func readClockEvents(lib api, d nvml.Device, g *node.GPU) nvml.Return {
	var (
		mask uint64
		ret  nvml.Return
	)
	switch {
	case lib.hasSymbol("nvmlDeviceGetCurrentClocksEventReasons"):
		mask, ret = d.GetCurrentClocksEventReasons()
	case lib.hasSymbol("nvmlDeviceGetCurrentClocksThrottleReasons"):
		mask, ret = d.GetCurrentClocksThrottleReasons()
	default:
		return nvml.ERROR_FUNCTION_NOT_FOUND
	}
	if ret == nvml.SUCCESS {
		g.ClockEvents = node.NewClockEvents(mask)
	}
	return ret
}

// readThermal fills th with the GPU's temperature and its four absolute thresholds.
func readThermal(lib api, d nvml.Device, th *node.Thermal) nvml.Return {
	if lib.hasSymbol("nvmlDeviceGetTemperature") {
		v, ret := d.GetTemperature(nvml.TEMPERATURE_GPU)
		if gone(ret) {
			return ret
		}
		if ret == nvml.SUCCESS {
			th.GPUC = int(v)
		}
	}
	for _, t := range []struct {
		kind nvml.TemperatureThresholds
		dst  *int
	}{
		{nvml.TEMPERATURE_THRESHOLD_SLOWDOWN, &th.SlowdownC},
		{nvml.TEMPERATURE_THRESHOLD_SHUTDOWN, &th.ShutdownC},
		{nvml.TEMPERATURE_THRESHOLD_GPU_MAX, &th.GPUMaxC},
		{nvml.TEMPERATURE_THRESHOLD_MEM_MAX, &th.MemoryMaxC},
	} {
		v, ret := d.GetTemperatureThreshold(t.kind)
		if gone(ret) {
			return ret
		}
		if ret == nvml.SUCCESS {
			*t.dst = int(v)
		}
	}
	return nvml.SUCCESS
}

// readPower fills g.Power from the enforced and default limits and the draw, in mW.
func readPower(d nvml.Device, g *node.GPU) nvml.Return {
	p := node.Power{}
	for _, r := range []struct {
		get func() (uint32, nvml.Return)
		dst *float64
	}{
		{d.GetEnforcedPowerLimit, &p.EnforcedLimitW},
		{d.GetPowerManagementDefaultLimit, &p.DefaultLimitW},
		{d.GetPowerUsage, &p.DrawW},
	} {
		v, ret := r.get()
		if gone(ret) {
			return ret
		}
		if ret == nvml.SUCCESS {
			*r.dst = float64(v) / 1000
		}
	}
	if p != (node.Power{}) {
		g.Power = &p
	}
	return nvml.SUCCESS
}

// Field ids read with nvmlDeviceGetFieldValues (nvml.h NVML_FI_DEV_*).
const (
	fieldMemoryTemp     = nvml.FI_DEV_MEMORY_TEMP             // 82: HBM temperature
	fieldRecoveryAction = nvml.FI_DEV_GET_GPU_RECOVERY_ACTION // 230: driver 550 and later
	fieldShutdownTLimit = nvml.FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT
	fieldSlowdownTLimit = nvml.FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT
	fieldGPUMaxTLimit   = nvml.FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT

	// The reset advice the recovery action replaced (nvml.h: "Deprecated, do not use (use
	// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION instead)"): read for drivers that give no action.
	fieldResetStatus         = nvml.FI_DEV_RESET_STATUS           // 226
	fieldDrainAndResetStatus = nvml.FI_DEV_DRAIN_AND_RESET_STATUS // 227
)

// readFieldValues asks, in one nvmlDeviceGetFieldValues call, for the memory temperature
// (with GPUThermal), the recovery action and the older reset status (with
// GPURecoveryAction) and, where the absolute slowdown threshold was not given (Ada and
// later, where nvml.h says these fields supersede it), the T.Limit thresholds. A field NVML
// does not know or support answers with its own error in the value (drivers before 550 for
// the recovery action) and leaves its fact unset. The reset status is kept only where the
// recovery action was not given: drivers that print "GPU Reset Status" in place of "GPU
// Recovery Action" (nvidia-smi -q of 535 to 555) still answer a reset that is required.
func readFieldValues(lib api, d nvml.Device, g *node.GPU, th *node.Thermal, want node.GPUFields) nvml.Return {
	if !lib.hasSymbol("nvmlDeviceGetFieldValues") {
		return nvml.ERROR_FUNCTION_NOT_FOUND
	}
	var ids []uint32
	if want.Has(node.GPUThermal) {
		ids = append(ids, fieldMemoryTemp)
		if th.SlowdownC == 0 {
			ids = append(ids, fieldSlowdownTLimit, fieldShutdownTLimit, fieldGPUMaxTLimit)
		}
	}
	if want.Has(node.GPURecoveryAction) {
		ids = append(ids, fieldRecoveryAction, fieldResetStatus, fieldDrainAndResetStatus)
	}
	vals := make([]nvml.FieldValue, len(ids))
	for i, id := range ids {
		vals[i].FieldId = id
	}
	if ret := d.GetFieldValues(vals); ret != nvml.SUCCESS {
		return ret
	}
	var reset node.ResetStatus
	resetRead := false
	for _, v := range vals {
		if nvml.Return(v.NvmlReturn) != nvml.SUCCESS {
			continue
		}
		n, ok := fieldInt(v)
		if !ok {
			continue
		}
		switch v.FieldId {
		case fieldMemoryTemp:
			if n > 0 {
				th.MemoryC = int(n)
			}
		case fieldSlowdownTLimit:
			th.SlowdownMarginC = new(int(n))
		case fieldShutdownTLimit:
			th.ShutdownMarginC = new(int(n))
		case fieldGPUMaxTLimit:
			th.GPUMaxMarginC = new(int(n))
		case fieldRecoveryAction:
			if n >= 0 {
				g.RecoveryAction = node.RecoveryActionName(uint64(n))
			}
		case fieldResetStatus:
			reset.ResetRequired, resetRead = n != 0, true
		case fieldDrainAndResetStatus:
			reset.DrainAndReset, resetRead = n != 0, true
		}
	}
	if resetRead && g.RecoveryAction == "" {
		g.ResetStatus = &reset
	}
	return nvml.SUCCESS
}

// readMargin reads the GPU's current margin below T.Limit, only where its thresholds came as
// T.Limit values alone: with absolute thresholds it adds nothing a check needs.
func readMargin(lib api, d nvml.Device, th *node.Thermal) nvml.Return {
	if th.SlowdownC != 0 || th.SlowdownMarginC == nil || !lib.hasSymbol("nvmlDeviceGetMarginTemperature") {
		return nvml.SUCCESS
	}
	m, ret := d.GetMarginTemperature()
	if ret == nvml.SUCCESS {
		th.MarginC = new(int(m.MarginTemperature))
	}
	return ret
}

// fieldInt reads an integer field value by its nvmlValueType_t (little-endian union, as the
// cgo struct lays it out on the platforms NVML ships for); a double is truncated.
func fieldInt(v nvml.FieldValue) (int64, bool) {
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return int64(binary.LittleEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		u := binary.LittleEndian.Uint64(b)
		return int64(min(u, math.MaxInt64)), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return int64(binary.LittleEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return int64(binary.LittleEndian.Uint16(b)), true
	case nvml.VALUE_TYPE_DOUBLE:
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// nvlinkCounters are the NVLink error counters summed, with the names NVLinkErrors.Unread
// gives them.
var nvlinkCounters = []struct {
	counter nvml.NvLinkErrorCounter
	name    string
	dst     func(e *node.NVLinkErrors) *uint64
}{
	{nvml.NVLINK_ERROR_DL_CRC_FLIT, "crc_flit", func(e *node.NVLinkErrors) *uint64 { return &e.CRCFlit }},
	{nvml.NVLINK_ERROR_DL_CRC_DATA, "crc_data", func(e *node.NVLinkErrors) *uint64 { return &e.CRCData }},
	{nvml.NVLINK_ERROR_DL_REPLAY, "replay", func(e *node.NVLinkErrors) *uint64 { return &e.Replay }},
	{nvml.NVLINK_ERROR_DL_RECOVERY, "recovery", func(e *node.NVLinkErrors) *uint64 { return &e.Recovery }},
}

// readNVLinkErrors sums the four counters over the active links of links: 4 calls per
// active link (72 on an H100 SXM5). NVML's all-links totals (NVML_FI_DEV_NVLINK_*_TOTAL
// field values) would be one call, but Hopper answers them with SUCCESS and zero while
// nvidia-smi reads the per-link counters (DataDog/datadog-agent#55966): a zero that is not
// a reading. A counter some active link would not give is listed in Unread, its sum 0.
func readNVLinkErrors(lib api, d nvml.Device, g *node.GPU, links []node.NVLink) nvml.Return {
	var active []int
	for _, l := range links {
		if l.Active {
			active = append(active, l.Link)
		}
	}
	if len(active) == 0 || !lib.hasSymbol("nvmlDeviceGetNvLinkErrorCounter") {
		return nvml.SUCCESS
	}
	e := &node.NVLinkErrors{Links: len(active)}
	for _, c := range nvlinkCounters {
		var sum uint64
		read := true
		for _, l := range active {
			v, ret := d.GetNvLinkErrorCounter(l, c.counter)
			if gone(ret) {
				return ret
			}
			if ret != nvml.SUCCESS {
				read = false
				if ret == nvml.ERROR_NOT_SUPPORTED {
					break // the GPU has no such counter: no other link has it either
				}
				continue
			}
			sum += v
		}
		if !read {
			e.Unread = append(e.Unread, c.name)
			sum = 0
		}
		*c.dst(e) = sum
	}
	g.NVLinkErrors = e
	return nvml.SUCCESS
}
