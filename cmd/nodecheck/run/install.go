package run

// What the Slurm installed on the live node says about where slurm.conf is: the file the
// slurmd that started this process reads (its -f option or its SLURM_CONF), and the default
// compiled into each Slurm program found (slurm.InstalledConfPaths). Only /proc and the
// programs' paths are looked at: no program is run (scontrol show config needs slurmctld).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// InstallProbe says where to look for the installed Slurm. The zero value looks at this
// process's parent in /proc and at the usual program paths.
type InstallProbe struct {
	// Proc is the proc file system; "" is /proc.
	Proc string
	// PPID is the parent process, which is slurmd for Prolog=, Epilog= and
	// HealthCheckProgram=; 0 is os.Getppid().
	PPID int
	// Programs are Slurm programs to try after the parent and PATH, in order; nil is
	// DefaultSlurmPrograms plus the configured scontrol and sinfo.
	Programs []string
	// Timeout bounds the whole probe (a program under a stale NFS mount, say); 0 is
	// installProbeTimeout. What is found before it ends is kept.
	Timeout time.Duration
}

// DefaultSlurmPrograms are where slurmd is installed by the distributions' packages, by a
// source build with configure's default prefix, and under the common /opt/slurm prefix.
var DefaultSlurmPrograms = []string{"/usr/sbin/slurmd", "/usr/local/sbin/slurmd", "/opt/slurm/sbin/slurmd"}

// installProbeTimeout bounds the probe: it reads one small /proc file and resolves a few
// paths, which take microseconds unless a file system hangs.
const installProbeTimeout = time.Second

// cmdlineLimit bounds what is read of /proc/PID/cmdline and /proc/PID/environ.
const cmdlineLimit = 64 << 10

// probeResult is what the probe found.
type probeResult struct {
	daemon    slurm.Candidate   // slurmd -f FILE, or slurmd's SLURM_CONF
	installed []slurm.Candidate // compiled-in defaults, best first
}

// probeInstall runs the probe within its timeout and ctx; a probe that does not finish in
// time gives what it had found by then.
func probeInstall(ctx context.Context, p InstallProbe, getenv func(string) string, configured []string) probeResult {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = installProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ch := make(chan probeResult, 1)
	go func() { ch <- p.run(getenv, configured) }()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return probeResult{}
	}
}

func (p InstallProbe) run(getenv func(string) string, configured []string) probeResult {
	proc := p.Proc
	if proc == "" {
		proc = "/proc"
	}
	ppid := p.PPID
	if ppid == 0 {
		ppid = os.Getppid()
	}
	var r probeResult
	var programs []string
	pdir := filepath.Join(proc, strconv.Itoa(ppid))
	if exe, err := os.Readlink(filepath.Join(pdir, "exe")); err == nil && isSlurmDaemon(exe) {
		programs = append(programs, exe)
		r.daemon = daemonConf(pdir, ppid)
	}
	if getenv != nil {
		for _, name := range []string{"slurmd", "scontrol"} {
			if bin := lookPath(name, getenv("PATH")); bin != "" {
				programs = append(programs, bin)
			}
		}
	}
	if p.Programs != nil {
		programs = append(programs, p.Programs...)
	} else {
		programs = append(programs, configured...)
		programs = append(programs, DefaultSlurmPrograms...)
	}
	seen := map[string]bool{}
	for _, bin := range programs {
		if !filepath.IsAbs(bin) {
			continue
		}
		real, err := filepath.EvalSymlinks(bin)
		if err != nil {
			continue // not installed there
		}
		for _, c := range slurm.InstalledConfPaths(real) {
			if !seen[c] {
				seen[c] = true
				from := "default of " + bin
				if real != bin {
					from += " (" + real + ")"
				}
				r.installed = append(r.installed, slurm.Candidate{Path: c, From: from})
			}
		}
	}
	return r
}

// isSlurmDaemon reports whether exe is slurmd or slurmstepd (which runs the prolog and
// epilog with PrologFlags=RunInJob): the parent of a hook.
func isSlurmDaemon(exe string) bool {
	b := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	return b == "slurmd" || b == "slurmstepd"
}

// daemonConf is the slurm.conf the slurmd at pdir was told to read: its -f option, else the
// SLURM_CONF it was started with (slurmd's own order). A relative path is relative to
// slurmd's working directory, read from pdir/cwd.
func daemonConf(pdir string, pid int) slurm.Candidate {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		cwd, err := os.Readlink(filepath.Join(pdir, "cwd"))
		if err != nil {
			return ""
		}
		return filepath.Join(cwd, p)
	}
	if args, err := readNulList(filepath.Join(pdir, "cmdline")); err == nil {
		if f := slurmdConfFlag(args); f != "" {
			if p := abs(f); p != "" {
				return slurm.Candidate{Path: p, From: fmt.Sprintf("slurmd -f, pid %d", pid)}
			}
		}
	}
	if env, err := readNulList(filepath.Join(pdir, "environ")); err == nil {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "SLURM_CONF="); ok && v != "" {
				if p := abs(v); p != "" {
					return slurm.Candidate{Path: p, From: fmt.Sprintf("SLURM_CONF of slurmd, pid %d", pid)}
				}
			}
		}
	}
	return slurm.Candidate{}
}

// slurmdConfFlag returns the value of slurmd's -f option in args (argv[0] first): "-f FILE"
// or "-fFILE"; "" when not given.
func slurmdConfFlag(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case a == "-f" && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			return a[2:]
		}
	}
	return ""
}

// readNulList reads a NUL-separated /proc file, bounded.
func readNulList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, cmdlineLimit))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// lookPath finds name in the directories of path (absolute ones only: a hook's working
// directory is slurmd's), as exec.LookPath would, without consulting the process's PATH.
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
