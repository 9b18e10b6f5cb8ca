package slurm

// slurm.conf, the node-related parts: NodeName=, PartitionName=, GresTypes= and Include, read
// with the syntax of confscan.go. Every other top-level key is kept in Settings, and held
// against the keys Slurm's releases read (slurmconf_keys.go).

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NodeLine is one NodeName= line of slurm.conf, with the NodeName=DEFAULT values in force at
// that point already applied.
type NodeLine struct {
	Pos   Pos
	Names *Hostlist // NodeName
	// Hostnames and Addrs are NodeHostname= and NodeAddr= as written; they pair with Names
	// position by position (NodeName=dev[0-25] NodeAddr=edev[0-25]). Empty when not set.
	Hostnames string
	Addrs     string

	CPUs            int    // CPUs (or the older Procs)
	Boards          int    // Boards
	SocketsPerBoard int    // SocketsPerBoard
	Sockets         int    // Sockets
	CoresPerSocket  int    // CoresPerSocket
	ThreadsPerCore  int    // ThreadsPerCore
	RealMemory      uint64 // RealMemory, in MiB
	// TmpDisk is TmpDisk, in MB as slurmd counts them (MiB: f_blocks × f_frsize / 2^20 of
	// TmpFS); slurmctld sets a node that registers with less INVAL ("Low TmpDisk").
	TmpDisk  uint64
	State    string // State, as written (CLOUD, FUTURE, UNKNOWN, ...)
	Gres     []GresSpec
	Features []string // Feature or Features, split at commas

	// Set maps each key given for these nodes (in Slurm's spelling: "CPUs", "Gres", ...) to
	// where its value was written: this line, or the NodeName=DEFAULT line it came from.
	Set map[string]Pos
}

// GPUCount returns the number of GPUs slurm.conf configures: the counts of every gpu
// element of Gres=, summed over types.
func (n NodeLine) GPUCount() uint64 {
	var c uint64
	for _, g := range n.Gres {
		if strings.EqualFold(g.Name, "gpu") {
			c += g.Count
		}
	}
	return c
}

// CPUCount returns the CPU count Slurm derives for these nodes: CPUs= when given, otherwise
// Sockets (or Boards × SocketsPerBoard) × CoresPerSocket × ThreadsPerCore, each defaulting to
// 1. ok is false when slurm.conf gives none of these keys, so the count is only Slurm's
// default of 1 and says nothing about the hardware.
func (n NodeLine) CPUCount() (cpus int, ok bool) {
	if n.CPUs > 0 {
		return n.CPUs, true
	}
	one := func(v int) int {
		if v <= 0 {
			return 1
		}
		return v
	}
	sockets := n.Sockets
	if sockets <= 0 {
		sockets = one(n.Boards) * one(n.SocketsPerBoard)
	}
	ok = n.Sockets > 0 || n.Boards > 0 || n.SocketsPerBoard > 0 || n.CoresPerSocket > 0 || n.ThreadsPerCore > 0
	return sockets * one(n.CoresPerSocket) * one(n.ThreadsPerCore), ok
}

// CoreCount returns the number of cores Slurm derives for these nodes, as read_config.c's
// _parse_nodename does: sockets × CoresPerSocket (SocketLayout). ok is false when slurm.conf
// gives none of the topology keys (see CPUCount).
func (n NodeLine) CoreCount() (cores int, ok bool) {
	sockets, perSocket := n.SocketLayout()
	ok = n.CPUs > 0 || n.Sockets > 0 || n.Boards > 0 || n.SocketsPerBoard > 0 || n.CoresPerSocket > 0 || n.ThreadsPerCore > 0
	return sockets * perSocket, ok
}

// SocketLayout returns the sockets and cores per socket Slurm derives, as read_config.c's
// _parse_nodename does: sockets are Boards × SocketsPerBoard when SocketsPerBoard is given
// (it wins over Sockets=), else Sockets=, else CPUs / (CoresPerSocket × ThreadsPerCore) when
// that divides evenly, else Boards; each key defaults to 1. Slurm numbers cores socket by
// socket, so socket s has cores s×perSocket to (s+1)×perSocket-1.
func (n NodeLine) SocketLayout() (sockets, perSocket int) {
	one := func(v int) int {
		if v <= 0 {
			return 1
		}
		return v
	}
	perSocket, threads, boards := one(n.CoresPerSocket), one(n.ThreadsPerCore), one(n.Boards)
	switch {
	case n.SocketsPerBoard > 0:
		sockets = boards * n.SocketsPerBoard
	case n.Sockets > 0:
		sockets = n.Sockets
	case n.CPUs > 0 && n.CPUs%(perSocket*threads) == 0:
		sockets = n.CPUs / (perSocket * threads)
	default:
		sockets = boards
	}
	return sockets, perSocket
}

