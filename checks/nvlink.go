package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idNVLink = "nvlink"

// The ways nvlink fails: its rows of the remedy table (Faults).
const (
	faultNVLinkDown fault = "nvlink/inactive"
)

// nvLink checks that every NVLink of every GPU is active (nvmlDeviceGetNvLinkState), and that
// a GPU reports as many links as its model has (builtinNVLinks, with [checks.nvlink]
// expected_links tried first). A model the table does not know is judged only on the links
// NVML reports, and only where at least one of them is active: a card whose every link is
// inactive may simply have no NVLink bridge fitted. A model with 0 in the table (PCIe cards,
// whose NVLink bridges are optional) is not judged at all.
type nvLink struct{}

func (nvLink) ID() string { return idNVLink }

func (nvLink) Description() string {
	return "every NVLink of every GPU is active, and each GPU reports as many NVLinks as its model has (expected_links)"
}

// GPUFields implements gpuFactsUser: each GPU's model (the link table), bus id and link states.
func (nvLink) GPUFields() node.GPUFields {
	return node.GPUName | node.GPUPCIBusID | node.GPUNVLinks
}

// nvLinkConfig is [checks.nvlink].
type nvLinkConfig struct {
	config.CheckCommon
	// ExpectedLinks adds rules to the built-in table of how many NVLinks a GPU model has,
	// each "words=N" with the words of gpu_models rules: "a100 sxm4=12", "h100 pcie=0" (0:
	// NVLink optional, never judged). The rules given here are tried first, in order.
	ExpectedLinks []string `toml:"expected_links"`
	// Exclude lists GPUs, by PCI address as sysfs writes it ("0000:3b:00.0"), or single
	// links of a GPU ("0000:3b:00.0/3"), never judged.
	Exclude []string `toml:"exclude"`
}

