package checks

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// nvlinks is n links, all active but those listed.
func nvlinks(n int, inactive ...int) []node.NVLink {
	out := make([]node.NVLink, n)
	for i := range out {
		out[i] = node.NVLink{Link: i, Active: true}
	}
	for _, i := range inactive {
		out[i].Active = false
	}
	return out
}

// a100NVLinkNode is the NVLink status capture of an 8x A100-SXM4-80GB node (corpus
// nvsmi/gpud-nvlink-status-a100.txt: GPU 0 to 7, each "Link 0: 25 GB/s" to "Link 11: 25
// GB/s"). nvidia-smi nvlink -s prints no bus ids: these are an Azure ND A100 v4's, one PCI
// domain per GPU (00000001:00:00.0 to 00000008:00:00.0, as the azurehpc captures show them).
func a100NVLinkNode() node.GPUInventory {
	inv := node.GPUInventory{Init: "SUCCESS", DriverVersion: "535.86.10", DeviceCount: 8}
	for i := range 8 {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, MinorNumber: i, Name: nameA100,
			PCIBusID: fmt.Sprintf("%08X:00:00.0", i+1), NVLinks: nvlinks(12)})
	}
	return inv
}

// azureNVLinkDown is that node with GPU 6 as corpus nvsmi/azurehpc-bad_nvlink_status.txt shows
// it: "GPU 6: NVIDIA A100-SXM4-80GB ... NVML: Unable to retrieve NVLink information as all
// links are inactive". NVML answers each link's state; nvidia-smi prints that line when
// every one is inactive.
func azureNVLinkDown() node.GPUInventory {
	return changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nvlinks(12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11) })
}

// h100NVLinkNode is h100NVML with 18 active NVLinks per GPU. Invented: the H100 captures
// (nvidia-smi -q) print no NVLink state; 18 is what H100 SXM5 has.
func h100NVLinkNode() node.GPUInventory {
	inv := h100NVML()
	for i := range inv.Devices {
		inv.Devices[i].NVLinks = nvlinks(18)
	}
	return inv
}

// renamed is inv with every GPU named name and given n links, all inactive but those in up.
func renamed(inv node.GPUInventory, name string, n int, up ...int) node.GPUInventory {
	inv = inv.Clone()
	for i := range inv.Devices {
		inv.Devices[i].Name = name
		var down []int
		for l := range n {
			isUp := false
			for _, u := range up {
				isUp = isUp || u == l
			}
			if !isUp {
				down = append(down, l)
			}
		}
		inv.Devices[i].NVLinks = nvlinks(n, down...)
	}
	return inv
}

