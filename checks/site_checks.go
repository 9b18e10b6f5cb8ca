package checks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idSiteChecks = config.SiteChecksID

// siteChecks runs the site's own commands, the [[site_check]] entries of nodecheck.toml, and
// judges each by a small protocol (node-problem-detector's custom plugins are the model):
// exit 0 ok, 1 fail, 2 warn, anything else error; the first line of stdout is the summary;
// later lines that start with '{' are JSON objects naming a device, its status, a message and
// a remedy. Each command runs without a shell, in "/", with nodecheck's small fixed
// environment, as the user its entry names, in a process group of its own that is killed
// at its deadline (node.Exec). The commands run side by side, so that the slowest, not
// their sum, is what the run's budget pays. A command that hangs, floods its output or
// prints what the protocol cannot read is an error naming it, never ok.
type siteChecks struct{}

func (siteChecks) ID() string { return idSiteChecks }

func (siteChecks) Description() string {
	return "the site's own commands ([[site_check]]): exit 0 ok, 1 fail, 2 warn, else error; the first line is the summary"
}

// siteChecksConfig is [checks.site_checks]: the common keys, which bound every site check.
type siteChecksConfig struct {
	config.CheckCommon
}

func (siteChecks) Section() config.Section {
	return &siteChecksConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second,
		Modes: []string{"health", "manual"}}}
}

// siteKillMargin is how long before the check's own deadline each command's deadline falls:
// killing a process group is immediate, but node.Exec then waits up to its WaitDelay (1 s)
// for pipes that an escaped grandchild holds. The command's error then reaches the judge
// before the runner's deadline turns the whole check into a timeout.
const siteKillMargin = 1100 * time.Millisecond

// siteLineLimit bounds the summary and each message taken from a site check's output.
const siteLineLimit = 160

const faultSiteFail fault = "site_checks/fail"

// siteOutcome is what running one site check gave: the facts its judge reads.
type siteOutcome struct {
	Check   config.SiteCheck
	Skipped string // why it did not run in this mode; "" when it ran
	// Timeout is the deadline it ran under (its own, or what the run had left).
	Timeout time.Duration
	Res     node.CmdResult
	Err     error
}

func (siteChecks) Run(ctx context.Context, env *Env) Result {
	list := env.Config.SiteChecks
	if len(list) == 0 {
		return Result{Status: StatusSkip, Summary: "no [[site_check]] in nodecheck.toml"}
	}
	outs := make([]siteOutcome, len(list))
	var wg sync.WaitGroup
	for i, sc := range list {
		outs[i].Check = sc
		if modes := sc.EffectiveModes(env.Config); !slices.Contains(modes, string(env.Mode)) {
			outs[i].Skipped = fmt.Sprintf("does not run in %s mode (modes = %v)", env.Mode, modes)
			continue
		}
		outs[i].Timeout = sc.EffectiveTimeout(env.Config)
		wg.Add(1)
		go func(o *siteOutcome) {
			defer wg.Done()
			runSiteCheck(ctx, env.Facts, o)
		}(&outs[i])
	}
	wg.Wait()
	return judgeSiteChecks(outs)
}

// runSiteCheck runs o.Check under o.Timeout (its own, or the section's), cut to end
// siteKillMargin before ctx does.
func runSiteCheck(ctx context.Context, f node.Facts, o *siteOutcome) {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second // a config made in code, without the section
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl) - siteKillMargin
		if left <= 0 {
			o.Timeout = 0
			o.Err = fmt.Errorf("not run: %w", context.DeadlineExceeded)
			return
		}
		o.Timeout = min(o.Timeout, left).Truncate(time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Check.User != "" {
		cctx = node.WithUser(cctx, o.Check.User)
	}
	argv := append([]string{o.Check.Command}, o.Check.Args...)
	o.Res, o.Err = f.Exec(cctx, argv)
}

