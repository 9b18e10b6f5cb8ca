package main

import (
	"fmt"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/spf13/cobra"
)

func newExplainCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "explain [CHECK]",
		Short: "Say what a check reads, when it passes, fails and skips, its settings, and what to do when it fails",
		Long: `Explain a check for the admin whose node it drained: what it reads, when it passes,
warns, fails, skips or cannot decide, its settings in nodecheck.toml with their built-in
defaults, and what to do when it fails. Without CHECK, list the checks.`,
		Example: `  nodecheck explain
  nodecheck explain ib_ports`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: checks.IDs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return checks.ExplainIndex(g.stdout)
			}
			if err := checks.Explain(g.stdout, args[0]); err != nil {
				fmt.Fprintf(g.stderr, "nodecheck explain: %v\n", err)
				return exitError{exitCannotRun}
			}
			return nil
		},
	}
}
