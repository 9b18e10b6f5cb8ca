package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DrainConfig is the [drain] section: how nodecheck acts on Slurm.
type DrainConfig struct {
	Enabled           bool   `toml:"enabled"`             // drain on failure (prolog, epilog, health)
	ReasonPrefix      string `toml:"reason_prefix"`       // marks nodecheck's own drains
	Scontrol          string `toml:"scontrol"`            // absolute path: hooks get no PATH
	Sinfo             string `toml:"sinfo"`               // absolute path
	Resume            bool   `toml:"resume"`              // resume nodes nodecheck drained, once healthy
	ResumeAfterPasses int    `toml:"resume_after_passes"` // consecutive clean health runs before resuming
	MaxDrained        string `toml:"max_drained"`         // "10" nodes or "5%" of the cluster; "" no limit
}

// StateConfig is the [state] section.
type StateConfig struct {
	Dir string `toml:"dir"` // pass counters, last NCCL result, lock
}

func defaultDrain() DrainConfig {
	return DrainConfig{
		Enabled:           true,
		ReasonPrefix:      "nodecheck:",
		Scontrol:          "/usr/bin/scontrol",
		Sinfo:             "/usr/bin/sinfo",
		Resume:            true,
		ResumeAfterPasses: 2,
		MaxDrained:        "10%",
	}
}

func defaultState() StateConfig { return StateConfig{Dir: "/var/lib/nodecheck"} }

// maxReasonPrefix leaves room in a drain reason (200 characters) for the check and summary.
const maxReasonPrefix = 40

// ParseMaxDrained reads max_drained: "" is no limit (n == 0); "N" is N nodes; "N%" is N percent
// of the cluster's nodes, 1 to 100. Blanks around the value are allowed.
func ParseMaxDrained(s string) (n int, percent bool, err error) {
	n, percent, err = parseNodeLimit(s)
	if err == nil && n == 0 && strings.TrimSpace(s) != "" {
		return 0, false, fmt.Errorf("%q would hold back every drain: to never drain set enabled = false; for no limit use \"\"", s)
	}
	return n, percent, err
}

// parseNodeLimit reads a limit on nodes: "" is none (0); "N" is N nodes; "N%" is N percent of
// the cluster's nodes, up to 100. A zero count is returned as such, for the caller to refuse
// in its own words.
func parseNodeLimit(s string) (n int, percent bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	num, percent := strings.CutSuffix(s, "%")
	num = strings.TrimSpace(num)
	// Digits only: strconv.Atoi would also take "+5".
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, false, fmt.Errorf("%q is not a count (\"10\") or a percentage (\"10%%\")", s)
	}
	n, err = strconv.Atoi(num)
	if err != nil {
		return 0, false, fmt.Errorf("%q is not a count (\"10\") or a percentage (\"10%%\"): %w", s, errors.Unwrap(err))
	}
	if percent && n > 100 {
		return 0, false, fmt.Errorf("%q is over 100%%: for no limit use \"\"", s)
	}
	return n, percent, nil
}

// validateDrain checks the [drain] and [state] sections: absolute program and directory paths
// (hooks run without PATH, in slurmd's working directory), a reason prefix that survives
// scontrol and sinfo unchanged, at least one clean run before resuming, and max_drained's form.
func (c *Config) validateDrain() []tomlKeyError {
	var errs []tomlKeyError
	add := func(path []string, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: path, msg: fmt.Sprintf(format, args...)})
	}
	d := c.Drain
	for _, k := range []struct{ key, val string }{{"scontrol", d.Scontrol}, {"sinfo", d.Sinfo}} {
		if !strings.HasPrefix(k.val, "/") {
			add([]string{"drain", k.key}, " = %q: give an absolute path: Slurm starts hooks without PATH", k.val)
		}
	}
	if msg := checkReasonPrefix(d.ReasonPrefix); msg != "" {
		add([]string{"drain", "reason_prefix"}, " = %q: %s", d.ReasonPrefix, msg)
	}
	if d.ResumeAfterPasses < 1 {
		add([]string{"drain", "resume_after_passes"}, " = %d: must be at least 1 (the clean runs in a row before nodecheck resumes a node it drained)", d.ResumeAfterPasses)
	}
	if _, _, err := ParseMaxDrained(d.MaxDrained); err != nil {
		add([]string{"drain", "max_drained"}, ": %v", err)
	}
	if !strings.HasPrefix(c.State.Dir, "/") {
		add([]string{"state", "dir"}, " = %q: give an absolute path: Slurm hooks run in slurmd's working directory", c.State.Dir)
	}
	return errs
}

// checkReasonPrefix says what is wrong with a reason prefix, or "". nodecheck recognises its
// own drains by the prefix, so it must reach Slurm and come back unchanged: printable ASCII
// (drain reasons are sanitized to it), no double quote (scontrol strips quotes around a
// value), no blank at either end or twice in a row (sanitizing collapses them).
func checkReasonPrefix(p string) string {
	switch {
	case p == "":
		return "must not be empty: it is how nodecheck tells its own drains from everyone else's"
	case len(p) > maxReasonPrefix:
		return fmt.Sprintf("is %d characters, more than %d: the reason (at most 200) needs room for the check and summary", len(p), maxReasonPrefix)
	case strings.TrimSpace(p) != p || strings.Contains(p, "  "):
		return "must not start or end with a blank or hold two in a row"
	}
	for _, r := range p {
		if r < 0x20 || r > 0x7e || r == '"' {
			return fmt.Sprintf("holds %q: use printable ASCII without double quotes", r)
		}
	}
	return ""
}
