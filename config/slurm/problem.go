package slurm

// Problems: what the parsers and the lint find, at a file and line, for some nodes.

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Problem severities. An error is something Slurm refuses or that leaves nodes unusable; a
// warning is something Slurm accepts but that is probably not what the admin meant.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	// SeverityInfo marks a Report note: what lint could not check, and why.
	SeverityInfo = "info"
)

// Problem is one finding in slurm.conf or gres.conf, at a file and line, for some nodes.
type Problem struct {
	Severity string `json:"severity"` // "error" or "warning" ("info" in Report.Notes)
	File     string `json:"file"`
	Line     int    `json:"line"`
	// Nodes is the nodes the problem affects, as one compressed hostlist; empty when the
	// problem is about the file itself rather than particular nodes.
	Nodes   string `json:"nodes"`
	Message string `json:"message"`
}

// String returns "severity message", with the nodes when the message does not name them.
// Messages start with the file and line they are about.
func (p Problem) String() string {
	s := p.Severity + " " + p.Message
	if p.Nodes != "" && !strings.Contains(p.Message, p.Nodes) {
		s += " (nodes " + p.Nodes + ")"
	}
	return s
}

// ref names a position in a message: the file's base name and the line, as an admin says it.
func ref(p Pos) string {
	if p.IsZero() {
		return ""
	}
	if p.Line == 0 {
		return filepath.Base(p.File) // the whole file: a setting it lacks
	}
	return filepath.Base(p.File) + ":" + strconv.Itoa(p.Line)
}
