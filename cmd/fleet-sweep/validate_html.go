package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
	"github.com/nodecheck/nodecheck/config/files"
)

// A validation sweep's HTML report: each figure of each GPU model, node by node (the worst of
// its devices), against its floor and the fleet's P50, as a table with a bar; the failed,
// undecided and not-run nodes; the summary embedded as JSON. Self-contained like the health
// sweep's report (html.go): nothing is fetched.

// valFigureRow is one node's figure in the report.
type valFigureRow struct {
	Node, Verdict, Device, Class string
	Value, Floor, P50            float64
	OffP50                       string // "-15.0%"
	Bar                          template.HTML
}

// valFigureTable is one model's figure across the nodes.
type valFigureTable struct {
	Model, Figure, Unit string
	P50                 float64
	Rows                []valFigureRow
}

type valHTMLPage struct {
	Summary valSummary
	Tables  []valFigureTable
	Data    template.JS
}

// writeValidationHTML writes the report to o.html ("" for none).
func writeValidationHTML(o options, sum valSummary) error {
	if o.html == "" {
		return nil
	}
	var b bytes.Buffer
	if err := renderValidationHTML(&b, sum); err != nil {
		return err
	}
	return files.WriteAtomic(o.html, b.Bytes(), 0o644)
}

func renderValidationHTML(w io.Writer, sum valSummary) error {
	data, err := json.Marshal(sum) // escapes <, > and & as \u003c...: safe inside <script>
	if err != nil {
		return fmt.Errorf("encode the summary for the HTML report: %w", err)
	}
	return valHTMLTemplate.Execute(w, valHTMLPage{Summary: sum, Tables: figureTables(sum), Data: template.JS(data)})
}

// figureTables groups the results' figures by model and figure, worst first, each node's worst
// device only.
func figureTables(sum valSummary) []valFigureTable {
	p50 := map[[2]string]float64{}
	for _, b := range sum.Baselines {
		p50[[2]string{b.Model, b.Figure}] = b.P50
	}
	slow := map[[2]string]bool{}
	for _, s := range sum.Slow {
		slow[[2]string{s.Node, s.Figure}] = true
	}
	byKey := map[[2]string]*valFigureTable{}
	var keys [][2]string
	for _, n := range sum.Results {
		worst := map[string]validation.Figure{}
		var order []string
		for _, f := range n.Figures {
			w, seen := worst[f.Name]
			higher := f.Floor <= f.Expected
			if !seen {
				order = append(order, f.Name)
			}
			if !seen || higher && f.Value < w.Value || !higher && f.Value > w.Value {
				worst[f.Name] = f
			}
		}
		for _, name := range order {
			f := worst[name]
			k := [2]string{n.Model, name}
			t := byKey[k]
			if t == nil {
				t = &valFigureTable{Model: n.Model, Figure: name, Unit: f.Unit, P50: p50[k]}
				byKey[k] = t
				keys = append(keys, k)
			}
			row := valFigureRow{Node: n.Node, Verdict: n.Verdict, Device: f.Device, Value: f.Value, Floor: f.Floor, P50: t.P50, Class: "ok"}
			switch {
			case !f.OK:
				row.Class = "below"
			case slow[[2]string{n.Node, name}]:
				row.Class = "slow"
			}
			if t.P50 > 0 {
				row.OffP50 = fmt.Sprintf("%+.1f%%", (f.Value-t.P50)/t.P50*100)
			}
			row.Bar = figureBar(f.Value, f.Floor, t.P50, row.Class)
			t.Rows = append(t.Rows, row)
		}
	}
	out := make([]valFigureTable, 0, len(keys))
	for _, k := range keys {
		t := byKey[k]
		slices.SortStableFunc(t.Rows, func(a, b valFigureRow) int { return cmp.Compare(a.Value, b.Value) })
		out = append(out, *t)
	}
	slices.SortStableFunc(out, func(a, b valFigureTable) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Figure, b.Figure))
	})
	return out
}

