package checks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/text"
)

const idNCCLAllReduce = "nccl_allreduce"

// The ways nccl_allreduce fails: its rows of the remedy table (Faults).
const (
	faultNCCLCorrupt fault = "nccl_allreduce/corruption"
	faultNCCLSlow    fault = "nccl_allreduce/low_busbw"
	faultNCCLFailed  fault = "nccl_allreduce/run_failed"
	faultNCCLMissing fault = "nccl_allreduce/not_installed"
)

// ncclLargeSize is where "large messages" start: busbw is judged on the rows of at least
// 1 GiB, where NCCL runs at its peak (nccl-tests#212: "256M is too small to reach peak
// bandwidth"), or on the largest size when the sweep stops below it.
const ncclLargeSize = 1 << 30

// ncclStateFile is the last result's file in the state directory.
const ncclStateFile = "nccl_allreduce.json"

// Summaries used from more than one place.
const (
	ncclPrologSummary = "not run in prolog mode: all_reduce_perf occupies every GPU for tens of seconds before the job"
	ncclNoLastRun     = "no earlier run recorded"
)

// ncclAllReduce runs nccl-tests' all_reduce_perf over all the node's GPUs and judges the bus
// bandwidth at large message sizes against a threshold, and the data check: any wrong
// element is data corruption. It runs in manual mode by default; in health (and epilog) mode
// only where configured and only on an idle node; never in a prolog. It keeps its last result
// in the state directory, the one thing a check writes (see saveLast).
type ncclAllReduce struct {
	now          func() time.Time // nil: time.Now
	probeTimeout time.Duration    // each idle probe's limit; 0: ncclProbeTimeout
}

// ncclProbeTimeout bounds each idle probe (pgrep, nvidia-smi), so that a probe that hangs (a
// wedged GPU can hold nvidia-smi for minutes) leaves the node untested with that reason,
// instead of using up the check's own deadline.
const ncclProbeTimeout = 10 * time.Second

func (ncclAllReduce) ID() string { return idNCCLAllReduce }

func (ncclAllReduce) Description() string {
	return "nccl-tests all_reduce_perf over all GPUs: busbw at 1 GiB and more at least min_busbw_gbps (or the built-in table), no wrong data"
}

// GPUFields implements gpuFactsUser: the GPU count and model (the busbw table).
func (ncclAllReduce) GPUFields() node.GPUFields {
	return node.GPUName
}

func (c ncclAllReduce) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c ncclAllReduce) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*ncclAllReduceConfig](env.Config, idNCCLAllReduce)
	notes, res, ok := c.gate(ctx, env, cfg)
	if !ok {
		return res
	}
	inv, gpuErr := env.Facts.GPUs(ctx)
	argv, nGPUs, res, ok := ncclArgv(cfg, inv, gpuErr)
	if !ok {
		return res
	}
	cr, err := env.Facts.Exec(ctx, argv)
	switch {
	case errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil:
		res := Result{Status: StatusSkip, Summary: ncclNotInstalled(cfg.Binary)}
		if cfg.Required {
			res.Status, res.Remedy = StatusFail, remedyOf(faultNCCLMissing)
			res.Summary += " (required = true)"
		}
		return res
	case errors.Is(ctx.Err(), context.Canceled):
		// nodecheck was interrupted (SIGINT, SIGTERM): no verdict on the node, nothing kept.
		return Result{Status: StatusError, Summary: "interrupted while all_reduce_perf ran", Err: ctx.Err()}
	case ctx.Err() != nil:
		run, _ := ParseNCCLTests(strings.NewReader(cr.Stdout))
		res := Result{Status: StatusFail, Summary: fmt.Sprintf("timed out after %s", cfg.Timeout) + ncclProgress(run), Err: err,
			Remedy: remedyOf(faultNCCLFailed)}
		res.Details = append(notes, ncclFailureDetails(run)...)
		c.saveLast(env, res, run)
		return res
	case err != nil:
		return Result{Status: StatusError, Summary: "run " + ncclShellLine(argv) + ": " + err.Error(), Err: err}
	}
	run, perr := ParseNCCLTests(strings.NewReader(cr.Stdout))
	thr, thrSource := ncclPickThreshold(cfg.MinBusBWGBps, run, inv, nGPUs)
	res = judgeNCCL(ncclOutcome{run: run, parseErr: perr, exit: cr.ExitCode, stderr: cr.Stderr,
		truncated: cr.Truncated, min: thr, minSource: thrSource, argv: argv})
	res.Details = append(notes, res.Details...)
	if d, ok := c.saveLast(env, res, run); !ok {
		res.Details = append(res.Details, d)
	}
	return res
}

