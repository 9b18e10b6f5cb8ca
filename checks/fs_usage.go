package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idFSUsage = "fs_usage"

// The ways fs_usage fails: its rows of the remedy table (Faults).
const (
	faultFSFull   fault = "fs_usage/full"
	faultFSHung   fault = "fs_usage/hung"
	faultFSAbsent fault = "fs_usage/no_mount"
)

// fsUsage checks free space and inodes of filesystems against limits, from statfs(2) of each
// mount (node.FilesystemsFact): NHC's check_fs_free, check_fs_used, check_fs_ifree and
// check_fs_iused. A path is judged by the filesystem it lies on, as df PATH reports it.
type fsUsage struct{}

func (fsUsage) ID() string { return idFSUsage }

func (fsUsage) Description() string {
	return "free space and inodes of the filesystems listed are within their limits (statfs, as df reports them)"
}

// fsUsageConfig is [checks.fs_usage].
type fsUsageConfig struct {
	config.CheckCommon
	// Limits lists "PATH free|used|ifree|iused LIMIT", LIMIT a percentage ("5%") or an
	// absolute size ("10GiB"; inodes: a count, "100k").
	Limits []string `toml:"limits"`
}

// Section: / , /tmp and /var/tmp with at least 2% free, NHC's example limits for a compute
// node's local file systems, in epilog (a job that filled /tmp is caught before the next
// one), health and manual modes.
func (fsUsage) Section() config.Section {
	return &fsUsageConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second,
		Modes: []string{"epilog", "health", "manual"}},
		Limits: []string{"/ free 2%", "/tmp free 2%", "/var/tmp free 2%"}}
}

// ValidateSection implements config.SectionValidator.
func (c *fsUsageConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for i, s := range c.Limits {
		if _, err := parseFSLimit(s); err != nil {
			out = append(out, config.Problemf("limits", "[%d] = %q: %v", i, s, err))
		}
	}
	return out
}

// fsLimit is one entry of limits.
type fsLimit struct {
	Path    string
	Kind    string  // "free", "used", "ifree", "iused"
	Percent float64 // the limit in percent; used when Percent is set
	IsPct   bool
	Abs     uint64 // bytes (free, used) or inodes (ifree, iused)
	Text    string // the limit as written
}

func (l fsLimit) inodes() bool { return strings.HasPrefix(l.Kind, "i") }

// minimum reports whether the limit is a floor (free, ifree) rather than a ceiling.
func (l fsLimit) minimum() bool { return strings.HasSuffix(l.Kind, "free") }

// parseFSLimit parses "PATH free|used|ifree|iused LIMIT".
func parseFSLimit(s string) (fsLimit, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return fsLimit{}, errors.New(`want "PATH free|used|ifree|iused LIMIT", such as "/tmp free 5%" or "/ used 90%" or "/scratch free 100GiB"`)
	}
	l := fsLimit{Path: f[0], Kind: f[1], Text: f[2]}
	if !strings.HasPrefix(l.Path, "/") {
		return fsLimit{}, fmt.Errorf("path %q is not absolute", l.Path)
	}
	switch l.Kind {
	case "free", "used", "ifree", "iused":
	default:
		return fsLimit{}, fmt.Errorf("%q: use free, used, ifree or iused", l.Kind)
	}
	if p, ok := strings.CutSuffix(l.Text, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
			return fsLimit{}, fmt.Errorf("limit %q: a percentage is 0%% to 100%%", l.Text)
		}
		l.Percent, l.IsPct = v, true
		return l, nil
	}
	var err error
	if l.inodes() {
		l.Abs, err = parseCount(l.Text)
	} else {
		l.Abs, err = ParseSize(l.Text)
	}
	if err != nil {
		return fsLimit{}, fmt.Errorf("limit %q: %v", l.Text, err)
	}
	return l, nil
}

// sizeUnits are the units ParseSize takes, as NHC takes them: powers of 1024 whatever the
// spelling (NHC's "kB" is 1024 bytes).
var sizeUnits = []struct {
	suffix string
	mult   uint64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}, {"KB", 1 << 10},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"k", 1 << 10}, {"B", 1},
}

