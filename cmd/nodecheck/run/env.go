package run

// Building a run's environment: the node's facts (live or a snapshot), nodecheck.toml with
// its fallback rules, slurm.conf where the installed Slurm looks, the node's Slurm name, the
// job, and the time budget. The CLI only passes what the command line and the process say.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// EnvOptions are what the command line and the process say about a run.
type EnvOptions struct {
	// Mode is the run's mode; "" is DetectMode(Getenv, Argv0).
	Mode  config.Mode
	Argv0 string
	// ConfigPath is --config: nodecheck.toml to read, which must exist; "" is
	// config.DefaultConfigPath, whose absence means the built-in defaults (in a replay, that
	// path inside the snapshot).
	ConfigPath string
	// SnapshotDir is --snapshot: replay that recorded node instead of reading this one.
	SnapshotDir string
	// NodeName is --node: the node's Slurm name. On the live node it must be a node of
	// slurm.conf (when slurm.conf can be read). In a replay of a snapshot that names its
	// node, it is the live node the run reports on and acts on (Env.Target).
	NodeName string
	// SlurmConf is --slurm-conf: the slurm.conf to read, which must exist. On the live node a
	// relative path is relative to WorkDir; in a replay it names a file inside the snapshot.
	SlurmConf string
	// Getenv reads the process's environment (SLURM_CONF, SLURMD_NODENAME, the job's
	// variables, PATH); nil reads nothing.
	Getenv func(string) string
	// WorkDir is what relative paths are relative to; "" is the process's working directory.
	WorkDir string
	// DryRun forbids every write to the node (Env.ReadOnly), as a replay does.
	DryRun bool
	// GPUSource is the live node's NVML (the cgo adapter); nil reports NVML as not built in.
	GPUSource node.GPUSource
	// Checks are the checks the run will run (a --check selection); nil is All(). With the
	// mode and the node's config they decide which GPU facts NVML is asked for (checks.GPUFieldsFor).
	Checks []checks.Check
	// GPUFields, when not 0, is what NVML is asked for instead: node.AllGPUFields for
	// `nodecheck snapshot`, which records every fact whatever its checks judge.
	GPUFields node.GPUFields
	// Wrap, when set, wraps the facts before anything reads them (node.NewRecorder for
	// `nodecheck snapshot`).
	Wrap func(node.Facts) node.Facts
	// Install says where to look for the installed Slurm on the live node.
	Install InstallProbe
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// StateDir is --state-dir: where the run keeps the node's history, instead of [state]
	// dir. A snapshot replay keeps history only here, never in the live node's state.
	StateDir string
	// NoHistory keeps no history at all (nodecheck snapshot records facts, not judgements
	// over time).
	NoHistory bool
	// Adjust, when set, changes the node's effective config before anything reads it: the
	// nhc drop-in sets the generic checks as nhc.conf says (cmd/nodecheck/nhcdrop). Its error
	// is a config error.
	Adjust func(*config.Config) (*config.Config, error)
	// Start is when the run began: the process's creation, as Slurm counts a hook's timeout
	// and as the CLI's watchdog counts (cmd/nodecheck passes the watchdog's start), so that the
	// budget and the watchdog count from one moment. Zero is Now() at NewEnv's start.
	Start time.Time
}

// Setup says how NewEnv built the environment.
type Setup struct {
	// StartedAt is when the run began (EnvOptions.Start, else NewEnv's start): the budget
	// counts from here.
	StartedAt time.Time
	// Snapshot is the replayed snapshot; nil on the live node.
	Snapshot *node.Snapshot
	// ConfigFile is the nodecheck.toml read; "" for the built-in defaults.
	ConfigFile string
	// State is the run's state directories, each opened at its first use and once: drain,
	// the repair step, the history and nccl_allreduce share them. Close them when the run
	// is done.
	State StatePaths
	// NodeFrom says where the node's name came from: "--node", "SLURMD_NODENAME", "the
	// snapshot" or "the host name".
	NodeFrom string
	// HealthInterval is the HealthCheckInterval of the slurm.conf the run read (0: not set);
	// HealthIntervalKnown is false when it read none. For the metrics.
	HealthInterval      time.Duration
	HealthIntervalKnown bool
}