func TestNVLink(t *testing.T) {
	const v100 = "Tesla V100-SXM2-32GB"
	allUp := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	tests := []struct {
		name        string
		gpus        node.GPUInventory
		pci         []node.PCIDevice
		cfg         func(*nvLinkConfig)
		wantStatus  Status
		wantSummary string
	}{
		// Source: gpud-nvlink-status-a100.txt, 12 links up on each of 8 A100-SXM4-80GB.
		{name: "A100 healthy", gpus: a100NVLinkNode(), wantStatus: StatusOK,
			wantSummary: "all 96 NVLinks of 8 GPUs active (NVIDIA A100-SXM4-80GB: 12 per GPU)"},
		// Source: azurehpc-bad_nvlink_status.txt: GPU 6 with every link inactive.
		{name: "all links of a GPU inactive", gpus: azureNVLinkDown(), wantStatus: StatusFail,
			wantSummary: "gpu 6 (0007:00:00.0): all 12 NVLinks inactive"},
		// Source: azurehpc-bad_nvlink_status.txt, read as NVML reporting no link at all. NVML
		// answers a link that is down as inactive (the capture's "all links are inactive"
		// becomes 12 inactive links); no answer is a reading that did not happen:
		// error, naming what was missing.
		{name: "links of an A100 SXM4 not reported", gpus: changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nil }),
			wantStatus: StatusError, wantSummary: "gpu 6 (0007:00:00.0): NVLink state not reported by NVML (NVIDIA A100-SXM4-80GB has 12 NVLinks): not judged"},
		{name: "links not reported on one GPU, inactive on another: fail", gpus: changeGPU(changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nil }), 2, func(g *node.GPU) { g.NVLinks = nvlinks(12, 5) }),
			wantStatus: StatusFail, wantSummary: "gpu 2 (0003:00:00.0): NVLink 5 inactive"},
		// Invented: NVML answered for 3 of the 12 links: the others are missing, a fail.
		{name: "some links of an A100 SXM4 not reported", gpus: changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nvlinks(3) }),
			wantStatus: StatusFail, wantSummary: "gpu 6 (0007:00:00.0): 3 of 12 NVLinks reported"},
		// Invented: the A100 capture with link 3 of GPU 6 down.
		{name: "one link inactive", gpus: changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nvlinks(12, 3) }),
			wantStatus: StatusFail, wantSummary: "gpu 6 (0007:00:00.0): NVLink 3 inactive"},
		// Invented: links 3, 7, 8 and 9 of GPU 6 down.
		{name: "several links inactive", gpus: changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nvlinks(12, 3, 7, 8, 9) }),
			wantStatus: StatusFail, wantSummary: "gpu 6 (0007:00:00.0): NVLinks 3, 7-9 inactive"},
		// Invented: links 3 and 7 of GPU 6 down, and link 0 of GPU 2: the summary counts GPUs.
		{name: "several GPUs with inactive links", gpus: changeGPU(changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) { g.NVLinks = nvlinks(12, 3, 7) }),
			2, func(g *node.GPU) { g.NVLinks = nvlinks(12, 0) }),
			wantStatus: StatusFail, wantSummary: "gpu 2 (0003:00:00.0): NVLink 0 inactive (+1 more)"},
		// Invented: GPU 1 reports only links 0 to 9, link 9 down.
		{name: "fewer links reported, one inactive", gpus: changeGPU(a100NVLinkNode(), 1, func(g *node.GPU) { g.NVLinks = nvlinks(10, 9) }),
			wantStatus: StatusFail, wantSummary: "gpu 1 (0002:00:00.0): 10 of 12 NVLinks reported, NVLink 9 inactive"},
		// Invented: 10 links reported, all down.
		{name: "fewer links reported, all inactive", gpus: changeGPU(a100NVLinkNode(), 1, func(g *node.GPU) { g.NVLinks = nvlinks(10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9) }),
			wantStatus: StatusFail, wantSummary: "gpu 1 (0002:00:00.0): 10 of 12 NVLinks reported, all 10 inactive"},
		// Invented (see h100NVLinkNode).
		{name: "H100 healthy", gpus: h100NVLinkNode(), wantStatus: StatusOK,
			wantSummary: "all 144 NVLinks of 8 GPUs active (NVIDIA H100 80GB HBM3: 18 per GPU)"},
		{name: "H100 with 12 links reported", gpus: changeGPU(h100NVLinkNode(), 7, func(g *node.GPU) { g.NVLinks = nvlinks(12) }),
			wantStatus: StatusFail, wantSummary: "gpu 7 (0000:db:00.0): 12 of 18 NVLinks reported"},
		// Invented: H100 PCIe cards without bridges, every link inactive: not judged.
		{name: "PCIe cards: optional bridges not judged", gpus: renamed(h100NVLinkNode(), "NVIDIA H100 PCIe", 12), wantStatus: StatusSkip,
			wantSummary: "no GPU whose NVLinks are judged: NVIDIA H100 PCIe has NVLink only through optional bridges (expected_links 0)"},
		{name: "PCIe cards judged by expected_links", gpus: renamed(h100NVLinkNode(), "NVIDIA H100 PCIe", 12, 0, 1, 2, 3),
			cfg:        func(c *nvLinkConfig) { c.ExpectedLinks = []string{"h100 pcie=12"} },
			wantStatus: StatusFail, wantSummary: "gpu 0 (0000:19:00.0): NVLinks 4-11 inactive (+7 more)"},
		{name: "H200 NVL is not an H200 SXM", gpus: renamed(h100NVLinkNode(), "NVIDIA H200 NVL", 18), wantStatus: StatusSkip,
			wantSummary: "no GPU whose NVLinks are judged: NVIDIA H200 NVL has NVLink only through optional bridges (expected_links 0)"},
		// Invented: a model the table does not know, every link down (no bridge): not judged.
		{name: "unknown model, all links inactive", gpus: renamed(h100NVLinkNode(), v100, 6), wantStatus: StatusSkip,
			wantSummary: "no GPU whose NVLinks are judged: every NVLink of Tesla V100-SXM2-32GB inactive (no bridge?), and expected_links does not name the model"},
		// Invented: the same model with one link of six down: judged on what NVML reports.
		{name: "unknown model, one link inactive", gpus: renamed(h100NVLinkNode(), v100, 6, 0, 1, 3, 4, 5), wantStatus: StatusFail,
			wantSummary: "gpu 0 (0000:19:00.0): NVLink 2 inactive (+7 more)"},
		{name: "unknown model, all links active", gpus: renamed(h100NVLinkNode(), v100, 6, allUp(6)...), wantStatus: StatusOK,
			wantSummary: "all 48 NVLinks of 8 GPUs active"},
		// Source: azurehpc-bad_nvlink_status.txt with GPU 6 excluded by config.
		{name: "GPU excluded", gpus: azureNVLinkDown(), cfg: func(c *nvLinkConfig) { c.Exclude = []string{"0007:00:00.0"} },
			wantStatus: StatusOK, wantSummary: "all 84 NVLinks of 7 GPUs active (NVIDIA A100-SXM4-80GB: 12 per GPU)"},
		// Invented: link 3 of GPU 6 down and excluded; link 5 neither reported nor expected.
		{name: "links excluded", gpus: changeGPU(a100NVLinkNode(), 6, func(g *node.GPU) {
			g.NVLinks = append(nvlinks(5, 3), nvlinks(12)[6:]...)
		}), cfg: func(c *nvLinkConfig) { c.Exclude = []string{"0007:00:00.0/3", "0007:00:00.0/5"} },
			wantStatus: StatusOK, wantSummary: "all 94 NVLinks of 8 GPUs active (NVIDIA A100-SXM4-80GB: 12 per GPU)"},
		// Source: gpud-q-rtx4090x8-535.154.05.txt (no NVLink on the RTX 4090: NVLinks nil).
		{name: "no GPU has NVLink", gpus: rtx4090Node(), wantStatus: StatusSkip, wantSummary: "no GPU has NVLink"},
		{name: "every GPU excluded", gpus: azureNVLinkDown(), cfg: func(c *nvLinkConfig) {
			c.Exclude = []string{"0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0", "0005:00:00.0", "0006:00:00.0", "0007:00:00.0", "0008:00:00.0"}
		}, wantStatus: StatusSkip, wantSummary: "no GPU has NVLink (8 excluded by config)"},
		// Invented: GPU 4 of the H100 node fallen off the bus.
		{name: "lost GPU", gpus: changeGPU(h100NVLinkNode(), 4, func(g *node.GPU) { *g = node.GPU{Index: 4, PCIBusID: g.PCIBusID, Error: "ERROR_GPU_IS_LOST"} }),
			wantStatus: StatusError, wantSummary: "gpu 4 (0000:9b:00.0): ERROR_GPU_IS_LOST: NVLinks not read"},
		{name: "lost GPU excluded", gpus: changeGPU(h100NVLinkNode(), 4, func(g *node.GPU) { *g = node.GPU{Index: 4, PCIBusID: g.PCIBusID, Error: "ERROR_GPU_IS_LOST"} }),
			cfg:        func(c *nvLinkConfig) { c.Exclude = []string{"0000:9b:00.0"} },
			wantStatus: StatusOK, wantSummary: "all 126 NVLinks of 7 GPUs active (NVIDIA H100 80GB HBM3: 18 per GPU)"},
		{name: "lost GPU and an inactive link: fail", gpus: changeGPU(changeGPU(h100NVLinkNode(), 4, func(g *node.GPU) {
			*g = node.GPU{Index: 4, PCIBusID: g.PCIBusID, Error: "ERROR_GPU_IS_LOST"}
		}), 0, func(g *node.GPU) { g.NVLinks = nvlinks(18, 17) }),
			wantStatus: StatusFail, wantSummary: "gpu 0 (0000:19:00.0): NVLink 17 inactive"},
		{name: "no driver, no NVIDIA GPU on the bus", gpus: node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, wantStatus: StatusSkip,
			wantSummary: "no NVIDIA GPU on the PCI bus (NVML init ERROR_LIBRARY_NOT_FOUND)"},
		{name: "NVML unavailable, GPUs on the bus", gpus: node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, pci: h100PCI(), wantStatus: StatusError,
			wantSummary: "cannot read the NVLinks of the 8 NVIDIA GPUs on the PCI bus: NVML init ERROR_LIBRARY_NOT_FOUND"},
		// A rule that validation would refuse (the check must still not panic on it).
		{name: "bad expected_links", gpus: a100NVLinkNode(), cfg: func(c *nvLinkConfig) { c.ExpectedLinks = []string{"a100"} },
			wantStatus:  StatusError,
			wantSummary: `expected_links: "a100" is not a rule: write words of the NVML name, '=' and the number of NVLinks, such as "a100 sxm4=12", or "h100 pcie=0" where NVLink is opti...`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			if tc.cfg != nil {
				tc.cfg(settings[*nvLinkConfig](cfg, idNVLink))
			}
			got := nvLink{}.Run(context.Background(), gpuEnv(&fakeFacts{gpus: tc.gpus, pci: tc.pci}, "gpu-a100-01", cfg))
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
			checkSummaryLine(t, got)
			if got.Status == StatusError && got.Err == nil {
				t.Errorf("error status without Err")
			}
		})
	}
}

