package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// The report of an LLDP sweep (--lldp): the node -> leaf switch map the nodes' captures make,
// the nodes that gave no leaf and why, and, with a topology.conf, the comparison `nodecheck
// lint --topology --lldp` makes (slurm.BuildLLDPMap, LLDPMap.Fabric and slurm.LintTopology,
// the same calls). It is built from the runs alone: a pure function of the captures read.

// lldpSummary is an LLDP sweep's result: every node in exactly one of mapped, no_neighbour
// and missing.
type lldpSummary struct {
	Schema int `json:"schema"`
	Nodes  int `json:"nodes"`
	// Mapped are the nodes whose capture names a switch on at least one port, in the sweep's
	// node order; SeveralLeaves those among them whose ports reach more than one switch.
	Mapped        []lldpNode `json:"mapped"`
	SeveralLeaves []string   `json:"several_leaves"`
	// NoNeighbour are the nodes whose capture names no switch, and why.
	NoNeighbour []lldpNoNeighbour `json:"no_neighbour"`
	// Missing are the nodes without a capture: no job (their state), or a job that left none.
	Missing []missing `json:"missing"`
	// MapProblems are the switch map's problems and captures that contradict each other.
	MapProblems []slurm.Problem `json:"map_problems"`
	// Topology is topology.conf compared with the map; nil without a topology.conf.
	Topology *lldpComparison `json:"topology,omitempty"`
	// FollowUp is the next command: `nodecheck lint --topology --lldp`, the same comparison
	// over every capture in the directory, or without a topology.conf `nodecheck topology
	// generate --lldp`, which writes one.
	FollowUp string  `json:"follow_up"`
	LLDPDir  string  `json:"lldp_dir"`
	ElapsedS float64 `json:"elapsed_s"`
	// SlurmCalls counts the Slurm client commands the sweep ran, by program, and in all.
	SlurmCalls      map[string]int `json:"slurm_calls"`
	SlurmCallsTotal int            `json:"slurm_calls_total"`
}

// lldpNode is one node's leaves: the switches its ports are cabled to, and each port.
type lldpNode struct {
	Node   string     `json:"node"`
	Leaves []string   `json:"leaves"`
	Ports  []lldpPort `json:"ports"`
	Source string     `json:"source"` // lldpd or lldptool
}

// lldpPort is one port of a node and the switch port it reaches: the switch as topology.conf
// names it (through --lldp-switch-map) and as LLDP does (its system name, else its chassis
// id); both "" when the port was asked about and has no neighbour.
type lldpPort struct {
	Interface  string `json:"interface"`
	Switch     string `json:"switch,omitempty"`
	LLDPSwitch string `json:"lldp_switch,omitempty"`
	SwitchPort string `json:"switch_port,omitempty"`
}

// lldpNoNeighbour is a node whose capture names no switch.
type lldpNoNeighbour struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// lldpComparison is topology.conf against the map: lint's problems (errors and warnings:
// drift) and notes (what it could not compare), or Error when topology.conf could not be read.
type lldpComparison struct {
	Topology  string          `json:"topology"`
	SlurmConf string          `json:"slurm_conf"` // "" when none was found: names not checked against it
	Problems  []slurm.Problem `json:"problems"`
	Notes     []slurm.Problem `json:"notes"`
	Error     string          `json:"error,omitempty"`
}

// lldpSchemaVersion is the LLDP summary's "schema" key.
const lldpSchemaVersion = 1

// lldpInputs is what the comparison needs besides the captures: the switch map and
// topology.conf, read (nil: none given, or none found), or the error reading them.
type lldpInputs struct {
	lldpDir   string
	switchMap map[string]string
	mapProbs  []slurm.Problem
	mapFile   string
	topology  *slurm.TopologyConf
	topoPath  string
	topoErr   error
	slurmConf *slurm.SlurmConf
	slurmPath string
	nodecheck string // nodecheck's path, for the follow-up command
}

// lldpCaptureOf parses a run's capture; it must be about the node the job ran on.
func lldpCaptureOf(r nodeRun) (slurm.LLDPCapture, error) {
	if r.OutputErr != nil {
		return slurm.LLDPCapture{}, r.OutputErr
	}
	if len(r.Output) == 0 {
		return slurm.LLDPCapture{}, errors.New("empty")
	}
	c, err := slurm.ParseLLDPCapture(r.Output, r.OutputPath, r.Node)
	if err != nil {
		return c, err
	}
	if c.Host != r.Node {
		return c, fmt.Errorf("the capture is about host %q: a stale or copied file, or --host in --args", c.Host)
	}
	return c, nil
}

