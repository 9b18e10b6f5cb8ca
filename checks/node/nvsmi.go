package node

// Readers of nvidia-smi's text output, so that a real capture (`nvidia-smi -q` and
// `nvidia-smi nvlink --status`, as admins paste them into tickets and as public test data
// keeps them) becomes the GPUInventory a snapshot's nvml.json holds. nodecheck itself never
// runs nvidia-smi: the live node is read through NVML (checks/node/nvml). These parsers exist
// for `nodecheck import-nvidia-smi` and for fixtures built from real captures.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nodecheck/nodecheck/config/text"
)

// NvidiaSMIError is nvidia-smi text that could not be read: the 1-based line it was found
// on and what is wrong there. Line is 0 when the problem belongs to no line (empty input).
type NvidiaSMIError struct {
	Line int
	Msg  string
}

// Error is "line N: MSG", or MSG alone when Line is 0. Callers that know the file name
// print "FILE:N: MSG" from the fields instead.
func (e *NvidiaSMIError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func smiErr(line int, format string, a ...any) error {
	return &NvidiaSMIError{Line: line, Msg: fmt.Sprintf(format, a...)}
}

// smiMaxLine bounds one line of nvidia-smi output. The longest real line is well under
// 200 bytes ("Atomic Caps Outbound : FETCHADD_32 ..."); a longer one is not nvidia-smi's.
const smiMaxLine = 64 << 10

// smiBanner is the first line of every `nvidia-smi -q` output, whatever -d selects.
const smiBanner = "==============NVSMI LOG=============="

// smiLine is one non-blank line of `nvidia-smi -q`: "KEY : VALUE" (hasVal) or a section
// header "KEY", at an indentation of indent bytes.
type smiLine struct {
	n      int
	indent int
	key    string
	val    string
	hasVal bool
}

// splitSMILine reads one line of `nvidia-smi -q`. The separator is the first ':' that
// follows a blank and is followed by a blank or the end of the line ("Bus Id : 00000000:19:00.0"):
// the colons of a bus id in a header ("GPU 00000000:19:00.0") are not separators.
func splitSMILine(n int, raw string) smiLine {
	rest := strings.TrimLeft(raw, " \t")
	l := smiLine{n: n, indent: len(raw) - len(rest)}
	rest = strings.TrimRight(rest, " \t")
	for i := 1; i < len(rest); i++ {
		if rest[i] == ':' && (rest[i-1] == ' ' || rest[i-1] == '\t') && (i+1 == len(rest) || rest[i+1] == ' ' || rest[i+1] == '\t') {
			l.key = strings.TrimSpace(rest[:i])
			l.val = strings.TrimSpace(rest[i+1:])
			l.hasVal = true
			return l
		}
	}
	l.key = rest
	return l
}

// smiNA reports whether v is nvidia-smi's "not available" ("N/A"; "[N/A]" in some fields).
func smiNA(v string) bool { return v == "N/A" || v == "[N/A]" }

// ParseNvidiaSMIQuery reads the text of `nvidia-smi -q` (any -d selection, e.g. `-q -d
// PAGE_RETIREMENT`, which prints only the "Retired Pages" of each GPU) and returns what NVML
// would have reported, in a snapshot's terms (docs/snapshots.md, nvml.json):
//
//   - Init is SUCCESS (nvidia-smi ran); DriverVersion, CUDADriverVersion ("CUDA Version :
//     12.2" is 12020, NVML's 1000*major + 10*minor) and DeviceCount ("Attached GPUs") from
//     the header.
//   - One GPU per "GPU 00000000:19:00.0" block, in the order printed (nvidia-smi prints GPUs
//     in NVML's index order, which is PCI bus order by default): Index is that order and
//     PCIBusID the bus id as printed (NVML's form).
//   - Minor Number, GPU UUID, Product Name; MinorNumber is -1 when the block has none (a -d
//     selection) or "N/A".
//   - PCIe from "GPU Link Info" (generation Max/Current, width Max/Current "16x"); nil when
//     all four are absent or N/A.
//   - Fabric State/Status: "Completed"/"Success" become NVML's names COMPLETED/SUCCESS (see
//     smiFabricState); nil when the state is N/A or "Not Supported" (before Hopper). Its
//     "Health" block (drivers 550 and later, with more parts in later ones) is
//     Fabric.Health (see fabricField).
//   - ECC from "ECC Mode" (nil when the current mode is absent or N/A) and "ECC Errors": the
//     uncorrectable count is the sum of every "... Uncorrectable ..." counter of Volatile
//     (Aggregate), which is SRAM Uncorrectable Parity + SRAM Uncorrectable SEC-DED + DRAM
//     Uncorrectable on Hopper's layout and SRAM + DRAM Uncorrectable on Ampere's; on the old
//     layout (Volta) it is "Double Bit / Total", and the correctable one "Single Bit / Total".
//     A counter that is N/A everywhere stays nil.
//   - RemappedRows from "Remapped Rows" (nil for "Remapped Rows : N/A" or all N/A);
//     RetiredPages from "Retired Pages" (nil when all N/A); the pending flag is "Pending Page
//     Blacklist", "Pending Page Retirement" or "Pending", as drivers have named it.
//   - Memory from "FB Memory Usage" Total/Reserved/Used in MiB (nil when Total is N/A).
//     Drivers that print Reserved report Used without it, as nvmlDeviceGetMemoryInfo_v2.
//   - Compute from "Processes": "None" is an empty list; each "Process ID" entry gives PID
//     and "Used GPU Memory" (N/A is 0), UID -1 (unknown: a capture has no /proc), and Command
//     the base name of "Name" cut to 15 bytes, the rule by which the kernel names a task at
//     exec (TASK_COMM_LEN 16). Entries of Type "G" are left out: they are graphics clients
//     (Xorg, a desktop), which nvmlDeviceGetComputeRunningProcesses, the call Compute
//     mirrors, does not list; "C", "C+G" and MPS types are kept.
//
// NVLinks stay nil: `nvidia-smi -q` does not print link states (see
// ParseNvidiaSMINvLinkStatus and MergeNVLinks).
//
// "N/A" leaves a field nil or zero. Anything else that cannot be read is an error naming the
// line (*NvidiaSMIError): a value that is not a number where one is due, a line before the
// "==============NVSMI LOG==============" banner (a plain `nvidia-smi` table, say), or a
// number of GPU blocks other than "Attached GPUs" announces, which is what output cut short
// looks like. A capture of some GPUs only (`nvidia-smi -q -i 3`) is refused for the same
// reason: a snapshot describes the whole node. Sections and keys this parser does not use
// are skipped, so new driver layouts that only add keys still read.
func ParseNvidiaSMIQuery(r io.Reader) (GPUInventory, error) {
	p := smiParser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), smiMaxLine)
	n := 0
	for sc.Scan() {
		n++
		raw := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if !utf8.ValidString(raw) {
			return GPUInventory{}, smiErr(n, "not UTF-8 text: not nvidia-smi output")
		}
		if err := p.line(splitSMILine(n, raw)); err != nil {
			return GPUInventory{}, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return GPUInventory{}, smiErr(n+1, "line longer than %d bytes: not nvidia-smi output", smiMaxLine)
		}
		return GPUInventory{}, fmt.Errorf("read nvidia-smi -q output: %w", err)
	}
	return p.finish(n)
}

