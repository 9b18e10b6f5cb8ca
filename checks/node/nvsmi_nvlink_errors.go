package node

// nvidia-smi nvlink -e (--errorcounters): the NVLink error counters `nvidia-smi -q` does not
// print, to merge into an imported inventory.

import (
	"bufio"
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

var smiNvLinkCounter = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Link ([0-9]+): ([A-Za-z][A-Za-z ]*[A-Za-z]): ([0-9]+)$`)
})

// smiNVLinkCounters are the counters of `nvidia-smi nvlink -e` nodecheck records, by the
// words nvidia-smi prints, with the NVLinkErrors counter each is. nvidia-smi's "CRC Errors" is
// the flow-control CRC counter (NVML_NVLINK_ERROR_DL_CRC_FLIT: the per-link counters Hopper
// reports are replay, recovery, flow-control CRC and ECC, DataDog/datadog-agent#55966);
// other counters (Blackwell's "Rx Errors", "Malformed packet Errors", ...) are skipped.
var smiNVLinkCounters = map[string]string{
	"Replay Errors":   "replay",
	"Recovery Errors": "recovery",
	"CRC Errors":      "crc_flit",
	"CRC Flit Errors": "crc_flit",
	"CRC FLIT Errors": "crc_flit",
	"CRC Data Errors": "crc_data",
	"Data CRC Errors": "crc_data",
	"Flit CRC Errors": "crc_flit",
}

// SMILinkCounters are one GPU's counters of `nvidia-smi nvlink -e`, by link and counter name
// ("replay", "recovery", "crc_flit", "crc_data").
type SMILinkCounters map[int]map[string]uint64

// ParseNvidiaSMINvLinkErrors reads the text of `nvidia-smi nvlink -e` and returns each GPU's
// counters, keyed by GPU UUID:
//
//	GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
//		 Link 0: Replay Errors: 0
//		 Link 0: Recovery Errors: 0
//		 Link 0: CRC Errors: 0
//
// Counters it does not record are skipped; a line of any other shape, a link before any GPU,
// a repeated GPU or counter is an error naming the line (*NvidiaSMIError).
func ParseNvidiaSMINvLinkErrors(r io.Reader) (map[string]SMILinkCounters, error) {
	out := map[string]SMILinkCounters{}
	cur, curLine := "", 0
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
		if m := smiNvLinkGPU().FindStringSubmatch(s); m != nil {
			if _, dup := out[m[3]]; dup {
				return nil, smiErr(n, "GPU %s (UUID %s) listed twice", m[1], smiCut(m[3], 80))
			}
			cur, curLine = m[3], n
			out[cur] = SMILinkCounters{}
			continue
		}
		m := smiNvLinkCounter().FindStringSubmatch(s)
		if m == nil {
			return nil, smiErr(n, "%q: want \"GPU N: NAME (UUID: ...)\" or \"Link N: NAME Errors: COUNT\"", smiCut(s, 80))
		}
		if cur == "" {
			return nil, smiErr(n, "%q before any \"GPU N: NAME (UUID: ...)\" line", smiCut(s, 80))
		}
		link, err := strconv.Atoi(m[1])
		if err != nil || link >= smiMaxLinks {
			return nil, smiErr(n, "link number %q: want 0 to %d", smiCut(m[1], 20), smiMaxLinks-1)
		}
		name := smiNVLinkCounters[m[2]]
		if name == "" {
			continue
		}
		v, err := strconv.ParseUint(m[3], 10, 64)
		if err != nil {
			return nil, smiErr(n, "link %d %s %q: want a count", link, m[2], smiCut(m[3], 30))
		}
		if out[cur][link] == nil {
			out[cur][link] = map[string]uint64{}
		}
		if _, dup := out[cur][link][name]; dup {
			return nil, smiErr(n, "link %d %s of the GPU on line %d listed twice", link, m[2], curLine)
		}
		out[cur][link][name] = v
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, smiErr(n+1, "line longer than %d bytes: not nvidia-smi output", smiMaxLine)
		}
		return nil, fmt.Errorf("read nvidia-smi nvlink -e output: %w", err)
	}
	return out, nil
}

// MergeNVLinkErrors returns a copy of inv whose GPUs carry the NVLink error counters of their
// UUID in counters (from ParseNvidiaSMINvLinkErrors), summed as NVML's reading sums them: over
// the GPU's active links where its NVLinks are known (nvidia-smi nvlink --status merged
// first), else over every link listed. A counter some summed link does not list is Unread. A
// GPU without a listed link keeps no NVLinkErrors. A UUID no GPU of inv has is an error.
func MergeNVLinkErrors(inv GPUInventory, counters map[string]SMILinkCounters) (GPUInventory, error) {
	out := inv.Clone()
	seen := map[string]bool{}
	for i := range out.Devices {
		g := &out.Devices[i]
		c, ok := counters[g.UUID]
		if !ok || g.UUID == "" {
			continue
		}
		seen[g.UUID] = true
		g.NVLinkErrors = sumLinkCounters(c, g.NVLinks)
	}
	var missing []string
	for uuid := range counters {
		if !seen[uuid] {
			missing = append(missing, uuid)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return GPUInventory{}, fmt.Errorf("nvlink error counters name GPU %s, which the nvidia-smi -q capture does not list: not the same node", strings.Join(missing, ", "))
	}
	if out.Fields != 0 {
		out.Fields |= GPUNVLinkErrors
	}
	return out, nil
}

// sumLinkCounters sums c over the links to count: the active ones of links, or all of c.
func sumLinkCounters(c SMILinkCounters, links []NVLink) *NVLinkErrors {
	var use []int
	if links != nil {
		for _, l := range links {
			if l.Active {
				use = append(use, l.Link)
			}
		}
	} else {
		for l := range c {
			use = append(use, l)
		}
		slices.Sort(use)
	}
	if len(use) == 0 {
		return nil
	}
	e := &NVLinkErrors{Links: len(use)}
	dst := map[string]*uint64{"crc_flit": &e.CRCFlit, "crc_data": &e.CRCData, "replay": &e.Replay, "recovery": &e.Recovery}
	for _, name := range []string{"crc_flit", "crc_data", "replay", "recovery"} {
		var sum uint64
		for _, l := range use {
			v, ok := c[l][name]
			if !ok {
				e.Unread = append(e.Unread, name)
				sum = 0
				break
			}
			sum += v
		}
		*dst[name] = sum
	}
	return e
}
