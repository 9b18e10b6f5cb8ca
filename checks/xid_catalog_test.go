package checks

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/xidcatalog"
)

// catalogWant is what nodecheck does with an XID by its Immediate Action: the verdict of the
// built-in lists and the remedy it fails with. Written out here, apart from the code that
// derives it, so that a change to either shows.
var catalogWant = map[string]struct {
	status Status // StatusSkip: ignored; "": judged by its message
	remedy Remedy // the remedy of a failing one; for the others, the one a site's fail_xids or a repeat gives
	reboot bool   // in the built-in reboot_xids
}{
	"RESET_GPU":            {StatusFail, RemedyResetGPU, false},
	"WORKFLOW_XID_48":      {StatusFail, RemedyResetGPU, false},
	"WORKFLOW_NVLINK_ERR":  {StatusFail, RemedyResetGPU, false},
	"RESTART_BM":           {StatusFail, RemedyReboot, true},
	"RESTART_VM":           {StatusFail, RemedyReboot, true},
	"CONTACT_SUPPORT":      {StatusFail, RemedyService, false},
	"CHECK_MECHANICALS":    {StatusFail, RemedyService, false},
	"UPDATE_SWFW":          {StatusFail, RemedyAdmin, false},
	"CHECK_UVM":            {StatusWarn, RemedyAdmin, false},
	"WORKFLOW_XID_45":      {StatusWarn, RemedyAdmin, false}, // investigatory: RESTART_FM when solo
	"XID_154":              {"", "", false},
	"WORKFLOW_NVLINK5_ERR": {"", RemedyResetGPU, false},
	// RESTART_APP and IGNORE: by the investigatory action (catalogAppWant).
}

// catalogAppWant is an XID with no immediate node action (RESTART_APP, IGNORE, no bucket):
// ignored when both buckets say IGNORE, else a warning; a site that fails it gets the
// investigatory action's remedy.
func catalogAppWant(e xidcatalog.Entry) (Status, Remedy) {
	st := StatusWarn
	if e.Immediate == "IGNORE" && strings.HasPrefix(e.Investigatory, "IGNORE") {
		st = StatusSkip
	}
	switch {
	case e.Immediate == "":
		return st, RemedyResetGPU // no bucket: the cheapest remedy that clears a GPU's state
	case e.Investigatory == "CONTACT_SUPPORT":
		return st, RemedyService
	case strings.HasPrefix(e.Investigatory, "IGNORE"):
		return st, RemedyResetGPU
	}
	return st, RemedyAdmin // INVESTIGATE_SW, CHECK_APP/CUDA, WORKFLOW_XID_13/31, XID_137_FLOW
}

