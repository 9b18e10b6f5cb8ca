package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// lintOptions are the inputs of `nodecheck lint`. The function fields default to the real
// environment and file system; tests replace them.
type lintOptions struct {
	SlurmConf string // --slurm-conf; empty: found as Slurm does (FindSlurmConf)
	GresConf  string // --gres-conf; empty: gres.conf beside slurm.conf, if there is one
	Format    string // --format: text or json

	Getenv   func(string) string
	ReadFile slurm.ReadFileFunc
	Exists   func(string) bool
}

func newLintCmd() *cobra.Command {
	o := lintOptions{Format: "text"}
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check slurm.conf and gres.conf against each other for every node",
		Long: `lint reads slurm.conf and gres.conf and checks them against each other for every node
slurm.conf defines, as slurmd and slurmctld will: GPU counts that differ (nodes then register
with fewer GPUs, go INVAL, and jobs stay PENDING), types in one file and not the other,
duplicate device files, Cores= beyond the node's CPUs, gres.conf lines that match no node,
GRES missing from GresTypes, unknown keys and broken hostlists. Each problem names the file
and line, the nodes (as one hostlist), and what to change.

slurm.conf is found as Slurm finds it (--slurm-conf, SLURM_CONF, slurmd's configless cache,
/etc/slurm/slurm.conf); gres.conf defaults to the one beside it.

Exit codes: 0 no error (warnings allowed), 1 errors found, 2 a file could not be read or
the usage is wrong.`,
		Example: `  nodecheck lint
  nodecheck lint --slurm-conf /etc/slurm/slurm.conf --gres-conf /etc/slurm/gres.conf
  nodecheck lint --format json | jq '.problems[] | select(.severity == "error")'`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := runLint(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.SlurmConf, "slurm-conf", "", "slurm.conf to read (default: as Slurm finds it)")
	f.StringVar(&o.GresConf, "gres-conf", "", "gres.conf to read (default: gres.conf beside slurm.conf)")
	f.StringVar(&o.Format, "format", "text", "output format: text or json")
	return cmd
}

// runLint lints and writes the report to stdout; it returns the exit code.
func runLint(ctx context.Context, stdout, stderr io.Writer, o lintOptions) int {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	if o.Exists == nil {
		o.Exists = func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		}
	}
	if o.Format == "" {
		o.Format = "text"
	}
	if o.Format != "text" && o.Format != "json" {
		fmt.Fprintf(stderr, "nodecheck lint: --format=%s: want text or json\n", o.Format)
		return exitCannotRun
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: %v\n", err)
		return exitCannotRun
	}
	path, err := slurm.FindSlurmConf(o.SlurmConf, o.Getenv, o.Exists)
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: %v\n", err)
		return exitCannotRun
	}
	sc, err := slurm.LoadSlurmConf(path, o.ReadFile)
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: %s: %v\n", path, err)
		return exitCannotRun
	}
	gresPath := o.GresConf
	if gresPath == "" {
		gresPath = filepath.Join(filepath.Dir(path), "gres.conf")
	}
	gc, err := slurm.LoadGresConf(gresPath, o.ReadFile)
	switch {
	case err != nil && o.GresConf == "" && errors.Is(err, fs.ErrNotExist):
		// No gres.conf beside slurm.conf is a legal setup (no GRES, or all AutoDetect);
		// Lint then says what that means for nodes that configure GPUs.
		gc = nil
	case err != nil:
		fmt.Fprintf(stderr, "nodecheck lint: %s: %v\n", gresPath, err)
		return exitCannotRun
	}
	r := slurm.Lint(sc, gc)
	if o.Format == "json" {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodecheck lint: write report: %v\n", err)
		return exitCannotRun
	}
	if r.Errors() > 0 {
		return exitUnhealthy
	}
	return exitHealthy
}
