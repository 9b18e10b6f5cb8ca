package config

// Validation of nodecheck.toml: the rules that span keys, each check's common keys and its own
// section rules, and each [[group]] on top of the base.

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
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

	base := validateChecks(&c.Checks, c.Budget, []string{"checks"})
	errs = append(errs, base...)

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
		if ge := applyGroupChecks(&merged, g.Checks, cp); len(ge) > 0 {
			errs = append(errs, ge...)
			continue
		}
		// A problem the base already has is reported once, at the base.
		for _, e := range validateChecks(&merged, c.Budget, cp) {
			if !slices.ContainsFunc(base, func(b tomlKeyError) bool {
				return b.msg == e.msg && slices.Equal(b.path[1:], e.path[len(cp):])
			}) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// commoner is implemented by every check section through its embedded CheckCommon.
type commoner interface{ common() *CheckCommon }

func (cc *CheckCommon) common() *CheckCommon { return cc }

// sectionValidator is implemented by check sections with rules beyond CheckCommon's.
type sectionValidator interface {
	validateSection(path []string) []tomlKeyError
}

func validateChecks(cs *Checks, b Budget, prefix []string) []tomlKeyError {
	var errs []tomlKeyError
	rv := reflect.ValueOf(cs).Elem()
	for i := range rv.NumField() {
		p := append(slices.Clip(prefix), tomlKey(rv.Type().Field(i)))
		sec := rv.Field(i).Addr().Interface()
		if c, ok := sec.(commoner); ok {
			errs = append(errs, c.common().validateCommon(p, b)...)
		}
		if v, ok := sec.(sectionValidator); ok {
			errs = append(errs, v.validateSection(p)...)
		}
	}
	return errs
}

func (cc *CheckCommon) validateCommon(p []string, b Budget) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case cc.Timeout < 0:
		add("timeout", " = %q: must not be negative", cc.Timeout)
	case cc.Enabled && cc.Timeout == 0:
		add("timeout", " = \"0s\": an enabled check needs a time limit, such as \"2s\"; to turn the check off set enabled = false")
	}
	if cc.Enabled && len(cc.Modes) == 0 {
		add("modes", " is empty: list the modes the check runs in, such as [\"health\", \"manual\"]; to turn the check off set enabled = false")
	}
	names := modeNames()
	seen := map[string]bool{}
	for _, m := range cc.Modes {
		switch budget := b.For(Mode(m)); {
		case !slices.Contains(names, m):
			add("modes", ": %q is not a mode; use %s%s", m, tomlOrList(names), tomlDidYouMean(m, names))
		case seen[m]:
			add("modes", ": %q is listed twice", m)
		case cc.Enabled && budget > 0 && cc.Timeout > budget:
			add("timeout", " = %q is longer than budget.%s = %q, and the check runs in %s; lower the timeout or take %q out of modes",
				cc.Timeout, m, budget, m, m)
		}
		seen[m] = true
	}
	return errs
}

func (ib *IBPortsConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	if r := ib.MinRateGbps; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		add("min_rate_gbps", " = %v: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR", r)
	}
	if ib.ExpectedPorts < 0 {
		add("expected_ports", " = %d: give a count of 0 (no expectation) or more", ib.ExpectedPorts)
	}
	for key, list := range map[string][]string{"devices": ib.Devices, "exclude_devices": ib.ExcludeDevices} {
		for _, d := range list {
			if !validIBSelector(d) {
				add(key, ": %q is neither a device (mlx5_0) nor a port (mlx5_0/1)", d)
			}
		}
	}
	for _, ll := range ib.ExcludeLinkLayers {
		// The check compares with sysfs link_layer ignoring case, so "ethernet" works too.
		if !strings.EqualFold(ll, "InfiniBand") && !strings.EqualFold(ll, "Ethernet") {
			add("exclude_link_layers", ": %q is not a link layer; use \"InfiniBand\" or \"Ethernet\" (as in /sys/class/infiniband/*/ports/*/link_layer)", ll)
		}
	}
	// The map above has no order; errors are sorted by line later, but keep equal lines stable.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].path[len(p)] < errs[j].path[len(p)] })
	return errs
}

// validIBSelector accepts "mlx5_0" or "mlx5_0/1": a device name under /sys/class/infiniband,
// optionally with a port number.
func validIBSelector(s string) bool {
	dev, port, hasPort := strings.Cut(s, "/")
	if dev == "" || strings.ContainsAny(dev, " \t\n") {
		return false
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		return err == nil && n > 0 && !strings.HasPrefix(port, "+")
	}
	return true
}

// ForNode returns the effective config for the node called name: the base, then the
// overrides of every group whose hostlist contains name, in file order, so a later group
