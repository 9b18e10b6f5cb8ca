package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Store reads and writes the history files of a state directory: one file per node,
// <Dir>/<node>.json. One file per node, not one file keyed by node, because on a test bed
// several slurmd (and so several nodecheck runs at once) share one host and one state
// directory: each run then reads and rewrites only its own node's bytes, runs for different
// nodes never race on one file, and a prolog never parses its neighbours' history.
//
// Runs for the same node (a prolog and a health check at once) must hold the run lock from
// Load to Save, or the later Save drops the other's merge, an admin's clear included.
type Store struct {
	// Dir is <state dir>/history; the caller creates it under the state directory's rules
	// (root-owned, not group- or other-writable).
	Dir string
	// Read reads the regular file at path without following a symlink, and returns at most
	// max+1 bytes (more than max tells Load the file is too large). A missing file gives an
	// error satisfying errors.Is(err, fs.ErrNotExist). Required.
	Read func(path string, max int64) ([]byte, error)
	// Write replaces path atomically with data, never following a symlink. Required.
	Write func(path string, data []byte, perm fs.FileMode) error
	// Rename, Remove and List set a bad file aside and bound the files set aside; nil means
	// os.Rename, os.Remove and the names os.ReadDir lists (rename and remove act on a link
	// itself, never on what it points at).
	Rename func(oldpath, newpath string) error
	Remove func(path string) error
	List   func(dir string) ([]string, error)
	Limits Limits
}

// fileMode is the history file's mode: root reads it, nobody else needs to.
const fileMode fs.FileMode = 0o600

// BadFileError is Load's report of a history file it could not use: the file was set aside
// and the run goes on with a fresh history.
type BadFileError struct {
	Path string
	// KeptAs is the name it was set aside as; empty when setting it aside failed too.
	KeptAs  string
	Err     error
	KeepErr error
}

func (e *BadFileError) Error() string {
	kept := "kept aside as " + e.KeptAs
	if e.KeptAs == "" {
		kept = "could not be set aside: " + e.KeepErr.Error()
	}
	return fmt.Sprintf("history %s: %v; %s, starting a fresh history (earlier events and admin clears are not counted)", e.Path, e.Err, kept)
}

func (e *BadFileError) Unwrap() error { return e.Err }

// ValidNode checks that node can name a file: Slurm's node names are letters, digits, '.',
// '_' and '-'.
func ValidNode(node string) error {
	if node == "" || len(node) > maxNodeLen || node == "." || node == ".." {
		return fmt.Errorf("node name %q: not a node name", node)
	}
	for _, r := range node {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("node name %q: %q cannot be part of a file name here (letters, digits, '.', '_', '-')", node, r)
		}
	}
	return nil
}

// Path is node's history file.
func (s Store) Path(node string) (string, error) {
	if err := ValidNode(node); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, node+".json"), nil
}

// Load reads node's history, once per run. No file: a new history and no error. A file it
// cannot use (truncated, not JSON, from another format, another node's, absurd values): a
// new history and a *BadFileError saying what was wrong; the file is set aside, not lost.
// Any other error (the file could not be read): a nil history, so that no verdict stands on
// a history that was never read.
func (s Store) Load(node string, now time.Time) (*History, error) {
	path, err := s.Path(node)
	if err != nil {
		return nil, err
	}
	if s.Read == nil {
		return nil, errors.New("history store: no reader")
	}
	data, err := s.Read(path, s.readLimit())
	if errors.Is(err, fs.ErrNotExist) {
		return New(node), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history %s: %w", path, err)
	}
	h, derr := Decode(data, node, s.readLimit())
	if derr == nil {
		return h, nil
	}
	kept, kerr := s.setAside(path, node, now)
	return New(node), &BadFileError{Path: path, KeptAs: kept, Err: derr, KeepErr: kerr}
}

// readLimit is the largest file Load takes: four times MaxBytes, so that a file written
// under a larger cap is still read (and trimmed at Save), at least 64 KiB.
func (s Store) readLimit() int64 { return int64(max(s.Limits.MaxBytes*4, 64<<10)) }