func (nvLink) Section() config.Section {
	return &nvLinkConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (nl *nvLinkConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	for _, r := range nl.ExpectedLinks {
		if _, _, err := parseNVLinkRule(r); err != nil {
			errs = append(errs, config.Problem{Key: "expected_links", Msg: ": " + err.Error()})
		}
	}
	for _, x := range nl.Exclude {
		if _, _, err := parseNVLinkExclude(x); err != nil {
			errs = append(errs, config.Problem{Key: "exclude", Msg: ": " + err.Error()})
		}
	}
	return errs
}

// maxNVLinks is the most NVLinks one GPU has: NVML_NVLINK_MAX_LINKS in nvml.h (18, H100
// and Blackwell).
const maxNVLinks = 18

// parseNVLinkRule reads one expected_links rule, "words=N": "a100 sxm4=12" gives the words
// a100 sxm4 and 12 links. N is from 0 (NVLink optional: not judged) to maxNVLinks.
func parseNVLinkRule(s string) (words []string, links int, err error) {
	pat, n, ok := strings.Cut(s, "=")
	if !ok {
		return nil, 0, fmt.Errorf("%q is not a rule: write words of the NVML name, '=' and the number of NVLinks, such as \"a100 sxm4=12\", or \"h100 pcie=0\" where NVLink is optional", s)
	}
	words = modelWords(pat)
	if len(words) == 0 {
		return nil, 0, fmt.Errorf("%q names no words of an NVML name before '='", s)
	}
	links, err = strconv.Atoi(strings.TrimSpace(n))
	if err != nil || links < 0 || links > maxNVLinks {
		return nil, 0, fmt.Errorf("%q: the number of NVLinks must be from 0 to %d (0: NVLink optional, not judged)", s, maxNVLinks)
	}
	return words, links, nil
}

// parseNVLinkExclude reads one exclude entry: a PCI address as sysfs writes it
// ("0000:3b:00.0"), link -1, or an address and a link ("0000:3b:00.0/3").
func parseNVLinkExclude(s string) (addr string, link int, err error) {
	addr, l, hasLink := strings.Cut(s, "/")
	if !validPCIAddress(addr) {
		return "", 0, fmt.Errorf("%q: %q is not a PCI address; write it as sysfs does, such as \"0000:3b:00.0\", or \"0000:3b:00.0/3\" for its link 3", s, addr)
	}
	if !hasLink {
		return addr, -1, nil
	}
	link, err = strconv.Atoi(l)
	if err != nil || link < 0 || link >= maxNVLinks || strconv.Itoa(link) != l {
		return "", 0, fmt.Errorf("%q: the link after '/' must be a number from 0 to %d, as nvidia-smi nvlink -s numbers them", s, maxNVLinks-1)
	}
	return addr, link, nil
}

// builtinNVLinks is the built-in table of NVLinks per GPU model, in parseNVLinkRule's
// syntax ("words=N", words matched as gpu_models matches them); the first rule that matches
// an NVML name wins. Sources: NVIDIA's NVLink page (https://www.nvidia.com/en-us/data-center/nvlink/):
// an A100 "supports up to twelve third-generation NVLink connections" (SXM4, NVML names
// "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"; the corpus capture
// gpud-nvlink-status-a100.txt shows Link 0 to 11 on each), a Blackwell GPU "up to 18 NVLink
// 100 GB/s connections" ("NVIDIA B200"); the Hopper page
// (https://www.nvidia.com/en-us/technologies/hopper-architecture/): fourth-generation NVLink
// at 900 GB/s per GPU, 18 links of 50 GB/s, on H100 SXM5 ("NVIDIA H100 80GB HBM3") and on
// H200, the same GH100 die with HBM3e ("NVIDIA H200").
//
// 0 means NVLink is optional and the GPU is not judged: PCIe cards ("NVIDIA H100 PCIe",
// "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe"), NVL cards paired by bridges ("NVIDIA
// H100 NVL", "NVIDIA H200 NVL"), the bridge-capable A40, A30 and workstation and consumer
// boards (GA102 "utilize[s] ... four x4 links", NVIDIA's GA102 whitepaper), which NVML shows
// with every link inactive when no bridge is fitted; and GH200, whose GPU NVLinks are wired
// only in multi-node NVLink systems. These rules come first so that "h200" does not take
// "NVIDIA H200 NVL".
//
// Left out on purpose, so judged only on the links NVML reports: V100 and P100 SXM2 (6 and 4
// links, but a VM given part of a hybrid cube mesh sees links to GPUs it does not have
// inactive), A800, H800 and H20 (fewer links than their siblings; no NVIDIA source at hand),
// GB200 (NVL4 and NVL72 wire them differently).
var builtinNVLinks = []string{
	"pcie=0", "nvl=0", "geforce=0", "quadro=0", "titan=0", "rtx=0", "a40=0", "a30=0", "gh200=0",
	"a100 sxm4=12",
	"h100 80gb hbm3=18", "h100 sxm5=18", "h200=18",
	"b200=18",
}

// nvlinkRule is one parsed rule of the table.
type nvlinkRule struct {
	words []string
	links int
	text  string // as written, for messages
}

type nvlinkTable []nvlinkRule

func newNVLinkTable(extra []string) (nvlinkTable, error) {
	var t nvlinkTable
	for _, s := range append(slices.Clip(extra), builtinNVLinks...) {
		w, n, err := parseNVLinkRule(s)
		if err != nil {
			return nil, fmt.Errorf("expected_links: %w", err)
		}
		t = append(t, nvlinkRule{words: w, links: n, text: s})
	}
	return t, nil
}

// expected is the rule of the first match for an NVML name; ok is false when none matches.
func (t nvlinkTable) expected(name string) (nvlinkRule, bool) {
	words := modelWords(name)
	for _, r := range t {
		if containsWords(words, r.words) {
			return r, true
		}
	}
	return nvlinkRule{}, false
}

// nvlinkExclusions holds [checks.nvlink] exclude: whole GPUs, and single links of a GPU, by
// PCI address as sysfs writes it.
type nvlinkExclusions struct {
	gpus  map[string]bool
	links map[string][]int
}

func newNVLinkExclusions(list []string) (nvlinkExclusions, error) {
	x := nvlinkExclusions{gpus: map[string]bool{}, links: map[string][]int{}}
	for _, s := range list {
		addr, link, err := parseNVLinkExclude(s)
		if err != nil {
			return x, fmt.Errorf("exclude: %w", err)
		}
		if link < 0 {
			x.gpus[addr] = true
		} else if !slices.Contains(x.links[addr], link) {
			x.links[addr] = append(x.links[addr], link)
		}
	}
	return x, nil
}

func (nvLink) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*nvLinkConfig](env.Config, idNVLink)
	table, err := newNVLinkTable(cfg.ExpectedLinks)
	if err != nil {
		return Result{Status: StatusError, Summary: text.OneLine(err.Error(), 160), Err: err}
	}
	excl, err := newNVLinkExclusions(cfg.Exclude)
	if err != nil {
		return Result{Status: StatusError, Summary: text.OneLine(err.Error(), 160), Err: err}
	}
	inv, res, ok := nvmlGPUs(ctx, env, "NVLinks")
	if !ok {
		return res
	}
	return judgeNVLinks(inv.Devices, table, excl)
}

