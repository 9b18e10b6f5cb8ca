package slurm

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The lines below are written for these tests (no public slurm.conf sets every one of these
// keys); their spelling and values follow slurm.conf(5) of 22.05.8 and of Slurm's master.
func TestHooks(t *testing.T) {
	tests := []struct {
		name          string
		conf          string
		want          Hooks
		prolog        HookLimit
		epilog        HookLimit
		health        HookLimit
		wantProblems  []string // the start of each problem
		prologLimitIs string
	}{
		{
			name:   "none set: Slurm waits for ever on prolog and epilog, kills the health check at 60s",
			conf:   "ClusterName=c\n",
			health: HookLimit{Limit: 60 * time.Second},
		},
		{
			name: "PrologEpilogTimeout covers both (22.05 to 24.11)",
			conf: "ClusterName=c\nPrologEpilogTimeout=120\nHealthCheckInterval=300\nHealthCheckNodeState=ANY\nPrologFlags=Alloc,Contain\n",
			want: Hooks{PrologEpilogTimeout: 120 * time.Second, HealthCheckInterval: 300 * time.Second,
				HealthCheckNodeState: []string{"ANY"}, PrologFlags: []string{"Alloc", "Contain"},
				Set: map[string]Pos{"PrologEpilogTimeout": {"slurm.conf", 2}, "HealthCheckInterval": {"slurm.conf", 3},
					"HealthCheckNodeState": {"slurm.conf", 4}, "PrologFlags": {"slurm.conf", 5}}},
			prolog:        HookLimit{Key: "PrologEpilogTimeout", Limit: 120 * time.Second, Pos: Pos{"slurm.conf", 2}},
			epilog:        HookLimit{Key: "PrologEpilogTimeout", Limit: 120 * time.Second, Pos: Pos{"slurm.conf", 2}},
			health:        HookLimit{Limit: 60 * time.Second},
			prologLimitIs: "PrologEpilogTimeout 2m0s (slurm.conf:2)",
		},
		{
			name: "PrologTimeout and EpilogTimeout win over PrologEpilogTimeout (25.05 and later), any case",
			conf: "prologepilogtimeout=600\nPROLOGTIMEOUT=30 EpilogTimeout=90\nHealthCheckTimeout=45\n",
			want: Hooks{PrologEpilogTimeout: 600 * time.Second, PrologTimeout: 30 * time.Second, EpilogTimeout: 90 * time.Second,
				HealthCheckTimeout: 45 * time.Second,
				Set: map[string]Pos{"PrologEpilogTimeout": {"slurm.conf", 1}, "PrologTimeout": {"slurm.conf", 2},
					"EpilogTimeout": {"slurm.conf", 2}, "HealthCheckTimeout": {"slurm.conf", 3}}},
			// The keys are newer than 24.11: the parser says so, and reads them.
			wantProblems: []string{"slurm.conf:2: PrologTimeout= is read only by Slurm 25.05 and later: slurmctld 22.05 to 24.11 refuses the file",
				"slurm.conf:2: EpilogTimeout= is read only by Slurm 25.05 and later", "slurm.conf:3: HealthCheckTimeout= is read only by Slurm after 25.11 (its development branch): slurmctld 22.05 to 25.11 refuses the file"},
			prolog: HookLimit{Key: "PrologTimeout", Limit: 30 * time.Second, Pos: Pos{"slurm.conf", 2}},
			epilog: HookLimit{Key: "EpilogTimeout", Limit: 90 * time.Second, Pos: Pos{"slurm.conf", 2}},
			health: HookLimit{Key: "HealthCheckTimeout", Limit: 45 * time.Second, Pos: Pos{"slurm.conf", 3}},
		},
		{
			name:          "UNLIMITED, 0 and 65535 are no limit; the last of two lines counts",
			conf:          "PrologEpilogTimeout=10\nPrologEpilogTimeout=UNLIMITED\nPrologTimeout=0\nEpilogTimeout=65535\n",
			want:          Hooks{Set: map[string]Pos{"PrologEpilogTimeout": {"slurm.conf", 2}, "PrologTimeout": {"slurm.conf", 3}, "EpilogTimeout": {"slurm.conf", 4}}},
			prolog:        HookLimit{Key: "PrologTimeout", Pos: Pos{"slurm.conf", 3}},
			epilog:        HookLimit{Key: "EpilogTimeout", Pos: Pos{"slurm.conf", 4}},
			health:        HookLimit{Limit: 60 * time.Second},
			prologLimitIs: "PrologTimeout unlimited (slurm.conf:3)",
			wantProblems:  []string{"slurm.conf:3: PrologTimeout= is read only by Slurm 25.05", "slurm.conf:4: EpilogTimeout= is read only by Slurm 25.05"},
		},
		{
			name:         "a value Slurm refuses is a problem naming the line",
			conf:         "PrologEpilogTimeout=2m\n",
			want:         Hooks{Set: map[string]Pos{}},
			health:       HookLimit{Limit: 60 * time.Second},
			wantProblems: []string{"slurm.conf:1: PrologEpilogTimeout=2m is not a whole number of seconds"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseSlurmConf([]byte(tc.conf), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			var problems []string
			for _, p := range c.Problems {
				problems = append(problems, p.Message)
			}
			ok := len(problems) == len(tc.wantProblems)
			for i := 0; ok && i < len(problems); i++ {
				ok = strings.HasPrefix(problems[i], tc.wantProblems[i])
			}
			if !ok {
				t.Errorf("problems %q, want %q", problems, tc.wantProblems)
			}
			if diff := cmp.Diff(tc.want, c.Hooks); diff != "" {
				t.Errorf("Hooks (-want +got):\n%s", diff)
			}
			for _, l := range []struct {
				name      string
				got, want HookLimit
			}{{"prolog", c.Hooks.PrologLimit(), tc.prolog}, {"epilog", c.Hooks.EpilogLimit(), tc.epilog}, {"health", c.Hooks.HealthCheckLimit(), tc.health}} {
				if l.got != l.want {
					t.Errorf("%s limit %+v, want %+v", l.name, l.got, l.want)
				}
			}
			if tc.prologLimitIs != "" {
				if got := c.Hooks.PrologLimit().String(); got != tc.prologLimitIs {
					t.Errorf("PrologLimit().String() = %q, want %q", got, tc.prologLimitIs)
				}
			}
		})
	}
}

// TestHooksUpstreamExample: Slurm's own example file has every one of these keys commented
// out, so none is set.
func TestHooksUpstreamExample(t *testing.T) {
	data, err := os.ReadFile("testdata/slurmconf/slurm-etc-slurm.conf.example")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseSlurmConf(data, "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Hooks.Set) != 0 {
		t.Errorf("Hooks.Set = %v, want none: every hook key is commented out there", c.Hooks.Set)
	}
	if got := c.Hooks.HealthCheckLimit().String(); got != "Slurm's fixed 1m0s" {
		t.Errorf("HealthCheckLimit = %q", got)
	}
}
