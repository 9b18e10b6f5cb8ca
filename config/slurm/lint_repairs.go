package slurm

import "strings"

// WithRepairs, with reboots true when nodecheck's repairs may reboot a node ([repair]
// enabled and reboot in nodecheck.toml, docs/repairs.md), has Lint check what they need of
// slurm.conf: a RebootProgram, without which slurmctld refuses `scontrol reboot`, and a
// ReturnToService that keeps a rebooted node out of service until nodecheck's post-boot
// checks pass.
func WithRepairs(reboots bool) LintOption {
	return func(o *lintOptions) { o.repairs = reboots }
}

// checkRepairs is WithRepairs's rule.
func (l *linter) checkRepairs() {
	if !l.opts.repairs {
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
