// Package nhcdrop is nodecheck run as LBNL NHC's `nhc`, for sites whose slurm.conf says
// HealthCheckProgram=/usr/sbin/nhc: it reads NHC's command line and /etc/nhc/nhc.conf, picks
// the lines whose target matches this host as NHC does, sets the generic checks as those
// lines say (the translation `nodecheck import-nhc` writes), and leaves the GPU checks as
// nodecheck.toml sets them. A line for this host that nodecheck cannot translate is not run,
// and says so: the check nhc_conf is then an error, so the run is undecided, never healthy.
package nhcdrop

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/nhc"
)

// ConfMax bounds the nhc.conf read: real ones are a few KiB.
const ConfMax = 1 << 20

// Plan is what the drop-in runs on this host.
type Plan struct {
	Options nhc.Options
	// Host is the name the targets were matched against: -m, else the kernel's host name.
	Host string
	// Lines is how many check lines nhc.conf holds, for every host.
	Lines int
	// Translation is the lines for this host: translated, and not (Skipped).
	Translation nhc.Translation
	checks      map[string]map[string]any
}

// Host is what Load asks of the machine.
type Host struct {
	// Hostname is the kernel's host name (os.Hostname), asked only when -m does not name the host.
	Hostname func() (string, error)
	// SysconfigDir is where NHC's sysconfig file NAME lives unless the command line says
	// (SYSCONFIGDIR=); "" finds it as LBNL NHC does (SysconfigDir).
	SysconfigDir string
}

