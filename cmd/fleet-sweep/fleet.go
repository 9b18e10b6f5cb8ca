package main

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The fleet-relative judgement: a node that passes every absolute threshold but measures well
// below its peers (same GPU model, same figure) drags down every multi-node job it joins. Each
// figure a report carries is compared with the fleet's median for that model and figure; a node
// more than a robust distance below it is slow:
//
//	distance = median - value
//	slow when distance > MAD x 1.4826 x rule.MAD  and  distance > median x rule.FloorPct / 100
//
// MAD is the median absolute deviation, scaled by 1.4826 so that it estimates the standard
// deviation of normally distributed figures (a robust z-score, Iglewicz and Hoaglin); unlike
// the standard deviation it is not pulled by the slow nodes themselves. The floor keeps a
// tight fleet (MAD near 0, identical figures) from calling a node 0.5% below its peers slow.
// Only nodes whose reports are healthy form the baseline and are judged: a failing node is
// already out, and a fleet in which many nodes fail must not drag the median down.

// madScale turns a median absolute deviation into a standard-deviation estimate.
const madScale = 1.4826

// slowRule is --slow-mad, --slow-floor and --slow-min-nodes.
type slowRule struct {
	MAD      float64 // robust distance, in scaled MADs
	FloorPct float64 // and at least this many percent of the median
	MinNodes int     // a model's figure is judged only over at least this many nodes
}

// figure is one performance figure of one node, higher being better.
type figure struct {
	Node   string  `json:"node"`
	Model  string  `json:"model"`        // the GPU model group: gpu_models' observed "8x NVIDIA H100 80GB HBM3 (h100)"
	Metric string  `json:"metric"`       // what was measured, as a reason names it: "busbw", "mlx5_0/1 rate"
	At     string  `json:"at,omitempty"` // where, when it matters for comparing: "4 GiB" (the message size)
	Unit   string  `json:"unit"`         // "GB/s", "Gb/s"
	Value  float64 `json:"value"`
}

// fleetGroup is one model's figure over the fleet.
type fleetGroup struct {
	Model     string  `json:"model"`
	ModelName string  `json:"model_name"` // short: "h100"
	Metric    string  `json:"metric"`
	At        string  `json:"at,omitempty"`
	Unit      string  `json:"unit"`
	Nodes     int     `json:"nodes"`
	Median    float64 `json:"median"`
	MAD       float64 `json:"mad"`
	// SlowBelow is the value under which a node is slow; 0 when the group is not judged.
	SlowBelow float64 `json:"slow_below"`
	Judged    bool    `json:"judged"` // at least MinNodes nodes
}

// slowFinding is one slow figure of one node.
type slowFinding struct {
	Node      string  `json:"node"`
	Model     string  `json:"model"`
	ModelName string  `json:"model_name"`
	Metric    string  `json:"metric"`
	At        string  `json:"at,omitempty"`
	Unit      string  `json:"unit"`
	Value     float64 `json:"value"`
	Median    float64 `json:"median"`
	BelowPct  float64 `json:"below_pct"` // (median - value) / median, in percent
	// RobustZ is (median - value) / (1.4826 MAD); -1 when the MAD is 0 (every other node
	// measured the same: the floor alone decided).
	RobustZ float64 `json:"robust_z"`
}

