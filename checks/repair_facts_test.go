package checks

import (
	"context"
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

// TestFabricManagerState reads the service state from fabric_manager's results on the bundled
// snapshots: active on a healthy H100 node, the systemd state where the service is down, ""
// where no NVSwitch is on the bus (the check skips).
func TestFabricManagerState(t *testing.T) {
	for _, tc := range []struct{ snap, want string }{
		{"h100-healthy", "active"},
		{"h100-fm-down", "inactive"},
		{"cpu-node-no-gpu-no-ib", ""},
	} {
		e := envInMode(snapshotEnv(t, openSnapshot(t, tc.snap)), config.ModeHealth)
		res := fabricManager{}.Run(context.Background(), e)
		res.Check = idFabricManager
		if got := FabricManagerState([]Result{res}); got != tc.want {
			t.Errorf("%s: %q, want %q (%s: %s)", tc.snap, got, tc.want, res.Status, res.Summary)
		}
		pci, err := e.Facts.PCIDevices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := NVSwitches(pci); (n > 0) != (tc.want != "") {
			t.Errorf("%s: %d NVSwitches", tc.snap, n)
		}
	}
	fm := Subject{Service: "nvidia-fabricmanager"}
	for _, tc := range []struct {
		name   string
		detail Detail
		want   string
	}{
		{"systemctl could not ask", Detail{Device: "service nvidia-fabricmanager", Status: StatusError, Observed: "exit 1", Subject: fm}, ""},
		{"the service's detail reworded", Detail{Device: "Fabric Manager unit", Status: StatusFail, Observed: "failed", Subject: fm}, "failed"},
		{"a detail that only reads like the service's", Detail{Device: "service nvidia-fabricmanager", Status: StatusOK, Observed: "active"}, ""},
	} {
		if got := FabricManagerState([]Result{{Check: idFabricManager, Status: StatusFail, Details: []Detail{tc.detail}}}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestGPUArchitecture: the NVML names of the captures map to their architecture; an unknown
// model to "".
func TestGPUArchitecture(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":   "hopper",
		"NVIDIA A100-SXM4-80GB":   "ampere",
		"Tesla V100-SXM2-32GB":    "volta",
		"NVIDIA L40S":             "ada",
		"NVIDIA B200":             "blackwell",
		"NVIDIA GeForce RTX 4090": "",
	} {
		if got := GPUArchitecture(name); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}
