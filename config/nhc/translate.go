package nhc

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Entry is one value the import writes, with the line it came from.
type Entry struct {
	Section string // check id: "fs_mounts"
	Key     string // key in [checks.Section]: "mounts"
	Value   string
	Number  bool // Value is a whole number, written without quotes
	From    Line
}

// Skipped is a line the import did not translate, and why.
type Skipped struct {
	Line Line
	Why  string
}

// Translation is what Translate made of nhc.conf: the entries written, in line order; the
// lines left out with why; and notes on lines translated with a difference an admin should
// know of (NHC's -S restarts a service; nodecheck only reports it).
type Translation struct {
	Entries []Entry
	Skipped []Skipped
	Notes   []Skipped
	// Settings are the NHC variables the lines for the host set (TranslateFor only:
	// "* || export MARK_OFFLINE=0"), for the drop-in to apply as NHC would.
	Settings []Setting
}

// listKeys are the keys that take a list: each line adds to it. Every other key is one
// value, which a second line may not set again.
var listKeys = map[string]bool{"fs_mounts.mounts": true, "fs_usage.limits": true, "services.processes": true, "interfaces.present": true, "kernel_log.patterns": true, "file_tests.tests": true, "file_contents.files": true, "stray_processes.allow_users": true, "stray_processes.ignore_commands": true}

// Translate translates each line whose check has a native nodecheck equivalent with the same
// meaning, and lists every other line in Skipped with the reason. A line is translated whole
// or not at all: an option nodecheck cannot honour leaves the line out.
func Translate(lines []Line) Translation {
	var t Translation
	set := map[string]Line{}
	for _, l := range lines {
		es, note, err := translateLine(l)
		if err == nil {
			for _, e := range es {
				k := e.Section + "." + e.Key
				if prev, dup := set[k]; dup && !listKeys[k] {
					err = fmt.Errorf("%s is set already, by %s", k, prev.Where())
					break
				}
			}
		}
		if err != nil {
			t.Skipped = append(t.Skipped, Skipped{l, err.Error()})
			continue
		}
		for _, e := range es {
			set[e.Section+"."+e.Key] = l
		}
		t.Entries = append(t.Entries, es...)
		if note != "" {
			t.Notes = append(t.Notes, Skipped{l, note})
		}
	}
	return t
}

// TranslateFor is what LBNL NHC would run on host, translated: the lines whose target
// matches host (MatchTarget) are translated as Translate translates a line for every node;
// lines for other hosts are left out, as NHC leaves them; a line whose target cannot be
// evaluated is in Skipped with why, since NHC might run it here.
func TranslateFor(lines []Line, host string) Translation {
	var mine []Line
	var t Translation
	for _, l := range lines {
		if errors.Is(l.Err, ErrNHCSkips) {
			continue
		}
		ok, err := false, l.Err
		if l.Target != "" { // a line whose target is for another host is not NHC's business here either
			if ok, err = MatchTarget(host, l.Target); err == nil && !ok {
				continue
			}
		}
		if err == nil {
			err = l.Err
		}
		if err != nil {
			t.Skipped = append(t.Skipped, Skipped{l, err.Error()})
			continue
		}
		if sets, isSetting := lineSettings(l); isSetting {
			t.Settings = append(t.Settings, sets...)
			continue
		}
		l.Target = "*"
		mine = append(mine, l)
	}
	own := Translate(mine)
	t.Entries, t.Notes = own.Entries, own.Notes
	t.Skipped = append(t.Skipped, own.Skipped...)
	slices.SortStableFunc(t.Skipped, func(a, b Skipped) int { return a.Line.Num - b.Line.Num })
	return t
}

// lineSettings reads a line that sets NHC variables rather than running a check
// ("export NHC_RM=slurm", "MARK_OFFLINE=0"): each NAME=VALUE, with the line's number.
func lineSettings(l Line) ([]Setting, bool) {
	words := l.Words
	if len(words) > 0 && words[0] == "export" {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, false
	}
	var out []Setting
	for _, w := range words {
		name, value, ok := strings.Cut(w, "=")
		if !ok || !validVarName(name) {
			return nil, false
		}
		out = append(out, Setting{Name: name, Value: value, Line: l.Num})
	}
	return out, true
}

