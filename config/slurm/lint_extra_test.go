package slurm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLintExtraPublishing(t *testing.T) {
	const node = "NodeName=c1 CPUs=2\n"
	tests := []struct {
		name    string
		slurm   string
		publish bool
		want    []string // "severity file:line"
	}{
		{"publishing off: nothing to say", node, false, nil},
		{"publishing, no SchedulerParameters", node, true, []string{"warning slurm.conf:0"}},
		{"publishing, SchedulerParameters without it", node + "SchedulerParameters=bf_continue,defer\n", true, []string{"warning slurm.conf:2"}},
		{"publishing, a longer name is not it", node + "SchedulerParameters=extra_constraints_x\n", true, []string{"warning slurm.conf:2"}},
		{"publishing with extra_constraints", node + "SchedulerParameters=bf_continue,extra_constraints\n", true, nil},
		{"publishing with extra_constraints alone", node + "SchedulerParameters=extra_constraints\n", true, nil},
		{"extra_constraints, publishing off", node + "SchedulerParameters=extra_constraints\n", false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Lint(sc, nil, WithExtraPublishing(tc.publish), withoutPitfalls())
			var got, msgs []string
			for _, p := range append(r.Problems, r.Notes...) {
				got = append(got, p.Severity+" "+p.File+":"+strconv.Itoa(p.Line))
				msgs = append(msgs, p.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, strings.Join(msgs, "\n"))
			}
			if len(tc.want) > 0 && !strings.Contains(strings.Join(msgs, "\n"), "SchedulerParameters lacks extra_constraints: Slurm ignores --extra") {
				t.Errorf("message:\n%s", strings.Join(msgs, "\n"))
			}
		})
	}
}