// The kinds of verdict on one GPU's NVLinks.
const (
	nvlJudged   = iota // its links were judged (ok or fail)
	nvlExcluded        // the whole GPU is excluded by config
	nvlLost            // NVML lost the GPU: its links not read
	nvlUnread          // its model has NVLinks but NVML reported none: not read
	nvlNone            // no NVLink
	nvlOptional        // NVLink only through optional bridges (expected_links 0)
	nvlAllDown         // a model the table does not know, every link inactive
)

// nvlinkGPU is the verdict on one GPU's NVLinks.
type nvlinkGPU struct {
	kind     int
	detail   Detail
	name     string // the GPU's name, for the summary
	up, seen int    // links active, and links judged
	expect   string // "NVIDIA H100 80GB HBM3: 18", for a model the table knows
}

// judgeNVLinks judges the NVLinks of every GPU NVML listed.
func judgeNVLinks(gpus []node.GPU, table nvlinkTable, excl nvlinkExclusions) Result {
	res := Result{}
	var judged []nvlinkGPU
	for _, g := range gpus {
		v := judgeNVLinkGPU(g, table, excl)
		res.Details = append(res.Details, v.detail)
		judged = append(judged, v)
	}
	return nvlinkSummary(res, judged)
}

// judgeNVLinkGPU judges one GPU: every link it reports active, and as many links as its
// model has where the table knows the model.
func judgeNVLinkGPU(g node.GPU, table nvlinkTable, excl nvlinkExclusions) nvlinkGPU {
	addr := sysfsBusID(g.PCIBusID)
	label := gpuLabel(g.Index, addr)
	name := orUnknownName(g.Name)
	subject := gpuSubject(g, addr)
	v := nvlinkGPU{name: name, detail: Detail{Device: label, Subject: subject}}
	if excl.gpus[addr] {
		v.kind, v.detail.Status, v.detail.Message = nvlExcluded, StatusSkip, "excluded by config (exclude)"
		return v
	}
	if g.Error != "" {
		v.kind = nvlLost
		v.detail = Detail{Device: label, Status: StatusError, Message: "NVML: " + g.Error + ": NVLinks not read", Observed: g.Error, Expected: "usable in NVML",
			Subject: subject}
		return v
	}
	rule, known := table.expected(g.Name)
	skipLinks := excl.links[addr]
	var links, inactive []int
	for _, l := range g.NVLinks {
		if slices.Contains(skipLinks, l.Link) {
			continue
		}
		links = append(links, l.Link)
		if !l.Active {
			inactive = append(inactive, l.Link)
		}
	}
	up := len(links) - len(inactive)
	v.detail.Observed = fmt.Sprintf("%d reported, %d active", len(links), up)
	if len(skipLinks) > 0 {
		v.detail.Observed += fmt.Sprintf(" (%s excluded)", countNoun(len(skipLinks), "link", "links"))
	}
	switch {
	case len(g.NVLinks) == 0 && known && rule.links > 0:
		// NVML answers a link it cannot bring up as inactive; no answer at all is a reading
		// that did not happen, not a GPU without its links.
		v.kind, v.detail.Status, v.detail.Expected = nvlUnread, StatusError, fmt.Sprintf("%d active NVLinks", rule.links)
		v.detail.Message = fmt.Sprintf("NVLink state not reported by NVML (%s has %d NVLinks): not judged", name, rule.links)
		return v
	case len(g.NVLinks) == 0 && (!known || rule.links == 0):
		v.kind, v.detail.Status, v.detail.Message = nvlNone, StatusSkip, "no NVLink"
		return v
	case known && rule.links == 0:
		v.kind, v.detail.Status, v.detail.Expected = nvlOptional, StatusSkip, "not judged"
		v.detail.Message = fmt.Sprintf("%s has NVLink only through optional bridges (expected_links %q): not judged", name, rule.text)
		return v
	case !known && len(links) == 0:
		v.kind, v.detail.Status, v.detail.Message = nvlNone, StatusSkip, "every NVLink excluded by config"
		return v
	case !known && up == 0:
		v.kind, v.detail.Status, v.detail.Expected = nvlAllDown, StatusSkip, "not judged"
		v.detail.Message = fmt.Sprintf("all %d NVLinks inactive, but %s is not in expected_links, so not judged (no NVLink bridge fitted?): add a rule to judge it",
			len(links), name)
		return v
	}
	v.kind, v.up, v.seen = nvlJudged, up, len(links)
	want, wantText := len(links), "every reported NVLink active"
	if known {
		want = max(rule.links-len(skipLinks), 0)
		wantText = fmt.Sprintf("%d active NVLinks", want)
		v.expect = fmt.Sprintf("%s: %d", name, rule.links)
	}
	v.detail.Status, v.detail.Expected = StatusOK, wantText
	v.detail.Message = fmt.Sprintf("%d of %d NVLinks active", up, len(links))
	if probs := nvlinkProblems(links, inactive, want); len(probs) > 0 {
		failDetail(&v.detail, faultNVLinkDown)
		v.detail.Message = strings.Join(probs, ", ")
	}
	return v
}

