package node

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/files"
)

// Process owners on the live node. NVML lists a GPU's compute processes by PID only; who runs
// them and what they are comes from /proc/<pid>/status ("Uid:"), /proc/<pid>/comm and
// /etc/passwd, all read under Paths.FS like any other file, so fixture trees stand in for
// them. os/user is deliberately not used: with cgo it asks NSS (getpwuid_r), which on a node
// bound to LDAP or SSSD can block for as long as the directory server does, inside a prolog
// that has 5 s. A user only the directory knows is then left nameless (UID still set).

// passwdLimit bounds /etc/passwd: local files have tens of lines; a site that copies its
// whole directory into it may reach a few MiB, and beyond that the names are not worth the
// read.
const passwdLimit = 4 << 20

// procFileLimit bounds /proc/<pid>/status (about 1.5 KiB) and comm (16 bytes).
const procFileLimit = 64 << 10

// fillProcessOwners returns inv with UID, User and Command set for every compute process,
// read from the node. A process that is gone (it exited after NVML listed it) or whose
// status cannot be read gets UID -1. inv is copied before any change, so a GPUSource that
// keeps its reading is not modified behind its back.
func (l *Live) fillProcessOwners(ctx context.Context, inv GPUInventory) GPUInventory {
	some := false
	for _, g := range inv.Devices {
		if g.Compute != nil && len(g.Compute.Processes) > 0 {
			some = true
			break
		}
	}
	if !some {
		return inv
	}
	inv = inv.Clone()
	var users map[int]string
	if b, err := l.readBounded(ctx, "/etc/passwd", passwdLimit); err == nil {
		users = parsePasswd(b)
	}
	type owner struct {
		uid     int
		command string
	}
	seen := map[uint32]owner{} // a process on several GPUs is read once
	for i := range inv.Devices {
		c := inv.Devices[i].Compute
		if c == nil {
			continue
		}
		for j := range c.Processes {
			p := &c.Processes[j]
			o, ok := seen[p.PID]
			if !ok {
				o = owner{uid: -1}
				if ctx.Err() == nil {
					o.uid, o.command = l.readOwner(ctx, p.PID)
				}
				seen[p.PID] = o
			}
			p.UID, p.Command, p.User = o.uid, o.command, ""
			if o.uid >= 0 {
				p.User = users[o.uid]
			}
		}
	}
	return inv
}

// readOwner reads a process's real uid and command name; uid is -1 when the process is gone
// or its status cannot be read or parsed.
func (l *Live) readOwner(ctx context.Context, pid uint32) (uid int, command string) {
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	uid = -1
	if b, err := l.readBounded(ctx, dir+"/status", procFileLimit); err == nil {
		if u, ok := parseStatusUID(b); ok {
			uid = u
		}
	}
	if b, err := l.readBounded(ctx, dir+"/comm", procFileLimit); err == nil {
		command = strings.TrimSuffix(string(b), "\n")
	}
	return uid, command
}

// readBounded is ReadFile with its own size bound.
func (l *Live) readBounded(ctx context.Context, path string, limit int64) ([]byte, error) {
	return files.Read(ctx, l.hostPath(path), liveLimits(limit))
}

// parseStatusUID returns the real uid of a /proc/<pid>/status: the first of the four
// numbers on its "Uid:" line (real, effective, saved, filesystem; proc(5)).
func parseStatusUID(b []byte) (int, bool) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) == 0 {
			return 0, false
		}
		u, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return 0, false
		}
		return int(u), true
	}
	return 0, false
}

// parsePasswd maps uids to user names from /etc/passwd (passwd(5): name:password:uid:gid:
// gecos:dir:shell). The first line for a uid wins, as getpwuid(3) answers from files. Lines
// that are blank, comments, NIS compat entries ("+", "-") or do not parse are ignored.
func parsePasswd(b []byte) map[int]string {
	users := map[int]string{}
	for l := range bytes.Lines(b) {
		line := strings.TrimSuffix(string(l), "\n")
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.SplitN(line, ":", 4)
		if len(f) < 4 || f[0] == "" {
			continue
		}
		u, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			continue
		}
		if _, dup := users[int(u)]; !dup {
			users[int(u)] = f[0]
		}
	}
	return users
}
