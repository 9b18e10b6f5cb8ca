package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/spf13/cobra"
)

type snapshotOpts struct {
	out        string
	nodeName   string
	slurmConf  string
	configPath string
	// from records a recorded node again (tests: a snapshot of a snapshot); "" is the live
	// node.
	from string
}

// inventoryTimeout bounds each of the inventory reads a snapshot adds after the checks
// (node.Recorder.RecordInventory), and the lookup of slurm.conf's path.
const inventoryTimeout = 30 * time.Second

func newSnapshotCmd(g *globals) *cobra.Command {
	var o snapshotOpts
	cmd := &cobra.Command{
		Use:   "snapshot --out DIR",
		Short: "Record this node for replay elsewhere (nodecheck run --snapshot DIR)",
		Long: `Record this node: run every check, in manual mode, through a recorder, and write what
they read to DIR (which must be missing or empty) in the snapshot format that
nodecheck run --snapshot replays, so that a replay anywhere gives the same results.

Only what is read is recorded, never whole trees: the files the checks read, the /dev
entries they looked at, the commands they ran with their output, the PCI functions'
link attributes (/sys/bus/pci/devices links kept), the InfiniBand port attributes
(never the port counters), what NVML reported, the host name, and the nodecheck.toml
the run used (at its default path, where replay looks for it). Credentials are never
written even if read (/etc/munge, /etc/shadow, /etc/ssh, /root, /home, *.key, *.pem).
A read or command that did not finish before its deadline replays as a hang.

No drain or resume is done. The exit code is 0 once DIR is written, whatever the checks
found, and 2 if nothing could be recorded.`,
		Example: `  nodecheck snapshot --out /tmp/gpu01-snap
  nodecheck snapshot --out /tmp/gpu01-snap --node gpu01 --slurm-conf /opt/slurm/etc/slurm.conf
  tar czf gpu01-snap.tgz -C /tmp gpu01-snap     # links and ':' in names are kept by tar`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return usageError(cmd, "--out DIR is required")
			}
			if code := takeSnapshot(cmd.Context(), g, o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to write the snapshot to (must be missing or empty)")
	f.StringVar(&o.nodeName, "node", "", "the node's Slurm name (default: SLURMD_NODENAME, then slurm.conf host name matching)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "slurm.conf to read (default: SLURM_CONF, slurmd's configless cache, /etc/slurm/slurm.conf)")
	f.StringVar(&o.configPath, "config", "", "nodecheck.toml to use (default "+config.DefaultConfigPath+"); recorded at the default path")
	return cmd
}

// takeSnapshot is `nodecheck snapshot` without the flag parsing: it records, saves, prints
// what was recorded, and returns the exit code.
func takeSnapshot(ctx context.Context, g *globals, o snapshotOpts) int {
	g.watch.Listen() // a signal cancels the recording, as it cancels a run
	res, err := recordNode(ctx, g, o)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: snapshot: %v\n", err)
		return exitCannotRun
	}
	printRecorded(g.stdout, o.out, res)
	return exitHealthy
}

// recorded is what recordNode did.
type recorded struct {
	report checks.Report
	meta   node.Meta
	saved  node.Saved
	gpus   node.GPUInventory
	gpuErr error
}

// recordNode builds a manual run's environment through a node.Recorder (run.NewEnv), runs
// every check, adds the node's inventory and the config, and saves it.
func recordNode(ctx context.Context, g *globals, o snapshotOpts) (recorded, error) {
	var res recorded
	if err := checkEmptyDir(o.out); err != nil {
		return res, err
	}
	takenAt := time.Now().UTC().Truncate(time.Second)
	var rec *node.Recorder
	env, setup, err := run.NewEnv(ctx, run.EnvOptions{
		Mode: config.ModeManual, ConfigPath: o.configPath, SnapshotDir: o.from, NodeName: o.nodeName,
		SlurmConf: o.slurmConf, Getenv: g.getenv, GPUSource: newGPUSource(), Start: g.watch.Start(),
		// Every fact, whatever the checks judge: a snapshot serves checks added later.
		GPUFields: node.AllGPUFields,
		Wrap:      func(f node.Facts) node.Facts { rec = node.NewRecorder(f); return rec },
		// A recording reads the node, it does not change its state: the history is the
		// node's own runs'. What the history reads is recorded below.
		NoHistory: true,
	})
	if err != nil {
		return res, fmt.Errorf("no check ran, so nothing was recorded: %w", err)
	}
	defer setup.State.Close()
	res.report = checks.Run(ctx, env, checks.All(), env.RunOptions())

	res.gpus, res.gpuErr = rec.RecordInventory(ctx, inventoryTimeout)
	// The boot id and the uptime, which a replay with --state-dir needs to place the kernel
	// log's events and the counters in the node's history (a failure leaves them out).
	bctx, bcancel := context.WithTimeout(ctx, inventoryTimeout)
	for _, p := range checks.BootFiles() {
		_, _ = rec.ReadFile(bctx, p)
	}
	bcancel()

	// nodecheck.toml is read from disk, not through the facts, on the live node (and with
	// --config in a replay): record it where replay looks for it.
	if o.from == "" || o.configPath != "" {
		path := o.configPath
		if path == "" {
			path = config.DefaultConfigPath
		}
		b, err := config.ReadConfigFile(ctx, path)
		switch {
		case err == nil:
			if err := rec.AddFile(config.DefaultConfigPath, b); err != nil {
				return res, err
			}
		case o.configPath != "" || !isNotExist(err):
			return res, fmt.Errorf("record %s: %w", path, err)
		}
	}

	res.meta = node.Meta{NodeName: env.Node, TakenAt: takenAt, NodecheckVersion: versionString()}
	sctx, cancel := context.WithTimeout(ctx, inventoryTimeout)
	defer cancel()
	if p, err := env.Slurm.ConfPath(sctx); err == nil {
		res.meta.SlurmConf = p
	}
	saved, err := rec.Save(o.out, res.meta)
	if err != nil {
		return res, err
	}
	res.saved = saved
	return res, nil
}

// checkEmptyDir fails early, before any check runs, where Save would refuse dir.
func checkEmptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case isNotExist(err):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(ents) > 0:
		return fmt.Errorf("--out %s: directory is not empty; name a new one", dir)
	}
	return nil
}

