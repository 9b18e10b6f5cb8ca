package slurm

// Where slurm.conf is, found in the order Slurm's own programs look (src/common/read_config.c,
// _establish_config_source): the file named on the command line (slurmd -f), then SLURM_CONF,
// then the default compiled into the installed Slurm (configure's --sysconfdir, whose default
// is PREFIX/etc), then the configless cache slurmd keeps under /run/slurm/conf.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Places of slurm.conf that do not depend on how Slurm was built.
const (
	// DefaultSlurmConfPath is slurm.conf where the distributions' packages put it: Debian,
	// Ubuntu (since 20.11), EPEL, OpenHPC and SchedMD's own RPM spec build with
	// --sysconfdir=/etc/slurm.
	DefaultSlurmConfPath = "/etc/slurm/slurm.conf"
	// ConfiglessConfPath is where slurmd in configless mode links the slurm.conf it fetched
	// from slurmctld (Slurm 21.08 and later); Slurm's clients look there after the default.
	ConfiglessConfPath = "/run/slurm/conf/slurm.conf"
	// ConfiglessSpoolConfPath is the cache itself at the default SlurmdSpoolDir
	// (SlurmdSpoolDir/conf-cache), which is all a Slurm from 20.02 to 21.05 leaves.
	ConfiglessSpoolConfPath = "/var/spool/slurmd/conf-cache/slurm.conf"
)

// wellKnownConfPaths are the places a Slurm built from source keeps slurm.conf when no Slurm
// program was found to say so (configure's default prefix /usr/local, the common /opt/slurm
// prefix, and Debian's name before 20.11), tried last: no Slurm program reads them unless
// it was built for them.
var wellKnownConfPaths = []string{"/usr/local/etc/slurm.conf", "/opt/slurm/etc/slurm.conf", "/etc/slurm-llnl/slurm.conf"}

// InstalledConfPaths returns the slurm.conf a Slurm program at bin (a resolved path such as
// /usr/local/sbin/slurmd) reads by default: SYSCONFDIR/slurm.conf, where SYSCONFDIR is
// PREFIX/etc for a program in PREFIX/bin or PREFIX/sbin (configure's default), and /etc/slurm
// for PREFIX /usr (every distribution package since Debian's 20.11; the older /etc/slurm-llnl
// is among the well-known places tried last).
// It returns nil for a path that is not in a bin or sbin directory.
func InstalledConfPaths(bin string) []string {
	dir := filepath.Dir(filepath.Clean(bin))
	if b := filepath.Base(dir); b != "bin" && b != "sbin" {
		return nil
	}
	prefix := filepath.Dir(dir)
	if prefix == "/usr" || prefix == "/" {
		return []string{DefaultSlurmConfPath}
	}
	return []string{filepath.Join(prefix, "etc", "slurm.conf")}
}

// ConfSearch says where FindConf looks. Stat is the only way it touches a file.
type ConfSearch struct {
	// Explicit is a path the user named (--slurm-conf, or slurm_conf in nodecheck.toml),
	// and ExplicitFrom says which ("--slurm-conf"; "" names no source). It must exist.
	Explicit     string
	ExplicitFrom string
	// Getenv reads SLURM_CONF; nil reads nothing.
	Getenv func(string) string
	// Daemon is the file the running slurmd was told to read (slurmd -f FILE), and
	// DaemonFrom says how it was learnt ("slurmd -f, pid 812"); empty when not known.
	Daemon     string
	DaemonFrom string
	// Installed are the compiled-in defaults of the Slurm programs found on this machine
	// (InstalledConfPaths of each), best first, each with where it came from.
	Installed []Candidate
	// Stat returns nil when path is there and usable, an error wrapping fs.ErrNotExist when
	// it is not there, and any other error when it is there but cannot be used (too large,
	// not a regular file, a read that timed out). Slurm takes the first file that exists,
	// so such a file ends the search with that error rather than being passed over.
	Stat func(path string) error
}

// A Candidate is a place slurm.conf may be and why it is looked at.
type Candidate struct {
	Path string
	From string // "--slurm-conf", "SLURM_CONF", "default of /usr/sbin/slurmd", ...
}