// figureBar draws a value as a bar from 0, the floor as a red line and the P50 as a dark one,
// on a scale to the largest of the three plus a tenth. Only numbers go into it.
func figureBar(value, floor, p50 float64, class string) template.HTML {
	const w, h = 240.0, 14.0
	top := max(value, floor, p50) * 1.1
	if top <= 0 {
		return ""
	}
	x := func(v float64) float64 { return max(0, v) / top * w }
	s := fmt.Sprintf(`<svg class="bar" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img"><rect class="%s" x="0" y="2" width="%.1f" height="10"/>`,
		w, h, w, h, template.HTMLEscapeString(class), x(value))
	if floor > 0 {
		s += fmt.Sprintf(`<line class="floor" x1="%.1f" x2="%.1f" y1="0" y2="%.0f"/>`, x(floor), x(floor), h)
	}
	if p50 > 0 {
		s += fmt.Sprintf(`<line class="p50" x1="%.1f" x2="%.1f" y1="0" y2="%.0f"/>`, x(p50), x(p50), h)
	}
	return template.HTML(s + `</svg>`) // numbers and an escaped class only
}

var valHTMLTemplate = template.Must(template.New("validation").Funcs(template.FuncMap{
	"mul100": func(f float64) float64 { return f * 100 },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nodecheck validation sweep ({{.Summary.Level}}): {{.Summary.Nodes}} nodes, {{.Summary.Failed}} failed, {{len .Summary.Slow}} slow</title>
<style>
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #212121; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #e0e0e0; vertical-align: middle; }
th { background: #f5f5f5; }
tr.below td { background: #ffcdd2; }
tr.slow td { background: #ffe0b2; }
svg.bar rect.ok { fill: #66bb6a; }
svg.bar rect.slow { fill: #ff8f00; }
svg.bar rect.below { fill: #c62828; }
svg.bar line.floor { stroke: #b71c1c; stroke-width: 2; }
svg.bar line.p50 { stroke: #212121; stroke-width: 2; stroke-dasharray: 3 2; }
</style>
</head>
<body>
<h1>nodecheck validation sweep: level {{.Summary.Level}}</h1>
<p class="meta">{{.Summary.Nodes}} nodes: {{.Summary.Passed}} passed, {{.Summary.Failed}} failed, {{.Summary.Undecided}} undecided, {{.Summary.NotRun}} not run; {{len .Summary.Slow}} slow (more than {{printf "%.0f" (mul100 .Summary.SlowFraction)}}% worse than their model's P50). Extra: {{.Summary.Extra}}. Results in {{.Summary.OutDir}}.</p>
<h2>Nodes not passed</h2>
<table>
<tr><th>node</th><th>verdict</th><th>why</th><th>remedy</th></tr>
{{range .Summary.Results}}{{if ne .Verdict "passed"}}<tr data-node="{{.Node}}" data-verdict="{{.Verdict}}"><td>{{.Node}}</td><td>{{.Verdict}}</td><td>{{.Why}}</td><td>{{.Remedy}}</td></tr>
{{end}}{{end}}</table>
<h2>Figures against their floors and the fleet</h2>
<p class="meta">Each node's worst device; the red line is the floor, the dashed one the P50 of the model's passed nodes.</p>
{{range .Tables}}<h3>{{.Model}}: {{.Figure}} ({{.Unit}}){{if gt .P50 0.0}}, P50 {{printf "%.1f" .P50}}{{end}}</h3>
<table>
<tr><th>node</th><th>verdict</th><th>device</th><th>value</th><th>floor</th><th>vs P50</th><th></th></tr>
{{range .Rows}}<tr class="{{.Class}}" data-node="{{.Node}}"><td>{{.Node}}</td><td>{{.Verdict}}</td><td>{{.Device}}</td><td>{{printf "%.2f" .Value}}</td><td>{{printf "%.2f" .Floor}}</td><td>{{.OffP50}}</td><td>{{.Bar}}</td></tr>
{{end}}</table>
{{end}}
<script type="application/json" id="validation-summary">{{.Data}}</script>
</body>
</html>
`))
