package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/nodecheck/nodecheck/config/files"
)

// The HTML report (--html) is one self-contained file for people: inline CSS, a few lines of
// inline JavaScript and inline SVG, no fetch of any kind, so it opens from a shared file
// system, an email attachment or a ticket as it is. It says what the JSON summary says (the
// summary is embedded in it, in <script type="application/json" id="sweep-summary">), drawn:
// a grid of the nodes grouped by leaf switch and coloured by verdict, each model's figures
// with their median and slow line, and the failing, slow and missing nodes with what to do.

// Verdicts of the grid, as class names and data-verdict values.
const (
	verdictHealthy = "healthy"
	verdictSlow    = "slow"
	verdictFailing = "failing"
	verdictMissing = "missing"
)

// noLeaf names the group of the nodes topology.conf puts under no leaf, or all nodes when
// there is no topology.conf.
const noLeaf = "(no leaf switch in topology.conf)"

// htmlInput is what the report is made of: the summary, the sweep's nodes in order, the leaf
// switch of each (nil without topology.conf) and the nodecheck path and Slurm clients the
// commands name.
type htmlInput struct {
	Summary   summary
	Nodes     []string
	Leaf      map[string]string
	Topology  string // topology.conf's path, "" for none
	Nodecheck string
	SlurmBin  string
}

// writeHTMLFile writes the HTML report to o.html (nothing when it is ""), grouping the nodes
// by the leaves of o.multinode.topology; a topology.conf that cannot be read is a warning, and
// the nodes then form one group.
func writeHTMLFile(o options, s summary, runs []nodeRun, stderr io.Writer) error {
	if o.html == "" {
		return nil
	}
	in := htmlInput{Summary: s, Nodecheck: o.nodecheck, SlurmBin: o.slurmBin}
	for _, r := range runs {
		in.Nodes = append(in.Nodes, r.Node)
	}
	if t := o.multinode.topology; t != "" {
		b, err := readBounded(t, 4<<20)
		if err == nil {
			in.Leaf, err = parseTopologyLeaves(b, t, func(p string) ([]byte, error) { return readBounded(p, 4<<20) })
		}
		if err != nil {
			fmt.Fprintf(stderr, "fleet-sweep: the HTML report groups no leaf switches: %s: %v\n", t, err)
		} else {
			in.Topology = t
		}
	}
	var b bytes.Buffer
	if err := writeHTML(&b, in); err != nil {
		return err
	}
	return files.WriteAtomic(o.html, b.Bytes(), 0o644)
}

// htmlPage is the template's data.
type htmlPage struct {
	Healthy, Slow, Failing, Missing int
	Summary                         summary
	Topology                        string
	Groups                          []htmlGroup
	Dists                           []htmlDist
	OtherFigures                    int // figures drawn not, having no slow node
	FailRows                        []htmlFailRow
	SlowRows                        []htmlSlowRow
	Data                            template.JS
}

type htmlGroup struct {
	Name   string
	Counts string // "16 nodes: 14 healthy, 1 slow, 1 failing"
	Cells  []htmlCell
}

type htmlCell struct {
	Node, Verdict, Title string
}

type htmlDist struct {
	Title string // "h100 busbw at 4 GiB (GB/s)"
	Note  string // "median 476.5, slow below 452.7, 250 nodes"
	SVG   template.HTML
}

type htmlFailRow struct {
	failing
	Leaf, Replay, Repair string
}

type htmlSlowRow struct {
	slowFinding
	Leaf, Replay string
}

