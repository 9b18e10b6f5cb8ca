package nhc

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultConfDir and DefaultName give NHC's default configuration, CONFDIR/NAME.conf, when
// neither -c nor CONFFILE= is given (as LBNL NHC's nhcmain_finalize_env does, mej/nhc 9c4a38c).
const (
	DefaultConfDir = "/etc/nhc"
	DefaultName    = "nhc"
)

// DefaultConfFile is where LBNL NHC reads its configuration when -c, -D and -n are not given.
const DefaultConfFile = DefaultConfDir + "/" + DefaultName + ".conf"

// Options are the parts of an nhc command line (as slurm.conf's HealthCheckProgram= or an
// admin types it) that the drop-in honours.
type Options struct {
	ConfFile string        // -c, or NAME=VALUE CONFFILE=
	ConfDir  string        // -D, or CONFDIR=
	Name     string        // -n, or NAME=: NHC's program name, which names the default conf file
	Timeout  time.Duration // -t (seconds), or TIMEOUT=; 0: not given
	LogFile  string        // -l, or LOGFILE=
	Debug    bool          // -d, or DEBUG=1
	// Hostname is HOSTNAME= (NHC's own variable, read from the kernel otherwise), or -m HOST
	// and NHC_HOST=, nodecheck's extensions: the node name to match targets against and drain.
	Hostname string
	// SysconfigDir is SYSCONFIGDIR=: where NHC's sysconfig file is; "" for NHC's own choice.
	SysconfigDir string
	// NodecheckConfig is NODECHECK_CONFIG=FILE: the nodecheck.toml the drop-in reads instead of
	// /etc/nodecheck/nodecheck.toml (nodecheck's own setting, not NHC's).
	NodecheckConfig string
	// MarkOffline is false unless MARK_OFFLINE is 1 (its default), as NHC marks a node offline
	// only where "$MARK_OFFLINE" -eq 1: report only, never drain.
	MarkOffline bool
	// AuthUsers is NHC_AUTH_USERS (users who may run processes without a job; nil: NHC's
	// default, root and nobody); MaxSysUID is MAX_SYS_UID (0: from /etc/login.defs).
	AuthUsers []string
	MaxSysUID int
	// Notes name what was accepted but has no effect, one line each, for stderr.
	Notes []string
}

// ParseArgs reads NHC's command line (LBNL NHC's getopts string ":D:ac:de:fhl:n:qt:vx" at
// mej/nhc 9c4a38c, and its trailing NAME=VALUE settings), plus nodecheck's own -m HOST and -r
// RM, which NHC does not take. Options that would change what is judged or where it
// is reported, and nodecheck cannot honour, are errors naming the option; harmless ones are
// accepted with a note.
func ParseArgs(args []string) (Options, error) {
	return ParseArgsSysconfig(args, nil)
}