// TestXIDCatalogEveryXID walks every XID of NVIDIA's catalog, and one past it, through the
// built-in config as the check and the history judge it: the verdict of a line with that XID
// in the kernel log since boot, the class the history gives its record, and the remedy.
func TestXIDCatalogEveryXID(t *testing.T) {
	c, err := xidcatalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) != 172 || c.Entries[0].XID != 1 || c.Entries[171].XID != 172 {
		t.Fatalf("the catalog holds %d XIDs, want 1 to 172", len(c.Entries))
	}
	if !strings.Contains(c.Version, "2025-10-29") || !strings.Contains(c.Source, "leptonai/gpud") {
		t.Errorf("catalog header: version %q, source %q", c.Version, c.Source)
	}
	cfg := (xidErrors{}).Section().(*xidErrorsConfig)
	verdicts := cfg.xidVerdicts()
	rules := cfg.rules(history.DefaultRules())
	entries := append(slices.Clone(c.Entries), xidcatalog.Entry{XID: 173}) // beyond the catalog
	counts := map[Status]int{}
	for _, e := range entries {
		var wantSt Status
		var wantRem Remedy
		reboot := false
		if w, ok := catalogWant[e.Immediate]; ok {
			wantSt, wantRem, reboot = w.status, w.remedy, w.reboot
		} else {
			wantSt, wantRem = catalogAppWant(e)
		}
		counts[wantSt]++
		t.Run(fmt.Sprintf("%d %s %s", e.XID, e.Immediate, e.Mnemonic), func(t *testing.T) {
			if wantSt == "" {
				// Judged by its message: TestXIDNVLink5Decode and TestXID154 hold those.
				if _, listed := verdicts[e.XID]; listed || !xidDecoded(e.XID) {
					t.Errorf("XID %d should be judged by its message, not listed", e.XID)
				}
				if e.XID != 154 && remedyForXID(e.XID, "") != wantRem {
					t.Errorf("remedy %q, want %q", remedyForXID(e.XID, ""), wantRem)
				}
				return
			}
			line := history.XIDLine{Bus: "0000:9b:00", XID: e.XID, Message: "x"}
			res := judgeXIDs([]history.XIDLine{line}, "", verdicts, nil)
			settleRemedy(&res)
			gotSt := res.Status
			if gotSt == StatusOK {
				gotSt = StatusSkip // ignored: nothing reported
			}
			if gotSt != wantSt {
				t.Errorf("since boot: %s (%s), want %s", gotSt, res.Summary, wantSt)
			}
			wantClass := map[Status]history.XIDClass{StatusFail: history.XIDReset, StatusWarn: history.XIDWarn, StatusSkip: history.XIDIgnore}[wantSt]
			if reboot {
				wantClass = history.XIDReboot
			}
			if got := rules.Class(history.XID{XID: e.XID, Msg: "x"}); got != wantClass {
				t.Errorf("history class %d, want %d", got, wantClass)
			}
			if got := remedyForXID(e.XID, "x"); got != wantRem {
				t.Errorf("remedy %q, want %q", got, wantRem)
			}
			if wantSt == StatusFail && res.Remedy != wantRem {
				t.Errorf("result remedy %q, want %q", res.Remedy, wantRem)
			}
		})
	}
	// The counts the docs give (docs/xid-catalog.md).
	if counts[StatusFail] != 82 || counts[StatusWarn] != 80 || counts[StatusSkip] != 3 || counts[""] != 8 {
		t.Errorf("fail %d, warn %d, ignored %d, by message %d", counts[StatusFail], counts[StatusWarn], counts[StatusSkip], counts[""])
	}
}

// TestXIDNamedByTheIssue: the XIDs where nodecheck disagreed with NVIDIA's catalog, each
// with its neighbour in the catalog that did not change.
func TestXIDNamedByTheIssue(t *testing.T) {
	verdicts := (xidErrors{}).Section().(*xidErrorsConfig).xidVerdicts()
	for _, tc := range []struct {
		xid    int
		want   Status
		remedy Remedy
	}{
		{92, StatusWarn, ""}, {93, StatusWarn, ""}, // IGNORE, CONTACT_SUPPORT: look into it, no node action
		{46, StatusFail, RemedyResetGPU}, {45, StatusWarn, ""},
		{110, StatusFail, RemedyResetGPU}, {143, StatusFail, RemedyResetGPU}, {142, StatusFail, RemedyService},
		{78, StatusFail, RemedyAdmin}, {77, StatusWarn, ""},
		{1, StatusFail, RemedyService}, {61, StatusFail, RemedyService},
		{151, StatusFail, RemedyReboot}, {79, StatusFail, RemedyReboot},
		{94, StatusWarn, ""}, {95, StatusFail, RemedyResetGPU},
		{63, StatusOK, ""}, {64, StatusFail, RemedyResetGPU},
	} {
		res := judgeXIDs([]history.XIDLine{{Bus: "0000:9b:00", XID: tc.xid, Message: "x"}}, "", verdicts, nil)
		settleRemedy(&res)
		if res.Status != tc.want || res.Remedy != tc.remedy {
			t.Errorf("XID %d: %s %q, want %s %q", tc.xid, res.Status, res.Remedy, tc.want, tc.remedy)
		}
	}
}

