package checks

// NVIDIA's XID catalog as xid_errors reads it: each XID's Resolution Buckets, and the fault
// (and so the remedy) an XID that fails the node gets. The history's XID rules take their
// remedies from here too (remedyForXID).

import (
	"slices"
	"strconv"
	"strings"
)

// xidBuckets is an XID's two Resolution Buckets in NVIDIA's XID catalog (Ampere and later,
// srcXIDCatalog), spelled as the catalog spells them.
type xidBuckets struct {
	immediate, investigatory string
}

// xidCatalog lists the XIDs the catalog marks as used on A100, H100, B100 or GB200, grouped
// by their buckets. XIDs 1 to 161 it does not list here are the catalog's "Unused" ones,
// whose action is CONTACT_SUPPORT; 162 and later have no bucket in the catalog.
var xidCatalog = []struct {
	xidBuckets
	xids []int
}{
	{xidBuckets{"RESET_GPU", "CONTACT_SUPPORT"}, []int{46, 62, 64, 109, 140, 143, 158}},
	{xidBuckets{"RESET_GPU", "INVESTIGATE_SW"}, []int{110, 119, 120}},
	{xidBuckets{"RESET_GPU", "INVESTIGATE_LINK_SI"}, []int{136}},
	{xidBuckets{"RESET_GPU", "INVESTIGATE_SW_USER"}, []int{155}},
	{xidBuckets{"RESET_GPU", "IGNORE (sympathetic)"}, []int{95}},
	{xidBuckets{"RESET_GPU", "IGNORE"}, []int{156}},
	{xidBuckets{"WORKFLOW_XID_48", "WORKFLOW_XID_48"}, []int{48}},
	{xidBuckets{"WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"}, []int{74}},
	{xidBuckets{"WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"}, []int{144, 145, 146, 147, 148, 149, 150}},
	{xidBuckets{"RESTART_BM", "CONTACT_SUPPORT"}, []int{79}},
	{xidBuckets{"RESTART_VM", "CONTACT_SUPPORT"}, []int{151}},
	{xidBuckets{"XID_154", "N/A"}, []int{154}},
	{xidBuckets{"CHECK_MECHANICALS", "CONTACT_SUPPORT"}, []int{54}},
	{xidBuckets{"UPDATE_SWFW", "UPDATE_SWFW"}, []int{78}},
	{xidBuckets{"CONTACT_SUPPORT", ""}, []int{142}},
	{xidBuckets{"CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"}, []int{159}},
	{xidBuckets{"RESTART_APP", "CONTACT_SUPPORT"}, []int{8, 39, 40, 41, 68, 70, 71, 72, 75, 76, 77, 82, 83, 84, 85, 86, 88, 89,
		96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 139}},
	{xidBuckets{"RESTART_APP", "CHECK_APP/CUDA"}, []int{11, 25, 32, 69, 80}},
	{xidBuckets{"RESTART_APP", "WORKFLOW_XID_13"}, []int{13}},
	{xidBuckets{"RESTART_APP", "WORKFLOW_XID_31"}, []int{31}},
	{xidBuckets{"RESTART_APP", "INVESTIGATE_SW"}, []int{60}},
	{xidBuckets{"RESTART_APP", "IGNORE (sympathetic)"}, []int{94}},
	{xidBuckets{"WORKFLOW_XID_45", "RESTART_FM"}, []int{45}}, // "Solo: RESTART_FM; not solo: follow the other XID"
	{xidBuckets{"IGNORE", "CONTACT_SUPPORT"}, []int{14, 38, 43, 44, 67, 92, 93, 121, 141, 152, 153, 157}},
	{xidBuckets{"IGNORE", "CHECK_APP/CUDA"}, []int{37}},
	{xidBuckets{"IGNORE", "INVESTIGATE_SW"}, []int{66, 160, 161}},
	{xidBuckets{"IGNORE", "XID_137_FLOW"}, []int{108, 137}},
	{xidBuckets{"IGNORE", "IGNORE"}, []int{63, 106, 107}},
}

// xidLastBucketed is the highest XID the catalog gives buckets to.
const xidLastBucketed = 161

