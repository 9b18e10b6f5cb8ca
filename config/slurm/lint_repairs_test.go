package slurm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLintRepairs(t *testing.T) {
	const node = "NodeName=c1 CPUs=2\n"
	tests := []struct {
		name    string
		slurm   string
		repairs bool
		want    []string // "severity file:line"
		wantMsg string
	}{
		{"repairs off: nothing to say", node, false, nil, ""},
		{"no RebootProgram", node, true, []string{"warning slurm.conf:0"}, "sets no RebootProgram: slurmctld refuses `scontrol reboot`"},
		{"RebootProgram set", node + "RebootProgram=/usr/sbin/reboot\nReturnToService=1\n", true, nil, ""},
		{"ReturnToService=2", node + "RebootProgram=/usr/sbin/reboot\nReturnToService=2\n", true, []string{"warning slurm.conf:3"}, "set ReturnToService=1"},
		{"ReturnToService=2, repairs off", node + "ReturnToService=2\n", false, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Lint(sc, nil, WithRepairs(tc.repairs), withoutPitfalls())
			var got, msgs []string
			for _, p := range r.Problems {
				got = append(got, p.Severity+" "+p.File+":"+strconv.Itoa(p.Line))
				msgs = append(msgs, p.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, strings.Join(msgs, "\n"))
			}
			if tc.wantMsg != "" && !strings.Contains(strings.Join(msgs, "\n"), tc.wantMsg) {
				t.Errorf("no message contains %q:\n%s", tc.wantMsg, strings.Join(msgs, "\n"))
			}
		})
	}
}
