package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/nhc"
)

const idFileContents = "file_contents"

const faultFileContents fault = "file_contents/mismatch"

// fileContents matches the lines of small files against patterns: NHC's check_file_contents
// (a kernel module parameter, a sysctl, a line of a config file a node must or must not
// have). Each pattern is NHC's: a glob over the whole line, a /regular expression/, a
// {node range}; a leading ! means no line may match it.
type fileContents struct{}

func (fileContents) ID() string { return idFileContents }

func (fileContents) Description() string {
	return "the files listed have lines matching their patterns, and none matching a !pattern (NHC's check_file_contents)"
}

// fileContentsConfig is [checks.file_contents].
type fileContentsConfig struct {
	config.CheckCommon
	// Files lists one check_file_contents line each: "FILE PATTERN [PATTERN...]", in NHC's
	// quoting ("/proc/sys/kernel/numa_balancing 0", "/etc/ntp.conf '!/^server 10\\./'").
	Files []string `toml:"files"`
}

// Section: nothing listed, in every mode: reading a few small files costs microseconds.
func (fileContents) Section() config.Section {
	return &fileContentsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (c *fileContentsConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for i, s := range c.Files {
		if _, err := parseFileContents(s); err != nil {
			out = append(out, config.Problemf("files", "[%d] = %q: %v", i, s, err))
		}
	}
	return out
}

// contentsRule is one entry of files.
type contentsRule struct {
	Path     string
	Patterns []string // as written: "!" first for one no line may match
	matchers []nhc.Matcher
}

func parseFileContents(s string) (contentsRule, error) {
	words, err := nhc.SplitWords(s)
	if err != nil {
		return contentsRule{}, err
	}
	if len(words) < 2 {
		return contentsRule{}, errors.New(`want a file and at least one pattern, such as "/proc/sys/kernel/numa_balancing 0"`)
	}
	if !strings.HasPrefix(words[0], "/") {
		return contentsRule{}, fmt.Errorf("file %q is not an absolute path", words[0])
	}
	r := contentsRule{Path: words[0], Patterns: words[1:]}
	for _, p := range r.Patterns {
		// check_file_contents takes the ! itself, and hands the rest to mcheck.
		m, err := nhc.CompileTarget(strings.TrimPrefix(p, "!"))
		if err != nil {
			return contentsRule{}, fmt.Errorf("pattern %q: %v", p, err)
		}
		r.matchers = append(r.matchers, m)
	}
	return r, nil
}

// contentsFacts is one file as read: its lines, or why there are none.
type contentsFacts struct {
	Lines       []string
	Missing     bool   // the file does not exist: no lines, as NHC reads it
	NotRecorded bool   // a snapshot that holds neither the file nor its absence
	Err         string // why it could not be read otherwise
}

func (fileContents) Run(ctx context.Context, env *Env) Result {
	set := settings[*fileContentsConfig](env.Config, idFileContents)
	if len(set.Files) == 0 {
		return Result{Status: StatusSkip, Summary: "no files listed in [checks.file_contents]"}
	}
	var rules []contentsRule
	facts := map[string]contentsFacts{}
	for _, s := range set.Files {
		r, err := parseFileContents(s)
		if err != nil {
			return Result{Status: StatusError, Summary: fmt.Sprintf("files entry %q: %v", s, err), Err: err}
		}
		rules = append(rules, r)
		if _, ok := facts[r.Path]; ok {
			continue
		}
		b, err := env.Facts.ReadFile(ctx, r.Path)
		switch {
		case err == nil:
			facts[r.Path] = contentsFacts{Lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
		case ctx.Err() != nil:
			return Result{Status: StatusFail, Summary: "timed out reading " + r.Path, Err: err, Remedy: remedyOf(faultTimeout)}
		case errors.Is(err, fs.ErrNotExist):
			facts[r.Path] = absentFile(ctx, env, r.Path)
		default:
			facts[r.Path] = contentsFacts{Err: err.Error()}
		}
	}
	return judgeFileContents(rules, facts)
}

// absentFile tells a file that does not exist from one a snapshot did not record: a snapshot
// holds the files that were read, never the ones that were missing, so only a stat (which a
// snapshot records, absence included) can say the file was looked for. A !pattern passes on a
// missing file, and must not on one nobody looked at.
func absentFile(ctx context.Context, env *Env, path string) contentsFacts {
	st, err := env.Facts.FileStat(ctx, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return contentsFacts{NotRecorded: true}
	case err != nil:
		return contentsFacts{Err: err.Error()}
	case !st.Missing:
		return contentsFacts{Err: "reading it said it does not exist, but stat finds it"}
	}
	return contentsFacts{Missing: true}
}

// judgeFileContents judges each rule as check_file_contents does: each line, trimmed of
// surrounding blanks as bash's read trims it, against each pattern; a positive pattern must
// match some line, a !pattern none. A missing file has no lines: its positive patterns fail
// and its negative ones pass, as in NHC; an unreadable one settles nothing (error).
func judgeFileContents(rules []contentsRule, facts map[string]contentsFacts) Result {
	var res Result
	for _, r := range rules {
		f := facts[r.Path]
		d := Detail{Device: r.Path, Status: StatusOK, Expected: strings.Join(r.Patterns, " ")}
		if f.Err != "" {
			d.Status, d.Message = StatusError, "could not read "+r.Path+": "+f.Err
			res.Details = append(res.Details, d)
			continue
		}
		if f.NotRecorded {
			d.Status, d.Message = StatusSkip, r.Path+" not recorded in this snapshot"
			res.Details = append(res.Details, d)
			continue
		}
		if msg := contentsMismatch(r, f); msg != "" {
			failDetail(&d, faultFileContents)
			d.Message = msg
		} else {
			d.Message = fmt.Sprintf("%s matches %s", r.Path, strings.Join(r.Patterns, " "))
		}
		res.Details = append(res.Details, d)
	}
	return settleDetails(res, fmt.Sprintf("%s as listed", countNoun(len(rules), "file matches", "files match")))
}

// contentsMismatch is NHC's message for the first way the file fails the rule; "" when it
// does not.
func contentsMismatch(r contentsRule, f contentsFacts) string {
	matched := make([]bool, len(r.Patterns))
	found := 0
	for n, raw := range f.Lines {
		line := strings.TrimSpace(raw)
		for i, p := range r.Patterns {
			pat, neg := strings.CutPrefix(p, "!")
			ok := r.matchers[i].Match(line)
			switch {
			case neg && ok:
				return fmt.Sprintf("File %q line %d matches %q", r.Path, n+1, pat)
			case !neg && ok && !matched[i]:
				matched[i] = true
				found++
			}
		}
	}
	positives := 0
	for _, p := range r.Patterns {
		if !strings.HasPrefix(p, "!") {
			positives++
		}
	}
	if found == positives {
		return ""
	}
	missing := ""
	if f.Missing {
		missing = " (the file does not exist)"
	}
	if found == 0 && len(r.Patterns) == 1 {
		return fmt.Sprintf("File %q failed to match %q%s", r.Path, r.Patterns[0], missing)
	}
	for i, p := range r.Patterns {
		if !matched[i] && !strings.HasPrefix(p, "!") {
			return fmt.Sprintf("File %q matched %d/%d patterns. First failed match: %q%s", r.Path, found+len(r.Patterns)-positives, len(r.Patterns), p, missing)
		}
	}
	return ""
}

// Faults lists file_contents' row of the remedy table.
func (fileContents) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultFileContents, "a file lacks a line its patterns want, or has one a !pattern forbids", RemedyAdmin,
			"NHC check_file_contents: a setting (a module parameter, a sysctl, a config line) differs from what the site requires; a person corrects it"},
	}}
}

