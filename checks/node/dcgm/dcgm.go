// Package dcgm is nodecheck's binding to NVIDIA DCGM: the dcgmi command lines nodecheck runs
// against the site's host engine (nv-hostengine), pure parsers of what they print, and DCGM's
// own table of failure codes and severities. It runs nothing itself (the checks run the
// command lines through node.Facts.Exec, so that a snapshot records the answers and a replay
// gives them back) and judges nothing (the checks do). It imports nothing of nodecheck and
// does no work when the program starts: the message patterns are compiled on first use.
//
// Why the dcgmi CLI and not go-dcgm (github.com/NVIDIA/go-dcgm, cgo over libdcgm.so.4):
// docs/dcgm.md ("The binding").
package dcgm

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Severity is DCGM's dcgmErrorSeverity_t (dcgm_errors.h): what a failure code asks of the
// operator.
type Severity int

// The severities, with dcgm_errors.h's words.
const (
	SeverityNone    Severity = 0 // DCGM_ERROR_NONE
	SeverityMonitor Severity = 1 // "Can perform workload, but needs to be monitored."
	SeverityIsolate Severity = 2 // "Cannot perform workload. GPU should be isolated."
	SeverityUnknown Severity = 3 // "This error code is not recognized"
	SeverityTriage  Severity = 4 // "This error should be triaged"
	SeverityConfig  Severity = 5 // "This error can be configured"
	SeverityReset   Severity = 6 // "Drain and reset GPU"
)

// String is the severity's name as dcgm_errors.h spells it without DCGM_ERROR_: "ISOLATE".
func (s Severity) String() string {
	switch s {
	case SeverityNone:
		return "NONE"
	case SeverityMonitor:
		return "MONITOR"
	case SeverityIsolate:
		return "ISOLATE"
	case SeverityUnknown:
		return "UNKNOWN"
	case SeverityTriage:
		return "TRIAGE"
	case SeverityConfig:
		return "CONFIG"
	case SeverityReset:
		return "RESET"
	}
	return "severity " + strconv.Itoa(int(s))
}

// ErrorInfo is one row of DCGM's failure code table.
type ErrorInfo struct {
	Code     int    // dcgmError_t: 3
	Name     string // without DCGM_FR_: "PCI_REPLAY_RATE"
	Severity Severity
	// Format is the code's message format (its *_MSG), "" where DCGM builds the message
	// elsewhere.
	Format string
}

// Lookup returns DCGM's row of code; ok is false for a code this table does not have (a
// newer DCGM's), whose severity is then DCGM's own answer for it: UNKNOWN
// (dcgmErrorGetPriorityByCode).
func Lookup(code int) (ErrorInfo, bool) {
	if code >= 0 && code < len(errorTable) && errorTable[code].Code == code {
		return errorTable[code], true
	}
	return ErrorInfo{Code: code, Name: "code " + strconv.Itoa(code), Severity: SeverityUnknown}, false
}

// Label names a code for people: "DCGM_FR_PCI_REPLAY_RATE (3)".
func (e ErrorInfo) Label() string {
	if strings.HasPrefix(e.Name, "code ") {
		return "DCGM " + e.Name
	}
	return fmt.Sprintf("DCGM_FR_%s (%d)", e.Name, e.Code)
}

// The entity groups as DCGM names them (DcgmFieldsGetEntityGroupString, dcgm_fields.cpp).
const (
	GroupGPU      = "GPU"
	GroupSwitch   = "Switch"
	GroupConnectX = "ConnectX"
	GroupCPU      = "CPU"
	GroupLink     = "LINK"
)

// HealthCheckArgv is `dcgmi health --host HOST -g GROUP -c -j`: the incidents of the watches
// set on GROUP ("a": every entity, GPUs, NVSwitches, ConnectX, CPUs; CheckGroupIdArgument in
// dcgmi/CommandLineParser.cpp).
func HealthCheckArgv(dcgmi, host, group string) []string {
	return []string{dcgmi, "health", "--host", host, "-g", group, "-c", "-j"}
}

// HealthWatchesArgv is `dcgmi health --host HOST -g GROUP -f -j`: which watches are set.
func HealthWatchesArgv(dcgmi, host, group string) []string {
	return []string{dcgmi, "health", "--host", host, "-g", group, "-f", "-j"}
}

