// Package drill proves on a real node that detection works end to end, without harming it:
// it replays a failing snapshot in place of the node's facts, with the node's own
// nodecheck.toml and its real Slurm, and expects the drain with the right reason and remedy,
// the metrics in a textfile beside the node's own, and (given Prometheus's address) the
// series scraped and the alert pending and firing; then it resumes the node, takes its
// textfile away and, with Prometheus, sees the alert resolve. Each step is reported with its
// time. It never touches a node it did not drain: a node out of service before the drill, or
// whose reason changed during it, is left as it is. It reads no hardware: the snapshot stands
// in for the node's facts, and the drill keeps no history of the node (a state directory of
// its own, removed at the end).
package drill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/drain"
)

// DefaultAlert is the alert the drill waits for: the shipped rules' alert for a failing check
// (/usr/share/nodecheck/prometheus/nodecheck.rules.yml).
const DefaultAlert = "NodecheckNodeUnhealthy"

// DefaultAlertTimeout covers the shipped NodecheckNodeUnhealthy's `for: 10m`, a scrape and an
// evaluation at one minute each, and a margin.
const DefaultAlertTimeout = 15 * time.Minute

// TextfileName is the drill's own textfile, beside the node's prom_file: its series carry
// drill="1", so node_exporter reads both files without two series alike.
const TextfileName = "nodecheck-drill.prom"

// Options say what to drill.
type Options struct {
	Node     string // the Slurm node to drill; required
	Snapshot string // a failing snapshot (nodecheck snapshot --out) to replay; required
	// ConfigPath is the node's nodecheck.toml; "" is config.DefaultConfigPath, or the built-in
	// defaults where it does not exist (never the snapshot's).
	ConfigPath string
	// PromFile is the drill's textfile; "" is TextfileName in prom_file's directory.
	PromFile string
	// Prometheus is the base URL of the Prometheus that scrapes the node's node_exporter
	// (http://host:9090); "" skips the steps that ask it.
	Prometheus   string
	Alert        string        // the alert to wait for; "" is DefaultAlert
	AlertTimeout time.Duration // how long to wait for it to fire, and to resolve; 0 is DefaultAlertTimeout
	Poll         time.Duration // between Prometheus queries; 0 is 2 s
	Getenv       func(string) string
	WorkDir      string
	Version      string
	Now          func() time.Time
}

// Step is one step of the drill.
type Step struct {
	Name   string        `json:"step"`
	OK     bool          `json:"ok"`
	Skip   bool          `json:"skipped,omitempty"`
	At     time.Duration `json:"-"` // since the drill began, at the step's end
	Took   time.Duration `json:"-"`
	Detail string        `json:"detail"`
	AtS    float64       `json:"at_s"`
	TookS  float64       `json:"took_s"`
}

// Result is the whole drill.
type Result struct {
	Node     string `json:"node"`
	Snapshot string `json:"snapshot"`
	// Reason is the drain reason the replay set; Check and Remedy are the replay's first
	// failure, which the reason must name.
	Reason string `json:"reason,omitempty"`
	Check  string `json:"check,omitempty"`
	Remedy string `json:"remedy,omitempty"`
	Steps  []Step `json:"steps"`
	OK     bool   `json:"ok"` // every step that ran passed
}

// drill is one run of the drill: its options, settings and the steps so far.
type drill struct {
	o       Options
	start   time.Time
	res     Result
	cfg     *config.Config // the node's effective nodecheck.toml
	cfgPath string         // the file the replay reads (a temporary empty one for the defaults)
	client  *drain.Client
	tmp     string // the drill's state directory and config
	prom    *promClient
}

// Run drills o.Node and returns every step; it never returns early without putting the node
// back: once the node is drained, the resume and the textfile's removal run even when ctx is
// done (each under its own deadline).
func Run(ctx context.Context, o Options) Result {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	o.Alert = cmp.Or(o.Alert, DefaultAlert)
	o.AlertTimeout = cmp.Or(o.AlertTimeout, DefaultAlertTimeout)
	o.Poll = cmp.Or(o.Poll, 2*time.Second)
	d := &drill{o: o, start: o.Now(), res: Result{Node: o.Node, Snapshot: o.Snapshot}}
	defer d.removeTmp()
	if !d.step("preflight", func() (string, error) { return d.preflight(ctx) }) {
		return d.finish()
	}
	drained := d.step("replay and drain", func() (string, error) { return d.replay(ctx) })
	if drained {
		d.step("metrics written", d.checkTextfile)
		if d.prom != nil {
			d.alertSteps(ctx)
		} else {
			d.skip("alert", "no --prometheus: the series and the alert are not checked")
		}
	}
	// Put back whatever the replay did, whatever happened since.
	back, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	d.step("resume", func() (string, error) { return d.resume(back) })
	d.step("metrics removed", d.removeTextfile)
	if drained && d.prom != nil {
		d.step("alert resolved", func() (string, error) { return d.waitResolved(back) })
	}
	return d.finish()
}

