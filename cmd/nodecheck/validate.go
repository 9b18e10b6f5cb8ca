package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/validate"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
	"github.com/spf13/cobra"
)

type validateOpts struct {
	level    string
	json     bool
	all      bool
	toolsDir string
	noRecord bool
	hist     historyOpts
}

func newValidateCmd(g *globals) *cobra.Command {
	var o validateOpts
	cmd := &cobra.Command{
		Use:   "validate --level quick|full|burn-in",
		Short: "Exercise the node's hardware (DCGM, NCCL, nvbandwidth, ib_write_bw, gpu_burn) against per-model floors",
		Long: `Run one validation level on this node: real tools as subprocesses, each under a deadline,
their figures judged against per-model floors with their sources ([validate] in nodecheck.toml;
/usr/share/doc/nodecheck/docs/validation.md).

  quick    about 10 minutes: DCGM diagnostic level 2, nvbandwidth, NCCL all_reduce_perf
  full     about 45 minutes: DCGM level 3, nvbandwidth, NCCL, ib_write_bw loopback with
           GPUDirect per HCA, NCCL over the network path (P2P and shared memory off)
  burn-in  hours, set by the site: DCGM level 4, gpu_burn's GEMM compared across GPUs,
           NCCL repeated, nvbandwidth

A missing tool skips its test with what to install; a level whose tests all skipped is
UNDECIDED, never passed. Validation refuses to run in a prolog or epilog, on a node where
squeue ([repair] squeue) lists a job other than its own (SLURM_JOB_ID), and on a node whose
GPUs run compute processes. The result goes to the node's history (unless --no-record), where
health runs find it when [validate] expiry is set.

Exit codes: 0 passed, 1 failed, 2 could not run (usage, bad config, refused), 3 undecided.`,
		Example: `  nodecheck validate --level quick
  nodecheck validate --level full --json
  nodecheck validate --level quick --tools-dir /opt/validation/bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := validate.ParseLevel(o.level)
			if err != nil {
				return usageError(cmd, "--level: %v", err)
			}
			if code := runValidate(cmd.Context(), g, o, level); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.level, "level", "", "quick, full or burn-in")
	f.BoolVar(&o.json, "json", false, "print the result as JSON (docs/validation.md)")
	f.BoolVar(&o.all, "all", false, "text output: list every figure, not only those below their floor")
	f.StringVar(&o.toolsDir, "tools-dir", "", "take every tool (dcgmi, nvbandwidth, all_reduce_perf, ib_write_bw, gpu_burn, nvidia-smi, squeue) from this directory instead of [validate]'s paths")
	f.BoolVar(&o.noRecord, "no-record", false, "do not add the result to the node's history")
	historyFlags(cmd, &o.hist)
	_ = cmd.MarkFlagRequired("level")
	_ = cmd.RegisterFlagCompletionFunc("level", cobra.FixedCompletions([]string{"quick", "full", "burn-in"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validateOutputLimit bounds each tool's stdout and stderr: gpu_burn prints a progress line
// every few seconds for the hours of a burn-in, and its last line is the one judged.
const validateOutputLimit = 8 << 20

// runValidate is `nodecheck validate` without the flag parsing: it returns the exit code.
func runValidate(ctx context.Context, g *globals, o validateOpts, level validate.Level) int {
	t, err := resolveValidate(ctx, g, o)
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: validate: %v\n", err)
		return exitCannotRun
	}
	if t.state != nil {
		defer t.state.Close()
	}
	vc := t.cfg.Validation
	squeue := t.cfg.Repair.Squeue
	if o.toolsDir != "" {
		dir, err := filepath.Abs(o.toolsDir)
		if err != nil {
			fmt.Fprintf(g.stderr, "nodecheck: --tools-dir: %v\n", err)
			return exitCannotRun
		}
		for _, p := range []*string{&vc.DCGMI, &vc.NVBandwidth, &vc.AllReducePerf, &vc.IBWriteBW, &vc.GPUBurn, &vc.NvidiaSMI, &squeue} {
			*p = filepath.Join(dir, filepath.Base(*p))
		}
	}
	host, err := node.NewLive(node.DefaultPaths(), node.WithGPUSource(newGPUSource()), node.WithOutputLimit(validateOutputLimit))
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: validate: %v\n", err)
		return exitCannotRun
	}
	opts := validate.Options{Node: t.node, Level: level, Mode: run.DetectMode(g.getenv, g.argv0), Config: vc, OwnJob: g.getenv("SLURM_JOB_ID")}
	if fileExists(squeue) {
		// Where Slurm's squeue is installed, the node's jobs decide; without it (no Slurm
		// here) the GPUs' compute processes alone do.
		dc := drain.New(t.cfg.Drain.Scontrol, t.cfg.Drain.Sinfo, drain.WithSqueue(squeue))
		opts.Jobs = func(ctx context.Context) ([]string, error) {
			jobs, err := dc.Jobs(ctx, t.node)
			var out []string
			for _, j := range jobs {
				out = append(out, j.ID+"|"+j.State)
			}
			return out, err
		}
	}
	rep := validate.Run(ctx, host, opts)
	if t.state == nil && !o.noRecord {
		fmt.Fprintln(g.stderr, "nodecheck: validate: the result is not kept: [state] dir is empty and --state-dir not given")
	}
	if t.state != nil && rep.Refused == "" {
		if err := recordValidation(ctx, t, rep); err != nil {
			fmt.Fprintf(g.stderr, "nodecheck: validate: the result was not kept in the node's history: %v\n", err)
		}
	}
	if o.json {
		err = validate.WriteJSON(g.stdout, rep)
	} else {
		err = validate.WriteText(g.stdout, rep, o.all)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "nodecheck: write report: %v\n", err)
		return exitCannotRun
	}
	switch {
	case rep.Refused != "":
		fmt.Fprintf(g.stderr, "nodecheck: validate: refused: %s\n", rep.Refused)
		return exitCannotRun
	case rep.Verdict == validate.VerdictPassed:
		return exitHealthy
	case rep.Verdict == validate.VerdictFailed:
		return exitUnhealthy
	}
	return exitUndecided
}

// resolveValidate finds the node and its effective config as `nodecheck history` does, and
// the history's state directory unless the result is not to be kept (nil state then, also
// where none is configured).
func resolveValidate(ctx context.Context, g *globals, o validateOpts) (historyTarget, error) {
	var t historyTarget
	if o.hist.nodeName != "" {
		cfg, err := loadConfigFile(ctx, o.hist.configPath)
		if err != nil {
			return t, err
		}
		if cfg, err = cfg.ForNode(o.hist.nodeName); err != nil {
			return t, err
		}
		t.node, t.cfg = o.hist.nodeName, cfg
	} else {
		env, setup, err := run.NewEnv(ctx, run.EnvOptions{Mode: config.ModeManual, ConfigPath: o.hist.configPath, Getenv: g.getenv, NoHistory: true, DryRun: true})
		if err != nil {
			return t, err
		}
		setup.State.Close()
		t.node, t.cfg = env.Node, env.Config
	}
	if o.noRecord {
		return t, nil
	}
	st, err := run.ResolveState(t.cfg, o.hist.stateDir, "", false, false, false)
	if err != nil {
		return t, err
	}
	t.state = st.History
	return t, nil
}

// recordLockWait is how long recording waits for a health run holding the history's lock.
const recordLockWait = 10 * time.Second

func recordValidation(ctx context.Context, t historyTarget, rep validate.Report) error {
	dir, err := t.state.Open()
	if err != nil {
		return err
	}
	_, err = validate.Record(ctx, dir, rep, recordLockWait)
	return err
}
