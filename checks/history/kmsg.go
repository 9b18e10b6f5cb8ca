package history

import (
	"strconv"
	"strings"
	"time"
)

// KernelLog is what ScanKernelLog found in a kernel log.
type KernelLog struct {
	XIDs        []XIDLine
	Links       []LinkLine
	DriverLoads []int64
}

// ScanKernelLog reads the lines of a kernel log as `dmesg --kernel --nopager` prints them
// ("[  123.456789] ..."), as /dev/kmsg and pstore dumps do ("<6>[  123.456789] ...") or as
// a journal or syslog with kernel times does ("... kernel: [82659.755847] ..."). It keeps the
// XID lines, the link up/down lines of mlx5 interfaces that carry a kernel time (a run can
// only tell a new one from an old one by it), and the kernel times of the NVIDIA driver's
// loads. Everything else, the SATA "link down" lines included, is left alone.
func ScanKernelLog(text string) KernelLog {
	var kl KernelLog
	for line := range strings.Lines(text) {
		if x, ok := ParseXIDLine(line); ok {
			kl.XIDs = append(kl.XIDs, x)
			continue
		}
		us, rest, ok := KernelTime(line)
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, driverLoadMarker) {
			kl.DriverLoads = append(kl.DriverLoads, us)
		} else if l, ok := parseMLX5Link(rest); ok {
			l.KernelUS = us
			kl.Links = append(kl.Links, l)
		}
	}
	return kl
}

// driverLoadMarker starts the line the NVIDIA driver prints when its module loads ("NVRM:
// loading NVIDIA UNIX x86_64 Kernel Module  550.144.03  Mon Dec 30 ..."); a second one in a
// boot is a driver reload.
const driverLoadMarker = "NVRM: loading NVIDIA UNIX"