// ConfigError is NewEnv's error when nodecheck.toml, or a Slurm file that the config or the
// environment names, cannot be used. No check runs; ConfigErrorExitCode says how the run
// ends. It carries what the report and metrics of such a run need, read as leniently as the
// broken file allows.
type ConfigError struct {
	Err        error
	Mode       config.Mode
	Node       string // the node's name when it is known without the config, else ""
	FailClosed bool   // fail_closed, read leniently
	PromFile   string // prom_file, read leniently; "" when none
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// setupTimeout bounds the reads before the checks (slurm.conf, the host name) when the mode
// has no budget, so that a hung file system cannot stall even a manual run for ever.
const setupTimeout = 30 * time.Second

// NewEnv builds the environment of one run. The error is a *ConfigError when the config
// cannot be used (see ConfigErrorExitCode), and any other error when nodecheck cannot run
// at all (a usage error, a named path that does not exist, a snapshot that cannot be read):
// each names what it is about. Everything read before the checks runs within the mode's
// budget, which counts from the run's start (EnvOptions.Start; Env.Budget.Deadline).
func NewEnv(ctx context.Context, o EnvOptions) (*checks.Env, Setup, error) {
	now, getenv := o.clock(), o.environ()
	setup := Setup{StartedAt: o.Start}
	if setup.StartedAt.IsZero() {
		setup.StartedAt = now()
	}
	mode := o.Mode
	if mode == "" {
		mode = DetectMode(getenv, o.Argv0)
	}
	facts, snap, err := openFacts(ctx, o)
	if err != nil {
		return nil, setup, err
	}
	setup.Snapshot = snap
	replay := snap != nil
	// A replay must not pick up this machine's Slurm environment; the job comes from this
	// process's environment even then (like the mode, it says which invocation this is).
	nodeEnv := getenv
	if replay {
		nodeEnv = func(string) string { return "" }
	}
	cfgPath, err := absPath(o.WorkDir, o.ConfigPath)
	if err != nil {
		return nil, setup, err
	}
	cfg, raw, err := LoadRunConfig(ctx, facts, replay, cfgPath)
	if err != nil {
		return nil, setup, &ConfigError{Err: err, Mode: mode, Node: knownNodeName(o.NodeName, nodeEnv, snap),
			FailClosed: config.PeekFailClosed(raw), PromFile: config.PeekPromFile(raw)}
	}
	setup.ConfigFile = cfg.Path
	if replay && cfg.Path == "" && raw != nil {
		setup.ConfigFile = "the snapshot's " + config.DefaultConfigPath
	}

	sctx, cancel := setupContext(ctx, setup.StartedAt, cfg.Budget.For(mode))
	defer cancel()
	slurmFiles, err := findSlurmConf(sctx, facts, o, cfg, mode, nodeEnv, snap)
	if err != nil {
		return nil, setup, err
	}
	name, target, from, err := resolveNode(sctx, o, nodeEnv, snap, facts, slurmFiles)
	if err != nil {
		return nil, setup, err
	}
	setup.NodeFrom = from
	eff, err := cfg.ForNode(name)
	if err == nil && o.Adjust != nil {
		eff, err = o.Adjust(eff)
	}
	if err != nil {
		return nil, setup, &ConfigError{Err: err, Mode: mode, Node: cmp.Or(target, name), FailClosed: cfg.FailClosed, PromFile: cfg.PromFile}
	}
	var hooks slurm.Hooks
	if conf, err := slurmFiles.Conf(sctx); err == nil {
		hooks = conf.Hooks
		setup.HealthInterval, setup.HealthIntervalKnown = hooks.HealthCheckInterval, true
	}
	budget := checks.BudgetFor(mode, eff.Budget, setup.ConfigFile, hooks)
	if budget.Run > 0 {
		budget.Deadline = setup.StartedAt.Add(budget.Run)
	}
	if setup.State, err = ResolveState(eff, o.StateDir, o.WorkDir, replay, o.NoHistory, o.DryRun); err != nil {
		return nil, setup, err
	}
	env := &checks.Env{
		// One reading per run of each whole-node listing, NVML limited to what the checks of
		// this mode judge.
		Facts:  node.NewMemo(facts, node.WithGPUFields(o.gpuFields(eff, mode))),
		Config: eff, Mode: mode, Node: name, Target: target, Slurm: slurmFiles, Budget: budget,
		Job: checks.Job{
			ID: getenv("SLURM_JOB_ID"), GPUs: getenv("SLURM_JOB_GPUS"),
			UID: getenv("SLURM_JOB_UID"), User: getenv("SLURM_JOB_USER"),
		},
		// A replay must not write to this machine, nor may a dry run write anywhere.
		ReadOnly: replay || o.DryRun,
		State:    setup.State.State,
		History:  setup.State.historySetup(snap, setup.StartedAt, o.DryRun),
	}
	return env, setup, nil
}

// gpuFields are the GPU facts the run reads: those given, else those its checks judge in
// the mode (checks.GPUFieldsFor).
func (o EnvOptions) gpuFields(eff *config.Config, mode config.Mode) node.GPUFields {
	if o.GPUFields != 0 {
		return o.GPUFields
	}
	list := o.Checks
	if list == nil {
		list = checks.All()
	}
	return checks.GPUFieldsFor(list, eff, mode)
}

// clock is o.Now, or time.Now when none is given.
func (o EnvOptions) clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// environ is o.Getenv, or an empty environment when none is given.
func (o EnvOptions) environ() func(string) string {
	if o.Getenv == nil {
		return func(string) string { return "" }
	}
	return o.Getenv
}

// openFacts gives the live node, or the recorded one at o.SnapshotDir, wrapped as o says.
// NewEnv memoizes it for the run once it knows which GPU facts the run's checks judge.
func openFacts(ctx context.Context, o EnvOptions) (node.Facts, *node.Snapshot, error) {
	var (
		facts node.Facts
		snap  *node.Snapshot
	)
	if o.SnapshotDir != "" {
		s, err := node.OpenSnapshotContext(ctx, o.SnapshotDir)
		if err != nil {
			return nil, nil, fmt.Errorf("--snapshot: %w", err)
		}
		facts, snap = s, s
	} else {
		gpus := o.GPUSource
		var opts []node.LiveOption
		if gpus != nil {
			opts = append(opts, node.WithGPUSource(gpus))
		}
		live, err := node.NewLive(node.DefaultPaths(), opts...)
		if err != nil {
			return nil, nil, err
		}
		facts = live
	}
	if o.Wrap != nil {
		facts = o.Wrap(facts)
	}
	return facts, snap, nil
}

// LoadRunConfig reads nodecheck.toml for a run: path when it is set (it must exist), else
// config.DefaultConfigPath, whose absence means the built-in defaults. On the live node the
// file is read from disk with the permission check (config.LoadConfigData); in a replay the
// default path is looked up inside the snapshot, so a recorded node carries its own policy.
// On error it also returns the file's bytes, when they could be read, for the lenient peeks
// (config.PeekFailClosed, config.PeekPromFile). This is the one place a run loads its config.
func LoadRunConfig(ctx context.Context, facts node.Facts, replay bool, path string) (*config.Config, []byte, error) {
	explicit := path != ""
	if !explicit {
		path = config.DefaultConfigPath
	}
	if replay && !explicit {
		data, err := facts.ReadFile(ctx, path)
		if isNotExist(err) {
			return config.Default(checks.Schema()), nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s in the snapshot: %w", path, err)
		}
		cfg, err := config.ParseConfig(data, path, checks.Schema())
		return cfg, data, err
	}
	// One bounded read (config.LoadConfigData): a FIFO or /dev/zero given as the config is
	// refused at once, and the bytes for the peeks are those of the same read, when the file
	// was read but did not parse.
	cfg, data, err := config.LoadConfigData(ctx, path, checks.Schema())
	switch {
	case err == nil:
		return cfg, nil, nil
	case isNotExist(err) && !explicit:
		return config.Default(checks.Schema()), nil, nil
	case isNotExist(err):
		return nil, nil, fmt.Errorf("--config %s does not exist", path)
	}
	return nil, data, err
}

// setupContext bounds the reads before the checks: by the mode's configured budget from the
// run's start, or by setupTimeout when the mode has none. Slurm's limits, known only once
// slurm.conf is read, tighten the budget for the checks (Budget.Deadline).
func setupContext(ctx context.Context, start time.Time, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget > 0 {
		return context.WithDeadline(ctx, start.Add(budget))
	}
	return context.WithTimeout(ctx, setupTimeout)
}

// absPath makes p absolute against dir ("" is the working directory); "" stays "".
func absPath(dir, p string) (string, error) {
	if p == "" || filepath.IsAbs(p) {
		return p, nil
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("relative path %s: %w", p, err)
		}
		dir = wd
	}
	return filepath.Join(dir, p), nil
}