// printRecorded says what the snapshot holds.
func printRecorded(w io.Writer, dir string, r recorded) {
	host := r.saved.Hostname
	fmt.Fprintf(w, "recorded node %s (host %s) in %s\n", r.meta.NodeName, host, dir)
	var res []string
	for _, x := range r.report.Results {
		res = append(res, x.Check+" "+string(x.Status))
	}
	fmt.Fprintf(w, "  checks:   %s\n", strings.Join(res, ", "))
	fmt.Fprintf(w, "  files:    %d (%d PCI links)\n", r.saved.Files, r.saved.Links)
	fmt.Fprintf(w, "  devices:  %d\n", r.saved.Devices)
	fmt.Fprintf(w, "  commands: %d\n", r.saved.Commands)
	switch {
	case !r.saved.NVML:
		fmt.Fprintf(w, "  nvml:     not recorded (%v)\n", r.gpuErr)
	case r.gpuErr != nil:
		fmt.Fprintf(w, "  nvml:     %v (replays as a hang)\n", r.gpuErr)
	case r.gpus.Init != node.InitSuccess:
		fmt.Fprintf(w, "  nvml:     init %s\n", r.gpus.Init)
	default:
		fmt.Fprintf(w, "  nvml:     driver %s, %d GPUs\n", r.gpus.DriverVersion, r.gpus.DeviceCount)
	}
	if len(r.saved.Facts) > 0 {
		fmt.Fprintf(w, "  facts:    %s\n", strings.Join(r.saved.Facts, ", "))
	}
	if len(r.saved.Hangs) > 0 {
		fmt.Fprintf(w, "  hung:     %s (replay as hangs)\n", strings.Join(r.saved.Hangs, ", "))
	}
	if len(r.saved.Withheld) > 0 {
		fmt.Fprintf(w, "  withheld: %s (secrets: replay sees them as absent)\n", strings.Join(r.saved.Withheld, ", "))
	}
	fmt.Fprintf(w, "  size:     %s\n", humanBytes(r.saved.Bytes))
	fmt.Fprintf(w, "replay with: nodecheck run --all --snapshot %s\n", dir)
}

// humanBytes writes n in B, KiB or MiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
