package slurm

// ibnetdiscover output: the InfiniBand fabric as infiniband-diags' ibnetdiscover prints it,
// in its two shapes (rdma-core infiniband-diags/ibnetdiscover.c):
//
// The topology file (the default; -g adds Chassis headings; -f adds " s=.. w=.. v=.."):
//
//	vendid=0x8f1
//	switchguid=0x8f10500200b50(8f10500200b50)
//	Switch	36 "S-0008f10500200b50"		# "Voltaire 4036 - 36 QDR ports switch" enhanced port 0 lid 9 lmc 0
//	[4]	"H-003048c749cd0000"[1](3048c749cd0001) 		# "MT25408 ConnectX Mellanox Technologies" lid 72 4xDDR
//	[16]	"S-0008f10500108098"[8]		# "Voltaire 4036 - 36 QDR ports switch" lid 20 4xQDR
//
//	caguid=0x2c902002789ac
//	Ca	2 "H-0002c902002789ac"		# "compute-00-01 HCA-1"
//	[1](2c902002789ad) 	"S-000b8cffff0053ee"[1]		# lid 1 lmc 0 "MT43132 Mellanox Technologies" lid 3 4xSDR
//
// Nodes are "S-", "H-" (channel adapter) or "R-" (router) and 16 hex digits of node GUID;
// port lines name the local port, the remote node and port, and, for a CA or router port,
// the port GUID in parentheses. A node description may contain '#' and '"'.
//
// The ports report (-p), one line per port, the GUID being the port's:
//
//	CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
//	SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'
//
// A ports report prints no node GUID for channel adapters: each CA port there is a node of
// its own, keyed by its port GUID.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
)

// maxFabricBytes bounds what ParseIBNetDiscover reads. A 10,000-node fabric with 8 adapters a
// node prints about 40 MiB; the bound stops a wrong file from filling memory.
const maxFabricBytes = 1 << 30

// maxFabricLine bounds one line: ibnetdiscover's longest is about 300 bytes.
const maxFabricLine = 64 << 10

// maxFabricPort is the largest port number taken: InfiniBand port numbers are 8 bits.
const maxFabricPort = 255

// maxFabricStray bounds the problems reported for lines that are not ibnetdiscover output;
// past it one more problem says how many were skipped.
const maxFabricStray = 20

// Fabric formats: which ibnetdiscover output was read.
const (
	FabricFormatTopology = "topology" // ibnetdiscover (the topology file)
	FabricFormatPorts    = "ports"    // ibnetdiscover -p (the ports report)
)

// FabricNodeType is a node's kind: switch, channel adapter or router.
type FabricNodeType uint8

// Fabric node types.
const (
	FabricSwitch FabricNodeType = iota + 1
	FabricCA
	FabricRouter
)

func (t FabricNodeType) String() string {
	switch t {
	case FabricSwitch:
		return "switch"
	case FabricCA:
		return "channel adapter"
	case FabricRouter:
		return "router"
	}
	return "unknown"
}

// Fabric is a parsed ibnetdiscover output: its nodes and the links between their ports.
type Fabric struct {
	Path   string // the name given to ParseIBNetDiscover ("-" for standard input)
	Format string // FabricFormatTopology or FabricFormatPorts; "" when nothing was recognised
	Nodes  []FabricNode
	Links  []FabricLink // each link once, whichever end printed it first
	// Problems lists lines that are not ibnetdiscover output and contradictions, in file
	// order; parsing goes on after each.
	Problems []Problem

	index [4]map[uint64]int32 // by FabricNodeType, node GUID -> index in Nodes
	// linkOf[node][port] is the index in Links of the link at that port, -1 for none. An
	// array per node, not a map: a capture has a link in every 200 bytes.
	linkOf [][]int32
}

// portLink returns the index in Links of the link at port of node, or -1.
func (f *Fabric) portLink(node int32, port int) int32 {
	if ps := f.linkOf[node]; port < len(ps) {
		return ps[port]
	}
	return -1
}

