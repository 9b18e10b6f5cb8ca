package validate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

// Host is what validation needs of the node: running a tool (without a shell, under a
// deadline, its output bounded and its process group killed at the deadline: node.Live's
// Exec), the GPUs NVML sees, and the InfiniBand ports. node.Facts has all three.
type Host interface {
	Exec(ctx context.Context, argv []string) (node.CmdResult, error)
	GPUs(ctx context.Context) (node.GPUInventory, error)
	IBPorts(ctx context.Context) ([]node.IBPort, error)
}

// Options are one validation's settings.
type Options struct {
	Node  string
	Level Level
	// Mode is the context nodecheck was started in: a prolog or epilog refuses.
	Mode   config.Mode
	Config config.ValidateConfig
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// IBHeadStart is how long the ib_write_bw server gets before its client starts; 0 means 1s.
	IBHeadStart time.Duration
	// Jobs lists the Slurm jobs on the node (squeue), "ID|STATE" each; nil where Slurm's
	// squeue is not installed. OwnJob is the job validation runs in (SLURM_JOB_ID), which
	// does not count.
	Jobs   func(ctx context.Context) ([]string, error)
	OwnJob string
	// testTimeout, when set, replaces every test's timeout (tests of the deadlines).
	testTimeout time.Duration
}

// state is what the tests learn as they go: the GPUs' model and count (NVML's, else the
// tools' own output), and the floors for them.
type state struct {
	h      Host
	o      Options
	model  string
	nGPUs  int
	report *Report
}

func (s *state) floors() Floors { return floorsFor(s.model, s.nGPUs, s.o.Config.Floors) }

// learn takes the GPUs' model and count from a tool's output where NVML gave none.
func (s *state) learn(names []string) {
	if s.model == "" && len(names) > 0 {
		s.model = names[0]
	}
	if s.nGPUs == 0 {
		s.nGPUs = len(names)
	}
}

// Run validates the node at o.Level: it refuses in a prolog or epilog and on a node whose
// GPUs run compute processes, else runs the level's tests in order, each under its timeout
// within the level's budget, and judges every figure against its floor. It never returns an
// error: what could not be done is in the report (Refused, or a test's error status).
func Run(ctx context.Context, h Host, o Options) Report {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	rep := Report{Node: o.Node, Level: o.Level, Started: start.UTC().Truncate(time.Second), Verdict: VerdictUndecided}
	finish := func() Report {
		rep.DurationS = seconds(now().Sub(start))
		return rep
	}
	if _, ok := levelTests[o.Level]; !ok {
		rep.Refused = fmt.Sprintf("unknown level %q", o.Level)
		return finish()
	}
	if o.Mode.JobHook() {
		rep.Refused = fmt.Sprintf("validation never runs in a %s: it loads the GPUs for minutes to hours; run it as an exclusive job or by hand on an idle node", o.Mode)
		return finish()
	}
	budget := o.Config.Budget.For(string(o.Level))
	lctx := ctx
	if budget > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	s := &state{h: h, o: o, report: &rep}
	if inv, err := h.GPUs(lctx); err == nil && inv.Init == node.InitSuccess {
		s.nGPUs = inv.DeviceCount
		if len(inv.Devices) > 0 {
			s.model = inv.Devices[0].Name
		}
	}
	why := busyJobs(lctx, o)
	if why == "" {
		why = busy(lctx, h, o.Config.NvidiaSMI)
	}
	if why != "" {
		rep.Refused = why
		rep.Model = s.model
		return finish()
	}
	for _, sp := range levelTests[o.Level] {
		t0 := now()
		var tests []Test
		if lctx.Err() != nil {
			tests = []Test{{Name: sp.name, Status: checks.StatusError, Summary: notRun(ctx, budget)}}
		} else {
			tests = s.runTest(lctx, sp)
		}
		if len(tests) == 1 && tests[0].DurationS == 0 {
			tests[0].DurationS = seconds(now().Sub(t0))
		}
		rep.Tests = append(rep.Tests, tests...)
	}
	rep.Model = s.model
	rep.Verdict = judge(rep.Tests)
	return finish()
}

