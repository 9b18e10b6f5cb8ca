package checks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idIBPorts = "ib_ports"

// The ways ib_ports fails: its rows of the remedy table (Faults).
const (
	faultIBNoLink   fault = "ib_ports/no_link"
	faultIBDisabled fault = "ib_ports/disabled"
	faultIBNotSM    fault = "ib_ports/not_active"
	faultIBSlow     fault = "ib_ports/slow"
	faultIBMissing  fault = "ib_ports/missing"
)

// srcIBSysfs is the source of the rows of a port state.
const srcIBSysfs = "the IBTA port states as sysfs shows them (Linux ABI sysfs-class-infiniband)"

// IB port states as the kernel numbers them in /sys/class/infiniband/*/ports/*/state and
// phys_state (include/rdma/ib_verbs.h: IB_PORT_ACTIVE = 4; phys_state 5 = LinkUp, 3 =
// Disabled: a port turned off by management).
const (
	ibStateActive       = 4
	ibPhysStateLinkUp   = 5
	ibPhysStateDisabled = 3
)

// ibPorts checks that every InfiniBand (and RoCE) port is ACTIVE and LinkUp at the expected
// rate, and that the expected number of ports is present. It never reads port counters:
// on some ConnectX-7 cards that floods the kernel log.
type ibPorts struct{}

func (ibPorts) ID() string { return idIBPorts }

func (ibPorts) Description() string {
	return "InfiniBand/RoCE ports are ACTIVE and LinkUp, at least min_rate_gbps, expected_ports present"
}

// ibPortsConfig is [checks.ib_ports].
type ibPortsConfig struct {
	config.CheckCommon
	MinRateGbps       float64  `toml:"min_rate_gbps"`       // 0: no minimum
	ExpectedPorts     int      `toml:"expected_ports"`      // 0: no expectation on the count
	Devices           []string `toml:"devices"`             // judge only these devices (mlx5_0) or ports (mlx5_0/1); empty: all
	ExcludeDevices    []string `toml:"exclude_devices"`     // never judge these devices or ports
	ExcludeLinkLayers []string `toml:"exclude_link_layers"` // e.g. ["Ethernet"] to leave RoCE ports out
}

func (ibPorts) Section() config.Section {
	return &ibPortsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (ib *ibPortsConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	add := func(key, format string, args ...any) { errs = append(errs, config.Problemf(key, format, args...)) }
	if r := ib.MinRateGbps; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		add("min_rate_gbps", " = %v: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR", r)
	}
	if ib.ExpectedPorts < 0 {
		add("expected_ports", " = %d: give a count of 0 (no expectation) or more", ib.ExpectedPorts)
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"devices", ib.Devices}, {"exclude_devices", ib.ExcludeDevices}} {
		for _, d := range l.list {
			if !validIBSelector(d) {
				add(l.key, ": %q is neither a device (mlx5_0) nor a port (mlx5_0/1)", d)
			}
		}
	}
	for _, ll := range ib.ExcludeLinkLayers {
		// The check compares with sysfs link_layer ignoring case, so "ethernet" works too.
		if !strings.EqualFold(ll, "InfiniBand") && !strings.EqualFold(ll, "Ethernet") {
			add("exclude_link_layers", ": %q is not a link layer; use \"InfiniBand\" or \"Ethernet\" (as in /sys/class/infiniband/*/ports/*/link_layer)", ll)
		}
	}
	// By key, as the problems of one line (or of a config without lines) are listed.
	slices.SortStableFunc(errs, func(a, b config.Problem) int { return strings.Compare(a.Key, b.Key) })
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