// summarizeLLDP builds the report from the runs (their captures read) and the inputs.
func summarizeLLDP(runs []nodeRun, in lldpInputs) lldpSummary {
	s := lldpSummary{Schema: lldpSchemaVersion, Nodes: len(runs), Mapped: []lldpNode{}, SeveralLeaves: []string{},
		NoNeighbour: []lldpNoNeighbour{}, Missing: []missing{}, MapProblems: []slurm.Problem{}, LLDPDir: in.lldpDir}
	var caps []slurm.LLDPCapture
	for _, r := range runs {
		if r.Skipped != "" {
			s.Missing = append(s.Missing, missing{Node: r.Node, Reason: r.Skipped})
			continue
		}
		c, err := lldpCaptureOf(r)
		if err != nil {
			s.Missing = append(s.Missing, missing{Node: r.Node, JobID: r.JobID, State: r.State, Reason: missingReason(r, err)})
			continue
		}
		caps = append(caps, c)
		n := lldpNodeOf(c, in.switchMap)
		if len(n.Leaves) == 0 {
			s.NoNeighbour = append(s.NoNeighbour, lldpNoNeighbour{Node: r.Node, Reason: noNeighbourReason(c)})
			continue
		}
		s.Mapped = append(s.Mapped, n)
		if len(n.Leaves) > 1 {
			s.SeveralLeaves = append(s.SeveralLeaves, n.Node)
		}
	}
	m := slurm.BuildLLDPMap(caps, in.switchMap)
	// "No LLDP neighbour" notes are NoNeighbour's, with their reasons.
	m.Problems = slices.DeleteFunc(m.Problems, func(p slurm.Problem) bool { return p.Severity == slurm.SeverityInfo })
	s.MapProblems = append(append(s.MapProblems, in.mapProbs...), m.Problems...)
	s.FollowUp = followUp(in)
	if in.topoPath == "" {
		return s
	}
	cmp := &lldpComparison{Topology: in.topoPath, SlurmConf: in.slurmPath, Problems: []slurm.Problem{}, Notes: []slurm.Problem{}}
	s.Topology = cmp
	switch {
	case in.topoErr != nil:
		cmp.Error = in.topoErr.Error()
		return s
	case len(caps) == 0:
		cmp.Error = "no capture to compare topology.conf with"
		return s
	}
	m.Problems = nil // in MapProblems already
	f, naming := m.Fabric(in.lldpDir)
	res := slurm.LintTopology(slurm.TopologyInput{Slurm: in.slurmConf, Topology: in.topology, Fabric: f, Naming: naming})
	for _, p := range res.Problems {
		if p.Severity == slurm.SeverityInfo {
			cmp.Notes = append(cmp.Notes, p)
		} else {
			cmp.Problems = append(cmp.Problems, p)
		}
	}
	cmp.Notes = append(cmp.Notes, res.Notes...)
	if in.slurmConf == nil {
		cmp.Notes = append(cmp.Notes, slurm.Problem{Severity: slurm.SeverityInfo, File: in.topoPath,
			Message: "no slurm.conf found here (SLURM_CONF, /etc/slurm/slurm.conf): topology.conf's node names were not checked against it, and nodes it omits were not found"})
	}
	return s
}

// followUp is `nodecheck lint` making the same comparison over every capture in the
// directory, or without a topology.conf `nodecheck topology generate`.
func followUp(in lldpInputs) string {
	argv := []string{in.nodecheck, "topology", "generate", "--lldp", in.lldpDir}
	if in.topoPath != "" {
		argv = []string{in.nodecheck, "lint"}
		if in.slurmPath != "" {
			argv = append(argv, "--slurm-conf", in.slurmPath)
		}
		argv = append(argv, "--topology", in.topoPath, "--lldp", in.lldpDir)
	}
	if in.mapFile != "" {
		argv = append(argv, "--lldp-switch-map", in.mapFile)
	}
	for i, w := range argv {
		argv[i] = shellQuote(w)
	}
	return strings.Join(argv, " ")
}

// lldpNodeOf is a capture's ports and the switches they reach (names mapped by switchMap),
// in interface order; the ports asked about without a neighbour are listed without a switch.
func lldpNodeOf(c slurm.LLDPCapture, switchMap map[string]string) lldpNode {
	n := lldpNode{Node: c.Host, Leaves: []string{}, Ports: []lldpPort{}, Source: c.Source}
	seen := map[string]bool{}
	for _, nb := range c.Neighbors {
		raw := nb.Switch()
		if raw == "" {
			continue
		}
		sw := raw
		if to, ok := switchMap[raw]; ok {
			sw = to
		}
		seen[nb.Interface] = true
		n.Ports = append(n.Ports, lldpPort{Interface: nb.Interface, Switch: sw, LLDPSwitch: raw, SwitchPort: nb.PortID})
		if !slices.Contains(n.Leaves, sw) {
			n.Leaves = append(n.Leaves, sw)
		}
	}
	for _, ifc := range c.Interfaces {
		if !seen[ifc] {
			n.Ports = append(n.Ports, lldpPort{Interface: ifc})
		}
	}
	slices.SortStableFunc(n.Ports, func(a, b lldpPort) int { return strings.Compare(a.Interface, b.Interface) })
	slices.Sort(n.Leaves)
	return n
}