func (f *Fabric) setPortLink(node int32, port int, link int32) {
	ps := f.linkOf[node]
	if port >= len(ps) {
		grown := make([]int32, max(port+1, 2*len(ps)))
		copy(grown, ps)
		for i := len(ps); i < len(grown); i++ {
			grown[i] = -1
		}
		ps = grown
		f.linkOf[node] = ps
	}
	ps[port] = link
}

// FabricNode is one switch, channel adapter or router.
type FabricNode struct {
	Type FabricNodeType
	// GUID is the node GUID ("S-<guid>", "H-<guid>"); in a ports report, which prints no
	// node GUID for a CA, the GUID of the port it was seen by.
	GUID uint64
	Desc string // node description, as printed (ibnetdiscover's --node-name-map may have replaced it)
	// Ports is the node's port count as its header says; 0 when not printed.
	Ports int
	LID   int // a switch's LID (port 0); a CA's first printed port LID; 0 when not printed
	Line  int // the first line that names the node
}

// Name returns the node as ibnetdiscover names it: "S-0008f10500200b50", "H-...", "R-...".
func (n FabricNode) Name() string {
	const hexDigits = "0123456789abcdef"
	var b [18]byte
	b[0], b[1] = "?SHR"[n.Type&3], '-'
	for i := 17; i >= 2; i-- {
		b[i] = hexDigits[n.GUID>>(4*(17-i))&0xf]
	}
	return string(b[:])
}

// FabricLink is a cable between two ports.
type FabricLink struct {
	A, B FabricPort
	// Rate is the width and speed as Line prints them ("4xQDR", "4x EDR"; "" when not
	// printed): each end prints its own port's, and a degraded link's ends can differ.
	Rate string
	Line int // the first line that shows the link
}

// FabricPort is one end of a link.
type FabricPort struct {
	Node int32  // index in Fabric.Nodes
	Port int    // port number
	GUID uint64 // port GUID when printed (CA and router ports), else 0
}

// Remote returns the port at the other end of port p of node n, and false when the output
// shows that port unconnected or not at all.
func (f *Fabric) Remote(n int32, p int) (FabricPort, bool) {
	if n < 0 || int(n) >= len(f.linkOf) || p < 0 {
		return FabricPort{}, false
	}
	i := f.portLink(n, p)
	if i < 0 {
		return FabricPort{}, false
	}
	l := f.Links[i]
	if l.A.Node == n && l.A.Port == p {
		return l.B, true
	}
	return l.A, true
}