// PartitionLine is one PartitionName= line of slurm.conf (DEFAULT lines are applied, not kept).
type PartitionLine struct {
	Pos   Pos
	Name  string // PartitionName
	Nodes string // Nodes, as written: a hostlist that may also name NodeSets; empty when unset
	// AllNodes is true for Nodes=ALL, Slurm's keyword for every node.
	AllNodes bool
	Default  bool // Default=YES
	// PreemptMode is the partition's PreemptMode as written ("REQUEUE", "SUSPEND,GANG");
	// empty when not set, so the cluster's PreemptMode applies.
	PreemptMode string
	// GraceTime is GraceTime, the time a preempted job gets between SIGTERM and SIGKILL
	// (Slurm's default 0); a very long time stands for UNLIMITED.
	GraceTime time.Duration
	// PriorityTier is PriorityTier, or the older Priority= which sets it and wins over it
	// (read_config.c); Slurm's default is 1. With PreemptType=preempt/partition_prio, jobs of
	// a higher tier preempt jobs of a lower one.
	PriorityTier int
	Priority     int // Priority=, the older key that also sets PriorityTier (and wins over it)
	// OverSubscribe is OverSubscribe= (or the older Shared=) as written: NO, YES, FORCE or
	// EXCLUSIVE, with an optional :count; empty when not set (Slurm's default NO, which still
	// lets jobs share a node's free cores and GPUs under select/cons_tres).
	OverSubscribe string
	// MaxTime and DefaultTime are MaxTime= and DefaultTime=, whole minutes (ParseSlurmTime);
	// UnlimitedTime for UNLIMITED, and zero when not set (Slurm's defaults: MaxTime
	// UNLIMITED, DefaultTime MaxTime).
	MaxTime     time.Duration
	DefaultTime time.Duration
	// Set maps each of Nodes, PreemptMode, GraceTime, PriorityTier, Priority, MaxTime,
	// DefaultTime and OverSubscribe given for this partition to where: this line, or the PartitionName=DEFAULT
	// line it came from.
	Set map[string]Pos
}

// Setting is a top-level slurm.conf key (SchedulerType=, Prolog=, ...) as written.
type Setting struct {
	Key   string // as spelt
	Value string
	Pos   Pos
}

// maxGraceTime stands for GraceTime=UNLIMITED (and Slurm's INFINITE, 2^32-1 seconds).
const maxGraceTime = time.Duration(1<<32-1) * time.Second

// SlurmConf is what nodecheck reads from slurm.conf: nodes, partitions, GRES types, and the
// settings of the programs slurmd runs for nodecheck (Hooks).
type SlurmConf struct {
	Path  string   // the file named to LoadSlurmConf or ParseSlurmConf
	Files []string // every file read: Path, then each Include in the order met
	// Nodes lists NodeName= lines in file order, Includes inlined, NodeName=DEFAULT applied.
	Nodes      []NodeLine
	Partitions []PartitionLine
	NodeSets   []string // NodeSet= names, which partitions may use in Nodes=
	GresTypes  []string // GresTypes=, split at commas
	// GresTypesPos is where GresTypes= was set; zero when it is not.
	GresTypesPos Pos
	// GresTypesComment is a commented-out "# GresTypes=" line, remembered when GresTypes is
	// not set so that lint can point at it; zero otherwise.
	GresTypesComment Pos
	// Hooks are the timeouts, health check settings and PrologFlags (hooks.go).
	Hooks Hooks
	// Settings holds every other top-level key by its lower-case name, each with its last
	// value (Slurm keeps the last of a key given twice); see Setting.
	Settings map[string]Setting
	// Problems lists syntax and value errors, in file order. Parsing goes on after each.
	Problems []Problem
}

// Node returns the line that defines node name (matched against NodeName= without expanding
// it), and false when slurm.conf does not define it.
func (c *SlurmConf) Node(name string) (NodeLine, bool) {
	for _, n := range c.Nodes {
		if n.Names.Contains(name) {
			return n, true
		}
	}
	return NodeLine{}, false
}