// ParseArgsSysconfig is ParseArgs, then NHC's sysconfig file, read by sysconfig from the
// command line's SYSCONFIGDIR= ("" for NHC's own choice) and the program's name (-n, NAME=,
// else "nhc"), and applied after the command line, as LBNL NHC sources $SYSCONFIGDIR/$NAME
// after parsing it (so the file's settings win). sysconfig gives the file's bytes and its
// name for errors; nil bytes for no file; a nil sysconfig reads none.
func ParseArgsSysconfig(args []string, sysconfig func(dir, name string) ([]byte, string, error)) (Options, error) {
	o, err := parseArgs(args)
	if err != nil {
		return Options{}, err
	}
	if sysconfig != nil {
		data, file, err := sysconfig(o.SysconfigDir, cmpOr(o.Name, DefaultName))
		if err != nil {
			return Options{}, err
		}
		sets, err := ParseSysconfig(data, file)
		if err != nil {
			return Options{}, err
		}
		for _, s := range sets {
			if err := o.setVar(s.Name, s.Value); err != nil {
				return Options{}, fmt.Errorf("%s:%d: %w", file, s.Line, err)
			}
		}
	}
	if o.ConfDir == "" {
		o.ConfDir = DefaultConfDir
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.ConfFile == "" {
		o.ConfFile = o.ConfDir + "/" + o.Name + ".conf"
	}
	return o, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Setting is one NAME=VALUE line of NHC's sysconfig file.
type Setting struct {
	Name, Value string
	Line        int
}

// ParseSysconfig reads NHC's sysconfig file (/etc/sysconfig/nhc, /etc/default/nhc), which NHC
// sources as bash: it takes assignments, NAME=VALUE or export NAME=VALUE, with bash's quoting,
// and comments. Anything else bash would run or expand ($VAR, $(...), if, a function) is an
// error naming the line: a setting such as MARK_OFFLINE that nodecheck could not read would
// make it drain where NHC would not.
func ParseSysconfig(data []byte, file string) ([]Setting, error) {
	var out []Setting
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := splitWords(line)
		if err == nil && len(words) > 0 && words[0] == "export" {
			words = words[1:]
		}
		if err == nil && len(words) != 1 {
			err = fmt.Errorf("%d words", len(words))
		}
		var name, value string
		if err == nil {
			var ok bool
			name, value, ok = strings.Cut(words[0], "=")
			if !ok || !validVarName(name) {
				err = fmt.Errorf("%q is not NAME=VALUE", words[0])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v: nodecheck reads NAME=VALUE lines only (NHC sources this file as bash)", file, i+1, err)
		}
		out = append(out, Setting{Name: name, Value: value, Line: i + 1})
	}
	return out, nil
}

func validVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func parseArgs(args []string) (Options, error) {
	o := Options{MarkOffline: true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, value, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "-") {
			if err := o.setVar(name, value); err != nil {
				return Options{}, err
			}
			continue
		}
		switch a {
		case "-d":
			o.Debug = true
			continue
		case "-a", "-v", "-q", "-f", "-j", "-x":
			o.Notes = append(o.Notes, fmt.Sprintf("nhc option %s accepted and ignored: nodecheck runs every check in-process and prints its own report", a))
			continue
		case "-c", "-D", "-t", "-l", "-n", "-m", "-r", "-e":
		default:
			return Options{}, fmt.Errorf("nhc option %q: not supported by nodecheck's nhc drop-in (supported: -c FILE, -D DIR, -n NAME, -m HOST, -r slurm, -t SECONDS, -l FILE, -d, -a -f -j -q -v -x ignored, NAME=VALUE)", a)
		}
		if i+1 >= len(args) {
			return Options{}, fmt.Errorf("nhc option %s needs a value", a)
		}
		i++
		if err := o.setOpt(a, args[i]); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

func (o *Options) setOpt(opt, v string) error {
	switch opt {
	case "-c":
		o.ConfFile = v
	case "-D":
		o.ConfDir = v
	case "-t":
		return o.setVar("TIMEOUT", v)
	case "-l":
		return o.setLogFile(v)
	case "-n":
		return o.setVar("NAME", v)
	case "-m":
		o.Hostname = v
	case "-r":
		return o.setVar("NHC_RM", v)
	default: // -e evaluates one check line: nodecheck cannot honour it
		return fmt.Errorf("nhc option %s: not supported by nodecheck's nhc drop-in; run LBNL NHC for it", opt)
	}
	return nil
}

// Set applies one NHC setting, as a NAME=VALUE argument would, to options already parsed
// (the drop-in's settings from nhc.conf's own lines); its error names the setting.
func (o *Options) Set(name, v string) error { return o.setVar(name, v) }

// setLogFile takes NHC's LOGFILE forms: a path, a redirection as NHC's default writes it
// (">>/var/log/nhc.log 2>&1"), or "-" (or "") for none.
func (o *Options) setLogFile(v string) error {
	v = strings.TrimSpace(v)
	if v == "-" || v == "" {
		o.LogFile = ""
		return nil
	}
	if rest, ok := strings.CutPrefix(v, ">>"); ok {
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) == 2 && f[1] != "2>&1" || len(f) > 2 {
			return fmt.Errorf("nhc log %q: want a path, \">>PATH 2>&1\" or -", v)
		}
		v = f[0]
	}
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("nhc log %q: want an absolute path", v)
	}
	o.LogFile = v
	return nil
}

func (o *Options) setVar(name, v string) error {
	switch name {
	case "CONFFILE":
		o.ConfFile = v
	case "CONFDIR":
		o.ConfDir = v
	case "LOGFILE":
		return o.setLogFile(v)
	case "NAME":
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/") {
			return fmt.Errorf("nhc name %q: want a plain name (it names CONFDIR/NAME.conf)", v)
		}
		o.Name = v
	case "HOSTNAME", "NHC_HOST":
		o.Hostname = v
	case "DEBUG":
		o.Debug = v != "" && v != "0"
	case "TIMEOUT":
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != v {
			return fmt.Errorf("nhc timeout %q: want whole seconds, 0 or more", v)
		}
		o.Timeout = time.Duration(n) * time.Second
	case "SYSCONFIGDIR":
		if !strings.HasPrefix(v, "/") {
			return fmt.Errorf("SYSCONFIGDIR=%s: want an absolute path", v)
		}
		o.SysconfigDir = v
	case "NODECHECK_CONFIG":
		if !strings.HasPrefix(v, "/") {
			return fmt.Errorf("NODECHECK_CONFIG=%s: want an absolute path", v)
		}
		o.NodecheckConfig = v
	case "MARK_OFFLINE":
		n, err := strconv.Atoi(strings.TrimSpace(v))
		o.MarkOffline = err == nil && n == 1 // [[ "$MARK_OFFLINE" -eq 1 ]]: anything else reports only
	case "NHC_AUTH_USERS":
		o.AuthUsers = strings.Fields(v)
		if o.AuthUsers == nil {
			o.AuthUsers = []string{}
		}
	case "MAX_SYS_UID":
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return fmt.Errorf("nhc MAX_SYS_UID=%s: want a uid", v)
		}
		o.MaxSysUID = n
	case "NHC_RM":
		if v == "none" { // as in NHC: no resource manager, nothing marked offline
			o.MarkOffline = false
			return nil
		}
		if v != "slurm" {
			return fmt.Errorf("nhc NHC_RM=%s: nodecheck drains through Slurm only (NHC_RM=slurm, or none to report only)", v)
		}
	default:
		o.Notes = append(o.Notes, fmt.Sprintf("nhc setting %s accepted and ignored by nodecheck", name))
	}
	return nil
}
