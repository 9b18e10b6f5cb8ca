package slurm

// LLDP neighbours: which switch port each Ethernet port of a node is cabled to, as lldpd's
// lldpcli (JSON, keyvalue or plain text) or lldpad's lldptool shows it. On a RoCE fabric this
// stands where ibnetdiscover stands on InfiniBand: LLDPFabric turns the node -> leaf map into
// a Fabric that LintTopology compares with topology.conf, and GenerateTopology writes one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LLDPNeighbor is the switch port one local port sees.
type LLDPNeighbor struct {
	Interface   string `json:"interface"`   // the local port ("ens1f0")
	SysName     string `json:"sys_name"`    // the switch's system name ("leaf01"); empty when it sends none
	ChassisID   string `json:"chassis_id"`  // the switch's chassis id ("mac 44:38:39:00:02:00")
	PortID      string `json:"port_id"`     // the switch port ("ifname swp44")
	PortDescr   string `json:"port_descr"`  // the switch port's description, when sent
	Description string `json:"description"` // the switch's system description, when sent
}

// Switch names the switch: its system name, else its chassis id.
func (n LLDPNeighbor) Switch() string {
	if n.SysName != "" {
		return n.SysName
	}
	return n.ChassisID
}

// maxLLDPNeighbors bounds the neighbours one capture may list: a node has a few dozen ports.
const maxLLDPNeighbors = 4096

// ParseLLDP reads the neighbours from the output of `lldpcli show neighbors` in any of its
// formats (-f json, json0, keyvalue or plain) or of `lldptool -t -n -i IFACE` (lldpad, one
// interface, named by iface since lldptool's neighbour TLVs do not carry the local port).
// The error names what is wrong and where (name is the file or program).
func ParseLLDP(data []byte, name, iface string) ([]LLDPNeighbor, error) {
	t := bytes.TrimSpace(data)
	var out []LLDPNeighbor
	var err error
	switch {
	case len(t) == 0:
		return nil, nil // no neighbours: lldpcli prints nothing in keyvalue form
	case t[0] == '{':
		out, err = parseLLDPJSON(t, name)
	case bytes.HasPrefix(t, []byte("lldp.")):
		out, err = parseLLDPKeyValue(t, name)
	case bytes.Contains(t, []byte("Chassis ID TLV")):
		out, err = parseLLDPTool(t, name, iface)
	case bytes.Contains(t, []byte("LLDP neighbors")) || bytes.Contains(t, []byte("Interface:")):
		out, err = parseLLDPPlain(t, name)
	default:
		return nil, fmt.Errorf("%s: not lldpcli or lldptool output: %q", name, firstText(t))
	}
	if err != nil {
		return nil, err
	}
	if len(out) > maxLLDPNeighbors {
		return nil, fmt.Errorf("%s: more than %d neighbours", name, maxLLDPNeighbors)
	}
	return out, nil
}

