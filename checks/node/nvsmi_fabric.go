package node

import "strings"

// The "Fabric" section of a `nvidia-smi -q` GPU block, as drivers 570 and later print it
// (550 and 565 print the Health block with Bandwidth alone):
//
//	Fabric
//	    State                             : Completed
//	    Status                            : Success
//	    CliqueId                          : 2
//	    ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
//	    Health
//	        Summary                       : Unhealthy
//	        Bandwidth                     : Full
//	        Route Recovery in progress    : False
//	        Route Unhealthy               : False
//	        Access Timeout Recovery       : False
//	        Incorrect Configuration       : None
//	        Partition Assigned            : N/A
//
// (State to Bandwidth as a GB200 node printed them in kubernetes-sigs/dra-driver-nvidia-gpu#626;
// the words of the other parts as nvidia-smi printed them for a GB300 tray, driver
// 580.173.02, and "Degraded", "Limited Capacity", "True" and "No Partition" over NVIDIA's
// NVML mock, both in NVIDIA/k8s-test-infra tests/e2e/go/assertions/nvidiasmi; the Partition
// Assigned line as driver 580.159.04 printed it in NVIDIA/gpu-operator#2511.)
// Every health part is "N/A" where NVML reports it NOT_SUPPORTED, which leaves it "". CliqueId,
// ClusterUUID and Partition Assigned are not read.

// smiFabric is what a GPU block's Fabric section says.
type smiFabric struct {
	state, status string
	health        FabricHealth
}

// fabricField reads one line of the Fabric section; path is as for field.
func (g *smiGPU) fabricField(path string, l smiLine) error {
	f := &g.fab
	var dst *string
	switch path {
	case "Fabric/State":
		f.state = l.val
		return nil
	case "Fabric/Status":
		f.status = l.val
		return nil
	case "Fabric/Health/Summary":
		f.health.Summary = smiFabricWord(l.val, map[string]string{
			"healthy": FabricHealthy, "unhealthy": FabricUnhealthy, "limited capacity": FabricLimitedCapacity})
		return nil
	case "Fabric/Health/Incorrect Configuration":
		f.health.IncorrectConfiguration = smiFabricWord(l.val, map[string]string{
			"none": FabricConfigOK, "incompatible gpu firmware": "INCOMPATIBLE_GPU_FW",
			"incorrect chassis serial number": "INCORRECT_CHASSIS_SN"})
		return nil
	case "Fabric/Health/Bandwidth":
		return smiFabricFlag(l, &f.health.DegradedBandwidth, "Degraded", "Full")
	case "Fabric/Health/Route Recovery in progress":
		dst = &f.health.RouteRecovery
	case "Fabric/Health/Route Unhealthy":
		dst = &f.health.RouteUnhealthy
	case "Fabric/Health/Access Timeout Recovery":
		dst = &f.health.AccessTimeoutRecovery
	default:
		return nil
	}
	return smiFabricFlag(l, dst, "True", "False")
}

// smiFabricFlag reads a health condition: yes (True, or Degraded for Bandwidth) is TRUE, no
// (False, Full) is FALSE, N/A leaves it "". Any other word is an error naming the line: a
// condition nodecheck cannot read must not pass for a healthy one.
func smiFabricFlag(l smiLine, dst *string, yes, no string) error {
	switch {
	case smiNA(l.val) || l.val == "Not Supported":
		*dst = ""
	case strings.EqualFold(l.val, yes):
		*dst = FabricTrue
	case strings.EqualFold(l.val, no):
		*dst = FabricFalse
	default:
		return smiErr(l.n, "Fabric Health %s %q: want %s, %s or N/A", l.key, l.val, yes, no)
	}
	return nil
}

// smiFabricWord maps a health word to the nvml.h value name known holds for it (by its
// lower-case form); "" for N/A. A word not in known is kept, upper-cased with '_' for
// blanks ("No Partition" is NVML's NO_PARTITION), so that a new value is still named.
func smiFabricWord(s string, known map[string]string) string {
	if smiNA(s) || s == "Not Supported" {
		return ""
	}
	if v, ok := known[strings.ToLower(s)]; ok {
		return v
	}
	return strings.ToUpper(strings.Join(strings.Fields(s), "_"))
}

// buildFabric is the GPU's Fabric; nil when the state says there is none.
func (g *smiGPU) buildFabric() *Fabric {
	st := smiFabricState(g.fab.state)
	if st == "" {
		return nil
	}
	return &Fabric{State: st, Status: smiFabricStatus(g.fab.status), Health: g.fab.health}
}

// smiFabricState maps nvidia-smi's words for NVML_GPU_FABRIC_STATE_* to the names a
// GPU's Fabric carries; "" means no fabric information (Fabric nil).
func smiFabricState(s string) string {
	switch s {
	case "", "N/A", "[N/A]", "Not Supported":
		return ""
	case "Not Started":
		return "NOT_STARTED"
	case "In Progress":
		return "IN_PROGRESS"
	case "Completed":
		return "COMPLETED"
	}
	return strings.ToUpper(strings.ReplaceAll(s, " ", "_"))
}

// smiFabricStatus maps the registration status: nvidia-smi prints NVML's text for the
// return code ("Success"), which is SUCCESS; other texts are kept as printed (NVML documents
// the status only once the state is COMPLETED, and N/A is what nvidia-smi prints before).
func smiFabricStatus(s string) string {
	if s == "Success" {
		return "SUCCESS"
	}
	return s
}
