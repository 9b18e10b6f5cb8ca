//go:build gendocs

package main

import (
	"github.com/nodecheck/nodecheck/scripts/gendocs"
	"github.com/spf13/cobra"
)

// buildTimeCommands are the verbs of a build with the gendocs tag: the hidden gen-docs, which
// scripts/package.sh runs to write the man pages and shell completions the packages install.
// The shipped binary is built without the tag (gendocs_off.go), so that the man-page renderer
// is not initialised in every prolog (README "Speed").
func buildTimeCommands() []*cobra.Command { return []*cobra.Command{newGenDocsCmd()} }

func newGenDocsCmd() *cobra.Command {
	var o gendocs.Options
	cmd := &cobra.Command{
		Use:    "gen-docs [--man DIR] [--completions DIR]",
		Short:  "Write man pages and bash, zsh and fish completions (for packaging)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ManDir == "" && o.CompletionsDir == "" {
				return usageError(cmd, "gen-docs: give --man DIR, --completions DIR or both")
			}
			o.Source = "nodecheck " + versionString()
			return gendocs.Write(cmd.Root(), o)
		},
	}
	cmd.Flags().StringVar(&o.ManDir, "man", "", "write one man page per command (section 1) into this directory")
	cmd.Flags().StringVar(&o.CompletionsDir, "completions", "", "write "+gendocs.CompletionBash+", "+gendocs.CompletionZsh+" and "+gendocs.CompletionFish+" into this directory")
	return cmd
}
