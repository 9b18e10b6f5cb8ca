package checks

import "testing"

// TestModelTablesLongerNames audits every table keyed by GPU model (gpu_models, nvlink,
// nccl_allreduce, gpu_traits): an entry never takes a longer or different name that merely
// contains its letters. Names are NVML's as the drivers print them ("NVIDIA GH200 480GB",
// "NVIDIA H100 NVL", "NVIDIA A100X" is the converged accelerator, "NVIDIA GB200" a
// Grace-Blackwell superchip).
func TestModelTablesLongerNames(t *testing.T) {
	models, err := newGPUModelTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	links, err := newNVLinkTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		model  string // gpu_models token ("" none)
		links  int    // nvlink expected_links (-1: not in the table)
		nccl   bool   // a built-in busbw threshold for 8 of them
		mnnvl  bool   // gpu_traits: a multi-node NVLink tray's GPU
		ecc    bool   // gpu_traits: always has ECC
		fabric bool   // gpu_traits: a fabric state on NVSwitch nodes
	}{
		{"NVIDIA H200", "h200", 18, false, false, true, true},
		{"NVIDIA GH200 480GB", "gh200", 0, false, false, true, true}, // GH200 is not H200
		{"NVIDIA H200 NVL", "h200", 0, false, false, true, true},     // NVL cards: bridges, not judged
		{"NVIDIA H100 80GB HBM3", "h100", 18, true, false, true, true},
		{"NVIDIA H100 NVL", "h100", 0, false, false, true, true}, // not the SXM5's 18 links nor its busbw
		{"NVIDIA H100 PCIe", "h100", 0, false, false, true, true},
		{"NVIDIA H20", "h20", -1, false, false, true, true}, // not H200
		{"NVIDIA A100-SXM4-80GB", "a100", 12, true, false, true, false},
		{"NVIDIA A100 80GB PCIe", "a100", 0, false, false, true, false},
		{"NVIDIA A100X", "", -1, false, false, false, false}, // not A100: a model no table knows
		{"NVIDIA A10", "a10", -1, false, false, true, false},
		{"NVIDIA A10G", "a10g", -1, false, false, true, false}, // not A10
		{"NVIDIA L40S", "l40s", -1, false, false, true, false}, // not L40
		{"NVIDIA B200", "b200", 18, false, false, true, true},
		{"NVIDIA GB200", "gb200", -1, false, true, true, true}, // not B200
		{"NVIDIA GB300", "gb300", -1, false, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := models.modelOf(tc.name); got != tc.model {
				t.Errorf("gpu_models token %q, want %q", got, tc.model)
			}
			r, ok := links.expected(tc.name)
			if got := map[bool]int{true: r.links, false: -1}[ok]; got != tc.links {
				t.Errorf("nvlink links %d (rule %q), want %d", got, r.text, tc.links)
			}
			if _, ok := ncclLookup([]string{tc.name}, 8); ok != tc.nccl {
				t.Errorf("nccl threshold for 8: %t, want %t", ok, tc.nccl)
			}
			tr, _ := traitsOf(tc.name)
			if tr.mnnvl != tc.mnnvl || tr.ecc != tc.ecc || tr.fabric != tc.fabric {
				t.Errorf("traits %+v, want mnnvl %t, ecc %t, fabric %t", tr, tc.mnnvl, tc.ecc, tc.fabric)
			}
		})
	}
}
