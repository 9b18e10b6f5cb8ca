package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/config"
)

// fakeCheck is a check whose behaviour a test sets. The config has no section for it, so
// the runner takes its settings from Section, as for any check a config was not made for.
type fakeCheck struct {
	id  string
	run func(ctx context.Context) Result
	set config.CheckCommon
}

// fakeSection is a fakeCheck's section.
type fakeSection struct{ config.CheckCommon }

func (f fakeCheck) ID() string                             { return f.id }
func (f fakeCheck) Description() string                    { return "fake" }
func (f fakeCheck) Section() config.Section                { return &fakeSection{f.set} }
func (f fakeCheck) Explain() Explanation                   { return Explanation{} }
func (f fakeCheck) Faults() Faults                         { return Faults{} }
func (f fakeCheck) Run(ctx context.Context, _ *Env) Result { return f.run(ctx) }

var allModes = []string{"prolog", "epilog", "health", "manual"}

func fixed(st Status, summary string) func(context.Context) Result {
	return func(context.Context) Result { return Result{Status: st, Summary: summary} }
}

// blockForever ignores its context, as a cgo call into a wedged driver would.
func blockForever(context.Context) Result { select {} }

func fc(id string, timeout time.Duration, run func(context.Context) Result) fakeCheck {
	return fakeCheck{id: id, run: run, set: config.CheckCommon{Enabled: true, Timeout: timeout, Modes: allModes}}
}

type brief struct {
	Check, Status, Summary string
}

func briefs(r Report) []brief {
	var out []brief
	for _, res := range r.Results {
		out = append(out, brief{res.Check, string(res.Status), res.Summary})
	}
	return out
}

func TestRun(t *testing.T) {
	disabled := fc("off", time.Second, fixed(StatusFail, "must not run"))
	disabled.set.Enabled = false
	healthOnly := fc("health_only", time.Second, fixed(StatusFail, "must not run"))
	healthOnly.set.Modes = []string{"health"}

	tests := []struct {
		name        string
		list        []Check
		opts        RunOptions
		want        []brief
		wantVerdict Verdict
	}{
		{
			name:        "all ok",
			list:        []Check{fc("a", time.Second, fixed(StatusOK, "fine")), fc("b", time.Second, fixed(StatusSkip, "n/a"))},
			want:        []brief{{"a", "ok", "fine"}, {"b", "skip", "n/a"}},
			wantVerdict: VerdictHealthy,
		},
		{
			name:        "a failure does not hide later checks",
			list:        []Check{fc("a", time.Second, fixed(StatusFail, "bad")), fc("b", time.Second, fixed(StatusOK, "fine"))},
			want:        []brief{{"a", "fail", "bad"}, {"b", "ok", "fine"}},
			wantVerdict: VerdictUnhealthy,
		},
		{
			name:        "stop on first failure",
			list:        []Check{fc("a", time.Second, fixed(StatusFail, "bad")), fc("b", time.Second, fixed(StatusOK, "fine"))},
			opts:        RunOptions{StopOnFirstFailure: true},
			want:        []brief{{"a", "fail", "bad"}, {"b", "skip", "not run: stop_on_first_failure after a failed"}},
			wantVerdict: VerdictUnhealthy,
		},
		{
			name:        "a check that could not decide makes the run undecided, not healthy",
			list:        []Check{fc("a", time.Second, fixed(StatusWarn, "hmm")), fc("b", time.Second, fixed(StatusError, "cannot tell"))},
			want:        []brief{{"a", "warn", "hmm"}, {"b", "error", "cannot tell"}},
			wantVerdict: VerdictUndecided,
		},
		{
			name:        "error_is_failure",
			list:        []Check{fc("b", time.Second, fixed(StatusError, "cannot tell"))},
			opts:        RunOptions{ErrorIsFailure: true},
			want:        []brief{{"b", "error", "cannot tell"}},
			wantVerdict: VerdictUnhealthy,
		},
		{
			name:        "disabled and out-of-mode checks skip and say why",
			list:        []Check{disabled, healthOnly},
			want:        []brief{{"off", "skip", "disabled in config"}, {"health_only", "skip", "does not run in prolog mode (modes = [health])"}},
			wantVerdict: VerdictHealthy,
		},
		{
			name:        "a hung check fails with timed out and later checks still run",
			list:        []Check{fc("hang", 50*time.Millisecond, blockForever), fc("b", time.Second, fixed(StatusOK, "fine"))},
			want:        []brief{{"hang", "fail", "timed out after 50ms"}, {"b", "ok", "fine"}},
			wantVerdict: VerdictUnhealthy,
		},
		{
			name: "the budget ends the run and names the checks it could not reach",
			list: []Check{fc("hang", time.Hour, blockForever), fc("b", time.Second, fixed(StatusOK, "fine"))},
			opts: RunOptions{Budget: 80 * time.Millisecond},
			want: []brief{{"hang", "fail", "timed out: the run's budget ran out"},
				{"b", "error", "not run: the run's budget of 80ms was used up by earlier checks"}},
			wantVerdict: VerdictUnhealthy,
		},
		{
			name:        "a panicking check is an error, not a crash",
			list:        []Check{fc("p", time.Second, func(context.Context) Result { panic("boom") })},
			want:        []brief{{"p", "error", "internal error: boom"}},
			wantVerdict: VerdictUndecided,
		},
		{
			name: "a check that returns after its deadline is judged timed out",
			list: []Check{fc("slow", 30*time.Millisecond, func(ctx context.Context) Result {
				<-ctx.Done()
				return Result{Status: StatusError, Summary: ctx.Err().Error()}
			})},
			want:        []brief{{"slow", "fail", "timed out after 30ms"}},
			wantVerdict: VerdictUnhealthy,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{Config: config.Default(Schema()), Mode: config.ModeProlog}
			start := time.Now()
			rep := Run(context.Background(), env, tc.list, tc.opts)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("run took %s", d)
			}
			if diff := cmp.Diff(tc.want, briefs(rep)); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if rep.Verdict != tc.wantVerdict || rep.Healthy != (tc.wantVerdict == VerdictHealthy) {
				t.Errorf("verdict %q (healthy %v), want %q", rep.Verdict, rep.Healthy, tc.wantVerdict)
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := &Env{Config: config.Default(Schema()), Mode: config.ModeManual}
	rep := Run(ctx, env, []Check{fc("a", time.Second, fixed(StatusOK, "fine"))}, RunOptions{})
	if got := rep.Results[0]; got.Status != StatusError || !strings.Contains(got.Summary, "interrupted") {
		t.Errorf("got %+v, want an error saying the run was interrupted", got)
	}
	if rep.Verdict != VerdictUndecided || !rep.Interrupted || rep.Healthy {
		t.Errorf("verdict %q interrupted %v healthy %v, want undecided, interrupted", rep.Verdict, rep.Interrupted, rep.Healthy)
	}
}

// TestRunInterruptedAfterTheChecks: a signal that comes after every check decided still
// makes the run undecided: nodecheck was stopped before it could act on what it found.
func TestRunInterruptedAfterTheChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Config: config.Default(Schema()), Mode: config.ModeHealth}
	rep := Run(ctx, env, []Check{fc("a", time.Second, func(context.Context) Result {
		cancel()
		return Result{Status: StatusOK, Summary: "fine"}
	})}, RunOptions{})
	if rep.Verdict != VerdictUndecided || !rep.Interrupted {
		t.Errorf("verdict %q interrupted %v, want undecided, interrupted", rep.Verdict, rep.Interrupted)
	}
}