func (ibPorts) Run(ctx context.Context, env *Env) Result {
	cfg := settings[*ibPortsConfig](env.Config, idIBPorts)
	all, err := env.Facts.IBPorts(ctx)
	if err != nil && ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out reading /sys/class/infiniband", Err: err, Remedy: remedyOf(faultTimeout)}
	}
	if err != nil {
		return Result{Status: StatusError, Summary: "read /sys/class/infiniband: " + err.Error(), Err: err}
	}
	var judged []node.IBPort
	excluded := 0
	for _, p := range all {
		if selectedIBPort(p, cfg) {
			judged = append(judged, p)
		} else {
			excluded++
		}
	}
	exclNote := ""
	if excluded > 0 {
		exclNote = fmt.Sprintf(" (%d excluded by config)", excluded)
	}
	if len(judged) == 0 {
		if cfg.ExpectedPorts > 0 {
			return Result{Status: StatusFail, Remedy: remedyOf(faultIBMissing),
				Summary:  fmt.Sprintf("no InfiniBand port found, expected %d%s", cfg.ExpectedPorts, exclNote),
				Observed: "0 ports", Expected: fmt.Sprintf("%d ports", cfg.ExpectedPorts)}
		}
		if excluded > 0 {
			return Result{Status: StatusSkip, Summary: fmt.Sprintf("all %d ports under /sys/class/infiniband are excluded by config", excluded)}
		}
		return Result{Status: StatusSkip, Summary: "no InfiniBand devices under /sys/class/infiniband"}
	}

	res := Result{Status: StatusOK}
	var bad []Detail
	for _, p := range judged {
		d := judgeIBPort(p, cfg.MinRateGbps)
		if d.Status != StatusOK {
			bad = append(bad, d)
		}
		res.Details = append(res.Details, d)
	}
	if cfg.ExpectedPorts > 0 {
		res.Expected = fmt.Sprintf("%d ports", cfg.ExpectedPorts)
		res.Observed = fmt.Sprintf("%d ports", len(judged))
		if len(judged) < cfg.ExpectedPorts {
			// The missing port comes first in the summary: a vanished HCA is the bigger fault.
			d := Detail{Device: "ports", Status: StatusFail, Remedy: remedyOf(faultIBMissing),
				Message:  fmt.Sprintf("%d of %d expected ports present%s", len(judged), cfg.ExpectedPorts, exclNote),
				Observed: strconv.Itoa(len(judged)), Expected: strconv.Itoa(cfg.ExpectedPorts)}
			bad = append([]Detail{d}, bad...)
			res.Details = append(res.Details, d)
		} else if len(judged) > cfg.ExpectedPorts {
			d := Detail{Device: "ports", Status: StatusWarn,
				Message:  fmt.Sprintf("%d ports present, expected_ports is %d%s", len(judged), cfg.ExpectedPorts, exclNote),
				Observed: strconv.Itoa(len(judged)), Expected: strconv.Itoa(cfg.ExpectedPorts)}
			bad = append(bad, d)
			res.Details = append(res.Details, d)
		}
	}
	if len(bad) > 0 {
		res.Status = worstOf(bad)
		first := bad[0]
		prefix := first.Device + ": "
		if first.Device == "ports" {
			prefix = ""
		}
		res.Summary, res.Subject = prefix+first.Message+moreSuffix(len(bad)-1), first.Subject
		return res
	}
	rate := ""
	if cfg.MinRateGbps > 0 {
		rate = fmt.Sprintf(", all at least %s Gb/s", fmtGbps(cfg.MinRateGbps))
	}
	res.Summary = fmt.Sprintf("%d ports ACTIVE/LinkUp%s%s", len(judged), rate, exclNote)
	return res
}

// judgeIBPort names the first thing wrong with a port. A port that is down is not also blamed
// for its rate: down ports report a meaningless rate (often 40 Gb/s). A state, phys_state or
// rate (where min_rate is set) that could not be read is an error: the port was not looked at.
func judgeIBPort(p node.IBPort, minRate float64) Detail {
	d := Detail{Device: p.Name(), Status: StatusOK, Subject: Subject{IB: IBPortRef{Device: p.Device, Port: int(p.Port)}},
		Observed: fmt.Sprintf("%s/%s %s", p.State, p.PhysState, p.Rate),
		Expected: "ACTIVE/LinkUp"}
	if minRate > 0 {
		d.Expected += fmt.Sprintf(" >= %s Gb/s", fmtGbps(minRate))
	}
	var wrong, unread []string
	for _, a := range []struct {
		file, name string
		id, want   uint
	}{{"state", p.State, p.StateID, ibStateActive}, {"phys_state", p.PhysState, p.PhysStateID, ibPhysStateLinkUp}} {
		switch {
		case a.name == "":
			unread = append(unread, a.file) // no such file: the port was not read
		case a.id != a.want:
			wrong = append(wrong, a.file+" "+a.name)
		}
	}
	switch {
	case len(wrong) > 0:
		failDetail(&d, ibPortFault(p))
		d.Message = strings.Join(wrong, ", ") + ", want ACTIVE/LinkUp"
	case len(unread) > 0:
		d.Status = StatusError
		d.Message = strings.Join(unread, " and ") + " not readable in sysfs: the port's state not judged"
	case minRate > 0 && p.RateGbps <= 0:
		// An ACTIVE port always has a rate; none, or one that does not read as a number,
		// is a reading that failed, not a slow port.
		d.Status = StatusError
		d.Message = fmt.Sprintf("rate %q not readable in sysfs: not judged against %s Gb/s", p.Rate, fmtGbps(minRate))
	case minRate > 0 && p.RateGbps < minRate:
		failDetail(&d, faultIBSlow)
		d.Message = fmt.Sprintf("rate %s Gb/s, want at least %s", fmtGbps(p.RateGbps), fmtGbps(minRate))
	default:
		d.Message = fmt.Sprintf("ACTIVE/LinkUp %s Gb/s %s", fmtGbps(p.RateGbps), p.LinkLayer)
	}
	return d
}

// ibPortFault is why a port is not ACTIVE/LinkUp: no physical link (Polling and the other
// training states: a cable, transceiver or switch port; and Disabled on a RoCE port, which
// the RoCE drivers report for a netdev without carrier), an InfiniBand port management
// disabled, or a link up that the subnet manager has not activated.
func ibPortFault(p node.IBPort) fault {
	switch {
	case p.PhysStateID == ibPhysStateDisabled && !strings.EqualFold(p.LinkLayer, "Ethernet"):
		return faultIBDisabled
	case p.PhysStateID != ibPhysStateLinkUp:
		return faultIBNoLink
	}
	return faultIBNotSM
}

