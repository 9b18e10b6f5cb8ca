package slurm

// topology.conf: where Slurm's topology/tree plugin reads the switch hierarchy (SwitchName=
// lines) and its topology/block plugin reads blocks of nodes (BlockName= and BlockSizes=).
//
// The syntax is slurm.conf's (src/common/parse_config.c), read by the same scanner
// (confscan.go): keys in any case, blanks allowed around '=', '#' to the end of a line is a
// comment, a '\' at the end of a line continues it, `Include FILE` reads another file in place.
//
// What the keys mean follows src/plugins/topology/tree/switch_record.c (_parse_switches,
// switch_record_validate) and src/plugins/topology/block/block_record.c (_parse_block,
// _read_topo_file, block_record_validate):
//
//	SwitchName=NAME [Nodes=HOSTLIST | Switches=HOSTLIST] [LinkSpeed=N]
//	BlockName=NAME Nodes=HOSTLIST
//	BlockSizes=N[,N...]
//
// A switch with Nodes= is a leaf; one with Switches= sits above the switches it names; one
// with neither is refused. Slurm refuses a switch with both or neither, a name longer than 64
// bytes, a name defined twice, a child that is not defined, and a block without Nodes=.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// maxTopologyConfBytes bounds what ParseTopologyConf reads: far beyond any cluster's file (a
// 100,000-node tree in hostlists is a few hundred KiB), it stops a wrong file from filling
// memory.
const maxTopologyConfBytes = 64 << 20

// maxTopologyNames bounds the names that the Nodes= and Switches= hostlists of one
// topology.conf stand for together, Includes counted, as maxLintNodes bounds slurm.conf's
// nodes: lint indexes every name, and a typo such as Nodes=node[0-16000000] (or 64 such
// lines) took minutes and gigabytes. A million names is ten times the largest cluster's
// node count, and lint of a file at the bound takes about a second and 170 MB
// (BenchmarkLintTopologyNamesBound; as a process 1.1 s and 165 MB peak RSS on the 2-core
// build machine), where 64 lines of node[0-16000000] ran past 90 s and 4 GB. Past it the parser reads no more names
// (TopologyConf.NamesCut) and LintTopology checks nothing that needs them.
const maxTopologyNames = 1 << 20

// maxSwitchNameLen is HOST_NAME_MAX, the longest SwitchName _parse_switches accepts.
const maxSwitchNameLen = 64

// maxBlockLevels is how many BlockSizes levels the block plugin has (MAX_BLOCK_LEVELS, 16:
// a level is log2 of a size over the base size and must be at most 15).
const maxBlockLevels = 16

// TopologyConf is a parsed topology.conf, tree form (Switches), block form (Blocks and
// BlockSizes), or, wrongly, both: Problems then says so.
type TopologyConf struct {
	Path  string   // the file named to ParseTopologyConf
	Files []string // every file read: Path, then each Include in the order met

	Switches []TopoSwitch // SwitchName= lines, in file order
	Blocks   []TopoBlock  // BlockName= lines, in file order
	// BlockSizes is BlockSizes=, the block sizes in nodes; nil when not given (Slurm then
	// uses the first block's node count and its doublings up to 16 times it).
	BlockSizes    []int
	BlockSizesPos Pos

	// NamesCut is where the Nodes= and Switches= lists passed maxTopologyNames names;
	// zero when they did not. From there on every list stands for no names.
	NamesCut Pos
	// Names is how many names the Nodes= and Switches= lists stand for together, up to the
	// cut.
	Names int

	// Problems lists syntax and value errors, in file order. Parsing goes on after each.
	Problems []Problem
}

// TopoSwitch is one SwitchName= line.
type TopoSwitch struct {
	Pos  Pos
	Name string // SwitchName
	// Nodes is Nodes=, the nodes directly under this switch; nil when not given.
	Nodes *Hostlist
	// Switches is Switches=, the switches directly under this one; nil when not given.
	Switches  *Hostlist
	LinkSpeed uint32 // LinkSpeed; 0 when not given (Slurm then takes 1)
}

// IsLeaf reports whether Slurm takes the switch for a leaf: it has Nodes= (a line with
// neither Nodes= nor Switches= is refused; lint says so).
func (s TopoSwitch) IsLeaf() bool { return s.Switches == nil }

