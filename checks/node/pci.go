package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// pciDevicesDir is /sys/bus/pci/devices relative to the sysfs root.
const pciDevicesDir = "bus/pci/devices"

// pciAttrs are the attribute files readPCIDevices reads in each function's directory, and
// so the ones a Recorder records.
var pciAttrs = []string{
	"vendor", "device", "class",
	"current_link_width", "max_link_width", "current_link_speed", "max_link_speed",
}

// readPCIDevices lists every function under <sys>/bus/pci/devices, reading only the
// attributes in pciAttrs. Live passes the node's /sys and Snapshot passes <dir>/fs/sys, so
// both give the same answer for the same tree.
//
// This deliberately does not use procfs' sysfs.FS.PciDevices (v0.23.0): one function with
// an attribute it cannot parse (a link width the kernel reports as "255", a speed of
// "Unknown") fails the whole listing, which would hide every GPU behind one odd bridge,
// and its location string prints 0000:18:00:0 rather than sysfs' 0000:18:00.0.
//
// Absence of bus/pci/devices gives (nil, nil). A missing attribute, unparsable text, or a
// link attribute the kernel refuses with EINVAL (current_link_speed_show does when the link
// status register cannot be read) leaves its field 0. Other read errors are joined into
// the returned error, which then comes with every function that could be listed.
func readPCIDevices(ctx context.Context, sys fs.FS) ([]PCIDevice, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", pciDevicesDir, err)
	}
	ents, err := fs.ReadDir(sys, pciDevicesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", pciDevicesDir, bare(err))
	}
	devs := make([]PCIDevice, 0, len(ents))
	var errs []error
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("list /sys/%s: %w", pciDevicesDir, err)
		}
		d, err := readPCIDevice(sys, e.Name())
		if err != nil {
			errs = append(errs, err)
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(a, b PCIDevice) int { return comparePCIAddress(a.Address, b.Address) })
	return devs, errors.Join(errs...)
}

// readPCIDevice reads one function. It always returns the device, with what could be read.
func readPCIDevice(sys fs.FS, addr string) (PCIDevice, error) {
	entry := path.Join(pciDevicesDir, addr)
	d := PCIDevice{Address: addr, SysfsPath: "/sys/" + entry}
	// On a node each entry is a relative link into /sys/devices/...: follow it by hand to
	// name the function's place in the tree. A link that is absolute or leads out of /sys
	// (neither happens in sysfs) keeps the bus path.
	if target, err := fs.ReadLink(sys, entry); err == nil && !path.IsAbs(target) {
		if p := path.Join(path.Dir(entry), target); fs.ValidPath(p) {
			d.SysfsPath = "/sys/" + p
			// Read the attributes at the link's target: resolving the link once instead of
			// for every attribute matters in a replay, where os.Root resolves each link
			// itself, component by component.
			if isDir(sys, p) {
				entry = p
			}
		}
	}
	var errs []error
	read := func(name string) string {
		b, err := readBounded(sys, path.Join(entry, name), sysfsAttrLimit)
		switch {
		case err == nil:
			return strings.TrimSpace(string(b))
		case errors.Is(err, fs.ErrNotExist):
		case strings.Contains(name, "_link_") && errors.Is(err, syscall.EINVAL):
			// The link attributes return -EINVAL when the PCIe capability cannot be read
			// (drivers/pci/pci-sysfs.c): the value is unknown, which is not a read error.
		default:
			errs = append(errs, fmt.Errorf("read %s/%s: %w", d.SysfsPath, name, bare(err)))
		}
		return ""
	}
	id := func(name string) uint32 {
		v, _ := parseHexID(read(name)) // unparsable or absent: 0
		return v
	}
	width := func(name string) int {
		v, _ := parsePCILinkWidth(read(name))
		return v
	}
	speed := func(name string) float64 {
		v, _ := parsePCILinkSpeed(read(name))
		return v
	}
	d.Vendor, d.Device, d.Class = id("vendor"), id("device"), id("class")
	if !linkJudged(d.Class) {
		// A node has hundreds of functions, most of them chipset bridges and peripherals
		// whose links no check judges; four more reads for each would dominate the prolog.
		return d, errors.Join(errs...)
	}
	d.CurLinkWidth, d.MaxLinkWidth = width("current_link_width"), width("max_link_width")
	d.CurLinkSpeedGTs, d.MaxLinkSpeedGTs = speed("current_link_speed"), speed("max_link_speed")
	return d, errors.Join(errs...)
}

