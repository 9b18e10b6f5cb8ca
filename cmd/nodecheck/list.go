package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/spf13/cobra"
)

type listedCheck struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	Timeout     string   `json:"timeout"`
	Modes       []string `json:"modes"`
}

func newListCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the checks in run order, with their default settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default(checks.Schema())
			var out []listedCheck
			for _, c := range checks.All() {
				s := checks.Settings(cfg, c)
				out = append(out, listedCheck{ID: c.ID(), Description: c.Description(), Enabled: s.Enabled, Timeout: s.Timeout.String(), Modes: s.Modes})
			}
			switch format {
			case "json":
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			case "text":
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CHECK\tTIMEOUT\tMODES\tDESCRIPTION")
				for _, c := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Timeout, strings.Join(c.Modes, ","), c.Description)
				}
				return tw.Flush()
			}
			return usageError(cmd, "--format %q: use text or json", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