// selectedIBPort applies devices, exclude_devices and exclude_link_layers. A device entry
// names a whole device (mlx5_0) or one port (mlx5_0/1).
func selectedIBPort(p node.IBPort, cfg *ibPortsConfig) bool {
	matches := func(list []string) bool {
		return slices.Contains(list, p.Device) || slices.Contains(list, p.Name())
	}
	if len(cfg.Devices) > 0 && !matches(cfg.Devices) {
		return false
	}
	if matches(cfg.ExcludeDevices) {
		return false
	}
	for _, ll := range cfg.ExcludeLinkLayers {
		if strings.EqualFold(ll, p.LinkLayer) {
			return false
		}
	}
	return true
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func fmtGbps(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Faults declares the check's own rows of the remedy table.
func (ibPorts) Faults() Faults {
	return Faults{
		own: []remedyRow{
			{faultIBNoLink, "a port without a physical link: phys_state Polling or any other but LinkUp, and Disabled on a RoCE (Ethernet) port", RemedyService,
				srcIBSysfs + ": Polling is a port seeking a peer; the RoCE drivers report Disabled for a netdev without carrier (drivers/infiniband/hw/mlx5/main.c, mlx5_query_port_roce; ip link tells one set down by hand): reseat or replace the cable or transceiver, or fix the switch port"},
			{faultIBDisabled, "an InfiniBand port Disabled (phys_state 3)", RemedyAdmin,
				srcIBSysfs + ": Disabled is a port turned off by management: enable it again (ibportstate, mlxlink) after finding who disabled it and why (the subnet manager's log)"},
			{faultIBNotSM, "a port LinkUp but not ACTIVE (DOWN, INIT, ARMED)", RemedyAdmin, srcIBSysfs + ": INIT and ARMED are a link the subnet manager has not activated: check the subnet manager"},
			{faultIBSlow, "a port below min_rate_gbps", RemedyService,
				"a link trained down runs on a cable or transceiver that cannot hold the speed: reseat or replace it (mlxlink shows the errors)"},
			{faultIBMissing, "fewer ports than expected_ports: an HCA vanished", RemedyService,
				"an HCA that does not enumerate is reseated, reflashed (mlxfwmanager) or replaced"},
		},
	}
}

// Explain is what `nodecheck explain ib_ports` says.
func (ibPorts) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/sys/class/infiniband/DEVICE/ports/PORT: state, phys_state, rate and link_layer of every port, RoCE ports included. Never the port counters: reading them floods the kernel log on some ConnectX-7 cards.",
		},
		Passes: "Every port judged (after devices and the exclusions) is ACTIVE and LinkUp, at min_rate_gbps or faster, and there are at least expected_ports of them.",
		Warns:  "There are more ports than expected_ports (a new HCA, or expected_ports set too low).",
		Fails:  "A port is not ACTIVE (DOWN; INIT or ARMED: the subnet manager has not brought it up) or not LinkUp (Polling: no cable or no peer; Disabled), runs below min_rate_gbps (a link trained down, NDR at HDR), or fewer than expected_ports ports are present (an HCA that vanished).",
		Skips:  "There is no device under /sys/class/infiniband, or every port is excluded by config and expected_ports is 0.",
		Errors: "/sys/class/infiniband cannot be read, or a port's state or phys_state, or its rate where min_rate_gbps is set, cannot be read.",
		Keys: map[string]string{
			"min_rate_gbps":       `Lowest acceptable rate in Gb/s, as in the port's rate file ("400 Gb/sec (4X NDR)"): 100 for EDR, 200 for HDR, 400 for NDR. 0: no minimum.`,
			"expected_ports":      "How many ports must be present, after devices and the exclusions. 0: any number.",
			"devices":             `Judge only these devices ("mlx5_0") or ports ("mlx5_0/1"). Empty: all of them.`,
			"exclude_devices":     "Never judge these devices or ports, e.g. a storage HCA that is allowed to be down.",
			"exclude_link_layers": `Leave out the ports of these link layers: "InfiniBand" or "Ethernet" (RoCE ports).`,
		},
		Fix: []string{
			"ibstat DEVICE PORT: State, Physical state and Rate as the HCA sees them.",
			"Physical state Polling or Disabled: reseat the cable at both ends, check the switch port (enabled, up, its error counters), and swap in a known-good cable or transceiver; replace the part at fault.",
			"LinkUp but state INIT or ARMED: the subnet manager has not activated the port: check the subnet manager (sminfo; OpenSM or UFM logs) and the switch.",
			"Rate too low: a cable or transceiver that cannot run the speed, or a port that trained down: reseat or replace the cable (mlxlink -d DEVICE shows the negotiated speed and the errors).",
			"A port missing: lspci | grep -i mellanox, dmesg | grep -i mlx5; the HCA may need reseating, a firmware update (mlxfwmanager) or replacement.",
		},
	}
}