// TestXIDConfigOverridesCatalog: a site's lists still win over the catalog, the XIDs judged
// by their message included.
func TestXIDConfigOverridesCatalog(t *testing.T) {
	fatal149 := "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)" // gpud #1174
	for _, tc := range []struct {
		name string
		toml string
		xid  int
		msg  string
		want Status
	}{
		{"built-in: 149 decoded fatal", "", 149, fatal149, StatusFail},
		{"warn_xids takes 149", "[checks.xid_errors]\nwarn_xids = [149]\n", 149, fatal149, StatusWarn},
		{"ignore_xids takes 149", "[checks.xid_errors]\nignore_xids = [149]\n", 149, fatal149, StatusOK},
		{"fail_xids takes a non-fatal 149", "[checks.xid_errors]\nfail_xids = [149]\n", 149, "NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001)", StatusFail},
		{"built-in: 92 warns", "", 92, "x", StatusWarn},
		{"fail_xids takes 92 back", "[checks.xid_errors]\nfail_xids = [92]\n", 92, "x", StatusFail},
		{"built-in: 63 ignored", "", 63, "x", StatusOK},
		{"ignore_xids set without 63 reports it", "[checks.xid_errors]\nignore_xids = [13]\n", 63, "x", StatusWarn},
		{"warn_xids takes 46", "[checks.xid_errors]\nwarn_xids = [46]\n", 46, "x", StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseSectionCase(t, tc.toml, "", "")
			xe := settings[*xidErrorsConfig](cfg, idXIDErrors)
			res := judgeXIDs([]history.XIDLine{{Bus: "0000:9b:00", XID: tc.xid, Message: tc.msg}}, "", xe.xidVerdicts(), nil)
			if res.Status != tc.want {
				t.Errorf("since boot: %s (%s), want %s", res.Status, res.Summary, tc.want)
			}
			wantClass := map[Status]history.XIDClass{StatusFail: history.XIDReset, StatusWarn: history.XIDWarn, StatusOK: history.XIDIgnore}[tc.want]
			ev, _ := history.ParseXIDLine("NVRM: Xid (PCI:0000:9b:00): " + fmt.Sprint(tc.xid) + ", " + tc.msg)
			if got := xe.rules(history.DefaultRules()).Class(history.XID{XID: tc.xid, Msg: tc.msg, Loc: ev.Loc}); got != wantClass {
				t.Errorf("history class %d, want %d", got, wantClass)
			}
		})
	}
}

