package checks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idServices = "services"

// The ways services fails: its rows of the remedy table (Faults).
const (
	faultServiceDown fault = "services/down"
)

// services checks that the daemons a Slurm node needs are running: each listed process by
// name and owner from /proc (NHC's check_ps_service and check_ps_daemon), and each listed
// systemd unit active (systemctl is-active). It only looks: unlike NHC's -S and -r, it
// never starts or restarts anything (systemd's Restart= is the place for that).
type services struct{}

func (services) ID() string { return idServices }

func (services) Description() string {
	return "the daemons listed run as their users (/proc) and the systemd units listed are active"
}

// servicesConfig is [checks.services].
type servicesConfig struct {
	config.CheckCommon
	// Processes lists "NAME [USER]": a process whose argv[0] matches the glob "*NAME" (NHC's
	// rule) or whose kernel name is NAME, owned by USER (a glob) where given.
	Processes []string `toml:"processes"`
	// Units lists systemd units that must be active.
	Units     []string `toml:"units"`
	Systemctl string   `toml:"systemctl"`
}

// Section: sshd as root (NHC's shipped nhc.conf), and the two daemons without which a Slurm
// node takes no job: munged (as munge, Debian's and munge's own packaging) and slurmd (root).
func (services) Section() config.Section {
	return &servicesConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		Processes: []string{"sshd root", "munged munge", "slurmd root"}, Systemctl: "/usr/bin/systemctl"}
}

// ValidateSection implements config.SectionValidator.
func (c *servicesConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for i, s := range c.Processes {
		if f := strings.Fields(s); len(f) == 0 || len(f) > 2 {
			out = append(out, config.Problemf("processes", "[%d] = %q: want \"NAME [USER]\", such as \"munged munge\"", i, s))
		}
	}
	for i, u := range c.Units {
		if u == "" || strings.ContainsAny(u, " \t/") || strings.HasPrefix(u, "-") {
			out = append(out, config.Problemf("units", "[%d] = %q: give a unit name, such as \"slurmd\" or \"munge.service\"", i, u))
		}
	}
	if len(c.Units) > 0 && !path.IsAbs(c.Systemctl) {
		out = append(out, config.Problemf("systemctl", " = %q: give an absolute path: hooks have no PATH", c.Systemctl))
	}
	return out
}

// unitState is what systemctl is-active said of one unit.
type unitState struct {
	Unit  string
	State string // its first line: "active", "inactive", "failed", "activating", ...
	Err   error  // systemctl could not be run, or timed out
}

func (services) Run(ctx context.Context, env *Env) Result {
	set := settings[*servicesConfig](env.Config, idServices)
	if len(set.Processes) == 0 && len(set.Units) == 0 {
		return Result{Status: StatusSkip, Summary: "no processes or units listed in [checks.services]"}
	}
	var procs *node.Processes
	if len(set.Processes) > 0 {
		p, err := node.Read(ctx, env.Facts, node.ProcessesFact)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return Result{Status: StatusSkip, Summary: "processes not recorded in this snapshot"}
		case err != nil:
			return Result{Status: StatusError, Summary: "could not list the processes", Err: err}
		}
		procs = &p
	}
	var units []unitState
	for _, u := range set.Units {
		res, err := env.Facts.Exec(ctx, []string{set.Systemctl, "is-active", "--", u})
		first, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
		units = append(units, unitState{Unit: u, State: first, Err: err})
	}
	return judgeServices(procs, set.Processes, units)
}

// judgeServices judges each wanted process against the process list and each unit's state.
func judgeServices(procs *node.Processes, want []string, units []unitState) Result {
	var res Result
	for _, w := range want {
		f := strings.Fields(w)
		name, user := f[0], ""
		if len(f) > 1 {
			user = f[1]
		}
		res.Details = append(res.Details, judgeProcess(procs, name, user))
	}
	for _, u := range units {
		d := Detail{Device: u.Unit, Expected: "active", Observed: u.State, Subject: Subject{Service: u.Unit}}
		switch {
		case u.Err != nil && errors.Is(u.Err, fs.ErrNotExist):
			d.Status, d.Message = StatusError, "unit: systemctl is not there to ask"
		case u.Err != nil:
			d.Status, d.Message = StatusError, fmt.Sprintf("unit: %v", u.Err)
		case u.State == "active":
			d.Status, d.Message = StatusOK, "unit active"
		default:
			d.Message = fmt.Sprintf("unit %s, want active", cmp.Or(u.State, "unknown"))
			failDetail(&d, faultServiceDown)
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, fmt.Sprintf("%s running", countNoun(len(res.Details), "service", "services")))
}

// judgeProcess looks for a process called name (NHC's check_ps_service: argv[0] matches
// "*name"; or the kernel's name is name) owned by user (a glob; "" any).
func judgeProcess(procs *node.Processes, name, user string) Detail {
	d := Detail{Device: name, Expected: strings.TrimSpace(name + " as " + cmp.Or(user, "any user")), Subject: Subject{Service: name}}
	var other []string
	for _, p := range procs.Processes {
		if !matchPattern("*"+name, p.Argv0) && p.Comm != name {
			continue
		}
		owner := cmp.Or(p.User, fmt.Sprint(p.UID))
		if user != "" && !matchPattern(user, owner) && fmt.Sprint(p.UID) != user {
			other = append(other, owner)
			continue
		}
		d.Status, d.Observed = StatusOK, fmt.Sprintf("pid %d as %s", p.PID, owner)
		d.Message = fmt.Sprintf("running as %s (pid %d)", owner, p.PID)
		return d
	}
	if len(other) > 0 {
		d.Observed = "running as " + other[0]
		d.Message = fmt.Sprintf("runs as %s, not as %s", other[0], user)
	} else {
		d.Observed = "not running"
		d.Message = "not running"
		if user != "" {
			d.Message = fmt.Sprintf("not running (as %s)", user)
		}
	}
	failDetail(&d, faultServiceDown)
	return d
}

func (services) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultServiceDown, "a listed daemon is not running (or not as its user), or a listed systemd unit is not active", RemedyAdmin,
			"NHC check_ps_service: a daemon that died needs a person to read why (journalctl -u UNIT) and start it; nodecheck never restarts one"},
	}}
}

// Explain is what `nodecheck explain services` says.
func (services) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/proc/PID/status, comm and cmdline of every process (the owner, the kernel's name and the first word of the command line; never the arguments), and /etc/passwd for user names.",
			"systemctl is-active -- UNIT for each unit listed.",
		},
		Passes: "Each listed process runs as its user, and each listed unit is active.",
		Fails:  "A listed process is not running, or runs only as another user; a listed unit is inactive, failed or still activating.",
		Skips:  "Nothing is listed; a snapshot without processes.json.",
		Errors: "/proc cannot be listed, or systemctl cannot be run or does not answer in time.",
		Keys: map[string]string{
			"processes": `"NAME [USER]" each: a process whose command line's first word matches the glob "*NAME" (NHC's check_ps_service rule, so "/usr/sbin/sshd" is sshd) or whose kernel name (comm) is NAME, run by USER (a glob, a name or a uid; any user when left out).`,
			"units":     "systemd units that must be active (systemctl is-active).",
			"systemctl": "systemctl's absolute path.",
		},
		Fix: []string{
			"systemctl status UNIT and journalctl -u UNIT say why a daemon stopped; start it again (systemctl start UNIT), or fix its user in the unit file.",
		},
	}
}