// FindConfError is why FindConf found no usable slurm.conf.
type FindConfError struct {
	Candidate          // the place that failed; zero when nothing was found anywhere
	Err       error    // fs.ErrNotExist, or why the file that is there cannot be used
	Looked    []string // every place looked, when nothing was found
}

func (e *FindConfError) Error() string {
	switch {
	case e.Path == "":
		return fmt.Sprintf("find slurm.conf: no file given, SLURM_CONF is not set, and none of %s exists: name the file (--slurm-conf) or set SLURM_CONF", strings.Join(e.Looked, ", "))
	case e.From == "SLURM_CONF" && errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("find slurm.conf: SLURM_CONF=%s does not exist: fix or unset SLURM_CONF", e.Path)
	case errors.Is(e.Err, fs.ErrNotExist) && e.From == "":
		return fmt.Sprintf("find slurm.conf: %s does not exist", e.Path)
	case errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("find slurm.conf: %s %s does not exist", e.From, e.Path)
	case e.From == "":
		return fmt.Sprintf("find slurm.conf: %s cannot be used: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("find slurm.conf: %s (%s) cannot be used: %v", e.Path, e.From, e.Err)
}

func (e *FindConfError) Unwrap() error { return e.Err }

// Named reports whether the failure is about a path someone named (Explicit or SLURM_CONF),
// rather than about the search.
func (e *FindConfError) Named(explicitFrom string) bool {
	return e.Path != "" && (e.From == explicitFrom || e.From == "SLURM_CONF")
}

// Candidates lists every place FindConf tries, in order, duplicates removed: Explicit (and
// nothing else) when set; SLURM_CONF (and nothing else) when set; then Daemon, Installed,
// DefaultSlurmConfPath, the configless caches and the well-known source-build places.
func (s ConfSearch) Candidates() []Candidate {
	if s.Explicit != "" {
		return []Candidate{{s.Explicit, s.ExplicitFrom}}
	}
	if s.Getenv != nil {
		if env := s.Getenv("SLURM_CONF"); env != "" {
			return []Candidate{{env, "SLURM_CONF"}}
		}
	}
	var out []Candidate
	seen := map[string]bool{}
	add := func(c Candidate) {
		if c.Path != "" && !seen[c.Path] {
			seen[c.Path] = true
			out = append(out, c)
		}
	}
	add(Candidate{s.Daemon, s.DaemonFrom})
	for _, c := range s.Installed {
		add(c)
	}
	add(Candidate{DefaultSlurmConfPath, "packaged default"})
	add(Candidate{ConfiglessConfPath, "configless cache"})
	add(Candidate{ConfiglessSpoolConfPath, "configless cache of Slurm 20.02 to 21.05"})
	for _, p := range wellKnownConfPaths {
		add(Candidate{p, "well-known place of a source build"})
	}
	return out
}

// FindConf returns the first candidate (Candidates) that Stat finds. A path named explicitly
// or by SLURM_CONF that does not exist is an error, not a reason to look elsewhere: reading
// another file than the one asked for would judge the node against the wrong cluster. The
// error is a *FindConfError.
func FindConf(s ConfSearch) (Candidate, error) {
	cands := s.Candidates()
	var looked []string
	for _, c := range cands {
		err := s.Stat(c.Path)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || len(cands) == 1 && (s.Explicit != "" || c.From == "SLURM_CONF") {
			return Candidate{}, &FindConfError{Candidate: c, Err: err}
		}
		looked = append(looked, c.Path)
	}
	return Candidate{}, &FindConfError{Err: fs.ErrNotExist, Looked: looked}
}

// FindSlurmConf is FindConf with only an explicit path, SLURM_CONF and a yes-or-no stat, for
// callers that know of no installed Slurm (nodecheck lint). getenv and exists are os.Getenv
// and a stat, or fakes in tests.
func FindSlurmConf(explicit string, getenv func(string) string, exists func(string) bool) (string, error) {
	c, err := FindConf(ConfSearch{Explicit: explicit, Getenv: getenv, Stat: func(p string) error {
		if exists(p) {
			return nil
		}
		return fs.ErrNotExist
	}})
	return c.Path, err
}