// Save encodes h under Limits.MaxBytes and writes it atomically.
func (s Store) Save(h *History, now time.Time) error {
	path, err := s.Path(h.Node)
	if err != nil {
		return err
	}
	if s.Write == nil {
		return errors.New("history store: no writer")
	}
	data, err := Encode(h, now, s.Limits)
	if err != nil {
		return fmt.Errorf("encode history for %s: %w", path, err)
	}
	if err := s.Write(path, data, fileMode); err != nil {
		return fmt.Errorf("write history %s: %w", path, err)
	}
	return nil
}

// setAside renames a bad file to <node>.json.bad-<time> and removes the oldest of those
// beyond Limits.KeptAside.
func (s Store) setAside(path, node string, now time.Time) (string, error) {
	rename, remove, list := s.Rename, s.Remove, s.List
	if rename == nil {
		rename = os.Rename
	}
	if remove == nil {
		remove = os.Remove
	}
	if list == nil {
		list = listDir
	}
	prefix := node + ".json.bad-"
	names, err := list(s.Dir)
	if err != nil {
		return "", err
	}
	name := prefix + now.UTC().Format("20060102T150405Z")
	for i := 2; slices.Contains(names, name); i++ {
		name = fmt.Sprintf("%s%s-%d", prefix, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := rename(path, filepath.Join(s.Dir, name)); err != nil {
		return "", err
	}
	var kept []string
	for _, n := range append(names, name) {
		if strings.HasPrefix(n, prefix) {
			kept = append(kept, n)
		}
	}
	slices.Sort(kept)
	for len(kept) > max(s.Limits.KeptAside, 1) {
		_ = remove(filepath.Join(s.Dir, kept[0])) // best effort: the cap is a tidiness bound
		kept = kept[1:]
	}
	return name, nil
}

func listDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names, err
}

// Decode parses a history file and checks it: the format, the node, and every value in its
// range. Anything else is an error saying where, never a guess.
func Decode(data []byte, node string, maxBytes int64) (*History, error) {
	if len(data) == 0 {
		return nil, errors.New("empty file")
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxBytes)
	}
	h, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Format == 0:
		return nil, errors.New(`no "format": not a nodecheck history file`)
	case h.Format > Format:
		return nil, fmt.Errorf("format %d is from a newer nodecheck; this one reads format %d", h.Format, Format)
	case h.Format != Format:
		return nil, fmt.Errorf("format %d: not a format this nodecheck knows (it reads %d)", h.Format, Format)
	case h.Node != node:
		return nil, fmt.Errorf("written for node %q, not %q", h.Node, node)
	}
	if err := validate(h); err != nil {
		return nil, err
	}
	return h, nil
}

// Encode writes h as compact JSON (encoding/json) and a newline, under lim.MaxBytes: when it
// does not fit, every cap and MaxAge are halved until it does, so the oldest entries go
// first.
func Encode(h *History, now time.Time, lim Limits) ([]byte, error) {
	h.Format = Format
	h.prune(now, lim)
	data, err := encodeJSON(h)
	for round := 0; err == nil && len(data) > lim.MaxBytes && round < 12; round++ {
		lim = lim.halved()
		h.prune(now, lim)
		data, err = encodeJSON(h)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("%d bytes even with every cap at its least; the byte cap is %d", len(data), lim.MaxBytes)
	}
	return data, nil
}

// Bounds on strings (bytes) and values.
const (
	maxNodeLen   = 128
	maxIDLen     = 64
	maxNameLen   = 96
	maxMsgLen    = 80
	maxLocLen    = 17 // "7/7" of XID 13, "25525c6/0" of an NVLink5 XID (two 8-digit words at most)
	maxSrcLen    = 32
	maxNetdevLen = 15 // IFNAMSIZ less the NUL
	maxWhoLen    = 64
	maxReasonLen = 200
	maxXID       = 999
	maxPort      = 255
	maxCounter   = 1 << 62
	minTime      = 946684800  // 2000-01-01
	maxTime      = 4102444800 // 2100-01-01
)

// clip makes s a bounded line of printable ASCII: surrounding space trimmed, other bytes
// '?', at most n bytes, "..." marking a cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.TrimRight(s[:max(n-3, 0)], " ") + "..."[:min(3, n)]
	}
	if printable(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
