package slurm

// gres.conf: which generic resources (GPUs, MPS, shards, bandwidth, ...) each node has, and
// through which device files. The syntax is slurm.conf's (confscan.go); the keys and their
// meaning follow Slurm's src/interfaces/gres.c (_parse_gres_config) and gres.conf(5).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AutoDetect values gres.conf(5) documents: nvml and nvidia (NVIDIA), rsmi (AMD), oneapi
// (Intel), nrt (AWS Trainium) and off.
var autoDetectValues = []string{"nvml", "nvidia", "rsmi", "oneapi", "nrt", "off"}

// gresFlags are the Flags= values gres.conf(5) documents.
var gresFlags = []string{"CountOnly", "explicit", "one_sharing", "all_sharing", "nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env", "opencl_env", "no_gpu_env"}

// gresKeys maps the lower-case keys of a gres.conf line to Slurm's spelling.
var gresKeys = map[string]string{
	"nodename": "NodeName", "name": "Name", "type": "Type", "file": "File", "files": "File",
	"count": "Count", "autodetect": "AutoDetect", "cores": "Cores", "cpus": "CPUs",
	"links": "Links", "link": "Links", "multiplefiles": "MultipleFiles", "flags": "Flags",
}

var gresKeyList = []string{"NodeName", "Name", "Type", "File", "Count", "AutoDetect", "Cores", "CPUs", "Links", "MultipleFiles", "Flags"}

// maxGresFiles bounds the files one File= may name. A node has at most a few hundred devices;
// a range beyond this is a typo that would otherwise allocate millions of names.
const maxGresFiles = 1 << 16

// maxCore bounds core indices in Cores=; Slurm keeps CPU counts in 16 bits.
const maxCore = 1<<16 - 1

// GresLine is one gres.conf line with Name= (a GRES definition), as written.
type GresLine struct {
	Pos Pos
	// NodeNames is NodeName=; nil when the line has none and so applies to every node.
	NodeNames *Hostlist
	Name      string // Name: gpu, mps, shard, bandwidth, nic, ...
	Type      string // Type; empty when not given
	// Files is File= with ranges expanded (/dev/nvidia[0,2-3] is three files), in the order
	// written: the order of SLURM_JOB_GPUS indices.
	Files []string
	// Count is Count= with its K/M/G/T/P suffix applied when CountSet; see Total for the
	// count Slurm uses.
	Count    uint64
	CountSet bool
	// AutoDetect is AutoDetect= on this line, lower case; empty when not given.
	AutoDetect string
	// Cores is Cores= (or the older CPUs=), brackets removed: Cores=[0-3] and Cores=0-3 are
	// both {0, 3}. Nil when not given. Both keys count cores, not CPUs (gres.conf(5); slurmd
	// converts them with xcpuinfo_abs_to_mac). When a line gives both, Slurm takes Cores=.
	Cores []Range
	// CoresKey is "Cores" or "CPUs", the key Cores came from, and CoresText its value as
	// written, for messages that quote slurmd's; both empty when neither is given.
	CoresKey  string
	CoresText string
	// Links is Links= (or Link=): one number per GPU of the node, -1 for this GPU itself.
	// Nil when not given or when Slurm would ignore it (see Problems).
	Links []int
	// MultipleFiles is MultipleFiles= expanded: several files that together are one GRES
	// (a MIG instance and its GPU). Nil when not given.
	MultipleFiles []string
	Flags         []string // Flags, split at commas
}

// Total returns the count Slurm gives the line: Count= when set, else the number of File=
// files, else 1 (one GRES for a MultipleFiles= line or a line with no file).
func (l GresLine) Total() uint64 {
	switch {
	case l.CountSet:
		return l.Count
	case len(l.Files) > 0:
		return uint64(len(l.Files))
	default:
		return 1
	}
}

// HasFiles reports whether the line names device files (File= or MultipleFiles=).
func (l GresLine) HasFiles() bool { return len(l.Files) > 0 || len(l.MultipleFiles) > 0 }

