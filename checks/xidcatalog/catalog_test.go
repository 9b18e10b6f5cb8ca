package xidcatalog

import (
	"strings"
	"testing"
)

// TestEmbedded: the data files parse, with their headers, and hold the catalog's XIDs and the
// decode sheet's rows.
func TestEmbedded(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) != 172 || len(c.NVLink5) != 94 {
		t.Errorf("%d XIDs, %d NVLink5 rows; want 172 and 94", len(c.Entries), len(c.NVLink5))
	}
	if c.Version == "" || !strings.Contains(c.Source, "4a8de33a3f02e207f39e9023d67125592d599731") {
		t.Errorf("header: version %q, source %q", c.Version, c.Source)
	}
	for _, tc := range []struct {
		xid                  int
		immediate, mnemonic  string
		wantOK               bool
		wantUnused, wantNone bool
	}{
		{79, "RESTART_BM", "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", true, false, false},
		{1, "CONTACT_SUPPORT", "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", true, true, false},
		{172, "", "UNCORRECTABLE_SRAM_ERROR", true, false, true},
		{173, "", "", false, false, false},
		{0, "", "", false, false, false},
	} {
		e, ok := c.Lookup(tc.xid)
		if ok != tc.wantOK || e.Immediate != tc.immediate || e.Mnemonic != tc.mnemonic || e.Unused() != tc.wantUnused {
			t.Errorf("Lookup(%d) = %+v, %v", tc.xid, e, ok)
		}
	}
}