// KernelTime reads the kernel time at the head of line, in µs since boot, and returns the
// rest of the line after it. ok is false when the line has none (dmesg --ctime's wall times
// included).
func KernelTime(line string) (us int64, rest string, ok bool) {
	s := line
	if strings.HasPrefix(s, "<") {
		if i := strings.IndexByte(s, '>'); i > 1 && i <= 4 && digits(s[1:i]) {
			s = s[i+1:]
		}
	}
	if !strings.HasPrefix(s, "[") {
		i := strings.Index(s, "kernel: [")
		if i < 0 {
			return 0, line, false
		}
		s = s[i+len("kernel: "):]
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, line, false
	}
	sec, frac, found := strings.Cut(strings.TrimLeft(s[1:end], " "), ".")
	if !found || sec == "" || len(sec) > 10 || frac == "" || len(frac) > 9 || !digits(sec) || !digits(frac) {
		return 0, line, false
	}
	n, _ := strconv.ParseInt(sec, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return n*1e6 + f, strings.TrimLeft(s[end+1:], " "), true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// xidMarker starts the driver's XID message, "NVRM: Xid (PCI:0000:9b:00): 79, ..."
// (open-gpu-kernel-modules, nv_report_error; older drivers print the bus without "PCI:").
const xidMarker = "NVRM: Xid ("

// ParseXIDLine reads one kernel log line's XID message, with the line's kernel time when it
// has one and, for XID 13, the GPC and TPC it names. ok is false for a line that is not an
// XID message or whose bus id or number cannot be read.
func ParseXIDLine(line string) (XIDLine, bool) {
	i := strings.Index(line, xidMarker)
	if i < 0 {
		return XIDLine{}, false
	}
	bus, rest, found := strings.Cut(line[i+len(xidMarker):], "):")
	if !found {
		return XIDLine{}, false
	}
	bus = strings.ToLower(strings.TrimPrefix(bus, "PCI:"))
	if _, ok := NormalizeBus(bus); !ok || strings.Contains(bus, ".") {
		return XIDLine{}, false
	}
	rest = strings.TrimLeft(rest, " ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 3 {
		return XIDLine{}, false
	}
	x, _ := strconv.Atoi(rest[:n])
	if x < 1 {
		return XIDLine{}, false
	}
	msg := strings.TrimRight(strings.TrimLeft(strings.TrimPrefix(rest[n:], ","), " "), " \r\n")
	ev := XIDLine{Bus: bus, XID: x, Message: msg}
	if us, _, ok := KernelTime(line[:i]); ok {
		ev.KernelUS = us
	}
	switch {
	case x == 13:
		ev.Loc = gpcTPC(msg)
	case x >= 144 && x <= 150:
		ev.Loc = nvlinkWords(msg)
	}
	return ev, true
}

// nvlinkWords reads the IntrInfo and Error Status of an NVLink5 XID (144 to 150) message,
// "NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 ...)", as "25525c6/0":
// the pair NVIDIA's catalog decodes the XID by, so that lines of one XID that decode
// differently are kept apart, and the pair stays when the message is cut. Empty when absent.
func nvlinkWords(msg string) string {
	_, after, ok := strings.Cut(msg, "(0x")
	if !ok {
		return ""
	}
	w := strings.Fields(after)
	if len(w) < 2 {
		return ""
	}
	ii, es := w[0], strings.TrimSuffix(strings.TrimPrefix(w[1], "0x"), ")")
	if !hexWord(ii) || !hexWord(es) {
		return ""
	}
	return trimZeros(ii) + "/" + trimZeros(es)
}

func hexWord(s string) bool {
	return s != "" && len(s) <= 8 && strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

func trimZeros(s string) string {
	if t := strings.TrimLeft(strings.ToLower(s), "0"); t != "" {
		return t
	}
	return "0"
}

// gpcTPC reads "(GPC 7, TPC 7, SM 0)" from an XID 13 message as "7/7"; empty when absent.
func gpcTPC(msg string) string {
	_, rest, ok := strings.Cut(msg, "(GPC ")
	if !ok {
		return ""
	}
	gpc, rest, ok := strings.Cut(rest, ", TPC ")
	if !ok || !digits(gpc) || len(gpc) > 3 {
		return ""
	}
	n := 0
	for n < len(rest) && n < 4 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 3 {
		return ""
	}
	return gpc + "/" + rest[:n]
}

// parseMLX5Link reads mlx5e's carrier message as the kernel prints it after the timestamp:
// "mlx5_core 0000:41:00.0 enp65s0f0np0: Link up" (mlx5e_update_carrier, netdev_info "Link
// up"/"Link down"). mlx5_core prints nothing on a port change of an InfiniBand port (its
// port_change handler only forwards the event), so for IPoIB the syslog's networkd lines are
// the log's only trace.
func parseMLX5Link(rest string) (LinkLine, bool) {
	s, ok := strings.CutPrefix(rest, "mlx5_core ")
	if !ok {
		return LinkLine{}, false
	}
	bdf, s, ok := strings.Cut(s, " ")
	if !ok {
		return LinkLine{}, false
	}
	pci, ok := NormalizeBus(bdf)
	if !ok {
		return LinkLine{}, false
	}
	netdev, msg, ok := strings.Cut(s, ": ")
	if !ok || !validNetdev(netdev) {
		return LinkLine{}, false
	}
	switch strings.TrimRight(msg, " \r\n") {
	case "Link up":
		return LinkLine{Netdev: netdev, PCI: pci, Up: true, Src: "kernel"}, true
	case "Link down":
		return LinkLine{Netdev: netdev, PCI: pci, Up: false, Src: "kernel"}, true
	}
	return LinkLine{}, false
}

// validNetdev accepts a Linux interface name: 1 to 15 bytes, no space, '/' or ':'.
func validNetdev(s string) bool {
	if s == "" || len(s) > maxNetdevLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == '/' || c == ':' {
			return false
		}
	}
	return true
}

// ScanSyslog reads systemd-networkd's carrier lines from a syslog (/var/log/syslog or
// /var/log/messages): "Aug 17 06:18:01 host systemd-networkd[5398]: ib6: lost carrier" and
// "... ib6: Gained carrier", the lines Azure's link-flap checks count. Traditional timestamps
// have no year and no zone: they are read in loc, in the year that puts them no later than
// a day after now.
func ScanSyslog(text string, now time.Time, loc *time.Location) []LinkLine {
	var out []LinkLine
	for line := range strings.Lines(text) {
		if l, ok := ParseSyslogLink(line, now, loc); ok {
			out = append(out, l)
		}
	}
	return out
}

// ParseSyslogLink reads one syslog line of systemd-networkd's carrier messages.
func ParseSyslogLink(line string, now time.Time, loc *time.Location) (LinkLine, bool) {
	i := strings.Index(line, " systemd-networkd[")
	if i < 0 {
		return LinkLine{}, false
	}
	at, ok := syslogTime(line[:i], now, loc)
	if !ok {
		return LinkLine{}, false
	}
	_, s, ok := strings.Cut(line[i:], "]: ")
	if !ok {
		return LinkLine{}, false
	}
	netdev, msg, ok := strings.Cut(s, ": ")
	if !ok || !validNetdev(netdev) {
		return LinkLine{}, false
	}
	switch strings.ToLower(strings.TrimRight(msg, " \r\n")) {
	case "lost carrier":
		return LinkLine{Netdev: netdev, Wall: at, Src: "syslog"}, true
	case "gained carrier":
		return LinkLine{Netdev: netdev, Up: true, Wall: at, Src: "syslog"}, true
	}
	return LinkLine{}, false
}

// syslogTime reads the time at the head of "Aug 17 06:18:01 host" or
// "2024-08-17T06:18:01.123456+00:00 host".
func syslogTime(head string, now time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	if len(head) >= 16 && head[4] == '-' {
		f, _, _ := strings.Cut(head, " ")
		t, err := time.Parse(time.RFC3339Nano, f)
		return t, err == nil && t.Year() >= 2000 && t.Year() < 2100
	}
	if len(head) < 16 || head[15] != ' ' {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("Jan _2 15:04:05", head[:15], loc)
	if err != nil {
		return time.Time{}, false
	}
	t = t.AddDate(now.In(loc).Year()-t.Year(), 0, 0)
	if t.After(now.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t, true
}