// nvlinkProblems says what is wrong with a GPU's links: fewer than want reported, and which
// are inactive.
func nvlinkProblems(links, inactive []int, want int) []string {
	var probs []string
	if len(links) < want {
		probs = append(probs, fmt.Sprintf("%d of %d NVLinks reported", len(links), want))
	}
	switch {
	case len(inactive) == 0:
	case len(inactive) == len(links) && len(probs) > 0:
		probs = append(probs, fmt.Sprintf("all %d inactive", len(links)))
	case len(inactive) == len(links):
		probs = append(probs, fmt.Sprintf("all %d NVLinks inactive", len(links)))
	case len(inactive) == 1:
		probs = append(probs, fmt.Sprintf("NVLink %d inactive", inactive[0]))
	default:
		probs = append(probs, "NVLinks "+listSome(linkRanges(inactive), 6)+" inactive")
	}
	return probs
}

// nvlinkSummary makes the result from the GPUs' verdicts: a failed link first, then a GPU
// whose links could not be read, then why nothing was judged.
func nvlinkSummary(res Result, gpus []nvlinkGPU) Result {
	var fails, unread []Detail
	var optionalNames, downNames, expect []string
	count := map[int]int{}
	var active, reported int
	for _, v := range gpus {
		count[v.kind]++
		switch v.kind {
		case nvlJudged:
			active, reported = active+v.up, reported+v.seen
			if v.detail.Status == StatusFail {
				fails = append(fails, v.detail)
			}
			if v.expect != "" && !slices.Contains(expect, v.expect) {
				expect = append(expect, v.expect)
			}
		case nvlLost, nvlUnread:
			unread = append(unread, v.detail)
		case nvlOptional:
			if !slices.Contains(optionalNames, v.name) {
				optionalNames = append(optionalNames, v.name)
			}
		case nvlAllDown:
			if !slices.Contains(downNames, v.name) {
				downNames = append(downNames, v.name)
			}
		}
	}
	judged := count[nvlJudged]
	res.Observed = fmt.Sprintf("%d of %d NVLinks active on %s judged", active, reported, countNoun(judged, "GPU", "GPUs"))
	res.Expected = "every NVLink active"
	if len(expect) > 0 {
		res.Expected += "; NVLinks per GPU: " + strings.Join(expect, ", ")
	}
	switch {
	case len(fails) > 0:
		res.Status = StatusFail
		res.Summary, res.Subject = fails[0].Device+": "+fails[0].Message+moreSuffix(len(fails)-1), fails[0].Subject
	case len(unread) > 0:
		res.Status = StatusError
		msg := strings.TrimPrefix(unread[0].Message, "NVML: ")
		res.Summary, res.Subject = unread[0].Device+": "+msg+moreSuffix(len(unread)-1), unread[0].Subject
		res.Err = errors.New(res.Summary)
	case judged == 0 && count[nvlOptional] > 0:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no GPU whose NVLinks are judged: %s %s NVLink only through optional bridges (expected_links 0)",
			listSome(optionalNames, 2), text.Plural(len(optionalNames), "has", "have"))
	case judged == 0 && count[nvlAllDown] > 0:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no GPU whose NVLinks are judged: every NVLink of %s inactive (no bridge?), and expected_links does not name the model",
			listSome(downNames, 2))
	case judged == 0 && count[nvlExcluded] > 0:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("no GPU has NVLink (%d excluded by config)", count[nvlExcluded])
	case judged == 0:
		res.Status = StatusSkip
		res.Summary = "no GPU has NVLink"
	default:
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("all %d NVLinks of %s active", active, countNoun(judged, "GPU", "GPUs"))
		if len(expect) > 0 {
			res.Summary += " (" + strings.Join(expect, ", ") + " per GPU)"
		}
	}
	res.Summary = text.OneLine(res.Summary, 160)
	return res
}

