package slurm

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// nodecheck's built-in budgets (config.Default()) and the margin cmd/nodecheck passes.
var testBudgets = HookBudgets{Prolog: 5 * time.Second, Epilog: 30 * time.Second, Health: 50 * time.Second, Margin: time.Second}

func TestLintHooks(t *testing.T) {
	const gpuNode = "GresTypes=gpu\nNodeName=g1 Gres=gpu:h100:8 Feature=h100\n"
	// A nodecheck prolog needs a health check to resume what it drains (TestLintRepairs);
	// rows about other rules give it one, last, so their lines stay put.
	const resumes = "HealthCheckProgram=/usr/sbin/nodecheck-health\nHealthCheckInterval=300\n"
	tests := []struct {
		name    string
		slurm   string
		budgets HookBudgets
		want    []string // "severity file:line"
		wantMsg []string
	}{
		{name: "README's settings", slurm: gpuNode + "Prolog=/usr/sbin/nodecheck\nEpilog=/usr/sbin/nodecheck\nHealthCheckProgram=/usr/sbin/nodecheck-health\n" +
			"HealthCheckInterval=300\nHealthCheckNodeState=ANY\nPrologFlags=Alloc\nPrologEpilogTimeout=120\n"},
		{name: "no hooks, nothing to say", slurm: gpuNode + "PrologEpilogTimeout=1\nHealthCheckNodeState=MIXED\n"},
		{name: "prolog timeout below the budget", slurm: gpuNode + "Prolog=/usr/sbin/nodecheck\nPrologFlags=Contain\nPrologEpilogTimeout=5\n" + resumes,
			want: []string{"warning slurm.conf:5"},
			wantMsg: []string{"slurm.conf:5 Prolog=/usr/sbin/nodecheck gets PrologEpilogTimeout 5s (slurm.conf:5), so nodecheck cuts its prolog budget (5s) to 4s, keeping a margin",
				"set PrologEpilogTimeout=6 or more"}},
		// checks.BudgetFor keeps a second below 6 s: the 5 s budget fits.
		{name: "prolog timeout that fits", slurm: gpuNode + "Prolog=/usr/sbin/nodecheck\nPrologFlags=Contain\nPrologEpilogTimeout=6\n" + resumes},
		{name: "PrologTimeout wins for the prolog, PrologEpilogTimeout still bounds the epilog",
			slurm: gpuNode + "Prolog=/p\nEpilog=/e\nPrologFlags=Alloc\nPrologEpilogTimeout=20\nPrologTimeout=60\n",
			want:  []string{"warning slurm.conf:6", "warning slurm.conf:7"}, wantMsg: []string{"PrologTimeout= is read only by Slurm 25.05 and later", "Epilog=/e gets PrologEpilogTimeout 20s (slurm.conf:6), so nodecheck cuts its epilog budget (30s) to 18s", "set PrologEpilogTimeout=34 or more"}},
		{name: "unlimited is fine", slurm: gpuNode + "Prolog=/p\nPrologFlags=Alloc\nPrologEpilogTimeout=UNLIMITED\n"},
		{name: "no budgets given: limits not judged", budgets: HookBudgets{}, slurm: gpuNode + "Prolog=/p\nPrologFlags=Alloc\nPrologEpilogTimeout=1\n"},
		{name: "GPU prolog without Alloc", slurm: gpuNode + "Prolog=/usr/sbin/nodecheck\nPrologFlags=Serial,X11\n" + resumes,
			want: []string{"warning slurm.conf:4"}, wantMsg: []string{"Prolog=/usr/sbin/nodecheck with PrologFlags=Serial,X11: slurmd runs the prolog when a job's first step starts", "set PrologFlags=Alloc"}},
		{name: "GPU prolog and no PrologFlags", slurm: gpuNode + "Prolog=/usr/sbin/nodecheck\n" + resumes, want: []string{"warning slurm.conf:3"}, wantMsg: []string{"with no PrologFlags"}},
		{name: "another program's prolog without Alloc: worded by it", slurm: gpuNode + "Prolog=/etc/slurm/prolog.sh\n", want: []string{"warning slurm.conf:3"},
			wantMsg: []string{"Prolog=/etc/slurm/prolog.sh with no PrologFlags: slurmd runs the prolog when a job's first step starts, not when the job is given its nodes, so salloc sessions never run it and a GPU job starts on a node before its prolog has run: set PrologFlags=Alloc"}},
		{name: "a CPU cluster's prolog", slurm: "GresTypes=gpu\nNodeName=g1\nNodeName=c1\nProlog=/p\n",
			want: []string{"warning gres.conf:1"}}, // gres.conf gives g1 GPUs slurm.conf does not: no GPU nodes, no PrologFlags warning
		{name: "health check never after start", slurm: gpuNode + "HealthCheckProgram=/usr/sbin/nodecheck-health\n",
			want: []string{"warning slurm.conf:3"}, wantMsg: []string{"with no HealthCheckInterval: slurmd runs it only when slurmd starts"}},
		{name: "health interval 0", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=0\n", want: []string{"warning slurm.conf:4"}},
		{name: "health interval under the budget", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=30\n",
			want: []string{"warning slurm.conf:4"}, wantMsg: []string{"HealthCheckInterval=30 is not longer than a health run may take (50s)", "HealthCheckInterval=51 or more"}},
		{name: "health budget past slurmd's kill", budgets: HookBudgets{Health: 58 * time.Second, Margin: time.Second},
			slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\n",
			want:  []string{"warning slurm.conf:3"}, wantMsg: []string{"HealthCheckProgram=/h gets Slurm's fixed 1m0s, so nodecheck cuts its health budget (58s) to 54s", "lower budget.health in nodecheck.toml to 54s or less"}},
		{name: "HealthCheckTimeout below the budget", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckTimeout=30\n",
			want: []string{"warning slurm.conf:5", "warning slurm.conf:5"}, wantMsg: []string{"HealthCheckTimeout= is read only by Slurm after 25.11", "gets HealthCheckTimeout 30s (slurm.conf:5), so nodecheck cuts its health budget (50s) to 27s", "set HealthCheckTimeout=56 or more"}},
		{name: "the built-in health budget fits Slurm's fixed minute", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\n"},
		// Boundaries: each comparison at its edge and one step past it.
		{name: "interval equal to a run's time", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=50\n",
			want: []string{"warning slurm.conf:4"}, wantMsg: []string{"HealthCheckInterval=50 is not longer than a health run may take (50s)", "set HealthCheckInterval=51 or more"}},
		{name: "interval a second longer than a run", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=51\n"},
		{name: "interval against a run cut by HealthCheckTimeout", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=27\nHealthCheckTimeout=30\n",
			want: []string{"warning slurm.conf:4", "warning slurm.conf:5", "warning slurm.conf:5"}, wantMsg: []string{"HealthCheckInterval=27 is not longer than a health run may take (27s)"}},
		{name: "interval past a run cut by HealthCheckTimeout", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=28\nHealthCheckTimeout=30\n",
			want: []string{"warning slurm.conf:5", "warning slurm.conf:5"}},
		{name: "health budget at what the fixed minute leaves", budgets: HookBudgets{Health: 54 * time.Second, Margin: time.Second},
			slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\n"},
		{name: "health budget a second past it", budgets: HookBudgets{Health: 55 * time.Second, Margin: time.Second},
			slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\n",
			want:  []string{"warning slurm.conf:3"}, wantMsg: []string{"cuts its health budget (55s) to 54s"}},
		{name: "HealthCheckTimeout that fits", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckTimeout=56\n",
			want: []string{"warning slurm.conf:5"}, wantMsg: []string{"HealthCheckTimeout= is read only by Slurm after 25.11"}},
		{name: "HealthCheckTimeout a second short", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckTimeout=55\n",
			want: []string{"warning slurm.conf:5", "warning slurm.conf:5"}, wantMsg: []string{"cuts its health budget (50s) to 49.5s", "set HealthCheckTimeout=56 or more"}},
		{name: "epilog timeout that fits", slurm: gpuNode + "Epilog=/e\nPrologEpilogTimeout=34\n"},
		{name: "epilog timeout a second short", slurm: gpuNode + "Epilog=/e\nPrologEpilogTimeout=33\n",
			want: []string{"warning slurm.conf:4"}, wantMsg: []string{"cuts its epilog budget (30s) to 29.7s", "set PrologEpilogTimeout=34 or more"}},
		{name: "states without drained nodes", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckNodeState=NONDRAINED_IDLE,MIXED,ALLOC,CYCLE\n",
			want: []string{"warning slurm.conf:5"}, wantMsg: []string{"HealthCheckNodeState=NONDRAINED_IDLE,MIXED,ALLOC,CYCLE runs the health check on no drained node", "set HealthCheckNodeState=ANY"}},
		{name: "IDLE reaches drained nodes", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckNodeState=IDLE,CYCLE\n"},
		{name: "CYCLE alone is ANY", slurm: gpuNode + "HealthCheckProgram=/h\nHealthCheckInterval=300\nHealthCheckNodeState=CYCLE\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			b := tc.budgets
			if b == (HookBudgets{}) && !strings.HasPrefix(tc.name, "no budgets") {
				b = testBudgets
			}
			gc, err := ParseGresConf([]byte("NodeName=g1 Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"), "gres.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Lint(sc, gc, WithHookBudgets(b), withoutPitfalls())
			var got, msgs []string
			for _, p := range r.Problems {
				got = append(got, p.Severity+" "+p.File+":"+strconv.Itoa(p.Line))
				msgs = append(msgs, p.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, strings.Join(msgs, "\n"))
			}
			for _, w := range tc.wantMsg {
				if !strings.Contains(strings.Join(msgs, "\n"), w) {
					t.Errorf("no message contains %q:\n%s", w, strings.Join(msgs, "\n"))
				}
			}
		})
	}
}

// TestHookBudgetsUsable: what a run may use of Slurm's limit, at the edges of its rule (the
// margin, a tenth, or half where the margin takes it all).
func TestHookBudgetsUsable(t *testing.T) {
	b := HookBudgets{Margin: time.Second}
	for _, tc := range []struct{ limit, want time.Duration }{
		{time.Second, 500 * time.Millisecond}, // the margin is the whole limit: half
		{2 * time.Second, time.Second},        // a second above the margin
		{10 * time.Second, 9 * time.Second},   // a tenth is the margin
		{11 * time.Second, 9900 * time.Millisecond},
		{60 * time.Second, 54 * time.Second},
	} {
		if got := b.usable(tc.limit); got != tc.want {
			t.Errorf("usable(%v) = %v, want %v", tc.limit, got, tc.want)
		}
	}
	for _, tc := range []struct {
		budget time.Duration
		want   int
	}{{5 * time.Second, 6}, {50 * time.Second, 56}, {30 * time.Second, 34}, {9 * time.Second, 10}, {500 * time.Millisecond, 1}} {
		if got := b.limitFor(tc.budget); got != tc.want {
			t.Errorf("limitFor(%v) = %d, want %d", tc.budget, got, tc.want)
		}
	}
}
