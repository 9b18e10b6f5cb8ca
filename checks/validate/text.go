package validate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes rep for people: the verdict line, each test, and the figures (only those
// below their floor unless all is set).
func WriteText(w io.Writer, rep Report, all bool) error {
	var b strings.Builder
	model := rep.Model
	if model == "" {
		model = "unknown GPUs"
	}
	fmt.Fprintf(&b, "node %s: validation %s %s (%s, %.1fs)\n", rep.Node, rep.Level, strings.ToUpper(string(rep.Verdict)), model, rep.DurationS)
	if rep.Refused != "" {
		fmt.Fprintf(&b, "refused: %s\n", rep.Refused)
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tSTATUS\tREMEDY\tSUMMARY")
	for _, t := range rep.Tests {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Status, dash(string(t.Remedy)), t.Summary)
	}
	tw.Flush()
	var figs []Figure
	for _, f := range rep.Figures {
		if all || !f.OK {
			figs = append(figs, f)
		}
	}
	if len(figs) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FIGURE\tDEVICE\tVALUE\tFLOOR\tEXPECTED\tOK")
		for _, f := range figs {
			fmt.Fprintf(tw, "%s\t%s\t%.2f %s\t%s\t%s\t%v\n", f.Name, dash(f.Device), f.Value, f.Unit, num(f.Floor), num(f.Expected), f.OK)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%g", v)
}
