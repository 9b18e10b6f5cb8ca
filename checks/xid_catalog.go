package checks

// What xid_errors does with each XID, derived from NVIDIA's XID catalog (the data in
// checks/xidcatalog): the built-in fail_xids, warn_xids and ignore_xids, the XIDs judged by
// their message (XID 154 and the NVLink5 XIDs 144-150), and the fault (so the remedy) of an
// XID that fails. The history's XID rules take their remedies from here too (remedyForXID).

import (
	"slices"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/xidcatalog"
)

// xidCat is the catalog; nil when the embedded data does not parse (xid_errors then says
// so: TestXIDCatalogEveryXID holds that it parses).
func xidCat() *xidcatalog.Catalog {
	c, err := xidcatalog.Load()
	if err != nil {
		return nil
	}
	return c
}

// xidBucketsOf is xid's catalog row; ok is false for an XID the catalog does not list.
func xidBucketsOf(xid int) (xidcatalog.Entry, bool) {
	c := xidCat()
	if c == nil {
		return xidcatalog.Entry{}, false
	}
	return c.Lookup(xid)
}

// The catalog's Immediate Actions, grouped by what nodecheck does with them by default.
var (
	// xidFailActions fail the node: the GPU, the node or a person must act before the next job.
	xidFailActions = []string{"RESET_GPU", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "RESTART_BM", "RESTART_VM",
		"CONTACT_SUPPORT", "CHECK_MECHANICALS", "UPDATE_SWFW"}
	// xidDecodedActions say to read the message: XID 154 names its recovery action, and the
	// NVLink5 XIDs decode by IntrInfo and Error Status.
	xidDecodedActions = []string{"XID_154", "WORKFLOW_NVLINK5_ERR"}
)

// xidCatalogStatus is an XID's built-in verdict by the catalog: StatusFail for the
// xidFailActions; StatusSkip (ignored) for IGNORE whose investigatory action is IGNORE too
// (nothing to do, nothing to look into); "" for the XIDs judged by their message; StatusWarn
// for the rest: RESTART_APP, WORKFLOW_XID_45, CHECK_UVM, IGNORE with something to look into,
// and XIDs with no bucket or not in the catalog.
func xidCatalogStatus(e xidcatalog.Entry) Status {
	switch {
	case slices.Contains(xidFailActions, e.Immediate):
		return StatusFail
	case slices.Contains(xidDecodedActions, e.Immediate):
		return ""
	case e.Immediate == "IGNORE" && strings.HasPrefix(e.Investigatory, "IGNORE"):
		return StatusSkip
	}
	return StatusWarn
}

// xidDefaults lists the catalog's XIDs whose built-in verdict is st.
func xidDefaults(st Status) []int {
	c := xidCat()
	if c == nil {
		return nil
	}
	var out []int
	for _, e := range c.Entries {
		if e.Immediate != "" && xidCatalogStatus(e) == st {
			out = append(out, e.XID)
		}
	}
	return out
}

// defaultFailXIDs are the XIDs NVIDIA's catalog resolves with an immediate action on the GPU,
// the node or by a person: RESET_GPU (and the workflows of 48 and 74, which reset), RESTART_BM,
// RESTART_VM, CONTACT_SUPPORT (the unused XIDs among them), CHECK_MECHANICALS, UPDATE_SWFW.
func defaultFailXIDs() []int { return xidDefaults(StatusFail) }

// defaultWarnXIDs are the XIDs the catalog asks no node action for but that are worth a
// look: RESTART_APP, WORKFLOW_XID_45, CHECK_UVM, and IGNORE with an investigatory action.
func defaultWarnXIDs() []int { return xidDefaults(StatusWarn) }

// defaultIgnoreXIDs are the XIDs the catalog marks IGNORE in both buckets (63 row remapping
// event, which gpu_memory_errors judges from NVML's remap counts; 106 and 107 SMBPBI test
// messages).
func defaultIgnoreXIDs() []int { return xidDefaults(StatusSkip) }

// defaultRebootXIDs are the fail_xids only a reboot ends: RESTART_BM and RESTART_VM.
func defaultRebootXIDs() []int {
	var out []int
	for _, x := range defaultFailXIDs() {
		if e, _ := xidBucketsOf(x); e.Immediate == "RESTART_BM" || e.Immediate == "RESTART_VM" {
			out = append(out, x)
		}
	}
	return out
}

// xidDecoded reports whether the catalog resolves xid by its message.
func xidDecoded(xid int) bool {
	e, ok := xidBucketsOf(xid)
	return ok && xidCatalogStatus(e) == ""
}