// gate decides whether all_reduce_perf may run in this mode on this node. ok is false, with
// the skip to return (carrying the last result), where it may not; notes are details for the
// result of a run it lets go ahead.
func (c ncclAllReduce) gate(ctx context.Context, env *Env, cfg *ncclAllReduceConfig) (notes []Detail, res Result, ok bool) {
	switch env.Mode {
	case config.ModeProlog:
		// Config validation refuses "prolog" in modes; a config built in code could still
		// ask, and the answer is the same.
		return nil, c.notRun(ctx, env, ncclPrologSummary), false
	case config.ModeHealth, config.ModeEpilog:
		busy, unsure := c.busy(ctx, env, cfg, true)
		if busy == "" && unsure != "" {
			busy = "cannot tell whether the node is idle (" + unsure + "): not running all_reduce_perf in " + string(env.Mode) + " mode"
		}
		if busy != "" {
			return nil, c.notRun(ctx, env, busy), false
		}
	default:
		// An admin asked for the run: only evidence that the GPUs are in use stops it.
		busy, unsure := c.busy(ctx, env, cfg, false)
		if busy != "" {
			return nil, c.notRun(ctx, env, busy+": stop them or drain the node first"), false
		}
		if unsure != "" {
			notes = append(notes, Detail{Device: "idle", Status: StatusSkip, Message: "not verified that the GPUs are idle: " + unsure})
		}
	}
	if ctx.Err() != nil {
		return nil, Result{Status: StatusFail, Summary: "timed out before all_reduce_perf started", Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}, false
	}
	return notes, Result{}, true
}

// ncclArgv is the command line of the run: binary and args, with "-g N" added from NVML's
// GPU count unless args set it. ok is false, with the result to return, where NVML cannot
// give the count.
func ncclArgv(cfg *ncclAllReduceConfig, inv node.GPUInventory, gpuErr error) (argv []string, nGPUs int, res Result, ok bool) {
	args := cfg.Args
	if !ncclHasGPUFlag(args) {
		switch {
		case gpuErr != nil:
			return nil, 0, Result{Status: StatusError, Summary: "cannot count the GPUs for -g: " + gpuErr.Error() + " (or set -g in args)", Err: gpuErr}, false
		case inv.Init == nvmlNoLibrary:
			return nil, 0, Result{Status: StatusSkip, Summary: "no NVIDIA driver here (NVML " + nvmlNoLibrary + "): no GPUs to test"}, false
		case inv.Init != node.InitSuccess:
			return nil, 0, Result{Status: StatusError, Summary: fmt.Sprintf("cannot count the GPUs for -g: NVML init %s (or set -g in args)", inv.Init)}, false
		case inv.DeviceCount == 0:
			return nil, 0, Result{Status: StatusSkip, Summary: "NVML reports no GPUs: nothing to test"}, false
		}
		nGPUs = inv.DeviceCount
		args = append(append([]string(nil), args...), "-g", strconv.Itoa(nGPUs))
	}
	return append([]string{cfg.Binary}, args...), nGPUs, Result{}, true
}

// ncclNotInstalled is the summary for a missing binary: what to build and which key to set.
func ncclNotInstalled(bin string) string {
	return fmt.Sprintf("%s not installed: build nccl-tests (github.com/NVIDIA/nccl-tests, make) and install build/all_reduce_perf there, or set checks.nccl_allreduce.binary", bin)
}