// xidBucketsOf is xid's buckets in the catalog; ok is false for an XID the catalog gives
// none (162 and later, or one newer than this table).
func xidBucketsOf(xid int) (xidBuckets, bool) {
	for _, g := range xidCatalog {
		if slices.Contains(g.xids, xid) {
			return g.xidBuckets, true
		}
	}
	if xid >= 1 && xid <= xidLastBucketed {
		return xidBuckets{"CONTACT_SUPPORT", "N/A; Unused"}, true
	}
	return xidBuckets{}, false
}

// xidFault is the fault of an XID that fails the node (fail_xids, or history's rules);
// message, the driver's text after the number, matters only for XID 154, which names the
// recovery action itself. The rule, in order:
//
//	154                                  -> the action its message names
//	RESET_GPU, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR  -> reset_gpu
//	RESTART_BM, RESTART_VM               -> reboot
//	CONTACT_SUPPORT, CHECK_MECHANICALS   -> service
//	UPDATE_SWFW, CHECK_UVM               -> admin
//	no immediate node action (IGNORE, RESTART_APP, WORKFLOW_XID_45): the investigatory
//	bucket: CONTACT_SUPPORT -> service; software (INVESTIGATE_SW*, CHECK_APP/CUDA,
//	WORKFLOW_XID_13/31, XID_137_FLOW, RESTART_FM) -> admin; IGNORE -> reset_gpu
//	not in the catalog                   -> reset_gpu
func xidFault(xid int, message string) fault {
	b, ok := xidBucketsOf(xid)
	if !ok {
		return faultXIDResetSoon
	}
	switch b.immediate {
	case "XID_154":
		return xid154Fault(message)
	case "RESET_GPU", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR":
		return faultXIDReset
	case "RESTART_BM", "RESTART_VM":
		return faultXIDReboot
	case "CONTACT_SUPPORT", "CHECK_MECHANICALS":
		return faultXIDSupport
	case "UPDATE_SWFW", "CHECK_UVM":
		return faultXIDSoftware
	}
	switch {
	case b.investigatory == "CONTACT_SUPPORT":
		return faultXIDSupport
	case strings.HasPrefix(b.investigatory, "IGNORE"):
		return faultXIDResetSoon
	}
	return faultXIDSoftware
}

// xid154Fault reads the action XID 154 names: "GPU recovery action changed from 0x0 (None)
// to 0x2 (Node Reboot Required)", the catalog's values being None, Drain P2P, Drain and
// Reset, GPU Reset Required and Node Reboot Required. The action it changed to counts; a
// message that names none nodecheck knows gets a reboot, which clears any of them.
func xid154Fault(message string) fault {
	m := strings.ToLower(message)
	if i := strings.LastIndex(m, " to "); i >= 0 {
		m = m[i:]
	}
	switch {
	case strings.Contains(m, "reboot"):
		return faultXID154Reboot
	case strings.Contains(m, "reset"), strings.Contains(m, "drain"), strings.Contains(m, "none"):
		return faultXID154Reset
	}
	return faultXID154Reboot
}

// remedyForXID is the remedy of an XID that fails the node (xidFault), for xid_errors and
// for the history rules (a reset- or reboot-class XID that stays until the repair, an
// application XID that repeats).
func remedyForXID(xid int, message string) Remedy { return remedyOf(xidFault(xid, message)) }

// xidDefaultsByRemedy groups the built-in fail_xids by remedy, for explain: "reset_gpu: 48,
// 62, ...; reboot: 79; ...; 154: the action its message names".
func xidDefaultsByRemedy() string {
	by := map[Remedy][]string{}
	var own []string
	for _, x := range defaultFailXIDs() {
		b, _ := xidBucketsOf(x)
		if b.immediate == "XID_154" {
			own = append(own, strconv.Itoa(x))
			continue
		}
		r := remedyForXID(x, "")
		by[r] = append(by[r], strconv.Itoa(x))
	}
	var parts []string
	for _, r := range Remedies() {
		if len(by[r]) > 0 {
			parts = append(parts, string(r)+": "+strings.Join(by[r], ", "))
		}
	}
	if len(own) > 0 {
		parts = append(parts, strings.Join(own, ", ")+": the action its message names")
	}
	return strings.Join(parts, "; ")
}