// step runs fn as the step name, records it, and reports whether it passed.
func (d *drill) step(name string, fn func() (string, error)) bool {
	begin := d.o.Now()
	detail, err := fn()
	s := Step{Name: name, OK: err == nil, Detail: detail, At: d.o.Now().Sub(d.start), Took: d.o.Now().Sub(begin)}
	if err != nil {
		s.Detail = err.Error()
	}
	d.res.Steps = append(d.res.Steps, s)
	return s.OK
}

func (d *drill) skip(name, why string) {
	d.res.Steps = append(d.res.Steps, Step{Name: name, OK: true, Skip: true, Detail: why, At: d.o.Now().Sub(d.start)})
}

func (d *drill) finish() Result {
	d.res.OK = true
	for i, s := range d.res.Steps {
		d.res.Steps[i].AtS = s.At.Round(time.Millisecond).Seconds()
		d.res.Steps[i].TookS = s.Took.Round(time.Millisecond).Seconds()
		d.res.OK = d.res.OK && s.OK
	}
	return d.res
}

func (d *drill) removeTmp() {
	if d.tmp != "" {
		_ = os.RemoveAll(d.tmp)
	}
}

// preflight reads the config and the node: the drill drains only a node in service with no
// reason of nodecheck's, so that whatever it finds drained afterwards is its own doing.
func (d *drill) preflight(ctx context.Context) (string, error) {
	if d.o.Node == "" || d.o.Snapshot == "" {
		return "", errors.New("give the node to drill and a failing snapshot to replay")
	}
	if err := d.loadConfig(ctx); err != nil {
		return "", err
	}
	if d.o.PromFile == "" {
		if d.cfg.PromFile == "" {
			return "", errors.New("no prom_file in nodecheck.toml and no --prom-file: the drill writes its metrics beside the node's, in node_exporter's textfile directory")
		}
		d.o.PromFile = filepath.Join(filepath.Dir(d.cfg.PromFile), TextfileName)
	}
	if d.o.Prometheus != "" {
		p, err := newPromClient(d.o.Prometheus)
		if err != nil {
			return "", err
		}
		d.prom = p
	}
	d.client = drain.ClientFrom(d.cfg, d.o.Getenv("SLURM_CONF"))
	n, err := d.client.Node(ctx, d.o.Node)
	if err != nil {
		return "", fmt.Errorf("read node %s: %w", d.o.Node, err)
	}
	if n.OutOfService() {
		return "", fmt.Errorf("node %s is %s (reason %q): the drill drains a node in service, and leaves this one alone", d.o.Node, n, n.Reason)
	}
	return fmt.Sprintf("node %s is %s; config %s; metrics to %s", d.o.Node, n, cmp.Or(d.cfg.Path, "built-in defaults"), d.o.PromFile), nil
}

// loadConfig reads the node's nodecheck.toml (its effective settings for the node), and makes
// the drill's temporary directory: its state directory, and an empty config standing for the
// built-in defaults, since a replay given no config would read the snapshot's.
func (d *drill) loadConfig(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "nodecheck-drill-")
	if err != nil {
		return fmt.Errorf("make the drill's directory: %w", err)
	}
	d.tmp = tmp
	path := d.o.ConfigPath
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(d.o.WorkDir, path)
	}
	cfg, _, err := config.LoadConfigData(ctx, cmp.Or(path, config.DefaultConfigPath), checks.Schema())
	switch {
	case err == nil:
		d.cfgPath = cfg.Path
	case path == "" && errors.Is(err, os.ErrNotExist):
		cfg, d.cfgPath = config.Default(checks.Schema()), filepath.Join(tmp, "nodecheck.toml")
		if err := os.WriteFile(d.cfgPath, nil, 0o600); err != nil {
			return fmt.Errorf("write the drill's empty config: %w", err)
		}
	default:
		return fmt.Errorf("read nodecheck.toml: %w", err)
	}
	if d.cfg, err = cfg.ForNode(d.o.Node); err != nil {
		return fmt.Errorf("nodecheck.toml for node %s: %w", d.o.Node, err)
	}
	return nil
}