// busy looks for signs that the node is in use. busy says what was found. unsure says
// why a probe could not answer. strict (health and epilog modes) adds the slurmstepd probe:
// a job whose processes have not reached the GPUs yet would still lose memory and time to the
// test. Manual mode leaves it out, as an admin may be testing the node inside their own
// allocation (srun nodecheck run --all).
func (c ncclAllReduce) busy(ctx context.Context, env *Env, cfg *ncclAllReduceConfig, strict bool) (busy, unsure string) {
	limit := c.probeTimeout
	if limit <= 0 {
		limit = ncclProbeTimeout
	}
	probe := func(argv ...string) (node.CmdResult, error) {
		pctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		cr, err := env.Facts.Exec(pctx, argv)
		if err != nil && pctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%s timed out after %s", argv[0], limit)
		}
		return cr, err
	}
	var unsures []string
	if strict {
		// pgrep(1): exit 0 when a process matched, 1 when none did.
		cr, err := probe(cfg.Pgrep, "-x", "slurmstepd")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			unsures = append(unsures, cfg.Pgrep+" not installed")
		case err != nil:
			unsures = append(unsures, err.Error())
		case cr.ExitCode == 0:
			pids := strings.Fields(cr.Stdout)
			return fmt.Sprintf("node busy: a Slurm job step runs here (slurmstepd pid %s)", strings.Join(ncclFirstN(pids, 3), ", ")), ""
		case cr.ExitCode != 1:
			unsures = append(unsures, fmt.Sprintf("%s exit code %d%s", cfg.Pgrep, cr.ExitCode, ncclLastLineSuffix(cr.Stderr)))
		}
	}
	// --query-compute-apps prints one "pid" line per compute process, nothing when none.
	cr, err := probe(cfg.NvidiaSMI, "--query-compute-apps=pid", "--format=csv,noheader")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		unsures = append(unsures, cfg.NvidiaSMI+" not installed")
	case err != nil:
		unsures = append(unsures, err.Error())
	case cr.ExitCode != 0:
		unsures = append(unsures, fmt.Sprintf("%s exit code %d%s", cfg.NvidiaSMI, cr.ExitCode, ncclLastLineSuffix(cr.Stdout+"\n"+cr.Stderr)))
	default:
		var pids []string
		for _, l := range strings.Split(cr.Stdout, "\n") {
			if f := strings.TrimSpace(l); f != "" && ncclAllDigits(f) {
				pids = append(pids, f)
			}
		}
		if len(pids) > 0 {
			return fmt.Sprintf("node busy: %d compute %s on the GPUs (pid %s)", len(pids), text.Plural(len(pids), "process", "processes"), strings.Join(ncclFirstN(pids, 3), ", ")), ""
		}
	}
	return "", strings.Join(unsures, "; ")
}

// ncclHasGPUFlag reports whether args set all_reduce_perf's GPU count: -g N, -gN, --ngpus N
// or --ngpus=N.
func ncclHasGPUFlag(args []string) bool {
	for _, a := range args {
		if a == "-g" || a == "--ngpus" || strings.HasPrefix(a, "--ngpus=") || strings.HasPrefix(a, "-g") && len(a) > 2 {
			return true
		}
	}
	return false
}

// ncclOutcome is everything judgeNCCL looks at.
type ncclOutcome struct {
	run       NCCLRun
	parseErr  error
	exit      int
	stderr    string
	truncated bool
	min       float64 // 0: no threshold
	minSource string  // "min_busbw_gbps", "built-in for ...", or why there is none
	argv      []string
}

// judgeNCCL turns a finished run into a result. The order is what matters most to an admin:
// wrong data first (the node corrupts results), then a failed run, then output that cannot
// be judged, then the bandwidth.
func judgeNCCL(o ncclOutcome) Result {
	run := o.run
	res := Result{}
	res.Details = append(res.Details, ncclFailureDetails(run)...)

	if s, bad, ok := ncclCorruption(run); ok {
		res.Status, res.Summary, res.Remedy = StatusFail, s, remedyOf(faultNCCLCorrupt)
		for i := range res.Details {
			if res.Details[i].Status == StatusFail {
				res.Details[i].Remedy = res.Remedy // the failure lines report the wrong data
			}
		}
		res.Details = append(bad, res.Details...)
		res.Observed = fmt.Sprintf("%d wrong elements, %d out of bounds values", ncclWrongTotal(run), max(run.OutOfBounds, 0))
		res.Expected = "0 wrong elements"
		return res
	}
	if o.exit != 0 {
		res.Status, res.Remedy = StatusFail, remedyOf(faultNCCLFailed)
		res.Summary = "all_reduce_perf " + ncclExitText(o.exit) + ": " + ncclWhy(run, o.stderr)
		res.Observed, res.Expected = "exit code "+strconv.Itoa(o.exit), "exit code 0"
		return res
	}
	if len(run.Failures) > 0 {
		res.Status, res.Remedy = StatusFail, remedyOf(faultNCCLFailed)
		res.Summary = "all_reduce_perf exited 0 but reported: " + text.OneLine(run.Failures[0], ncclMaxText)
		return res
	}
	if o.parseErr != nil {
		res.Status, res.Summary, res.Err = StatusError, "cannot read all_reduce_perf output: "+o.parseErr.Error(), o.parseErr
		return res
	}
	cut := ""
	if o.truncated {
		cut = fmt.Sprintf(" (output cut at %d KiB)", node.DefaultOutputLimit>>10)
	}
	if len(run.Rows) == 0 {
		res.Status = StatusError
		res.Summary = "all_reduce_perf printed no result rows" + cut + ": is " + o.argv[0] + " nccl-tests' all_reduce_perf?"
		return res
	}
	if !run.Completed() {
		res.Status = StatusError
		res.Summary = "all_reduce_perf output ends before its summary line (# Out of bounds values)" + cut
		return res
	}

	return judgeNCCLBandwidth(o, res)
}

