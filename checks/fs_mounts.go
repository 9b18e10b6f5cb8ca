package checks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idFSMounts = "fs_mounts"

// The ways fs_mounts fails: its rows of the remedy table (Faults).
const (
	faultMountMissing  fault = "fs_mounts/missing"
	faultMountReadOnly fault = "fs_mounts/read_only"
	faultMountWrong    fault = "fs_mounts/wrong"
)

// fsMounts checks that the filesystems a job needs are mounted as they should be, from
// /proc/mounts: NHC's check_fs_mount family (check_fs_mount_rw -f /tmp). A mount point is
// judged by its visible (last) mount, as a path there reaches it.
type fsMounts struct{}

func (fsMounts) ID() string { return idFSMounts }

func (fsMounts) Description() string {
	return "the filesystems listed are mounted, read-write or read-only, of the type and from the source given (/proc/mounts)"
}

// fsMountsConfig is [checks.fs_mounts].
type fsMountsConfig struct {
	config.CheckCommon
	// Mounts lists the mounts to check, one string each, fields as in fstab:
	// "MOUNT_POINT [rw|ro|any] [TYPE|*] [SOURCE|*]".
	Mounts []string `toml:"mounts"`
}

// Section: / read-write and /dev/shm a read-write tmpfs (NCCL and CUDA IPC put their
// shared memory there), in every mode: reading /proc/mounts costs microseconds.
func (fsMounts) Section() config.Section {
	return &fsMountsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: config.ModeNames()},
		Mounts: []string{"/ rw", "/dev/shm rw tmpfs"}}
}

// ValidateSection implements config.SectionValidator.
func (c *fsMountsConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for i, s := range c.Mounts {
		if _, err := parseMountSpec(s); err != nil {
			out = append(out, config.Problemf("mounts", "[%d] = %q: %v", i, s, err))
		}
	}
	return out
}

// mountSpec is one entry of mounts.
type mountSpec struct {
	Point  string
	Access string // "rw", "ro" or "any"
	Type   string // "" for any
	Source string // "" for any
}

func (m mountSpec) String() string {
	s := m.Point + " " + m.Access
	if m.Type != "" || m.Source != "" {
		s += " " + cmp.Or(m.Type, "*")
	}
	if m.Source != "" {
		s += " " + m.Source
	}
	return s
}

// parseMountSpec parses "MOUNT_POINT [rw|ro|any] [TYPE|*] [SOURCE|*]"; the access defaults to rw.
func parseMountSpec(s string) (mountSpec, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 4 {
		return mountSpec{}, errors.New(`want "MOUNT_POINT [rw|ro|any] [TYPE|*] [SOURCE|*]", such as "/home rw nfs4 server:/export"`)
	}
	m := mountSpec{Point: f[0], Access: "rw"}
	if !strings.HasPrefix(m.Point, "/") {
		return mountSpec{}, fmt.Errorf("mount point %q is not an absolute path", m.Point)
	}
	if len(f) > 1 {
		switch f[1] {
		case "rw", "ro", "any":
			m.Access = f[1]
		default:
			return mountSpec{}, fmt.Errorf("access %q: use rw, ro or any", f[1])
		}
	}
	if len(f) > 2 && f[2] != "*" {
		m.Type = f[2]
	}
	if len(f) > 3 && f[3] != "*" {
		m.Source = f[3]
	}
	for _, p := range []string{m.Type, m.Source} {
		if isRegexPattern(p) {
			if _, err := regexp.Compile(p[1 : len(p)-1]); err != nil {
				return mountSpec{}, fmt.Errorf("pattern %s: %v", p, err)
			}
		}
	}
	return m, nil
}

