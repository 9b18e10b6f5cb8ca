package node

// nvidia-smi nvlink --status: the NVLink states `nvidia-smi -q` does not print, to merge into
// an imported inventory.

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// smiMaxLinks bounds a link number of `nvidia-smi nvlink --status`. NVML_NVLINK_MAX_LINKS
// is 18 in nvml.h (CUDA 12); the bound leaves room for later GPUs while refusing numbers that
// would make an all-inactive GPU's link list absurdly long.
const smiMaxLinks = 256

var (
	smiNvLinkGPU  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^GPU ([0-9]+): (.*) \(UUID: ([^()\s]+)\)$`) })
	smiNvLinkLink = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Link ([0-9]+): (.*)$`) })
	smiNvLinkRate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(\.[0-9]+)? GB/s$`) })
)

// ParseNvidiaSMINvLinkStatus reads the text of `nvidia-smi nvlink --status` (`-s`) and
// returns each GPU's links, keyed by GPU UUID, in link order:
//
//	GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-...)
//		 Link 0: 25 GB/s           active (any "N GB/s" rate)
//		 Link 1: <inactive>        inactive
//
// A GPU followed by NVML's "NVML: Unable to retrieve NVLink information as all links are
// inactive" has NVLink but no link up; nvidia-smi then prints no link lines, so the number
// of links is not in its own output. It is taken from the other GPUs of the same output (the
// highest link number any of them lists, plus one: on one node every GPU of the model has the
// same links, and that is the count NVML would report, all NVML_FEATURE_DISABLED), all
// recorded inactive. Where no GPU of the output lists a link, the GPU gets one link, link 0,
// inactive: the capture proves the GPU has NVLink and that none is up, not how many there
// are. A check reads "every recorded link inactive" either way.
//
// A GPU with no line under it (a GPU without NVLink) maps to nil. Empty input is an empty
// map: nvidia-smi prints nothing on a node without NVLink. A line of any other shape, a link
// before any GPU, a repeated GPU or link, or the all-inactive message after links is an error
// naming the line (*NvidiaSMIError).
func ParseNvidiaSMINvLinkStatus(r io.Reader) (map[string][]NVLink, error) {
	p := smiLinkParser{out: map[string][]NVLink{}, allOff: map[string]bool{}, maxLink: -1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), smiMaxLine)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if s == "" {
			continue
		}
		if !utf8.ValidString(s) {
			return nil, smiErr(n, "not UTF-8 text: not nvidia-smi output")
		}
		if err := p.line(n, s); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, smiErr(n+1, "line longer than %d bytes: not nvidia-smi output", smiMaxLine)
		}
		return nil, fmt.Errorf("read nvidia-smi nvlink --status output: %w", err)
	}
	return p.finish(), nil
}

// smiLinkParser is ParseNvidiaSMINvLinkStatus's state.
type smiLinkParser struct {
	out        map[string][]NVLink // by GPU UUID
	order      []string            // the UUIDs, in output order
	allOff     map[string]bool     // GPUs NVML said have every link inactive
	cur        string              // the GPU the lines are about
	curLine    int                 // its line
	maxLink    int                 // the highest link number listed
	sawMessage bool                // the all-inactive message came for cur
}

// line reads one non-empty line: a GPU, a link of the current GPU, or NVML's all-inactive
// message.
func (p *smiLinkParser) line(n int, s string) error {
	if m := smiNvLinkGPU().FindStringSubmatch(s); m != nil {
		uuid := m[3]
		if _, dup := p.out[uuid]; dup {
			return smiErr(n, "GPU %s (UUID %s) listed twice", m[1], smiCut(uuid, 80))
		}
		p.out[uuid] = nil
		p.order = append(p.order, uuid)
		p.cur, p.curLine, p.sawMessage = uuid, n, false
		return nil
	}
	if m := smiNvLinkLink().FindStringSubmatch(s); m != nil {
		return p.link(n, s, m[1], m[2])
	}
	if strings.HasPrefix(s, "NVML:") && strings.Contains(strings.ToLower(s), "all links are inactive") {
		if p.cur == "" {
			return smiErr(n, "%q before any \"GPU N: NAME (UUID: ...)\" line", smiCut(s, 80))
		}
		if len(p.out[p.cur]) > 0 || p.sawMessage {
			return smiErr(n, "%q after the links of the GPU on line %d", smiCut(s, 80), p.curLine)
		}
		p.allOff[p.cur], p.sawMessage = true, true
		return nil
	}
	return smiErr(n, "%q: want \"GPU N: NAME (UUID: ...)\", \"Link N: RATE\" or \"Link N: <inactive>\"", smiCut(s, 80))
}

// link reads "Link N: RATE" or "Link N: <inactive>" (number and state as matched).
func (p *smiLinkParser) link(n int, s, number, state string) error {
	if p.cur == "" {
		return smiErr(n, "%q before any \"GPU N: NAME (UUID: ...)\" line", smiCut(s, 80))
	}
	if p.sawMessage {
		return smiErr(n, "%q after NVML said all links of the GPU on line %d are inactive", smiCut(s, 80), p.curLine)
	}
	link, err := strconv.Atoi(number)
	if err != nil || link >= smiMaxLinks {
		return smiErr(n, "link number %q: want 0 to %d", smiCut(number, 20), smiMaxLinks-1)
	}
	var active bool
	switch {
	case state == "<inactive>":
	case smiNvLinkRate().MatchString(state):
		active = true
	default:
		return smiErr(n, "link %d %q: want a rate such as \"25 GB/s\" or <inactive>", link, smiCut(state, 80))
	}
	for _, l := range p.out[p.cur] {
		if l.Link == link {
			return smiErr(n, "link %d of the GPU on line %d listed twice", link, p.curLine)
		}
	}
	p.out[p.cur] = append(p.out[p.cur], NVLink{Link: link, Active: active})
	p.maxLink = max(p.maxLink, link)
	return nil
}

// finish gives the GPUs NVML said have every link inactive their links (see
// ParseNvidiaSMINvLinkStatus) and sorts each GPU's links.
func (p *smiLinkParser) finish() map[string][]NVLink {
	count := max(p.maxLink+1, 1)
	for _, uuid := range p.order {
		if p.allOff[uuid] {
			links := make([]NVLink, count)
			for i := range links {
				links[i] = NVLink{Link: i}
			}
			p.out[uuid] = links
			continue
		}
		slices.SortFunc(p.out[uuid], func(a, b NVLink) int { return cmp.Compare(a.Link, b.Link) })
	}
	return p.out
}

// MergeNVLinks returns a copy of inv whose GPUs carry the links of their UUID in links (from
// ParseNvidiaSMINvLinkStatus). A GPU links does not name keeps its NVLinks. A UUID in links
// that no GPU of inv has is an error: the two captures are not of the same node.
func MergeNVLinks(inv GPUInventory, links map[string][]NVLink) (GPUInventory, error) {
	out := inv.Clone()
	seen := map[string]bool{}
	for i := range out.Devices {
		g := &out.Devices[i]
		if l, ok := links[g.UUID]; ok && g.UUID != "" {
			g.NVLinks = slices.Clone(l)
			seen[g.UUID] = true
		}
	}
	var missing []string
	for uuid := range links {
		if !seen[uuid] {
			missing = append(missing, uuid)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		more := ""
		if len(missing) > 3 {
			more = fmt.Sprintf(" (+%d more)", len(missing)-3)
			missing = missing[:3]
		}
		return GPUInventory{}, fmt.Errorf("nvlink status names GPU %s%s, which the nvidia-smi -q capture does not list: not the same node", strings.Join(missing, ", "), more)
	}
	if out.Fields != 0 {
		out.Fields |= GPUNVLinks
	}
	return out, nil
}