// TopoBlock is one BlockName= line.
type TopoBlock struct {
	Pos   Pos
	Name  string    // BlockName
	Nodes *Hostlist // Nodes; nil when not given (an error Slurm refuses)
}

// Form says which topology plugin the file is written for: "tree", "block", or "" when it
// has neither SwitchName= nor BlockName= lines.
func (t *TopologyConf) Form() string {
	switch {
	case len(t.Switches) > 0:
		return "tree"
	case len(t.Blocks) > 0:
		return "block"
	}
	return ""
}

// ErrTopologyYAML is the error ParseTopologyConf returns for a topology.yaml: Slurm 25.05 and
// later read topologies from YAML (topology.yaml(5)), which nodecheck does not read yet.
var ErrTopologyYAML = errors.New("topology.yaml (Slurm 25.05 and later, topology.yaml(5)) is not read yet: nodecheck lint reads topology.conf's SwitchName=, BlockName= and BlockSizes= lines only")

// looksYAML reports whether a topology file is YAML rather than topology.conf: its name ends
// in .yaml or .yml, or its first line that is not blank or a comment is a YAML document start
// ("---"), a list item ("- topology: t1") or a mapping key ("topology: t1"), where every
// topology.conf line starts with Key=.
func looksYAML(file string, data []byte) bool {
	ext := strings.ToLower(filepath.Ext(file))
	if ext == ".yaml" || ext == ".yml" {
		return true
	}
	for _, line := range strings.SplitN(string(data[:min(len(data), 4096)]), "\n", 64) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line == "---" || line[0] == '-' {
			return true
		}
		colon, eq := strings.IndexByte(line, ':'), strings.IndexByte(line, '=')
		return colon > 0 && (eq < 0 || colon < eq)
	}
	return false
}

// ParseTopologyConf parses topology.conf read from r, which was opened from file (used for
// positions and to resolve relative Includes). read serves Include lines; nil refuses them.
// The error is for input that cannot be read, is larger than 64 MiB, or an Include that
// cannot be read, or ErrTopologyYAML for a topology.yaml; everything wrong inside the files
// is in TopologyConf.Problems.
func ParseTopologyConf(r io.Reader, file string, read ReadFileFunc) (*TopologyConf, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTopologyConfBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxTopologyConfBytes {
		return nil, fmt.Errorf("read %s: more than %d bytes: not a topology.conf", file, maxTopologyConfBytes)
	}
	if looksYAML(file, data) {
		return nil, fmt.Errorf("%s: %w", file, ErrTopologyYAML)
	}
	t := &TopologyConf{Path: file}
	p := &topoParser{t: t}
	cr := &confReader{read: read, problems: &t.Problems}
	if err := cr.parse(data, file, p.line); err != nil {
		return nil, err
	}
	t.Files = cr.files
	p.finish()
	return t, nil
}

// topoParser turns scanned lines into a TopologyConf.
type topoParser struct {
	t          *TopologyConf
	seq        int // lines seen, Includes counted in place
	firstTree  Pos // first SwitchName= line
	firstBlock Pos // first BlockName= or BlockSizes= line
	treeSeq    int // seq of firstTree
	blockSeq   int // seq of firstBlock
	names      int // names the Nodes= and Switches= lists stand for so far
}