// judgeNCCLBandwidth judges a complete, clean sweep: the best bus bandwidth at large sizes
// against the threshold, with a detail per judged size and the sweep's average (not judged).
func judgeNCCLBandwidth(o ncclOutcome, res Result) Result {
	run := o.run
	bw, size, judged := ncclLargeBusBW(run.Rows)
	for _, r := range judged {
		res.Details = append(res.Details, Detail{Device: ncclSize(r.Size), Status: StatusOK,
			Message:  fmt.Sprintf("busbw %s GB/s out of place, %s in place", ncclGBps(r.OutOfPlace.BusBW), ncclGBps(r.InPlace.BusBW)),
			Observed: ncclGBps(max(ncclFinite(r.OutOfPlace.BusBW), ncclFinite(r.InPlace.BusBW))) + " GB/s"})
	}
	if run.AvgBusBW >= 0 {
		res.Details = append(res.Details, Detail{Device: "sweep", Status: StatusOK,
			Message: fmt.Sprintf("average busbw over all %d sizes %s GB/s (not judged: small messages pull it down)", len(run.Rows), ncclGBps(run.AvgBusBW))})
	}
	res.Observed = fmt.Sprintf("%s GB/s at %s", ncclGBps(bw), ncclSize(size))
	figure := fmt.Sprintf("busbw %s GB/s at %s", ncclGBps(bw), ncclSize(size))
	unchecked := ""
	if run.Validation == 0 {
		unchecked = "; data not checked (-c 0)"
	}
	switch {
	case o.min <= 0:
		res.Status, res.Summary = StatusWarn, figure+"; "+o.minSource
	case size < ncclLargeSize && o.minSource != "min_busbw_gbps":
		// The table holds figures for large messages; a short sweep cannot meet them.
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("%s: the sweep ends below 1 GiB, where the built-in threshold (%s GB/s for %s) does not apply: raise -e to 4G or set min_busbw_gbps",
			figure, fmtGbps(o.min), strings.TrimPrefix(o.minSource, "built-in for "))
		res.Expected = fmt.Sprintf(">= %s GB/s at >= 1 GiB", fmtGbps(o.min))
	case bw < o.min:
		res.Status, res.Remedy = StatusFail, remedyOf(faultNCCLSlow)
		res.Summary = fmt.Sprintf("%s, want at least %s (%s)", figure, fmtGbps(o.min), o.minSource)
		res.Expected = fmt.Sprintf(">= %s GB/s", fmtGbps(o.min))
	default:
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("%s, at least %s (%s); no wrong data%s", figure, fmtGbps(o.min), o.minSource, unchecked)
		res.Expected = fmt.Sprintf(">= %s GB/s", fmtGbps(o.min))
	}
	if unchecked != "" && res.Status != StatusOK {
		res.Summary += unchecked
	}
	return res
}

