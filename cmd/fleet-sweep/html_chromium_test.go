package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestHTMLReportChromium opens the 256-node sweep's HTML report (sweep256) in a real headless
// Chromium (Debian's) and checks, through the DevTools protocol: the page loads with no
// console error, warning or exception (its own script checks the grid against the embedded
// summary and logs an error on any difference); it requests nothing but its own file; every
// node is drawn once, in its leaf switch's group, with the summary's verdict; the failing
// nodes' rows carry their check and remedy; and in a screenshot of the whole page, each
// failing node's cell is red, each slow one amber and a healthy one pale green. The
// screenshot and the page are kept as the test's artifacts (go test -artifacts -outputdir DIR).
func TestHTMLReportChromium(t *testing.T) {
	s, in := sweep256(t)
	var page bytes.Buffer
	if err := writeHTML(&page, in); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "sweep-256.html", page.Bytes())

	started := time.Now()
	c := startChromium(t)
	ready := time.Since(started)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "file://" + path
	navigated := time.Now()
	c.mustCall(t, ctx, c.session, "Page.navigate", map[string]any{"url": url}, nil)
	if err := c.waitEvent(ctx, "Page.loadEventFired"); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(navigated)
	var checked string
	c.eval(t, ctx, `document.documentElement.dataset.checked || ""`, &checked)
	t.Logf("chromium ready after %s; the %d KiB page loaded in %s", ready.Round(time.Millisecond), page.Len()/1024, loaded.Round(time.Millisecond))
	if checked != "yes" {
		t.Errorf("the page's script did not run to its end (data-checked %q)", checked)
	}
	for _, p := range c.consoleProblems() {
		t.Errorf("the page: %s", p)
	}
	for _, u := range c.requests() {
		if u != url {
			t.Errorf("the page requested %s", u)
		}
	}

	type cell struct {
		Node, Verdict, Leaf string
		X, Y, W, H          float64
	}
	var cells []cell
	c.eval(t, ctx, cellsJS, &cells)
	if len(cells) != s.Nodes {
		t.Fatalf("%d cells drawn, the summary has %d nodes", len(cells), s.Nodes)
	}
	byNode := map[string]cell{}
	for _, cl := range cells {
		if _, dup := byNode[cl.Node]; dup {
			t.Errorf("%s drawn twice", cl.Node)
		}
		byNode[cl.Node] = cl
		if want := in.Leaf[cl.Node]; cl.Leaf != want {
			t.Errorf("%s drawn under %q, topology.conf puts it under %q", cl.Node, cl.Leaf, want)
		}
		if cl.W < 20 || cl.H < 10 {
			t.Errorf("%s drawn %vx%v px: too small to see", cl.Node, cl.W, cl.H)
		}
	}
	type row struct{ Node, Check, Remedy string }
	var rows []row
	c.eval(t, ctx, `[...document.querySelectorAll("#failing-table tbody tr")].map(e => ({Node: e.dataset.node, Check: e.dataset.check, Remedy: e.dataset.remedy}))`, &rows)
	var want []row
	for _, f := range s.Failing {
		want = append(want, row{f.Node, f.Check, f.Remedy})
		if byNode[f.Node].Verdict != verdictFailing {
			t.Errorf("failing %s drawn %q", f.Node, byNode[f.Node].Verdict)
		}
	}
	if !slices.Equal(rows, want) {
		t.Errorf("failing rows %v, the summary says %v", rows, want)
	}
	for _, n := range s.slowNodes() {
		if byNode[n].Verdict != verdictSlow {
			t.Errorf("slow %s drawn %q", n, byNode[n].Verdict)
		}
	}

	shot := c.screenshot(t, ctx, 1280)
	saveArtifact(t, "sweep-256.png", shot)
	// The screenshot's width lays the page out anew: where the cells are now.
	c.eval(t, ctx, cellsJS, &cells)
	for _, cl := range cells {
		byNode[cl.Node] = cl
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	colour := map[string][3]uint8{verdictFailing: {0xc6, 0x28, 0x28}, verdictSlow: {0xff, 0x8f, 0x00}, verdictHealthy: {0xc8, 0xe6, 0xc9}}
	for _, n := range append(append(slices.Clone(s.slowNodes()), "n001", "n255"), failingNodes(s)...) {
		cl := byNode[n]
		if got, want := pixel(img, cl.X+3, cl.Y+cl.H/2), colour[cl.Verdict]; !near(got, want) {
			t.Errorf("%s (%s) at (%.0f,%.0f) in the screenshot is #%02x%02x%02x, want #%02x%02x%02x", n, cl.Verdict, cl.X+3, cl.Y+cl.H/2, got[0], got[1], got[2], want[0], want[1], want[2])
		}
	}
}

// cellsJS lists the grid's cells: node, verdict, leaf group and place on the page.
const cellsJS = `[...document.querySelectorAll(".grid .node")].map(e => { const r = e.getBoundingClientRect();
	return {Node: e.dataset.node, Verdict: e.dataset.verdict, Leaf: e.closest("section.leaf").dataset.leaf,
		X: r.x + window.scrollX, Y: r.y + window.scrollY, W: r.width, H: r.height}; })`

func failingNodes(s summary) []string {
	var out []string
	for _, f := range s.Failing {
		out = append(out, f.Node)
	}
	return out
}

func pixel(img image.Image, x, y float64) [3]uint8 {
	r, g, b, _ := img.At(int(x), int(y)).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// near: each channel within 24 of the other (anti-aliasing, colour management).
func near(a, b [3]uint8) bool {
	for i := range a {
		if d := int(a[i]) - int(b[i]); d > 24 || d < -24 {
			return false
		}
	}
	return true
}
