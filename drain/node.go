package drain

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodecheck/nodecheck/config/text"
)

// NodeState is a node's state and reason as slurmctld reports them.
type NodeState struct {
	Name       string    // NodeName
	State      string    // base state, upper case: IDLE, MIXED, ALLOCATED, DOWN, ...
	Flags      []string  // state flags, upper case: DRAIN, NOT_RESPONDING, ...
	Reason     string    // Reason, without scontrol's " [user@time]" stamp; "" for none
	ReasonUser string    // who set the reason ("root", "slurm"); "" when unknown
	ReasonTime time.Time // when the reason was set (sinfo's listing only); zero when unknown
}

// Drained reports whether the node is drained or draining: its DRAIN flag is set (scontrol's
// IDLE+DRAIN, MIXED+DRAIN), or its state is one of sinfo's compound names.
func (n NodeState) Drained() bool {
	switch n.State {
	case "DRAIN", "DRAINED", "DRAINING":
		return true
	}
	return slices.Contains(n.Flags, "DRAIN")
}

// OutOfService reports whether Slurm keeps jobs off the node for its reason: drained,
// draining or down. Slurm 24.11 keeps a node's reason after State=RESUME (22.05 clears it),
// so a reason on a node in service is a leftover that means nothing.
func (n NodeState) OutOfService() bool {
	return n.Drained() || n.State == "DOWN"
}

// Rebooting reports whether Slurm was asked to reboot the node and has not seen it back yet:
// REBOOT_REQUESTED (waiting for the node to be idle) or REBOOT_ISSUED (RebootProgram runs).
func (n NodeState) Rebooting() bool {
	return slices.Contains(n.Flags, "REBOOT_REQUESTED") || slices.Contains(n.Flags, "REBOOT_ISSUED")
}

// Busy says why the node's state shows work on it, or "" when it shows none: a base state
// ALLOCATED or MIXED (a job holds CPUs; every job holds at least one), COMPLETING (a job is
// ending), or sinfo's DRAINING (drained with jobs still running). A repair starts only on a
// node whose state shows no work, and whose job listing is empty too.
func (n NodeState) Busy() string {
	switch n.State {
	case "ALLOCATED", "MIXED", "COMPLETING", "DRAINING":
		return "its state " + n.String() + " shows a job on it"
	}
	if slices.Contains(n.Flags, "COMPLETING") {
		return "its state " + n.String() + " shows a job ending on it"
	}
	return ""
}

// String is the state as scontrol prints it: "IDLE+DRAIN".
func (n NodeState) String() string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}

// parseStateWords splits scontrol's "MIXED+DRAIN" (or JSON's ["MIXED", "DRAIN"], or "idle"
// with separate flags) into the base state and its flags, upper-cased. Slurm prints the base
// state first (node_state_string_complete in src/common/slurm_protocol_defs.c).
func parseStateWords(words []string) (string, []string) {
	var out []string
	for _, w := range words {
		for p := range strings.SplitSeq(w, "+") {
			if p = strings.ToUpper(strings.TrimSpace(p)); p != "" {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return "", nil
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out[0], slices.Clip(out[1:])
}

var (
	// nodeNameField anchors the line: `scontrol show node -o` starts every record with it.
	nodeNameField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^NodeName=(\S+)`) })
	// stateField is the first State= at a field boundary. Fields before it hold no "State="
	// (OS= has blanks but is uname's text); the reason, which may, comes after it.
	stateField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|\s)State=(\S+)`) })
	// reasonStamp ends the reason's first line: " [root@2024-05-01T10:00:00]" (user@time as
	// slurm_make_time_str prints it; "Unknown" when the time is not set).
	reasonStamp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` \[([^\]\s@]+)@([^\]\s]+)\]`) })
)

