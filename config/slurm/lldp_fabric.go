package slurm

// LLDP captures (one a node, as `nodecheck topology capture --lldp` writes them) turned into
// the node -> leaf switch map: a Fabric whose switches are the LLDP neighbours and whose
// adapters are the nodes' ports, so that LintTopology compares it with topology.conf exactly
// as it compares an ibnetdiscover capture; and GenerateTopology, which writes a topology.conf
// from it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// LLDPCapture is one node's LLDP neighbours, the file `nodecheck topology capture --lldp`
// writes:
//
//	{"host": "gpu001", "source": "lldpd", "taken_at": "RFC 3339",
//	 "interfaces": ["ens1f0np0"], "neighbors": [{"interface": "ens1f0np0", "sys_name": "leaf01", ...}]}
//
// source is "lldpd" (lldpcli) or "lldptool" (lldpad, the NIC's own agent's tool); interfaces
// are the ports asked about (empty: every port lldpd knows).
type LLDPCapture struct {
	Host       string         `json:"host"`
	Source     string         `json:"source"`
	TakenAt    string         `json:"taken_at,omitempty"`
	Interfaces []string       `json:"interfaces"`
	Neighbors  []LLDPNeighbor `json:"neighbors"`
	Path       string         `json:"-"` // the file it was read from
}

// maxLLDPCaptureBytes bounds one node's capture file.
const maxLLDPCaptureBytes = 4 << 20

// ParseLLDPCapture reads one node's capture from file: nodecheck's own form above, or the
// raw output of lldpcli (any format) or lldptool, whose host is then host (the file's name
// less its extension, by the caller's convention).
func ParseLLDPCapture(data []byte, file, host string) (LLDPCapture, error) {
	if len(data) > maxLLDPCaptureBytes {
		return LLDPCapture{}, fmt.Errorf("%s: more than %d bytes: not an LLDP capture", file, maxLLDPCaptureBytes)
	}
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' && !bytes.Contains(t[:min(len(t), 64)], []byte(`"lldp"`)) {
		var c LLDPCapture
		dec := json.NewDecoder(bytes.NewReader(t))
		if err := dec.Decode(&c); err != nil {
			return LLDPCapture{}, fmt.Errorf("%s: %w", file, err)
		}
		if c.Host == "" {
			return LLDPCapture{}, fmt.Errorf("%s: no \"host\": not a nodecheck LLDP capture", file)
		}
		if len(c.Neighbors) > maxLLDPNeighbors {
			return LLDPCapture{}, fmt.Errorf("%s: more than %d neighbours", file, maxLLDPNeighbors)
		}
		c.Path = file
		return c, nil
	}
	ns, err := ParseLLDP(data, file, "")
	if err != nil {
		return LLDPCapture{}, err
	}
	return LLDPCapture{Host: host, Source: "file", Neighbors: ns, Path: file}, nil
}

// ParseSwitchMap reads a map from LLDP switch names (system name, or chassis id where the
// switch sends no name) to topology.conf's switch names: "LLDPNAME TOPOLOGYNAME" a line,
// '#' comments and blank lines ignored.
func ParseSwitchMap(r io.Reader, file string) (map[string]string, []Problem, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxGUIDMapBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxGUIDMapBytes {
		return nil, nil, fmt.Errorf("read %s: more than %d bytes: not a switch map", file, maxGUIDMapBytes)
	}
	m := map[string]string{}
	var probs []Problem
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		pos := Pos{File: file, Line: i + 1}
		if len(f) != 2 {
			probs = append(probs, Problem{Severity: SeverityError, File: file, Line: i + 1,
				Message: ref(pos) + ": " + fmt.Sprintf("%q: want \"LLDP-NAME TOPOLOGY-NAME\" (two words)", shorten(line))})
			continue
		}
		if prev, ok := m[f[0]]; ok && prev != f[1] {
			probs = append(probs, Problem{Severity: SeverityError, File: file, Line: i + 1,
				Message: ref(pos) + ": " + fmt.Sprintf("%s is mapped to %s and to %s: keep one", f[0], prev, f[1])})
			continue
		}
		m[f[0]] = f[1]
	}
	return m, probs, nil
}

// LLDPMap is the node -> leaf map of a set of captures.
type LLDPMap struct {
	// Leaves lists each node's port and the switch it is cabled to, the switch named as the
	// switch map says (else as LLDP names it), in host, then interface order.
	Links []LLDPLink
	// Problems are captures that contradict each other or name nothing.
	Problems []Problem
}

// LLDPLink is one node port cabled to a switch port.
type LLDPLink struct {
	Host, Interface string
	Switch, Port    string
	File            string
}