// findSlurmConf sets up the search for slurm.conf (slurm.ConfSearch) and runs it. A path
// given with --slurm-conf that is not there is a usage error; one named by SLURM_CONF or by
// slurm_conf in nodecheck.toml is a *ConfigError (a prolog must not fail every job for it
// unless fail_closed says so). Any other outcome, a file found or not, is for the checks to
// report: one that needs slurm.conf and has none says error, and the run is undecided.
func findSlurmConf(ctx context.Context, facts node.Facts, o EnvOptions, cfg *config.Config, mode config.Mode, getenv func(string) string, snap *node.Snapshot) (*checks.SlurmFiles, error) {
	s := slurm.ConfSearch{Getenv: getenv}
	switch {
	case o.SlurmConf != "":
		s.Explicit, s.ExplicitFrom = o.SlurmConf, "--slurm-conf"
	case cfg.SlurmConf != "":
		s.Explicit, s.ExplicitFrom = cfg.SlurmConf, "slurm_conf in "+cfgName(cfg)
	case snap != nil && snap.Meta().SlurmConf != "":
		s.Explicit, s.ExplicitFrom = snap.Meta().SlurmConf, "slurm_conf of the snapshot's meta.json"
	}
	if snap != nil {
		if s.Explicit != "" && !filepath.IsAbs(s.Explicit) {
			return nil, fmt.Errorf("%s %s: in a replay slurm.conf is read inside the snapshot: give its absolute path there", s.ExplicitFrom, s.Explicit)
		}
	} else {
		var err error
		if s.Explicit, err = absPath(o.WorkDir, s.Explicit); err != nil {
			return nil, err
		}
		if env := getenv("SLURM_CONF"); env != "" && !filepath.IsAbs(env) {
			abs, err := absPath(o.WorkDir, env)
			if err != nil {
				return nil, err
			}
			s.Getenv = func(k string) string {
				if k == "SLURM_CONF" {
					return abs
				}
				return getenv(k)
			}
		}
		if s.Explicit == "" && s.Getenv("SLURM_CONF") == "" {
			r := probeInstall(ctx, o.Install, getenv, []string{cfg.Drain.Scontrol, cfg.Drain.Sinfo})
			s.Daemon, s.DaemonFrom, s.Installed = r.daemon.Path, r.daemon.From, r.installed
		}
	}
	files := checks.SlurmFilesFrom(facts, s)
	_, err := files.Found(ctx)
	var fe *slurm.FindConfError
	if errors.As(err, &fe) && fe.Path != "" && isNotExist(fe.Err) {
		switch {
		case fe.From == "--slurm-conf":
			return nil, fe
		case fe.From == "SLURM_CONF" || strings.HasPrefix(fe.From, "slurm_conf in "):
			return nil, &ConfigError{Err: fe, Mode: mode, Node: knownNodeName(o.NodeName, getenv, snap),
				FailClosed: cfg.FailClosed, PromFile: cfg.PromFile}
		}
	}
	return files, nil
}

