package dcgm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The health results as dcgmi prints them (Health::HelperHealthToString, dcgmi/Health.cpp).
const (
	HealthHealthy = "Healthy" // DCGM_HEALTH_RESULT_PASS
	HealthWarning = "Warning" // DCGM_HEALTH_RESULT_WARN
	HealthFailure = "Failure" // DCGM_HEALTH_RESULT_FAIL
)

// HealthReport is `dcgmi health -c -j`: DCGM's overall health of the group and each
// incident of its watches.
type HealthReport struct {
	// Overall is DCGM's health of the whole group: Healthy, Warning or Failure.
	Overall   string
	Incidents []Incident
}

// Incident is one of the host engine's findings on one entity.
type Incident struct {
	// Group and Entity name the entity as DCGM does: "GPU" and its DCGM GPU id, "Switch"
	// and the NVSwitch's id, "ConnectX" and the HCA's id, "CPU".
	Group  string
	Entity int
	// System is the watch that found it, as dcgmi names it: "PCIe system", "Memory system",
	// "NVLINK system", "Driver", "ConnectX system" (Health::HelperSystemToString).
	System string
	// Health is DCGM's result for the entity's system: Warning or Failure. dcgmi prints one
	// result for all the incidents of one system on one entity: the worst.
	Health string
	// Message is DCGM's message, put back together from dcgmi's lines.
	Message string
	// Error is the failure code whose message format Message matches; Known is false where
	// none does (Error.Severity is then UNKNOWN).
	Error ErrorInfo
	Known bool
}

// box is one node of dcgmi's JSON output (DcgmiOutputBoxer, dcgmi/DcgmiOutput.cpp): a value,
// the lines a long value was cut into, and named children.
type box struct {
	Value    string         `json:"value"`
	Overflow []string       `json:"overflow"`
	Children map[string]box `json:"children"`
}

// output is the whole JSON object of a dcgmi command that prints through DcgmiOutputJson.
type output struct {
	Header []string       `json:"header"`
	Body   map[string]box `json:"body"`
}

func decodeOutput(b []byte, what string) (output, error) {
	js, err := jsonStart(b)
	if err != nil {
		return output{}, fmt.Errorf("%s: %w", what, err)
	}
	var o output
	dec := json.NewDecoder(strings.NewReader(string(js)))
	if err := dec.Decode(&o); err != nil {
		return output{}, fmt.Errorf("%s: %w", what, err)
	}
	return o, nil
}

// overallHealthKey is the body's key for the group's health (OVERALL_HEALTH_TAG, Health.cpp).
const overallHealthKey = "Overall Health"

// ParseHealthCheck reads the output of `dcgmi health -c -j` (DCGM 3.x and 4.x print the same
// layout): {"header": ["Health Monitor Report"], "body": {"Overall Health": {"value": ...},
// "<entity group>": {"children": {"<id>": {"value": <entity health>, "children": {"Errors":
// {"children": {"<system>": {"value": <health>, "overflow": [lines...]}}}}}}}}}. dcgmi joins
// the messages of one system's incidents with ", " and cuts the result into lines of at most
// 54 characters at spaces (Health::AddErrorMessage); ParseHealthCheck joins the lines with a
// space and splits the text into DCGM's messages again by their formats. Incidents come in
// entity group, entity id and system order.
func ParseHealthCheck(b []byte) (HealthReport, error) {
	o, err := decodeOutput(b, "dcgmi health -c -j")
	if err != nil {
		return HealthReport{}, err
	}
	if !slices.Contains(o.Header, "Health Monitor Report") {
		return HealthReport{}, fmt.Errorf("dcgmi health -c -j: header %q, want \"Health Monitor Report\"", o.Header)
	}
	overall, ok := o.Body[overallHealthKey]
	if !ok {
		return HealthReport{}, fmt.Errorf("dcgmi health -c -j: no %q in the body", overallHealthKey)
	}
	rep := HealthReport{Overall: overall.Value}
	for _, group := range sortedKeys(o.Body) {
		if group == overallHealthKey {
			continue
		}
		ids, err := entityIDs(o.Body[group].Children)
		if err != nil {
			return HealthReport{}, fmt.Errorf("dcgmi health -c -j: %s: %w", group, err)
		}
		for _, id := range ids {
			ent := o.Body[group].Children[strconv.Itoa(id)]
			errs := ent.Children["Errors"].Children
			for _, system := range sortedKeys(errs) {
				sys := errs[system]
				text := strings.Join(overflowLines(sys.Overflow), " ")
				for _, m := range SplitMessages(text) {
					inc := Incident{Group: group, Entity: id, System: system, Health: sys.Value, Message: m}
					inc.Error, inc.Known = MatchMessage(m)
					rep.Incidents = append(rep.Incidents, inc)
				}
			}
			if len(errs) == 0 && ent.Value != "" && ent.Value != HealthHealthy {
				// An entity with a result and no system under it: keep what DCGM said.
				inc := Incident{Group: group, Entity: id, Health: ent.Value, Message: "DCGM reports " + ent.Value + " with no message"}
				inc.Error, _ = Lookup(-1)
				rep.Incidents = append(rep.Incidents, inc)
			}
		}
	}
	return rep, nil
}