// BuildLLDPMap joins the captures into one map, with switch names mapped by switchMap (nil
// for none). A host captured twice keeps its first capture.
func BuildLLDPMap(caps []LLDPCapture, switchMap map[string]string) LLDPMap {
	var m LLDPMap
	seen := map[string]string{}
	sorted := slices.Clone(caps)
	slices.SortStableFunc(sorted, func(a, b LLDPCapture) int { return strings.Compare(a.Host, b.Host) })
	for _, c := range sorted {
		if prev, dup := seen[c.Host]; dup {
			m.Problems = append(m.Problems, Problem{Severity: SeverityWarning, File: c.Path,
				Message: fmt.Sprintf("%s: host %s is captured again (first in %s): this capture is ignored", c.Path, c.Host, prev)})
			continue
		}
		seen[c.Host] = c.Path
		if len(c.Neighbors) == 0 {
			m.Problems = append(m.Problems, Problem{Severity: SeverityInfo, File: c.Path,
				Message: fmt.Sprintf("%s: host %s has no LLDP neighbour (is lldpd running there, and LLDP on its switch ports?)", c.Path, c.Host)})
			continue
		}
		ns := slices.Clone(c.Neighbors)
		slices.SortFunc(ns, func(a, b LLDPNeighbor) int { return strings.Compare(a.Interface, b.Interface) })
		for _, n := range ns {
			sw := n.Switch()
			if sw == "" {
				continue
			}
			if to, ok := switchMap[sw]; ok {
				sw = to
			}
			m.Links = append(m.Links, LLDPLink{Host: c.Host, Interface: n.Interface, Switch: sw, Port: n.PortID, File: c.Path})
		}
	}
	return m
}

// Fabric returns the map as a Fabric for LintTopology, with the naming that ties each port
// to its host: the switches are the LLDP neighbours (their description the switch's name),
// the adapters the nodes' ports ("HOST INTERFACE"), each cabled to its switch. GUIDs are
// made up, in order, and mean nothing outside this Fabric.
func (m LLDPMap) Fabric(path string) (*Fabric, AdapterNaming) {
	f := &Fabric{Path: path, Format: FabricFormatTopology}
	for t := range f.index {
		f.index[t] = map[uint64]int32{}
	}
	naming := AdapterNaming{GUIDs: map[uint64]string{}}
	add := func(t FabricNodeType, desc string) int32 {
		i := int32(len(f.Nodes))
		guid := uint64(i) + 1
		f.Nodes = append(f.Nodes, FabricNode{Type: t, GUID: guid, Desc: desc, Ports: 1})
		f.linkOf = append(f.linkOf, nil)
		f.index[t][guid] = i
		return i
	}
	switches := map[string]int32{}
	nextPort := map[int32]int{}
	for _, l := range m.Links {
		sw, ok := switches[l.Switch]
		if !ok {
			sw = add(FabricSwitch, l.Switch)
			switches[l.Switch] = sw
		}
		ca := add(FabricCA, l.Host+" "+l.Interface)
		naming.GUIDs[f.Nodes[ca].GUID] = l.Host
		nextPort[sw]++
		port := switchPortNumber(l.Port, nextPort[sw])
		for f.portLink(sw, port) >= 0 {
			port++ // two ports named alike: keep both links
		}
		f.Nodes[sw].Ports = max(f.Nodes[sw].Ports, port)
		i := int32(len(f.Links))
		f.Links = append(f.Links, FabricLink{A: FabricPort{Node: ca, Port: 1}, B: FabricPort{Node: sw, Port: port}})
		f.setPortLink(ca, 1, i)
		f.setPortLink(sw, port, i)
	}
	f.Problems = append(f.Problems, m.Problems...)
	return f, naming
}

// switchPortNumber is the number at the end of an LLDP port id ("ifname swp44" is 44,
// "Ethernet1/12" 12), else fallback.
func switchPortNumber(id string, fallback int) int {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	if n, err := strconv.Atoi(id[i:]); err == nil && n > 0 && n < 1<<16 {
		return n
	}
	return fallback
}

// GenerateTopology writes a topology.conf from the map: in tree form one SwitchName= line per
// leaf with its nodes, and a top switch over the leaves (LLDP from the nodes sees only the
// leaves; without a common parent Slurm cannot place a job across leaves) named top; in
// block form one BlockName= line per leaf (topology/block, Slurm 23.11 and later). A host
// cabled to several leaves (rails) is placed under the leaf most of its ports reach, the
// first by name on a tie.
func (m LLDPMap) GenerateTopology(w io.Writer, form, top string) error {
	count := map[string]map[string]int{}
	var hosts []string
	for _, l := range m.Links {
		if count[l.Host] == nil {
			count[l.Host] = map[string]int{}
			hosts = append(hosts, l.Host)
		}
		count[l.Host][l.Switch]++
	}
	members := map[string][]string{}
	var leaves []string
	for _, h := range hosts {
		best, bn := "", 0
		for sw, n := range count[h] {
			if n > bn || n == bn && sw < best {
				best, bn = sw, n
			}
		}
		if _, ok := members[best]; !ok {
			leaves = append(leaves, best)
		}
		members[best] = append(members[best], h)
	}
	slices.SortFunc(leaves, func(a, b string) int {
		if natLess(a, b) {
			return -1
		}
		if natLess(b, a) {
			return 1
		}
		return 0
	})
	var b strings.Builder
	b.WriteString("# topology.conf written by nodecheck topology generate from LLDP neighbours\n")
	switch form {
	case "tree", "":
		for _, sw := range leaves {
			fmt.Fprintf(&b, "SwitchName=%s Nodes=%s\n", sw, CompressHostlist(members[sw]))
		}
		if len(leaves) > 1 {
			fmt.Fprintf(&b, "# %s joins the leaves: LLDP from the nodes does not see the spines\n", top)
			fmt.Fprintf(&b, "SwitchName=%s Switches=%s\n", top, CompressHostlist(leaves))
		}
	case "block":
		for _, sw := range leaves {
			fmt.Fprintf(&b, "BlockName=%s Nodes=%s\n", sw, CompressHostlist(members[sw]))
		}
	default:
		return fmt.Errorf("topology form %q: want tree or block", form)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
