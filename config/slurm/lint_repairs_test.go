package slurm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLintRepairs(t *testing.T) {
	const (
		node   = "NodeName=c1 CPUs=2\n"
		health = "HealthCheckProgram=/usr/sbin/nodecheck-health\nHealthCheckInterval=300\n"
		reboot = "RebootProgram=/usr/sbin/reboot\nReturnToService=1\n"
	)
	type repairs struct{ enabled, reboot bool }
	on, noReboot, off := repairs{true, true}, repairs{true, false}, repairs{}
	tests := []struct {
		name    string
		slurm   string
		repairs repairs
		want    []string // "severity file:line", problems then notes
		wantMsg string
	}{
		{"repairs off: nothing to say", node, off, nil, ""},
		{"no RebootProgram", node + health, on, []string{"warning slurm.conf:0"}, "sets no RebootProgram: slurmctld refuses `scontrol reboot`"},
		{"no RebootProgram, no reboots", node + health, noReboot, nil, ""},
		{"everything repairs need", node + health + reboot, on, nil, ""},
		{"ReturnToService=2", node + health + "RebootProgram=/usr/sbin/reboot\nReturnToService=2\n", on, []string{"warning slurm.conf:5"}, "set ReturnToService=1"},
		{"ReturnToService=2, repairs off", node + "ReturnToService=2\n", off, nil, ""},
		// Repairs run only in health runs.
		{"repairs and no health check", node + reboot, on, []string{"warning slurm.conf:0"},
			"slurm.conf [repair] is on in nodecheck.toml, and repairs run only in health runs; but slurm.conf sets no HealthCheckProgram, so nothing repairs or resumes the nodes nodecheck drains: set HealthCheckProgram=/usr/sbin/nodecheck-health"},
		{"repairs and no health check, no reboots", node, noReboot, []string{"warning slurm.conf:0"}, "sets no HealthCheckProgram"},
		{"repairs and another health check: a note", node + reboot + "HealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n", on, []string{"info slurm.conf:4"},
			"HealthCheckProgram=/usr/sbin/nhc is not nodecheck by its name, and [repair] is on in nodecheck.toml, and repairs run only in health runs: unless it runs `nodecheck run --mode health`, nothing repairs or resumes"},
		// A nodecheck prolog drains; only a health run resumes.
		{"nodecheck prolog, no health check", node + "Prolog=/usr/sbin/nodecheck\n", off, []string{"warning slurm.conf:2"},
			"slurm.conf:2 Prolog=/usr/sbin/nodecheck drains nodes that fail its checks, and nodecheck resumes a node it drained only in a health run (or a run by hand); but slurm.conf sets no HealthCheckProgram, so nodes it drains stay out of service after they are healthy again"},
		{"nodecheck epilog, no health check", node + "Epilog=/opt/nodecheck/bin/nodecheck\n", off, []string{"warning slurm.conf:2"}, "Epilog=/opt/nodecheck/bin/nodecheck drains nodes"},
		{"nodecheck prolog and repairs, no health check: one warning", node + reboot + "Prolog=/usr/sbin/nodecheck\n", on, []string{"warning slurm.conf:4"},
			"Prolog=/usr/sbin/nodecheck drains nodes that fail its checks, and nodecheck resumes a node it drained only in a health run (or a run by hand); [repair] is on in nodecheck.toml, and repairs run only in health runs; but slurm.conf sets no HealthCheckProgram, so nothing repairs or resumes"},
		{"nodecheck prolog and health check", node + health + "Prolog=/usr/sbin/nodecheck\n", off, nil, ""},
		{"another prolog, no health check", node + "Prolog=/etc/slurm/prolog.sh\n", off, nil, ""},
		{"nodecheck prolog, another health check", node + "Prolog=/usr/sbin/nodecheck\nHealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n", off, []string{"info slurm.conf:3"}, "unless it runs `nodecheck run --mode health`, nodes it drains stay out of service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSlurmConf([]byte(tc.slurm), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Lint(sc, nil, WithRepairs(tc.repairs.enabled, tc.repairs.reboot), withoutPitfalls())
			var got, msgs []string
			for _, p := range append(r.Problems, r.Notes...) {
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

func TestIsNodecheck(t *testing.T) {
	for _, tc := range []struct {
		prog string
		want bool
	}{
		{"/usr/sbin/nodecheck", true}, {"/usr/sbin/nodecheck-health", true}, {" /opt/nc/nodecheck ", true},
		{"/etc/slurm/prolog.sh", false}, {"/usr/sbin/nhc", false}, {"/etc/slurm/prolog.d/*", false},
		{"/usr/local/bin/nodechecker", false}, {"/srv/nodecheck/prolog.sh", false}, {"", false},
	} {
		if got := isNodecheck(tc.prog); got != tc.want {
			t.Errorf("isNodecheck(%q) = %v, want %v", tc.prog, got, tc.want)
		}
	}
}