// judgeSiteChecks judges every site check's outcome: one detail per check (plus one per
// device its JSON lines name), the worst status of the checks, and a summary naming the
// first check with that status.
func judgeSiteChecks(outs []siteOutcome) Result {
	res := Result{Status: StatusSkip}
	var worst []string
	ran := 0
	for _, o := range outs {
		ds := judgeSiteCheck(o)
		head := ds[0]
		res.Details = append(res.Details, ds...)
		if o.Skipped == "" {
			ran++
		}
		if head.Status == StatusSkip {
			continue
		}
		if res.Status == StatusSkip || head.Status.Worse(res.Status) {
			res.Status = head.Status
			worst = worst[:0]
		}
		if head.Status == res.Status && head.Status != StatusOK {
			worst = append(worst, head.Device+": "+head.Message)
		}
	}
	switch {
	case ran == 0:
		res.Summary = "no site check runs in this mode"
	case res.Status == StatusOK:
		res.Summary = fmt.Sprintf("%s passed", countNoun(ran, "site check", "site checks"))
	default:
		res.Summary = worst[0]
		if len(worst) > 1 {
			res.Summary += fmt.Sprintf(" (+%d more)", len(worst)-1)
		}
	}
	if res.Status == StatusError {
		res.Err = errors.New(res.Summary)
	}
	return res
}

// judgeSiteCheck judges one outcome by the protocol. The first detail is the check's own;
// any others are the devices its JSON lines name.
func judgeSiteCheck(o siteOutcome) []Detail {
	name := o.Check.Name
	d := Detail{Device: name}
	fail := func(d Detail) []Detail { return []Detail{d} }
	switch {
	case o.Skipped != "":
		d.Status, d.Message = StatusSkip, o.Skipped
		return fail(d)
	case o.Err != nil && errors.Is(o.Err, context.DeadlineExceeded) && o.Timeout == 0:
		d.Status, d.Message = StatusError, "not run: the run's budget was used up"
		return fail(d)
	case o.Err != nil && (errors.Is(o.Err, context.DeadlineExceeded) || errors.Is(o.Err, context.Canceled)):
		d.Status = StatusError
		d.Message = fmt.Sprintf("hung: killed with its process group after %s", o.Timeout)
		if first, _ := siteFirstLine(o.Res.Stdout); first != "" {
			d.Message += fmt.Sprintf(" (it had printed %q)", first)
		}
		return fail(d)
	case o.Err != nil && errors.Is(o.Err, fs.ErrNotExist):
		d.Status, d.Message = StatusError, fmt.Sprintf("%s is not there (not installed, or not recorded in this snapshot)", o.Check.Command)
		return fail(d)
	case o.Err != nil:
		d.Status, d.Message = StatusError, siteClip(o.Err.Error())
		return fail(d)
	case o.Res.Truncated:
		d.Status, d.Message = StatusError, fmt.Sprintf("flooded its output: more than %d KiB on stdout or stderr", node.DefaultOutputLimit>>10)
		return fail(d)
	}
	st, ok := siteExitStatus(o.Res.ExitCode)
	summary, err := siteFirstLine(o.Res.Stdout)
	if err != nil {
		d.Status, d.Message = StatusError, "printed garbage: "+err.Error()
		return fail(d)
	}
	devices, err := parseSiteLines(o.Res.Stdout, name, siteRemedy(o.Check.Remedy))
	switch {
	case !ok && o.Res.ExitCode > 128:
		d.Status, d.Message = StatusError, fmt.Sprintf("killed by signal %d (exit %d)", o.Res.ExitCode-128, o.Res.ExitCode)
		return fail(d)
	case !ok:
		d.Status, d.Message = StatusError, fmt.Sprintf("exit %d is not in the protocol (0 ok, 1 fail, 2 warn)", o.Res.ExitCode)
		if summary != "" {
			d.Message += ": " + summary
		}
		return fail(d)
	case err != nil:
		d.Status, d.Message = StatusError, "printed garbage: "+err.Error()
		return fail(d)
	}
	for _, dev := range devices {
		if dev.Status.Worse(st) {
			d.Status = StatusError
			d.Message = fmt.Sprintf("exit %d (%s) but its line for %s says %s", o.Res.ExitCode, st, dev.Device, dev.Status)
			return fail(d)
		}
	}
	d.Status, d.Observed = st, fmt.Sprintf("exit %d", o.Res.ExitCode)
	d.Message = cmp.Or(summary, map[Status]string{StatusOK: "ok", StatusWarn: "warned (exit 2) without a summary", StatusFail: "failed (exit 1) without a summary"}[st])
	if st == StatusFail {
		d.Remedy = siteRemedy(o.Check.Remedy)
	}
	return append([]Detail{d}, devices...)
}