// ncclCorruption names the first wrong result, or the out of bounds count when no row says
// which size was wrong, with a detail per wrong result.
func ncclCorruption(run NCCLRun) (string, []Detail, bool) {
	var bad []Detail
	for _, r := range run.Rows {
		for _, h := range []struct {
			name string
			res  NCCLResult
		}{{"out of place", r.OutOfPlace}, {"in place", r.InPlace}} {
			if h.res.Wrong > 0 {
				bad = append(bad, Detail{Device: ncclSize(r.Size) + " " + h.name, Status: StatusFail, Remedy: remedyOf(faultNCCLCorrupt),
					Message:  fmt.Sprintf("%d wrong elements", h.res.Wrong),
					Observed: strconv.FormatInt(h.res.Wrong, 10), Expected: "0"})
			}
		}
	}
	if len(bad) > 0 {
		s := fmt.Sprintf("data corruption: %s at %s, want 0", bad[0].Message, bad[0].Device) + moreSuffix(len(bad)-1)
		if run.OutOfBounds > 0 {
			s += fmt.Sprintf("; out of bounds values %d", run.OutOfBounds)
		}
		return s, bad, true
	}
	if run.OutOfBounds > 0 {
		return fmt.Sprintf("data corruption: out of bounds values %d, want 0", run.OutOfBounds), nil, true
	}
	return "", nil, false
}

func ncclWrongTotal(run NCCLRun) int64 {
	var n int64
	for _, r := range run.Rows {
		n += max(r.OutOfPlace.Wrong, 0) + max(r.InPlace.Wrong, 0)
	}
	return n
}

// ncclWhy is the best explanation of a failed run: its first failure line, else NCCL's first
// warning, else the last line of stderr (a loader error: "error while loading shared
// libraries: libnccl.so.2"), else the last line of stdout.
func ncclWhy(run NCCLRun, stderr string) string {
	switch {
	case len(run.Failures) > 0:
		return text.OneLine(run.Failures[0], ncclMaxText)
	case len(run.Warnings) > 0:
		return text.OneLine(run.Warnings[0], ncclMaxText)
	}
	if l := ncclLastLine(stderr); l != "" {
		return text.OneLine(l, ncclMaxText)
	}
	return "no failure line printed"
}

// ncclExitText spells an exit code, naming the signal for 128+N.
func ncclExitText(code int) string {
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("exit code %d (signal %d)", code, code-128)
	}
	return fmt.Sprintf("exit code %d", code)
}

// ncclProgress says how far a cut-short run got.
func ncclProgress(run NCCLRun) string {
	if len(run.Rows) == 0 {
		return " (no result printed yet)"
	}
	return " (last size done: " + ncclSize(run.Rows[len(run.Rows)-1].Size) + ")"
}

// ncclFailureDetails lists failure and warning lines (a few of each).
func ncclFailureDetails(run NCCLRun) []Detail {
	var out []Detail
	for _, l := range ncclFirstN(run.Failures, 3) {
		out = append(out, Detail{Device: "output", Status: StatusFail, Message: text.OneLine(l, ncclMaxText), Remedy: remedyOf(faultNCCLFailed)})
	}
	for _, l := range ncclFirstN(run.Warnings, 3) {
		out = append(out, Detail{Device: "output", Status: StatusWarn, Message: text.OneLine(l, ncclMaxText)})
	}
	return out
}

// ncclLargeBusBW picks the rows judged (size >= 1 GiB, or else the largest size) and returns
// the best busbw among them, out of place or in place, and the size where it was seen. The
// best rather than the mean: a healthy node reaches its figure at some large size, and a
// degraded one (a lost NVLink, PCIe fallback) reaches it at none.
func ncclLargeBusBW(rows []NCCLRow) (bw float64, size int64, judged []NCCLRow) {
	var largest int64
	for _, r := range rows {
		largest = max(largest, r.Size)
	}
	for _, r := range rows {
		if r.Size >= ncclLargeSize || r.Size == largest {
			judged = append(judged, r)
		}
	}
	bw = -1
	for _, r := range judged {
		for _, v := range []float64{r.OutOfPlace.BusBW, r.InPlace.BusBW} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v > bw {
				bw, size = v, r.Size
			}
		}
	}
	if bw < 0 {
		bw, size = 0, largest
	}
	return bw, size, judged
}