// replay runs nodecheck on the snapshot as a manual run with --drain for the node, and
// checks the drain: the reason names the replay's first failure with its remedy, and Slurm
// shows it.
func (d *drill) replay(ctx context.Context) (string, error) {
	out := run.Run(ctx, run.Options{
		EnvOptions: run.EnvOptions{Mode: config.ModeManual, Argv0: "nodecheck", ConfigPath: d.cfgPath, SnapshotDir: d.o.Snapshot,
			NodeName: d.o.Node, Getenv: d.o.Getenv, WorkDir: d.o.WorkDir, StateDir: filepath.Join(d.tmp, "state")},
		Drain: true, PromFile: d.o.PromFile, Drill: true, Version: d.o.Version, Logger: run.Discard,
	})
	if out.Err != nil {
		return "", fmt.Errorf("replay %s: %w", d.o.Snapshot, out.Err)
	}
	failed := out.Report.Failed()
	if out.Report.Verdict != checks.VerdictUnhealthy || len(failed) == 0 {
		return "", fmt.Errorf("the replay of %s is %s, not unhealthy: a drill needs a failing snapshot", d.o.Snapshot, out.Report.Verdict)
	}
	d.res.Check, d.res.Remedy = failed[0].Check, string(failed[0].Remedy)
	if out.Drain == nil || out.Drain.Action != drain.ActionDrained {
		what := "no drain action (is [drain] enabled?)"
		if out.Drain != nil {
			what = fmt.Sprintf("%s: %s", out.Drain.Action, out.Drain.Message)
		}
		return "", fmt.Errorf("%s fails, but the node was not drained: %s", d.res.Check, what)
	}
	d.res.Reason = out.Drain.Reason
	if err := d.checkReason(d.res.Reason); err != nil {
		return "", err
	}
	n, err := d.client.Node(ctx, d.o.Node)
	switch {
	case err != nil:
		return "", fmt.Errorf("read node %s after the drain: %w", d.o.Node, err)
	case !n.Drained() || n.Reason != d.res.Reason:
		return "", fmt.Errorf("Slurm shows node %s as %s with reason %q, want drained with %q", d.o.Node, n, n.Reason, d.res.Reason)
	}
	return fmt.Sprintf("%s failed (remedy %s); Slurm shows %s %q", d.res.Check, cmp.Or(d.res.Remedy, "none"), n, n.Reason), nil
}

// checkReason: the reason is nodecheck's, and names the first failure's check and remedy.
func (d *drill) checkReason(reason string) error {
	prefix := d.cfg.Drain.ReasonPrefix
	check, _ := drain.ReasonCheck(reason, prefix)
	remedy, _ := drain.ReasonRemedy(reason)
	if !drain.Owned(reason, prefix) || check != d.res.Check || remedy != d.res.Remedy {
		return fmt.Errorf("drain reason %q: want %q, check %s, remedy %q", reason, prefix, d.res.Check, d.res.Remedy)
	}
	return nil
}

// resume puts the node back in service if it still carries the drill's drain; a node already
// back (resumed by someone, or by nodecheck's own health check) is fine; one under another
// reason now is left alone, and the step fails to say so.
func (d *drill) resume(ctx context.Context) (string, error) {
	if d.client == nil || d.res.Reason == "" {
		return "nothing to resume: the drill did not drain the node", nil
	}
	n, err := d.client.Node(ctx, d.o.Node)
	switch {
	case err != nil:
		return "", fmt.Errorf("read node %s: %w; resume it by hand if it still shows %q", d.o.Node, err, d.res.Reason)
	case !n.OutOfService():
		return fmt.Sprintf("node %s is already back in service (%s)", d.o.Node, n), nil
	case drain.ReasonBase(n.Reason) != drain.ReasonBase(d.res.Reason):
		return "", fmt.Errorf("node %s is %s with reason %q, no longer the drill's: left alone", d.o.Node, n, n.Reason)
	}
	if err := d.client.Update(ctx, drain.Update{Node: d.o.Node, State: "RESUME"}); err != nil {
		return "", fmt.Errorf("resume node %s: %w; resume it by hand: scontrol update NodeName=%s State=RESUME", d.o.Node, err, d.o.Node)
	}
	return fmt.Sprintf("scontrol update NodeName=%s State=RESUME", d.o.Node), nil
}

// removeTextfile takes the drill's textfile away: its series go stale at the next scrape, and
// the drill's alert resolves.
func (d *drill) removeTextfile() (string, error) {
	if d.o.PromFile == "" {
		return "no textfile", nil
	}
	if err := os.Remove(d.o.PromFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("remove %s: %w", d.o.PromFile, err)
	}
	return "removed " + d.o.PromFile, nil
}

// quote is s in PromQL double quotes.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
