package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

// reply is what a fake command answers.
type reply struct {
	stdout, stderr string
	exit           int
	timeout        bool // the command runs into the deadline (expire), partial output returned
	hang           bool // the command answers only when its ctx is done
}

// cmdFacts is fakeFacts with commands: replies by program path; a program without one is
// not installed. It records every argv run.
type cmdFacts struct {
	*fakeFacts
	replies map[string]reply
	expire  func() // what a command that runs into the deadline calls
	ran     [][]string
}

func (f *cmdFacts) Exec(ctx context.Context, argv []string) (node.CmdResult, error) {
	f.ran = append(f.ran, argv)
	r, ok := f.replies[argv[0]]
	if !ok {
		return node.CmdResult{Argv: argv, ExitCode: -1}, fmt.Errorf("run %s: %w", argv[0], fs.ErrNotExist)
	}
	res := node.CmdResult{Argv: argv, Stdout: r.stdout, Stderr: r.stderr, ExitCode: r.exit}
	if r.hang {
		<-ctx.Done()
		return node.CmdResult{Argv: argv, ExitCode: 137}, fmt.Errorf("run %s: killed: %w", argv[0], ctx.Err())
	}
	if r.timeout {
		f.expire()
		res.ExitCode = 137
		return res, fmt.Errorf("run %s: killed: %w", argv[0], ctx.Err())
	}
	return res, nil
}

