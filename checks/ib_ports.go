package checks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idIBPorts = "ib_ports"

// IB port states as the kernel numbers them in /sys/class/infiniband/*/ports/*/state and
// phys_state (include/rdma/ib_verbs.h: IB_PORT_ACTIVE = 4; phys_state 5 = LinkUp).
const (
	ibStateActive     = 4
	ibPhysStateLinkUp = 5
)

// ibPorts checks that every InfiniBand (and RoCE) port is ACTIVE and LinkUp at the expected
// rate, and that the expected number of ports is present. It never reads port counters:
// on some ConnectX-7 cards that floods the kernel log.
type ibPorts struct{}

func (ibPorts) ID() string { return idIBPorts }

func (ibPorts) Description() string {
	return "InfiniBand/RoCE ports are ACTIVE and LinkUp, at least min_rate_gbps, expected_ports present"
}

func (ibPorts) Settings(cfg *config.Config) config.CheckCommon {
	return cfg.Checks.IBPorts.CheckCommon
}

func (ibPorts) Run(ctx context.Context, env *Env) Result {
	cfg := env.Config.Checks.IBPorts
	all, err := env.Facts.IBPorts(ctx)
	if err != nil && ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out reading /sys/class/infiniband", Err: err}
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
			return Result{Status: StatusFail,
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
			d := Detail{Device: "ports", Status: StatusFail,
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
		res.Summary = prefix + first.Message + moreSuffix(len(bad)-1)
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
// for its rate: down ports report a meaningless rate (often 40 Gb/s).
func judgeIBPort(p node.IBPort, minRate float64) Detail {
	d := Detail{Device: p.Name(), Status: StatusOK,
		Observed: fmt.Sprintf("%s/%s %s", p.State, p.PhysState, p.Rate),
		Expected: "ACTIVE/LinkUp"}
	if minRate > 0 {
		d.Expected += fmt.Sprintf(" >= %s Gb/s", fmtGbps(minRate))
	}
	var wrong []string
	if p.StateID != ibStateActive {
		wrong = append(wrong, "state "+orUnknown(p.State))
	}
	if p.PhysStateID != ibPhysStateLinkUp {
		wrong = append(wrong, "phys_state "+orUnknown(p.PhysState))
	}
	switch {
	case len(wrong) > 0:
		d.Status = StatusFail
		d.Message = strings.Join(wrong, ", ") + ", want ACTIVE/LinkUp"
	case minRate > 0 && p.RateGbps < minRate:
		d.Status = StatusFail
		d.Message = fmt.Sprintf("rate %s Gb/s, want at least %s", fmtGbps(p.RateGbps), fmtGbps(minRate))
	default:
		d.Message = fmt.Sprintf("ACTIVE/LinkUp %s Gb/s %s", fmtGbps(p.RateGbps), p.LinkLayer)
	}
	return d
}

// selectedIBPort applies devices, exclude_devices and exclude_link_layers. A device entry
// names a whole device (mlx5_0) or one port (mlx5_0/1).
func selectedIBPort(p node.IBPort, cfg config.IBPortsConfig) bool {
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