// overflowLines are a system's lines of message, trimmed, without empty ones (its value is
// the result).
func overflowLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// entityIDs are the children's keys as DCGM entity ids, in numeric order.
func entityIDs(children map[string]box) ([]int, error) {
	ids := make([]int, 0, len(children))
	for k := range children {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("entity %q is not a DCGM entity id", k)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The watches as `dcgmi health -f -j` names them (the *_SYSTEMS_TAG of dcgmi/Health.cpp).
const (
	WatchPCIe             = "PCIe"
	WatchNVLink           = "NVLINK"
	WatchMemory           = "Memory"
	WatchSM               = "SM"
	WatchInforom          = "InfoROM"
	WatchThermal          = "Thermal"
	WatchPower            = "Power"
	WatchDriver           = "Driver"
	WatchNVSwitchNonFatal = "NvSwitch NF"
	WatchNVSwitchFatal    = "NvSwitch F"
	WatchConnectX         = "ConnectX" // DCGM 4.x
)

// NeededWatches are the watches nodecheck asks DCGM to keep (HealthSetArgv sets them all):
// every one `dcgmi health -s a` sets. SM is not among them: DCGM implements no SM watch
// (DcgmHealthWatch.cpp), and no dcgmi letter sets it. ConnectX is needed only where the
// installed dcgmi lists it (DCGM 4.x).
var NeededWatches = [...]string{WatchPCIe, WatchNVLink, WatchMemory, WatchInforom, WatchThermal, WatchPower,
	WatchDriver, WatchNVSwitchNonFatal, WatchNVSwitchFatal, WatchConnectX}

// Watches is `dcgmi health -f -j`: each watch dcgmi lists, and whether it is on.
type Watches map[string]bool

// Missing lists the NeededWatches that dcgmi lists as off, in NeededWatches' order; a watch
// this dcgmi does not list (ConnectX before DCGM 4) is not missing.
func (w Watches) Missing() []string {
	var out []string
	for _, n := range NeededWatches {
		if on, listed := w[n]; listed && !on {
			out = append(out, n)
		}
	}
	return out
}

// ParseWatches reads `dcgmi health -f -j`: a line "Health monitor systems report", then
// {"body": {"PCIe": {"value": "On"}, "NVLINK": {"value": "Off"}, ...}} (Health::GetWatches).
func ParseWatches(b []byte) (Watches, error) {
	o, err := decodeOutput(b, "dcgmi health -f -j")
	if err != nil {
		return nil, err
	}
	if len(o.Body) == 0 {
		return nil, fmt.Errorf("dcgmi health -f -j: no watch listed")
	}
	w := Watches{}
	for name, v := range o.Body {
		switch v.Value {
		case "On":
			w[name] = true
		case "Off":
			w[name] = false
		default:
			return nil, fmt.Errorf("dcgmi health -f -j: %s is %q, want On or Off", name, v.Value)
		}
	}
	return w, nil
}
