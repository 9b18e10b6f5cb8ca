package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ProcessInfo is one process as the processes fact records it: who runs what, never its
// arguments, which may hold secrets (a password on a command line) that a snapshot must not
// carry to a bug report.
type ProcessInfo struct {
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`  // real uid (/proc/PID/status Uid:); -1 when unreadable
	User string `json:"user"` // /etc/passwd's name for UID; "" when it has none (LDAP users)
	Comm string `json:"comm"` // the kernel's name of the process (/proc/PID/comm, at most 15 bytes)
	// Argv0 is the first word of its command line (/proc/PID/cmdline), as ps's args column
	// starts: "/usr/sbin/sshd", or a title the process set ("sshd:"); "" for kernel threads.
	Argv0 string `json:"argv0"`
	// Cgroup is the line of /proc/PID/cgroup that tells whether the process is a Slurm job's:
	// the first naming a Slurm hierarchy (v1: ".../slurm/uid_U/job_J/...", v2:
	// ".../slurmstepd.scope/job_J/..."), else the unified one ("0::/user.slice/..."), else
	// the first; "" when unreadable. Paths only: no argument of the process.
	Cgroup string `json:"cgroup,omitempty"`
}

// Processes is the ProcessesFact: every process of the node, by pid.
type Processes struct {
	Processes []ProcessInfo `json:"processes"`
	// CgroupsRead says each process's Cgroup was read (false in a snapshot recorded before
	// nodecheck recorded them, where Cgroup is empty for every process).
	CgroupsRead bool `json:"cgroups_read,omitempty"`
}

// maxProcesses bounds how many processes the fact reads: a node with more than this many is
// in trouble of its own, and the fact must still end in time.
const maxProcesses = 65536

// ProcessesFact lists the node's processes from /proc: pid, owner, kernel name and argv[0]
// (ps's user, comm and the first word of its args), for the checks that look for a daemon.
var ProcessesFact = &Fact[Processes]{
	Name: "processes",
	What: "running processes",
	Live: func(ctx context.Context, l *Live) (Processes, error) {
		ents, err := os.ReadDir(l.hostPath("/proc"))
		if err != nil {
			return Processes{}, fmt.Errorf("list /proc: %w", err)
		}
		var users map[int]string
		if b, err := l.ReadFile(ctx, "/etc/passwd"); err == nil {
			users = parsePasswd(b)
		}
		var out Processes
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid <= 0 {
				continue
			}
			if len(out.Processes) >= maxProcesses || ctx.Err() != nil {
				break
			}
			uid, comm := l.readOwner(ctx, uint32(pid))
			if uid < 0 {
				continue // gone since the listing
			}
			p := ProcessInfo{PID: pid, UID: uid, User: users[uid], Comm: comm}
			if b, err := l.readBounded(ctx, "/proc/"+e.Name()+"/cmdline", procFileLimit); err == nil {
				p.Argv0 = argv0(b)
			}
			if b, err := l.readBounded(ctx, "/proc/"+e.Name()+"/cgroup", procFileLimit); err == nil {
				p.Cgroup = slurmCgroupLine(string(b))
			}
			out.Processes = append(out.Processes, p)
		}
		slices.SortFunc(out.Processes, func(a, b ProcessInfo) int { return a.PID - b.PID })
		out.CgroupsRead = true
		return out, ctx.Err()
	},
}

// maxCgroupLine bounds the cgroup line kept per process.
const maxCgroupLine = 512

// slurmCgroupLine picks the line of a /proc/PID/cgroup that ProcessInfo.Cgroup keeps.
func slurmCgroupLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	pick := func() string {
		for _, l := range lines {
			if strings.Contains(l, "/slurm") || strings.Contains(l, "slurmstepd.scope/") {
				return l
			}
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "0::") {
				return l
			}
		}
		return lines[0]
	}
	l := pick()
	if len(l) > maxCgroupLine {
		l = l[:maxCgroupLine]
	}
	return l
}

// argv0 is the first word of a /proc/PID/cmdline (NUL-separated; a process that rewrote its
// title may use spaces instead), as the first field of ps's args column.
func argv0(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
