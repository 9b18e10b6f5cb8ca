package main

// htmlSource is the report's page: everything inline, nothing fetched (no fonts, images,
// scripts or styles from anywhere). The script only reads the page: it checks that the grid
// shows every node of the embedded summary (console.error otherwise, which the Chromium test
// catches) and makes a grid cell scroll to its node's row.
const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nodecheck fleet sweep: {{.Summary.Nodes}} nodes, {{.Failing}} failing, {{.Slow}} slow, {{.Missing}} missing</title>
<style>
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #212121; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
.meta { color: #555; }
.counts span { display: inline-block; margin-right: 14px; font-weight: 600; }
.legend span, .counts span.k { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; border-radius: 2px; }
.legend { margin: 8px 0 0; }
.legend label { margin-right: 14px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, 66px); gap: 3px; }
.node { height: 22px; font: 10px/22px ui-monospace, monospace; text-align: center; border-radius: 3px; overflow: hidden; white-space: nowrap; cursor: default; }
.node.healthy, .legend .healthy { background: #c8e6c9; color: #1b5e20; }
.node.slow, .legend .slow { background: #ff8f00; color: #000; font-weight: 700; outline: 2px solid #e65100; }
.node.failing, .legend .failing { background: #c62828; color: #fff; font-weight: 700; outline: 2px solid #7f0000; }
.node.missing, .legend .missing { background: #616161; color: #fff; font-weight: 700; }
.node.failing, .node.slow, .node.missing { cursor: pointer; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e0e0e0; vertical-align: top; }
th { background: #f5f5f5; }
td code { font-size: 12px; white-space: pre-wrap; word-break: break-all; }
tr.target { background: #fff59d; }
svg.dist { display: block; max-width: 100%; height: auto; }
svg .axis { stroke: #9e9e9e; }
svg .tick { font-size: 10px; fill: #616161; text-anchor: middle; }
svg .dot.healthy { fill: #43a047; fill-opacity: 0.6; }
svg .dot.slow { fill: #ff8f00; stroke: #e65100; stroke-width: 2; }
svg .slowlabel { font: 700 11px ui-monospace, monospace; fill: #e65100; }
svg line.median { stroke: #1565c0; stroke-width: 2; }
svg text.median { font-size: 11px; fill: #1565c0; }
svg line.threshold { stroke: #c62828; stroke-width: 2; stroke-dasharray: 6 4; }
svg text.threshold { font-size: 11px; fill: #c62828; }
.placeholder { border: 1px dashed #9e9e9e; padding: 8px 12px; color: #555; }
</style>
</head>
<body>
<h1>nodecheck fleet sweep</h1>
<div class="meta">{{.Summary.Nodes}} nodes{{if .Summary.ElapsedS}}, swept in {{printf "%.1f" .Summary.ElapsedS}} s{{end}}{{if .Summary.OutDir}}; reports in <code>{{.Summary.OutDir}}</code>{{end}}{{if .Topology}}; leaf switches from <code>{{.Topology}}</code>{{end}}</div>
<p class="counts" id="counts"><span class="v-healthy">{{.Healthy}} healthy</span><span class="v-slow">{{.Slow}} slow</span><span class="v-failing">{{.Failing}} failing</span><span class="v-missing">{{.Missing}} missing</span></p>

<h2>Nodes by leaf switch</h2>
<div class="legend"><label><span class="healthy"></span>healthy</label><label><span class="slow"></span>slow (below its model's fleet median)</label><label><span class="failing"></span>failing (a check failed)</label><label><span class="missing"></span>missing (no report)</label></div>
{{range .Groups}}<section class="leaf" data-leaf="{{.Name}}">
<h3>{{.Name}} <span class="meta">{{.Counts}}</span></h3>
<div class="grid">{{range .Cells}}<div class="node {{.Verdict}}" data-node="{{.Node}}" data-verdict="{{.Verdict}}" title="{{.Title}}">{{.Node}}</div>{{end}}</div>
</section>
{{end}}
<h2 id="failing">Failing nodes ({{.Failing}})</h2>
{{if .FailRows}}<table id="failing-table"><thead><tr><th>node</th><th>leaf</th><th>check</th><th>why</th><th>remedy</th><th>run the check again</th><th>repair</th></tr></thead><tbody>
{{range .FailRows}}<tr data-node="{{.Node}}" data-check="{{.Check}}" data-remedy="{{.Remedy}}"><td><b>{{.Node}}</b></td><td>{{.Leaf}}</td><td>{{.Check}}{{if and .Status (ne .Status "fail")}} ({{.Status}}){{end}}</td><td>{{.Summary}}{{if .More}} (+{{.More}} more){{end}}</td><td>{{.Remedy}}</td><td><code>{{.Replay}}</code></td><td><code>{{.Repair}}</code></td></tr>
{{end}}</tbody></table>{{else}}<p>None.</p>{{end}}

<h2 id="slow">Slow nodes ({{.Slow}})</h2>
{{if .SlowRows}}<table id="slow-table"><thead><tr><th>node</th><th>leaf</th><th>figure</th><th>value</th><th>median</th><th>below</th><th>robust z</th><th>measure again</th></tr></thead><tbody>
{{range .SlowRows}}<tr data-node="{{.Node}}" data-metric="{{.Metric}}"><td><b>{{.Node}}</b></td><td>{{.Leaf}}</td><td>{{.ModelName}} {{.Metric}}{{if .At}} at {{.At}}{{end}}</td><td>{{fmtValue .Value}} {{.Unit}}</td><td>{{fmtValue .Median}}</td><td>{{printf "%.1f" .BelowPct}}%</td><td>{{if ge .RobustZ 0.0}}{{printf "%.1f" .RobustZ}}{{end}}</td><td><code>{{.Replay}}</code></td></tr>
{{end}}</tbody></table>{{else}}<p>None.</p>{{end}}

<h2 id="missing">Missing nodes ({{.Missing}})</h2>
{{if .Summary.Missing}}<table id="missing-table"><thead><tr><th>node</th><th>why there is no report</th></tr></thead><tbody>
{{range .Summary.Missing}}<tr data-node="{{.Node}}"><td><b>{{.Node}}</b></td><td>{{.Reason}}</td></tr>
{{end}}</tbody></table>{{else}}<p>None.</p>{{end}}

<h2 id="figures">Figures against the fleet, by GPU model</h2>
<p class="meta">Each dot is a healthy node's figure; the blue line is the model's median, the red dashed line the slow line (--slow-mad scaled MADs and --slow-floor below the median).</p>
{{range .Dists}}<figure class="dist"><h3>{{.Title}}</h3><div class="meta">{{.Note}}</div>{{.SVG}}</figure>
{{else}}<p>No NCCL figures: no healthy node measured nccl_allreduce with a known GPU model.</p>{{end}}
{{if .OtherFigures}}<p class="meta">{{.OtherFigures}} more figures (InfiniBand port rates by model and port) have no slow node and are not drawn; the JSON summary lists them ("fleet", "figures").</p>{{end}}

<h2 id="validation">Validation figures against their floors</h2>
<div class="placeholder">nodecheck's validation (DCGM diagnostics, nvbandwidth, nccl-tests and GEMM figures judged against per-model floors) is not built yet; its figures and floors will be drawn here.</div>

<script type="application/json" id="sweep-summary">{{.Data}}</script>
<script>
(function () {
  "use strict";
  var s = JSON.parse(document.getElementById("sweep-summary").textContent);
  var cells = document.querySelectorAll(".grid .node");
  if (cells.length !== s.nodes) {
    console.error("the grid shows " + cells.length + " nodes, the summary has " + s.nodes);
  }
  var want = {};
  (s.failing || []).forEach(function (f) { want[f.node] = "failing"; });
  (s.missing || []).forEach(function (m) { want[m.node] = "missing"; });
  (s.slow || []).forEach(function (f) { if (!want[f.node]) { want[f.node] = "slow"; } });
  cells.forEach(function (c) {
    var v = want[c.dataset.node] || "healthy";
    if (c.dataset.verdict !== v) {
      console.error("node " + c.dataset.node + " is drawn " + c.dataset.verdict + ", the summary says " + v);
    }
    if (v === "healthy") { return; }
    c.addEventListener("click", function () {
      var rows = document.querySelectorAll("tr[data-node]");
      rows.forEach(function (r) {
        r.classList.toggle("target", r.dataset.node === c.dataset.node);
        if (r.dataset.node === c.dataset.node) { r.scrollIntoView({block: "center"}); }
      });
    });
  });
  document.documentElement.dataset.checked = "yes";
})();
</script>
</body>
</html>
`