// translateLine is one line's entries, a note, or why it is not translated.
func translateLine(l Line) ([]Entry, string, error) {
	if l.Err != nil {
		return nil, "", l.Err
	}
	if !utf8.ValidString(l.Raw) {
		return nil, "", errors.New("the line is not UTF-8 text")
	}
	if l.Target != "*" {
		return nil, "", fmt.Errorf("target %q is not every node (*): nodecheck sets values for some nodes in a [[group]] with a Slurm hostlist, which the importer does not guess from an NHC target", l.Target)
	}
	cmd, args := l.Words[0], l.Words[1:]
	entry := func(sec, key, val string) []Entry {
		return []Entry{{Section: sec, Key: key, Value: val, From: l}}
	}
	switch cmd {
	case "check_fs_mount", "check_fs_mount_rw", "check_fs_mount_ro":
		vals, err := fsMount(cmd, args)
		if err != nil {
			return nil, "", err
		}
		var es []Entry
		for _, v := range vals {
			es = append(es, entry("fs_mounts", "mounts", v)...)
		}
		return es, "", nil
	case "check_fs_free", "check_fs_used", "check_fs_ifree", "check_fs_iused":
		return fsUsage(cmd, args, entry)
	case "check_hw_physmem", "check_hw_swap", "check_hw_mem":
		return hwMemRange(cmd, args, entry)
	case "check_hw_mem_free", "check_hw_physmem_free", "check_hw_swap_free":
		if len(args) != 1 {
			return nil, "", fmt.Errorf("%s takes one size", cmd)
		}
		s, err := nhcSize(args[0])
		if err != nil {
			return nil, "", err
		}
		key := map[string]string{"check_hw_mem_free": "mem_free", "check_hw_physmem_free": "physmem_free", "check_hw_swap_free": "swap_free"}[cmd]
		return entry("memory", key, s), "", nil
	case "check_file_test":
		return fileTest(args, entry)
	case "check_ps_service":
		return psService(args, entry)
	case "check_ps_loadavg":
		return psLoadavg(args, entry)
	case "check_cmd_dmesg":
		return cmdDmesg(args, entry)
	case "check_hw_eth":
		if len(args) != 1 || strings.ContainsAny(args[0], "/ \t") || args[0] == "" {
			return nil, "", errors.New("check_hw_eth takes one device name")
		}
		return entry("interfaces", "present", args[0]), "", nil
	case "check_hw_mcelog":
		if len(args) > 0 {
			return nil, "", errors.New("check_hw_mcelog takes no arguments (MCELOG and MCELOG_ARGS are NHC settings)")
		}
		return entry("machine_checks", "enabled", "true"), "check_hw_mcelog fails on mcelog --client's counts past NHC's 24-hour limits (MCELOG_MAX_CORRECTED_RATE, MCELOG_MAX_UNCORRECTED_RATE) and passes where no mcelog daemon runs; machine_checks fails on an uncorrected machine check in the kernel log or in mcelog's counts, warns on corrected ones, and host_memory_errors judges EDAC's memory error counts", nil
	case "check_file_contents":
		return fileContents(args, entry)
	case "check_hw_cpuinfo":
		return hwCPUInfo(args, entry)
	case "check_ps_unauth_users":
		return psUnauthUsers(args, entry)
	case "check_ps_daemon":
		if len(args) < 1 || len(args) > 2 {
			return nil, "", errors.New("check_ps_daemon with ARGS matches the whole command line, which nodecheck does not record (it may hold secrets); keep it in NHC")
		}
		v := args[0]
		if len(args) == 2 {
			v += " " + args[1]
		}
		if strings.ContainsAny(v, " ") && len(strings.Fields(v)) != len(args) {
			return nil, "", errors.New("a name or user with blanks")
		}
		return entry("services", "processes", v), "check_ps_daemon matches NAME anywhere in the command line; nodecheck matches the command's first word against *NAME (check_ps_service's rule) or the process name", nil
	}
	if why, ok := noEquivalent[cmd]; ok {
		return nil, "", errors.New(why)
	}
	if strings.HasPrefix(cmd, "check_") {
		return nil, "", fmt.Errorf("%s has no native nodecheck equivalent: keep it in NHC, run as a site check", cmd)
	}
	return nil, "", fmt.Errorf("%q is an NHC setting or a command, not a check: keep it in NHC's file if the checks kept there need it", cmd)
}

// entryFunc makes the entries of one setting taken from the line being translated.
type entryFunc func(sec, key, val string) []Entry

