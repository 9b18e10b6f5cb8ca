package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config"
)

// Model is one GPU model's expected figures and floors, each with its source. A floor of 0 is
// "no public figure found": the figure is reported, its test warns, and the site sets one in
// [validate.floors].
type Model struct {
	Label string
	// words are the words of the NVML name that pick the model, matched in order
	// ("a100 sxm4" in "NVIDIA A100-SXM4-80GB").
	words []string
	// PCIeGen is the host link's generation, which picks the host<->device floors.
	PCIeGen int
	// NCCL is all_reduce_perf's large-message busbw on 8 GPUs of one node.
	NCCL Floor
	// D2D is nvbandwidth's device_to_device_memcpy_read_ce per pair.
	D2D Floor
	// MemBW is DCGM's memory bandwidth floor (DCGM judges it itself in levels 3 and 4);
	// Expected is NVIDIA's specification.
	MemBW Floor
}

// Floor is a figure's expected value and its floor, with where they come from.
type Floor struct {
	Expected, Floor float64
	Source          string
}

// models are the GPU models with public figures.
var models = []Model{
	{
		Label: "H100 SXM", words: []string{"h100", "80gb", "hbm3"}, PCIeGen: 5,
		NCCL:  Floor{460, 390, "Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf (check_nccl_allreduce 460.0 at 16G); floor 85% of it, as nodecheck's nccl_allreduce"},
		D2D:   Floor{370, 335, "expected: nvbandwidth v0.4 d2d read CE on 8x H100 80GB HBM3 (ND H100 v5), 370.26-372.96 GB/s; floor: Azure NHC's P2P threshold 335 GB/s quoted beside it (azurehpc-health-checks customTests/debugging-test-failure.md)"},
		MemBW: Floor{3350000, 1905000, "expected: NVIDIA H100 SXM specification 3.35 TB/s; floor: DCGM's per-SKU diag table (diag-skus), H100: 1,905,000 MB/s"},
	},
	{
		Label: "H200", words: []string{"h200"}, PCIeGen: 5,
		NCCL:  Floor{477, 405, "all_reduce_perf -b 8G -e 8G on 8x H200 (NCCL 2.19.3), busbw 476.97 GB/s (AzHPC H200 test-image note); floor 85% of it"},
		D2D:   Floor{370, 335, "H200 has H100 SXM's NVLink 4 (900 GB/s per GPU, NVIDIA H200 specification): H100 SXM's nvbandwidth figure and Azure NHC's 335 GB/s floor"},
		MemBW: Floor{4800000, 0, "expected: NVIDIA H200 specification 4.8 TB/s; floor: DCGM's own per-SKU table (no public figure found)"},
	},
	{
		Label: "A100 SXM", words: []string{"a100", "sxm4"}, PCIeGen: 4,
		NCCL:  Floor{228, 195, "Azure/azurehpc-health-checks conf/nd96asr_v4.conf (check_nccl_allreduce 228.0); floor 85% of it, as nodecheck's nccl_allreduce"},
		D2D:   Floor{0, 0, "no public nvbandwidth figure found for A100 SXM: set [validate.floors] d2d_gbps"},
		MemBW: Floor{2039000, 0, "expected: NVIDIA A100 80GB SXM specification 2,039 GB/s; floor: DCGM's own per-SKU table (no public figure found)"},
	},
}

// hostFloors are nvbandwidth's host<->device figures per GPU by PCIe generation (x16).
var hostFloors = map[int]struct{ H2D, D2H Floor }{
	4: {
		H2D: Floor{25.9, 22, "SuperBench's published NDv4 A100 baseline (PCIe 4.0): H2D 25.9 GB/s; floor 85% of it"},
		D2H: Floor{26.0, 22, "SuperBench's published NDv4 A100 baseline (PCIe 4.0): D2H 26.0 GB/s; floor 85% of it"},
	},
	5: {
		H2D: Floor{35.2, 30, "nvbandwidth on 8x H100 (PCIe 5.0): host_to_device 35.03-35.39 GB/s, an asymmetry others confirmed on H20 and H800 (NVIDIA/nvbandwidth#24); floor 85% of it"},
		D2H: Floor{52.8, 45, "nvbandwidth on 8x H100 (PCIe 5.0): device_to_host 52.76-52.78 GB/s (NVIDIA/nvbandwidth#24); floor 85% of it"},
	},
}