func ncclFinite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// ncclSize spells a message size: "4 GiB", "128 MiB", "8 B".
func ncclSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ncclGBps spells a bandwidth with one decimal, as precise as a judgement needs.
func ncclGBps(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// ncclLastRun is the state file: the last verdict of a run that got as far as running
// all_reduce_perf, for the modes and moments the check does not run in.
type ncclLastRun struct {
	Time      time.Time `json:"time"`
	Status    Status    `json:"status"`
	Summary   string    `json:"summary"`
	Observed  string    `json:"observed,omitempty"` // "476.5 GB/s at 4 GiB"
	Expected  string    `json:"expected,omitempty"`
	BusBWGBps float64   `json:"busbw_gbps,omitempty"`
	GPUModel  string    `json:"gpu_model,omitempty"`
	GPUs      int       `json:"gpus,omitempty"`
	NCCL      string    `json:"nccl_version,omitempty"`
}

// saveLast writes the result to nccl_allreduce.json in the run's state directory
// (env.State: atomic, 0600, never through a symlink, under the state directory's rule), so
// that a reader never sees half a file. It is the one write a check makes, and it is skipped
// when env.ReadOnly is set (replays and dry runs: a replay must not touch the live node). It
// returns a detail for the report when the write failed; a failed write does not change the
// verdict.
func (c ncclAllReduce) saveLast(env *Env, res Result, run NCCLRun) (Detail, bool) {
	if env.ReadOnly || !env.State.Configured() {
		return Detail{}, true
	}
	last := ncclLastRun{Time: c.clock().UTC().Truncate(time.Second), Status: res.Status, Summary: res.Summary,
		Observed: res.Observed, Expected: res.Expected, GPUs: len(run.Ranks), NCCL: run.NCCLVersion}
	if m := run.Models(); len(m) == 1 {
		last.GPUModel = m[0]
	}
	if len(run.Rows) > 0 && run.Completed() {
		last.BusBWGBps, _, _ = ncclLargeBusBW(run.Rows)
	}
	b, err := json.MarshalIndent(last, "", "  ")
	if err == nil {
		var dir *files.StateDir
		if dir, err = env.State.Open(); err == nil {
			err = dir.WriteFile(ncclStateFile, append(b, '\n'))
		}
	}
	if err != nil {
		return Detail{Device: "state", Status: StatusWarn, Message: "last result not kept: " + err.Error() + "; check [state] dir"}, false
	}
	return Detail{}, true
}

// notRun is the skip for a run not made (prolog mode, a busy node), carrying the last
// result and its age so that the report still says how the node did:
// "not run in prolog mode: ...; last run 3h ago: 476.5 GB/s at 4 GiB ok".
func (c ncclAllReduce) notRun(ctx context.Context, env *Env, why string) Result {
	return Result{Status: StatusSkip, Summary: why + "; " + c.lastRunText(ctx, env)}
}

// lastRunText reads the state file through the node's facts (a snapshot replays its own).
func (c ncclAllReduce) lastRunText(ctx context.Context, env *Env) string {
	path := filepath.Join(env.Config.State.Dir, ncclStateFile)
	b, err := env.Facts.ReadFile(ctx, path)
	if isNotExist(err) {
		return ncclNoLastRun
	}
	if err != nil {
		return "last result unreadable: " + err.Error()
	}
	var last ncclLastRun
	if err := json.Unmarshal(b, &last); err != nil || last.Time.IsZero() || last.Status == "" {
		return "last result in " + path + " unreadable: not a nodecheck state file"
	}
	figure := ""
	if last.Observed != "" {
		figure = last.Observed + " "
	}
	return fmt.Sprintf("last run %s ago: %s%s", ncclAge(c.clock().Sub(last.Time)), figure, last.Status)
}

// ncclAge spells a duration in its largest whole unit: "45s", "12m", "3h", "2d".
func ncclAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// ncclMaxText is what text.OneLine keeps of a line of all_reduce_perf's output in a summary or
// detail; with the "..." of a cut, at most 160 bytes.
const ncclMaxText = 157

// ncclShellLine prints argv for a message.
func ncclShellLine(argv []string) string { return strings.Join(argv, " ") }

func ncclLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func ncclLastLineSuffix(s string) string {
	if l := ncclLastLine(s); l != "" {
		return ": " + text.OneLine(l, ncclMaxText)
	}
	return ""
}

func ncclFirstN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// Faults declares the check's own rows of the remedy table.
func (ncclAllReduce) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultNCCLCorrupt, "all_reduce_perf finds wrong or out of bounds data", RemedyService,
				"wrong data from a node is a faulty GPU or memory: DCGM_FR_MEMORY_MISMATCH_NEXT, run a field diagnostic"},
			{faultNCCLSlow, "bus bandwidth below the threshold", RemedyService,
				"DCGM_FR_LOW_BANDWIDTH_NEXT: check the threshold, and if the low figure is consistent, run a field diagnostic"},
			{faultNCCLFailed, "all_reduce_perf failed (exit code, a failure line) or ran out of time; the reset concerns every GPU of the node", RemedyResetGPU,
				"DCGM_FR_CUDA_API_NEXT: \"Check DCGM and system logs for errors. Reset GPU. ... Rerun diagnostics.\""},
			{faultNCCLMissing, "all_reduce_perf is not installed and required = true", RemedyAdmin, "software to install"},
		},
	}
}