// fsUsage translates check_fs_free, _used, _ifree and _iused: FILESYSTEM LIMIT.
func fsUsage(cmd string, args []string, entry entryFunc) ([]Entry, string, error) {
	if len(args) != 2 || strings.HasPrefix(args[0], "-") {
		return nil, "", fmt.Errorf("%s takes FILESYSTEM LIMIT", cmd)
	}
	kind := strings.TrimPrefix(cmd, "check_fs_")
	lim, err := nhcLimit(args[1], strings.HasPrefix(kind, "i"))
	if err != nil {
		return nil, "", err
	}
	return entry("fs_usage", "limits", args[0]+" "+kind+" "+lim), "", nil
}

// hwMemRange translates check_hw_physmem, _swap and _mem: MIN MAX [FUDGE].
func hwMemRange(cmd string, args []string, entry entryFunc) ([]Entry, string, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, "", fmt.Errorf("%s takes MIN MAX [FUDGE]", cmd)
	}
	var parts []string
	for i, a := range args {
		if i == 2 && strings.HasSuffix(a, "%") {
			if _, err := strconv.ParseUint(strings.TrimSuffix(a, "%"), 10, 8); err != nil {
				return nil, "", fmt.Errorf("fudge %q is not a whole percentage", a)
			}
			parts = append(parts, a)
			continue
		}
		s, err := nhcSize(a)
		if err != nil {
			return nil, "", err
		}
		parts = append(parts, s)
	}
	key := map[string]string{"check_hw_physmem": "physmem", "check_hw_swap": "swap", "check_hw_mem": "total_mem"}[cmd]
	return entry("memory", key, strings.Join(parts, " ")), "", nil
}

// psLoadavg translates check_ps_loadavg: up to three limits (1, 5, 15 minutes).
func psLoadavg(args []string, entry entryFunc) ([]Entry, string, error) {
	if len(args) == 0 || len(args) > 3 {
		return nil, "", errors.New("check_ps_loadavg takes up to three limits (1, 5, 15 minutes)")
	}
	var es []Entry
	for i, a := range args {
		if a == "" {
			continue
		}
		n, err := strconv.ParseUint(a, 10, 31)
		if err != nil || n == 0 {
			return nil, "", fmt.Errorf("load limit %q: a whole number above 0", a)
		}
		e := entry("load_average", []string{"max_1m", "max_5m", "max_15m"}[i], a)
		e[0].Number = true
		es = append(es, e...)
	}
	return es, "", nil
}

// cmdDmesg translates check_cmd_dmesg's -m patterns; its other options stay in NHC.
func cmdDmesg(args []string, entry entryFunc) ([]Entry, string, error) {
	opts, rest, err := getopt(args, "M:e:m:r:t:")
	if err != nil {
		return nil, "", err
	}
	if len(rest) > 0 {
		return nil, "", errors.New("check_cmd_dmesg takes options only")
	}
	var es []Entry
	for _, o := range opts {
		if o.name != 'm' {
			return nil, "", fmt.Errorf("option -%c of check_cmd_dmesg has no equivalent in kernel_log: keep the line in NHC", o.name)
		}
		p := strings.TrimPrefix(o.val, "!")
		if p == "" {
			return nil, "", errors.New("an empty pattern")
		}
		if len(p) > 2 && p[0] == '/' && p[len(p)-1] == '/' {
			if _, err := regexp.Compile(p[1 : len(p)-1]); err != nil {
				return nil, "", fmt.Errorf("pattern %q: %v", o.val, err)
			}
		}
		es = append(es, entry("kernel_log", "patterns", o.val)...)
	}
	if len(es) == 0 {
		return nil, "", errors.New("check_cmd_dmesg without -m checks nothing nodecheck can translate")
	}
	return es, "", nil
}

