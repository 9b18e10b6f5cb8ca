package slurm

// The slurm.conf settings that say how slurmd runs nodecheck: how long it lets Prolog=,
// Epilog= and HealthCheckProgram= run before killing them, how often and in which node
// states it runs the health check, and the PrologFlags. Units and defaults are slurm.conf(5)'s
// (22.05.8 as installed here; PrologTimeout and EpilogTimeout from 25.05, HealthCheckTimeout
// from Slurm's master branch), and the values are read as src/common/read_config.c reads them.

import (
	"strconv"
	"strings"
	"time"
)

// HealthCheckKillAfter is how long slurmd lets HealthCheckProgram run before killing it when
// slurm.conf sets no HealthCheckTimeout: slurm.conf(5), "This program will be killed if it
// does not terminate normally within 60 seconds" (fixed up to 25.11; later versions make it
// HealthCheckTimeout, whose default is the same 60 s).
const HealthCheckKillAfter = 60 * time.Second

// Hooks are the slurm.conf keys about the programs slurmd runs for nodecheck. A duration of
// zero means the key is not set or says "no limit" (0, UNLIMITED, INFINITE or 65534 and
// above, which Slurm treats as waiting for ever); Set says which keys were written and where.
type Hooks struct {
	// PrologEpilogTimeout bounds Prolog= and Epilog= (both; every version). Unset: Slurm
	// waits for ever.
	PrologEpilogTimeout time.Duration
	// PrologTimeout and EpilogTimeout (Slurm 25.05 and later) replace PrologEpilogTimeout for
	// one of the two; each defaults to PrologEpilogTimeout.
	PrologTimeout time.Duration
	EpilogTimeout time.Duration
	// HealthCheckTimeout bounds HealthCheckProgram= where the Slurm version knows the key;
	// unset, slurmd kills the program after HealthCheckKillAfter.
	HealthCheckTimeout time.Duration
	// HealthCheckInterval is the time between health checks; zero disables the periodic
	// runs (slurmd still runs the program once at start).
	HealthCheckInterval time.Duration
	// HealthCheckNodeState lists the node states the health check runs in, as written
	// (ANY, IDLE, ALLOC, MIXED, NONDRAINED_IDLE, CYCLE, START_ONLY, REBOOT_ONLY); empty
	// when not set, which Slurm reads as ANY.
	HealthCheckNodeState []string
	// PrologFlags lists the flags as written (Alloc, Contain, NoHold, Serial, ...).
	PrologFlags []string
	// Set maps each key written (in Slurm's spelling) to where: the last line that set
	// it, as Slurm keeps the last value of a key given twice.
	Set map[string]Pos
}

// hookKeys maps the lower-case keys Hooks reads to Slurm's spelling.
var hookKeys = map[string]string{
	"prologepilogtimeout": "PrologEpilogTimeout", "prologtimeout": "PrologTimeout",
	"epilogtimeout": "EpilogTimeout", "healthchecktimeout": "HealthCheckTimeout",
	"healthcheckinterval": "HealthCheckInterval", "healthchecknodestate": "HealthCheckNodeState",
	"prologflags": "PrologFlags",
}

// infinite16 is Slurm's INFINITE16 less one (NO_VAL16): uint16 values from here up mean
// "no limit", and a timeout of 0 makes run_command wait for ever too.
const infinite16 = 65534

// hookField reads f into the Hooks when it is one of their keys, and reports whether it was.
func (p *slurmParser) hookField(f confField, pos Pos) bool {
	key, ok := hookKeys[strings.ToLower(f.Key)]
	if !ok {
		return false
	}
	h := &p.c.Hooks
	if h.Set == nil {
		h.Set = map[string]Pos{}
	}
	switch key {
	case "HealthCheckNodeState":
		h.HealthCheckNodeState = confSplitList(f.Value)
	case "PrologFlags":
		h.PrologFlags = confSplitList(f.Value)
	default:
		d, err := parseSlurmSeconds(f.Value)
		if err != nil {
			p.problem(SeverityError, pos, "", "%s=%s is not a whole number of seconds from 0 to 65535 (or UNLIMITED): Slurm refuses the file", key, f.Value)
			return true
		}
		*h.duration(key) = d
	}
	h.Set[key] = pos
	return true
}