// Explain is what `nodecheck explain nccl_allreduce` says.
func (ncclAllReduce) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The output of all_reduce_perf from nccl-tests, run as binary with args and -g set to the number of GPUs NVML reports: the bus bandwidth per message size, the #wrong column and the out of bounds count.",
			"Before it runs, whether the GPUs are in use: nvidia-smi --query-compute-apps, and in health and epilog mode also pgrep -x slurmstepd.",
			"NVML: the number and names of the GPUs, for -g and the built-in thresholds.",
			"Its last result, kept in [state] dir (nccl_allreduce.json), to report in the modes it does not run in.",
		},
		Passes: "all_reduce_perf exits 0, no element is wrong, and the best bus bandwidth at 1 GiB and more (or at the largest sizes, when the sweep ends below 1 GiB) is at least min_busbw_gbps, or the built-in threshold: 390 GB/s for 8x H100 80GB HBM3, 195 GB/s for 8x A100-SXM4 (85% of the published figures).",
		Warns:  "No threshold applies (GPUs the built-in table does not know, and min_busbw_gbps unset): the figure is reported so that you can set one.",
		Fails:  "The bus bandwidth is below the threshold (a GPU fallen back to PCIe, NVLinks or an NVSwitch lost, NVLS off because Fabric Manager's multicast does not work, throttled clocks), an element is wrong or out of bounds (data corruption), a CUDA or NCCL call failed, all_reduce_perf exited non-zero or ran out of time, or it is not installed and required = true.",
		Skips:  "The mode is not in modes (manual only by default, never a prolog): the last result is shown with its age. Or the node is busy (a job step, compute processes on the GPUs), all_reduce_perf is not installed, or there is no NVIDIA driver or GPU.",
		Errors: "The number of GPUs for -g cannot be had from NVML, all_reduce_perf cannot be started, or its output cannot be read.",
		Keys: map[string]string{
			"binary":         "all_reduce_perf from https://github.com/NVIDIA/nccl-tests (build/all_reduce_perf). It runs with PATH and LANG only: where NCCL is not in the linker's default path, point this at a wrapper script that sets LD_LIBRARY_PATH.",
			"args":           "Arguments of all_reduce_perf; \"-g N\" with the GPU count NVML reports is added unless they set -g themselves.",
			"min_busbw_gbps": "Least acceptable bus bandwidth in GB/s at the largest sizes; set it per node type in [[group]] sections. 0: the built-in table.",
			"required":       "true: a missing binary fails instead of skipping.",
			"nvidia_smi":     "Asked for the compute processes on the GPUs before a run: a node whose GPUs are in use is not tested.",
			"pgrep":          "Asked for slurmstepd before a health or epilog run: a node with a Slurm job step is not tested.",
		},
		Fix: []string{
			"nvidia-smi topo -m and nvidia-smi nvlink -s: every GPU pair should be joined by NVLink (NV18 on HGX H100, NV12 on HGX A100) with every link up at full speed; a missing link points to a GPU, the baseboard or an NVSwitch.",
			"Check Fabric Manager first (nodecheck explain fabric_manager): without it NVLink jobs fail, and without its multicast NCCL runs without NVLS, at about 370 GB/s instead of 480 on 8x H100.",
			"Wrong data: run it again. Wrong data that comes back means a faulty GPU or memory: dmesg | grep -i xid, nvidia-smi -q -d ECC, then replace the GPU.",
			"Run it by hand with NCCL_DEBUG=INFO: the log names the transport of each channel (NVLS, P2P over NVLink, SHM). nccl-tests built against another CUDA or NCCL than the node's, or an old NCCL, gives low figures: rebuild nccl-tests against the NCCL installed.",
			"For an RMA case, dcgmi diag -r 3 runs NVIDIA's own NVLink and memory tests.",
		},
	}
}