// judgeFleet groups the figures by model and metric and returns each group, and the slow
// figures: the furthest below their median first, ties in the figures' order.
func judgeFleet(figs []figure, rule slowRule) ([]fleetGroup, []slowFinding) {
	type key struct{ model, metric, at, unit string }
	byKey := map[key][]int{}
	var keys []key
	for i, f := range figs {
		k := key{f.Model, f.Metric, f.At, f.Unit}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var groups []fleetGroup
	var slow []slowFinding
	for _, k := range keys {
		idx := byKey[k]
		vals := make([]float64, len(idx))
		for j, i := range idx {
			vals[j] = figs[i].Value
		}
		med := median(vals)
		dev := make([]float64, len(vals))
		for j, v := range vals {
			dev[j] = math.Abs(v - med)
		}
		mad := median(dev)
		g := fleetGroup{Model: k.model, ModelName: modelName(k.model), Metric: k.metric, At: k.at, Unit: k.unit,
			Nodes: len(idx), Median: med, MAD: mad, Judged: len(idx) >= max(rule.MinNodes, 1)}
		if g.Judged {
			g.SlowBelow = med - max(rule.MAD*madScale*mad, med*rule.FloorPct/100)
			for _, i := range idx {
				f := figs[i]
				if f.Value >= g.SlowBelow {
					continue
				}
				z := -1.0
				if mad > 0 {
					z = (med - f.Value) / (madScale * mad)
				}
				below := 0.0
				if med > 0 {
					below = (med - f.Value) / med * 100
				}
				slow = append(slow, slowFinding{Node: f.Node, Model: k.model, ModelName: g.ModelName, Metric: k.metric,
					At: k.at, Unit: k.unit, Value: f.Value, Median: med, BelowPct: below, RobustZ: z})
			}
		}
		groups = append(groups, g)
	}
	slices.SortStableFunc(slow, func(a, b slowFinding) int { return cmp.Compare(b.BelowPct, a.BelowPct) })
	return groups, slow
}

// median of vals (not modified); 0 for none.
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// gpuModelsObserved reads gpu_models' observed value: "8x NVIDIA H100 80GB HBM3 (h100)", or
// several such groups joined by ", " on a node of mixed models.
var gpuModelsObserved = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+x \S`) })

// modelOf is the node's GPU model group: gpu_models' observed value, the GPUs as NVML names
// them with their count, whatever the check decided about slurm.conf's claims. "" when the
// report has none (gpu_models not run, NVML not answering): the node is then not compared,
// since comparing an A100 with H100s would call it slow.
func modelOf(rep nodecheckReport) string {
	for _, c := range rep.Results {
		if c.Check == "gpu_models" && gpuModelsObserved().MatchString(c.Observed) {
			return c.Observed
		}
	}
	return ""
}

// modelName is a model group's short name for reasons and tables: the model token of a single
// group ("8x NVIDIA H100 80GB HBM3 (h100)" -> "h100"), else the group as it is.
func modelName(model string) string {
	if strings.Contains(model, ", ") {
		return model
	}
	if i := strings.LastIndex(model, " ("); i >= 0 && strings.HasSuffix(model, ")") {
		return model[i+2 : len(model)-1]
	}
	if _, name, ok := strings.Cut(model, "x "); ok {
		return name
	}
	return model
}

// ibRate reads an ib_ports detail's observed value: "ACTIVE/LinkUp 400 Gb/sec (4X NDR)".
var ibRate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ACTIVE/LinkUp ([0-9]+(?:\.[0-9]+)?) Gb/sec`) })

// figuresOf lists the performance figures of one report: nccl_allreduce's bus bandwidth
// (per node: all GPUs together, at the size it was judged at, so runs at other sizes are not
// compared) and each InfiniBand port's rate (per port). These are the figures the reports
// carry where more is better and a fleet-relative gap means something; per-GPU figures such
// as PCIe width or NVLink count are judged absolutely by their checks already.
func figuresOf(node, model string, rep nodecheckReport) []figure {
	var out []figure
	if bw, ok := ncclBusBW(node, rep); ok {
		out = append(out, figure{Node: node, Model: model, Metric: "busbw", At: bw.At, Unit: "GB/s", Value: bw.GBps})
	}
	for _, c := range rep.Results {
		if c.Check != "ib_ports" || c.Status != "ok" && c.Status != "warn" {
			continue
		}
		for _, d := range c.Details {
			m := ibRate().FindStringSubmatch(d.Observed)
			if m == nil || d.Device == "" {
				continue
			}
			v, err := strconv.ParseFloat(m[1], 64)
			if err == nil {
				out = append(out, figure{Node: node, Model: model, Metric: d.Device + " rate", Unit: "Gb/s", Value: v})
			}
		}
	}
	return out
}

// slowSummary is a slow finding in one line, for the summary and the drain reason:
// "busbw 405.0 GB/s at 4 GiB, 15.0% below the h100 median 476.5".
func slowSummary(f slowFinding) string {
	at := ""
	if f.At != "" {
		at = " at " + f.At
	}
	return fmt.Sprintf("%s %s %s%s, %.1f%% below the %s median %s", f.Metric, fmtValue(f.Value), f.Unit, at, f.BelowPct, f.ModelName, fmtValue(f.Median))
}

// fmtValue spells a figure with one decimal.
func fmtValue(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
