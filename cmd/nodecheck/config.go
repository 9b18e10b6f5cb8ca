package main

import (
	"context"
	"fmt"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/spf13/cobra"
)

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or validate nodecheck.toml",
	}
	var path, nodeName string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (built-in defaults, the file, and --node's group overrides)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfigFile(cmd.Context(), path)
			if err != nil {
				fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
				return exitError{exitCannotRun}
			}
			if nodeName != "" {
				if cfg, err = cfg.ForNode(nodeName); err != nil {
					fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
					return exitError{exitCannotRun}
				}
			}
			return cfg.Encode(g.stdout)
		},
	}
	show.Flags().StringVar(&path, "config", "", "nodecheck.toml (default "+config.DefaultConfigPath+" when it exists, else the built-in defaults)")
	show.Flags().StringVar(&nodeName, "node", "", "apply the [[group]] overrides that match this node")
	var checkPath string
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a nodecheck.toml: exit 0 when valid, 2 with file:line and the fix when not",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := checkPath
			if len(args) == 1 {
				p = args[0]
			}
			if p == "" {
				p = config.DefaultConfigPath
			}
			if _, _, err := config.LoadConfigData(cmd.Context(), p, checks.Schema()); err != nil {
				fmt.Fprintf(g.stderr, "nodecheck: %v\n", err)
				return exitError{exitCannotRun}
			}
			fmt.Fprintf(g.stdout, "%s: ok\n", p)
			return nil
		},
	}
	check.Flags().StringVar(&checkPath, "config", "", "the file to validate (or give it as the argument)")
	cmd.AddCommand(show, check)
	return cmd
}

// loadConfigFile reads path, or the default path when it exists, or gives the defaults.
func loadConfigFile(ctx context.Context, path string) (*config.Config, error) {
	if path != "" {
		cfg, _, err := config.LoadConfigData(ctx, path, checks.Schema())
		return cfg, err
	}
	cfg, _, err := config.LoadConfigData(ctx, config.DefaultConfigPath, checks.Schema())
	if isNotExist(err) {
		return config.Default(checks.Schema()), nil
	}
	return cfg, err
}
