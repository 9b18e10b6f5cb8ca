package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/spf13/cobra"
)

type historyOpts struct {
	gpu        string
	port       string
	since      string
	at         string
	format     string
	stateDir   string
	nodeName   string
	configPath string
}

// historyLockWait is how long `nodecheck history clear` waits for a run of the node to save.
const historyLockWait = 10 * time.Second

func newHistoryCmd(g *globals) *cobra.Command {
	var o historyOpts
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the node's history: per GPU and port what holds, why, and what would clear it",
		Long: `Show the node's history as the checks that judge over time (xid_errors, gpu_error_rates,
ib_flaps) keep it in <state dir>/history/<node>.json: per GPU (by UUID and serial) and per
InfiniBand port, what holds now by the same rules the runs fail a node by (from nodecheck.toml,
[[group]] applied), since when, and what would clear it; then the entries, oldest first:
XIDs, resets, counter readings, port states and link downs, boots, driver loads, admin
clears and repairs.

The state directory is --state-dir, else [state] dir of nodecheck.toml. The node is --node,
else SLURMD_NODENAME, else the slurm.conf NodeName of this host. Nothing is changed: the
file is read without the lock (runs replace it atomically), and a file that cannot be used
is left for the next run to set aside.`,
		Example: `  nodecheck history
  nodecheck history --gpu 0000:9b:00.0 --since 7d
  nodecheck history --port mlx5_0/1 --format json
  nodecheck history --state-dir /tmp/replay --node gpu-h100-01 --at last`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := showHistory(cmd.Context(), g, o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	historyFlags(cmd, &o)
	f := cmd.Flags()
	f.StringVar(&o.gpu, "gpu", "", "only this GPU: a bus id (0000:9b:00.0, as NVML or the kernel log writes it too), a UUID, or serial:N")
	f.StringVar(&o.port, "port", "", "only this port: DEVICE/PORT (mlx5_0/1) or an interface on it (ib0)")
	f.StringVar(&o.since, "since", "", "only entries of this long before now: 24h, 90m, 7d")
	f.StringVar(&o.at, "at", "", "judge at this time instead of now: RFC 3339, or \"last\" for the last run's (a replayed sequence's taken_at)")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.AddCommand(newHistoryClearCmd(g))
	return cmd
}

// historyFlags are the flags that say whose history, where.
func historyFlags(cmd *cobra.Command, o *historyOpts) {
	f := cmd.Flags()
	f.StringVar(&o.stateDir, "state-dir", "", "the state directory (default: [state] dir of nodecheck.toml)")
	f.StringVar(&o.nodeName, "node", "", "the node's Slurm name (default: SLURMD_NODENAME, then slurm.conf host name matching)")
	f.StringVar(&o.configPath, "config", "", "nodecheck.toml (default "+config.DefaultConfigPath+" when it exists, else the built-in defaults)")
}

func newHistoryClearCmd(g *globals) *cobra.Command {
	var o historyOpts
	var all bool
	var gpu, port, reason string
	cmd := &cobra.Command{
		Use:   "clear --gpu BUS | --port DEVICE/PORT | --all [--reason TEXT]",
		Short: "Clear what the node's history holds against a GPU, a port or everything (logged, and kept in the file)",
		Long: `Clear what the node's history holds against a GPU, a port, or the whole node: a sticky XID,
a counter rate, a port's flaps. Everything the target held up to now stops counting; what
happens afterwards counts again. The clear is not a deletion: the file keeps who cleared
what, when and why (nodecheck history shows it), and the log says it too. Use it after a
repair nodecheck cannot see (a GPU replaced and the node not rebooted, a cable reseated).
It takes the lock the runs take, so a run at the same moment cannot lose it.`,
		Example: `  nodecheck history clear --gpu 0000:9b:00.0 --reason "reseated after XID 79, ticket 4711"
  nodecheck history clear --port mlx5_3/1 --reason "cable replaced"
  nodecheck history clear --all --reason "node back from RMA"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sel := history.Selector{All: all, GPU: gpu, Port: port}
			if n := btoi(all) + btoi(gpu != "") + btoi(port != ""); n != 1 {
				return usageError(cmd, "give one of --gpu BUS, --port DEVICE/PORT or --all")
			}
			if code := clearHistory(cmd.Context(), g, o, sel, reason); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	historyFlags(cmd, &o)
	f := cmd.Flags()
	f.StringVar(&gpu, "gpu", "", "the GPU: a bus id, a UUID, or serial:N")
	f.StringVar(&port, "port", "", "the port: DEVICE/PORT (mlx5_0/1) or an interface on it (ib0)")
	f.BoolVar(&all, "all", false, "everything the node's history holds")
	f.StringVar(&reason, "reason", "", "why, for the record (kept in the file and the log)")
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// historyTarget is whose history, where, by which rules.
type historyTarget struct {
	node  string
	state *files.State // the history's directory, as a run resolves it
	cfg   *config.Config
}

// resolveHistory finds the node, its effective config and the history's state directory as a
// run would (run.ResolveState), with --node taken as given (a copied state directory may hold
// other nodes'). readOnly opens it without creating or writing anything.
func resolveHistory(ctx context.Context, g *globals, o historyOpts, readOnly bool) (historyTarget, error) {
	var t historyTarget
	if o.nodeName != "" {
		cfg, err := loadConfigFile(ctx, o.configPath)
		if err != nil {
			return t, err
		}
		if cfg, err = cfg.ForNode(o.nodeName); err != nil {
			return t, err
		}
		t.node, t.cfg = o.nodeName, cfg
	} else {
		env, setup, err := run.NewEnv(ctx, run.EnvOptions{Mode: config.ModeManual, ConfigPath: o.configPath, Getenv: g.getenv, NoHistory: true, DryRun: true})
		if err != nil {
			return t, err
		}
		setup.State.Close()
		t.node, t.cfg = env.Node, env.Config
	}
	st, err := run.ResolveState(t.cfg, o.stateDir, "", false, false, readOnly)
	if err != nil {
		return t, err
	}
	if st.History == nil {
		return t, errors.New("no state directory: [state] dir is empty and --state-dir not given")
	}
	t.state = st.History
	return t, nil
}

// showHistory is `nodecheck history` without the flag parsing.
func showHistory(ctx context.Context, g *globals, o historyOpts) int {
	if o.format != "text" && o.format != "json" {
		fmt.Fprintf(g.stderr, "nodecheck: --format %q: use text or json\n", o.format)
		return exitCannotRun
	}
	since, err := parseSince(o.since)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: --since: %v\n", err)
		return exitCannotRun
	}
	t, err := resolveHistory(ctx, g, o, true)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history: %v\n", err)
		return exitCannotRun
	}
	defer t.state.Close()
	now := time.Now()
	dir, err := t.state.Open()
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history: %v\n", err)
		return exitCannotRun
	}
	h, path, err := checks.ReadHistory(dir, t.node, now)
	if errors.Is(err, checks.ErrNoHistory) {
		fmt.Fprintf(g.stdout, "node %s: no history yet (%s): the health check keeps one from its first run\n", t.node, path)
		return exitHealthy
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history: %v\n", err)
		return exitCannotRun
	}
	if now, err = parseAt(o.at, h, now); err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: --at: %v\n", err)
		return exitCannotRun
	}
	tl := h.BuildTimeline(now, checks.HistoryRules(t.cfg), history.TimelineOptions{GPU: o.gpu, Port: o.port, Since: since})
	if o.gpu != "" && len(tl.GPUs) == 0 || o.port != "" && len(tl.Ports) == 0 {
		fmt.Fprintf(g.stderr, "nodecheck: history: %s: no such %s in %s\n", o.gpu+o.port, map[bool]string{true: "GPU", false: "port"}[o.gpu != ""], path)
		return exitCannotRun
	}
	if o.format == "json" {
		err = tl.WriteJSON(g.stdout)
	} else {
		err = tl.WriteText(g.stdout)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: write history: %v\n", err)
		return exitCannotRun
	}
	return exitHealthy
}

// clearHistory is `nodecheck history clear` without the flag parsing: it records the clear,
// logs it (who and why) and prints what was cleared.
func clearHistory(ctx context.Context, g *globals, o historyOpts, sel history.Selector, reason string) int {
	t, err := resolveHistory(ctx, g, o, false)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history clear: %v\n", err)
		return exitCannotRun
	}
	defer t.state.Close()
	dir, err := t.state.Open()
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history clear: %v\n", err)
		return exitCannotRun
	}
	log, closeLog := newLogger(g.stderr, t.cfg.Log)
	defer closeLog()
	who := whoAmI(g.getenv)
	cleared, path, err := checks.ClearHistory(ctx, dir, t.node, sel, who, reason, time.Now(), historyLockWait)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: history clear: %v\n", err)
		return exitCannotRun
	}
	for _, c := range cleared {
		what := c.Target
		if c.Key != "" {
			what += " " + strings.TrimSpace(c.Bus+" "+c.Key)
		}
		log.Warn().Str("node", t.node).Str("cleared", what).Str("who", c.Who).Str("reason", c.Reason).Str("history", path).
			Msg("history cleared: what it held against this no longer counts")
		fmt.Fprintf(g.stdout, "cleared %s of node %s by %s at %s", what, t.node, c.Who, time.Unix(c.At, 0).UTC().Format(time.RFC3339))
		if c.Reason != "" {
			fmt.Fprintf(g.stdout, ": %s", c.Reason)
		}
		fmt.Fprintln(g.stdout)
	}
	return exitHealthy
}

// whoAmI names the admin: the user sudo was run by, else the login name, else the user of
// the process's uid.
func whoAmI(getenv func(string) string) string {
	me := "uid " + strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		me = u.Username
	} else if n := getenv("LOGNAME"); n != "" {
		me = n
	}
	if s := getenv("SUDO_USER"); s != "" && s != me {
		return me + " (sudo by " + s + ")"
	}
	return me
}

// parseSince reads --since: a Go duration, or whole days ("7d").
func parseSince(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q: give a duration such as 24h, 90m or 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: give a duration such as 24h, 90m or 7d", s)
	}
	return d, nil
}

// parseAt reads --at: "" is now, "last" the history's last run, else RFC 3339.
func parseAt(s string, h *history.History, now time.Time) (time.Time, error) {
	switch s {
	case "":
		return now, nil
	case "last":
		if h.UpdatedAt == 0 {
			return now, nil
		}
		return time.Unix(h.UpdatedAt, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return now, fmt.Errorf("%q: give an RFC 3339 time (2024-07-31T11:30:00Z) or last", s)
	}
	return t, nil
}