func (p *topoParser) problem(sev string, pos Pos, nodes, format string, args ...any) {
	p.t.Problems = append(p.t.Problems, Problem{Severity: sev, File: pos.File, Line: pos.Line, Nodes: nodes, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
}

// topoTopKeys are the keys a topology.conf line may start with.
var topoTopKeys = []string{"SwitchName", "BlockName", "BlockSizes", "Include"}

func (p *topoParser) line(l confLine) {
	fields := l.Fields
	first := fields[0]
	p.seq++
	switch strings.ToLower(first.Key) {
	case "switchname":
		if p.firstTree.IsZero() {
			p.firstTree, p.treeSeq = l.Pos, p.seq
		}
		p.switchLine(l.Pos, fields)
	case "blockname":
		p.markBlock(l.Pos)
		p.blockLine(l.Pos, fields)
	case "blocksizes":
		p.markBlock(l.Pos)
		p.blockSizes(l.Pos, fields)
	default:
		if !first.HasEq {
			p.problem(SeverityError, l.Pos, "", "%q is not Key=Value: Slurm refuses the file (Parse error); write SwitchName=, BlockName= or BlockSizes=", first.Key)
			return
		}
		hint := ""
		if c := confSuggest(first.Key, topoTopKeys); c != "" {
			hint = " (did you mean " + c + "=?)"
		}
		p.problem(SeverityError, l.Pos, "", "unknown key %s=%s: topology.conf has SwitchName=, BlockName= and BlockSizes= lines; Slurm refuses the file (Parse error)", first.Key, hint)
	}
}

func (p *topoParser) markBlock(pos Pos) {
	if p.firstBlock.IsZero() {
		p.firstBlock, p.blockSeq = pos, p.seq
	}
}

// recordFields checks the fields after a record's first one: each must be one of keys, given
// once. It returns the values by lower-case key.
func (p *topoParser) recordFields(pos Pos, kind, name string, fields []confField, keys []string) map[string]string {
	vals := map[string]string{}
	for _, f := range fields[1:] {
		if !f.HasEq {
			p.problem(SeverityError, pos, "", "%s=%s: %q is not Key=Value: Slurm refuses the file (Parse error)", kind, name, f.Key)
			continue
		}
		known := ""
		for _, k := range keys {
			if strings.EqualFold(k, f.Key) {
				known = k
			}
		}
		if known == "" {
			hint := ""
			if c := confSuggest(f.Key, keys); c != "" {
				hint = " (did you mean " + c + "=?)"
			}
			p.problem(SeverityError, pos, "", "%s=%s: unknown key %s=%s: a %s line takes %s=; Slurm refuses the file", kind, name, f.Key, hint, kind, strings.Join(keys, "=, "))
			continue
		}
		lk := strings.ToLower(known)
		if _, dup := vals[lk]; dup {
			p.problem(SeverityWarning, pos, "", "%s=%s gives %s= twice: Slurm takes the last one; remove the other", kind, name, known)
		}
		vals[lk] = f.Value
	}
	return vals
}

// recordName returns the name a SwitchName= or BlockName= line gives, reporting none.
func (p *topoParser) recordName(pos Pos, fields []confField, kind, what string) (string, bool) {
	name := fields[0].Value
	if name == "" {
		p.problem(SeverityError, pos, "", "%s= has no name: Slurm refuses the file; name the %s", kind, what)
	}
	return name, name != ""
}

func (p *topoParser) switchLine(pos Pos, fields []confField) {
	name, ok := p.recordName(pos, fields, "SwitchName", "switch")
	if !ok {
		return
	}
	if len(name) > maxSwitchNameLen {
		p.problem(SeverityError, pos, "", "SwitchName=%s is %d bytes long: Slurm refuses names longer than %d (HOST_NAME_MAX); shorten it", shorten(name), len(name), maxSwitchNameLen)
		return
	}
	vals := p.recordFields(pos, "SwitchName", name, fields, []string{"Nodes", "Switches", "LinkSpeed"})
	sw := TopoSwitch{Pos: pos, Name: name}
	if v, ok := vals["linkspeed"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			p.problem(SeverityError, pos, "", "SwitchName=%s LinkSpeed=%s: not a whole number below 2^32; Slurm refuses the file", name, v)
		}
		sw.LinkSpeed = uint32(n)
	}
	if v, ok := vals["nodes"]; ok {
		sw.Nodes = p.hostlist(pos, "SwitchName="+name+" Nodes", v)
	}
	if v, ok := vals["switches"]; ok {
		sw.Switches = p.hostlist(pos, "SwitchName="+name+" Switches", v)
	}
	if sw.Nodes != nil && sw.Switches != nil {
		p.problem(SeverityError, pos, sw.Nodes.String(), "SwitchName=%s has both Nodes= and Switches=: Slurm refuses it (switch %s has both child switches and nodes); a leaf lists nodes, a higher switch lists switches", name, name)
	}
	p.t.Switches = append(p.t.Switches, sw)
}

// hostlist parses a Nodes= or Switches= value; a broken one is an error and stands for no
// names (never nil, so the key still counts as given). So does every list from the one that
// takes the file past maxTopologyNames names.
func (p *topoParser) hostlist(pos Pos, what, v string) *Hostlist {
	h, err := ParseHostlist(v)
	if err != nil {
		p.problem(SeverityError, pos, "", "%s=%s: %s; Slurm refuses the file (Invalid node name)", what, shorten(v), confHostlistReason(err))
		h, _ = ParseHostlist("")
	}
	if !p.t.NamesCut.IsZero() {
		h, _ = ParseHostlist("")
		return h
	}
	if p.names+h.Len() > maxTopologyNames {
		p.t.NamesCut = pos
		p.problem(SeverityError, pos, "", "%s=%s stands for %d names, which takes the Nodes= and Switches= lists of %s past %d names: no cluster has that many nodes, so lint reads no more names and checks no node; check the ranges for typos",
			what, shorten(v), h.Len(), filepath.Base(p.t.Path), maxTopologyNames)
		h, _ = ParseHostlist("")
		return h
	}
	p.names += h.Len()
	p.t.Names = p.names
	return h
}

func (p *topoParser) blockLine(pos Pos, fields []confField) {
	name, ok := p.recordName(pos, fields, "BlockName", "block")
	if !ok {
		return
	}
	vals := p.recordFields(pos, "BlockName", name, fields, []string{"Nodes"})
	b := TopoBlock{Pos: pos, Name: name}
	if v, ok := vals["nodes"]; ok {
		b.Nodes = p.hostlist(pos, "BlockName="+name+" Nodes", v)
	} else {
		p.problem(SeverityError, pos, "", "BlockName=%s has no Nodes=: Slurm refuses the file (block %s hasn't got nodes); list its nodes", name, name)
	}
	p.t.Blocks = append(p.t.Blocks, b)
}

// blockSizes parses BlockSizes= as _read_topo_file does: a comma list of sizes in nodes,
// each a multiple of the first (the base block size) by a power of two up to 2^15.
func (p *topoParser) blockSizes(pos Pos, fields []confField) {
	if len(fields) > 1 {
		p.problem(SeverityError, pos, "", "BlockSizes= must be alone on its line (found %s): Slurm refuses the file (Parse error)", fields[1].Key)
	}
	if !p.t.BlockSizesPos.IsZero() {
		p.problem(SeverityWarning, pos, "", "BlockSizes= given again (first at %s): Slurm takes the last one; remove the other", ref(p.t.BlockSizesPos))
	}
	p.t.BlockSizesPos = pos
	p.t.BlockSizes = nil
	v := fields[0].Value
	var sizes []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			p.problem(SeverityError, pos, "", "BlockSizes=%s: %q is not a positive whole number; Slurm refuses the file (Invalid BlockSizes value)", v, s)
			return
		}
		if len(sizes) > 0 {
			base := sizes[0]
			ratio := n / base
			if n%base != 0 || ratio&(ratio-1) != 0 || ratio >= 1<<maxBlockLevels {
				p.problem(SeverityError, pos, "", "BlockSizes=%s: %d is not %d (the base block size) times a power of two up to 2^15; Slurm refuses the file (Invalid BlockSizes value)", v, n, base)
				return
			}
		}
		sizes = append(sizes, n)
	}
	p.t.BlockSizes = sizes
}

// finish reports a file that mixes the two forms, or has neither.
func (p *topoParser) finish() {
	switch {
	case !p.firstTree.IsZero() && !p.firstBlock.IsZero():
		later, earlier, lk, ek := p.firstBlock, p.firstTree, "BlockName=/BlockSizes=", "SwitchName="
		if p.blockSeq < p.treeSeq {
			later, earlier, lk, ek = p.firstTree, p.firstBlock, "SwitchName=", "BlockName=/BlockSizes="
		}
		p.problem(SeverityError, later, "", "%s lines mix with %s lines (first at %s): topology/tree reads only SwitchName=, topology/block only BlockName= and BlockSizes=, and each refuses the other's lines; keep one form", lk, ek, ref(earlier))
	case p.firstTree.IsZero() && p.firstBlock.IsZero() && len(p.t.Problems) == 0:
		p.problem(SeverityError, Pos{File: p.t.Path, Line: 1}, "", "no SwitchName= or BlockName= line: Slurm's topology plugin refuses to start (No switches configured); describe the switches or blocks")
	}
}