// duration is the field of a timeout or interval key.
func (h *Hooks) duration(key string) *time.Duration {
	switch key {
	case "PrologEpilogTimeout":
		return &h.PrologEpilogTimeout
	case "PrologTimeout":
		return &h.PrologTimeout
	case "EpilogTimeout":
		return &h.EpilogTimeout
	case "HealthCheckTimeout":
		return &h.HealthCheckTimeout
	}
	return &h.HealthCheckInterval
}

// parseSlurmSeconds reads a uint16 number of seconds as Slurm's s_p_handle_uint16 does:
// UNLIMITED and INFINITE (any case) and the values Slurm treats as them are no limit (0).
func parseSlurmSeconds(v string) (time.Duration, error) {
	if strings.EqualFold(v, "UNLIMITED") || strings.EqualFold(v, "INFINITE") {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return 0, err
	}
	if n >= infinite16 {
		return 0, nil
	}
	return time.Duration(n) * time.Second, nil
}

// HookLimit is the time slurmd gives one of the programs it runs for nodecheck, and the key
// that says so.
type HookLimit struct {
	Key   string        // the slurm.conf key, or "" when Slurm's fixed limit applies
	Limit time.Duration // zero: Slurm waits for ever
	Pos   Pos           // where Key was set; zero for a default
}

// String says the limit as an admin reads it: "PrologEpilogTimeout 60s (slurm.conf:12)".
func (l HookLimit) String() string {
	var s string
	switch {
	case l.Key == "" && l.Limit > 0:
		s = "Slurm's fixed " + l.Limit.String()
	case l.Key == "":
		return "no Slurm limit"
	case l.Limit == 0:
		s = l.Key + " unlimited"
	default:
		s = l.Key + " " + l.Limit.String()
	}
	if !l.Pos.IsZero() {
		s += " (" + ref(l.Pos) + ")"
	}
	return s
}

// PrologLimit is how long slurmd lets Prolog= run: PrologTimeout where set (25.05 and
// later), else PrologEpilogTimeout, else no limit.
func (h Hooks) PrologLimit() HookLimit { return h.jobLimit("PrologTimeout", h.PrologTimeout) }

// EpilogLimit is how long slurmd lets Epilog= run: EpilogTimeout where set (25.05 and
// later), else PrologEpilogTimeout, else no limit.
func (h Hooks) EpilogLimit() HookLimit { return h.jobLimit("EpilogTimeout", h.EpilogTimeout) }

func (h Hooks) jobLimit(key string, d time.Duration) HookLimit {
	if pos, ok := h.Set[key]; ok {
		return HookLimit{Key: key, Limit: d, Pos: pos}
	}
	if pos, ok := h.Set["PrologEpilogTimeout"]; ok {
		return HookLimit{Key: "PrologEpilogTimeout", Limit: h.PrologEpilogTimeout, Pos: pos}
	}
	return HookLimit{}
}

// HealthCheckLimit is how long slurmd lets HealthCheckProgram= run: HealthCheckTimeout where
// set, else HealthCheckKillAfter. A HealthCheckTimeout of 0 is refused by Slurm and reset to
// the default, so it reads as the default here too.
func (h Hooks) HealthCheckLimit() HookLimit {
	if pos, ok := h.Set["HealthCheckTimeout"]; ok && h.HealthCheckTimeout > 0 {
		return HookLimit{Key: "HealthCheckTimeout", Limit: h.HealthCheckTimeout, Pos: pos}
	}
	return HookLimit{Limit: HealthCheckKillAfter}
}
