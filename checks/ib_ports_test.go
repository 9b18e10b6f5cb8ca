package checks

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// Port values are the sysfs strings of real captures: the gpud H100 tree for healthy NDR
// ports and the BlueField bond, gpud's ibstat captures for Down/Disabled (rate 40) and
// Polling ports (corpus/ib, see SOURCES.md).
func ndr(dev string) node.IBPort {
	return node.IBPort{Device: dev, Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
		Rate: "400 Gb/sec (4X NDR)", RateGbps: 400, LinkLayer: "InfiniBand"}
}

func downDisabled(dev string) node.IBPort {
	return node.IBPort{Device: dev, Port: 1, State: "DOWN", StateID: 1, PhysState: "Disabled", PhysStateID: 3,
		Rate: "40 Gb/sec (4X QDR)", RateGbps: 40, LinkLayer: "InfiniBand"}
}

func bond() node.IBPort {
	return node.IBPort{Device: "mlx5_bond_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
		Rate: "200 Gb/sec (2X NDR)", RateGbps: 200, LinkLayer: "Ethernet"}
}

func TestIBPorts(t *testing.T) {
	eight := []node.IBPort{ndr("mlx5_0"), ndr("mlx5_1"), ndr("mlx5_4"), ndr("mlx5_5"), ndr("mlx5_6"), ndr("mlx5_7"), ndr("mlx5_8"), ndr("mlx5_9")}
	with := func(i int, p node.IBPort) []node.IBPort {
		out := append([]node.IBPort(nil), eight...)
		out[i] = p
		return out
	}
	polling := ndr("mlx5_7")
	polling.State, polling.StateID, polling.PhysState, polling.PhysStateID = "DOWN", 1, "Polling", 2
	hdr := ndr("mlx5_4")
	hdr.Rate, hdr.RateGbps = "200 Gb/sec (4X HDR)", 200
	policy := ibPortsConfig{MinRateGbps: 400, ExpectedPorts: 8, ExcludeLinkLayers: []string{"Ethernet"}}

	tests := []struct {
		name        string
		ports       []node.IBPort
		err         error
		cfg         ibPortsConfig
		wantStatus  Status
		wantSummary string
	}{
		{"healthy with policy", append(eight, bond()), nil, policy, StatusOK,
			"8 ports ACTIVE/LinkUp, all at least 400 Gb/s (1 excluded by config)"},
		{"healthy without policy judges the bond too", append(eight, bond()), nil, ibPortsConfig{}, StatusOK,
			"9 ports ACTIVE/LinkUp"},
		{"down and disabled", with(3, downDisabled("mlx5_5")), nil, policy, StatusFail,
			"mlx5_5/1: state DOWN, phys_state Disabled, want ACTIVE/LinkUp"},
		{"polling", with(5, polling), nil, policy, StatusFail,
			"mlx5_7/1: state DOWN, phys_state Polling, want ACTIVE/LinkUp"},
		{"slow rate", with(2, hdr), nil, policy, StatusFail, "mlx5_4/1: rate 200 Gb/s, want at least 400"},
		{"missing port comes first", append(with(0, downDisabled("mlx5_0"))[:7:7], bond()), nil, policy, StatusFail,
			"7 of 8 expected ports present (1 excluded by config) (+1 more)"},
		{"more ports than expected warns", eight, nil, ibPortsConfig{ExpectedPorts: 4}, StatusWarn,
			"8 ports present, expected_ports is 4"},
		{"no IB and none expected", nil, nil, ibPortsConfig{}, StatusSkip, "no InfiniBand devices under /sys/class/infiniband"},
		{"no IB but expected", nil, nil, policy, StatusFail, "no InfiniBand port found, expected 8"},
		{"only excluded ports", []node.IBPort{bond()}, nil, ibPortsConfig{ExcludeLinkLayers: []string{"ethernet"}}, StatusSkip,
			"all 1 ports under /sys/class/infiniband are excluded by config"},
		{"device filter by port name", append(eight, downDisabled("mlx5_2")), nil, ibPortsConfig{ExcludeDevices: []string{"mlx5_2/1"}}, StatusOK,
			"8 ports ACTIVE/LinkUp (1 excluded by config)"},
		{"listing error", nil, errors.New("read /sys/class/infiniband: permission denied"), policy, StatusError,
			"read /sys/class/infiniband: read /sys/class/infiniband: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			sec := settings[*ibPortsConfig](cfg, idIBPorts)
			common := sec.CheckCommon
			*sec = tc.cfg
			sec.CheckCommon = common
			env := &Env{Facts: &fakeFacts{ports: tc.ports, portErr: tc.err}, Config: cfg, Mode: config.ModeHealth, Node: "n1"}
			got := ibPorts{}.Run(context.Background(), env)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestJudgeIBPort feeds the judge of one port literal sysfs readings.
func TestJudgeIBPort(t *testing.T) {
	noState := ndr("mlx5_0")
	noState.State, noState.StateID = "", 0
	noRate := ndr("mlx5_0")
	noRate.Rate, noRate.RateGbps = "", 0
	odd := ndr("mlx5_0")
	odd.Rate, odd.RateGbps = "fast", 0
	tests := []struct {
		name        string
		port        node.IBPort
		minRate     float64
		wantStatus  Status
		wantMessage string
	}{
		{"active", ndr("mlx5_0"), 400, StatusOK, "ACTIVE/LinkUp 400 Gb/s InfiniBand"},
		{"down", downDisabled("mlx5_0"), 400, StatusFail, "state DOWN, phys_state Disabled, want ACTIVE/LinkUp"},
		{"slow", ndr("mlx5_0"), 800, StatusFail, "rate 400 Gb/s, want at least 800"},
		// Issue 12: what sysfs did not give is not a healthy port.
		{"state file absent", noState, 0, StatusError, "state not readable in sysfs: the port's state not judged"},
		{"rate absent, a minimum set", noRate, 400, StatusError, `rate "" not readable in sysfs: not judged against 400 Gb/s`},
		{"rate unparsable, a minimum set", odd, 400, StatusError, `rate "fast" not readable in sysfs: not judged against 400 Gb/s`},
		{"rate absent, no minimum", noRate, 0, StatusOK, "ACTIVE/LinkUp 0 Gb/s InfiniBand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeIBPort(tc.port, tc.minRate)
			assertRemedies(t, Result{Status: got.Status, Details: []Detail{got}})
			if got.Status != tc.wantStatus || got.Message != tc.wantMessage {
				t.Errorf("judgeIBPort = %s %q, want %s %q", got.Status, got.Message, tc.wantStatus, tc.wantMessage)
			}
		})
	}
}
