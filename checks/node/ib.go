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

// ibClassDir is /sys/class/infiniband relative to the sysfs root.
const ibClassDir = "class/infiniband"

// readIBPorts lists every port under <sys>/class/infiniband, reading only state, phys_state,
// rate and link_layer of each. Live passes the node's /sys and Snapshot passes <dir>/fs/sys, so
// both implementations give the same answer for the same tree.
//
// This deliberately does not use procfs' sysfs.FS.InfiniBandClass (v0.23.0): it reads every file
// under ports/<n>/counters and ports/<n>/hw_counters whenever those directories exist, with no
// way to turn that off, and nodecheck never reads port counters on every run
// (on some ConnectX-7 cards each read floods the kernel log). It also fails the whole listing
// when one device lacks fw_ver or one port has an unparsable state, which would hide the
// healthy ports behind one broken one.
//
// Absence of class/infiniband gives (nil, nil): no InfiniBand here. A port whose attribute
// text cannot be parsed is kept, with StateID/PhysStateID/RateGbps 0 and the raw text in
// State/PhysState/Rate, so that the check names it rather than losing it; a missing attribute
// leaves its field empty. Read errors (a device whose ports cannot be listed, an unreadable
// attribute) are joined into the returned error, which then comes with every port that could
// be read.
func readIBPorts(ctx context.Context, sys fs.FS) ([]IBPort, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", ibClassDir, err)
	}
	devs, err := fs.ReadDir(sys, ibClassDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", ibClassDir, bare(err))
	}
	var ports []IBPort
	var errs []error
	for _, d := range devs {
		// Entries are symlinks into /sys/devices on a real node, so d.IsDir() is false:
		// every entry is tried as a device.
		dev := d.Name()
		portsDir := path.Join(ibClassDir, dev, "ports")
		ents, err := fs.ReadDir(sys, portsDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("list /sys/%s: %w", portsDir, bare(err)))
			continue
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("list /sys/%s: %w", ibClassDir, err)
			}
			n, err := strconv.ParseUint(e.Name(), 10, 32)
			if err != nil {
				errs = append(errs, fmt.Errorf("/sys/%s/%s: port name is not a number", portsDir, e.Name()))
				continue
			}
			p, err := readIBPort(sys, dev, uint(n))
			if err != nil {
				errs = append(errs, err)
			}
			ports = append(ports, p)
		}
	}
	slices.SortFunc(ports, func(a, b IBPort) int {
		if c := naturalCompare(a.Device, b.Device); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
	return ports, errors.Join(errs...)
}

// readIBPort reads the four attributes of one port. It always returns the port, with what
// could be read, and an error for reads that failed other than by absence.
func readIBPort(sys fs.FS, dev string, port uint) (IBPort, error) {
	p := IBPort{Device: dev, Port: port}
	dir := path.Join(ibClassDir, dev, "ports", strconv.FormatUint(uint64(port), 10))
	var errs []error
	read := func(name string) string {
		b, err := readBounded(sys, path.Join(dir, name), sysfsAttrLimit)
		switch {
		case err == nil:
			return strings.TrimSpace(string(b))
		case errors.Is(err, fs.ErrNotExist):
		case name == "rate" && errors.Is(err, syscall.EINVAL):
			// rate_show returns -EINVAL when the port has no valid active width, which
			// happens on ports that are down (drivers/infiniband/core/sysfs.c): the rate is
			// unknown, not an error.
		default:
			errs = append(errs, fmt.Errorf("read /sys/%s/%s: %w", dir, name, bare(err)))
		}
		return ""
	}

	if raw := read("state"); raw != "" {
		p.StateID, p.State = parseIBStateLenient(raw)
	}
	if raw := read("phys_state"); raw != "" {
		p.PhysStateID, p.PhysState = parseIBStateLenient(raw)
	}
	if raw := read("rate"); raw != "" {
		p.Rate = raw
		p.RateGbps, _ = parseIBRate(raw) // unparsable: 0 with the raw text in Rate
	}
	p.LinkLayer = read("link_layer")
	return p, errors.Join(errs...)
}

// parseIBStateLenient is parseIBState keeping unparsable text: id 0 and the raw text as name.
// 0 is also the kernel's IB_PORT_NOP, which is never a healthy state either.
func parseIBStateLenient(raw string) (uint, string) {
	id, name, err := parseIBState(raw)
	if err != nil {
		return 0, raw
	}
	return id, name
}

// parseIBState splits a port's state or phys_state attribute, "4: ACTIVE" or "5: LinkUp",
// into its number and name. The kernel writes "%d: %s" (state_show and phys_state_show in
// drivers/infiniband/core/sysfs.c); surrounding space and the trailing newline are ignored.
func parseIBState(s string) (uint, string, error) {
	t := strings.TrimSpace(s)
	idText, name, ok := strings.Cut(t, ":")
	if !ok {
		return 0, "", fmt.Errorf("parse state %q: want \"ID: NAME\"", s)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 32)
	if err != nil {
		return 0, "", fmt.Errorf("parse state %q: id %q is not a number", s, strings.TrimSpace(idText))
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, "", fmt.Errorf("parse state %q: no name after the id", s)
	}
	return uint(id), name, nil
}

// parseIBRate reads the Gb/s figure of a port's rate attribute: "400 Gb/sec (4X NDR)" is 400,
// "2.5 Gb/sec (1X SDR)" is 2.5. The kernel writes "%d%s Gb/sec (%dX%s)" with "%s" either ""
// or ".5" (rate_show in drivers/infiniband/core/sysfs.c), so the number is digits with at
// most one decimal point; anything else is refused rather than guessed at.
func parseIBRate(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "Gb/sec" {
		return 0, fmt.Errorf("parse rate %q: want \"N Gb/sec ...\"", s)
	}
	num := f[0]
	if strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 || strings.Trim(num, ".") == "" {
		return 0, fmt.Errorf("parse rate %q: %q is not a number", s, num)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		// Only a number too large for float64 gets here.
		return 0, fmt.Errorf("parse rate %q: %w", s, err)
	}
	return v, nil
}

// naturalCompare orders names with their digit runs compared as numbers, so that mlx5_2 comes
// before mlx5_10 as admins expect. Equal digit runs with different zero padding fall back to
// plain comparison, so the order is total.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