// TestNVLinkDetails: one detail per GPU, judged or not, with links reported and active.
func TestNVLinkDetails(t *testing.T) {
	inv := azureNVLinkDown()
	inv.Devices = inv.Devices[5:8]
	inv.Devices[2].NVLinks = nvlinks(12, 4)
	inv.Devices = append(inv.Devices,
		node.GPU{Index: 8, Name: "NVIDIA H100 PCIe", PCIBusID: "00000000:C1:00.0", NVLinks: nvlinks(12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		node.GPU{Index: 9, Name: nameRTX4090, PCIBusID: "00000000:E1:00.0"})
	got := nvLink{}.Run(context.Background(), gpuEnv(&fakeFacts{gpus: inv}, "gpu-a100-01", nil))
	want := []Detail{
		{Device: "gpu 5 (0006:00:00.0)", Status: StatusOK, Message: "12 of 12 NVLinks active", Observed: "12 reported, 12 active", Expected: "12 active NVLinks", Subject: subjectGPU(5, "0006:00:00.0")},
		{Device: "gpu 6 (0007:00:00.0)", Status: StatusFail, Message: "all 12 NVLinks inactive", Observed: "12 reported, 0 active", Expected: "12 active NVLinks", Remedy: RemedyResetGPU, Subject: subjectGPU(6, "0007:00:00.0")},
		{Device: "gpu 7 (0008:00:00.0)", Status: StatusFail, Message: "NVLink 4 inactive", Observed: "12 reported, 11 active", Expected: "12 active NVLinks", Remedy: RemedyResetGPU, Subject: subjectGPU(7, "0008:00:00.0")},
		{Device: "gpu 8 (0000:c1:00.0)", Status: StatusSkip, Observed: "12 reported, 0 active", Expected: "not judged",
			Message: `NVIDIA H100 PCIe has NVLink only through optional bridges (expected_links "pcie=0"): not judged`, Subject: subjectGPU(8, "0000:c1:00.0")},
		{Device: "gpu 9 (0000:e1:00.0)", Status: StatusSkip, Observed: "0 reported, 0 active", Message: "no NVLink", Subject: subjectGPU(9, "0000:e1:00.0")},
	}
	if diff := cmp.Diff(want, got.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(brief{"", "fail", "gpu 6 (0007:00:00.0): all 12 NVLinks inactive (+1 more)"}, brief{"", string(got.Status), got.Summary}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Observed != "23 of 36 NVLinks active on 3 GPUs judged" || got.Expected != "every NVLink active; NVLinks per GPU: NVIDIA A100-SXM4-80GB: 12" {
		t.Errorf("observed %q, expected %q", got.Observed, got.Expected)
	}
}

func TestNVLinkTable(t *testing.T) {
	table, err := newNVLinkTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		links int
		known bool
	}{
		{nameA100, 12, true},
		{"NVIDIA A100-SXM4-40GB", 12, true},
		{"NVIDIA A100-PCIE-40GB", 0, true},
		{"NVIDIA A100 80GB PCIe", 0, true},
		{nameH100, 18, true},
		{"NVIDIA H100 PCIe", 0, true},
		{"NVIDIA H100 NVL", 0, true},
		{"NVIDIA H200", 18, true},
		{"NVIDIA H200 NVL", 0, true},
		{"NVIDIA GH200 480GB", 0, true},
		{"NVIDIA B200", 18, true},
		{"NVIDIA A40", 0, true},
		{"NVIDIA RTX A6000", 0, true},
		{nameRTX4090, 0, true},
		{nameTitanV, 0, true},
		{"Tesla V100-SXM2-32GB", 0, false},
		{"NVIDIA H800", 0, false},
		{nameA10, 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := table.expected(tc.name)
			if ok != tc.known || r.links != tc.links {
				t.Errorf("expected(%q) = %d, %v; want %d, %v", tc.name, r.links, ok, tc.links, tc.known)
			}
		})
	}
	// Rules from the config come first.
	table, err = newNVLinkTable([]string{"h100 pcie=12"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := table.expected("NVIDIA H100 PCIe"); r.links != 12 {
		t.Errorf("configured rule not first: %d links", r.links)
	}
}

func TestLinkRanges(t *testing.T) {
	tests := []struct {
		in   []int
		want []string
	}{
		{nil, nil},
		{[]int{3}, []string{"3"}},
		{[]int{0, 1, 2, 5, 7, 8}, []string{"0-2", "5", "7-8"}},
		{[]int{4, 5, 6, 7, 8, 9, 10, 11}, []string{"4-11"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, linkRanges(tc.in)); diff != "" {
			t.Errorf("linkRanges(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestBuiltinNVLinkRules(t *testing.T) {
	for _, r := range builtinNVLinks {
		if _, _, err := parseNVLinkRule(r); err != nil {
			t.Errorf("built-in rule: %v", err)
		}
	}
}

// TestNVLinkConfig: the keys of [checks.nvlink] have their defaults, decode, reach a node
// through a group, and bad values name their line and the fix.
func TestNVLinkConfig(t *testing.T) {
	tests := []sectionCase{
		{
			name: "nvlink defaults",
			want: func(c *config.Config) any {
				return []any{settings[*nvLinkConfig](c, idNVLink).ExpectedLinks, settings[*nvLinkConfig](c, idNVLink).Exclude}
			},
			wantVal: []any{[]string(nil), []string(nil)},
		},
		{
			name: "nvlink keys",
			toml: "[checks.nvlink]\nexpected_links = [\"h100 pcie=12\", \"v100 sxm2=6\"]\nexclude = [\"0000:3b:00.0\", \"0000:4c:00.0/3\"]\n",
			want: func(c *config.Config) any {
				return []any{settings[*nvLinkConfig](c, idNVLink).ExpectedLinks, settings[*nvLinkConfig](c, idNVLink).Exclude}
			},
			wantVal: []any{[]string{"h100 pcie=12", "v100 sxm2=6"}, []string{"0000:3b:00.0", "0000:4c:00.0/3"}},
		},
		{
			name:    "group excludes an NVLink",
			toml:    "[[group]]\nnodes = \"gpu[01-04]\"\n[group.checks.nvlink]\nexclude = [\"0000:db:00.0/17\"]\n",
			node:    "gpu04",
			want:    func(c *config.Config) any { return settings[*nvLinkConfig](c, idNVLink).Exclude },
			wantVal: []string{"0000:db:00.0/17"},
		},
		{
			name: "expected_links rules",
			toml: "[checks.nvlink]\nexpected_links = [\"a100 sxm4\", \"=12\", \"h100=19\", \"h100=x\"]\n",
			wantErr: `nodecheck.toml:2: checks.nvlink.expected_links: "a100 sxm4" is not a rule: write words of the NVML name, '=' and the number of NVLinks, such as "a100 sxm4=12", or "h100 pcie=0" where NVLink is optional` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "=12" names no words of an NVML name before '='` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "h100=19": the number of NVLinks must be from 0 to 18 (0: NVLink optional, not judged)` + "\n" +
				`nodecheck.toml:2: checks.nvlink.expected_links: "h100=x": the number of NVLinks must be from 0 to 18 (0: NVLink optional, not judged)`,
		},
		{
			name: "exclude entries",
			toml: "[checks.nvlink]\nexclude = [\"00000000:3B:00.0\", \"0000:3b:00.0/18\", \"0000:3b:00.0/\"]\n",
			wantErr: `nodecheck.toml:2: checks.nvlink.exclude: "00000000:3B:00.0": "00000000:3B:00.0" is not a PCI address; write it as sysfs does, such as "0000:3b:00.0", or "0000:3b:00.0/3" for its link 3` + "\n" +
				`nodecheck.toml:2: checks.nvlink.exclude: "0000:3b:00.0/18": the link after '/' must be a number from 0 to 17, as nvidia-smi nvlink -s numbers them` + "\n" +
				`nodecheck.toml:2: checks.nvlink.exclude: "0000:3b:00.0/": the link after '/' must be a number from 0 to 17, as nvidia-smi nvlink -s numbers them`,
		},
	}
	runSectionCases(t, tests)
}

func TestParseNVLinkRule(t *testing.T) {
	tests := []struct {
		in    string
		words []string
		links int
		ok    bool
	}{
		{"a100 sxm4=12", []string{"a100", "sxm4"}, 12, true},
		{"H100 80GB HBM3 = 18", []string{"h100", "80gb", "hbm3"}, 18, true},
		{"nvidia_h100_nvl=0", []string{"nvidia", "h100", "nvl"}, 0, true},
		{"h100=18=1", nil, 0, false},
		{"h100=-1", nil, 0, false},
		{"h100", nil, 0, false},
		{"", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			w, n, err := parseNVLinkRule(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("parseNVLinkRule(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if diff := cmp.Diff(tc.words, w); diff != "" || n != tc.links {
				t.Errorf("parseNVLinkRule(%q) = %v, %d; want %v, %d", tc.in, w, n, tc.words, tc.links)
			}
		})
	}
}

func TestParseNVLinkExclude(t *testing.T) {
	tests := []struct {
		in   string
		addr string
		link int
		ok   bool
	}{
		{"0000:3b:00.0", "0000:3b:00.0", -1, true},
		{"0000:3b:00.0/0", "0000:3b:00.0", 0, true},
		{"0007:00:00.0/17", "0007:00:00.0", 17, true},
		{"0000:3b:00.0/18", "", 0, false},
		{"0000:3b:00.0/03", "", 0, false},
		{"0000:3b:00.0/+3", "", 0, false},
		{"0000:3B:00.0", "", 0, false},
		{"gpu3", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			a, l, err := parseNVLinkExclude(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("parseNVLinkExclude(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if a != tc.addr || l != tc.link {
				t.Errorf("parseNVLinkExclude(%q) = %q, %d; want %q, %d", tc.in, a, l, tc.addr, tc.link)
			}
		})
	}
}

// TestJudgeNVLinks feeds the judge literal NVML readings, with the built-in table.
func TestJudgeNVLinks(t *testing.T) {
	table, err := newNVLinkTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	noExcl, _ := newNVLinkExclusions(nil)
	h100 := func(links []node.NVLink) node.GPU {
		return node.GPU{Index: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:19:00.0", NVLinks: links}
	}
	tests := []struct {
		name        string
		gpus        []node.GPU
		wantStatus  Status
		wantSummary string
	}{
		{"all 18 up", []node.GPU{h100(nvlinks(18))}, StatusOK, "all 18 NVLinks of 1 GPU active (NVIDIA H100 80GB HBM3: 18 per GPU)"},
		{"two down", []node.GPU{h100(nvlinks(18, 4, 5))}, StatusFail, "gpu 0 (0000:19:00.0): NVLinks 4-5 inactive"},
		{"not reported", []node.GPU{h100(nil)}, StatusError,
			"gpu 0 (0000:19:00.0): NVLink state not reported by NVML (NVIDIA H100 80GB HBM3 has 18 NVLinks): not judged"},
		{"PCIe card without links", []node.GPU{{Index: 0, Name: "NVIDIA H100 PCIe", PCIBusID: "00000000:19:00.0"}}, StatusSkip, "no GPU has NVLink"},
		{"unknown model without links", []node.GPU{{Index: 0, Name: "NVIDIA A800 40GB Active", PCIBusID: "00000000:19:00.0"}}, StatusSkip, "no GPU has NVLink"},
		{"lost GPU", []node.GPU{{Index: 3, PCIBusID: "00000000:5D:00.0", Error: "ERROR_GPU_IS_LOST"}}, StatusError,
			"gpu 3 (0000:5d:00.0): ERROR_GPU_IS_LOST: NVLinks not read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeNVLinks(tc.gpus, table, noExcl)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