// ParseIBNetDiscover parses ibnetdiscover output, either shape, read from r, which came from
// file (used in positions; "-" for standard input). It reads line by line and keeps only the
// model. The error is for input that cannot be read, is larger than 1 GiB, has a line longer
// than 64 KiB, or in which nothing is ibnetdiscover output; lines it does not know are in
// Fabric.Problems.
func ParseIBNetDiscover(r io.Reader, file string) (*Fabric, error) {
	// Size the tables for the capture when its size is known: growing them is a good part
	// of the cost. A topology file has a link in about every 200 bytes.
	est := min(sizeHint(r)/200, 1<<22)
	f := &Fabric{Path: file, Links: make([]FabricLink, 0, est), Nodes: make([]FabricNode, 0, est/2), linkOf: make([][]int32, 0, est/2)}
	for t := range f.index {
		f.index[t] = map[uint64]int32{}
	}
	f.index[FabricCA] = make(map[uint64]int32, est/2)
	p := &fabricParser{f: f, cur: -1}
	lr := &io.LimitedReader{R: r, N: maxFabricBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxFabricLine)
	for sc.Scan() {
		p.lineNo++
		p.line(trimBlanksRight(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: a line longer than %d bytes: not ibnetdiscover output", file, p.lineNo+1, maxFabricLine)
		}
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("read %s: more than %d bytes: not ibnetdiscover output", file, maxFabricBytes)
	}
	if p.stray > maxFabricStray {
		p.problem(SeverityWarning, "%d more lines that are not ibnetdiscover output were skipped (the first at line %d)", p.stray-maxFabricStray, p.firstStray)
	}
	if len(f.Nodes) == 0 {
		if p.stray > 0 {
			return nil, fmt.Errorf("%s: no switch or channel adapter found (%d lines not ibnetdiscover output, the first at line %d): give the output of ibnetdiscover or ibnetdiscover -p", file, p.stray, p.firstStray)
		}
		return nil, fmt.Errorf("%s: no switch or channel adapter found: the capture is empty; run ibnetdiscover on a node of the fabric", file)
	}
	return f, nil
}

// sizeHint returns how many bytes r holds, when it can say, else 0.
func sizeHint(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return 0
}

type fabricParser struct {
	f          *Fabric
	lineNo     int
	cur        int32 // node whose port lines follow (topology format), or -1
	stray      int   // lines that are not ibnetdiscover output
	firstStray int
}

func (p *fabricParser) pos() Pos { return Pos{File: p.f.Path, Line: p.lineNo} }

func (p *fabricParser) problem(sev, format string, args ...any) {
	pos := p.pos()
	p.f.Problems = append(p.f.Problems, Problem{Severity: sev, File: pos.File, Line: pos.Line, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
}

// strayLine reports a line that is not ibnetdiscover output: usually an error message from
// its stderr captured with 2>&1.
func (p *fabricParser) strayLine(b []byte, why string) {
	p.stray++
	if p.stray == 1 {
		p.firstStray = p.lineNo
	}
	if p.stray <= maxFabricStray {
		p.problem(SeverityWarning, "skipped, not ibnetdiscover output (%s): %q; capture ibnetdiscover's standard output alone", why, shorten(string(b)))
	}
}

func (p *fabricParser) line(b []byte) {
	if len(b) == 0 {
		p.cur = -1 // a blank line ends a node's port lines
		return
	}
	if b[0] == '[' && p.f.Format == FabricFormatTopology {
		p.topologyLine(b) // most lines: a port line
		return
	}
	if p.f.Format == "" && !isFabricComment(b) {
		if isPortsReportLine(b) {
			p.f.Format = FabricFormatPorts
		} else if isTopologyLine(b) {
			p.f.Format = FabricFormatTopology
		}
	}
	switch {
	case isFabricComment(b):
		return
	case p.f.Format == FabricFormatPorts:
		p.portsLine(b)
	case p.f.Format == FabricFormatTopology:
		p.topologyLine(b)
	default:
		p.strayLine(b, "before any switch or adapter")
	}
}

// isFabricComment: the header ("# Topology file: ...") and -g's "# Spine Nodes" headings.
func isFabricComment(b []byte) bool {
	t := trimBlanksLeft(b)
	return len(t) > 0 && t[0] == '#'
}

// trimBlanksRight and trimBlanksLeft cut blanks, tabs and CRs (the cutset functions of
// package bytes build a set on every call, which shows at a line every 200 bytes).
func trimBlanksRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func trimBlanksLeft(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func isPortsReportLine(b []byte) bool {
	fs := bytes.Fields(b)
	if len(fs) < 6 {
		return false
	}
	t := string(fs[0])
	_, err := strconv.Atoi(string(fs[1]))
	return (t == "SW" || t == "CA" || t == "RT") && err == nil && bytes.HasPrefix(fs[3], []byte("0x"))
}

func isTopologyLine(b []byte) bool {
	for _, p := range []string{"vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=", "Switch\t", "Switch ", "Ca\t", "Ca ", "Rt\t", "Rt ", "Non-Chassis Nodes", "Chassis "} {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

func (p *fabricParser) topologyLine(b []byte) {
	switch {
	case b[0] == '[':
		if p.cur < 0 {
			p.strayLine(b, "a port line outside a node")
			return
		}
		if err := p.portLine(b); err != "" {
			p.strayLine(b, err)
		}
	case bytes.HasPrefix(b, []byte("Switch")), bytes.HasPrefix(b, []byte("Ca")), bytes.HasPrefix(b, []byte("Rt")):
		if err := p.nodeHeader(b); err != "" {
			p.strayLine(b, err)
		}
	case bytes.IndexByte(b, '=') > 0 && isFabricAttr(b):
		// vendid=, devid=, sysimgguid=, switchguid=, caguid=, rtguid=: the node's header
		// repeats the GUID that matters.
	case bytes.HasPrefix(b, []byte("Chassis ")), bytes.Equal(b, []byte("Non-Chassis Nodes")), bytes.HasPrefix(b, []byte("Hostname: ")):
		// -g grouping headings.
	default:
		p.strayLine(b, "unknown line")
	}
}

func isFabricAttr(b []byte) bool {
	k := b[:bytes.IndexByte(b, '=')]
	for _, c := range k {
		if !(c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// nodeHeader parses `Switch	36 "S-<guid>"		# "desc" enhanced port 0 lid 9 lmc 0` and
// `Ca	2 "H-<guid>"		# "desc"`.
func (p *fabricParser) nodeHeader(b []byte) string {
	s := fabricScanner{b: b}
	kind := s.word()
	var want FabricNodeType
	switch kind {
	case "Switch":
		want = FabricSwitch
	case "Ca":
		want = FabricCA
	case "Rt":
		want = FabricRouter
	default:
		return "unknown node kind " + strconv.Quote(kind)
	}
	nports, ok := s.int()
	if !ok {
		return "no port count after " + kind
	}
	t, guid, ok := s.quotedName()
	if !ok || t != want {
		return "no " + kind + " name \"" + map[FabricNodeType]string{FabricSwitch: "S", FabricCA: "H", FabricRouter: "R"}[want] + "-<guid>\""
	}
	s.blanks()
	if !s.lit("#") {
		return "no '#' before the description"
	}
	rest := s.rest()
	desc, tail := fabricDesc(rest, want == FabricSwitch)
	n := p.node(t, guid, desc)
	node := &p.f.Nodes[n]
	node.Ports = nports
	if want == FabricSwitch {
		if i := bytes.Index(tail, []byte(" lid ")); i >= 0 {
			ts := fabricScanner{b: tail[i+len(" lid "):]}
			if lid, ok := ts.int(); ok {
				node.LID = lid
			}
		}
	}
	p.cur = n
	return ""
}

// fabricDesc takes a node description out of the text after '#': `"desc" ...`. A switch
// header continues with ` enhanced port 0 ...` or ` base port 0 ...`; anything else ends at
// the last quote. Descriptions may contain quotes and '#'.
func fabricDesc(rest []byte, sw bool) (desc, tail []byte) {
	rest = trimBlanksLeft(rest)
	if len(rest) == 0 || rest[0] != '"' {
		return nil, rest
	}
	body := rest[1:]
	end := -1
	if sw {
		for _, m := range []string{`" enhanced port `, `" base port `} {
			if i := bytes.LastIndex(body, []byte(m)); i > end {
				end = i
			}
		}
	}
	if end < 0 {
		end = bytes.LastIndexByte(body, '"')
	}
	if end < 0 {
		return body, nil
	}
	return body[:end], body[end+1:]
}

// portLine parses a port line of the current node:
//
//	[4]	"H-003048c749cd0000"[1](3048c749cd0001) 		# "desc" lid 72 4xDDR
//	[1](2c902002789ad) 	"S-000b8cffff0053ee"[1]		# lid 1 lmc 0 "desc" lid 3 4xSDR
//	[1][ext 5]	"S-..."[3][ext 7]		# ...            (-g external port numbers)
func (p *fabricParser) portLine(b []byte) string {
	s := fabricScanner{b: b}
	port, ok := s.bracketInt()
	if !ok {
		return "no [port]"
	}
	s.ext()
	local := FabricPort{Node: p.cur, Port: port}
	if g, ok := s.parenGUID(); ok {
		local.GUID = g
	}
	s.blanks()
	t, guid, ok := s.quotedName()
	if !ok {
		return "no remote \"S-<guid>\" or \"H-<guid>\""
	}
	rport, ok := s.bracketInt()
	if !ok {
		return "no remote [port]"
	}
	s.ext()
	s.blanks()
	remote := FabricPort{Port: rport}
	if g, ok := s.parenGUID(); ok {
		remote.GUID = g
	}
	s.blanks()
	if !s.lit("#") {
		return "no '#' before the remote description"
	}
	rest := s.rest()
	// A CA or router port line has "lid N lmc M" of its own port before the remote's
	// description.
	if i := bytes.IndexByte(rest, '"'); i > 0 {
		ls := fabricScanner{b: rest[:i]}
		ls.blanks()
		if ls.lit("lid ") {
			if lid, ok := ls.int(); ok && p.f.Nodes[p.cur].LID == 0 {
				p.f.Nodes[p.cur].LID = lid
			}
		}
		rest = rest[i:]
	}
	// Every link is printed from both ends: the second time, only port GUIDs can be new.
	if li := p.f.portLink(p.cur, port); li >= 0 {
		l := &p.f.Links[li]
		other := l.B
		if l.B.Node == p.cur && l.B.Port == port {
			other = l.A
		}
		if on := p.f.Nodes[other.Node]; on.GUID == guid && on.Type == t && other.Port == rport {
			remote.Node = other.Node
			fillPortGUID(l, local)
			fillPortGUID(l, remote)
			return ""
		}
	}
	desc, tail := fabricPortDesc(rest)
	remote.Node = p.node(t, guid, desc)
	if rn := &p.f.Nodes[remote.Node]; rn.LID == 0 && rn.Type == FabricSwitch {
		ts := fabricScanner{b: tail}
		ts.blanks()
		if ts.lit("lid ") {
			if lid, ok := ts.int(); ok {
				rn.LID = lid
			}
		}
	}
	p.link(local, remote, fabricRate(tail))
	return ""
}

// fabricPortDesc takes the remote description out of `"desc" lid 3 4xSDR ...`: up to the
// last `" lid `.
func fabricPortDesc(rest []byte) (desc, tail []byte) {
	if len(rest) == 0 || rest[0] != '"' {
		return nil, rest
	}
	body := rest[1:]
	if i := bytes.LastIndex(body, []byte(`" lid `)); i >= 0 {
		return body[:i], body[i+1:]
	}
	if i := bytes.LastIndexByte(body, '"'); i >= 0 {
		return body[:i], body[i+1:]
	}
	return body, nil
}

// fabricRate finds the width and speed ("4xQDR") after " lid N".
func fabricRate(tail []byte) []byte {
	s := fabricScanner{b: tail}
	s.blanks()
	if !s.lit("lid ") {
		return nil
	}
	s.int()
	s.blanks()
	j := s.i
	for j < len(s.b) && s.b[j] != ' ' && s.b[j] != '\t' {
		j++
	}
	return s.b[s.i:j]
}

// portsLine parses one line of a ports report.
func (p *fabricParser) portsLine(b []byte) {
	s := fabricScanner{b: b}
	local, ok := p.portsEnd(&s)
	if !ok {
		p.strayLine(b, "not a ports report line")
		return
	}
	s.blanks()
	start := s.i
	s.word()
	s.word()
	rate := s.b[start:s.i]
	s.blanks()
	if s.lit("'") {
		// An unconnected port: `SW 2052 37 0x... 4x ???      'name'`.
		p.f.Nodes[local.n].setDesc(bytes.TrimSuffix(s.rest(), []byte("'")))
		return
	}
	if !s.lit("-") {
		p.strayLine(b, "neither a remote port nor a name after the rate")
		return
	}
	remote, ok := p.portsEnd(&s)
	if !ok {
		p.strayLine(b, "no remote port after '-'")
		return
	}
	s.blanks()
	if !s.lit("( '") {
		p.strayLine(b, "no ( 'name' - 'name' ) at the end")
		return
	}
	names := bytes.TrimSuffix(s.rest(), []byte("' )"))
	a, bName, found := bytes.Cut(names, []byte("' - '"))
	if !found {
		p.strayLine(b, "no ( 'name' - 'name' ) at the end")
		return
	}
	p.f.Nodes[local.n].setDesc(a)
	p.f.Nodes[remote.n].setDesc(bName)
	p.link(local.port, remote.port, rate)
}

type portsEnd struct {
	n    int32
	port FabricPort
}

// portsEnd parses `CA   134  1 0x7cfe9003003b4bde` and finds or makes its node.
func (p *fabricParser) portsEnd(s *fabricScanner) (portsEnd, bool) {
	var t FabricNodeType
	switch s.word() {
	case "SW":
		t = FabricSwitch
	case "CA":
		t = FabricCA
	case "RT":
		t = FabricRouter
	default:
		return portsEnd{}, false
	}
	lid, ok1 := s.int()
	port, ok2 := s.int()
	ok2 = ok2 && port <= maxFabricPort
	s.blanks()
	guid, ok3 := s.hex(true)
	if !ok1 || !ok2 || !ok3 {
		return portsEnd{}, false
	}
	n := p.node(t, guid, nil)
	if p.f.Nodes[n].LID == 0 {
		p.f.Nodes[n].LID = lid
	}
	fp := FabricPort{Node: n, Port: port}
	if t != FabricSwitch {
		fp.GUID = guid
	}
	return portsEnd{n: n, port: fp}, true
}

// setDesc sets a ports report's name, which ibnetdiscover pads with blanks, as the node's
// description, unless it has one.
func (n *FabricNode) setDesc(d []byte) {
	if n.Desc == "" {
		n.Desc = string(bytes.TrimSpace(d))
	}
}

// node finds or adds the node of type t and guid.
func (p *fabricParser) node(t FabricNodeType, guid uint64, desc []byte) int32 {
	if i, ok := p.f.index[t][guid]; ok {
		if p.f.Nodes[i].Desc == "" && len(desc) > 0 {
			p.f.Nodes[i].Desc = string(desc)
		}
		return i
	}
	i := int32(len(p.f.Nodes))
	p.f.Nodes = append(p.f.Nodes, FabricNode{Type: t, GUID: guid, Desc: string(desc), Line: p.lineNo})
	p.f.linkOf = append(p.f.linkOf, nil)
	p.f.index[t][guid] = i
	return i
}

// link records a cable between a and b once, whichever end shows it first; a port shown
// cabled to two different places is reported.
func (p *fabricParser) link(a, b FabricPort, rate []byte) {
	if i := p.f.portLink(a.Node, a.Port); i >= 0 {
		l := &p.f.Links[i]
		other := l.B
		if l.B.Node == a.Node && l.B.Port == a.Port {
			other = l.A
		}
		if other.Node != b.Node || other.Port != b.Port {
			p.problem(SeverityWarning, "port %d of %s is shown cabled to %s port %d here, but to %s port %d at line %d: the capture contradicts itself; capture again",
				a.Port, p.f.Nodes[a.Node].Name(), p.f.Nodes[b.Node].Name(), b.Port, p.f.Nodes[other.Node].Name(), other.Port, l.Line)
			return
		}
		fillPortGUID(l, a)
		fillPortGUID(l, b)
		return
	}
	if i := p.f.portLink(b.Node, b.Port); i >= 0 {
		l := p.f.Links[i]
		p.problem(SeverityWarning, "port %d of %s is shown cabled to %s port %d here, but to another port at line %d: the capture contradicts itself; capture again",
			b.Port, p.f.Nodes[b.Node].Name(), p.f.Nodes[a.Node].Name(), a.Port, l.Line)
		return
	}
	i := int32(len(p.f.Links))
	p.f.Links = append(p.f.Links, FabricLink{A: a, B: b, Rate: string(rate), Line: p.lineNo})
	p.f.setPortLink(a.Node, a.Port, i)
	p.f.setPortLink(b.Node, b.Port, i)
}

func fillPortGUID(l *FabricLink, e FabricPort) {
	if e.GUID == 0 {
		return
	}
	if l.A.Node == e.Node && l.A.Port == e.Port && l.A.GUID == 0 {
		l.A.GUID = e.GUID
	}
	if l.B.Node == e.Node && l.B.Port == e.Port && l.B.GUID == 0 {
		l.B.GUID = e.GUID
	}
}
