package node

import (
	"strconv"
	"strings"
)

// The signals of `nvidia-smi -q`: serial, persistence mode, PCIe replays, clocks
// event reasons, temperatures, power readings and the GPU recovery action. ParseNvidiaSMIQuery
// calls signalField for their sections; what they become:
//
//   - "Serial Number" is Serial; "Persistence Mode" Enabled/Disabled is Persistence.
//   - "PCI/Replays Since Reset" is PCIeReplays.
//   - "Clocks Event Reasons" (driver 535 and later; "Clocks Throttle Reasons" before) is
//     ClockEvents: each reason "Active" sets its nvml.h bit (smiClockReasons), "Not Active"
//     leaves it clear; "Clocks Throttle Reasons : N/A" (old drivers, consumer boards) leaves
//     ClockEvents nil. A reason this parser does not know is an error when Active (its bit
//     would be lost) and skipped when Not Active.
//   - "Temperature": "GPU Current Temp", "GPU Shutdown Temp", "GPU Slowdown Temp", "GPU Max
//     Operating Temp", "Memory Current Temp", "Memory Max Operating Temp" ("35 C") are the
//     absolute values; "GPU T.Limit Temp" (the margin below T.Limit), "GPU Shutdown T.Limit
//     Temp", "GPU Slowdown T.Limit Temp" and "GPU Max Operating T.Limit Temp" the T.Limit
//     ones that drivers 535 and later print for Ada, Hopper and later GPUs instead. "Memory
//     Max Operating T.Limit Temp" is left out: nvml.h defines no T.Limit for memory.
//   - "GPU Power Readings" ("Power Readings" before 535): "Enforced Power Limit", else "Current
//     Power Limit", is the enforced limit; "Default Power Limit" the default; "Power Draw"
//     ("Instantaneous Power Draw" on newer drivers) the draw ("700.00 W"). "GPU Memory Power
//     Readings" and "Module Power Readings" are other domains and are skipped.
//   - "GPU Recovery Action" (driver 550 and later): "None" is NONE; the other words are
//     NVML's names (smiRecoveryAction).
//   - "GPU Reset Status" (drivers 535 to 565; 570 prints "Requested functionality has been
//     deprecated" in its values) is ResetStatus: "Reset Required" and "Drain and Reset
//     Recommended", Yes or No. Any other value (N/A, which consumer boards print for the
//     drain, or an error text nvidia-smi prints in its place) is not a reading: ResetStatus
//     stays nil when neither line says Yes or No, and where a GPU Recovery Action is printed.

// smiSignals is what a GPU block says of the signals.
type smiSignals struct {
	persistence   *bool
	replays       *uint64
	clocks        uint64
	clocksSeen    bool // a reason line was read
	thermal       Thermal
	thermalAny    bool
	power         Power
	powerCurrent  float64 // "Current Power Limit", taken when no "Enforced Power Limit" is given
	powerEnforced bool    // "Enforced Power Limit" was given
	recovery      string
	reset         ResetStatus
	resetRead     bool // a GPU Reset Status line said Yes or No
}

// smiClockReasons are the reasons nvidia-smi prints, by their words, with nvml.h's bits.
var smiClockReasons = map[string]uint64{
	"Idle":                        ClockGPUIdle,
	"Applications Clocks Setting": ClockApplicationsSetting,
	"SW Power Cap":                ClockSWPowerCap,
	"HW Slowdown":                 ClockHWSlowdown,
	"Sync Boost":                  ClockSyncBoost,
	"SW Thermal Slowdown":         ClockSWThermalSlowdown,
	"HW Thermal Slowdown":         ClockHWThermalSlowdown,
	"HW Power Brake Slowdown":     ClockHWPowerBrakeSlowdown,
	"Display Clock Setting":       ClockDisplaySetting,
}

