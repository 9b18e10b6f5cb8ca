package config

// Validation of nodecheck.toml: the rules that span keys, each check's common keys and its own
// section rules, and each [[group]] on top of the base.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// Validate checks the rules that span keys: the log level; absolute paths (hooks run in
// slurmd's working directory); for each check, a positive timeout when enabled, known modes,
// and a timeout no longer than the budget of any mode the check runs in; each check's own
// ranges; and for each group a valid, non-empty Slurm hostlist and overrides that are valid
// on top of the base config on their own (so a group meant to stack on another must still
// make sense alone). Errors name the keys; ParseConfig adds file and line.
func (c *Config) Validate() error {
	name := c.Path
	return tomlErrors(name, nil, c.validate())
}

func (c *Config) validate() []tomlKeyError {
	var errs []tomlKeyError
	add := func(path []string, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: path, msg: fmt.Sprintf(format, args...)})
	}
	if c.SlurmConf != "" && !strings.HasPrefix(c.SlurmConf, "/") {
		add([]string{"slurm_conf"}, " = %q: give an absolute path: Slurm hooks run in slurmd's working directory", c.SlurmConf)
	}
	if msg := promFileProblem(c.PromFile); msg != "" {
		add([]string{"prom_file"}, " = %q: %s", c.PromFile, msg)
	}
	if !slices.Contains(configLogLevels, c.Log.Level) {
		add([]string{"log", "level"}, " = %q: use %s%s", c.Log.Level, tomlOrList(configLogLevels), tomlDidYouMean(c.Log.Level, configLogLevels))
	}
	if c.Log.File != "" && !strings.HasPrefix(c.Log.File, "/") {
		add([]string{"log", "file"}, " = %q: give an absolute path: Slurm hooks run in slurmd's working directory", c.Log.File)
	}
	for _, m := range Modes() {
		if b := c.Budget.For(m); b < 0 {
			add([]string{"budget", string(m)}, " = %q: must not be negative; \"0s\" means no limit", b)
		}
	}

	errs = append(errs, c.validateDrain()...)
	errs = append(errs, c.validateRepair()...)
	errs = append(errs, c.validateValidate()...)

	base := validateChecks(c.Checks, c.Budget, []string{"checks"})
	errs = append(errs, base...)
	errs = append(errs, c.validateSiteChecks()...)

	for i, g := range c.Groups {
		gp := []string{"group", tomlIndex(i)}
		if strings.TrimSpace(g.Nodes) == "" {
			add(gp, ": no nodes; set nodes to the Slurm hostlist the group applies to, such as \"gpu[01-32]\"")
		} else if hl, err := slurm.ParseHostlist(g.Nodes); err != nil {
			add(append(slices.Clip(gp), "nodes"), ": %v", err)
		} else if hl.Len() == 0 {
			add(append(slices.Clip(gp), "nodes"), " = %q names no node; give a Slurm hostlist such as \"gpu[01-32]\"", g.Nodes)
		}
		merged := tomlClone(c.Checks)
		cp := append(slices.Clip(gp), "checks")
		if ge := applyGroupChecks(merged, g.Checks, cp); len(ge) > 0 {
			errs = append(errs, ge...)
			continue
		}
		// A problem the base already has is reported once, at the base.
		for _, e := range validateChecks(merged, c.Budget, cp) {
			if !slices.ContainsFunc(base, func(b tomlKeyError) bool {
				return b.msg == e.msg && slices.Equal(b.path[1:], e.path[len(cp):])
			}) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}