// SysconfigDir is where LBNL NHC 1.5 sources its settings from (nhcmain_init_env):
// /etc/default on Debian (/etc/debian_version), else /etc/sysconfig where it exists, else
// /etc/default where it exists, else /etc/nhc/sysconfig.
func SysconfigDir() string {
	if _, err := os.Stat("/etc/debian_version"); err == nil {
		return "/etc/default"
	}
	for _, d := range []string{"/etc/sysconfig", "/etc/default"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return "/etc/nhc/sysconfig"
}

// Load reads NHC's command line, its sysconfig file and its configuration file.
func Load(ctx context.Context, args []string, h Host) (Plan, error) {
	o, err := nhc.ParseArgsSysconfig(args, func(dir, name string) ([]byte, string, error) {
		path := filepath.Join(cmp.Or(dir, h.SysconfigDir, SysconfigDir()), name)
		b, err := readConfig(ctx, path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, path, nil
		}
		return b, path, err
	})
	if err != nil {
		return Plan{}, err
	}
	hostname := h.Hostname
	p := Plan{Options: o, Host: o.Hostname}
	if p.Host == "" {
		if p.Host, err = hostname(); err != nil {
			return Plan{}, fmt.Errorf("host name, to match nhc.conf's targets: %w (give -m HOST)", err)
		}
	}
	data, err := readConfig(ctx, o.ConfFile)
	if err != nil {
		return Plan{}, err
	}
	lines, err := nhc.Parse(bytes.NewReader(data), o.ConfFile)
	if err != nil {
		return Plan{}, err
	}
	p.Lines = len(lines)
	p.Translation = keepValid(nhc.TranslateFor(lines, p.Host))
	// "* || export MARK_OFFLINE=0" and the like: NHC evaluates them as it reads the file.
	for _, st := range p.Translation.Settings {
		if err := p.Options.Set(st.Name, st.Value); err != nil {
			return Plan{}, fmt.Errorf("%s:%d: %w", o.ConfFile, st.Line, err)
		}
	}
	if p.checks, err = p.Translation.Checks(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// keepValid moves each translated line whose values nodecheck.toml's rules refuse (a check's
// own validation, which the translation may not foresee) to the lines not run, with why, so
// that one such line leaves the run undecided instead of stopping it.
func keepValid(t nhc.Translation) nhc.Translation {
	base := config.Default(checks.Schema())
	byLine := map[int][]nhc.Entry{}
	var order []int
	for _, e := range t.Entries {
		if byLine[e.From.Num] == nil {
			order = append(order, e.From.Num)
		}
		byLine[e.From.Num] = append(byLine[e.From.Num], e)
	}
	var kept []nhc.Entry
	for _, n := range order {
		es := byLine[n]
		one := nhc.Translation{Entries: es}
		ov, err := one.Checks()
		if err == nil {
			_, err = base.WithChecks(ov, es[0].From.Where())
		}
		if err != nil {
			t.Skipped = append(t.Skipped, nhc.Skipped{Line: es[0].From, Why: err.Error()})
			continue
		}
		kept = append(kept, es...)
	}
	t.Entries = kept
	slices.SortStableFunc(t.Skipped, func(a, b nhc.Skipped) int { return a.Line.Num - b.Line.Num })
	return t
}

// readConfig reads a file of NHC's configuration: bounded, and refused where others can
// write it, as nodecheck.toml is (it says what nodecheck checks, as root).
func readConfig(ctx context.Context, path string) ([]byte, error) {
	data, err := files.Read(ctx, path, files.Limits{MaxBytes: ConfMax, FollowSymlinks: true,
		Check: func(fi os.FileInfo) error { return config.CheckConfigFilePerms(path, fi, os.Geteuid()) }})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// Adjust is the run's config: cfg (nodecheck.toml for this node) with the generic checks
// set as nhc.conf sets them for this host; -t as the health budget when it is shorter; -l
// and -d for the log; and, for MARK_OFFLINE=0 or NHC_RM=none, no drain, resume or repair.
func (p Plan) Adjust(cfg *config.Config) (*config.Config, error) {
	out, err := cfg.WithChecks(p.withAuthSettings(), p.Options.ConfFile)
	if err != nil {
		return nil, fmt.Errorf("the checks %s sets for %s: %w", p.Options.ConfFile, p.Host, err)
	}
	if t := p.Options.Timeout; t > 0 {
		for _, b := range []*time.Duration{&out.Budget.Health, &out.Budget.Manual} {
			if *b == 0 || t < *b { // -t shortens a budget, never lengthens it
				*b = t
			}
		}
	}
	if p.Options.LogFile != "" {
		out.Log.File = p.Options.LogFile
	}
	if p.Options.Debug {
		out.Log.Level = "debug"
	}
	if !p.Options.MarkOffline {
		out.Drain.Enabled, out.Drain.Resume, out.Repair.Enabled = false, false, false
	}
	return out, nil
}

// withAuthSettings is the translated checks with NHC_AUTH_USERS and MAX_SYS_UID applied to
// stray_processes, as check_ps_unauth_users reads them: NHC_AUTH_USERS replaces NHC's default
// users (root, nobody) ahead of the line's own -u and -n.
func (p Plan) withAuthSettings() map[string]map[string]any {
	sp := p.checks["stray_processes"]
	if sp == nil || sp["enabled"] != true || p.Options.AuthUsers == nil && p.Options.MaxSysUID == 0 {
		return p.checks
	}
	out := maps.Clone(p.checks)
	sp = maps.Clone(sp)
	out["stray_processes"] = sp
	if p.Options.AuthUsers != nil {
		allow := slices.Clone(p.Options.AuthUsers)
		listed, _ := sp["allow_users"].([]string)
		for _, u := range listed {
			if !slices.Contains(nhc.DefaultAuthUsers(), u) && !slices.Contains(allow, u) {
				allow = append(allow, u)
			}
		}
		sp["allow_users"] = allow
	}
	if p.Options.MaxSysUID > 0 {
		sp["max_system_uid"] = int64(p.Options.MaxSysUID)
	}
	return out
}

// Check is the check that names the lines for this host that nodecheck did not run.
func (p Plan) Check() checks.Check {
	return notRun{file: p.Options.ConfFile, skipped: p.Translation.Skipped}
}

// Describe is one line for stderr: what was read and what was made of it.
func (p Plan) Describe() string {
	settings := ""
	if n := len(p.Translation.Settings); n > 0 {
		settings = fmt.Sprintf(", %d settings applied", n)
	}
	return fmt.Sprintf("nodecheck as nhc: %s: %d check lines, %d for %s translated, %d for %s not run%s",
		p.Options.ConfFile, p.Lines, countLines(p.Translation.Entries), p.Host, len(p.Translation.Skipped), p.Host, settings)
}

func countLines(es []nhc.Entry) int {
	seen := map[int]bool{}
	for _, e := range es {
		seen[e.From.Num] = true
	}
	return len(seen)
}

// IsNHC says whether argv0 is the drop-in's name: nodecheck started through a link named nhc.
func IsNHC(argv0 string) bool { return filepath.Base(argv0) == "nhc" }

// NotRunID is the id of the check that names the nhc.conf lines nodecheck did not run.
const NotRunID = "nhc_conf"

// notRun is an error while any line of nhc.conf for this host was not run: NHC would have
// judged it, so a run without it has not looked at everything it was asked to.
type notRun struct {
	file    string
	skipped []nhc.Skipped
}

func (notRun) ID() string { return NotRunID }
func (notRun) Description() string {
	return "the nhc.conf lines for this host that nodecheck, run as nhc, could not translate"
}
func (notRun) Section() config.Section {
	return &notRunConfig{config.CheckCommon{Enabled: true, Timeout: time.Second, Modes: config.ModeNames()}}
}

type notRunConfig struct{ config.CheckCommon }

func (notRun) Faults() checks.Faults { return checks.Faults{} }

func (notRun) Explain() checks.Explanation {
	return checks.Explanation{
		Reads:  []string{"nhc.conf (-c FILE, else /etc/nhc/nhc.conf), as nodecheck run as nhc read it."},
		Passes: "Every line of nhc.conf whose target matches this host was translated to a nodecheck check.",
		Errors: "A line for this host has no translation with NHC's meaning, or its target cannot be evaluated: the run did not judge it.",
		Fix: []string{"nodecheck import-nhc FILE --rest REST.conf lists each such line with why, and writes a [[site_check]] that keeps them in LBNL NHC.",
			"Or remove the line from nhc.conf once a nodecheck check covers it."},
	}
}

func (c notRun) Run(context.Context, *checks.Env) checks.Result {
	if len(c.skipped) == 0 {
		return checks.Result{Status: checks.StatusOK, Summary: "every line of " + filepath.Base(c.file) + " for this host is translated"}
	}
	res := checks.Result{Status: checks.StatusError}
	var names []string
	for _, s := range c.skipped {
		what := s.Line.Command()
		if what == "" {
			what = "the line"
		}
		names = append(names, s.Line.Where())
		res.Details = append(res.Details, checks.Detail{Device: s.Line.Where(), Status: checks.StatusError,
			Message: what + " not run: " + s.Why, Observed: s.Line.Raw})
	}
	lines := "lines"
	if len(names) == 1 {
		lines = "line"
	}
	res.Summary = fmt.Sprintf("%d %s of %s not run (no translation): %s", len(names), lines, filepath.Base(c.file), strings.Join(names, ", "))
	return res
}
