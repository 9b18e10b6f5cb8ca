package checks

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

const idInterfaces = "interfaces"

// faultIfaceDown is interfaces' row of the remedy table.
const faultIfaceDown fault = "interfaces/down"

// interfaces checks network interfaces, Ethernet and IPoIB alike: that the listed ones exist
// (/proc/net/dev, NHC's check_hw_eth) and that the listed ones are up (the kernel's
// operstate in /sys/class/net/IF/operstate, RFC 2863's ifOperStatus).
type interfaces struct{}

func (interfaces) ID() string { return idInterfaces }

func (interfaces) Description() string {
	return "the network interfaces listed exist (/proc/net/dev) and are up (/sys/class/net/IF/operstate)"
}

// interfacesConfig is [checks.interfaces].
type interfacesConfig struct {
	config.CheckCommon
	// Present lists interfaces that must exist: names or globs ("eno1", "ib*"), as NHC's
	// check_hw_eth takes them.
	Present []string `toml:"present"`
	// Up lists interfaces that must exist and be up; a glob means every interface it
	// matches, and at least one.
	Up []string `toml:"up"`
}

// Section: nothing listed, since interface names differ from site to site (eno1, ens3f0,
// ib0); ib_ports judges the InfiniBand ports themselves.
func (interfaces) Section() config.Section {
	return &interfacesConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (c *interfacesConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for key, list := range map[string][]string{"present": c.Present, "up": c.Up} {
		for i, n := range list {
			if n == "" || strings.ContainsAny(n, "/ \t") || n == "." || n == ".." {
				out = append(out, config.Problemf(key, "[%d] = %q: give an interface name or a glob, such as \"ib0\" or \"ib*\"", i, n))
			}
		}
	}
	return out
}

// parseNetDev lists the interface names of /proc/net/dev: each line after the two header
// lines is "NAME: counters...".
func parseNetDev(b []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		if n <= 2 {
			continue
		}
		name, _, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("net/dev:%d: no \"NAME:\"", n)
		}
		out = append(out, strings.TrimSpace(name))
	}
	return out, sc.Err()
}

func (interfaces) Run(ctx context.Context, env *Env) Result {
	set := settings[*interfacesConfig](env.Config, idInterfaces)
	if len(set.Present) == 0 && len(set.Up) == 0 {
		return Result{Status: StatusSkip, Summary: "no interfaces listed in [checks.interfaces]"}
	}
	b, err := env.Facts.ReadFile(ctx, "/proc/net/dev")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "no /proc/net/dev: not recorded in this snapshot, or /proc is not mounted"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read /proc/net/dev", Err: err}
	}
	names, err := parseNetDev(b)
	if err != nil {
		return Result{Status: StatusError, Summary: "could not parse /proc/net/dev", Err: fmt.Errorf("/proc/%w", err)}
	}
	state := map[string]string{}
	for _, n := range names {
		if !matchesAny(set.Up, n) {
			continue
		}
		s, err := env.Facts.ReadFile(ctx, "/sys/class/net/"+n+"/operstate")
		switch {
		case err == nil:
			state[n] = strings.TrimSpace(string(s))
		case errors.Is(err, fs.ErrNotExist):
			state[n] = ""
		default:
			return Result{Status: StatusError, Summary: fmt.Sprintf("could not read %s's operstate", n), Err: err}
		}
	}
	return judgeInterfaces(names, state, set.Present, set.Up)
}

func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if matchPattern(g, name) {
			return true
		}
	}
	return false
}

// judgeInterfaces judges the wanted interfaces against the names in /proc/net/dev and the
// operstates read for those Up matches ("" where sysfs has none).
func judgeInterfaces(names []string, state map[string]string, present, up []string) Result {
	var res Result
	for _, p := range present {
		d := Detail{Device: p, Expected: "present"}
		if !anyMatch(names, p) {
			d.Observed, d.Message = "absent", "not detected in /proc/net/dev"
			failDetail(&d, faultIfaceDown)
		} else {
			d.Status, d.Observed, d.Message = StatusOK, "present", "present"
		}
		res.Details = append(res.Details, d)
	}
	for _, u := range up {
		if !anyMatch(names, u) {
			d := Detail{Device: u, Expected: "up", Observed: "absent", Message: "not detected in /proc/net/dev"}
			failDetail(&d, faultIfaceDown)
			res.Details = append(res.Details, d)
			continue
		}
		for _, n := range names {
			if !matchPattern(u, n) {
				continue
			}
			d := Detail{Device: n, Expected: "up", Observed: state[n]}
			switch st := state[n]; st {
			case "up":
				d.Status, d.Message = StatusOK, "up"
			case "":
				d.Status, d.Message = StatusError, "no operstate in /sys/class/net"
			default:
				d.Message = fmt.Sprintf("%s, want up", st)
				failDetail(&d, faultIfaceDown)
			}
			res.Details = append(res.Details, d)
		}
	}
	return settleDetails(res, fmt.Sprintf("%s as listed", countNoun(len(res.Details), "interface", "interfaces")))
}

func anyMatch(names []string, glob string) bool {
	for _, n := range names {
		if matchPattern(glob, n) {
			return true
		}
	}
	return false
}

func (interfaces) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultIfaceDown, "a listed network interface is missing, or not up", RemedyAdmin,
			"NHC check_hw_eth: a cable, a switch port, a driver that did not load or a renamed interface; a person looks (ip link, ethtool, dmesg)"},
	}}
}

// Explain is what `nodecheck explain interfaces` says.
func (interfaces) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/proc/net/dev: the names of the network interfaces, Ethernet and IPoIB alike.",
			"/sys/class/net/IF/operstate of each interface up lists.",
		},
		Passes: "Every interface present lists exists, and every one up lists exists and is up.",
		Fails:  "A listed interface (or, for a glob, any interface it matches) is missing, or one up lists is down, dormant, lowerlayerdown or unknown.",
		Skips:  "Nothing is listed (the default: interface names differ from site to site); a snapshot without /proc/net/dev.",
		Errors: "/proc/net/dev cannot be read or parsed, or an interface has no operstate.",
		Keys: map[string]string{
			"present": `Interfaces that must exist, names or globs ("eno1", "ib*"): NHC's check_hw_eth.`,
			"up":      `Interfaces that must exist and be up (operstate "up"); a glob means every interface it matches, and at least one.`,
		},
		Fix: []string{"ip link show IF and ethtool IF show the link; dmesg says why a driver or link went away."},
	}
}