func (fsMounts) Run(ctx context.Context, env *Env) Result {
	set := settings[*fsMountsConfig](env.Config, idFSMounts)
	if len(set.Mounts) == 0 {
		return Result{Status: StatusSkip, Summary: "no mounts listed in [checks.fs_mounts]"}
	}
	b, err := env.Facts.ReadFile(ctx, "/proc/mounts")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: "no /proc/mounts: not recorded in this snapshot, or /proc is not mounted"}
	case err != nil:
		return Result{Status: StatusError, Summary: "could not read /proc/mounts", Err: err}
	}
	ms, err := node.ParseMounts(bytes.NewReader(b))
	if err != nil {
		return Result{Status: StatusError, Summary: "could not parse /proc/mounts", Err: fmt.Errorf("/proc/%w", err)}
	}
	var want []mountSpec
	for _, s := range set.Mounts {
		m, err := parseMountSpec(s)
		if err != nil { // ValidateSection refused it already; a config built in code may not
			return Result{Status: StatusError, Summary: fmt.Sprintf("mounts entry %q: %v", s, err), Err: err}
		}
		want = append(want, m)
	}
	return judgeFSMounts(node.VisibleMounts(ms), want)
}

// judgeFSMounts judges each wanted mount against the visible mounts.
func judgeFSMounts(ms []node.MountEntry, want []mountSpec) Result {
	var res Result
	for _, w := range want {
		res.Details = append(res.Details, judgeMount(ms, w))
	}
	return settleDetails(res, fmt.Sprintf("%s mounted as listed", countNoun(len(want), "filesystem", "filesystems")))
}

func judgeMount(ms []node.MountEntry, w mountSpec) Detail {
	d := Detail{Device: w.Point, Expected: w.String(), Subject: Subject{Mount: w.Point}}
	var m node.MountEntry
	found := false
	for _, x := range ms {
		if x.Point == w.Point {
			m, found = x, true
		}
	}
	if !found {
		d.Observed = "not mounted"
		d.Message = "not mounted"
		failDetail(&d, faultMountMissing)
		return d
	}
	access := "rw"
	if m.ReadOnly() {
		access = "ro"
	}
	d.Observed = fmt.Sprintf("%s %s %s %s", m.Point, access, m.Type, m.Source)
	switch {
	case w.Type != "" && !matchPattern(w.Type, m.Type):
		d.Message = fmt.Sprintf("type %s, want %s", m.Type, w.Type)
		failDetail(&d, faultMountWrong)
	case w.Source != "" && !matchPattern(w.Source, m.Source):
		d.Message = fmt.Sprintf("mounted from %s, want %s", m.Source, w.Source)
		failDetail(&d, faultMountWrong)
	case w.Access == "rw" && access == "ro":
		d.Message = "mounted read-only, want read-write"
		failDetail(&d, faultMountReadOnly)
	case w.Access == "ro" && access == "rw":
		d.Message = "mounted read-write, want read-only"
		failDetail(&d, faultMountWrong)
	default:
		d.Status = StatusOK
		d.Message = fmt.Sprintf("mounted %s (%s from %s)", access, m.Type, m.Source)
	}
	return d
}

// matchPattern matches s as NHC's mcheck does: "!PATTERN" is its negation, a pattern written /RE/ is a regular
// expression (unanchored), one with *, ? or [ a shell glob whose * also matches '/' (bash's
// [[ == ]]), anything else the exact text. A regular expression that does not compile
// matches nothing (ValidateSection refuses it first).
func matchPattern(pat, s string) bool {
	if rest, ok := strings.CutPrefix(pat, "!"); ok && rest != "" {
		return !matchPattern(rest, s)
	}
	if isRegexPattern(pat) {
		re, err := regexp.Compile(pat[1 : len(pat)-1])
		return err == nil && re.MatchString(s)
	}
	if strings.ContainsAny(pat, "*?[") {
		re, err := regexp.Compile("^" + globToRegexp(pat) + "$")
		return err == nil && re.MatchString(s)
	}
	return pat == s
}

