package slurm

// GUID maps: sites whose adapters keep the firmware's node description name them to hosts in
// a file of "GUID host" lines.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxGUIDMapBytes bounds a GUID map: one short line an adapter.
const maxGUIDMapBytes = 64 << 20

// ParseGUIDMap parses a map from InfiniBand GUIDs to host names, read from r, which came from
// file. It takes the forms sites keep:
//
//	H-0002c90300080e84 r510gluster1           (ltaulell/HPC_toolset's map_GUID.py)
//	0x0002c90300080e85 "gpu001 mlx5_0"        (ibnetdiscover --node-name-map)
//	0002c90300080e84   gpu001
//
// one GUID (node or port) and a name a line, '#' comments and blank lines ignored. The host is
// the name's first word. The error is for input that cannot be read or is larger than 64 MiB;
// malformed lines and a GUID given two different hosts are in the problems, and the map
// keeps the first host.
func ParseGUIDMap(r io.Reader, file string) (map[uint64]string, []Problem, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxGUIDMapBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxGUIDMapBytes {
		return nil, nil, fmt.Errorf("read %s: more than %d bytes: not a GUID map", file, maxGUIDMapBytes)
	}
	m := map[uint64]string{}
	first := map[uint64]int{}
	var probs []Problem
	bad := func(line int, format string, args ...any) {
		pos := Pos{File: file, Line: line}
		probs = append(probs, Problem{Severity: SeverityError, File: file, Line: line, Message: ref(pos) + ": " + fmt.Sprintf(format, args...)})
	}
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		g, name, _ := strings.Cut(line, " ")
		if t := strings.IndexByte(g, '\t'); t >= 0 {
			g, name = line[:t], line[t+1:]
		}
		name = strings.Trim(strings.TrimSpace(name), `"`)
		host, _, _ := strings.Cut(strings.TrimSpace(name), " ")
		guid, ok := parseGUIDText(g)
		switch {
		case !ok:
			bad(i+1, "%q is not a GUID (H-<16 hex digits>, 0x<hex> or <hex>): fix the line", shorten(g))
		case host == "":
			bad(i+1, "GUID %s has no host name after it: write \"%s HOST\"", g, g)
		default:
			if prev, dup := m[guid]; dup && prev != host {
				bad(i+1, "GUID %s is mapped to %s here and to %s at line %d: keep one", g, host, prev, first[guid])
				continue
			}
			if _, dup := m[guid]; !dup {
				m[guid], first[guid] = host, i+1
			}
		}
	}
	return m, probs, nil
}

// parseGUIDText reads "H-<hex>", "S-<hex>", "0x<hex>" or "<hex>", 1 to 16 hex digits.
func parseGUIDText(s string) (uint64, bool) {
	if len(s) > 2 && s[1] == '-' && strings.ContainsRune("HSR", rune(s[0])) {
		s = s[2:]
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}