// smiParser is the state of ParseNvidiaSMIQuery.
type smiParser struct {
	banner       bool
	inv          GPUInventory
	attachedLine int // 0: no "Attached GPUs" line yet
	gpus         []*smiGPU
	cur          *smiGPU   // the open GPU block; nil at the top level
	stack        []smiLine // open section headers inside the block
	topSection   bool      // inside a top-level section that is not a GPU block
	seen         GPUFields // the facts whose sections the capture prints
}

// smiGPU is one GPU block being read.
type smiGPU struct {
	g               GPU
	pcie            PCIe
	pcieAny         bool
	fab             smiFabric
	eccCur, eccPend string
	rr              RemappedRows
	rrAny           bool
	rp              RetiredPages
	rpAny           bool
	mem             Memory
	memTotal        bool
	computeNone     bool // "Processes : None"
	processes       bool // a "Processes" section header
	procs           []smiProc
	ecc             [3]smiSum // volatile uncorrected, volatile corrected, aggregate uncorrected
	eccTotal        [3]smiSum // the same from the old layout's "Double Bit / Total", "Single Bit / Total"
	sig             smiSignals
	seen            *GPUFields // the parser's
}

// smiSum adds counters; ok once one value was read.
type smiSum struct {
	v  uint64
	ok bool
}

