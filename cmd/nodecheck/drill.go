package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/drill"
	"github.com/nodecheck/nodecheck/config"
	"github.com/spf13/cobra"
)

type drillOpts struct {
	node, snapshot, configPath, promFile, prometheus, alert, format string
	alertTimeout, poll                                              time.Duration
}

func newDrillCmd(g *globals) *cobra.Command {
	var o drillOpts
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Prove on a real node that a fault drains it, sets the metric and fires the alert; then resume it",
		Long: `Prove that detection works end to end on a node, without harming it. nodecheck replays a
failing snapshot in place of the node's facts (the node's own nodecheck.toml, its real Slurm)
and expects, step by step, each with its time:

  preflight         the node is in service, with no reason of nodecheck's
  replay and drain  the replay fails and drains the node, the reason naming the failing check
                    and its remedy, as Slurm shows it
  metrics written   nodecheck-drill.prom beside prom_file (its series labelled drill="1") says so
  series scraped    with --prometheus: Prometheus has the drill's series
  alert pending, alert firing
                    with --prometheus: the alert (NodecheckNodeUnhealthy of the shipped rules,
                    for: 10m) for the node, labelled drill="1"
  resume            the node back in service, if it still carries the drill's reason
  metrics removed   the drill's textfile taken away
  alert resolved    with --prometheus: the alert gone

The resume and the removal run whatever happened before (also on Ctrl-C). While the drill
runs the node takes no new jobs (running jobs go on); max_drained counts its drain. The
snapshot's checks judge the snapshot: a replay of another host's snapshot drains this node
only as the drill's stand-in fault. Exit 0 when every step passed, 1 when one failed, 2 when
the drill could not start.`,
		Example: `  nodecheck drill --node gpu017 --snapshot /root/snapshots/h100-ib-port-down
  nodecheck drill --node gpu017 --snapshot ./gpu017-ib-down --prometheus http://prometheus:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.node == "" || o.snapshot == "" {
				return usageError(cmd, "drill: give --node and --snapshot")
			}
			if o.format != "text" && o.format != "json" {
				return usageError(cmd, "drill: --format %q: want text or json", o.format)
			}
			res := drill.Run(cmd.Context(), drill.Options{Node: o.node, Snapshot: o.snapshot, ConfigPath: o.configPath,
				PromFile: o.promFile, Prometheus: o.prometheus, Alert: o.alert, AlertTimeout: o.alertTimeout, Poll: o.poll,
				Getenv: g.getenv, Version: versionString()})
			if err := printDrill(g, o.format, res); err != nil {
				return err
			}
			switch {
			case res.OK:
				return nil
			case len(res.Steps) == 1:
				return exitError{exitCannotRun} // the preflight: nothing was done
			}
			return exitError{exitUnhealthy}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.node, "node", "", "the Slurm node to drill (required)")
	f.StringVar(&o.snapshot, "snapshot", "", "a failing snapshot to replay in place of the node's facts (required)")
	f.StringVar(&o.configPath, "config", "", "nodecheck.toml (default "+config.DefaultConfigPath+" when it exists, else the built-in defaults)")
	f.StringVar(&o.promFile, "prom-file", "", "the drill's textfile (default "+drill.TextfileName+" in prom_file's directory)")
	f.StringVar(&o.prometheus, "prometheus", "", "Prometheus's address, http://HOST:PORT: also expect the series and the alert")
	f.StringVar(&o.alert, "alert", drill.DefaultAlert, "the alert to expect")
	f.DurationVar(&o.alertTimeout, "alert-timeout", drill.DefaultAlertTimeout, "how long to wait for the alert to fire, and to resolve")
	f.DurationVar(&o.poll, "poll", 2*time.Second, "time between questions to Prometheus")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	return cmd
}

// printDrill prints the steps: a table, or the result as JSON.
func printDrill(g *globals, format string, res drill.Result) error {
	if format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nodecheck drill of %s with %s\n", res.Node, res.Snapshot)
	for _, s := range res.Steps {
		word := "ok"
		switch {
		case s.Skip:
			word = "skip"
		case !s.OK:
			word = "FAIL"
		}
		fmt.Fprintf(&b, "%-17s %-4s  at %7.1fs  took %6.1fs  %s\n", s.Name, word, s.AtS, s.TookS, s.Detail)
	}
	verdict := "PASSED: a fault on this node drains it with its reason and remedy"
	if !res.OK {
		verdict = "FAILED: see the step above"
	}
	fmt.Fprintln(&b, verdict)
	_, err := fmt.Fprint(g.stdout, b.String())
	return err
}