func firstText(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// parseLLDPJSON reads lldpcli's json form (objects keyed by interface and by system name;
// an interface list when there are several) and its json0 form (lists everywhere, with
// "name" and "value" keys).
func parseLLDPJSON(data []byte, name string) ([]LLDPNeighbor, error) {
	var doc struct {
		LLDP json.RawMessage `json:"lldp"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.LLDP == nil {
		return nil, fmt.Errorf("%s: JSON without an \"lldp\" key: not lldpcli -f json output", name)
	}
	var root any
	if err := json.Unmarshal(doc.LLDP, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []LLDPNeighbor
	for _, r := range asList(root) { // json0: "lldp": [ {...} ]
		m, _ := r.(map[string]any)
		for _, ifc := range lldpNamed(m["interface"]) {
			n := LLDPNeighbor{Interface: ifc.name}
			for _, ch := range lldpNamed(ifc.val["chassis"]) {
				n.SysName = firstString(ch.val["name"])
				if n.SysName == "" && ch.name != "id" {
					n.SysName = ch.name
				}
				n.ChassisID = idText(ch.val["id"])
				n.Description = firstString(ch.val["descr"])
				break
			}
			for _, p := range lldpNamed(ifc.val["port"]) {
				n.PortID = idText(p.val["id"])
				n.PortDescr = firstString(p.val["descr"])
				break
			}
			if n.Interface == "" {
				return nil, fmt.Errorf("%s: an interface without a name", name)
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// namedObject is one entry of lldpcli's JSON: a name and the object under it.
type namedObject struct {
	name string
	val  map[string]any
}

// lldpNamed reads the ways lldpcli's JSON lists things: {"eth0": {...}} (keyed by name), [{"eth0":
// {...}}, ...], [{"name": "eth0", ...}] (json0), or an unnamed {...} (a chassis with no name:
// its keys are "id", "descr", ...).
func lldpNamed(v any) []namedObject {
	var out []namedObject
	for _, e := range asList(v) {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if nm, ok := m["name"].(string); ok {
			out = append(out, namedObject{nm, m})
			continue
		}
		if _, hasID := m["id"]; hasID {
			out = append(out, namedObject{"id", m})
			continue
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if sub, ok := m[k].(map[string]any); ok {
				out = append(out, namedObject{k, sub})
			}
		}
	}
	return out
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// firstString reads a string value: "x", or json0's [{"value": "x"}].
func firstString(v any) string {
	for _, e := range asList(v) {
		switch t := e.(type) {
		case string:
			return t
		case map[string]any:
			if s, ok := t["value"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// idText reads an id {"type": "mac", "value": "..."} as "mac ...".
func idText(v any) string {
	for _, e := range asList(v) {
		if m, ok := e.(map[string]any); ok {
			typ, _ := m["type"].(string)
			val, _ := m["value"].(string)
			return strings.TrimSpace(typ + " " + val)
		}
	}
	return ""
}

// parseLLDPKeyValue reads `lldpcli -f keyvalue show neighbors`: lldp.IFACE.chassis.name=...
func parseLLDPKeyValue(data []byte, name string) ([]LLDPNeighbor, error) {
	var out []LLDPNeighbor
	idx := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		parts := strings.SplitN(k, ".", 3)
		if !ok || len(parts) < 3 || parts[0] != "lldp" || parts[1] == "" {
			return nil, fmt.Errorf("%s:%d: %q is not lldp.INTERFACE.KEY=VALUE", name, n, firstText([]byte(line)))
		}
		i, seen := idx[parts[1]]
		if !seen {
			i = len(out)
			idx[parts[1]] = i
			out = append(out, LLDPNeighbor{Interface: parts[1]})
		}
		nb := &out[i]
		switch parts[2] {
		case "chassis.name":
			nb.SysName = v
		case "chassis.mac":
			nb.ChassisID = "mac " + v
		case "chassis.descr":
			nb.Description = v
		case "port.ifname":
			nb.PortID = "ifname " + v
		case "port.mac":
			nb.PortID = "mac " + v
		case "port.local":
			nb.PortID = "local " + v
		case "port.descr":
			nb.PortDescr = v
		}
	}
	return out, sc.Err()
}

// parseLLDPPlain reads plain `lldpcli show neighbors`.
func parseLLDPPlain(data []byte, name string) ([]LLDPNeighbor, error) {
	var out []LLDPNeighbor
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if k == "Interface" {
			ifc, _, _ := strings.Cut(v, ",")
			out = append(out, LLDPNeighbor{Interface: strings.TrimSpace(ifc)})
			continue
		}
		if len(out) == 0 {
			continue
		}
		nb := &out[len(out)-1]
		switch k {
		case "SysName":
			nb.SysName = v
		case "ChassisID":
			nb.ChassisID = v
		case "SysDescr":
			nb.Description = v
		case "PortID":
			nb.PortID = v
		case "PortDescr":
			nb.PortDescr = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: plain lldpcli output with no Interface: line", name)
	}
	return out, sc.Err()
}

// parseLLDPTool reads lldptool's TLV listing of one interface's neighbour.
func parseLLDPTool(data []byte, name, iface string) ([]LLDPNeighbor, error) {
	if iface == "" {
		return nil, fmt.Errorf("%s: lldptool output names no local interface: give it", name)
	}
	nb := LLDPNeighbor{Interface: iface}
	var tlv string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' {
			tlv = line
			continue
		}
		switch tlv {
		case "Chassis ID TLV":
			k, v, _ := strings.Cut(line, ":")
			nb.ChassisID = strings.ToLower(k) + " " + strings.TrimSpace(v)
		case "Port ID TLV":
			k, v, _ := strings.Cut(line, ":")
			nb.PortID = strings.ToLower(k) + " " + strings.TrimSpace(v)
		case "System Name TLV":
			nb.SysName = line
		case "System Description TLV":
			nb.Description = line
		case "Port Description TLV":
			nb.PortDescr = line
		}
	}
	if nb.ChassisID == "" {
		return nil, errors.New(name + ": lldptool output without a Chassis ID TLV")
	}
	return []LLDPNeighbor{nb}, sc.Err()
}
