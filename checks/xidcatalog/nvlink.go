package xidcatalog

import (
	"strconv"
	"strings"
)

// NVLinkEvent is what the driver's message of an NVLink5 XID says after the number:
//
//	NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)
//
// the unit, the driver's own severity word, and the first two words in parentheses:
// IntrInfo and Error Status.
type NVLinkEvent struct {
	Unit        string // "NETIR_LINK_EVT"; empty when the message names none
	Fatal       bool   // the driver wrote "Fatal" (not "Nonfatal")
	Severity    bool   // the driver wrote either word
	IntrInfo    uint32
	ErrorStatus uint32
}

// ParseNVLink reads an NVLink5 XID message (the text after "149, "); ok is false when the
// message has no "(0x... 0x..." pair to decode. Messages that start with "pid=..., name=...,"
// are read past those fields.
func ParseNVLink(msg string) (NVLinkEvent, bool) {
	var ev NVLinkEvent
	open := strings.Index(msg, "(0x")
	if open < 0 {
		return ev, false
	}
	words := strings.Fields(msg[open+1:])
	if len(words) < 2 {
		return ev, false
	}
	ii, ok1 := hex32(words[0])
	es, ok2 := hex32(strings.TrimSuffix(words[1], ")"))
	if !ok1 || !ok2 {
		return ev, false
	}
	ev.IntrInfo, ev.ErrorStatus = ii, es
	head := strings.Fields(msg[:open])
	for i, w := range head {
		if w == "Fatal" || w == "Nonfatal" {
			ev.Fatal, ev.Severity = w == "Fatal", true
			if i > 0 {
				ev.Unit = strings.TrimSuffix(head[i-1], ",")
			}
			break
		}
	}
	return ev, true
}

// hex32 reads "0x025525c6" (8 hex digits at most).
func hex32(s string) (uint32, bool) {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || h == "" || len(h) > 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(h, 16, 32)
	return uint32(v), err == nil
}