// noEquivalent says, for NHC checks nodecheck covers differently or not at all, why a line
// with one is not translated.
var noEquivalent = map[string]string{
	"check_hw_ib":               "check_hw_ib: ib_ports checks every InfiniBand port (ACTIVE, LinkUp, at least min_rate_gbps) natively; set [checks.ib_ports] rather than translating one device at a time",
	"check_hw_eth":              "check_hw_eth has no native nodecheck equivalent yet: keep it in NHC, run as a site check",
	"check_hw_gm":               "Myrinet (check_hw_gm): not applicable to a GPU node",
	"check_fs_size":             "check_fs_size (a filesystem's total size) has no native equivalent: fs_usage judges free and used space",
	"check_fs_inodes":           "check_fs_inodes (a filesystem's total inodes) has no native equivalent: fs_usage judges free and used inodes",
	"check_file_stat":           "check_file_stat has no native nodecheck equivalent: keep it in NHC, run as a site check",
	"check_cmd_output":          "check_cmd_output runs a command and matches its output: make the command a site check ([[site_check]]) that exits 1 on a mismatch, or keep it in NHC",
	"check_cmd_status":          "check_cmd_status runs a command and judges its exit status: make the command a site check ([[site_check]]) directly",
	"check_nv_healthmon":        "check_nv_healthmon (nvidia-healthmon, retired by NVIDIA): nodecheck's GPU checks and dcgm_health replace it",
	"check_nvsmi_healthmon":     "check_nvsmi_healthmon: nodecheck's GPU checks (gpu_count, gpu_memory_errors, xid_errors, ...) read NVML directly",
	"check_ps_userproc_lineage": "check_ps_userproc_lineage: no equivalent; keep it in NHC",
	"check_ps_blacklist":        "check_ps_blacklist (a process that must not run) has no native equivalent: keep it in NHC",
	"check_ps_kswapd":           "check_ps_kswapd has no native nodecheck equivalent: keep it in NHC",
	"check_ps_cpu":              "check_ps_cpu has no native nodecheck equivalent: keep it in NHC",
	"check_ps_mem":              "check_ps_mem has no native nodecheck equivalent: keep it in NHC",
	"check_ps_physmem":          "check_ps_physmem has no native nodecheck equivalent: keep it in NHC",
	"check_ps_time":             "check_ps_time has no native nodecheck equivalent: keep it in NHC",
	"check_dmi_data_match":      "check_dmi_data_match has no native nodecheck equivalent: keep it in NHC",
	"check_dmi_raw_data_match":  "check_dmi_raw_data_match has no native nodecheck equivalent: keep it in NHC",
	"check_moab_sched":          "Moab (check_moab_*): not applicable under Slurm",
	"check_moab_rm":             "Moab (check_moab_*): not applicable under Slurm",
	"check_moab_torque":         "Moab and Torque (check_moab_torque): not applicable under Slurm",
	"check_net_ping":            "check_net_ping has no native nodecheck equivalent: keep it in NHC",
	"check_net_socket":          "check_net_socket has no native nodecheck equivalent: keep it in NHC",
}

// fsMount translates a check_fs_mount* line into fs_mounts entries, or says which option
// has no equivalent.
func fsMount(cmd string, args []string) ([]string, error) {
	access := map[string]string{"check_fs_mount": "any", "check_fs_mount_rw": "rw", "check_fs_mount_ro": "ro"}[cmd]
	var fss, srcs, types []string
	if len(args) > 0 && strings.HasPrefix(args[0], "/") {
		// NHC's old syntax: FS [SOURCE [TYPE [OPTIONS]]].
		if len(args) > 3 && args[3] != "" {
			return nil, errors.New("mount options (the 4th argument) have no equivalent in fs_mounts; keep the line in NHC")
		}
		fss = []string{args[0]}
		if len(args) > 1 && args[1] != "" {
			srcs = []string{args[1]}
		}
		if len(args) > 2 && args[2] != "" {
			types = []string{args[2]}
		}
	} else {
		opts, rest, err := getopt(args, "0rE:F:O:e:f:o:s:t:")
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			switch o.name {
			case 'f':
				fss = append(fss, o.val)
			case 's':
				srcs = append(srcs, o.val)
			case 't':
				types = append(types, o.val)
			default:
				return nil, fmt.Errorf("option -%c (%s) has no equivalent in fs_mounts: nodecheck only checks, and checks every line", o.name, fsMountOption[o.name])
			}
		}
		fss = append(fss, rest...)
	}
	if len(fss) == 0 {
		return nil, errors.New("no filesystem named")
	}
	if len(srcs) > 1 || len(types) > 1 {
		return nil, errors.New("several -s or -t values (any of them may match in NHC): fs_mounts takes one of each; split the line")
	}
	src, typ := "*", "*"
	if len(srcs) == 1 {
		src = srcs[0]
	}
	if len(types) == 1 {
		typ = types[0]
	}
	var out []string
	for _, fs := range fss {
		if !strings.HasPrefix(fs, "/") || strings.ContainsAny(fs+src+typ, " \t") {
			return nil, fmt.Errorf("filesystem %q, source %q or type %q: an absolute path and no blanks", fs, src, typ)
		}
		v := fs + " " + access
		if typ != "*" || src != "*" {
			v += " " + typ
		}
		if src != "*" {
			v += " " + src
		}
		out = append(out, v)
	}
	return out, nil
}

