package checks

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

const idKernelLog = "kernel_log"

// faultKernelLogMatch is kernel_log's row of the remedy table.
const faultKernelLogMatch fault = "kernel_log/match"

// kernelLogPatterns matches the kernel log since boot against patterns a site names, as NHC's
// check_cmd_dmesg does (check_cmd_output's -m): a pattern must match some line, a "!pattern"
// none. Patterns are NHC's: a /regular expression/ (unanchored), or a shell glob matched
// against the whole line. It reads the log as xid_errors does (dmesg --kernel --nopager),
// so one recording serves both.
type kernelLogPatterns struct{}

func (kernelLogPatterns) ID() string { return idKernelLog }

func (kernelLogPatterns) Description() string {
	return "the kernel log since boot matches the site's patterns (\"!PATTERN\": must not appear); none by default"
}

// kernelLogConfig is [checks.kernel_log].
type kernelLogConfig struct {
	config.CheckCommon
	Patterns []string `toml:"patterns"`
	Dmesg    string   `toml:"dmesg"`
}

func (kernelLogPatterns) Section() config.Section {
	return &kernelLogConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}},
		Dmesg: "/usr/bin/dmesg"}
}

// ValidateSection implements config.SectionValidator.
func (c *kernelLogConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	if !path.IsAbs(c.Dmesg) {
		out = append(out, config.Problemf("dmesg", " = %q: give an absolute path: hooks have no PATH", c.Dmesg))
	}
	for i, p := range c.Patterns {
		if err := checkPattern(strings.TrimPrefix(p, "!")); err != nil || strings.TrimPrefix(p, "!") == "" {
			out = append(out, config.Problemf("patterns", "[%d] = %q: give a /regular expression/ or a glob, \"!\" first for one that must not appear", i, p))
		}
	}
	return out
}

func (kernelLogPatterns) Run(ctx context.Context, env *Env) Result {
	set := settings[*kernelLogConfig](env.Config, idKernelLog)
	if len(set.Patterns) == 0 {
		return Result{Status: StatusSkip, Summary: "no patterns listed in [checks.kernel_log]"}
	}
	out, res, ok := readKernelLog(ctx, env, set.Dmesg)
	if !ok {
		return res
	}
	return judgeKernelLog(strings.Split(out.Stdout, "\n"), set.Patterns)
}

// judgeKernelLog applies each pattern to the lines.
func judgeKernelLog(lines []string, patterns []string) Result {
	var res Result
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		pat := strings.TrimPrefix(p, "!")
		found := ""
		for _, l := range lines {
			if matchLogPattern(pat, l) {
				found = l
				break
			}
		}
		d := Detail{Device: p}
		switch {
		case neg && found != "":
			d.Message, d.Observed = "found: "+siteClip(found), siteClip(found)
			failDetail(&d, faultKernelLogMatch)
		case !neg && found == "":
			d.Message = "not found in the kernel log"
			failDetail(&d, faultKernelLogMatch)
		case neg:
			d.Status, d.Message = StatusOK, "not in the kernel log"
		default:
			d.Status, d.Message, d.Observed = StatusOK, "found: "+siteClip(found), siteClip(found)
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, fmt.Sprintf("the kernel log matches %s", countNoun(len(patterns), "pattern", "patterns")))
}

// matchLogPattern is NHC's mcheck on a line: a /regular expression/ anywhere in it, else a
// glob against the whole line.
func matchLogPattern(pat, line string) bool {
	if slashed(pat) {
		re, err := regexp.Compile(pat[1 : len(pat)-1])
		return err == nil && re.MatchString(line)
	}
	if strings.ContainsAny(pat, "*?[") {
		re, err := regexp.Compile("^" + globToRegexp(pat) + "$")
		return err == nil && re.MatchString(line)
	}
	return pat == line
}

// slashed reports whether pat is written /RE/: in a log pattern always a regular expression.
func slashed(pat string) bool { return len(pat) > 2 && pat[0] == '/' && pat[len(pat)-1] == '/' }

// checkPattern says whether a /regular expression/ compiles; a glob always does.
func checkPattern(pat string) error {
	if slashed(pat) {
		_, err := regexp.Compile(pat[1 : len(pat)-1])
		return err
	}
	return nil
}

func (kernelLogPatterns) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultKernelLogMatch, "a \"!pattern\" of kernel_log appears in the kernel log, or a pattern does not", RemedyAdmin,
			"NHC check_cmd_dmesg: the site names the message; a person reads the log and decides"},
	}}
}

// Explain is what `nodecheck explain kernel_log` says.
func (kernelLogPatterns) Explain() Explanation {
	return Explanation{
		Reads:  []string{"The kernel log since boot: dmesg --kernel --nopager (the same reading as xid_errors)."},
		Passes: "Every pattern is found in the log, and no \"!pattern\" is.",
		Fails:  "A \"!pattern\" is found (the summary quotes the line), or a pattern is not.",
		Skips:  "No pattern is listed (the default); a snapshot without the kernel log.",
		Errors: "dmesg cannot be run (not installed, or kernel.dmesg_restrict for a user who is not root).",
		Keys: map[string]string{
			"patterns": `NHC's check_cmd_dmesg -m patterns: a /regular expression/ found anywhere in a line, or a glob matched against the whole line ("*Out of memory*"); "!" first for one that must not appear: ["!/Out of memory: Killed process/", "!*EDAC*UE*"].`,
			"dmesg":    "util-linux dmesg's absolute path.",
		},
		Fix: []string{"dmesg -T | grep -n PATTERN shows the line and its time."},
	}
}