// TestXIDNVLink5Decode judges NVLink5 XID lines by the catalog's decode sheet, as the kernel
// log since boot and as the history's records. Captures unless marked: gpud #1174
// (testdata/xid/gpud-pr1174.log); lines a gpud user supplied (gpud
// components/accelerator/nvidia/xid/kmsg_extended_test.go at 4a8de33); NVSentinel's
// syslog-health-monitor tests (the driver's double spaces). The gpud-test lines for 144 and
// 150 are gpud's own examples, not captures: no public capture of those was found.
func TestXIDNVLink5Decode(t *testing.T) {
	cfg := (xidErrors{}).Section().(*xidErrorsConfig)
	verdicts, rules := cfg.xidVerdicts(), cfg.rules(history.DefaultRules())
	for _, tc := range []struct {
		name, line string
		want       Status
		unit       string // the decode sheet's row; "" when none matches
	}{
		{"149 NETIR_INT link fatal (gpud #1174)", "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusFail, "NETIR/NETIR_INT"},
		{"145 RLW_RXPIPE status 0x8 ignore (gpud #1174)", "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
			StatusWarn, "RLW_RXPIPE"},
		{"145 with pid and name, cut in the history (gpud user)", "NVRM: Xid (PCI:0018:01:00): 145, pid=876767, name=ray::WorkerDict, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
			StatusWarn, "RLW_RXPIPE"},
		{"145 RLW_SRC_TRACK status 0x8: XID_154_EVAL (gpud user)", "NVRM: Xid (PCI:0019:01:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 (0x040988e2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusWarn, "RLW_SRC_TRACK"},
		{"149 NETIR_BER_EVENT (gpud user)", "NVRM: Xid (PCI:0018:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusWarn, "NETIR_BER_EVENT"},
		{"149 NETIR_LINK_DOWN subcode 4 (gpud user)", "NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusFail, "NETIR_LINK_EVT/NETIR_LINK_DOWN"},
		{"149 NETIR_LINK_DOWN peer device (NVSentinel)", "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusFail, "NETIR_LINK_EVT/NETIR_LINK_DOWN"},
		{"149 without IntrInfo: the driver's Fatal (NVSentinel journal)", "Sep 19 10:30:06 coastline-turtle-cn02 kernel: NVRM: Xid (PCI:0018:01:00): 149, NETIR_INT  Fatal   XC0 i0 Link -1",
			StatusFail, ""},
		{"144 SAW_MVB status 0x2 fatal (gpud's example)", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Fatal XC0 i0 Link 00 (0x00000001 0x00000002 0x00000000 0x00000000)",
			StatusFail, "SAW_MVB"},
		{"144 SAW_MVB status 0x1 non-fatal (gpud's example)", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Nonfatal XC0 i0 Link 00 (0x00000001 0x00000001 0x00000000 0x00000000)",
			StatusWarn, "SAW_MVB"},
		{"150 MSE_WATCHDOG fatal (gpud's example)", "NVRM: Xid (PCI:0000:04:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link 00 (0x00000000 0x00000000 0x00000000 0x00000000)",
			StatusFail, "MSE_WATCHDOG"},
		{"149 NETIR_LINK_DOWN 0x28: IGNORE though Fatal (invented)", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x028001c6 0x00000000)",
			StatusWarn, "NETIR_LINK_EVT/NETIR_LINK_DOWN"},
		{"149 NETIR_LINK_DOWN 0x2a: RESET_GPU (invented)", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x02a001c6 0x00000000)",
			StatusFail, "NETIR_LINK_EVT/NETIR_LINK_DOWN"},
		{"status no row has, Nonfatal (invented)", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Nonfatal XC0 i0 Link 00 (0x00000001 0x00000040)", StatusWarn, ""},
		{"status no row has, Fatal (invented)", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Fatal XC0 i0 Link 00 (0x00000001 0x00000040)", StatusFail, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := history.ParseXIDLine(tc.line)
			if !ok {
				t.Fatal("not an XID line")
			}
			if got := xidStatus(verdicts, ev.XID, ev.Message); got != tc.want {
				t.Errorf("since boot: %s, want %s", got, tc.want)
			}
			r, found := nvlink5Row(ev.XID, ev.Message, "")
			if found != (tc.unit != "") || r.Unit != tc.unit {
				t.Errorf("decode row %q (%v), want %q", r.Unit, found, tc.unit)
			}
			// The history keeps 80 bytes of the message and the IntrInfo/ErrorStatus in Loc.
			msg := ev.Message
			if len(msg) > 80 {
				msg = msg[:80]
			}
			wantClass := map[Status]history.XIDClass{StatusFail: history.XIDReset, StatusWarn: history.XIDWarn}[tc.want]
			if got := rules.Class(history.XID{XID: ev.XID, Msg: msg, Loc: ev.Loc}); got != wantClass {
				t.Errorf("history class %d (loc %q), want %d", got, ev.Loc, wantClass)
			}
			if tc.want == StatusFail && remedyForXID(ev.XID, ev.Message) != RemedyResetGPU {
				t.Errorf("remedy %q, want reset_gpu", remedyForXID(ev.XID, ev.Message))
			}
		})
	}
}

// TestNVLink5RowFromLoc: a history record's message cut inside the Error Status word
// ("0x0000" of 0x00000002) decodes by the pair the history kept (Loc), not by the cut word.
// Message: gpud's 144 example, invented cut.
func TestNVLink5RowFromLoc(t *testing.T) {
	cut := "SAW_MVB Fatal XC0 i0 Link 00 (0x00000001 0x0000"
	if r, ok := nvlink5Row(144, cut, "1/2"); !ok || r.ErrorStatus != 2 || r.Resolution != "RESET_GPU" {
		t.Errorf("with loc: %+v, %v", r, ok)
	}
	if r, ok := nvlink5Row(144, cut, ""); ok {
		t.Errorf("without loc the cut word reads as status 0, which no row has: %+v", r)
	}
	if r, ok := nvlink5Row(144, cut, "1/zz"); ok {
		t.Errorf("a bad loc is not read: %+v", r)
	}
}

// TestXID154: the recovery action XID 154 changed to decides, a reset or reboot failing
// until done. Lines from NVSentinel's tests (journal capture, XID parser tests).
func TestXID154(t *testing.T) {
	cfg := (xidErrors{}).Section().(*xidErrorsConfig)
	verdicts, rules := cfg.xidVerdicts(), cfg.rules(history.DefaultRules())
	for _, tc := range []struct {
		msg    string
		want   history.XIDClass
		remedy Remedy
	}{
		{"GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", history.XIDReset, RemedyResetGPU},
		{"GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", history.XIDReset, RemedyResetGPU},
		{"GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", history.XIDReboot, RemedyReboot},     // invented
		{"GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)", history.XIDWarn, ""},                 // invented
		{"GPU recovery action changed from 0x0 (None) to 0x9 (Something New)", history.XIDReboot, RemedyReboot},            // invented
		{"GPU recovery action changed from 0x1 (GPU Reset Required) to 0x3 (Drain P2P)", history.XIDReset, RemedyResetGPU}, // invented
	} {
		if got := rules.Class(history.XID{XID: 154, Msg: tc.msg}); got != tc.want {
			t.Errorf("%q: class %d, want %d", tc.msg, got, tc.want)
		}
		res := judgeXIDs([]history.XIDLine{{Bus: "0000:9b:00", XID: 154, Message: tc.msg}}, "", verdicts, nil)
		settleRemedy(&res)
		if res.Remedy != tc.remedy || (tc.want == history.XIDWarn) != (res.Status == StatusWarn) {
			t.Errorf("%q: %s %q, want remedy %q", tc.msg, res.Status, res.Remedy, tc.remedy)
		}
	}
}

// peerVerdicts reads a peer's copy under checks/xidcatalog/testdata: per XID its columns
// (after the XID), "#" lines and a header row starting "xid," skipped.
func peerVerdicts(t *testing.T, name string) map[int][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("xidcatalog", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	rd := csv.NewReader(strings.NewReader(string(b)))
	rd.Comment, rd.FieldsPerRecord = '#', -1
	recs, err := rd.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := map[int][]string{}
	for _, r := range recs {
		x, err := strconv.Atoi(r[0])
		if err != nil {
			continue // the header row
		}
		for i := range r {
			r[i] = strings.TrimSpace(r[i])
		}
		out[x] = r[1:]
	}
	return out
}

// nodecheckVerdict is what the built-in config does with xid, in words.
func nodecheckVerdict(verdicts map[int]Status, xid int) string {
	if xidDecoded(xid) {
		return "by message"
	}
	switch xidStatus(verdicts, xid, "x") {
	case StatusFail:
		return "fail, `" + string(remedyForXID(xid, "x")) + "`"
	case StatusSkip:
		return "ignored"
	}
	return "warn"
}

// TestXIDCatalogPeersDoc writes docs/xid-catalog.md's table of the XIDs where gpud's or
// NVSentinel's verdicts differ from the catalog's (-update rewrites it).
func TestXIDCatalogPeersDoc(t *testing.T) {
	c, err := xidcatalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	gpud := peerVerdicts(t, "gpud_xid_details.csv")           // event_type, repair_actions
	nvs := peerVerdicts(t, "nvsentinel_xiderrorsmapping.csv") // mnemonic, action, severity
	verdicts := (xidErrors{}).Section().(*xidErrorsConfig).xidVerdicts()
	var table strings.Builder
	table.WriteString("| XID | mnemonic | NVIDIA: immediate / investigatory | gpud | NVSentinel | nodecheck |\n|---|---|---|---|---|---|\n")
	rows := 0
	for x := 1; x <= 173; x++ {
		e, inCat := c.Lookup(x)
		g, inG := gpud[x]
		n, inN := nvs[x]
		if !inCat && !inG && !inN {
			continue
		}
		nd := nodecheckVerdict(verdicts, x)
		ndFail := strings.HasPrefix(nd, "fail")
		gDiff := x < 144 || x > 150 // gpud decodes 144-150 as nodecheck does
		if gDiff {
			gDiff = !inG || (g[0] == "Fatal") != ndFail || nd == "by message"
		}
		nAction := ""
		nDiff := !inN
		if inN {
			nAction = n[1]
			switch {
			case nAction == "UNEXPECTED_ERR_REPORT_ISSUE":
				nAction = "CONTACT_SUPPORT"
			case strings.HasPrefix(nAction, "Follow guidance"):
				nAction = "XID_154"
			}
			nDiff = nAction != e.Immediate || (n[2] == "FATAL") != ndFail || nd == "by message"
		}
		if !gDiff && !nDiff {
			continue
		}
		rows++
		gc, nc := "", ""
		switch {
		case !gDiff && x >= 144 && x <= 150:
			gc = "by the decode sheet"
		case inG:
			gc = g[0]
			if g[1] != "" {
				gc += " (" + g[1] + ")"
			}
		default:
			gc = "-"
		}
		if inN {
			nc = n[1] + ", " + n[2]
			if strings.HasPrefix(n[1], "Follow guidance") {
				nc = "follow the other XID, " + n[2]
			}
		} else {
			nc = "-"
		}
		imm := "-"
		switch {
		case inCat && e.Immediate == "":
			imm = "no bucket"
		case inCat && e.Investigatory == "":
			imm = e.Immediate
		case inCat:
			imm = e.Immediate + " / " + e.Investigatory
		}
		fmt.Fprintf(&table, "| %d | %s | %s | %s | %s | %s |\n", x, strings.ReplaceAll(e.Mnemonic, " ", ""), strings.ReplaceAll(imm, "|", "/"), gc, nc, nd)
	}
	if rows < 10 {
		t.Fatalf("only %d rows differ: the peers' files did not read", rows)
	}
	const path = "../docs/xid-catalog.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- peers: generated by go test ./checks -run TestXIDCatalogPeersDoc -update -->\n", "<!-- end of peers -->"
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks %q ... %q", path, begin, end)
	}
	got := doc[:i+len(begin)] + table.String() + doc[j:]
	if got == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the table of differences is out of date: run go test ./checks -run TestXIDCatalogPeersDoc -update", path)
}

// TestXIDCatalogOverTime judges NVLink5 and XID 154 lines through the history with the
// built-in rules: a RESET_GPU row sticks until the GPU is reset, a non-fatal row of the same
// XID only warns, and 154 naming a reboot sticks until a reboot. The 149 lines are gpud's
// captures (#1174, and a gpud user's BER line), the 154 lines NVSentinel's test lines; kernel
// times invented.
func TestXIDCatalogOverTime(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rules := (xidErrors{}).Section().(*xidErrorsConfig).rules(history.DefaultRules())
	judge := func(log string) []history.Judgement {
		h := history.New("gpu01")
		kl := history.ScanKernelLog(log)
		now := t0.Add(time.Hour)
		h.Merge(now, history.Observation{Time: now, BootID: "a", BootTime: t0, XIDs: kl.XIDs}, history.DefaultLimits())
		return h.JudgeXIDs(now, rules)
	}
	ber := "[  100.000000] NVRM: Xid (PCI:0018:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)\n"
	netir := "[  100.000100] NVRM: Xid (PCI:0018:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
	for _, tc := range []struct {
		name, log string
		want      []string // rule:XID of each judgement
		remedy    Remedy   // of the failing one
		until     string   // in its summary
	}{
		{"non-fatal 149 warns", ber, []string{"xid_recent:149"}, "", ""},
		{"fatal 149 sticks until a reset, beside a non-fatal one", ber + netir, []string{"xid_sticky:149"}, RemedyResetGPU, "sticky until a GPU reset"},
		{"154 to Drain and Reset sticks until a reset", "[  100.000000] NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)\n",
			[]string{"xid_sticky:154"}, RemedyResetGPU, "sticky until a GPU reset"},
		{"154 to Node Reboot Required sticks until a reboot (invented)", "[  100.000000] NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n",
			[]string{"xid_sticky:154"}, RemedyReboot, "sticky until a reboot"},
		{"154 to None warns (invented)", "[  100.000000] NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)\n",
			[]string{"xid_recent:154"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := judge(tc.log)
			var got []string
			for _, j := range js {
				got = append(got, fmt.Sprintf("%s:%d", j.Rule, j.XID))
				if j.Status == history.StatusFail {
					if r := (xidErrors{}).judgementRemedy(j); r != tc.remedy {
						t.Errorf("remedy %q, want %q", r, tc.remedy)
					}
					if !strings.Contains(j.Summary, tc.until) {
						t.Errorf("summary %q lacks %q", j.Summary, tc.until)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("judgements %v, want %v", got, tc.want)
			}
		})
	}
}

// TestXIDErrorsCatalogDamaged: a build whose embedded catalog does not parse cannot judge
// XIDs, and says so rather than passing.
func TestXIDErrorsCatalogDamaged(t *testing.T) {
	f := &execFacts{fakeFacts: &fakeFacts{gpus: h100NVML()}, cmds: map[string]node.CmdResult{dmesgCmd: {Stdout: xidLog(t, "gpud-pr1174.log")}}}
	env := gpuEnv(f, "gpu-h100-01", nil) // the config, with its lists, is made before the damage
	load := xidcatalog.Load
	t.Cleanup(func() { xidcatalog.Load = load })
	xidcatalog.Load = func() (*xidcatalog.Catalog, error) {
		return nil, errors.New("catalog.csv:3: xid \"x\": give a number from 1 to 999")
	}
	got := xidErrors{}.Run(context.Background(), env)
	want := "the built-in XID catalog does not parse: catalog.csv:3: xid \"x\": give a number from 1 to 999 (a damaged build: reinstall nodecheck)"
	if got.Status != StatusError || got.Summary != want {
		t.Errorf("%s %q", got.Status, got.Summary)
	}
}
