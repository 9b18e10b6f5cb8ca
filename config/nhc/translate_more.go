package nhc

// Translations of single NHC checks, kept apart from translate.go, which dispatches to them.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultAuthUsers is NHC's NHC_AUTH_USERS default: users who may run processes without a
// job. The translation of check_ps_unauth_users lists them first in allow_users.
func DefaultAuthUsers() []string { return []string{"root", "nobody"} }

// psUnauthUsers translates check_ps_unauth_users [-c CMD] [-u UID] [-n USER] [ACTIONS] into
// stray_processes: NHC_AUTH_USERS plus -u and -n become allow_users, -c ignore_commands; the
// action die (NHC's default) fails, log and syslog only warn. kill is refused (nodecheck never
// kills a process), as is -p (a pid means nothing on the next run).
func psUnauthUsers(args []string, entry entryFunc) ([]Entry, string, error) {
	opts, actions, err := getopt(args, "c:u:n:p:")
	if err != nil {
		return nil, "", err
	}
	var es []Entry
	for _, u := range DefaultAuthUsers() {
		es = append(es, entry("stray_processes", "allow_users", u)...)
	}
	for _, o := range opts {
		for _, v := range strings.Fields(o.val) {
			switch o.name {
			case 'u', 'n':
				es = append(es, entry("stray_processes", "allow_users", v)...)
			case 'c':
				es = append(es, entry("stray_processes", "ignore_commands", v)...)
			default: // 'p'
				return nil, "", errors.New("check_ps_unauth_users -p ignores a pid, which means nothing on the next run: keep the line in NHC")
			}
		}
	}
	fail := len(actions) == 0
	for _, a := range actions {
		switch a {
		case "die":
			fail = true
		case "log", "syslog":
		case "kill":
			return nil, "", errors.New("check_ps_unauth_users kill: nodecheck never kills a process; drop kill (die drains the node) or keep the line in NHC")
		case "ignore":
			return nil, "", errors.New("check_ps_unauth_users ignore checks nothing: remove the line")
		default:
			return nil, "", fmt.Errorf("check_ps_unauth_users action %q: NHC knows log, syslog, die, kill and ignore", a)
		}
	}
	es = append(es, entry("stray_processes", "enabled", "true")...)
	es = append(es, entry("stray_processes", "fail", fmt.Sprint(fail))...)
	note := "stray_processes tells a job's processes by their Slurm cgroup first (it needs ProctrackType=proctrack/cgroup, and skips without it), then, as NHC, allows the users squeue lists with a job on the node"
	if len(opts) > 0 {
		note += "; NHC's -c, -u and -n match where the process's command, uid or user is part of the value (a substring), nodecheck's lists exactly"
	}
	return es, note, nil
}

// hwCPUInfo translates check_hw_cpuinfo [SOCKETS [CORES [THREADS]]] into node_inventory's
// fixed counts, which it compares exactly, as NHC does; an empty one is not compared.
func hwCPUInfo(args []string, entry entryFunc) ([]Entry, string, error) {
	if len(args) == 0 || len(args) > 3 {
		return nil, "", errors.New("check_hw_cpuinfo takes SOCKETS [CORES [THREADS]]")
	}
	var es []Entry
	for i, a := range args {
		if a == "" {
			continue
		}
		n, err := strconv.ParseUint(a, 10, 31)
		if err != nil || n == 0 {
			return nil, "", fmt.Errorf("count %q: a whole number above 0", a)
		}
		e := entry("node_inventory", []string{"sockets", "cores", "threads"}[i], strconv.FormatUint(n, 10))
		e[0].Number = true
		es = append(es, e...)
	}
	return es, "node_inventory also compares the node with its NodeName line in slurm.conf, which is what slurmd registers against", nil
}

// fileContents translates check_file_contents FILE PATTERN... into a file_contents entry: the
// same words, quoted again for nodecheck.toml's string.
func fileContents(args []string, entry entryFunc) ([]Entry, string, error) {
	if len(args) < 2 {
		return nil, "", errors.New("check_file_contents takes FILE PATTERN [PATTERN...]")
	}
	if !strings.HasPrefix(args[0], "/") {
		return nil, "", fmt.Errorf("file %q is not an absolute path", args[0])
	}
	for _, p := range args[1:] {
		if _, err := MatchTarget("", strings.TrimPrefix(p, "!")); err != nil {
			return nil, "", fmt.Errorf("pattern %q: %v", p, err)
		}
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return entry("file_contents", "files", strings.Join(quoted, " ")), "", nil
}

// shellQuote writes a word so that SplitWords reads it back: as it is where it holds
// nothing special, else in single quotes (a single quote inside closed, escaped, reopened).
func shellQuote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`;|&<>()#") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