// seconds is d in seconds, to a tenth.
func seconds(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

func notRun(parent context.Context, budget time.Duration) string {
	if parent.Err() != nil {
		return "not run: validation was interrupted"
	}
	return fmt.Sprintf("not run: the level's budget of %s was used up by earlier tests ([validate.budget])", budget)
}

// runTest runs one test of the level under its own timeout.
func (s *state) runTest(ctx context.Context, sp spec) []Test {
	timeout := sp.timeout
	if sp.name == TestGPUBurn {
		timeout += s.o.Config.BurnIn
	}
	if s.o.testTimeout > 0 {
		timeout, sp.timeout = s.o.testTimeout, s.o.testTimeout
	}
	one := func(f func(context.Context) Test) Test {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		start := time.Now()
		t := f(tctx)
		t.DurationS = seconds(time.Since(start))
		return t
	}
	switch sp.name {
	case TestDCGM:
		return []Test{one(func(c context.Context) Test { return s.dcgm(c, sp.dcgmLevel) })}
	case TestNVBandwidth:
		return []Test{one(s.nvbandwidth)}
	case TestNCCL:
		n := 1
		if s.o.Level == LevelBurnIn {
			n = s.o.Config.NCCLRepeats
		}
		var out []Test
		for i := range n {
			t := one(func(c context.Context) Test { return s.nccl(c, TestNCCL, nil) })
			if n > 1 {
				t.Summary = fmt.Sprintf("run %d of %d: %s", i+1, n, t.Summary)
			}
			out = append(out, t)
			if t.Status == checks.StatusFail || t.Status == checks.StatusSkip || ctx.Err() != nil {
				break
			}
		}
		return out
	case TestNCCLNet:
		// P2P (NVLink) and shared memory off: the ranks' traffic takes NCCL's network path,
		// the HCAs in loopback, as traffic between nodes does.
		return []Test{one(func(c context.Context) Test {
			return s.nccl(c, TestNCCLNet, []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"})
		})}
	case TestIBWriteBW:
		return []Test{s.ibWriteBW(ctx, sp.timeout)}
	case TestGPUBurn:
		return []Test{one(s.gpuBurn)}
	}
	return []Test{{Name: sp.name, Status: checks.StatusError, Summary: "unknown test"}}
}

// busyJobs says why the node is not free for validation by Slurm's word: a job other than
// validation's own runs there, or squeue could not say (a node whose jobs are unknown is not
// validated: it may be running one).
func busyJobs(ctx context.Context, o Options) string {
	if o.Jobs == nil {
		return ""
	}
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	jobs, err := o.Jobs(jctx)
	if err != nil {
		return "cannot tell whether a Slurm job runs on the node: " + text.OneLine(err.Error(), 160)
	}
	var others []string
	for _, j := range jobs {
		id, _, _ := strings.Cut(j, "|")
		if id != o.OwnJob {
			others = append(others, j)
		}
	}
	if len(others) == 0 {
		return ""
	}
	n := len(others)
	if n > 3 {
		others = append(others[:3], "...")
	}
	return fmt.Sprintf("node busy: %d Slurm %s on the node (%s); validation runs only on an idle node, or in its own exclusive job", n, text.Plural(n, "job", "jobs"), strings.Join(others, ", "))
}

// busy says why the node is not idle: compute processes on its GPUs (nvidia-smi
// --query-compute-apps prints one pid per line, nothing when none), or "" when none is seen.
// Without nvidia-smi nothing can be seen, and the tests themselves find NVML unusable.
func busy(ctx context.Context, h Host, nvidiaSMI string) string {
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := h.Exec(pctx, []string{nvidiaSMI, "--query-compute-apps=pid", "--format=csv,noheader"})
	if err != nil || out.ExitCode != 0 {
		return ""
	}
	var pids []string
	for _, l := range strings.Split(out.Stdout, "\n") {
		if f := strings.TrimSpace(l); f != "" {
			if _, err := strconv.Atoi(f); err == nil {
				pids = append(pids, f)
			}
		}
	}
	n := len(pids)
	if n == 0 {
		return ""
	}
	if n > 3 {
		pids = append(pids[:3], "...")
	}
	return fmt.Sprintf("node busy: %d compute %s on the GPUs (pid %s); validation runs only on an idle node", n, text.Plural(n, "process", "processes"), strings.Join(pids, ", "))
}