// isRegexPattern reports whether pat is written /RE/ with something between the slashes
// that is not a plain path (a source "/dev/sda1/" is no pattern, but "/bluearc[0-9]/" is).
func isRegexPattern(pat string) bool {
	return len(pat) > 2 && pat[0] == '/' && pat[len(pat)-1] == '/' && strings.ContainsAny(pat[1:len(pat)-1], `^$.*+?[](){}|\`)
}

// globToRegexp turns a shell glob into a regular expression: * any text, ? one character,
// [...] a class; everything else literal.
func globToRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteByte('.')
		case '[':
			if j := strings.IndexByte(g[i+1:], ']'); j >= 0 {
				cls := g[i+1 : i+1+j]
				if strings.HasPrefix(cls, "!") {
					cls = "^" + cls[1:]
				}
				b.WriteString("[" + cls + "]")
				i += j + 1
				continue
			}
			b.WriteString(`\[`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// settleDetails sets res's status to the worst of its details and its summary to the first
// detail with that status ("DEVICE: MESSAGE"), "(+N more)" for the others not ok; okSummary where all are ok.
func settleDetails(res Result, okSummary string) Result {
	res.Status = StatusOK
	for _, d := range res.Details {
		if d.Status.Worse(res.Status) {
			res.Status = d.Status
		}
	}
	if res.Status == StatusOK {
		res.Summary = okSummary
		return res
	}
	if res.Status == StatusSkip {
		res.Summary = res.Details[0].Device + ": " + res.Details[0].Message
		return res
	}
	n, named := 0, false
	for _, d := range res.Details {
		if d.Status == StatusOK || d.Status == StatusSkip {
			continue
		}
		if !named && d.Status == res.Status {
			res.Summary, res.Subject, named = d.Message, d.Subject, true
			if d.Device != "" {
				res.Summary = d.Device + ": " + d.Message
			}
		} else {
			n++
		}
	}
	if n > 0 {
		res.Summary += fmt.Sprintf(" (+%d more)", n)
	}
	if res.Status == StatusError {
		res.Err = errors.New(res.Summary)
	}
	return res
}

func (fsMounts) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultMountMissing, "a filesystem listed in [checks.fs_mounts] mounts is not mounted", RemedyAdmin,
			"NHC check_fs_mount: a mount that failed at boot or was lost (an NFS server, an fstab entry) needs a person to mount it or fix what it depends on"},
		{faultMountReadOnly, "a filesystem that should be read-write is mounted read-only", RemedyReboot,
			"ext4(5) and xfs(5): the kernel remounts a filesystem read-only after an I/O or metadata error (errors=remount-ro, shutdown); the boot's fsck or log replay repairs it"},
		{faultMountWrong, "a mount has another type or source than listed, or is read-write where read-only is wanted", RemedyAdmin,
			"configuration: fstab or the automounter mounted something else there"},
	}}
}

// Explain is what `nodecheck explain fs_mounts` says.
func (fsMounts) Explain() Explanation {
	return Explanation{
		Reads:  []string{"/proc/mounts: each mount's source, mount point, type and options (the last mount of a point is the one in use)."},
		Passes: "Every entry of mounts is mounted, with the access (rw, ro), type and source listed.",
		Fails:  "An entry is not mounted, is read-only where rw is listed (the kernel remounts a filesystem read-only after I/O errors), or has another type, source or access.",
		Skips:  "mounts is empty, or a snapshot has no /proc/mounts.",
		Errors: "/proc/mounts cannot be read or parsed.",
		Keys: map[string]string{
			"mounts": `The mounts to check, one string each with fstab's fields: "MOUNT_POINT [rw|ro|any] [TYPE|*] [SOURCE|*]", such as "/home rw nfs4 server:/export"; the access defaults to rw. import-nhc writes them from check_fs_mount lines.`,
		},
		Fix: []string{
			"findmnt MOUNT_POINT shows what is mounted there; dmesg | grep -i -e remount -e 'I/O error' says why a filesystem went read-only.",
			"Mount it (mount MOUNT_POINT, systemctl restart the .mount unit or autofs), or reboot where the kernel remounted it read-only after errors.",
		},
	}
}
