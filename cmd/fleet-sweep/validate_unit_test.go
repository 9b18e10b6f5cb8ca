package main

import (
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
)

func TestParseShowConfig(t *testing.T) {
	for _, c := range []struct {
		name, out string
		version   string
		supported bool
		extra     bool
	}{
		// The lines as 22.05.8 and 24.11.5 print them on the test beds.
		{"22.05", "SLURM_VERSION           = 22.05.8\nSchedulerParameters     = (null)\n", "22.05.8", false, false},
		{"24.11 with extra_constraints", "SchedulerParameters     = extra_constraints\nSLURM_VERSION           = 24.11.5\n", "24.11.5", true, true},
		{"24.11 with others", "SLURM_VERSION = 24.11.5\nSchedulerParameters = bf_continue,extra_constraints_x\n", "24.11.5", true, false},
		{"23.11: the first with Extra constraints", "SLURM_VERSION = 23.11.0\nSchedulerParameters = defer,extra_constraints\n", "23.11.0", true, true},
		{"23.02: before", "SLURM_VERSION = 23.02.7\nSchedulerParameters = extra_constraints\n", "23.02.7", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			i, err := parseShowConfig(c.out)
			if err != nil || i.version != c.version || i.extraSupported() != c.supported || i.extraConstraints != c.extra {
				t.Errorf("%+v supported=%v, %v", i, i.extraSupported(), err)
			}
		})
	}
	if _, err := parseShowConfig("Configuration data as of ...\n"); err == nil {
		t.Error("no version line: no error")
	}
}

func TestValidatedAt(t *testing.T) {
	extras, err := parseNodeExtras([]byte(`{"nodes":[{"name":"n1","extra":"{\"nccl_busbw\":476.5,\"validated_at\":1796514679,\"validated_level\":\"quick\"}"},{"name":"n2","extra":""},{"name":"n3","extra":"rack 4"}]}`))
	if err != nil || len(extras) != 3 {
		t.Fatalf("%v %v", extras, err)
	}
	if at, ok := validatedAt(extras["n1"]); !ok || at.Unix() != 1796514679 {
		t.Errorf("n1: %v %v", at, ok)
	}
	for _, n := range []string{"n2", "n3"} {
		if _, ok := validatedAt(extras[n]); ok {
			t.Errorf("%s: a validation from %q", n, extras[n])
		}
	}
}

