package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseNvidiaSMIFabricHealth reads the Health block of the Fabric section: the real block
// of kubernetes-sigs/dra-driver-nvidia-gpu#626, and the layouts of the corpus's drivers.
func TestParseNvidiaSMIFabricHealth(t *testing.T) {
	// fabric builds a GPU block whose Fabric section has the Health lines given.
	fabric := func(health ...string) string {
		b := "GPU 00000008:01:00.0\n    Product Name : NVIDIA GB200\n    Fabric\n        State : Completed\n        Status : Success\n" +
			"        CliqueId : 2\n        Health\n"
		for _, h := range health {
			b += "            " + h + "\n"
		}
		return b
	}
	completed := func(h FabricHealth) *Fabric { return &Fabric{State: "COMPLETED", Status: "SUCCESS", Health: h} }
	// The block of a healthy GB300 tray (driver 580.173.02), element for element as
	// NVIDIA/k8s-test-infra tests/e2e/go/assertions/nvidiasmi/fabric_health.go holds it.
	gb300 := []string{"Summary : Healthy", "Bandwidth : Full", "Route Recovery in progress : False", "Route Unhealthy : False",
		"Access Timeout Recovery : False", "Incorrect Configuration : None", "Partition Assigned : N/A"}
	allFalse := FabricHealth{DegradedBandwidth: "FALSE", RouteRecovery: "FALSE", RouteUnhealthy: "FALSE", AccessTimeoutRecovery: "FALSE"}
	with := func(h FabricHealth, change func(h *FabricHealth)) FabricHealth {
		change(&h)
		return h
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    *Fabric
		wantErr string
	}{
		{"GB300 tray, healthy", smiDoc(1, fabric(gb300...)),
			completed(with(allFalse, func(h *FabricHealth) { h.Summary, h.IncorrectConfiguration = "HEALTHY", "NONE" })), ""},
		{"route unhealthy", smiDoc(1, fabric("Summary : Unhealthy", "Bandwidth : Full", "Route Recovery in progress : False",
			"Route Unhealthy : True", "Access Timeout Recovery : False", "Incorrect Configuration : None")),
			completed(with(allFalse, func(h *FabricHealth) {
				h.Summary, h.RouteUnhealthy, h.IncorrectConfiguration = "UNHEALTHY", "TRUE", "NONE"
			})), ""},
		{"degraded bandwidth: limited capacity", smiDoc(1, fabric("Summary : Limited Capacity", "Bandwidth : Degraded")),
			completed(FabricHealth{Summary: "LIMITED_CAPACITY", DegradedBandwidth: "TRUE"}), ""},
		{"no partition", smiDoc(1, fabric("Summary : Unhealthy", "Incorrect Configuration : No Partition")),
			completed(FabricHealth{Summary: "UNHEALTHY", IncorrectConfiguration: "NO_PARTITION"}), ""},
		{"incompatible firmware, spelt out", smiDoc(1, fabric("Incorrect Configuration : Incompatible GPU Firmware")),
			completed(FabricHealth{IncorrectConfiguration: "INCOMPATIBLE_GPU_FW"}), ""},
		// 550 and 565 print the block with Bandwidth alone (corpus: the H100 565.57.01 capture).
		{"550 to 565: Bandwidth N/A only", smiDoc(1, fabric("Bandwidth : N/A")), completed(FabricHealth{}), ""},
		{"every part N/A", smiDoc(1, fabric("Summary : N/A", "Bandwidth : N/A", "Route Recovery in progress : N/A",
			"Route Unhealthy : N/A", "Access Timeout Recovery : N/A", "Incorrect Configuration : N/A", "Partition Assigned : N/A")),
			completed(FabricHealth{}), ""},
		{"a condition in words nodecheck does not know", smiDoc(1, fabric("Route Unhealthy : Maybe")), nil,
			`line 16: Fabric Health Route Unhealthy "Maybe": want True, False or N/A`},
		{"bandwidth in words nodecheck does not know", smiDoc(1, fabric("Bandwidth : Half")), nil,
			`line 16: Fabric Health Bandwidth "Half": want Degraded, Full or N/A`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				var se *NvidiaSMIError
				if err == nil || !errors.As(err, &se) || err.Error() != tc.wantErr {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, inv.Devices[0].Fabric); diff != "" {
				t.Errorf("Fabric (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseNvidiaSMIFabricUnhealthyCapture: the Fabric block a node printed in
// kubernetes-sigs/dra-driver-nvidia-gpu#626 (State Completed, Status Success, Summary
// Unhealthy) is recorded with its health, which the fabric judge fails; before the Health
// block was read it was recorded as a healthy COMPLETED/SUCCESS.
func TestParseNvidiaSMIFabricUnhealthyCapture(t *testing.T) {
	inv, err := ParseNvidiaSMIQuery(openCapture(t, "k8sdra-626-fabric-completed-health-unhealthy-framed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Fabric{State: "COMPLETED", Status: "SUCCESS", Health: FabricHealth{Summary: FabricUnhealthy, DegradedBandwidth: FabricFalse}}
	if diff := cmp.Diff(want, inv.Devices[0].Fabric); diff != "" {
		t.Errorf("Fabric (-want +got):\n%s", diff)
	}
	if !inv.Fields.Has(GPUFabric) {
		t.Errorf("Fields %s: want fabric among them", inv.Fields)
	}
}

// TestParseNvidiaSMIResetStatus reads "GPU Reset Status", which drivers 535 to 565 print in
// place of (565: beside) "GPU Recovery Action".
func TestParseNvidiaSMIResetStatus(t *testing.T) {
	h200, err := os.ReadFile(filepath.Join(nvsmiDir, "thamada-gls-h200-550.90.12.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// flip changes one line of the real H200 capture (driver 550.90.12, no recovery action):
	// the corpus holds no capture of a GPU that needs a reset, so its "Yes" is written here,
	// in the layout nvidia-smi prints "No".
	flip := func(line string) string {
		t.Helper()
		yes := strings.Replace(line, ": No", ": Yes", 1)
		if strings.Count(string(h200), line+"\n") != 1 {
			t.Fatalf("%q is not once in the H200 capture", line)
		}
		return strings.Replace(string(h200), line+"\n", yes+"\n", 1)
	}
	reset := "        Reset Required                    : No"
	drain := "        Drain and Reset Recommended       : No"
	gpu := "GPU 00000000:19:00.0\n    GPU Reset Status\n"
	for _, tc := range []struct {
		name string
		in   string
		want *ResetStatus
		// recovery is the GPU Recovery Action recorded beside it.
		recovery string
	}{
		{"H200 550.90.12 as captured: No, No", string(h200), &ResetStatus{}, ""},
		{"H200 550.90.12, reset required", flip(reset), &ResetStatus{ResetRequired: true}, ""},
		{"H200 550.90.12, drain and reset recommended", flip(drain), &ResetStatus{DrainAndReset: true}, ""},
		{"drain N/A, as GeForce boards print it", smiDoc(1, gpu+"        Reset Required : Yes\n        Drain and Reset Recommended : N/A\n"),
			&ResetStatus{ResetRequired: true}, ""},
		// 570 prints the section with an error text in its values, and the recovery action.
		{"570: deprecated", smiDoc(1, gpu+"        Reset Required : Requested functionality has been deprecated\n"+
			"        Drain and Reset Recommended : Requested functionality has been deprecated\n"), nil, ""},
		{"with a recovery action, which supersedes it", smiDoc(1, "GPU 00000000:19:00.0\n    GPU Recovery Action : None\n"+
			"    GPU Reset Status\n        Reset Required : Yes\n"), nil, "NONE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			g := inv.Devices[0]
			if diff := cmp.Diff(tc.want, g.ResetStatus); diff != "" || g.RecoveryAction != tc.recovery {
				t.Errorf("ResetStatus (-want +got):\n%s\nrecovery action %q, want %q", diff, g.RecoveryAction, tc.recovery)
			}
			if !inv.Fields.Has(GPURecoveryAction) {
				t.Errorf("Fields %s: want recovery_action, which the reset status stands in for", inv.Fields)
			}
		})
	}
}

func TestResetStatusAction(t *testing.T) {
	for _, tc := range []struct {
		s    ResetStatus
		want string
	}{
		{ResetStatus{}, "NONE"},
		{ResetStatus{ResetRequired: true}, "GPU_RESET"},
		{ResetStatus{DrainAndReset: true}, "DRAIN_AND_RESET"},
		{ResetStatus{ResetRequired: true, DrainAndReset: true}, "DRAIN_AND_RESET"},
	} {
		if got := tc.s.Action(); got != tc.want {
			t.Errorf("%+v.Action() = %s, want %s", tc.s, got, tc.want)
		}
	}
}