// HealthSetArgv is `dcgmi health --host HOST -g GROUP -s a`: set every watch dcgmi can set
// (PCIe, memory, inforom, thermal, power, NVLink with IMEX, NVSwitch fatal and non-fatal,
// driver, ConnectX; dcgmi has no letter for SM, which DCGM's health module does not
// implement: DcgmHealthWatch.cpp sets no field for it).
func HealthSetArgv(dcgmi, host, group string) []string {
	return []string{dcgmi, "health", "--host", host, "-g", group, "-s", "a"}
}

// DiagArgv is `dcgmi diag --host HOST -r LEVEL -j`, on every GPU (dcgmi diag's -g takes a
// numeric group only; without one it tests all GPUs). The host is always given: a dcgmi diag
// without --host that cannot reach a host engine starts one of its own inside the process
// (StartDiag: "If the host address was overridden, complain if we can't connect. Otherwise,
// don't complain and just start an embedded host engine instead", dcgmi/Diag.cpp), which is
// not the site's.
func DiagArgv(dcgmi, host string, level int) []string {
	return []string{dcgmi, "diag", "--host", host, "-r", strconv.Itoa(level), "-j"}
}

// Exit statuses of dcgmi: main returns the dcgmReturn_t, which the shell sees modulo 256
// (dcgmi/main_dcgmi.cpp; dcgm_structs.h).
const (
	ExitOK                = 0
	ExitGenericError      = 253 // DCGM_ST_GENERIC_ERROR (-3)
	ExitConnectionInvalid = 235 // DCGM_ST_CONNECTION_NOT_VALID (-21): no host engine answered
	ExitNVVSError         = 226 // DCGM_ST_NVVS_ERROR (-30): the diagnostic ran and found errors
	ExitNVVSIsolate       = 205 // DCGM_ST_NVVS_ISOLATE_ERROR (-51): ... and one asks for isolation
	ExitNVVSKilled        = 203 // DCGM_ST_NVVS_KILLED (-53)
	ExitParseError        = 254 // -2: a command line dcgmi's parser refused (an older dcgmi)
)

// Outcome classifies what dcgmi printed before any JSON: the host engine could not be
// reached, or the command line was refused.
type Outcome int

// The outcomes.
const (
	OutcomeAnswered     Outcome = iota // no connection or usage error seen
	OutcomeNoHostEngine                // "Error: unable to establish a connection to the specified host"
	OutcomeUsage                       // TCLAP's "PARSE ERROR": a dcgmi without this option
	OutcomeWatchesOff                  // "Error: Health watches not enabled."
)

// Classify reads dcgmi's stdout and stderr and exit code for the outcomes that come before
// any JSON (dcgmi/Command.cpp Connect and DoExecuteConnectionFailure; Health.cpp
// CheckWatches; TCLAP's parse errors). The words are dcgmi's own, in English whatever the
// locale (dcgmi has no translations).
func Classify(stdout, stderr string, exit int) Outcome {
	all := stdout + "\n" + stderr
	switch {
	case strings.Contains(all, "unable to establish a connection to the specified host"),
		strings.Contains(all, "Unable to connect to host engine"),
		exit == ExitConnectionInvalid:
		return OutcomeNoHostEngine
	case strings.Contains(all, "Health watches not enabled"):
		return OutcomeWatchesOff
	case strings.Contains(all, "PARSE ERROR"), exit == ExitParseError:
		return OutcomeUsage
	}
	return OutcomeAnswered
}

// jsonStart returns b from its first line that opens a JSON object: dcgmi prints a line of
// text first for some commands ("Health monitor systems report" before -f's JSON,
// Health.cpp GetWatches).
func jsonStart(b []byte) ([]byte, error) {
	for off := 0; off < len(b); {
		line := b[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] == '{' {
			return b[off:], nil
		}
		off += len(line)
	}
	return nil, fmt.Errorf("no JSON object in dcgmi's output (%s)", firstLine(b))
}

// firstLine is b's first non-empty line, cut, for errors.
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 120 {
				l = l[:120] + "..."
			}
			return strconv.Quote(l)
		}
	}
	return "empty"
}
