package slurm

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// WithRepairs tells Lint that nodecheck's repairs are on ([repair] enabled in
// nodecheck.toml, docs/repairs.md), and whether they may reboot ([repair] reboot), so that
// it checks what they need of slurm.conf: a health check that runs nodecheck (repairs run
// only in health runs), and, for reboots, a RebootProgram, without which slurmctld refuses
// `scontrol reboot`, and a ReturnToService that keeps a rebooted node out of service until
// nodecheck's post-boot checks pass.
func WithRepairs(enabled, reboot bool) LintOption {
	return func(o *lintOptions) { o.repairs, o.reboots = enabled, enabled && reboot }
}

// nodecheckName matches the names nodecheck is installed under: nodecheck, and its links
// such as nodecheck-health (docs/install.md).
var nodecheckName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^nodecheck([-_.][A-Za-z0-9_.-]*)?$`) })

// isNodecheck reports whether a Prolog=, Epilog= or HealthCheckProgram= value names
// nodecheck. Only the name can tell: a wrapper script that runs nodecheck is not recognised,
// which is why the rules that depend on it word what they cannot see.
func isNodecheck(prog string) bool {
	return nodecheckName().MatchString(filepath.Base(strings.TrimSpace(prog)))
}

// checkRepairs is WithRepairs's reboot rules.
func (l *linter) checkRepairs() {
	if !l.opts.reboots {
		return
	}
	if p, ok := l.sc.Setting("RebootProgram"); !ok || strings.TrimSpace(p.Value) == "" {
		at := Pos{File: l.sc.Path}
		if ok {
			at = p.Pos
		}
		l.emit(SeverityWarning, at, "[repair] is on in nodecheck.toml but slurm.conf sets no RebootProgram: slurmctld refuses `scontrol reboot`, so reboot-class faults stay drained for a person: set RebootProgram (e.g. RebootProgram=/usr/sbin/reboot), or [repair] reboot = false")
	}
	if rts, ok := l.sc.Setting("ReturnToService"); ok && strings.TrimSpace(rts.Value) == "2" {
		l.emit(SeverityWarning, rts.Pos, "ReturnToService=2 with [repair] on in nodecheck.toml: Slurm returns a rebooted node to service as soon as its slurmd registers, before nodecheck's post-boot checks pass: set ReturnToService=1 (a node nodecheck rebooted comes back DOWN, and nodecheck resumes it after [repair] passes_to_resume clean runs)")
	}
}

// checkHealthRuns reports what needs nodecheck's health runs when no health check runs
// nodecheck: a nodecheck Prolog= or Epilog= drains nodes, and only a health run (or a person)
// resumes them (docs/draining.md); [repair] acts only in health runs.
func (l *linter) checkHealthRuns() {
	var needs []string
	var at Pos
	for _, key := range []string{"Prolog", "Epilog"} {
		if s, ok := l.sc.Setting(key); ok && isNodecheck(s.Value) {
			needs = append(needs, fmt.Sprintf("%s=%s drains nodes that fail its checks, and nodecheck resumes a node it drained only in a health run (or a run by hand)", key, s.Value))
			at = s.Pos
			break // the epilog's drain says nothing the prolog's does not
		}
	}
	lost := "nodes it drains stay out of service after they are healthy again"
	if l.opts.repairs {
		needs = append(needs, "[repair] is on in nodecheck.toml, and repairs run only in health runs")
		lost = "nothing repairs or resumes the nodes nodecheck drains"
		if at.IsZero() {
			at = Pos{File: l.sc.Path}
		}
	}
	if len(needs) == 0 {
		return
	}
	hc, ok := l.sc.Setting("HealthCheckProgram")
	switch {
	case !ok || strings.TrimSpace(hc.Value) == "":
		l.emit(SeverityWarning, at, "%s; but slurm.conf sets no HealthCheckProgram, so %s: set HealthCheckProgram=/usr/sbin/nodecheck-health and HealthCheckInterval=300",
			strings.Join(needs, "; "), lost)
	case !isNodecheck(hc.Value):
		l.emit(SeverityInfo, hc.Pos, "HealthCheckProgram=%s is not nodecheck by its name, and %s: unless it runs `nodecheck run --mode health`, %s",
			hc.Value, strings.Join(needs, "; "), lost)
	}
}