// deadlineCtx is a context whose deadline passes when expire is called, so that a fake
// command can run into it.
type deadlineCtx struct {
	context.Context
	done chan struct{}
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (d *deadlineCtx) Done() <-chan struct{} { return d.done }

func (d *deadlineCtx) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (d *deadlineCtx) expire() { close(d.done) }

// h100Inventory is the NVML view of h100-healthy: 8 GPUs named as the corpus log names them.
func h100Inventory(n int) node.GPUInventory {
	inv := node.GPUInventory{Init: "SUCCESS", DeviceCount: n}
	for i := range n {
		inv.Devices = append(inv.Devices, node.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3"})
	}
	return inv
}

const (
	allReducePerf = "/usr/bin/all_reduce_perf"
	nvidiaSMI     = "/usr/bin/nvidia-smi"
	pgrep         = "/usr/bin/pgrep"
	h100Log       = "nccltests-290-h100-1node-8gpu-g8"
	gh200Log      = "nccltests-369-gh200-2node-wrong-nonzero-failed"
	rtx5090Log    = "nccltests-287-rtx5090-2gpu-failed"
	h100OK        = "busbw 476.5 GB/s at 4 GiB, at least 390 (built-in for 8x H100 80GB HBM3); no wrong data"
	idleProbes    = "idle" // marker: pgrep finds nothing, nvidia-smi lists nothing
)

func TestNCCLAllReduce(t *testing.T) {
	h100 := readNCCLLog(t, h100Log)
	// The same run on GPUs the table does not know: only the names differ.
	unknownGPU := strings.ReplaceAll(h100, "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe")
	// The sweep cut at 512 MiB: the rows of 1 GiB and more are dropped.
	var short []string
	for _, l := range strings.Split(h100, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "1073741824" || f[0] == "2147483648" || f[0] == "4294967296") {
			continue
		}
		short = append(short, l)
	}
	shortSweep := strings.Join(short, "\n")
	idle := map[string]reply{pgrep: {exit: 1}, nvidiaSMI: {exit: 0}}
	with := func(base map[string]reply, prog string, r reply) map[string]reply {
		out := map[string]reply{prog: r}
		for k, v := range base {
			if k != prog {
				out[k] = v
			}
		}
		return out
	}
	ok := func(stdout string) map[string]reply { return with(idle, allReducePerf, reply{stdout: stdout}) }

	tests := []struct {
		name        string
		mode        config.Mode
		cfg         func(c *ncclAllReduceConfig)
		replies     map[string]reply
		inv         node.GPUInventory
		gpuErr      error
		wantStatus  Status
		wantSummary string
		wantArgv    []string // the all_reduce_perf command, when it ran
		interrupt   bool     // the run is interrupted (SIGINT) instead of timing out
	}{
		{name: "8x H100 passes at large sizes", replies: ok(h100), wantStatus: StatusOK, wantSummary: h100OK,
			wantArgv: []string{allReducePerf, "-b", "8", "-e", "4G", "-f", "2", "-g", "8"}},
		{name: "configured threshold above the figure fails",
			cfg:     func(c *ncclAllReduceConfig) { c.MinBusBWGBps = 500 },
			replies: ok(h100), wantStatus: StatusFail,
			wantSummary: "busbw 476.5 GB/s at 4 GiB, want at least 500 (min_busbw_gbps)"},
		{name: "configured threshold below the figure passes",
			cfg:     func(c *ncclAllReduceConfig) { c.MinBusBWGBps = 450.5 },
			replies: ok(h100), wantStatus: StatusOK,
			wantSummary: "busbw 476.5 GB/s at 4 GiB, at least 450.5 (min_busbw_gbps); no wrong data"},
		{name: "wrong elements and out of bounds values are data corruption",
			replies:     with(idle, allReducePerf, reply{stdout: readNCCLLog(t, gh200Log), exit: 1}),
			wantStatus:  StatusFail,
			wantSummary: "data corruption: 96 wrong elements at 1 MiB out of place, want 0 (+1 more); out of bounds values 4"},
		{name: "NCCL failure: exit code and the first failure line",
			replies:     with(idle, allReducePerf, reply{stdout: readNCCLLog(t, rtx5090Log), exit: 3}),
			wantStatus:  StatusFail,
			wantSummary: "all_reduce_perf exit code 3: GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"},
		{name: "out of bounds values alone are data corruption",
			replies:     with(idle, allReducePerf, reply{stdout: strings.Replace(h100, "values : 0 OK", "values : 2 FAILED", 1), exit: 1}),
			wantStatus:  StatusFail,
			wantSummary: "data corruption: out of bounds values 2, want 0"},
		{name: "NCCL warning explains a failed exit",
			replies: with(idle, allReducePerf, reply{exit: 1,
				stdout: "node1:123:130 [2] NCCL WARN NET/IB : Got async event : port error\n" + h100[:strings.Index(h100, "   134217728")]}),
			wantStatus:  StatusFail,
			wantSummary: "all_reduce_perf exit code 1: node1:123:130 [2] NCCL WARN NET/IB : Got async event : port error"},
		{name: "a failure line fails even with exit 0",
			replies:     with(idle, allReducePerf, reply{stdout: h100 + "node005: Test CUDA failure common.cu:900 'unspecified launch failure'\n"}),
			wantStatus:  StatusFail,
			wantSummary: "all_reduce_perf exited 0 but reported: node005: Test CUDA failure common.cu:900 'unspecified launch failure'"},
		// Written for the test: NCCL warns about harmless things too, such as iommu=pt missing
		// from the kernel command line.
		{name: "an NCCL warning alone does not fail a clean run",
			replies:    ok("node005:1:1 [0] NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system instablity or hang!\n" + h100),
			wantStatus: StatusOK, wantSummary: h100OK},
		{name: "loader error on stderr",
			replies: with(idle, allReducePerf, reply{exit: 127,
				stderr: "/usr/bin/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory\n"}),
			wantStatus:  StatusFail,
			wantSummary: "all_reduce_perf exit code 127: /usr/bin/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory"},
		{name: "killed by a signal without a word", replies: with(idle, allReducePerf, reply{stdout: shortSweep[:200], exit: 139}),
			wantStatus: StatusFail, wantSummary: "all_reduce_perf exit code 139 (signal 11): no failure line printed"},
		{name: "timeout keeps how far the sweep got",
			replies:    with(idle, allReducePerf, reply{stdout: shortSweep[:strings.Index(shortSweep, "# Out of")], timeout: true}),
			wantStatus: StatusFail, wantSummary: "timed out after 2m0s (last size done: 512 MiB)"},
		{name: "interrupted: no verdict, nothing kept", interrupt: true,
			replies:    with(idle, allReducePerf, reply{stdout: shortSweep[:200], timeout: true}),
			wantStatus: StatusError, wantSummary: "interrupted while all_reduce_perf ran"},
		{name: "unknown GPUs: the figure with a warning asking for a threshold", replies: ok(unknownGPU),
			wantStatus: StatusWarn, wantSummary: "busbw 476.5 GB/s at 4 GiB; no threshold for NVIDIA H100 PCIe x8: set min_busbw_gbps"},
		{name: "sweep below 1 GiB cannot meet the built-in threshold", replies: ok(shortSweep),
			wantStatus:  StatusWarn,
			wantSummary: "busbw 431.8 GB/s at 512 MiB: the sweep ends below 1 GiB, where the built-in threshold (390 GB/s for 8x H100 80GB HBM3) does not apply: raise -e to 4G or set min_busbw_gbps"},
		{name: "sweep below 1 GiB against a configured threshold is judged",
			cfg:     func(c *ncclAllReduceConfig) { c.MinBusBWGBps = 400 },
			replies: ok(shortSweep), wantStatus: StatusOK,
			wantSummary: "busbw 431.8 GB/s at 512 MiB, at least 400 (min_busbw_gbps); no wrong data"},
		{name: "output that is not nccl-tests", replies: ok("hello\n"), wantStatus: StatusError,
			wantSummary: "all_reduce_perf printed no result rows: is /usr/bin/all_reduce_perf nccl-tests' all_reduce_perf?"},
		{name: "output without the summary", replies: ok(shortSweep[:strings.Index(shortSweep, "# Out of")]), wantStatus: StatusError,
			wantSummary: "all_reduce_perf output ends before its summary line (# Out of bounds values)"},
		{name: "garbled row", replies: ok(strings.Replace(h100, "473.60", "473,60", 1)), wantStatus: StatusError,
			wantSummary: `cannot read all_reduce_perf output: nccl-tests output line 21: out-of-place busbw "473,60" is not a number`},
		{name: "not installed skips with instructions", replies: idle, wantStatus: StatusSkip,
			wantSummary: "/usr/bin/all_reduce_perf not installed: build nccl-tests (github.com/NVIDIA/nccl-tests, make) and install build/all_reduce_perf there, or set checks.nccl_allreduce.binary"},
		{name: "not installed fails when required", cfg: func(c *ncclAllReduceConfig) { c.Required = true },
			replies: idle, wantStatus: StatusFail,
			wantSummary: "/usr/bin/all_reduce_perf not installed: build nccl-tests (github.com/NVIDIA/nccl-tests, make) and install build/all_reduce_perf there, or set checks.nccl_allreduce.binary (required = true)"},
		{name: "args with -g need no NVML", cfg: func(c *ncclAllReduceConfig) { c.Args = []string{"-b", "1G", "-e", "4G", "-g8"} },
			replies: ok(h100), inv: node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, wantStatus: StatusOK, wantSummary: h100OK,
			wantArgv: []string{allReducePerf, "-b", "1G", "-e", "4G", "-g8"}},
		{name: "no driver skips", replies: ok(h100), inv: node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"},
			wantStatus: StatusSkip, wantSummary: "no NVIDIA driver here (NVML ERROR_LIBRARY_NOT_FOUND): no GPUs to test"},
		{name: "NVML broken cannot count GPUs", replies: ok(h100), inv: node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"},
			wantStatus: StatusError, wantSummary: "cannot count the GPUs for -g: NVML init ERROR_DRIVER_NOT_LOADED (or set -g in args)"},
		{name: "no GPUs skips", replies: ok(h100), inv: node.GPUInventory{Init: "SUCCESS"},
			wantStatus: StatusSkip, wantSummary: "NVML reports no GPUs: nothing to test"},
		{name: "prolog never runs it", mode: config.ModeProlog, replies: ok(h100), wantStatus: StatusSkip,
			wantSummary: ncclPrologSummary + "; " + ncclNoLastRun},
		{name: "manual: GPUs in use", replies: with(ok(h100), nvidiaSMI, reply{stdout: "4242\n4243\n"}),
			wantStatus:  StatusSkip,
			wantSummary: "node busy: 2 compute processes on the GPUs (pid 4242, 4243): stop them or drain the node first; " + ncclNoLastRun},
		{name: "manual: idle probes missing do not stop an admin", replies: map[string]reply{allReducePerf: {stdout: h100}},
			wantStatus: StatusOK, wantSummary: h100OK},
		{name: "health: idle node runs", mode: config.ModeHealth, replies: ok(h100), wantStatus: StatusOK, wantSummary: h100OK},
		{name: "health: a job step runs here", mode: config.ModeHealth, replies: with(ok(h100), pgrep, reply{stdout: "31337\n"}),
			wantStatus: StatusSkip, wantSummary: "node busy: a Slurm job step runs here (slurmstepd pid 31337); " + ncclNoLastRun},
		{name: "health: a compute process", mode: config.ModeHealth, replies: with(ok(h100), nvidiaSMI, reply{stdout: "4242\n"}),
			wantStatus: StatusSkip, wantSummary: "node busy: 1 compute process on the GPUs (pid 4242); " + ncclNoLastRun},
		{name: "health: cannot tell is not idle", mode: config.ModeHealth, replies: map[string]reply{allReducePerf: {stdout: h100}, pgrep: {exit: 1}},
			wantStatus:  StatusSkip,
			wantSummary: "cannot tell whether the node is idle (/usr/bin/nvidia-smi not installed): not running all_reduce_perf in health mode; " + ncclNoLastRun},
		{name: "health: a hanging probe leaves the node untested", mode: config.ModeHealth, replies: with(ok(h100), nvidiaSMI, reply{hang: true}),
			wantStatus:  StatusSkip,
			wantSummary: "cannot tell whether the node is idle (/usr/bin/nvidia-smi timed out after 10ms): not running all_reduce_perf in health mode; " + ncclNoLastRun},
		{name: "manual: a hanging probe does not stop an admin", replies: with(ok(h100), nvidiaSMI, reply{hang: true}),
			wantStatus: StatusOK, wantSummary: h100OK},
		{name: "epilog: nvidia-smi failing is not idle", mode: config.ModeEpilog,
			replies:     with(ok(h100), nvidiaSMI, reply{exit: 9, stdout: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"}),
			wantStatus:  StatusSkip,
			wantSummary: "cannot tell whether the node is idle (/usr/bin/nvidia-smi exit code 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.): not running all_reduce_perf in epilog mode; " + ncclNoLastRun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			cfg.State.Dir = t.TempDir()
			if tc.cfg != nil {
				tc.cfg(settings[*ncclAllReduceConfig](cfg, idNCCLAllReduce))
			}
			inv := tc.inv
			if inv.Init == "" {
				inv = h100Inventory(8)
			}
			ctx := newDeadlineCtx()
			if tc.interrupt {
				// An interrupt cancels the context instead: a canceled deadlineCtx stand-in.
				cctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				facts := &cmdFacts{fakeFacts: &fakeFacts{gpus: inv}, replies: tc.replies, expire: cancel}
				got := ncclAllReduce{}.Run(cctx, &Env{Facts: facts, Config: cfg, Mode: config.ModeManual})
				assertRemedies(t, got)
				if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if _, err := os.Stat(filepath.Join(cfg.State.Dir, ncclStateFile)); err == nil {
					t.Errorf("an interrupted run kept a result")
				}
				return
			}
			facts := &cmdFacts{fakeFacts: &fakeFacts{gpus: inv, gpuErr: tc.gpuErr}, replies: tc.replies, expire: ctx.expire}
			mode := tc.mode
			if mode == "" {
				mode = config.ModeManual
			}
			env := &Env{Facts: facts, Config: cfg, Mode: mode, Node: "gpu-h100-01"}
			got := ncclAllReduce{probeTimeout: 10 * time.Millisecond}.Run(ctx, env)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.wantArgv != nil {
				var argv []string
				for _, a := range facts.ran {
					if a[0] == allReducePerf {
						argv = a
					}
				}
				if diff := cmp.Diff(tc.wantArgv, argv); diff != "" {
					t.Errorf("all_reduce_perf argv (-want +got):\n%s", diff)
				}
			}
			for _, a := range facts.ran {
				if a[0] == allReducePerf && mode != config.ModeManual && mode != config.ModeHealth && mode != config.ModeEpilog {
					t.Errorf("all_reduce_perf ran in %s mode", mode)
				}
			}
		})
	}
}

// TestNCCLAllReduceLastRun: a run keeps its verdict in the state directory, and a run that
// does not happen shows it with its age.
func TestNCCLAllReduceLastRun(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default(Schema())
	cfg.State.Dir = filepath.Join(dir, "state") // created on first write
	ran := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	facts := &cmdFacts{fakeFacts: &fakeFacts{gpus: h100Inventory(8), files: map[string]string{}},
		replies: map[string]reply{allReducePerf: {stdout: readNCCLLog(t, h100Log)}}}
	env := &Env{Facts: facts, Config: cfg, Mode: config.ModeManual, State: stateOf(cfg)}
	c := ncclAllReduce{now: func() time.Time { return ran }}
	if got := c.Run(context.Background(), env); got.Status != StatusOK {
		t.Fatalf("run: %s %s", got.Status, got.Summary)
	}
	path := filepath.Join(cfg.State.Dir, ncclStateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last ncclLastRun
	if err := json.Unmarshal(b, &last); err != nil {
		t.Fatal(err)
	}
	want := ncclLastRun{Time: ran, Status: StatusOK, Summary: h100OK, Observed: "476.5 GB/s at 4 GiB", Expected: ">= 390 GB/s",
		BusBWGBps: 476.53, GPUModel: "NVIDIA H100 80GB HBM3", GPUs: 8}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("state file (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(cfg.State.Dir); len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want only %s (no temporary file left)", len(entries), ncclStateFile)
	}

	// The facts serve the state file as the node would.
	facts.files[path] = string(b)
	c.now = func() time.Time { return ran.Add(3*time.Hour + 20*time.Minute) }
	env.Mode = config.ModeProlog
	got := c.Run(context.Background(), env)
	if diff := cmp.Diff(ncclPrologSummary+"; last run 3h ago: 476.5 GB/s at 4 GiB ok", got.Summary); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	facts.files[path] = "{not json"
	if got := c.Run(context.Background(), env); !strings.HasSuffix(got.Summary, "last result in "+path+" unreadable: not a nodecheck state file") {
		t.Errorf("corrupt state file: summary %q", got.Summary)
	}
}

// TestNCCLAllReduceReadOnly: a ReadOnly run (a replay, a dry run) does not write the state.
func TestNCCLAllReduceReadOnly(t *testing.T) {
	tests := []struct {
		name     string
		env      func(cfg *config.Config) *Env
		wantFile bool
	}{
		{"writable", func(cfg *config.Config) *Env { return &Env{Facts: &fakeFacts{}, Config: cfg, State: stateOf(cfg)} }, true},
		{"ReadOnly", func(cfg *config.Config) *Env {
			return &Env{Facts: &fakeFacts{}, Config: cfg, ReadOnly: true, State: stateOf(cfg)}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			cfg.State.Dir = t.TempDir()
			if d, ok := (ncclAllReduce{}).saveLast(tc.env(cfg), Result{Status: StatusOK, Summary: "x"}, NCCLRun{}); !ok {
				t.Fatalf("saveLast: %s", d.Message)
			}
			_, err := os.Stat(filepath.Join(cfg.State.Dir, ncclStateFile))
			if got := err == nil; got != tc.wantFile {
				t.Errorf("state file written: %v, want %v (%v)", got, tc.wantFile, err)
			}
		})
	}
}

// stateOf is the run's state directory for cfg's [state] dir, as cmd/nodecheck/run makes it.
func stateOf(cfg *config.Config) *files.State {
	return files.NewState(cfg.State.Dir, "[state] dir", os.Geteuid(), false)
}

// TestNCCLAllReduceStateSymlink: the last result is never written through a symlink planted
// in the state directory (the writer it replaced followed one, with mode 0644).
func TestNCCLAllReduceStateSymlink(t *testing.T) {
	cfg := config.Default(Schema())
	cfg.State.Dir = t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(cfg.State.Dir, ncclStateFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok := (ncclAllReduce{}).saveLast(&Env{Facts: &fakeFacts{}, Config: cfg, State: stateOf(cfg)}, Result{Status: StatusOK, Summary: "x"}, NCCLRun{}); !ok {
		t.Fatal("saveLast failed")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("written through the symlink: %q", b)
	}
	fi, err := os.Lstat(filepath.Join(cfg.State.Dir, ncclStateFile))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the state file is %v, %v; want a regular file, 0600", fi, err)
	}
}

func TestNCCLAllReduceStateNotWritable(t *testing.T) {
	cfg := config.Default(Schema())
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.State.Dir = filepath.Join(blocker, "state") // under a regular file: cannot be created
	d, ok := (ncclAllReduce{}).saveLast(&Env{Facts: &fakeFacts{}, Config: cfg, State: stateOf(cfg)}, Result{Status: StatusOK}, NCCLRun{})
	if ok || d.Status != StatusWarn || !strings.HasPrefix(d.Message, "last result not kept: create state directory: ") {
		t.Errorf("got %v %+v, want a warning detail", ok, d)
	}
}

func TestNCCLHasGPUFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"none", []string{"-b", "8", "-e", "4G"}, false},
		{"-g N", []string{"-g", "4"}, true},
		{"-gN", []string{"-g4"}, true},
		{"--ngpus N", []string{"--ngpus", "4"}, true},
		{"--ngpus=N", []string{"--ngpus=4"}, true},
		{"other flags only", []string{"-G", "10", "-c", "1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ncclHasGPUFlag(tc.args); got != tc.want {
				t.Errorf("ncclHasGPUFlag(%q) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

func TestNCCLThresholdLookup(t *testing.T) {
	tests := []struct {
		name    string
		models  []string
		n       int
		wantMin float64
	}{
		{"H100 x8", []string{"NVIDIA H100 80GB HBM3"}, 8, 390},
		{"H100 x4 is not in the table", []string{"NVIDIA H100 80GB HBM3"}, 4, 0},
		{"A100 80GB x8", []string{"NVIDIA A100-SXM4-80GB"}, 8, 195},
		{"A100 40GB named by an old driver", []string{"A100-SXM4-40GB"}, 8, 195},
		{"mixed GPUs", []string{"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"}, 8, 0},
		{"unknown", []string{"NVIDIA GeForce RTX 5090"}, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := ncclLookup(tc.models, tc.n)
			if got.min != tc.wantMin {
				t.Errorf("min %v, want %v", got.min, tc.wantMin)
			}
		})
	}
	for _, e := range ncclThresholds {
		if e.min > 0.85*e.ref+2.5 || e.min < 0.85*e.ref-2.5 {
			t.Errorf("%s: min %v is not 85%% of %v rounded to 5", e.label, e.min, e.ref)
		}
	}
}

func TestNCCLAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{{-time.Second, "0s"}, {45 * time.Second, "45s"}, {12*time.Minute + 5*time.Second, "12m"}, {3*time.Hour + 59*time.Minute, "3h"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"}}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := ncclAge(tc.d); got != tc.want {
				t.Errorf("ncclAge(%s) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

func TestNCCLAllReduceConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    *config.Config
		wantErr string
	}{
		{
			name: "health mode on idle nodes, with a threshold per group",
			toml: `[checks.nccl_allreduce]
timeout = "45s"
modes = ["health", "manual"]
args = ["-b", "1M", "-e", "4G", "-f", "4"]
min_busbw_gbps = 400.0
[[group]]
nodes = "a100-[01-04]"
[group.checks.nccl_allreduce]
min_busbw_gbps = 200.0
`,
			want: configWant(func(c *config.Config) {
				n := settings[*ncclAllReduceConfig](c, idNCCLAllReduce)
				n.Timeout, n.Modes, n.Args, n.MinBusBWGBps = 45*time.Second, []string{"health", "manual"}, []string{"-b", "1M", "-e", "4G", "-f", "4"}, 400
				c.Groups = []config.Group{{Nodes: "a100-[01-04]", Checks: map[string]map[string]any{"nccl_allreduce": {"min_busbw_gbps": 200.0}}}}
			}),
		},
		{
			name:    "never in a prolog",
			toml:    "[checks.nccl_allreduce]\ntimeout = \"5s\"\nmodes = [\"prolog\", \"manual\"]\n",
			wantErr: `nodecheck.toml:3: checks.nccl_allreduce.modes: "prolog" is not allowed for nccl_allreduce: it occupies every GPU for tens of seconds before the job; use "health" (it then runs only on idle nodes) or "manual"`,
		},
		{
			name: "prolog listed but the check is off",
			toml: "[checks.nccl_allreduce]\nenabled = false\ntimeout = \"5s\"\nmodes = [\"prolog\"]\n",
			want: configWant(func(c *config.Config) {
				n := settings[*ncclAllReduceConfig](c, idNCCLAllReduce)
				n.Enabled, n.Timeout, n.Modes = false, 5*time.Second, []string{"prolog"}
			}),
		},
		{
			name:    "relative binary",
			toml:    "[checks.nccl_allreduce]\nbinary = \"all_reduce_perf\"\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.binary = "all_reduce_perf": give an absolute path: Slurm hooks run without PATH`,
		},
		{
			name:    "empty nvidia_smi",
			toml:    "[checks.nccl_allreduce]\nnvidia_smi = \"\"\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.nvidia_smi = "": give an absolute path: Slurm hooks run without PATH`,
		},
		{
			name:    "negative threshold",
			toml:    "[checks.nccl_allreduce]\nmin_busbw_gbps = -1.0\n",
			wantErr: `nodecheck.toml:2: checks.nccl_allreduce.min_busbw_gbps = -1: give a bus bandwidth in GB/s of 0 (the built-in table) or more, such as 390 for 8 H100 SXM`,
		},
		{
			name:    "negative threshold in a group",
			toml:    "[[group]]\nnodes = \"gpu01\"\n[group.checks.nccl_allreduce]\nmin_busbw_gbps = -5.0\n",
			wantErr: `nodecheck.toml:4: group[0].checks.nccl_allreduce.min_busbw_gbps = -5: give a bus bandwidth in GB/s of 0 (the built-in table) or more, such as 390 for 8 H100 SXM`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("no error, want %s", tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestNCCLAllReduceGroupThreshold: a group sets min_busbw_gbps for its nodes only.
func TestNCCLAllReduceGroupThreshold(t *testing.T) {
	cfg, err := config.ParseConfig([]byte("[[group]]\nnodes = \"a100-[01-04]\"\n[group.checks.nccl_allreduce]\nmin_busbw_gbps = 200.0\n"), "nodecheck.toml", Schema())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node string
		want float64
	}{{"a100-02", 200}, {"h100-01", 0}}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			eff, err := cfg.ForNode(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if got := settings[*ncclAllReduceConfig](eff, idNCCLAllReduce).MinBusBWGBps; got != tc.want {
				t.Errorf("min_busbw_gbps %v, want %v", got, tc.want)
			}
		})
	}
}
