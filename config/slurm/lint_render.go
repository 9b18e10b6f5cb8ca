package slurm

// Lint's rendering: the Report as JSON (the documented `nodecheck lint --format json`) and as
// text for people. Nothing here judges; the rules are in lint.go and lint_eval.go.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nodecheck/nodecheck/config/text"
)

// WriteJSON writes the report as JSON (see Report for the schema): one node, problem or note a
// line, so that a 100,000-node report streams out quickly and diffs well.
func (r Report) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(struct {
		SlurmConf string `json:"slurm_conf"`
		GresConf  string `json:"gres_conf"`
	}{r.SlurmConf, r.GresConf})
	if err != nil {
		return fmt.Errorf("encode lint report: %w", err)
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(",\n\"nodes\": [")
	// Nodes that share a signature share their configured and gres_conf slices; encode
	// that tail once per distinct pair.
	tails := map[tailKey][]byte{}
	for i, n := range r.Nodes {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n{\"name\":")
		if err := writeJSONString(bw, n.Name); err != nil {
			return err
		}
		k := sharedKey(n)
		tail, ok := tails[k]
		if !ok {
			b, err := json.Marshal(struct {
				Configured []GresSpec  `json:"configured"`
				GresConf   []GresEntry `json:"gres_conf"`
				AutoDetect string      `json:"autodetect"`
			}{nonNil(n.Configured), nonNilEntries(n.GresConf), n.AutoDetect})
			if err != nil {
				return fmt.Errorf("encode lint report: node %s: %w", n.Name, err)
			}
			tail = b[1:]
			tails[k] = tail
		}
		bw.WriteByte(',')
		bw.Write(tail)
	}
	bw.WriteString("\n],\n\"problems\": [")
	if err := writeProblemsJSON(bw, r.Problems); err != nil {
		return err
	}
	bw.WriteString("],\n\"notes\": [")
	if err := writeProblemsJSON(bw, r.Notes); err != nil {
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// writeJSONString writes s as a JSON string. Node names are plain ASCII; anything else goes
// through encoding/json so escaping stays exactly its own.
func writeJSONString(bw *bufio.Writer, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, err := json.Marshal(s)
			if err != nil {
				return fmt.Errorf("encode lint report: %w", err)
			}
			bw.Write(b)
			return nil
		}
	}
	bw.WriteByte('"')
	bw.WriteString(s)
	bw.WriteByte('"')
	return nil
}

// tailKey identifies what a node shares with others: the same backing arrays (Lint hands
// nodes of one signature the same slices) and AutoDetect mean the same rendering.
type tailKey struct {
	c  *GresSpec
	nc int
	g  *GresEntry
	ng int
	ad string
}

func sharedKey(n NodeReport) tailKey {
	k := tailKey{nc: len(n.Configured), ng: len(n.GresConf), ad: n.AutoDetect}
	if k.nc > 0 {
		k.c = &n.Configured[0]
	}
	if k.ng > 0 {
		k.g = &n.GresConf[0]
	}
	return k
}

func nonNil(g []GresSpec) []GresSpec {
	if g == nil {
		return []GresSpec{}
	}
	return g
}

func nonNilEntries(g []GresEntry) []GresEntry {
	if g == nil {
		return []GresEntry{}
	}
	for i := range g {
		if g[i].Files == nil {
			// Copy rather than mutate a slice the caller owns.
			c := slices.Clone(g)
			for j := range c {
				if c[j].Files == nil {
					c[j].Files = noFiles
				}
			}
			return c
		}
	}
	return g
}

func writeProblemsJSON(bw *bufio.Writer, ps []Problem) error {
	for i, p := range ps {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode lint report: %w", err)
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	if len(ps) > 0 {
		bw.WriteString("\n")
	}
	return nil
}

// WriteText writes the report for people: a summary, the problems, the notes, then the nodes
// grouped by what they have (one row for a thousand identical nodes).
func (r Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "slurm.conf  %s\n", r.SlurmConf)
	if r.GresConf != "" {
		fmt.Fprintf(bw, "gres.conf   %s\n", r.GresConf)
	} else {
		fmt.Fprintf(bw, "gres.conf   (none)\n")
	}
	errs, warns := r.Errors(), r.Warnings()
	fmt.Fprintf(bw, "nodes       %d\n", len(r.Nodes))
	fmt.Fprintf(bw, "result      %d %s, %d %s\n", errs, text.Plural(errs, "error", "errors"), warns, text.Plural(warns, "warning", "warnings"))
	if len(r.Problems) > 0 {
		fmt.Fprintf(bw, "\nProblems:\n")
		for _, p := range r.Problems {
			writeProblemText(bw, p)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(bw, "\nNotes:\n")
		for _, p := range r.Notes {
			writeProblemText(bw, p)
		}
	}
	if len(r.Nodes) > 0 {
		fmt.Fprintf(bw, "\nNodes:\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  NODES\tSLURM.CONF GRES\tGRES.CONF\n")
		type row struct {
			names            []string
			configured, gres string
		}
		var rows []*row
		byKey := map[string]*row{}
		// Nodes that share their slices (a rack, a whole slurm.conf line) share a row: the
		// row text is built once per distinct pair of slices, not once per node.
		byShared := map[tailKey]*row{}
		for _, n := range r.Nodes {
			sk := sharedKey(n)
			rw, ok := byShared[sk]
			if !ok {
				c, g := gresText(n.Configured), entriesText(n.GresConf, n.AutoDetect)
				k := c + "\x00" + g
				if rw, ok = byKey[k]; !ok {
					rw = &row{configured: c, gres: g}
					byKey[k] = rw
					rows = append(rows, rw)
				}
				byShared[sk] = rw
			}
			rw.names = append(rw.names, n.Name)
		}
		for _, rw := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", CompressHostlist(rw.names), rw.configured, rw.gres)
		}
		tw.Flush()
	}
	return bw.Flush()
}

func writeProblemText(w io.Writer, p Problem) {
	msg := p.Message
	if p.Nodes != "" && !strings.Contains(msg, p.Nodes) {
		msg += " [nodes: " + p.Nodes + "]"
	}
	fmt.Fprintf(w, "  %-7s  %s\n", p.Severity, msg)
}

// entriesText describes a node's gres.conf lines in one cell: "gpu:h100 x8 /dev/nvidia[0-7]".
func entriesText(es []GresEntry, autodetect string) string {
	var parts []string
	if autodetect != "" {
		parts = append(parts, "AutoDetect="+autodetect)
	}
	for _, e := range es {
		s := e.Name
		if e.Type != "" {
			s += ":" + e.Type
		}
		s += " x" + formatGresCount(e.Count)
		if len(e.Files) > 0 {
			s += " " + CompressHostlist(e.Files)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