// linkRanges writes sorted link numbers as runs: [0 1 2 5 7 8] -> "0-2", "5", "7-8".
func linkRanges(links []int) []string {
	var out []string
	for i := 0; i < len(links); {
		j := i
		for j+1 < len(links) && links[j+1] == links[j]+1 {
			j++
		}
		if j == i {
			out = append(out, strconv.Itoa(links[i]))
		} else {
			out = append(out, strconv.Itoa(links[i])+"-"+strconv.Itoa(links[j]))
		}
		i = j + 1
	}
	return out
}

// Faults declares the check's own rows of the remedy table.
func (nvLink) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultNVLinkDown, "an NVLink inactive, or fewer NVLinks than the GPU's model has", RemedyResetGPU,
				"XID 74 in the catalog: \"A GPU reset or node reboot is needed to clear this error\", and a vendor case only if that fails; DCGM_FR_NVLINK_DOWN_NEXT: reset the GPU, rerun diagnostics"},
		},
	}
}

// Explain is what `nodecheck explain nvlink` says.
func (nvLink) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML, for each GPU: its name, and the state (active or not) of each NVLink it reports (nvmlDeviceGetNvLinkState).",
			"The PCI bus, only when NVML is unavailable or lists no GPU: the NVIDIA GPUs on it, to tell a CPU node from a broken one.",
		},
		Passes: "Every NVLink of every GPU judged is active, and each GPU whose model is in the table reports as many NVLinks as the model has: 12 for A100 SXM4, 18 for H100 SXM5 (\"NVIDIA H100 80GB HBM3\"), H200 and B200, or what expected_links says. A model the table does not know is judged only on the links NVML reports.",
		Fails:  "A GPU reports an NVLink inactive (\"NVLink 3 inactive\", \"all 12 NVLinks inactive\", as after a failed link training, a GPU or baseboard fault, or Fabric Manager not set up), or reports fewer NVLinks than its model has (\"3 of 12 NVLinks reported\"). NCCL then falls back to slower paths or fails, and multi-GPU jobs slow down or hang.",
		Skips:  "No GPU has NVLink; or the only GPUs with NVLink are ones whose links are optional (PCIe and NVL cards with bridges, A40, A30, workstation boards, GH200: expected_links 0), of a model the table does not know with every link inactive (no bridge fitted), or excluded; or NVML is unavailable or lists no GPU on a node without NVIDIA GPUs on the PCI bus.",
		Errors: "NVML is unavailable, or lists no GPU, on a node with NVIDIA GPUs on the PCI bus; NVML lost a GPU (ERROR_GPU_IS_LOST) so that its NVLinks cannot be read (gpu_count fails the node for that); NVML reported no NVLink state at all for a GPU whose model has NVLinks (it reports a link that is down as inactive, so no answer is a reading that did not happen); or expected_links or exclude cannot be read.",
		Keys: map[string]string{
			"expected_links": `Rules "words=N" for how many NVLinks a GPU model has, tried before the built-in ones, in order: the words must appear one after another in the NVML name, as in gpu_models ("a100 sxm4=12" matches "NVIDIA A100-SXM4-80GB"). N = 0 means NVLink is optional there (bridges): the GPU is not judged. The built-in table: pcie, nvl, geforce, quadro, titan, rtx, a40, a30 and gh200 = 0; a100 sxm4 = 12; h100 80gb hbm3, h100 sxm5, h200 and b200 = 18.`,
			"exclude":        `GPUs never judged, by PCI address as sysfs writes it ("0000:3b:00.0"), or one link of a GPU ("0000:3b:00.0/3"), which then counts neither as inactive nor as missing: a link known dead while the GPU waits for replacement, say.`,
		},
		Fix: []string{
			"nvidia-smi nvlink -s -i N: each link's speed, or <inactive>; nvidia-smi topo -m shows which GPU pairs NVLink joins (NV12 on HGX A100, NV18 on HGX H100).",
			"On NVSwitch systems (HGX, DGX), check Fabric Manager first (nodecheck explain fabric_manager): without it the links do not come up. systemctl status nvidia-fabricmanager, and its log.",
			"nvidia-smi nvlink -e -i N shows the links' error counters; dmesg | grep -i xid for XID 74 (NVLink error).",
			"Reset the GPU (nvidia-smi -r -i N) or reboot the node, which retrains the links. If a link stays inactive, run dcgmi diag -r 3 and have the GPU or the baseboard replaced (RMA, with nvidia-bug-report.sh).",
			"A PCIe card with an optional NVLink bridge is not judged unless expected_links says how many links it has with its bridges fitted (\"h100 pcie=N\", N as nvidia-smi nvlink -s shows on a good node); a model missing from the table is added the same way.",
		},
	}
}