// ParseSize parses a size with a unit, such as "10GiB", "512MB", "32g" or "1T": units are
// powers of 1024 in any case, as NHC's are. "0" needs no unit; any other number does.
func ParseSize(s string) (uint64, error) {
	for _, u := range sizeUnits {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			num := s[:len(s)-len(u.suffix)]
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v*float64(u.mult) > math.MaxUint64/2 {
				return 0, fmt.Errorf("%q is not a size", s)
			}
			return uint64(v * float64(u.mult)), nil
		}
	}
	if s == "0" {
		return 0, nil
	}
	return 0, fmt.Errorf("%q has no unit: write it like \"10GiB\" or \"500MB\"", s)
}

// parseCount parses an inode count: a whole number, or with k, M, G or T (powers of 1000, as
// NHC's inode counts are: its tests fail "check_fs_iused / 370k" with 370050 used).
func parseCount(s string) (uint64, error) {
	mult := uint64(1)
	if n := len(s); n > 0 {
		if i := strings.IndexByte("kKMGT", s[n-1]); i >= 0 {
			mult = []uint64{1e3, 1e3, 1e6, 1e9, 1e12}[i]
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > math.MaxUint64/mult {
		return 0, fmt.Errorf("%q is not a count of inodes", s)
	}
	return v * mult, nil
}

func (fsUsage) Run(ctx context.Context, env *Env) Result {
	set := settings[*fsUsageConfig](env.Config, idFSUsage)
	if len(set.Limits) == 0 {
		return Result{Status: StatusSkip, Summary: "no limits listed in [checks.fs_usage]"}
	}
	var limits []fsLimit
	for _, s := range set.Limits {
		l, err := parseFSLimit(s)
		if err != nil {
			return Result{Status: StatusError, Summary: fmt.Sprintf("limits entry %q: %v", s, err), Err: err}
		}
		limits = append(limits, l)
	}
	fsys, err := node.Read(ctx, env.Facts, node.FilesystemsFact)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "filesystems not recorded in this snapshot, or no /proc/mounts"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read the mounted filesystems", Err: err}
	}
	return judgeFSUsage(fsys, limits)
}

// judgeFSUsage judges each limit against the filesystem its path lies on.
func judgeFSUsage(fsys node.Filesystems, limits []fsLimit) Result {
	mounts := make([]node.MountEntry, len(fsys.Mounts))
	for i, u := range fsys.Mounts {
		mounts[i] = u.MountEntry
	}
	var res Result
	for _, l := range limits {
		d := Detail{Device: l.Path, Expected: l.Kind + " " + limitWord(l) + " " + l.Text, Subject: Subject{Mount: l.Path}}
		m, ok := node.MountOf(mounts, l.Path)
		if !ok {
			d.Message = "lies on no mounted filesystem"
			failDetail(&d, faultFSAbsent)
			res.Details = append(res.Details, d)
			continue
		}
		for _, u := range fsys.Mounts {
			if u.Point == m.Point {
				res.Details = append(res.Details, judgeFSLimit(d, u, l))
				break
			}
		}
	}
	return settleDetails(res, countNoun(len(limits), "filesystem limit", "filesystem limits")+" met")
}

func limitWord(l fsLimit) string {
	if l.minimum() {
		return "at least"
	}
	return "at most"
}

// judgeFSLimit judges one limit on the usage u of the filesystem its path lies on.
func judgeFSLimit(d Detail, u node.FSUsage, l fsLimit) Detail {
	on := ""
	if u.Point != l.Path {
		on = " on " + u.Point
	}
	switch {
	case u.Pseudo:
		d.Status, d.Message = StatusSkip, fmt.Sprintf("%s pseudo filesystem%s: no space to judge", u.Type, on)
		return d
	case u.TimedOut:
		d.Message = fmt.Sprintf("statfs%s did not answer within %s (a hung %s server?)", on, node.StatfsTimeout, u.Type)
		failDetail(&d, faultFSHung)
		return d
	case u.Error != "":
		d.Status, d.Message = StatusError, u.Error+on
		return d
	}
	// df's arithmetic: used is size - free, and the share is of what users can reach
	// (used + avail), so root's reserve does not count as free.
	var have, whole uint64
	unit := "bytes"
	switch l.Kind {
	case "free":
		have, whole = u.AvailBytes, u.SizeBytes-u.FreeBytes+u.AvailBytes
	case "used":
		have, whole = u.SizeBytes-u.FreeBytes, u.SizeBytes-u.FreeBytes+u.AvailBytes
	case "ifree":
		have, whole, unit = u.InodesFree, u.Inodes, "inodes"
	case "iused":
		have, whole, unit = u.Inodes-u.InodesFree, u.Inodes, "inodes"
	}
	if whole == 0 {
		d.Status = StatusSkip
		d.Message = fmt.Sprintf("%s%s reports no %s to compare (size 0)", u.Type, on, unit)
		return d
	}
	pct := dfPercent(have, whole, l.minimum())
	d.Observed = fmt.Sprintf("%s %s (%d%%)", l.Kind, humanCount(have, unit), pct)
	// NHC's rule, which its own tests pin: free space at its limit passes, used space at its
	// limit fails.
	var bad bool
	if l.IsPct {
		bad = l.minimum() && float64(pct) < l.Percent || !l.minimum() && float64(pct) >= l.Percent
	} else {
		bad = l.minimum() && have < l.Abs || !l.minimum() && have >= l.Abs
	}
	if bad {
		d.Message = fmt.Sprintf("%s%s, want %s %s", d.Observed, on, limitWord(l), l.Text)
		failDetail(&d, faultFSFull)
		return d
	}
	d.Status = StatusOK
	d.Message = d.Observed + on
	return d
}

// dfPercent is the share as df(1) prints it, which NHC judges: the used share rounded up to
// a whole percent, and the free share 100 minus that.
func dfPercent(have, whole uint64, free bool) int {
	used := have
	if free {
		used = whole - have
	}
	p := int((used*100 + whole - 1) / whole)
	if whole > math.MaxUint64/200 { // avoid overflowing used*100 on exabyte totals
		p = int(math.Ceil(float64(used) * 100 / float64(whole)))
	}
	if free {
		return 100 - p
	}
	return p
}

// humanCount writes n bytes in the largest binary unit under which it is at least 1, or n
// inodes as a plain count.
func humanCount(n uint64, unit string) string {
	if unit != "bytes" {
		return strconv.FormatUint(n, 10) + " inodes"
	}
	for _, u := range []struct {
		s string
		m uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m {
			return strconv.FormatFloat(float64(n)/float64(u.m), 'f', 1, 64) + " " + u.s
		}
	}
	return strconv.FormatUint(n, 10) + " B"
}

func (fsUsage) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultFSFull, "a filesystem has less free space or fewer free inodes than its limit, or more used", RemedyAdmin,
			"NHC check_fs_free/check_fs_used: files to remove (a job's leftovers in /tmp, logs) or a filesystem to grow; no reboot frees a disk"},
		{faultFSHung, "statfs of the filesystem a limit names did not answer (a hung NFS or parallel filesystem server)", RemedyAdmin,
			"a hard NFS mount blocks every access until its server answers: a person fixes the server or the network"},
		{faultFSAbsent, "a path a limit names lies on no mounted filesystem", RemedyAdmin, "configuration"},
	}}
}

// Explain is what `nodecheck explain fs_usage` says.
func (fsUsage) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"/proc/mounts, and statfs(2) of each mounted filesystem that holds files (not proc, sysfs, cgroup and the other pseudo filesystems; not autofs, whose statfs would mount it), each given 2 s.",
		},
		Passes: "Each limit holds on the filesystem its path lies on.",
		Fails:  "A filesystem has less free space or fewer free inodes than its limit, or more used; or its statfs did not answer in 2 s (a hung NFS server).",
		Skips:  "limits is empty; a filesystem with no fixed inode count (btrfs, some NFS) for an inode limit; a snapshot without filesystems.json.",
		Errors: "/proc/mounts cannot be read, or statfs gave an error.",
		Keys: map[string]string{
			"limits": `The limits, one string each: "PATH free|used|ifree|iused LIMIT", LIMIT a percentage ("5%") or a size with a unit ("10GiB", units powers of 1024 as NHC's) or, for inodes, a count ("100k"). Free space is what a user who is not root can still write, as df's Avail; percentages are df's.`,
		},
		Fix: []string{
			"df -h PATH and df -i PATH show what the check saw; du -xsh PATH/* finds what fills it.",
		},
	}
}