// MaxCore returns the highest core index Cores= names, or -1 when it names none.
func (l GresLine) MaxCore() int {
	m := -1
	for _, r := range l.Cores {
		m = max(m, r.Last)
	}
	return m
}

// AutoDetectLine is a gres.conf line that sets AutoDetect for some nodes: NodeName=... with
// AutoDetect=, with or without Name=.
type AutoDetectLine struct {
	Pos       Pos
	NodeNames *Hostlist
	Value     string // lower case
}

// GresConf is gres.conf: the GRES lines in file order and the AutoDetect settings.
type GresConf struct {
	Path  string   // the file named to LoadGresConf or ParseGresConf
	Files []string // every file read: Path, then each Include in the order met
	// Lines lists the lines that define a GRES (that have Name=) in file order, Includes
	// inlined. Lines Slurm ignores or refuses (no Name=, a NodeName= or File= that does not
	// parse) are not here but in Problems.
	Lines []GresLine
	// AutoDetect is the global AutoDetect= (a line with only AutoDetect=), lower case; empty
	// when unset. AutoDetectPos is where it was set.
	AutoDetect    string
	AutoDetectPos Pos
	// NodeAutoDetect lists the per-node AutoDetect settings in file order.
	NodeAutoDetect []AutoDetectLine
	// Problems lists syntax and value problems in file order; parsing goes on after each.
	Problems []Problem
}

// NodeGres is the part of gres.conf that applies to one node.
type NodeGres struct {
	// AutoDetect is the node's effective AutoDetect: its own setting (the first NodeName
	// line that names it with AutoDetect=) when there is one, else the global one; empty when
	// neither is set.
	AutoDetect string
	// AutoDetectPos is where AutoDetect was set; zero when it is not.
	AutoDetectPos Pos
	// Lines are the GRES lines that apply to the node, in file order: the order Slurm numbers
	// devices in, and so what SLURM_JOB_GPUS indexes.
	Lines []GresLine
}

// ForNode returns the GRES lines and AutoDetect that apply to node name, in file order. A
// node-local AutoDetect overrides the global one, as in Slurm.
func (g *GresConf) ForNode(name string) NodeGres {
	out := NodeGres{AutoDetect: g.AutoDetect, AutoDetectPos: g.AutoDetectPos}
	for _, a := range g.NodeAutoDetect {
		if a.NodeNames.Contains(name) {
			out.AutoDetect, out.AutoDetectPos = a.Value, a.Pos
			break
		}
	}
	for _, l := range g.Lines {
		if l.NodeNames == nil || l.NodeNames.Contains(name) {
			out.Lines = append(out.Lines, l)
		}
	}
	return out
}

// LoadGresConf reads and parses gres.conf at path through read. The error is only for a file
// that cannot be read (path or an Include); everything wrong inside is in GresConf.Problems.
func LoadGresConf(path string, read ReadFileFunc) (*GresConf, error) {
	data, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("read gres.conf: %w", err)
	}
	return ParseGresConf(data, path, read)
}

// ParseGresConf parses gres.conf data that was read from file; read serves Include lines (nil
// when there are none). The error is only for an Include that cannot be read; problems in the
// text go into GresConf.Problems and parsing goes on.
func ParseGresConf(data []byte, file string, read ReadFileFunc) (*GresConf, error) {
	g := &GresConf{Path: file}
	p := &gresParser{g: g}
	r := &confReader{read: read, problems: &g.Problems}
	if err := r.parse(data, file, p.line); err != nil {
		return nil, err
	}
	g.Files = r.files
	return g, nil
}

type gresParser struct {
	g *GresConf
}