// xidMessageClass judges an XID the catalog resolves by its message (xidDecoded): XID 154
// by the recovery action it changed to, an NVLink5 XID by its decode-sheet row. loc is the
// history's IntrInfo/ErrorStatus of an NVLink5 record ("25525c6/0"), read when the message
// was cut before them.
func xidMessageClass(xid int, msg, loc string) history.XIDClass {
	if xid == 154 {
		return xid154Class(msg)
	}
	if r, ok := nvlink5Row(xid, msg, loc); ok {
		if r.Resolution == "RESET_GPU" {
			return history.XIDReset
		}
		return history.XIDWarn
	}
	// No row decodes it: the driver's own word decides.
	if ev, ok := xidcatalog.ParseNVLink(msg); ok && ev.Fatal || !ok && strings.Contains(" "+msg+" ", " Fatal ") {
		return history.XIDReset
	}
	return history.XIDWarn
}

// nvlink5Row is the decode sheet's row of an NVLink5 XID message; ok is false when the
// message (or loc) gives no IntrInfo and Error Status or no row matches them.
func nvlink5Row(xid int, msg, loc string) (xidcatalog.NVLinkRule, bool) {
	c := xidCat()
	ev, ok := xidcatalog.ParseNVLink(msg)
	if ii, es, found := strings.Cut(loc, "/"); found {
		// The history read the pair from the whole line; its message may be cut inside them.
		if l, lok := xidcatalog.ParseNVLink("(0x" + ii + " 0x" + es + ")"); lok {
			ev.IntrInfo, ev.ErrorStatus, ok = l.IntrInfo, l.ErrorStatus, true
		}
	}
	if c == nil || !ok {
		return xidcatalog.NVLinkRule{}, false
	}
	rs := c.Decode(xid, ev)
	if len(rs) == 0 {
		return xidcatalog.NVLinkRule{}, false
	}
	return rs[0], true
}

// xidMessageStatus is the verdict of a decoded XID's event: fail for a reset or a reboot.
func xidMessageStatus(xid int, msg string) Status {
	if xidMessageClass(xid, msg, "") == history.XIDWarn {
		return StatusWarn
	}
	return StatusFail
}

// xidFault is the fault of an XID that fails the node (fail_xids, its message, or history's
// rules); message, the driver's text after the number, matters for XID 154, which names the
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
//	no bucket, or not in the catalog     -> reset_gpu
func xidFault(xid int, message string) fault {
	b, ok := xidBucketsOf(xid)
	if !ok || b.Immediate == "" {
		return faultXIDResetSoon
	}
	switch b.Immediate {
	case "XID_154":
		if xid154Class(message) == history.XIDReboot {
			return faultXID154Reboot
		}
		// Reset, drain, or None where a site fails every XID 154: a reset is the cheapest.
		return faultXID154Reset
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
	case b.Investigatory == "CONTACT_SUPPORT":
		return faultXIDSupport
	case strings.HasPrefix(b.Investigatory, "IGNORE"):
		return faultXIDResetSoon
	}
	return faultXIDSoftware
}

// xid154Class reads the action XID 154 names: "GPU recovery action changed from 0x0 (None)
// to 0x2 (Node Reboot Required)", the catalog's values being None, Drain P2P, Drain and
// Reset, GPU Reset Required and Node Reboot Required. The action it changed to counts: None
// (the GPU recovered) warns; a message that names none nodecheck knows needs a reboot, which
// clears any of them.
func xid154Class(message string) history.XIDClass {
	m := strings.ToLower(message)
	if i := strings.LastIndex(m, " to "); i >= 0 {
		m = m[i:]
	}
	switch {
	case strings.Contains(m, "reboot"):
		return history.XIDReboot
	case strings.Contains(m, "reset"), strings.Contains(m, "drain"):
		return history.XIDReset
	case strings.Contains(m, "none"):
		return history.XIDWarn
	}
	return history.XIDReboot
}

// remedyForXID is the remedy of an XID that fails the node (xidFault), for xid_errors and
// for the history rules (a reset- or reboot-class XID that stays until the repair, an
// application XID that repeats).
func remedyForXID(xid int, message string) Remedy { return remedyOf(xidFault(xid, message)) }

// xidDefaultsByRemedy groups the built-in fail_xids by remedy, for explain: "reset_gpu: 46,
// 48, ...; reboot: 79, 151; ...; 154, 144-150: by their message".
func xidDefaultsByRemedy() string {
	by := map[Remedy][]string{}
	for _, x := range defaultFailXIDs() {
		r := remedyForXID(x, "")
		by[r] = append(by[r], strconv.Itoa(x))
	}
	var parts []string
	for _, r := range Remedies() {
		if len(by[r]) > 0 {
			parts = append(parts, string(r)+": "+strings.Join(by[r], ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// xidsWithAction lists, for explain, the catalog's XIDs whose Immediate Action is one of
// actions; the unused XIDs (the catalog describes dozens) are left out.
func xidsWithAction(actions ...string) string {
	c := xidCat()
	if c == nil {
		return "the catalog did not load"
	}
	var out []string
	for _, e := range c.Entries {
		if slices.Contains(actions, e.Immediate) && !e.Unused() {
			out = append(out, strconv.Itoa(e.XID))
		}
	}
	return strings.Join(out, ", ")
}
