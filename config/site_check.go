package config

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// SiteCheck is one [[site_check]] of nodecheck.toml: a command a site declares, which
// nodecheck runs without a shell and judges by its exit status (docs/nhc.md, "Site checks").
// The check site_checks runs them; its [checks.site_checks] section bounds them all.
type SiteCheck struct {
	// Name names the check in results, reasons and metrics: lowercase letters, digits, '_'
	// and '-', unique among the site checks.
	Name string `toml:"name"`
	// Command is the program's absolute path: hooks have no PATH.
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Modes lists the modes it runs in; empty means those of [checks.site_checks].
	Modes []string `toml:"modes"`
	// Timeout bounds one run; zero means [checks.site_checks]'s timeout. Either is cut to
	// what is left of that check's time and of the run's budget.
	Timeout time.Duration `toml:"timeout"`
	// User is the account it runs as (name or numeric uid); empty means nodecheck's own
	// (root under Slurm).
	User string `toml:"user"`
	// Remedy is the remedy of its failure: "admin" (the default), "reboot", "reset_gpu" or
	// "service". A JSON line of its output may name another for one device.
	Remedy string `toml:"remedy"`
}

// SiteChecksID is the id of the check that runs the [[site_check]] entries, whose section
// bounds their modes and timeouts.
const SiteChecksID = "site_checks"

// siteCheckRemedies are the remedies a site check may name (checks.Remedies, which config
// cannot import).
var siteCheckRemedies = []string{"reset_gpu", "reboot", "admin", "service"}

var siteCheckName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// EffectiveModes is the modes sc runs in: its own, or else those of the site_checks section.
func (sc SiteCheck) EffectiveModes(c *Config) []string {
	if len(sc.Modes) > 0 {
		return sc.Modes
	}
	if s := c.Checks.Get(SiteChecksID); s != nil {
		return s.Common().Modes
	}
	return nil
}

// EffectiveTimeout is sc's timeout, or else that of the site_checks section.
func (sc SiteCheck) EffectiveTimeout(c *Config) time.Duration {
	if sc.Timeout > 0 {
		return sc.Timeout
	}
	if s := c.Checks.Get(SiteChecksID); s != nil {
		return s.Common().Timeout
	}
	return 0
}

// validateSiteChecks checks each [[site_check]]: a unique name, an absolute command, modes
// that the site_checks section runs in, a timeout within that section's, a known remedy.
func (c *Config) validateSiteChecks() []tomlKeyError {
	var errs []tomlKeyError
	var section *CheckCommon
	if s := c.Checks.Get(SiteChecksID); s != nil {
		section = s.Common()
	}
	seen := map[string]int{}
	for i, sc := range c.SiteChecks {
		p := []string{"site_check", tomlIndex(i)}
		add := func(key, format string, args ...any) {
			errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
		}
		switch j, dup := seen[sc.Name]; {
		case sc.Name == "":
			add("name", ": missing; name the check (lowercase letters, digits, '_' and '-'), such as \"scratch_mounted\"")
		case !siteCheckName().MatchString(sc.Name):
			add("name", " = %q: use lowercase letters, digits, '_' and '-' (at most 63), starting with a letter or digit", sc.Name)
		case dup:
			add("name", " = %q: site_check[%d] has that name too; names must be unique", sc.Name, j)
		}
		seen[sc.Name] = i
		switch {
		case sc.Command == "":
			add("command", ": missing; give the program's absolute path, such as \"/usr/local/sbin/check-scratch\"")
		case !path.IsAbs(sc.Command) || path.Clean(sc.Command) != sc.Command:
			add("command", " = %q: give a clean absolute path: hooks run with no PATH and no shell", sc.Command)
		}
		if sc.Timeout < 0 {
			add("timeout", " = %q: must not be negative", sc.Timeout)
		}
		if sc.User != "" && strings.ContainsAny(sc.User, " \t:/") {
			add("user", " = %q: give a user name or a numeric uid", sc.User)
		}
		if sc.Remedy != "" && !slices.Contains(siteCheckRemedies, sc.Remedy) {
			add("remedy", " = %q: use %s%s", sc.Remedy, tomlOrList(siteCheckRemedies), tomlDidYouMean(sc.Remedy, siteCheckRemedies))
		}
		cc := CheckCommon{Enabled: true, Timeout: sc.EffectiveTimeout(c), Modes: sc.Modes}
		if len(sc.Modes) > 0 {
			for _, e := range cc.validateCommon(p, c.Budget) {
				if e.path[len(e.path)-1] != "timeout" || sc.Timeout > 0 {
					errs = append(errs, e)
				}
			}
		}
		if section == nil {
			continue
		}
		for _, m := range sc.Modes {
			if slices.Contains(ModeNames(), m) && !slices.Contains(section.Modes, m) {
				add("modes", ": %q is not in checks.%s.modes = %q, which bounds every site check; add it there", m, SiteChecksID, section.Modes)
			}
		}
		if sc.Timeout > 0 && section.Timeout > 0 && sc.Timeout > section.Timeout {
			add("timeout", " = %q is longer than checks.%s.timeout = %q, which bounds every site check; lower it or raise that", sc.Timeout, SiteChecksID, section.Timeout)
		}
	}
	return errs
}