var fsMountOption = map[byte]string{'0': "non-fatal", 'r': "remount", 'E': "action when found", 'e': "action when missing",
	'F': "automounted filesystem", 'O': "remount options", 'o': "mount options"}

// psService translates check_ps_service; its -S, -r and -c (start, restart, cycle when
// missing) keep the verdict (NHC still fails the check) and only lose the action.
func psService(args []string, entry entryFunc) ([]Entry, string, error) {
	opts, rest, err := getopt(args, "0E:SVcd:e:fkm:rsu:v")
	if err != nil {
		return nil, "", err
	}
	var user, daemon, note string
	for _, o := range opts {
		switch o.name {
		case 'u':
			user = o.val
		case 'd':
			daemon = o.val
		case 'S', 'r', 'c', 'v', 'V':
			note = "NHC starts or restarts the service (-S, -r, -c) when it is missing; nodecheck reports it and leaves restarting to systemd (Restart=) or an admin"
		case 's', 'k', 'E':
			return nil, "", fmt.Errorf("option -%c makes the service one that must NOT run; services has no such list: keep the line in NHC", o.name)
		default:
			return nil, "", fmt.Errorf("option -%c (%s) has no equivalent in services: keep the line in NHC", o.name, psOption[o.name])
		}
	}
	if len(rest) != 1 {
		return nil, "", errors.New("check_ps_service takes one service name")
	}
	name := rest[0]
	if daemon != "" {
		name = daemon
	}
	if strings.ContainsAny(name+user, " \t") || name == "" {
		return nil, "", errors.New("a name or user with blanks")
	}
	v := name
	if user != "" {
		v += " " + user
	}
	return entry("services", "processes", v), note, nil
}

var psOption = map[byte]string{'0': "non-fatal", 'e': "action when missing", 'f': "full command line match", 'm': "custom match"}

type opt struct {
	name byte
	val  string
}

// getopt parses args as bash's getopts does with optstring (a letter, ':' after one that
// takes a value): options come first, "--" ends them, and the rest are operands.
func getopt(args []string, optstring string) ([]opt, []string, error) {
	var out []opt
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for j := 1; j < len(a); j++ {
			k := strings.IndexByte(optstring, a[j])
			if k < 0 || a[j] == ':' {
				return nil, nil, fmt.Errorf("option -%c is not one NHC takes here", a[j])
			}
			if k+1 < len(optstring) && optstring[k+1] == ':' {
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option -%c needs a value", a[j])
					}
					i++
					val = args[i]
				}
				out = append(out, opt{a[j], val})
				break
			}
			out = append(out, opt{a[j], ""})
		}
	}
	return out, args[i:], nil
}

var nhcNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$`) })

// nhcSize converts an NHC size (nhc_common_parse_size: a trailing b or B is dropped, then a
// bare number is kB and k, m, g, t multiply by powers of 1024, any case; so "1b" is 1 kB) to
// nodecheck's spelling.
func nhcSize(s string) (string, error) {
	m := nhcNumber().FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("size %q: want a number with an optional unit (kB, MB, GB, TB)", s)
	}
	unit := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(m[2], "b"), "B"))
	switch unit {
	case "":
		return m[1] + "kB", nil
	case "k", "m", "g", "t":
		return m[1] + strings.ToUpper(unit) + "iB", nil
	}
	return "", fmt.Errorf("size %q: unit %q is not kB, MB, GB or TB", s, m[2])
}

// nhcLimit converts an NHC fs limit: a percentage as it is, else a size (or, for inodes, a
// count with k, M, G or T as NHC's powers of 1000).
func nhcLimit(s string, inodes bool) (string, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		if v, err := strconv.ParseFloat(p, 64); err != nil || v < 0 || v > 100 {
			return "", fmt.Errorf("limit %q: a percentage is 0%% to 100%%", s)
		}
		return s, nil
	}
	if !inodes {
		return nhcSize(s)
	}
	m := nhcNumber().FindStringSubmatch(s)
	if m == nil || strings.Contains(m[1], ".") || len(m[2]) > 1 || m[2] != "" && !strings.ContainsAny(m[2], "kKMGT") {
		return "", fmt.Errorf("inode count %q: a whole number with an optional k, M, G or T", s)
	}
	return s, nil
}