func (s *smiSum) add(l smiLine) error {
	if smiNA(l.val) {
		return nil
	}
	v, err := strconv.ParseUint(l.val, 10, 64)
	if err != nil {
		return smiErr(l.n, "%s %q: want a count or N/A", l.key, l.val)
	}
	if s.v > math.MaxUint64-v {
		return smiErr(l.n, "%s %q: the sum of the ECC counters overflows", l.key, l.val)
	}
	s.v += v
	s.ok = true
	return nil
}

func (s smiSum) ptr() *uint64 {
	if !s.ok {
		return nil
	}
	v := s.v
	return &v
}

// smiProc is one entry of a GPU's "Processes".
type smiProc struct {
	p   Process
	typ string
}

var smiBusID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$`)
})

func (p *smiParser) line(l smiLine) error {
	if !p.banner {
		if l.indent == 0 && !l.hasVal && l.key == smiBanner {
			p.banner = true
			return nil
		}
		return smiErr(l.n, "%q: want the %q banner that starts `nvidia-smi -q` output (a plain `nvidia-smi` table or other output cannot be imported)", smiCut(l.key, 80), smiBanner)
	}
	if l.indent == 0 {
		p.stack = p.stack[:0]
		p.topSection = false
		if !l.hasVal {
			if id, ok := strings.CutPrefix(l.key, "GPU "); ok {
				if !smiBusID().MatchString(id) {
					return smiErr(l.n, "GPU block %q: %q is not a PCI bus id (DOMAIN:BUS:DEVICE.FUNCTION)", smiCut(l.key, 80), smiCut(id, 40))
				}
				p.cur = &smiGPU{g: GPU{Index: len(p.gpus), MinorNumber: -1, PCIBusID: id}, seen: &p.seen}
				p.seen |= GPUPCIBusID
				p.gpus = append(p.gpus, p.cur)
				return nil
			}
			// Another top-level section (none is printed today): its lines are skipped.
			p.cur = nil
			p.topSection = true
			return nil
		}
		p.cur = nil
		return p.header(l)
	}
	if p.cur == nil {
		if p.topSection {
			return nil
		}
		return smiErr(l.n, "%q: indented line outside a GPU block", smiCut(l.key, 80))
	}
	for len(p.stack) > 0 && p.stack[len(p.stack)-1].indent >= l.indent {
		p.stack = p.stack[:len(p.stack)-1]
	}
	if !l.hasVal {
		p.stack = append(p.stack, l)
		if len(p.stack) == 1 && l.key == "Processes" {
			p.cur.processes = true
		}
		return nil
	}
	names := make([]string, 0, len(p.stack)+1)
	for _, s := range p.stack {
		names = append(names, s.key)
	}
	names = append(names, l.key)
	return p.cur.field(strings.Join(names, "/"), l)
}

// header reads a top-level "KEY : VALUE" line.
func (p *smiParser) header(l smiLine) error {
	switch l.key {
	case "Driver Version":
		p.seen |= GPUDriverVersion
		if !smiNA(l.val) {
			p.inv.DriverVersion = l.val
		}
	case "CUDA Version":
		p.seen |= GPUCUDAVersion
		v, err := parseCUDAVersion(l.val)
		if err != nil {
			return smiErr(l.n, "CUDA Version %q: %v", l.val, err)
		}
		p.inv.CUDADriverVersion = v
	case "Attached GPUs":
		v, err := strconv.Atoi(l.val)
		if err != nil || v < 0 {
			return smiErr(l.n, "Attached GPUs %q: want a count", l.val)
		}
		p.inv.DeviceCount, p.attachedLine = v, l.n
	}
	return nil
}

// parseCUDAVersion turns nvidia-smi's "12.2" into NVML's cudaDriverVersion 12020
// (1000*major + 10*minor, nvmlSystemGetCudaDriverVersion); N/A is 0.
func parseCUDAVersion(s string) (int, error) {
	if smiNA(s) {
		return 0, nil
	}
	maj, mnr, ok := strings.Cut(s, ".")
	a, errA := strconv.Atoi(maj)
	b, errB := strconv.Atoi(mnr)
	if !ok || errA != nil || errB != nil || a < 0 || b < 0 || b > 99 || a > 999 {
		return 0, errors.New("want MAJOR.MINOR or N/A")
	}
	return a*1000 + b*10, nil
}

// field reads one "KEY : VALUE" line of a GPU block; path is the line's section path and
// key, "PCI/GPU Link Info/Link Width/Max". Keys this parser does not use are skipped.
func (g *smiGPU) field(path string, l smiLine) error {
	section, _, _ := strings.Cut(path, "/")
	if bit, ok := smiSectionFacts[section]; ok {
		*g.seen |= bit
	}
	switch section {
	case "Product Name", "GPU UUID", "Minor Number":
		return g.identityField(path, l)
	case "PCI":
		if path == "PCI/Replays Since Reset" {
			return g.replayField(l, g.seen)
		}
		if strings.HasPrefix(path, "PCI/GPU Link Info/") {
			*g.seen |= GPUPCIe
		}
		return g.linkField(path, l)
	case "Fabric":
		return g.fabricField(path, l)
	case "ECC Mode", "ECC Errors":
		return g.eccField(path, l)
	case "Remapped Rows", "Retired Pages":
		return g.repairField(path, l)
	case "FB Memory Usage":
		return g.memoryField(path, l)
	case "Processes":
		return g.processField(path, l)
	}
	return g.signalField(path, l, g.seen)
}

// identityField reads the GPU's name, UUID and minor number.
func (g *smiGPU) identityField(path string, l smiLine) error {
	v := l.val
	switch path {
	case "Product Name":
		if !smiNA(v) {
			g.g.Name = v
		}
	case "GPU UUID":
		if !smiNA(v) {
			g.g.UUID = v
		}
	case "Minor Number":
		if smiNA(v) {
			return nil
		}
		m, err := strconv.Atoi(v)
		if err != nil || m < 0 {
			return smiErr(l.n, "Minor Number %q: want a number or N/A", v)
		}
		g.g.MinorNumber = m
	}
	return nil
}

// linkField reads the PCIe link.
func (g *smiGPU) linkField(path string, l smiLine) error {
	switch path {
	case "PCI/GPU Link Info/PCIe Generation/Max":
		return g.pcieInt(l, &g.pcie.MaxLinkGen, "")
	case "PCI/GPU Link Info/PCIe Generation/Current":
		return g.pcieInt(l, &g.pcie.CurLinkGen, "")
	case "PCI/GPU Link Info/Link Width/Max":
		return g.pcieInt(l, &g.pcie.MaxLinkWidth, "x")
	case "PCI/GPU Link Info/Link Width/Current":
		return g.pcieInt(l, &g.pcie.CurLinkWidth, "x")
	}
	return nil
}

// eccField reads the ECC mode and the error counters.
func (g *smiGPU) eccField(path string, l smiLine) error {
	switch path {
	case "ECC Mode/Current":
		g.eccCur = l.val
		return checkEnabled(l)
	case "ECC Mode/Pending":
		g.eccPend = l.val
		return checkEnabled(l)
	case "ECC Errors/Volatile/Double Bit/Total":
		return g.eccTotal[0].add(l)
	case "ECC Errors/Volatile/Single Bit/Total":
		return g.eccTotal[1].add(l)
	case "ECC Errors/Aggregate/Double Bit/Total":
		return g.eccTotal[2].add(l)
	}
	// Hopper and Ampere name each location's counter ("SRAM Uncorrectable Parity",
	// "DRAM Correctable", ...); every "Uncorrectable" one adds to the uncorrected total.
	for i, prefix := range []string{"ECC Errors/Volatile/", "ECC Errors/Volatile/", "ECC Errors/Aggregate/"} {
		name, ok := strings.CutPrefix(path, prefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		unc := strings.Contains(name, "Uncorrectable")
		cor := !unc && strings.Contains(name, "Correctable")
		if (i == 1 && cor) || (i != 1 && unc) {
			if err := g.ecc[i].add(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// repairField reads row remapping and page retirement.
func (g *smiGPU) repairField(path string, l smiLine) error {
	v := l.val
	switch path {
	case "Remapped Rows":
		if !smiNA(v) {
			return smiErr(l.n, "Remapped Rows %q: want a section or N/A", v)
		}
	case "Remapped Rows/Correctable Error":
		return g.rrInt(l, &g.rr.Correctable)
	case "Remapped Rows/Uncorrectable Error":
		return g.rrInt(l, &g.rr.Uncorrectable)
	case "Remapped Rows/Pending":
		return g.rrBool(l, &g.rr.Pending)
	case "Remapped Rows/Remapping Failure Occurred":
		return g.rrBool(l, &g.rr.Failed)
	case "Retired Pages/Single Bit ECC":
		return g.rpInt(l, &g.rp.SingleBit)
	case "Retired Pages/Double Bit ECC":
		return g.rpInt(l, &g.rp.DoubleBit)
	case "Retired Pages/Pending Page Blacklist", "Retired Pages/Pending Page Retirement", "Retired Pages/Pending":
		if smiNA(v) {
			return nil
		}
		b, err := parseYesNo(l)
		if err != nil {
			return err
		}
		g.rp.Pending, g.rpAny = b, true
	}
	return nil
}

// memoryField reads the framebuffer's use.
func (g *smiGPU) memoryField(path string, l smiLine) error {
	switch path {
	case "FB Memory Usage/Total":
		if smiNA(l.val) {
			return nil
		}
		g.memTotal = true
		return parseMiB(l, &g.mem.TotalMiB)
	case "FB Memory Usage/Reserved":
		return parseMiB(l, &g.mem.ReservedMiB)
	case "FB Memory Usage/Used":
		return parseMiB(l, &g.mem.UsedMiB)
	}
	return nil
}

// processField reads the "Processes" section.
func (g *smiGPU) processField(path string, l smiLine) error {
	v := l.val
	switch path {
	case "Processes":
		switch {
		case v == "None":
			g.computeNone = true
		case !smiNA(v):
			return smiErr(l.n, "Processes %q: want None, N/A or a list of processes", v)
		}
	case "Processes/Process ID":
		pid, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return smiErr(l.n, "Process ID %q: want a PID", v)
		}
		g.procs = append(g.procs, smiProc{p: Process{PID: uint32(pid), UID: -1}})
	case "Processes/Type", "Processes/Name", "Processes/Used GPU Memory":
		if len(g.procs) == 0 {
			return smiErr(l.n, "%s %q before any Process ID", l.key, v)
		}
		pr := &g.procs[len(g.procs)-1]
		switch l.key {
		case "Type":
			pr.typ = v
		case "Name":
			if !smiNA(v) {
				pr.p.Command = commName(v)
			}
		default:
			return parseMiB(l, &pr.p.UsedMiB)
		}
	}
	return nil
}

// pcieInt reads a link generation ("5") or width ("16x", suffix "x").
func (g *smiGPU) pcieInt(l smiLine, dst *int, suffix string) error {
	if smiNA(l.val) {
		return nil
	}
	s, ok := strings.CutSuffix(l.val, suffix)
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 0 || n > 1024 {
		want := "a PCIe generation"
		if suffix != "" {
			want = "a link width such as 16x"
		}
		return smiErr(l.n, "%s %q: want %s or N/A", l.key, l.val, want)
	}
	*dst, g.pcieAny = n, true
	return nil
}

func (g *smiGPU) rrInt(l smiLine, dst *int) error {
	if smiNA(l.val) {
		return nil
	}
	n, err := strconv.ParseInt(l.val, 10, 32)
	if err != nil || n < 0 {
		return smiErr(l.n, "%s %q: want a row count or N/A", l.key, l.val)
	}
	*dst, g.rrAny = int(n), true
	return nil
}

func (g *smiGPU) rrBool(l smiLine, dst *bool) error {
	if smiNA(l.val) {
		return nil
	}
	b, err := parseYesNo(l)
	if err != nil {
		return err
	}
	*dst, g.rrAny = b, true
	return nil
}

func (g *smiGPU) rpInt(l smiLine, dst *int) error {
	if smiNA(l.val) {
		return nil
	}
	n, err := strconv.ParseInt(l.val, 10, 32)
	if err != nil || n < 0 {
		return smiErr(l.n, "%s %q: want a page count or N/A", l.key, l.val)
	}
	*dst, g.rpAny = int(n), true
	return nil
}

func parseYesNo(l smiLine) (bool, error) {
	switch l.val {
	case "Yes":
		return true, nil
	case "No":
		return false, nil
	}
	return false, smiErr(l.n, "%s %q: want Yes, No or N/A", l.key, l.val)
}

func checkEnabled(l smiLine) error {
	switch l.val {
	case "Enabled", "Disabled", "N/A", "[N/A]":
		return nil
	}
	return smiErr(l.n, "ECC Mode %s %q: want Enabled, Disabled or N/A", l.key, l.val)
}

// parseMiB reads "81559 MiB"; N/A leaves dst alone (zero).
func parseMiB(l smiLine, dst *uint64) error {
	if smiNA(l.val) {
		return nil
	}
	num, ok := strings.CutSuffix(l.val, " MiB")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil {
		return smiErr(l.n, "%s %q: want a size such as \"81559 MiB\" or N/A", l.key, l.val)
	}
	*dst = n
	return nil
}

// commName is what /proc/<pid>/comm holds for a program started as name: the base name,
// cut to 15 bytes (the kernel's TASK_COMM_LEN 16 with its NUL, set at exec).
func commName(name string) string {
	b := path.Base(name)
	if len(b) > 15 {
		b = b[:15]
	}
	return b
}

func (g *smiGPU) build() GPU {
	out := g.g
	g.buildSignals(&out)
	if g.pcieAny {
		p := g.pcie
		out.PCIe = &p
	}
	out.Fabric = g.buildFabric()
	if g.eccCur == "Enabled" || g.eccCur == "Disabled" {
		e := &ECC{Enabled: g.eccCur == "Enabled", PendingEnabled: g.eccPend == "Enabled"}
		pick := func(i int) *uint64 {
			if g.ecc[i].ok {
				return g.ecc[i].ptr()
			}
			return g.eccTotal[i].ptr()
		}
		e.VolatileUncorrected, e.VolatileCorrected, e.AggregateUncorrected = pick(0), pick(1), pick(2)
		out.ECC = e
	}
	if g.rrAny {
		r := g.rr
		out.RemappedRows = &r
	}
	if g.rpAny {
		r := g.rp
		out.RetiredPages = &r
	}
	if g.memTotal {
		m := g.mem
		out.Memory = &m
	}
	if g.computeNone || g.processes {
		c := &Compute{Processes: []Process{}}
		for _, pr := range g.procs {
			if pr.typ == "G" {
				continue
			}
			c.Processes = append(c.Processes, pr.p)
		}
		out.Compute = c
	}
	return out
}

func (p *smiParser) finish(last int) (GPUInventory, error) {
	switch {
	case !p.banner:
		return GPUInventory{}, &NvidiaSMIError{Msg: "empty input: want the output of `nvidia-smi -q`"}
	case p.attachedLine == 0:
		return GPUInventory{}, smiErr(last, "end of input without an \"Attached GPUs\" line: not the output of `nvidia-smi -q`")
	case len(p.gpus) != p.inv.DeviceCount:
		where := "the output is cut short"
		if len(p.gpus) > p.inv.DeviceCount {
			where = "the output joins several captures"
		}
		return GPUInventory{}, smiErr(last, "end of input after %d GPU %s, but \"Attached GPUs : %d\" (line %d) announced %d: %s, or was taken with -i; capture `nvidia-smi -q` of all GPUs",
			len(p.gpus), text.Plural(len(p.gpus), "block", "blocks"), p.inv.DeviceCount, p.attachedLine, p.inv.DeviceCount, where)
	}
	inv := p.inv
	inv.Init = InitSuccess
	inv.Fields = p.seen
	for _, g := range p.gpus {
		inv.Devices = append(inv.Devices, g.build())
	}
	return inv, nil
}

// smiCut shortens s to at most n bytes for an error message.
func smiCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