// linkJudged tells whether the link attributes of a function of this class are read:
// network controllers (0x02, InfiniBand and Ethernet HCAs), display controllers (0x03,
// GPUs) and "other" bridges (0x0680, NVSwitches). Other functions carry zero widths.
func linkJudged(class uint32) bool {
	base := class >> 16
	return base == 0x02 || base == 0x03 || class>>8 == 0x0680
}

// parseHexID reads a PCI ID attribute: vendor and device ("0x10de", "0x2330", written
// "0x%04x\n" by pci-sysfs.c) and class ("0x030200", "0x%06x\n"). The "0x" prefix and 1 to 8
// hex digits are required; surrounding space is ignored.
func parseHexID(s string) (uint32, error) {
	t := strings.TrimSpace(s)
	digits, ok := strings.CutPrefix(t, "0x")
	if !ok {
		return 0, fmt.Errorf("parse PCI id %q: want 0x and hex digits", s)
	}
	if digits == "" || len(digits) > 8 || strings.Trim(digits, "0123456789abcdefABCDEF") != "" {
		return 0, fmt.Errorf("parse PCI id %q: %q is not 1 to 8 hex digits", s, digits)
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("parse PCI id %q: %w", s, err) // unreachable: 8 hex digits fit
	}
	return uint32(v), nil
}

// maxPCILinkWidth is the widest link PCIe defines (x32).
const maxPCILinkWidth = 32

// parsePCILinkWidth reads current_link_width or max_link_width, a decimal lane count. A
// value outside 1..32 is "unknown" and gives 0 without error: the kernel writes 255
// (PCIE_LNK_WIDTH_UNKNOWN) when it cannot tell, 0 is the reserved encoding, and a function
// that fell off the bus reads all ones from config space, which decodes as 63.
func parsePCILinkWidth(s string) (int, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.Trim(t, "0123456789") != "" || len(t) > 9 {
		return 0, fmt.Errorf("parse link width %q: not a decimal number", s)
	}
	v, err := strconv.Atoi(t)
	if err != nil {
		return 0, fmt.Errorf("parse link width %q: %w", s, err) // unreachable: 9 digits fit
	}
	if v < 1 || v > maxPCILinkWidth {
		return 0, nil
	}
	return v, nil
}

// parsePCILinkSpeed reads current_link_speed or max_link_speed as GT/s: "32.0 GT/s PCIe"
// is 32, "2.5 GT/s PCIe" is 2.5. Current kernels write "%s GT/s PCIe" (pci_speed_string in
// drivers/pci/probe.c); older ones wrote "8 GT/s", "5 GT/s" and "2.5 GT/s" without "PCIe",
// which are accepted too. "Unknown" (today's text for an unknown speed) and "Unknown speed"
// (older kernels) give 0 without error; anything else is refused rather than guessed at.
func parsePCILinkSpeed(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "Unknown" || t == "Unknown speed" {
		return 0, nil
	}
	f := strings.Fields(t)
	if len(f) < 2 || len(f) > 3 || f[1] != "GT/s" || len(f) == 3 && f[2] != "PCIe" {
		return 0, fmt.Errorf("parse link speed %q: want \"N GT/s PCIe\"", s)
	}
	num := f[0]
	if strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 ||
		strings.HasPrefix(num, ".") || strings.HasSuffix(num, ".") || len(num) > 8 {
		return 0, fmt.Errorf("parse link speed %q: %q is not a number", s, num)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("parse link speed %q: %w", s, err) // unreachable: 8 digits fit
	}
	return v, nil
}

// comparePCIAddress orders sysfs addresses "dddd:bb:dd.f" by domain as a number, then by
// the rest as text (bus, device and function are fixed-width lowercase hex, so text order
// is numeric order). Domains differ in width: VMD puts devices in domain 10000 and later.
// Addresses that do not parse fall back to plain comparison, so the order is total.
func comparePCIAddress(a, b string) int {
	da, ra, oka := strings.Cut(a, ":")
	db, rb, okb := strings.Cut(b, ":")
	na, erra := strconv.ParseUint(da, 16, 64)
	nb, errb := strconv.ParseUint(db, 16, 64)
	if oka && okb && erra == nil && errb == nil {
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}