// writeHTML writes the report.
func writeHTML(w io.Writer, in htmlInput) error {
	page, err := buildPage(in)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := htmlTemplate().Execute(&b, page); err != nil {
		return fmt.Errorf("render the HTML report: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

func buildPage(in htmlInput) (htmlPage, error) {
	s := in.Summary
	verdict := map[string]string{}
	for _, n := range s.Healthy {
		verdict[n] = verdictHealthy
	}
	for _, n := range s.slowNodes() {
		verdict[n] = verdictSlow
	}
	why := map[string]string{}
	for _, f := range s.Failing {
		verdict[f.Node], why[f.Node] = verdictFailing, failLine(f)
	}
	for _, m := range s.Missing {
		verdict[m.Node], why[m.Node] = verdictMissing, m.Reason
	}
	for _, f := range s.Slow {
		why[f.Node] = joinLine(why[f.Node], "slow: "+slowSummary(f))
	}
	data, err := json.Marshal(s) // escapes <, > and & as \u003c...: safe inside <script>
	if err != nil {
		return htmlPage{}, fmt.Errorf("encode the summary for the HTML report: %w", err)
	}
	p := htmlPage{Healthy: len(s.Healthy), Slow: len(s.slowNodes()), Failing: len(s.Failing), Missing: len(s.Missing),
		Summary: s, Topology: in.Topology, Data: template.JS(data)}
	p.Groups = groupCells(in, verdict, why)
	for _, g := range s.Fleet {
		// As the text summary: every busbw group, the others (one per InfiniBand port) only
		// where a node is slow.
		if g.Metric == "busbw" || slices.ContainsFunc(s.Slow, func(f slowFinding) bool {
			return f.Model == g.Model && f.Metric == g.Metric && f.At == g.At
		}) {
			p.Dists = append(p.Dists, distribution(g, s))
		} else {
			p.OtherFigures++
		}
	}
	leafOf := func(n string) string { return cmp.Or(in.Leaf[n], noLeafShort(in.Leaf)) }
	for _, f := range s.Failing {
		p.FailRows = append(p.FailRows, htmlFailRow{failing: f, Leaf: leafOf(f.Node),
			Replay: replayCommand(in, f.Node, cmp.Or(f.Check, "--all")), Repair: repairCommand(in, f)})
	}
	for _, f := range s.Slow {
		check := "nccl_allreduce"
		if strings.HasSuffix(f.Metric, " rate") {
			check = "ib_ports"
		}
		p.SlowRows = append(p.SlowRows, htmlSlowRow{slowFinding: f, Leaf: leafOf(f.Node), Replay: replayCommand(in, f.Node, check)})
	}
	return p, nil
}

// noLeafShort is the leaf column of a node under no leaf: empty without topology.conf.
func noLeafShort(leaf map[string]string) string {
	if len(leaf) == 0 {
		return ""
	}
	return "none"
}

// groupCells groups the nodes by leaf switch, leaves in the order of their first node, the
// nodes under no leaf last; without topology.conf one group holds all.
func groupCells(in htmlInput, verdict, why map[string]string) []htmlGroup {
	var names []string
	by := map[string][]string{}
	for _, n := range in.Nodes {
		l, ok := in.Leaf[n]
		if !ok {
			l = noLeaf
		}
		if _, seen := by[l]; !seen && l != noLeaf {
			names = append(names, l)
		}
		by[l] = append(by[l], n)
	}
	if len(by[noLeaf]) > 0 {
		names = append(names, noLeaf)
	}
	var out []htmlGroup
	for _, l := range names {
		g := htmlGroup{Name: l}
		count := map[string]int{}
		for _, n := range by[l] {
			v := cmp.Or(verdict[n], verdictMissing)
			count[v]++
			title := n + ": " + v
			if why[n] != "" {
				title += ": " + why[n]
			}
			g.Cells = append(g.Cells, htmlCell{Node: n, Verdict: v, Title: title})
		}
		parts := []string{fmt.Sprintf("%d nodes", len(by[l]))}
		for _, v := range []string{verdictHealthy, verdictSlow, verdictFailing, verdictMissing} {
			if count[v] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", count[v], v))
			}
		}
		g.Counts = parts[0] + ": " + strings.Join(parts[1:], ", ")
		out = append(out, g)
	}
	if len(in.Leaf) == 0 && len(out) == 1 {
		out[0].Name = "all nodes (no topology.conf)"
	}
	return out
}

func failLine(f failing) string {
	line := f.Summary
	if f.Check != "" {
		line = f.Check + ": " + line
	}
	if f.Remedy != "" {
		line += " [" + f.Remedy + "]"
	}
	if f.More > 0 {
		line += fmt.Sprintf(" (+%d more)", f.More)
	}
	return line
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// replayCommand runs the check again on the node, as the sweep ran it: an exclusive Slurm job.
func replayCommand(in htmlInput, node, check string) string {
	what := "--check " + check
	if check == "--all" {
		what = "--all"
	}
	return fmt.Sprintf("%s/srun -w %s --exclusive %s run %s", in.SlurmBin, node, in.Nodecheck, what)
}

// repairCommand is the next step by the failure's remedy (docs/remedies.md).
func repairCommand(in htmlInput, f failing) string {
	switch f.Remedy {
	case "reset_gpu":
		return fmt.Sprintf("with [repair] on, the node's health check resets the GPU; by hand: %s/srun -w %s --exclusive nvidia-smi --gpu-reset -i BUS_ID", in.SlurmBin, f.Node)
	case "reboot":
		return fmt.Sprintf("%s/scontrol reboot ASAP nextstate=RESUME reason=\"nodecheck: %s\" %s", in.SlurmBin, f.Check, f.Node)
	case "service":
		return fmt.Sprintf("replace the part or open a vendor case (%s explain %s)", in.Nodecheck, f.Check)
	case "admin":
		return fmt.Sprintf("fix the configuration or software: %s explain %s", in.Nodecheck, f.Check)
	}
	if f.Check != "" {
		return fmt.Sprintf("%s explain %s", in.Nodecheck, f.Check)
	}
	return ""
}

// Drawing of one model's figure: dots for the nodes (slow ones larger, labelled), the median
// and the slow line.
const (
	svgW, svgH       = 960, 150
	svgLeft, svgRght = 40, 20
	svgTop, svgBase  = 30, 110
)

// distribution draws group g's figures from the summary's figures.
func distribution(g fleetGroup, s summary) htmlDist {
	d := htmlDist{Title: fmt.Sprintf("%s %s%s (%s)", g.ModelName, g.Metric, prefixed(" at ", g.At), g.Unit)}
	var vals []figure
	for _, f := range s.Figures {
		if f.Model == g.Model && f.Metric == g.Metric && f.At == g.At && f.Unit == g.Unit {
			vals = append(vals, f)
		}
	}
	slow := map[string]bool{}
	for _, f := range s.Slow {
		if f.Model == g.Model && f.Metric == g.Metric && f.At == g.At {
			slow[f.Node] = true
		}
	}
	d.Note = fmt.Sprintf("%d nodes, median %s %s, MAD %s", g.Nodes, fmtValue(g.Median), g.Unit, fmtValue(g.MAD))
	if g.Judged {
		d.Note += fmt.Sprintf(", slow below %s", fmtValue(g.SlowBelow))
	} else {
		d.Note += ": too few nodes to judge"
	}
	lo, hi := g.Median, g.Median
	for _, f := range vals {
		lo, hi = math.Min(lo, f.Value), math.Max(hi, f.Value)
	}
	if g.Judged {
		lo = math.Min(lo, g.SlowBelow)
	}
	pad := math.Max((hi-lo)*0.05, math.Max(math.Abs(g.Median)*0.01, 0.5))
	lo, hi = lo-pad, hi+pad
	x := func(v float64) float64 { return svgLeft + (v-lo)/(hi-lo)*(svgW-svgLeft-svgRght) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="dist" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, svgW, svgH, svgW, svgH, template.HTMLEscapeString(d.Title))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, svgLeft, svgBase, svgW-svgRght, svgBase)
	for i := 0; i <= 5; i++ {
		v := lo + (hi-lo)*float64(i)/5
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick">%s</text>`, x(v), svgBase+16, fmtValue(v))
	}
	// Jitter by rank so that equal values stay visible: the same picture for the same summary.
	slices.SortStableFunc(vals, func(a, b figure) int { return cmp.Compare(a.Value, b.Value) })
	for i, f := range vals {
		y := svgBase - 12 - float64(i%6)*11
		cls, r := "dot healthy", 3.5
		if slow[f.Node] {
			cls, r = "dot slow", 6
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f" class="%s" data-node="%s"><title>%s: %s %s</title></circle>`,
			x(f.Value), y, r, cls, template.HTMLEscapeString(f.Node), template.HTMLEscapeString(f.Node), fmtValue(f.Value), template.HTMLEscapeString(f.Unit))
		if slow[f.Node] {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="slowlabel">%s</text>`, x(f.Value)+8, y+4, template.HTMLEscapeString(f.Node))
		}
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="median"/><text x="%.1f" y="%d" class="median">median %s</text>`,
		x(g.Median), svgTop, x(g.Median), svgBase, x(g.Median)+4, svgTop-6, fmtValue(g.Median))
	if g.Judged {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="threshold"/><text x="%.1f" y="%d" class="threshold" text-anchor="end">slow below %s</text>`,
			x(g.SlowBelow), svgTop, x(g.SlowBelow), svgBase, x(g.SlowBelow)-4, svgTop-6, fmtValue(g.SlowBelow))
	}
	b.WriteString(`</svg>`)
	d.SVG = template.HTML(b.String()) // built above from escaped parts only
	return d
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{"fmtValue": fmtValue}).Parse(htmlSource))
})