// signalField reads one line of the signal sections; path is as for field. seen collects the
// facts whose sections the capture prints.
func (g *smiGPU) signalField(path string, l smiLine, seen *GPUFields) error {
	section, rest, _ := strings.Cut(path, "/")
	switch section {
	case "Serial Number":
		*seen |= GPUSerial
		if !smiNA(l.val) {
			g.g.Serial = l.val
		}
	case "Persistence Mode":
		*seen |= GPUPersistence
		switch l.val {
		case "Enabled", "Disabled":
			on := l.val == "Enabled"
			g.sig.persistence = &on
		case "N/A", "[N/A]":
		default:
			return smiErr(l.n, "Persistence Mode %q: want Enabled, Disabled or N/A", l.val)
		}
	case "GPU Recovery Action":
		*seen |= GPURecoveryAction
		g.sig.recovery = smiRecoveryAction(l.val)
	case "GPU Reset Status":
		*seen |= GPURecoveryAction
		g.resetStatus(rest, l)
	case "Clocks Event Reasons", "Clocks Throttle Reasons":
		*seen |= GPUClockEvents
		return g.clockReason(rest, l)
	case "Temperature":
		*seen |= GPUThermal
		return g.temperature(rest, l)
	case "GPU Power Readings", "Power Readings":
		*seen |= GPUPower
		return g.powerReading(rest, l)
	}
	return nil
}

// resetStatus reads one "GPU Reset Status" line ("Reset Required : No").
func (g *smiGPU) resetStatus(key string, l smiLine) {
	var dst *bool
	switch key {
	case "Reset Required":
		dst = &g.sig.reset.ResetRequired
	case "Drain and Reset Recommended":
		dst = &g.sig.reset.DrainAndReset
	default:
		return
	}
	switch l.val {
	case "Yes", "No":
		*dst, g.sig.resetRead = l.val == "Yes", true
	}
}

// replayField reads "PCI/Replays Since Reset".
func (g *smiGPU) replayField(l smiLine, seen *GPUFields) error {
	*seen |= GPUPCIeReplays
	if smiNA(l.val) {
		return nil
	}
	v, err := strconv.ParseUint(l.val, 10, 64)
	if err != nil {
		return smiErr(l.n, "Replays Since Reset %q: want a count or N/A", l.val)
	}
	g.sig.replays = &v
	return nil
}

// clockReason reads one reason line ("HW Slowdown : Active"); key is "" for the section's
// own line ("Clocks Throttle Reasons : N/A").
func (g *smiGPU) clockReason(key string, l smiLine) error {
	if key == "" {
		if !smiNA(l.val) {
			return smiErr(l.n, "%s %q: want a section of reasons or N/A", l.key, l.val)
		}
		return nil
	}
	bit, known := smiClockReasons[l.key]
	switch l.val {
	case "Active":
		if !known {
			return smiErr(l.n, "clocks event reason %q is Active, but nodecheck does not know its NVML bit: it cannot be recorded", l.key)
		}
		g.sig.clocks |= bit
		g.sig.clocksSeen = true
	case "Not Active":
		g.sig.clocksSeen = g.sig.clocksSeen || known
	case "N/A", "[N/A]":
	default:
		return smiErr(l.n, "%s %q: want Active, Not Active or N/A", l.key, l.val)
	}
	return nil
}