// cfgName names the config file for messages.
func cfgName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "nodecheck.toml"
	}
	return cfg.Path
}

// knownNodeName is the node's name where it is known without slurm.conf or the config: for
// the report of a run whose config is unusable. A name that is not a valid one is left out.
func knownNodeName(flag string, getenv func(string) string, snap *node.Snapshot) string {
	for _, n := range []string{flag, getenv("SLURMD_NODENAME"), snapshotNodeName(snap)} {
		if n != "" {
			if checkNodeName(n) != nil {
				return ""
			}
			return n
		}
	}
	return ""
}

func snapshotNodeName(s *node.Snapshot) string {
	if s == nil {
		return ""
	}
	return s.Meta().NodeName
}

// resolveNode finds the node's Slurm name (ResolveNodeName), refuses one that no Slurm node
// could have, and, on the live node, a --node that slurm.conf does not define: a typo there
// would judge the node against another node's lines, or none. In a replay of a snapshot
// that names its node, the checks judge that recorded node against its own slurm.conf, and
// --node only names the live Slurm node the run reports on and acts on (Env.Target).
func resolveNode(ctx context.Context, o EnvOptions, getenv func(string) string, snap *node.Snapshot, facts node.Facts, s *checks.SlurmFiles) (name, target, from string, err error) {
	recorded := snapshotNodeName(snap)
	if snap != nil && recorded != "" && o.NodeName != "" {
		for _, n := range []struct{ name, from string }{{recorded, "the snapshot"}, {o.NodeName, "--node"}} {
			if err := checkNodeName(n.name); err != nil {
				return "", "", "", fmt.Errorf("node name %q (from %s): %w", n.name, n.from, err)
			}
		}
		return recorded, o.NodeName, "the snapshot, acting for --node", nil
	}
	name, err = ResolveNodeName(ctx, NodeNameSources{Flag: o.NodeName, Getenv: getenv, Snapshot: recorded, Facts: facts, Slurm: s})
	if err != nil {
		return "", "", "", err
	}
	switch {
	case o.NodeName != "":
		from = "--node"
	case getenv("SLURMD_NODENAME") != "":
		from = "SLURMD_NODENAME"
	case recorded != "":
		from = "the snapshot"
	default:
		from = "the host name"
	}
	if err := checkNodeName(name); err != nil {
		return "", "", "", fmt.Errorf("node name %q (from %s): %w", name, from, err)
	}
	if from != "--node" || snap != nil {
		return name, "", from, nil
	}
	conf, err := s.Conf(ctx)
	if err != nil {
		return name, "", from, nil // the checks that need slurm.conf say why it is missing
	}
	if _, ok := conf.Node(name); !ok {
		return "", "", "", fmt.Errorf("--node %s: no NodeName line of %s defines it (%s); give a node of this cluster", name, conf.Path, nodeListHint(conf))
	}
	return name, "", from, nil
}

// checkNodeName refuses a node name with a control character or white space: Slurm node
// names are host names, and such a name would reach logs, metrics and drain reasons.
func checkNodeName(name string) error {
	for _, r := range name {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("contains %q, which no Slurm node name has", r)
		}
	}
	return nil
}

// nodeListHint names the nodes slurm.conf defines, briefly.
func nodeListHint(conf *slurm.SlurmConf) string {
	var names []string
	n := 0
	for _, l := range conf.Nodes {
		s := l.Names.String()
		if n+len(s) > 120 {
			names = append(names, "...")
			break
		}
		names = append(names, s)
		n += len(s) + 1
	}
	if len(names) == 0 {
		return "it defines no node"
	}
	return "its nodes: " + strings.Join(names, ",")
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