// IB loopback: ib_write_bw with GPUDirect against the port's rate. Imbue's host validation
// asks 720 Gb/s both ways of a 400 Gb/s NDR HCA (90%); SuperBench's NDv4 baseline is 23.7 GB/s
// on a 200 Gb/s HDR HCA (95%).
const (
	ibFloorShare    = 0.90
	ibExpectedShare = 0.95
	ibSource        = "share of the port's rate: floor 90% (Imbue's host validation: 720 Gb/s bidirectional per 400 Gb/s NDR HCA), expected 95% (SuperBench NDv4: 23.7 GB/s per 200 Gb/s HDR HCA)"
)

// LookupModel finds the model of a GPU name ("NVIDIA H100 80GB HBM3"); ok false for a model
// without public figures.
func LookupModel(name string) (Model, bool) {
	words := nameWords(name)
	for _, m := range models {
		if containsRun(words, m.words) {
			return m, true
		}
	}
	return Model{}, false
}

// Models lists the table, for the docs.
func Models() []Model { return slices.Clone(models) }

func nameWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '\t' || r == '-' || r == '_' || r == '/'
	})
}

// containsRun reports whether words appear one after another in hay.
func containsRun(hay, words []string) bool {
	for i := 0; len(words) > 0 && i+len(words) <= len(hay); i++ {
		if slices.Equal(hay[i:i+len(words)], words) {
			return true
		}
	}
	return false
}

// Floors are the floors one validation judges by: the model's, with the site's overrides.
type Floors struct {
	Model    string // the model's label, or "" unknown
	NCCL     Floor
	NCCLNet  Floor
	H2D, D2H Floor
	D2D      Floor
	IB       Floor // Floor 0: per port, ibFloorShare of its rate
	MemBW    Floor
	Spread   float64
}

// floorsFor returns the floors for GPUs named name with nGPUs of them, the site's
// [validate.floors] replacing the built-in ones.
func floorsFor(name string, nGPUs int, o config.ValidateFloors) Floors {
	var f Floors
	if m, ok := LookupModel(name); ok {
		f.Model, f.D2D, f.MemBW = m.Label, m.D2D, m.MemBW
		if nGPUs == 8 {
			f.NCCL = m.NCCL
		} else {
			f.NCCL.Source = fmt.Sprintf("no built-in NCCL floor for %d GPUs of %s (the table has 8): set [validate.floors] nccl_busbw_gbps", nGPUs, m.Label)
		}
		h := hostFloors[m.PCIeGen]
		f.H2D, f.D2H = h.H2D, h.D2H
	} else {
		none := fmt.Sprintf("no built-in floor for %q: set [validate.floors]", name)
		f.NCCL.Source, f.D2D.Source, f.H2D.Source, f.D2H.Source, f.MemBW.Source = none, none, none, none, none
	}
	f.NCCLNet.Source = "no public figure for NCCL over the network path on one node: set [validate.floors] nccl_net_busbw_gbps"
	f.IB.Source = ibSource
	override := func(fl *Floor, v float64, key string) {
		if v > 0 {
			fl.Floor, fl.Source = v, "[validate.floors] "+key
		}
	}
	override(&f.NCCL, o.NCCLBusBW, "nccl_busbw_gbps")
	override(&f.NCCLNet, o.NCCLNetBusBW, "nccl_net_busbw_gbps")
	override(&f.H2D, o.H2D, "h2d_gbps")
	override(&f.D2H, o.D2H, "d2h_gbps")
	override(&f.D2D, o.D2D, "d2d_gbps")
	override(&f.IB, o.IBWrite, "ib_write_gbps")
	override(&f.MemBW, o.MemBW, "mem_bw_mbps")
	f.Spread = o.GEMMSpread
	return f
}

// figure judges value against fl.
func figure(name, unit, device string, value float64, fl Floor) Figure {
	return Figure{Name: name, Value: round2(value), Unit: unit, Floor: fl.Floor, Expected: fl.Expected, Source: fl.Source,
		Device: device, OK: fl.Floor <= 0 || value >= fl.Floor}
}

// round2 keeps two decimals, as the tools print them; a NaN or infinity is 0.
func round2(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*100) / 100
}
