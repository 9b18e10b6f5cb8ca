package checks

import (
	"context"
	"fmt"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idIBFlaps = "ib_flaps"

// The ways ib_flaps fails: its rows of the remedy table (Faults).
const (
	faultIBFlaps fault = "ib_flaps/flaps"
)

// ibFlaps judges InfiniBand (and RoCE) link flaps over time, from the node's history: the
// link of a port going down again and again within a window, which one run's look at the
// port (ib_ports) misses when the link is up again by then. The downs come from the port's
// state as each run saw it, the kernel log's mlx5 link lines, and, opt-in,
// counters/link_downed; the source that saw the most counts (never their sum, which would
// count one down twice).
type ibFlaps struct{}

func (ibFlaps) ID() string { return idIBFlaps }

func (ibFlaps) Description() string {
	return "no InfiniBand/RoCE port whose link went down fail_at times within window (from the node's history)"
}

// observes: the ports' states, and the kernel log's link lines.
func (ibFlaps) observes() observed { return observed{kernelLog: true, ports: true} }

// judgementRemedy: a port that flaps is its cable, transceiver or switch port.
func (ibFlaps) judgementRemedy(history.Judgement) Remedy { return remedyOf(faultIBFlaps) }

// ibFlapsConfig is [checks.ib_flaps]. The defaults are Azure cyclecloud-healthagent's
// (healthagent/defaults.yaml at b8c76db): link_downed window_gt 10800 s, error 3, strikes 1,
// "IB link flapped 3+ times within a 3-hour window", one strike degrading the node until
// reboot.
type ibFlapsConfig struct {
	config.CheckCommon
	Window time.Duration `toml:"window"`
	WarnAt int           `toml:"warn_at"`
	FailAt int           `toml:"fail_at"`
	// Sticky keeps a port that failed failed until the node reboots or an admin clears it.
	Sticky bool `toml:"sticky"`
	// LinkDownedCounter also reads ports/N/counters/link_downed at every run: off by
	// default, since reading port counters floods the kernel log on some ConnectX-7 cards.
	LinkDownedCounter bool `toml:"link_downed_counter"`
}

// Section runs the check in health and manual modes: a prolog does not read the history.
func (ibFlaps) Section() config.Section {
	r := history.DefaultRules()
	return &ibFlapsConfig{
		CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: []string{"health", "manual"}},
		Window:      r.FlapWindow, WarnAt: r.FlapWarn, FailAt: r.FlapFail, Sticky: r.FlapSticky,
	}
}

// ValidateSection implements config.SectionValidator.
func (f *ibFlapsConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	if f.Window <= 0 {
		errs = append(errs, config.Problemf("window", ` = "%s": give a window such as "3h"`, f.Window))
	}
	for _, k := range []struct {
		key string
		n   int
	}{{"fail_at", f.FailAt}, {"warn_at", f.WarnAt}} {
		if k.n < 0 {
			errs = append(errs, config.Problemf(k.key, " = %d: give a count of link downs, or 0 to turn this level off", k.n))
		}
	}
	if f.WarnAt > 0 && f.FailAt > 0 && f.WarnAt > f.FailAt {
		errs = append(errs, config.Problemf("warn_at", " = %d is above fail_at = %d: a port would fail before it warns", f.WarnAt, f.FailAt))
	}
	return errs
}

// rules puts the section onto the history's defaults.
func (f *ibFlapsConfig) rules(r history.Rules) history.Rules {
	r.FlapWindow, r.FlapWarn, r.FlapFail, r.FlapSticky = f.Window, f.WarnAt, f.FailAt, f.Sticky
	return r
}

func (ibFlaps) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*ibFlapsConfig](env.Config, idIBFlaps)
	h, res, ok := env.history.usable("link flaps")
	if !ok {
		return res
	}
	if err := env.history.portsErr; err != nil {
		// The run could not see the ports' states; the history's downs still count.
		js := h.JudgeFlaps(env.history.now, cfg.rules(history.DefaultRules()))
		if res := env.history.overTimeResult(js, ibFlaps{}.judgementRemedy, "", ""); res.Status == StatusFail {
			return res
		}
		return Result{Status: StatusError, Summary: "cannot read the InfiniBand ports: " + text.OneLine(err.Error(), 160), Err: err}
	}
	if env.history.ports == 0 {
		return Result{Status: StatusSkip, Summary: "no InfiniBand or RoCE port here (nothing under /sys/class/infiniband)"}
	}
	js := h.JudgeFlaps(env.history.now, cfg.rules(history.DefaultRules()))
	if len(js) == 0 {
		return Result{Status: StatusSkip, Summary: "no InfiniBand or RoCE port seen in this boot"}
	}
	return env.history.overTimeResult(js, ibFlaps{}.judgementRemedy, judgeFlapsOK(js, cfg), fmt.Sprintf("fewer than %d link downs per port within %s", cfg.FailAt, history.Human(cfg.Window)))
}

// judgeFlapsOK is the summary when no port flapped.
func judgeFlapsOK(js []history.Judgement, cfg *ibFlapsConfig) string {
	return fmt.Sprintf("%s: no link down within %s", countNoun(len(js), "port", "ports"), history.Human(cfg.Window))
}

// Faults declares the check's own rows of the remedy table.
func (ibFlaps) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultIBFlaps, "a port that went down and up again too often in the window (history)", RemedyService,
				"a link that keeps going down and up is a cable, transceiver or switch port to reseat or replace"},
		},
	}
}

// Explain is what `nodecheck explain ib_flaps` says.
func (ibFlaps) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The node's history (<state dir>/history/<node>.json), with what this run adds: each port's state and phys_state from /sys/class/infiniband (a new entry whenever they change between runs), and the kernel log's mlx5 \"Link down\"/\"Link up\" lines with their kernel times (dmesg, as xid_errors runs it).",
			"With link_downed_counter = true, also ports/N/counters/link_downed at every run.",
		},
		Passes: "No port's link went down within the window, by any source.",
		Warns:  "A port's link went down warn_at times (default once) within the window: the summary says when and from which source.",
		Fails:  "A port's link went down fail_at times (default 3) within the window (default 3 h): Azure cyclecloud-healthagent's rule, \"IB link flapped 3+ times within a 3-hour window\". With sticky (the default) the port stays failed until the node reboots (a new boot id) or an admin runs nodecheck history clear --port DEVICE/PORT.",
		Skips:  "No history is kept in this run (a snapshot replay without --state-dir, [state] dir empty), the run had no boot id, or no port was seen in this boot.",
		Errors: "A state directory is configured but cannot be used (not root-owned, writable by others, a symlink, cannot be created): the summary names it and the fix.",
		Keys: map[string]string{
			"window":              "How far back link downs are counted.",
			"warn_at":             "Link downs within the window that warn; 0 never warns.",
			"fail_at":             "Link downs within the window that fail; 0 never fails.",
			"sticky":              "Keep a port that failed failed until reboot or nodecheck history clear.",
			"link_downed_counter": "Also read ports/N/counters/link_downed (off by default: reading port counters floods the kernel log on some ConnectX-7 cards).",
		},
		Fix: []string{
			"nodecheck history --port DEVICE/PORT: when the link went down, from which source.",
			"Reseat or replace the cable or transceiver, and look at the switch port's error counters (ibdiagnet, the fabric manager's logs).",
			"nodecheck history clear --port DEVICE/PORT --reason \"...\" once it is fixed (or reboot the node).",
			fmt.Sprintf(afterFix, idIBFlaps),
		},
	}
}