// TestParseErrors: damaged data files are refused with the file, line and what to fix.
func TestParseErrors(t *testing.T) {
	hdr := "# version: v\nxid,mnemonic,description,immediate,investigatory\n"
	nvl := "xid,unit,intrinfo_v1,intrinfo_v2,error_status,resolution,action2,investigatory,severity\n"
	pat := strings.Repeat("-", 32)
	for _, tc := range []struct{ name, cat, nvl, want string }{
		{"good", hdr + "1,A,Unused,CONTACT_SUPPORT,\n", nvl + "150,MSE," + pat + "," + pat + ",0x0,RESET_GPU,,CONTACT_SUPPORT,Fatal\n", ""},
		{"xid not a number", hdr + "x,A,Unused,CONTACT_SUPPORT,\n", nvl, "catalog.csv:3: xid \"x\": give a number from 1 to 999"},
		{"out of order", hdr + "2,A,,,\n1,B,,,\n", nvl, "catalog.csv:4: xid 1: keep the rows in ascending XID order, each once"},
		{"short row", hdr + "2,A,,\n", nvl, "catalog.csv: record on line 3: wrong number of fields"},
		{"nvlink xid", hdr, nvl + "151,MSE," + pat + "," + pat + ",0x0,RESET_GPU,,,\n", "nvlink5.csv:2: xid \"151\": give 144 to 150"},
		{"nvlink status", hdr, nvl + "150,MSE," + pat + "," + pat + ",zz,RESET_GPU,,,\n", "nvlink5.csv:2: error_status \"zz\": give a 32-bit hex number such as 0x00000002"},
		{"nvlink pattern", hdr, nvl + "150,MSE,01," + pat + ",0x0,RESET_GPU,,,\n", "nvlink5.csv:2: IntrInfo pattern \"01\": give 32 characters of 0, 1 and -"},
		{"empty", "", nvl, "catalog.csv:1: EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.cat, tc.nvl)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMatches: a pattern's fixed bits must match, '-' takes either; bit 31 comes first.
func TestMatches(t *testing.T) {
	v1 := "------000000----------0111000110" // 149 NETIR_LINK_EVT/NETIR_LINK_DOWN, V1
	for _, tc := range []struct {
		pattern string
		v       uint32
		want    bool
	}{
		{v1, 0x000001c6, true},
		{v1, 0x000001c7, false}, // bit 0 set where the pattern wants 0
		{v1, 0x001001c6, false}, // bit 20 set: subcode 1, not 0
		{v1, 0xfc0001c6, true},  // bits 26-31 are '-'
		{"0", 0, false},         // not 32 characters
		{strings.Repeat("1", 32), 0xffffffff, true},
		{strings.Repeat("1", 32), 0xfffffffe, false},
	} {
		if got := Matches(tc.pattern, tc.v); got != tc.want {
			t.Errorf("Matches(%s, %#x) = %v, want %v", tc.pattern, tc.v, got, tc.want)
		}
	}
}

// TestDecodeUnique: wherever two rows of one XID and Error Status could both match an
// IntrInfo (their V1 or V2 patterns overlap), they agree on the resolution, so the first
// match decodes the event; and each row's own pattern decodes to that row's resolution.
func TestDecodeUnique(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	overlap := func(a, b string) bool {
		for i := range 32 {
			if a[i] != '-' && b[i] != '-' && a[i] != b[i] {
				return false
			}
		}
		return true
	}
	for i, a := range c.NVLink5 {
		for _, b := range c.NVLink5[i+1:] {
			if a.XID != b.XID || a.ErrorStatus != b.ErrorStatus || a.Resolution == b.Resolution {
				continue
			}
			for _, pa := range []string{a.IntrInfoV1, a.IntrInfoV2} {
				for _, pb := range []string{b.IntrInfoV1, b.IntrInfoV2} {
					if overlap(pa, pb) {
						t.Errorf("XID %d status %#x: %s (%s) and %s (%s) overlap and disagree", a.XID, a.ErrorStatus, a.Unit, a.Resolution, b.Unit, b.Resolution)
					}
				}
			}
		}
		for _, p := range []string{a.IntrInfoV1, a.IntrInfoV2} {
			var v uint32
			for k := range 32 {
				if p[k] == '1' {
					v |= 1 << (31 - k)
				}
			}
			rs := c.Decode(a.XID, NVLinkEvent{IntrInfo: v, ErrorStatus: a.ErrorStatus})
			if len(rs) == 0 || rs[0].Resolution != a.Resolution {
				t.Errorf("XID %d %s %#x %s: decodes to %+v", a.XID, a.Unit, a.ErrorStatus, p, rs)
			}
		}
	}
}

// TestParseNVLink reads the driver's NVLink5 messages. Lines are captures unless marked.
func TestParseNVLink(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      NVLinkEvent
		ok        bool
	}{
		// gpud #1174 (checks/testdata/xid/gpud-pr1174.log)
		{"NETIR fatal", "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			NVLinkEvent{Unit: "NETIR", Fatal: true, Severity: true, IntrInfo: 0x000fe406}, true},
		// gpud kmsg_extended_test.go, lines a user supplied: pid and name before the unit
		{"pid and name first", "pid=876767, name=ray::WorkerDict, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
			NVLinkEvent{Unit: "RLW_RXPIPE", Severity: true, IntrInfo: 0x0409a0c2, ErrorStatus: 8}, true},
		// NVSentinel syslog-health-monitor's XID parser tests: the driver's double spaces
		{"double spaces", "NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			NVLinkEvent{Unit: "NETIR_LINK_EVT", Fatal: true, Severity: true, IntrInfo: 0x025525c6}, true},
		// NVSentinel's journalctl collector test: no words in parentheses to decode
		{"no IntrInfo", "NETIR_INT  Fatal   XC0 i0 Link -1", NVLinkEvent{}, false},
		{"two words closed (invented)", "X Nonfatal (0x1 0x2)", NVLinkEvent{Unit: "X", Severity: true, IntrInfo: 1, ErrorStatus: 2}, true},
		{"one word (invented)", "X Fatal (0x000fe406)", NVLinkEvent{}, false},
		{"nine digits (invented)", "X Fatal (0x1000fe406 0x0)", NVLinkEvent{}, false},
		{"not hex (invented)", "X Fatal (0x000fe40g 0x0)", NVLinkEvent{}, false},
		{"cut after the status (invented)", "X Fatal XC0 i0 Link 1 (0x000fe406 0x00000000", NVLinkEvent{Unit: "X", Fatal: true, Severity: true, IntrInfo: 0x000fe406}, true},
		{"no severity word (invented)", "(0x000fe406 0x00000000)", NVLinkEvent{IntrInfo: 0x000fe406}, true},
		{"empty", "", NVLinkEvent{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseNVLink(tc.msg)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("ParseNVLink = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseNVLink: any message reads without a panic, and what it reads, it read from the
// message's own "(0x" words.
func FuzzParseNVLink(f *testing.F) {
	for _, s := range []string{
		"NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
		"pid=876767, name=ray::WorkerDict, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
		"NETIR_INT  Fatal   XC0 i0 Link -1", "(0x", "(0x 0x)", "Fatal (0xffffffff 0xffffffff)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		ev, ok := ParseNVLink(msg)
		if ok && !strings.Contains(msg, "(0x") {
			t.Errorf("ParseNVLink(%q) = %+v without \"(0x\"", msg, ev)
		}
		if !ok && ev != (NVLinkEvent{}) {
			t.Errorf("ParseNVLink(%q) not ok but %+v", msg, ev)
		}
	})
}