func (p *gresParser) problem(sev string, pos Pos, nodes, format string, args ...any) {
	p.g.Problems = append(p.g.Problems, Problem{Severity: sev, File: pos.File, Line: pos.Line, Nodes: nodes, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
}

// gresRaw holds the values of one line before they are checked together.
type gresRaw struct {
	set    map[string]string // Slurm spelling -> value
	spelt  map[string]string // Slurm spelling -> key as written, for messages
	broken bool              // NodeName or File does not parse: Slurm would not use the line
}

func (p *gresParser) line(l confLine) {
	// Built here, not in fields, so that the maps can live on the stack.
	raw := gresRaw{set: map[string]string{}, spelt: map[string]string{}}
	nodes := p.fields(l, &raw)
	line := p.head(l.Pos, &raw, nodes)
	name, hasName := raw.set["Name"]
	if !hasName || name == "" {
		p.autoDetectOnly(l, raw, line, nodes)
		return
	}
	line.Name = name
	line.Type = raw.set["Type"]
	if line.AutoDetect != "" {
		if _, hasNode := raw.set["NodeName"]; !hasNode {
			p.problem(SeverityWarning, l.Pos, nodes, "AutoDetect= on a Name= line without NodeName= has no effect (Slurm: In-line AutoDetect requires NodeName to take effect): put AutoDetect=%s on a line of its own", line.AutoDetect)
		} else if line.NodeNames != nil {
			p.g.NodeAutoDetect = append(p.g.NodeAutoDetect, AutoDetectLine{Pos: l.Pos, NodeNames: line.NodeNames, Value: line.AutoDetect})
		}
	}
	p.values(&line, &raw, nodes)
	if raw.broken {
		return
	}
	p.g.Lines = append(p.g.Lines, line)
}

// fields collects a line's keys into raw in Slurm's spelling, reporting what is not key=value,
// unknown keys and keys given twice. It returns NodeName= as written, for messages.
func (p *gresParser) fields(l confLine, raw *gresRaw) (nodes string) {
	for _, f := range l.Fields {
		if strings.EqualFold(f.Key, "nodename") && f.HasEq {
			nodes = f.Value
		}
	}
	for _, f := range l.Fields {
		if !f.HasEq {
			p.problem(SeverityError, l.Pos, nodes, "%q is not key=value: Slurm refuses gres.conf here (Parsing error at unrecognized key); remove it or comment it out with '#'", f.Key)
			continue
		}
		key, ok := gresKeys[strings.ToLower(f.Key)]
		if !ok {
			hint := ""
			if s := confSuggest(f.Key, gresKeyList); s != "" {
				hint = fmt.Sprintf(" (did you mean %s=?)", s)
			}
			p.problem(SeverityError, l.Pos, nodes, "unknown key %s=%s: Slurm refuses gres.conf with it; the keys are %s", f.Key, hint, strings.Join(gresKeyList, ", "))
			continue
		}
		if _, dup := raw.set[key]; dup && !(key == "Cores" || key == "CPUs") {
			p.problem(SeverityWarning, l.Pos, nodes, "%s= is given twice on one line; Slurm uses the last, %s=%s", key, f.Key, f.Value)
		}
		raw.set[key] = f.Value
		raw.spelt[key] = f.Key
	}
	return nodes
}

// head reads what every line may have, with or without Name=: NodeName= and AutoDetect=.
func (p *gresParser) head(pos Pos, raw *gresRaw, nodes string) GresLine {
	line := GresLine{Pos: pos}
	if v, ok := raw.set["NodeName"]; ok {
		h, err := ParseHostlist(v)
		switch {
		case err != nil:
			p.problem(SeverityError, pos, "", "NodeName=%s: %s; Slurm skips this line on every node", v, confHostlistReason(err))
			raw.broken = true
		case h.Len() == 0:
			p.problem(SeverityError, pos, "", "NodeName= is empty: name the nodes, or drop NodeName= to apply the line to every node")
			raw.broken = true
		default:
			line.NodeNames = h
		}
	}
	if v, ok := raw.set["AutoDetect"]; ok {
		line.AutoDetect = strings.ToLower(v)
		if !confContainsFold(autoDetectValues, v) {
			p.problem(SeverityWarning, pos, nodes, "AutoDetect=%s is not one of %s; Slurm treats it as unset", v, strings.Join(autoDetectValues, ", "))
		}
	}
	return line
}

// values reads the keys of a GRES definition (a line with Name=): its files, count, cores,
// links and flags.
func (p *gresParser) values(line *GresLine, raw *gresRaw, nodes string) {
	pos := line.Pos
	if v, ok := raw.set["File"]; ok {
		files, ok := p.files(pos, nodes, raw.spelt["File"], v)
		if !ok {
			raw.broken = true
		}
		line.Files = files
	}
	if v, ok := raw.set["MultipleFiles"]; ok {
		if _, both := raw.set["File"]; both {
			p.problem(SeverityError, pos, nodes, "File= and MultipleFiles= on one line: Slurm refuses this (fatal: File and MultipleFiles options are mutually exclusive); keep one")
		}
		files, ok := p.files(pos, nodes, "MultipleFiles", v)
		if !ok {
			raw.broken = true
		}
		line.MultipleFiles = files
	}
	if v, ok := raw.set["Count"]; ok {
		n, err := parseGresCount(v)
		if err != nil {
			p.problem(SeverityError, pos, nodes, "Count=%s: %v: Slurm refuses the line (fatal: invalid count); write a number with an optional K, M, G or T suffix", v, err)
		} else {
			line.Count, line.CountSet = n, true
			p.checkCount(pos, nodes, *line)
		}
	}
	cores, coresKey := raw.set["Cores"], "Cores"
	if _, ok := raw.set["Cores"]; !ok {
		cores, coresKey = raw.set["CPUs"], "CPUs"
	}
	if _, ok := raw.set[coresKey]; ok {
		if line.Cores = p.cores(pos, nodes, raw.spelt[coresKey], cores); line.Cores != nil {
			line.CoresKey, line.CoresText = coresKey, cores
		}
	}
	if v, ok := raw.set["Links"]; ok {
		line.Links = p.links(pos, nodes, *line, v)
	}
	if v, ok := raw.set["Flags"]; ok {
		line.Flags = confSplitList(v)
		for _, f := range line.Flags {
			if !confContainsFold(gresFlags, f) {
				p.problem(SeverityWarning, pos, nodes, "Flags=%s: %q is not a flag Slurm knows (%s)", v, f, strings.Join(gresFlags, ", "))
			}
		}
	}
}

// autoDetectOnly handles a line without Name=: an AutoDetect setting (global, or for the
// nodes of NodeName=), or a GRES line Slurm ignores for lack of a name.
func (p *gresParser) autoDetectOnly(l confLine, raw gresRaw, line GresLine, nodes string) {
	others := 0
	for k := range raw.set {
		if k != "NodeName" && k != "AutoDetect" {
			others++
		}
	}
	_, hasAD := raw.set["AutoDetect"]
	if others > 0 || !hasAD {
		if _, ok := raw.set["Name"]; ok {
			p.problem(SeverityError, l.Pos, nodes, "Name= is empty: Slurm ignores this line (Invalid GRES data, no type name); write Name=gpu (or mps, shard, ...)")
		} else {
			p.problem(SeverityError, l.Pos, nodes, "line has no Name=: Slurm ignores it (Invalid GRES data, no type name), so its devices are not configured; add Name=gpu (or mps, shard, ...)")
		}
		return
	}
	if raw.broken {
		return
	}
	if line.NodeNames == nil {
		if p.g.AutoDetect != "" && p.g.AutoDetect != line.AutoDetect {
			p.problem(SeverityWarning, l.Pos, "", "AutoDetect=%s overrides AutoDetect=%s set at %s; Slurm uses the last one: keep one", line.AutoDetect, p.g.AutoDetect, p.g.AutoDetectPos)
		}
		p.g.AutoDetect, p.g.AutoDetectPos = line.AutoDetect, l.Pos
		return
	}
	p.g.NodeAutoDetect = append(p.g.NodeAutoDetect, AutoDetectLine{Pos: l.Pos, NodeNames: line.NodeNames, Value: line.AutoDetect})
}

// files expands a File= or MultipleFiles= value, a hostlist of paths.
func (p *gresParser) files(pos Pos, nodes, key, v string) ([]string, bool) {
	h, err := ParseHostlist(v)
	if err != nil {
		p.problem(SeverityError, pos, nodes, "%s=%s: %s; Slurm refuses the line (fatal: can't parse File=)", key, v, confHostlistReason(err))
		return nil, false
	}
	if h.Len() == 0 {
		p.problem(SeverityError, pos, nodes, "%s= is empty: name the device files, e.g. %s=/dev/nvidia[0-7]", key, key)
		return nil, false
	}
	if h.Len() > maxGresFiles {
		p.problem(SeverityError, pos, nodes, "%s=%s names %d files, more than any node has: check the range", key, v, h.Len())
		return nil, false
	}
	files := h.Expand()
	for _, f := range files {
		if !strings.HasPrefix(f, "/") {
			p.problem(SeverityWarning, pos, nodes, "%s=%s: %q is not an absolute path; Slurm wants the full path of the device file, e.g. /dev/nvidia0", key, v, f)
			break
		}
	}
	return files, true
}

// checkCount reports a Count= that disagrees with the number of files. Slurm allows it only
// for mps and shard, whose count is per device (gres.c _multi_count_per_file), and refuses
// the line otherwise (fatal: count does not match File value).
func (p *gresParser) checkCount(pos Pos, nodes string, l GresLine) {
	files := uint64(len(l.Files))
	if len(l.MultipleFiles) > 0 {
		files = 1
	}
	if files == 0 || l.Count == files || gresPerFileCount(l.Name) {
		return
	}
	p.problem(SeverityError, pos, nodes, "Count=%s but the line names %d file(s): Slurm refuses it (fatal: count does not match File value); drop Count= (it defaults to the number of files) or fix File=", formatGresCount(l.Count), files)
}

// gresPerFileCount reports whether a GRES may have a count per device file: MPS and shards
// divide a GPU, so Count=100 File=/dev/nvidia0 is legal for them.
func gresPerFileCount(name string) bool {
	return strings.EqualFold(name, "mps") || strings.EqualFold(name, "shard")
}

// cores parses Cores= (or CPUs=): "0-15", "0,1", "[0-3]", "0,2-3".
func (p *gresParser) cores(pos Pos, nodes, key, v string) []Range {
	s := strings.TrimSpace(v)
	// Cores=[0-3] is the "semi compact" form of Slurm's own tests (test7.17.1).
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	out, err := ParseRangeList(s, maxCore)
	if err != nil {
		elem := s
		if re := (*RangeListError)(nil); errors.As(err, &re) {
			elem = re.Elem
		}
		p.problem(SeverityError, pos, nodes, "%s=%s: %q is not a core number or range: write e.g. %s=0-15 or %s=0,2-3; Slurm refuses the line", key, v, elem, key, key)
		return nil
	}
	return out
}

// links parses Links=: comma-separated numbers from -2 to 1023 (gres.c _validate_links). Slurm
// ignores a bad list with an error and keeps the line; ranges are not allowed (test39.18 2.42).
func (p *gresParser) links(pos Pos, nodes string, l GresLine, v string) []int {
	if v == "" {
		return nil
	}
	var out []int
	for _, e := range strings.Split(v, ",") {
		n, err := strconv.Atoi(e)
		if err != nil || n < -2 || n > 1023 {
			p.problem(SeverityWarning, pos, nodes, "Links=%s: %q is not a link count from -2 to 1023 (ranges are not allowed): Slurm ignores Links= on this line; write one number per GPU, -1 for this GPU itself", v, e)
			return nil
		}
		out = append(out, n)
	}
	if len(l.Files) > 1 {
		p.problem(SeverityError, pos, nodes, "Links=%s is on a line with %d files (%s): Links describes one GPU (its -1 marks that GPU's own index), so it cannot fit %d; split the line into one line per File= with its own Links=", v, len(l.Files), CompressHostlist(l.Files), len(l.Files))
	}
	return out
}