// Explain is what `nodecheck explain file_contents` says.
func (fileContents) Explain() Explanation {
	return Explanation{
		Reads:  []string{"Each file listed, whole (bounded as every file nodecheck reads), line by line."},
		Passes: "Every positive pattern of an entry matches some line of its file, and no line matches one of its !patterns.",
		Fails:  `A pattern matches no line, or a !pattern matches one, named as NHC names it ("File \"/proc/sys/kernel/numa_balancing\" failed to match \"0\""). A missing file has no lines, as in NHC: its patterns fail, its !patterns pass.`,
		Skips:  "files is empty; a snapshot that recorded neither a file nor its absence.",
		Errors: "A file cannot be read (EACCES, EIO, not a regular file, too large).",
		Keys: map[string]string{
			"files": `One entry per file, written as NHC's check_file_contents arguments: the absolute path, then patterns, quoted as bash quotes them. A pattern is a glob over the whole line (blanks around the line trimmed), a /regular expression/ searched in it, or a {node range}; with ! first, no line may match it: "/proc/sys/kernel/numa_balancing 0", "/etc/security/limits.conf '*hard*memlock*unlimited*'", "/etc/fstab '!/nfsvers=3/'".`,
		},
		Fix: []string{"cat FILE shows what the check read; correct the setting, then run nodecheck again."},
	}
}