// siteExitStatus maps a site check's exit status to a status by the protocol.
func siteExitStatus(code int) (Status, bool) {
	switch code {
	case 0:
		return StatusOK, true
	case 1:
		return StatusFail, true
	case 2:
		return StatusWarn, true
	}
	return StatusError, false
}

// siteRemedy is the remedy a site check's entry names, admin where it names none.
func siteRemedy(r string) Remedy {
	if r := Remedy(r); r.Valid() {
		return r
	}
	return remedyOf(faultSiteFail)
}

// siteFirstLine is the summary: the first line of out, trimmed and cut at siteLineLimit. Output
// that is not UTF-8 text (a NUL, an escape sequence, a binary) is an error: it is no summary
// an admin can read, and what went wrong is better said than guessed.
func siteFirstLine(out string) (string, error) {
	if !utf8.ValidString(out) {
		return "", errors.New("output is not UTF-8 text")
	}
	for i, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f {
			return "", fmt.Errorf("control character %U at byte %d", r, i)
		}
	}
	first, _, _ := strings.Cut(out, "\n")
	return siteClip(first), nil
}

// siteClip trims s to one line of at most siteLineLimit bytes, cut at a rune.
func siteClip(s string) string {
	s = strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ", "\t", " ").Replace(s))
	if len(s) <= siteLineLimit {
		return s
	}
	cut := siteLineLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// siteLine is one JSON line of a site check's output.
type siteLine struct {
	Device  string `json:"device"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Remedy  string `json:"remedy"`
}

// parseSiteLines reads the JSON lines after the first line of out: each line that starts
// with '{' must be an object with a device and a status of ok, warn or fail; other lines are
// free text and ignored. A failing device takes the remedy its line names, else def.
func parseSiteLines(out, check string, def Remedy) ([]Detail, error) {
	lines := strings.Split(out, "\n")
	var ds []Detail
	for n, l := range lines {
		l = strings.TrimSpace(l)
		if n == 0 || !strings.HasPrefix(l, "{") {
			continue
		}
		var sl siteLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sl); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object of device, status, message, remedy: %v", n+1, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: text after the JSON object", n+1)
		}
		st := Status(sl.Status)
		if st != StatusOK && st != StatusWarn && st != StatusFail {
			return nil, fmt.Errorf("line %d: status %q: use \"ok\", \"warn\" or \"fail\"", n+1, siteClip(sl.Status))
		}
		if strings.TrimSpace(sl.Device) == "" {
			return nil, fmt.Errorf("line %d: no device", n+1)
		}
		d := Detail{Device: check + ": " + siteClip(sl.Device), Status: st, Message: cmp.Or(siteClip(sl.Message), string(st))}
		if st == StatusFail {
			d.Remedy = def
			if sl.Remedy != "" {
				if r := Remedy(sl.Remedy); r.Valid() {
					d.Remedy = r
				} else {
					return nil, fmt.Errorf("line %d: remedy %q: use reset_gpu, reboot, admin or service", n+1, siteClip(sl.Remedy))
				}
			}
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func (siteChecks) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultSiteFail, "a site check exits 1 (fail) and neither its [[site_check]] remedy nor its JSON line names a remedy", RemedyAdmin,
			"the site wrote the check and knows what its failure needs; without its word a person looks"},
	}}
}

// Explain is what `nodecheck explain site_checks` says.
func (siteChecks) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The output and exit status of each [[site_check]] command of nodecheck.toml that runs in this mode, run without a shell, in /, with PATH=/usr/sbin:/usr/bin:/sbin:/bin and LANG=C only, as its user, all at once, each killed with its process group at its timeout.",
		},
		Passes: "Every site check that runs in this mode exits 0.",
		Warns:  "A site check exits 2.",
		Fails:  "A site check exits 1; the summary is the first line it printed.",
		Skips:  "nodecheck.toml has no [[site_check]], or none runs in this mode.",
		Errors: "A site check hangs past its timeout (it is killed, with its children), floods its output (over 64 KiB), prints what is not text or a JSON line that is not the protocol's, exits with any other status (137: killed), is not installed, or its user is unknown.",
		Fix: []string{
			"Run the command by hand as its user with env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C and read its first line; docs/nhc.md describes the protocol.",
		},
	}
}