// TestRunDeadline: RunOptions.Deadline (NewEnv's, which counts the setup) ends the run.
func TestRunDeadline(t *testing.T) {
	env := &Env{Config: config.Default(Schema()), Mode: config.ModeProlog, Budget: Budget{Run: time.Second}}
	start := time.Now()
	rep := Run(context.Background(), env, []Check{fc("hang", time.Hour, blockForever), fc("b", time.Second, fixed(StatusOK, "fine"))},
		RunOptions{Deadline: start.Add(60 * time.Millisecond)})
	if d := time.Since(start); d > time.Second {
		t.Errorf("run took %s", d)
	}
	want := []brief{{"hang", "fail", "timed out: the run's budget ran out"}, {"b", "error", "not run: the run's budget of 1s was used up by earlier checks"}}
	if diff := cmp.Diff(want, briefs(rep)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if rep.Interrupted {
		t.Error("a run that used up its budget is not interrupted")
	}
}

func TestSelectKeepsRunOrder(t *testing.T) {
	got, err := Select([]string{"ib_ports", "gres_devices"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gres_devices", "ib_ports"}, filesOf(got, Check.ID)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Select([]string{"gpu_cuont"}); err == nil || !strings.Contains(err.Error(), "known checks are") {
		t.Errorf("unknown id: err = %v, want one listing the known checks", err)
	}
}

// keeper is a fake check that keeps its last result, like nccl_allreduce.
type keeper struct{ fakeCheck }

func (keeper) notRun(_ context.Context, _ *Env, why string) Result {
	return Result{Status: StatusSkip, Summary: why + "; last run 3h ago: ok"}
}

func TestRunReportsKeptResultOutsideItsModes(t *testing.T) {
	k := keeper{fc("slow", time.Second, fixed(StatusFail, "must not run"))}
	k.set.Modes = []string{"manual"}
	rep := Run(context.Background(), &Env{Config: config.Default(Schema()), Mode: config.ModeProlog}, []Check{k}, RunOptions{})
	want := []brief{{"slow", "skip", "does not run in prolog mode (modes = [manual]); last run 3h ago: ok"}}
	if diff := cmp.Diff(want, briefs(rep)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