// NodeByHostname returns the Slurm node name whose NodeHostname (which defaults to its
// NodeName) is host, for a node that does not know its Slurm name (the health check gets
// SLURMD_NODENAME, a shell does not). A fully qualified host is also tried by its short name,
// as slurmd does. A host that several nodes share (NodeHostname=localhost for test_node[0-9])
// names none of them.
func (c *SlurmConf) NodeByHostname(host string) (string, bool) {
	tries := []string{host}
	if i := strings.IndexByte(host, '.'); i > 0 {
		tries = append(tries, host[:i])
	}
	for _, h := range tries {
		for _, n := range c.Nodes {
			if n.Hostnames == "" {
				if n.Names.Contains(h) {
					return h, true
				}
				continue
			}
			hosts, err := ParseHostlist(n.Hostnames)
			if err != nil || !hosts.Contains(h) {
				continue
			}
			if hosts.Len() == 1 && n.Names.Len() > 1 {
				// Several nodes on one host: the host name does not say which one.
				continue
			}
			// NodeHostname pairs with NodeName position by position, as Slurm pairs them.
			idx := -1
			i := 0
			hosts.Each(func(s string) bool {
				if s == h {
					idx = i
					return false
				}
				i++
				return true
			})
			if name, ok := hostlistNth(n.Names, idx); ok {
				return name, true
			}
		}
	}
	return "", false
}

// hostlistNth returns the i-th name of h, in Slurm's order.
func hostlistNth(h *Hostlist, i int) (string, bool) {
	if i < 0 || i >= h.Len() {
		return "", false
	}
	var out string
	j := 0
	h.Each(func(s string) bool {
		if j == i {
			out = s
			return false
		}
		j++
		return true
	})
	return out, true
}

// LoadSlurmConf reads and parses slurm.conf at path through read. The error is only for a
// file that cannot be read (path or an Include); everything wrong inside the files is in
// SlurmConf.Problems.
func LoadSlurmConf(path string, read ReadFileFunc) (*SlurmConf, error) {
	data, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("read slurm.conf: %w", err)
	}
	return ParseSlurmConf(data, path, read)
}

// ParseSlurmConf parses slurm.conf data that was read from file. read serves Include lines
// (nil when the caller knows there are none). The error is only for an Include that cannot be
// read; syntax problems go into SlurmConf.Problems and parsing goes on.
func ParseSlurmConf(data []byte, file string, read ReadFileFunc) (*SlurmConf, error) {
	p := &slurmParser{c: &SlurmConf{Path: file}}
	r := &confReader{read: read, problems: &p.c.Problems, onComment: p.comment}
	if err := r.parse(data, file, p.line); err != nil {
		return nil, err
	}
	p.c.Files = r.files
	if !p.c.GresTypesPos.IsZero() {
		p.c.GresTypesComment = Pos{}
	}
	return p.c, nil
}

// slurmParser turns scanned lines into a SlurmConf.
type slurmParser struct {
	c           *SlurmConf
	nodeDefault NodeLine      // NodeName=DEFAULT values so far
	partDefault PartitionLine // PartitionName=DEFAULT values so far
}