// noNeighbourReason says why a capture names no switch, from its own fields: which ports were
// asked, of which agent.
func noNeighbourReason(c slurm.LLDPCapture) string {
	agent := c.Source
	if agent == "" {
		agent = "the capture"
	}
	switch {
	case len(c.Neighbors) > 0:
		return fmt.Sprintf("%s reports %d neighbours with neither a system name nor a chassis id", agent, len(c.Neighbors))
	case len(c.Interfaces) == 0:
		return fmt.Sprintf("no RDMA-capable Ethernet port found and none named (--args --interface): %s was asked about every port and knows no neighbour", agent)
	}
	return fmt.Sprintf("no LLDP neighbour on %s (%s answered): is LLDP sent on the switch ports, and is %s receiving on these ports?", strings.Join(c.Interfaces, ","), agent, agent)
}

// failed says whether the sweep found something to act on: a node without a capture or
// without a neighbour, a map problem, or topology.conf off the map (an error or a warning) or
// unreadable.
func (s lldpSummary) failed() bool {
	if len(s.Missing) > 0 || len(s.NoNeighbour) > 0 || len(s.MapProblems) > 0 {
		return true
	}
	return s.Topology != nil && (s.Topology.Error != "" || len(s.Topology.Problems) > 0)
}

// writeLLDPText prints the summary for people.
func writeLLDPText(w io.Writer, s lldpSummary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nodecheck fleet sweep --lldp: %d nodes, %d on a leaf switch (%d on several), %d without a neighbour, %d missing",
		s.Nodes, len(s.Mapped), len(s.SeveralLeaves), len(s.NoNeighbour), len(s.Missing))
	if s.ElapsedS > 0 {
		fmt.Fprintf(&b, " in %.1fs", s.ElapsedS)
	}
	if s.LLDPDir != "" {
		fmt.Fprintf(&b, " (captures in %s)", s.LLDPDir)
	}
	b.WriteString("\n")
	width := 0
	for _, n := range s.Mapped {
		width = max(width, len(n.Node))
	}
	for _, n := range s.NoNeighbour {
		width = max(width, len(n.Node))
	}
	for _, m := range s.Missing {
		width = max(width, len(shownName(m.Node)))
	}
	for _, n := range s.Mapped {
		ports := make([]string, len(n.Ports))
		for i, p := range n.Ports {
			switch {
			case p.Switch == "":
				ports[i] = p.Interface + ": no neighbour"
			case p.SwitchPort == "":
				ports[i] = p.Interface + " -> " + p.LLDPSwitch
			default:
				ports[i] = p.Interface + " -> " + p.LLDPSwitch + " " + p.SwitchPort
			}
		}
		tag := "LEAF     "
		if len(n.Leaves) > 1 {
			tag = "LEAVES   "
		}
		fmt.Fprintf(&b, "%s%-*s  %s  (%s)\n", tag, width, n.Node, strings.Join(n.Leaves, ","), strings.Join(ports, "; "))
	}
	for _, n := range s.NoNeighbour {
		fmt.Fprintf(&b, "NO LLDP  %-*s  %s\n", width, n.Node, n.Reason)
	}
	for _, m := range s.Missing {
		fmt.Fprintf(&b, "MISSING  %-*s  %s\n", width, shownName(m.Node), m.Reason)
	}
	for _, p := range s.MapProblems {
		fmt.Fprintf(&b, "map: %s\n", p)
	}
	writeComparisonText(&b, s)
	if s.FollowUp != "" {
		fmt.Fprintf(&b, "Follow up: %s\n", s.FollowUp)
	}
	if s.SlurmCallsTotal > 0 {
		names := make([]string, 0, len(s.SlurmCalls))
		for k := range s.SlurmCalls {
			names = append(names, k)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = fmt.Sprintf("%s %d", k, s.SlurmCalls[k])
		}
		fmt.Fprintf(&b, "Slurm calls: %d (%s)\n", s.SlurmCallsTotal, strings.Join(parts, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeComparisonText prints topology.conf against the map, and the lint command.
func writeComparisonText(b *strings.Builder, s lldpSummary) {
	c := s.Topology
	if c == nil {
		b.WriteString("topology.conf: none given or found (--topology): the map was not compared with one\n")
		return
	}
	if c.Error != "" {
		fmt.Fprintf(b, "topology.conf %s: not compared: %s\n", c.Topology, c.Error)
	} else {
		errs := 0
		for _, p := range c.Problems {
			if p.Severity == slurm.SeverityError {
				errs++
			}
		}
		verdict := "matches the captures"
		if len(c.Problems) > 0 {
			verdict = fmt.Sprintf("%d errors, %d warnings against the captures", errs, len(c.Problems)-errs)
		}
		fmt.Fprintf(b, "topology.conf %s: %s\n", c.Topology, verdict)
		for _, p := range c.Problems {
			fmt.Fprintf(b, "  %s\n", p)
		}
		for _, p := range c.Notes {
			fmt.Fprintf(b, "  %s\n", p)
		}
	}
}

// writeLLDPJSON prints the summary for programs.
func writeLLDPJSON(w io.Writer, s lldpSummary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