// ParseShowNode reads the output of `scontrol show node -o NAME` (Slurm 22.05 and later, which
// print one line per node). It returns the record for name; an output without it is an error.
//
// Reason= contains blanks and comes after every other field that might: on 22.05 it is the
// last field, and newer versions may follow it with Comment=, Extra=, InstanceId= or
// ReservationName= (slurm_sprint_node_table in src/api/node_info.c). So the reason runs from
// "Reason=" to the " [user@time]" stamp that slurmctld adds to every reason it records, or,
// without a stamp, to the first of those later fields or the end of the line.
func ParseShowNode(r io.Reader, name string) (NodeState, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var names []string
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		m := nodeNameField().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] != name {
			names = append(names, m[1])
			continue
		}
		return parseShowNodeLine(line)
	}
	if err := sc.Err(); err != nil {
		return NodeState{}, fmt.Errorf("read scontrol output: %w", err)
	}
	if len(names) > 0 {
		return NodeState{}, fmt.Errorf("scontrol printed nodes %s but not %q", strings.Join(names, ", "), name)
	}
	return NodeState{}, fmt.Errorf("scontrol printed no NodeName= line for %q", name)
}

// laterFields may follow Reason= on newer Slurm versions.
var laterFields = []string{" Comment=", " Extra=", " InstanceId=", " InstanceType=", " ReservationName="}

func parseShowNodeLine(line string) (NodeState, error) {
	n := NodeState{Name: nodeNameField().FindStringSubmatch(line)[1]}
	sm := stateField().FindStringSubmatchIndex(line)
	if sm == nil {
		return NodeState{}, fmt.Errorf("node %s: no State= field in %q", n.Name, cutLine(line))
	}
	n.State, n.Flags = parseStateWords([]string{line[sm[2]:sm[3]]})
	if n.State == "" {
		return NodeState{}, fmt.Errorf("node %s: empty State= field", n.Name)
	}
	rest := line[sm[1]:]
	i := strings.Index(rest, " Reason=")
	if i < 0 {
		return n, nil
	}
	reason := rest[i+len(" Reason="):]
	if st := reasonStamp().FindStringSubmatchIndex(reason); st != nil {
		n.ReasonUser = reason[st[2]:st[3]]
		reason = reason[:st[0]]
	} else {
		for _, f := range laterFields {
			if j := strings.Index(reason, f); j >= 0 {
				reason = reason[:j]
			}
		}
	}
	n.Reason = strings.TrimSpace(reason)
	return n, nil
}