// temperature reads one "Temperature" line ("GPU Current Temp : 35 C").
func (g *smiGPU) temperature(key string, l smiLine) error {
	th := &g.sig.thermal
	abs := map[string]*int{
		"GPU Current Temp": &th.GPUC, "GPU Shutdown Temp": &th.ShutdownC, "GPU Slowdown Temp": &th.SlowdownC,
		"GPU Max Operating Temp": &th.GPUMaxC, "Memory Current Temp": &th.MemoryC, "Memory Max Operating Temp": &th.MemoryMaxC,
	}
	margins := map[string]**int{
		"GPU T.Limit Temp": &th.MarginC, "GPU Shutdown T.Limit Temp": &th.ShutdownMarginC,
		"GPU Slowdown T.Limit Temp": &th.SlowdownMarginC, "GPU Max Operating T.Limit Temp": &th.GPUMaxMarginC,
	}
	dst, isAbs := abs[key]
	mdst, isMargin := margins[key]
	if (!isAbs && !isMargin) || smiNA(l.val) {
		return nil
	}
	num, ok := strings.CutSuffix(l.val, " C")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < -273 || v > 1000 || (isAbs && v < 0) {
		return smiErr(l.n, "%s %q: want a temperature such as \"35 C\" or N/A", l.key, l.val)
	}
	if isAbs {
		*dst = v
	} else {
		*mdst = &v
	}
	g.sig.thermalAny = true
	return nil
}

// powerReading reads one power line ("Current Power Limit : 700.00 W").
func (g *smiGPU) powerReading(key string, l smiLine) error {
	var dst *float64
	switch key {
	case "Enforced Power Limit":
		dst, g.sig.powerEnforced = &g.sig.power.EnforcedLimitW, true
	case "Current Power Limit":
		dst = &g.sig.powerCurrent
	case "Default Power Limit":
		dst = &g.sig.power.DefaultLimitW
	case "Power Draw", "Instantaneous Power Draw":
		dst = &g.sig.power.DrawW
	default:
		return nil
	}
	if smiNA(l.val) {
		return nil
	}
	num, ok := strings.CutSuffix(l.val, " W")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || v > 1e6 {
		return smiErr(l.n, "%s %q: want a power such as \"700.00 W\" or N/A", l.key, l.val)
	}
	*dst = v
	return nil
}

// smiRecoveryAction maps nvidia-smi's words for nvmlDeviceGpuRecoveryAction_t to the names
// GPU.RecoveryAction holds; "" for N/A. Words it does not know are kept, upper-cased with
// '_' for blanks, so that a new action is still named (and is not NONE).
func smiRecoveryAction(s string) string {
	switch strings.ToLower(s) {
	case "", "n/a", "[n/a]":
		return ""
	case "none":
		return "NONE"
	case "reset", "gpu reset":
		return "GPU_RESET"
	case "reboot", "node reboot":
		return "NODE_REBOOT"
	case "drain p2p":
		return "DRAIN_P2P"
	case "drain and reset":
		return "DRAIN_AND_RESET"
	}
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), " ", "_"))
}

// buildSignals sets out's signal fields from what the block said.
func (g *smiGPU) buildSignals(out *GPU) {
	s := g.sig
	out.Persistence = s.persistence
	out.PCIeReplays = s.replays
	if s.clocksSeen {
		out.ClockEvents = NewClockEvents(s.clocks)
	}
	if s.thermalAny {
		th := s.thermal
		out.Thermal = &th
	}
	p := s.power
	if !s.powerEnforced {
		p.EnforcedLimitW = s.powerCurrent
	}
	if p != (Power{}) {
		out.Power = &p
	}
	out.RecoveryAction = s.recovery
	// As NVML is read (checks/node/nvml, readFieldValues): the reset status only where the
	// driver gives no recovery action, which supersedes it (565 prints both).
	if s.resetRead && s.recovery == "" {
		r := s.reset
		out.ResetStatus = &r
	}
}

// smiSectionFacts are the facts each section of a GPU block (or its first key) tells; the
// signal sections say theirs in signalField, the PCI replays in replayField.
var smiSectionFacts = map[string]GPUFields{
	"Product Name": GPUName, "GPU UUID": GPUUUID, "Minor Number": GPUMinorNumber,
	"Fabric": GPUFabric, "ECC Mode": GPUECC | GPUECCCorrected, "ECC Errors": GPUECC | GPUECCCorrected,
	"Remapped Rows": GPURemappedRows, "Retired Pages": GPURetiredPages,
	"FB Memory Usage": GPUMemory, "Processes": GPUCompute,
}