func (p *slurmParser) problem(sev string, pos Pos, nodes, format string, args ...any) {
	p.c.Problems = append(p.c.Problems, Problem{Severity: sev, File: pos.File, Line: pos.Line, Nodes: nodes, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
}

// comment remembers a commented-out GresTypes= so lint can say "line 8 has it commented out".
func (p *slurmParser) comment(pos Pos, text string) {
	t := strings.TrimLeft(text, "# \t")
	if len(t) >= len("grestypes=") && strings.EqualFold(t[:len("grestypes=")], "grestypes=") && p.c.GresTypesComment.IsZero() {
		p.c.GresTypesComment = pos
	}
}

func (p *slurmParser) line(l confLine) {
	first := strings.ToLower(l.Fields[0].Key)
	if first == "switchname" {
		p.problem(SeverityError, l.Pos, "", "SwitchName= lines belong in topology.conf: slurmctld refuses them in slurm.conf (Parsing error at unrecognized key: %s): move the line to topology.conf", l.Fields[0].Key)
		return
	}
	if l.Fields[0].HasEq && !p.checkKey(l.Fields[0], l.Pos) {
		return // a typo of NodeName= or PartitionName= would make every other field a problem
	}
	switch first {
	case "nodename":
		p.nodeLine(l)
		return
	case "partitionname":
		p.partitionLine(l)
		return
	case "nodeset":
		if l.Fields[0].Value != "" {
			p.c.NodeSets = append(p.c.NodeSets, l.Fields[0].Value)
		}
		return
	case "downnodes", "frontendname":
		// Records of their own whose other fields are theirs, not top-level keys.
		return
	}
	for i, f := range l.Fields {
		if !f.HasEq {
			p.problem(SeverityError, l.Pos, "", "%q is not a key=value setting; Slurm refuses the file here (Parsing error at unrecognized key): remove it or comment it out with '#'", l.Text)
			return
		}
		if i > 0 && !p.checkKey(f, l.Pos) {
			continue
		}
		if p.hookField(f, l.Pos) {
			continue
		}
		key := strings.ToLower(f.Key)
		if p.c.Settings == nil {
			p.c.Settings = map[string]Setting{}
		}
		p.c.Settings[key] = Setting{Key: f.Key, Value: f.Value, Pos: l.Pos}
		if key == "grestypes" {
			p.c.GresTypes = confSplitList(f.Value)
			p.c.GresTypesPos = l.Pos
		}
	}
}

// checkKey reports a top-level key no release of Slurm knows (an error), or one a release
// nodecheck supports refuses or ignores (a warning), as slurmconf_keys.go judges it. It
// returns false for an unknown key, which Slurm does not read.
func (p *slurmParser) checkKey(f confField, pos Pos) bool {
	sev, msg := slurmConfKeys().checkKey(f.Key)
	if sev != "" {
		p.problem(sev, pos, "", "%s", msg)
	}
	return sev != SeverityError
}

// nodeKeys maps the lower-case keys of a NodeName line to Slurm's spelling
// (src/common/read_config.c, _parse_nodename).
var nodeKeys = map[string]string{
	"nodename": "NodeName", "nodehostname": "NodeHostname", "nodeaddr": "NodeAddr",
	"bcastaddr": "BcastAddr", "boards": "Boards", "corespeccount": "CoreSpecCount",
	"corespersocket": "CoresPerSocket", "cpubind": "CpuBind", "cpus": "CPUs", "procs": "CPUs",
	"cpuspeclist": "CPUSpecList", "feature": "Features", "features": "Features", "gres": "Gres",
	"memspeclimit": "MemSpecLimit", "port": "Port", "realmemory": "RealMemory", "reason": "Reason",
	"restrictedcorespergpu": "RestrictedCoresPerGPU", "sockets": "Sockets",
	"socketsperboard": "SocketsPerBoard", "state": "State", "threadspercore": "ThreadsPerCore",
	"tmpdisk": "TmpDisk", "tresweights": "TRESWeights", "weight": "Weight",
	"parameters": "Parameters", "topology": "Topology", "extra": "Extra",
}

var nodeKeyList = func() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range nodeKeys {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}()

func (p *slurmParser) nodeLine(l confLine) {
	value := l.Fields[0].Value
	isDefault := strings.EqualFold(value, "DEFAULT")
	var own NodeLine
	own.Set = map[string]Pos{}
	for _, f := range l.Fields[1:] {
		p.nodeField(&own, f, l.Pos, value)
	}
	if isDefault {
		for _, k := range []string{"NodeHostname", "NodeAddr", "BcastAddr"} {
			if _, ok := own.Set[k]; ok {
				p.problem(SeverityError, l.Pos, "", "%s is not allowed with NodeName=DEFAULT (Slurm refuses it): move it to the NodeName line of those nodes", k)
			}
		}
		mergeNodeDefault(&own, p.nodeDefault)
		p.nodeDefault = own
		return
	}
	names, err := ParseHostlist(value)
	if err != nil {
		p.problem(SeverityError, l.Pos, "", "NodeName=%s: %v", value, confHostlistReason(err))
		return
	}
	if names.Len() == 0 {
		p.problem(SeverityError, l.Pos, "", "NodeName= is empty: give the node names, e.g. NodeName=gpu[01-32]")
		return
	}
	own.Pos = l.Pos
	own.Names = names
	mergeNodeDefault(&own, p.nodeDefault)
	p.checkPairing(own, "NodeHostname", own.Hostnames)
	p.checkPairing(own, "NodeAddr", own.Addrs)
	p.c.Nodes = append(p.c.Nodes, own)
}

// checkPairing reports a NodeHostname or NodeAddr list shorter than NodeName: Slurm pairs them
// position by position and refuses the line ("At least as many NodeHostname are required as
// NodeName").
func (p *slurmParser) checkPairing(n NodeLine, key, value string) {
	if value == "" {
		return
	}
	h, err := ParseHostlist(value)
	if err != nil {
		p.problem(SeverityError, n.Pos, n.Names.String(), "%s=%s: %v", key, value, confHostlistReason(err))
		return
	}
	// One address for many nodes is legal: several slurmd on one host, told apart by Port=
	// (Slurm's own tests run that way: NodeName=test_node[0-9] nodeaddr=localhost).
	if h.Len() < n.Names.Len() && h.Len() != 1 {
		p.problem(SeverityError, n.Pos, n.Names.String(), "%s=%s names %d hosts for %d nodes in NodeName=%s; Slurm pairs them one to one and refuses fewer: give one %s per node", key, value, h.Len(), n.Names.Len(), n.Names.String(), key)
	}
}

func (p *slurmParser) nodeField(n *NodeLine, f confField, pos Pos, nodeName string) {
	nodes := ""
	if !strings.EqualFold(nodeName, "DEFAULT") {
		nodes = nodeName
	}
	if !f.HasEq {
		p.problem(SeverityError, pos, nodes, "%q on a NodeName line is not key=value: Slurm refuses the line; remove it or write it as Key=value", f.Key)
		return
	}
	key, ok := nodeKeys[strings.ToLower(f.Key)]
	if !ok {
		if s := confSuggest(f.Key, nodeKeyList); s != "" {
			p.problem(SeverityError, pos, nodes, "unknown key %s= on a NodeName line (did you mean %s=?): Slurm refuses the line", f.Key, s)
		} else {
			p.problem(SeverityWarning, pos, nodes, "unknown key %s= on a NodeName line: Slurm versions that do not know it refuse the line; nodecheck ignores it", f.Key)
		}
		return
	}
	intVal := func(dst *int) {
		v, err := strconv.ParseUint(f.Value, 10, 16)
		if err != nil {
			p.problem(SeverityError, pos, nodes, "%s=%s is not a whole number from 0 to 65535", f.Key, f.Value)
			return
		}
		*dst = int(v)
		n.Set[key] = pos
	}
	switch key {
	case "NodeHostname":
		n.Hostnames = f.Value
	case "NodeAddr":
		n.Addrs = f.Value
	case "CPUs":
		intVal(&n.CPUs)
		return
	case "Boards":
		intVal(&n.Boards)
		return
	case "SocketsPerBoard":
		intVal(&n.SocketsPerBoard)
		return
	case "Sockets":
		intVal(&n.Sockets)
		return
	case "CoresPerSocket":
		intVal(&n.CoresPerSocket)
		return
	case "ThreadsPerCore":
		intVal(&n.ThreadsPerCore)
		return
	case "RealMemory":
		v, err := strconv.ParseUint(f.Value, 10, 64)
		if err != nil {
			p.problem(SeverityError, pos, nodes, "RealMemory=%s is not a whole number of MiB", f.Value)
			return
		}
		n.RealMemory = v
	case "TmpDisk":
		v, err := strconv.ParseUint(f.Value, 10, 32)
		if err != nil {
			p.problem(SeverityError, pos, nodes, "TmpDisk=%s is not a whole number of MB from 0 to 4294967295", f.Value)
			return
		}
		n.TmpDisk = v
	case "State":
		n.State = f.Value
	case "Gres":
		g, err := ParseGresSpec(f.Value)
		if err != nil {
			p.problem(SeverityError, pos, nodes, "%v", err)
			return
		}
		n.Gres = g
	case "Features":
		n.Features = confSplitList(f.Value)
	}
	n.Set[key] = pos
}

// mergeNodeDefault fills the keys own does not set from the NodeName=DEFAULT values in d.
func mergeNodeDefault(own *NodeLine, d NodeLine) {
	for key, pos := range d.Set {
		if _, ok := own.Set[key]; ok {
			continue
		}
		own.Set[key] = pos
		switch key {
		case "CPUs":
			own.CPUs = d.CPUs
		case "Boards":
			own.Boards = d.Boards
		case "SocketsPerBoard":
			own.SocketsPerBoard = d.SocketsPerBoard
		case "Sockets":
			own.Sockets = d.Sockets
		case "CoresPerSocket":
			own.CoresPerSocket = d.CoresPerSocket
		case "ThreadsPerCore":
			own.ThreadsPerCore = d.ThreadsPerCore
		case "RealMemory":
			own.RealMemory = d.RealMemory
		case "TmpDisk":
			own.TmpDisk = d.TmpDisk
		case "State":
			own.State = d.State
		case "Gres":
			own.Gres = d.Gres
		case "Features":
			own.Features = d.Features
		}
	}
}

func (p *slurmParser) partitionLine(l confLine) {
	name := l.Fields[0].Value
	isDefault := strings.EqualFold(name, "DEFAULT")
	part := PartitionLine{Pos: l.Pos, Name: name, Set: map[string]Pos{}}
	for _, f := range l.Fields[1:] {
		switch strings.ToLower(f.Key) {
		case "nodes":
			part.Nodes = f.Value
			part.AllNodes = strings.EqualFold(f.Value, "ALL")
			part.Set["Nodes"] = l.Pos
		case "default":
			part.Default = strings.EqualFold(f.Value, "YES")
		case "preemptmode":
			part.PreemptMode = f.Value
			part.Set["PreemptMode"] = l.Pos
		case "oversubscribe", "shared":
			part.OverSubscribe = f.Value
			part.Set["OverSubscribe"] = l.Pos
		case "prioritytier", "priority":
			n, err := strconv.ParseUint(f.Value, 10, 16)
			if err != nil {
				p.problem(SeverityError, l.Pos, "", "PartitionName=%s %s=%s is not a whole number from 0 to 65535: Slurm refuses the file", name, f.Key, f.Value)
				continue
			}
			key := "PriorityTier"
			if strings.EqualFold(f.Key, "priority") {
				key = "Priority"
			}
			part.Set[key] = l.Pos
			if key == "Priority" {
				part.Priority = int(n)
			} else {
				part.PriorityTier = int(n)
			}
		case "maxtime", "defaulttime":
			key := map[string]string{"maxtime": "MaxTime", "defaulttime": "DefaultTime"}[strings.ToLower(f.Key)]
			d, ok := ParseSlurmTime(f.Value)
			if !ok {
				p.problem(SeverityError, l.Pos, "", "PartitionName=%s %s=%s is not a time limit (minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]], or UNLIMITED): Slurm refuses the file (Bad value \"%s\" for %s)", name, f.Key, f.Value, f.Value, key)
				continue
			}
			if key == "MaxTime" {
				part.MaxTime = d
			} else {
				part.DefaultTime = d
			}
			part.Set[key] = l.Pos
		case "gracetime":
			d, ok := parseGraceTime(f.Value)
			if !ok {
				p.problem(SeverityError, l.Pos, "", "PartitionName=%s GraceTime=%s is not a whole number of seconds (or UNLIMITED): Slurm refuses the file", name, f.Value)
				continue
			}
			part.GraceTime = d
			part.Set["GraceTime"] = l.Pos
		}
	}
	if isDefault {
		mergePartitionDefault(&part, p.partDefault)
		p.partDefault = part
		return
	}
	mergePartitionDefault(&part, p.partDefault)
	switch {
	case part.Set["Priority"] != Pos{}:
		part.PriorityTier = part.Priority
	case part.Set["PriorityTier"] == Pos{}:
		part.PriorityTier = 1
	}
	if name == "" {
		p.problem(SeverityError, l.Pos, "", "PartitionName= is empty: name the partition")
		return
	}
	p.c.Partitions = append(p.c.Partitions, part)
}

// mergePartitionDefault fills the keys own does not set from the PartitionName=DEFAULT
// values in d.
func mergePartitionDefault(own *PartitionLine, d PartitionLine) {
	for key, pos := range d.Set {
		if _, ok := own.Set[key]; ok {
			continue
		}
		own.Set[key] = pos
		switch key {
		case "Nodes":
			own.Nodes, own.AllNodes = d.Nodes, d.AllNodes
		case "PreemptMode":
			own.PreemptMode = d.PreemptMode
		case "OverSubscribe":
			own.OverSubscribe = d.OverSubscribe
		case "GraceTime":
			own.GraceTime = d.GraceTime
		case "PriorityTier":
			own.PriorityTier = d.PriorityTier
		case "Priority":
			own.Priority = d.Priority
		case "MaxTime":
			own.MaxTime = d.MaxTime
		case "DefaultTime":
			own.DefaultTime = d.DefaultTime
		}
	}
}

// parseGraceTime reads GraceTime= as Slurm's uint32 handler does: seconds, or UNLIMITED or
// INFINITE for no end.
func parseGraceTime(v string) (time.Duration, bool) {
	if strings.EqualFold(v, "UNLIMITED") || strings.EqualFold(v, "INFINITE") {
		return maxGraceTime, true
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// Setting returns the top-level key (any case) as last written, and whether it was.
func (c *SlurmConf) Setting(key string) (Setting, bool) {
	s, ok := c.Settings[strings.ToLower(key)]
	return s, ok
}