// TestJudgeValidation judges literal runs: five passed H100 nodes (three at the real 476.5
// GB/s, one 15% below it, one 5% below), one failed, one undecided, one not run.
func TestJudgeValidation(t *testing.T) {
	res := func(node, verdict string, v float64) *valRun {
		r := &validation.Result{Node: node, Level: "quick", Model: "NVIDIA H100 80GB HBM3", Verdict: verdict, DurationS: 2,
			Figures: []validation.Figure{{Name: "nccl_busbw", Value: v, Unit: "GB/s", Floor: 390, Expected: 460, OK: v >= 390}}}
		if verdict == validation.Failed {
			r.Tests = []validation.Test{{Name: "nccl_allreduce", Status: "fail", Summary: "nccl_busbw 238.26 GB/s below floor 390 GB/s (expected 460)", Remedy: "reset_gpu"}}
		}
		return &valRun{Node: node, JobID: "1", Result: r}
	}
	runs := []*valRun{res("n1", validation.Passed, 476.5), res("n2", validation.Passed, 476.5), res("n3", validation.Passed, 476.5),
		res("n4", validation.Passed, 405.0), res("n5", validation.Passed, 452.7), res("n6", validation.Failed, 238.26),
		{Node: "n7", JobID: "7", State: "FAILED", ExitCode: "2:0", ResultErr: "n7.validate.json: empty", Stderr: "nodecheck: unknown flag --level"},
		{Node: "n8", Skipped: "not idle: mixed (a job holds it)"},
		{Node: "n9", JobID: "9", State: "FAILED", Result: &validation.Result{Node: "n9", Level: "quick", Verdict: validation.Undecided,
			Refused: "node busy: 2 compute processes on the GPUs (pid 4242, 4243)"}}}
	o := options{drainSlow: true}
	o.slow.MinNodes = 5
	o.validate.level, _ = validation.LookupLevel("quick", 0)
	o.validate.slowFraction = validation.DefaultSlowFraction
	sum := judgeValidation(runs, o)
	if sum.Passed != 5 || sum.Failed != 1 || sum.Undecided != 2 || sum.NotRun != 1 {
		t.Errorf("counts %+v", sum)
	}
	if len(sum.Slow) != 1 || sum.Slow[0].Node != "n4" || len(sum.Baselines) != 1 || sum.Baselines[0].P50 != 476.5 {
		t.Errorf("slow %+v, baselines %+v: want n4 (15%% below) slow, n5 (5%% below) not", sum.Slow, sum.Baselines)
	}
	items := failDrains(runs, sum.Slow, o)
	if len(items) != 2 || items[0].Node != "n6" || items[0].Remedy != "reset_gpu" ||
		items[1].Node != "n4" || items[1].Summary != "validate quick: slow: nccl_busbw 405 GB/s, 15.0% below the fleet P50 476.5 (NVIDIA H100 80GB HBM3)" {
		t.Errorf("drains %+v", items)
	}
	o.drainSlow = false
	if items := failDrains(runs, sum.Slow, o); len(items) != 1 {
		t.Errorf("without --drain-slow: %+v", items)
	}
	sum.Extra, sum.ElapsedS, sum.OutDir = "not published: Slurm 22.05.8 has no Extra constraints", 1.5, "/out"
	text := validationText(sum)
	for _, want := range []string{
		"nodecheck validation sweep (quick): 9 nodes, 5 passed, 1 failed, 2 undecided, 1 not run in 1.5s (results in /out)\n",
		"\nUNDECIDED  n9  refused: node busy: 2 compute processes on the GPUs (pid 4242, 4243)\n",
		"\nFAILED     n6  validate quick: failed: nccl_allreduce: nccl_busbw 238.26 GB/s below floor 390 GB/s (expected 460) (+1 more) [reset_gpu]\n",
		"\nUNDECIDED  n7  job 7 FAILED (exit 2:0), n7.validate.json: empty; stderr: nodecheck: unknown flag --level\n",
		"\nSLOW       n4  nccl_busbw 405 GB/s, 15.0% below the fleet P50 476.5 (NVIDIA H100 80GB HBM3)\n",
		"\nNOT RUN    n8  not idle: mixed (a job holds it)\n",
		"\n  NVIDIA H100 80GB HBM3 nccl_busbw: 476.5 GB/s over 5 nodes\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var page strings.Builder
	if err := renderValidationHTML(&page, sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<tr class="below" data-node="n6"><td>n6</td><td>failed</td><td></td><td>238.26</td><td>390.00</td><td>-50.0%</td>`,
		`<tr class="slow" data-node="n4"><td>n4</td><td>passed</td><td></td><td>405.00</td><td>390.00</td><td>-15.0%</td>`,
		`<tr class="ok" data-node="n5"><td>n5</td><td>passed</td><td></td><td>452.70</td><td>390.00</td><td>-5.0%</td>`,
		`<h3>NVIDIA H100 80GB HBM3: nccl_busbw (GB/s), P50 476.5</h3>`,
		`<tr data-node="n8" data-verdict="not_run"><td>n8</td><td>not_run</td><td>not idle: mixed (a job holds it)</td>`,
		`<script type="application/json" id="validation-summary">{"level":"quick"`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	// Text from the nodes is escaped: a reason with markup stays text.
	sum.Results[7].Why = `<img src=x onerror=alert(1)>`
	page.Reset()
	if err := renderValidationHTML(&page, sum); err != nil || strings.Contains(page.String(), "<img") {
		t.Errorf("markup from a node reached the page (%v)", err)
	}
}

func TestParseReservations(t *testing.T) {
	// Lines as `scontrol -o show reservation` prints them (22.05.8 on the test bed, cut).
	out := "ReservationName=site-maint StartTime=2026-12-06T00:17:00 EndTime=2026-12-06T00:27:00 Duration=00:10:00 Nodes=n[1-2] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES TRES=cpu=4 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n" +
		"ReservationName=later StartTime=2026-12-07T00:00:00 EndTime=2026-12-07T01:00:00 Duration=01:00:00 Nodes=n3 NodeCnt=1 Flags=MAINT Users=root State=INACTIVE\n" +
		"ReservationName=nodecheck-validate-n4-x StartTime=2026-12-06T00:17:00 Nodes=n4 Flags=MAINT,SPEC_NODES Users=root State=ACTIVE\n"
	held, err := parseReservations(out)
	if err != nil || len(held) != 3 || held["n1"][0] != "site-maint" || held["n2"][0] != "site-maint" || held["n4"][0] != "nodecheck-validate-n4-x" || held["n3"] != nil {
		t.Errorf("%v %v", held, err)
	}
	if held, err := parseReservations("No reservations in the system\n"); err != nil || len(held) != 0 {
		t.Errorf("none: %v %v", held, err)
	}
}
