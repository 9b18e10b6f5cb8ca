package report

import (
	"fmt"
	"io"

	"github.com/nodecheck/nodecheck/drain"
	"github.com/nodecheck/nodecheck/drain/repair"
)

// WriteActions adds under the text table what the run did to the node: drain's outcome, then
// the repair step's (each omitted when nil: the run could not act). Each is "WHAT: ACTION:
// MESSAGE", then the commands run (or, in a dry run, the ones that would have been) and the
// warnings.
func WriteActions(w io.Writer, d *drain.Outcome, r *repair.Outcome) error {
	if d != nil {
		if err := writeAction(w, "drain", string(d.Action), d.Message, d.DryRun, d.Commands, d.Warnings); err != nil {
			return err
		}
	}
	if r != nil {
		return writeAction(w, "repair", string(r.Action), r.Message, r.DryRun, r.Commands, r.Warnings)
	}
	return nil
}

func writeAction(w io.Writer, what, action, msg string, dryRun bool, commands, warnings []string) error {
	verb := "ran"
	if dryRun {
		verb = "would run"
	}
	s := fmt.Sprintf("%s: %s: %s\n", what, action, msg)
	for _, c := range commands {
		s += fmt.Sprintf("  %s: %s\n", verb, c)
	}
	for _, warn := range warnings {
		s += fmt.Sprintf("  warning: %s\n", warn)
	}
	_, err := io.WriteString(w, s)
	return err
}
