package nhc

import (
	"fmt"
	"strings"
	"time"
)

// DefaultConfFile is where LBNL NHC reads its configuration when -c is not given.
const DefaultConfFile = "/etc/nhc/nhc.conf"

// Options are the parts of an nhc command line (as slurm.conf's HealthCheckProgram= or an
// admin types it) that the drop-in honours.
type Options struct {
	ConfFile string        // -c, or NAME=VALUE CONFFILE=
	ConfDir  string        // -D, or CONFDIR=
	Timeout  time.Duration // -t (seconds), or TIMEOUT=; 0: not given
	LogFile  string        // -l, or LOGFILE=
	Debug    bool          // -d, or DEBUG=1
	Hostname string        // -n, or HOSTNAME=
	// MarkOffline is false for MARK_OFFLINE=0: report only, never drain.
	MarkOffline bool
	// Notes name what was accepted but has no effect, one line each, for stderr.
	Notes []string
}

// ParseArgs reads NHC's command line: the options Slurm sites use and NAME=VALUE settings.
// Options that would change what is judged or where it is reported, and nodecheck cannot
// honour, are errors naming the option; harmless ones are accepted with a note.
func ParseArgs(args []string) (Options, error) {
	o := Options{ConfFile: DefaultConfFile, MarkOffline: true}
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
		case "-a", "-v", "-q":
			o.Notes = append(o.Notes, fmt.Sprintf("nhc option %s accepted and ignored: nodecheck always runs every check and prints its own report", a))
			continue
		case "-c", "-D", "-t", "-l", "-n", "-e", "-f":
		default:
			return Options{}, fmt.Errorf("nhc option %q: not supported by nodecheck's nhc drop-in (supported: -c FILE, -D DIR, -t SECONDS, -l FILE, -d, -n HOST, NAME=VALUE)", a)
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
		o.LogFile = v
	case "-n":
		o.Hostname = v
	default: // -e, -f: run one check expression, or force a config: nodecheck cannot honour them
		return fmt.Errorf("nhc option %s: not supported by nodecheck's nhc drop-in; run LBNL NHC for it", opt)
	}
	return nil
}

func (o *Options) setVar(name, v string) error {
	switch name {
	case "CONFFILE":
		o.ConfFile = v
	case "CONFDIR":
		o.ConfDir = v
	case "LOGFILE":
		o.LogFile = v
	case "HOSTNAME":
		o.Hostname = v
	case "DEBUG":
		o.Debug = v != "" && v != "0"
	case "TIMEOUT":
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != v {
			return fmt.Errorf("nhc timeout %q: want whole seconds, 0 or more", v)
		}
		o.Timeout = time.Duration(n) * time.Second
	case "MARK_OFFLINE":
		o.MarkOffline = v != "0"
	case "NHC_RM":
		if v != "slurm" {
			return fmt.Errorf("nhc NHC_RM=%s: nodecheck drains through Slurm only (NHC_RM=slurm)", v)
		}
	default:
		o.Notes = append(o.Notes, fmt.Sprintf("nhc setting %s accepted and ignored by nodecheck", name))
	}
	return nil
}