// ParseNodesJSON reads the "nodes" document of `scontrol --json show node NAME` (Slurm 23.02
// and later) or `sinfo --json` (21.08 and later), and returns the record for name. It reads
// both shapes of the state: "state": "idle" with "state_flags": ["DRAIN"] (data_parser
// v0.0.38 and before) and "state": ["IDLE", "DRAIN"] (v0.0.39 and later). A document whose
// "errors" list is not empty and that lacks the node is an error quoting the first entry.
func ParseNodesJSON(r io.Reader, name string) (NodeState, error) {
	type message struct {
		Description string `json:"description"`
		Error       string `json:"error"`
	}
	var doc struct {
		Nodes    []jsonNode `json:"nodes"`
		Errors   []message  `json:"errors"`
		Warnings []message  `json:"warnings"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return NodeState{}, fmt.Errorf("decode scontrol JSON: %w", err)
	}
	for _, jn := range doc.Nodes {
		if jn.Name == name {
			return jn.state()
		}
	}
	// 24.11 reports an unknown node as no nodes and the warning "No nodes to dump".
	for _, list := range [][]message{doc.Errors, doc.Warnings} {
		if len(list) > 0 {
			e := list[0]
			return NodeState{}, fmt.Errorf("scontrol JSON has no node %q: %s", name, cutLine(strings.TrimSpace(e.Description+" "+e.Error)))
		}
	}
	return NodeState{}, fmt.Errorf("scontrol JSON has no node %q", name)
}

type jsonNode struct {
	Name       string          `json:"name"`
	State      json.RawMessage `json:"state"`
	StateFlags []string        `json:"state_flags"`
	Reason     string          `json:"reason"`
	ReasonUser *string         `json:"reason_set_by_user"`
	// ReasonAt is "reason_changed_at": seconds (v0.0.38 and before) or {"set", "number"}.
	ReasonAt json.RawMessage `json:"reason_changed_at"`
}

func (jn jsonNode) state() (NodeState, error) {
	var words []string
	var one string
	switch err := json.Unmarshal(jn.State, &one); {
	case err == nil:
		words = []string{one}
	case json.Unmarshal(jn.State, &words) == nil:
	default:
		return NodeState{}, fmt.Errorf("node %s: \"state\" is %s, want a string or a list of strings", jn.Name, cutLine(string(jn.State)))
	}
	words = append(words, jn.StateFlags...)
	n := NodeState{Name: jn.Name, Reason: strings.TrimSpace(jn.Reason)}
	n.State, n.Flags = parseStateWords(words)
	if n.State == "" {
		return NodeState{}, fmt.Errorf("node %s: empty \"state\"", jn.Name)
	}
	if jn.ReasonUser != nil && n.Reason != "" {
		// 24.11 names a user even when there is no reason.
		n.ReasonUser = *jn.ReasonUser
	}
	if sec := jsonSeconds(jn.ReasonAt); sec > 0 {
		n.ReasonTime = time.Unix(sec, 0).UTC()
	}
	return n, nil
}

// jsonSeconds reads a time in seconds as Slurm's JSON writes it: a number, or {"set": true,
// "number": N}. Anything else, unset or not positive is 0.
func jsonSeconds(raw json.RawMessage) int64 {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var v struct {
		Set    bool  `json:"set"`
		Number int64 `json:"number"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Set {
		return v.Number
	}
	return 0
}

// SinfoFormat is the --Format (-O) drain lists the cluster with: node name, every state word
// (sinfo's StateComplete, "idle+drain+not_responding"), when the reason was set (run with
// SLURM_TIME_FORMAT=%s: seconds since the epoch, "Unknown" when none) and the full reason
// ("none" when none), separated by bars. Width 0 prints each field whole.
const SinfoFormat = "NodeList:0|,StateComplete:0|,Timestamp:0|,Reason:0"

// ParseSinfoNodes reads `sinfo --all --noheader --Node -O SinfoFormat` (SLURM_TIME_FORMAT=%s):
// one line per node and partition. A node in several partitions is listed once. Node names,
// states and times hold no bar, so the first three split; the reason may hold more.
func ParseSinfoNodes(r io.Reader) ([]NodeState, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	seen := map[string]bool{}
	var out []NodeState
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \r")
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("sinfo line %d: %q: want NODE|STATE|TIME|REASON", n, cutLine(line))
		}
		name := strings.TrimSpace(f[0])
		if name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("sinfo line %d: %q: no node name", n, cutLine(line))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		node := NodeState{Name: name, Reason: strings.TrimSpace(f[3])}
		node.State, node.Flags = parseStateWords([]string{f[1]})
		if node.State == "" {
			return nil, fmt.Errorf("sinfo line %d: %q: no state", n, cutLine(line))
		}
		if node.Reason == "none" {
			node.Reason = ""
		}
		switch ts := strings.TrimSpace(f[2]); ts {
		case "Unknown", "None", "0", "":
		default:
			sec, err := strconv.ParseInt(ts, 10, 64)
			if err != nil || sec < 0 {
				return nil, fmt.Errorf("sinfo line %d: reason time %q: want seconds since the epoch (SLURM_TIME_FORMAT=%%s)", n, cutLine(ts))
			}
			node.ReasonTime = time.Unix(sec, 0).UTC()
		}
		out = append(out, node)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read sinfo output: %w", err)
	}
	return out, nil
}

// ParseVersion reads `scontrol --version` ("slurm 23.02.7", "slurm-wlm 22.05.8") into the
// major and minor release numbers.
func ParseVersion(s string) (major, minor int, err error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("scontrol --version printed %q: want NAME MAJOR.MINOR.MICRO", cutLine(s))
	}
	parts := strings.Split(f[1], ".")
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("scontrol --version printed %q: want NAME MAJOR.MINOR.MICRO", cutLine(s))
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err := errors.Join(err1, err2); err != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("scontrol --version printed %q: want NAME MAJOR.MINOR.MICRO", cutLine(s))
	}
	return major, minor, nil
}

// cutLine bounds text quoted in an error: output from outside goes into logs and reasons.
func cutLine(s string) string {
	return text.OneLine(Sanitize(s), 117)
}
