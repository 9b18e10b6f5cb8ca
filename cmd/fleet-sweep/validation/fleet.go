package validation

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// DefaultSlowFraction is SuperBench's rule (Azure's fleet validation): a node more than 10%
// below its model's fleet P50 on a figure is slow.
const DefaultSlowFraction = 0.10

// Baseline is one GPU model's fleet P50 of one figure over the nodes that passed.
type Baseline struct {
	Model  string  `json:"model"`
	Figure string  `json:"figure"`
	Unit   string  `json:"unit"`
	P50    float64 `json:"p50"`
	Values int     `json:"values"` // how many values (nodes x devices) it is the median of
	Nodes  int     `json:"nodes"`
	Higher bool    `json:"higher_is_better"`
}

type baselineKey struct{ model, figure string }

// Baselines are each model's P50 per figure over the results that passed: a failed node is
// already out, and must not drag the median down. A per-device figure (one per GPU) counts
// each device's value. A figure is judged only over at least minNodes nodes; fewer give no
// baseline, since the median of one node is that node.
func Baselines(results []Result, minNodes int) []Baseline {
	values := map[baselineKey][]float64{}
	nodes := map[baselineKey]map[string]bool{}
	meta := map[baselineKey]Figure{}
	for _, r := range results {
		if r.Verdict != Passed || r.Model == "" {
			continue
		}
		for _, f := range r.Figures {
			k := baselineKey{r.Model, f.Name}
			values[k] = append(values[k], f.Value)
			if nodes[k] == nil {
				nodes[k] = map[string]bool{}
			}
			nodes[k][r.Node] = true
			if _, ok := meta[k]; !ok {
				meta[k] = f
			}
		}
	}
	var out []Baseline
	for k, vs := range values {
		if len(nodes[k]) < max(minNodes, 1) {
			continue
		}
		out = append(out, Baseline{Model: k.model, Figure: k.figure, Unit: meta[k].Unit, P50: median(vs),
			Values: len(vs), Nodes: len(nodes[k]), Higher: meta[k].higherIsBetter()})
	}
	slices.SortFunc(out, func(a, b Baseline) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Figure, b.Figure))
	})
	return out
}

// median is the middle value, or the mean of the two middle ones.
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Slow is a figure of a node that passed, more than the slow fraction worse than its model's
// P50.
type Slow struct {
	Node   string  `json:"node"`
	Model  string  `json:"model"`
	Figure string  `json:"figure"`
	Device string  `json:"device,omitempty"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	P50    float64 `json:"p50"`
	Off    float64 `json:"off"` // how far worse than the P50, as a fraction: 0.15
}

// Text is the slow figure in words: "nccl_busbw 405.0 GB/s, 15.0% below the fleet P50 476.5
// (NVIDIA H100 80GB HBM3)".
func (s Slow) Text() string {
	fig := s.Figure
	if s.Device != "" {
		fig += " " + s.Device
	}
	dir := "below"
	if s.Value > s.P50 {
		dir = "above"
	}
	return fmt.Sprintf("%s %s %s, %.1f%% %s the fleet P50 %s (%s)", fig, num(s.Value), s.Unit, s.Off*100, dir, num(s.P50), s.Model)
}

// JudgeSlow names the figures of passed nodes more than fraction worse than their model's
// baseline: below P50 x (1 - fraction) where more is better, above P50 x (1 + fraction)
// where less is. Exactly at the line is not slow. Worst first, then by node.
func JudgeSlow(results []Result, baselines []Baseline, fraction float64) []Slow {
	base := map[baselineKey]Baseline{}
	for _, b := range baselines {
		base[baselineKey{b.Model, b.Figure}] = b
	}
	var out []Slow
	for _, r := range results {
		if r.Verdict != Passed {
			continue
		}
		for _, f := range r.Figures {
			b, ok := base[baselineKey{r.Model, f.Name}]
			if !ok || b.P50 <= 0 {
				continue
			}
			var off float64
			if b.Higher {
				off = (b.P50 - f.Value) / b.P50
			} else {
				off = (f.Value - b.P50) / b.P50
			}
			if off > fraction {
				out = append(out, Slow{Node: r.Node, Model: r.Model, Figure: f.Name, Device: f.Device, Unit: f.Unit, Value: f.Value, P50: b.P50, Off: off})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Slow) int {
		return cmp.Or(cmp.Compare(b.Off, a.Off), cmp.Compare(a.Node, b.Node))
	})
	return out
}

// Stalest orders nodes for validation: those never validated first (by name), then the
// oldest validation first. last holds each node's last validation that passed.
func Stalest(nodes []string, last map[string]time.Time) []string {
	out := slices.Clone(nodes)
	slices.SortStableFunc(out, func(a, b string) int {
		ta, tb := last[a], last[b]
		return cmp.Or(ta.Compare(tb), cmp.Compare(a, b))
	})
	return out
}
