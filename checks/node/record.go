package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// Recorder is a Facts that answers from an inner Facts (Live, on a node) and remembers every
// answer, so that Save can write them as a snapshot which replays the same answers.
//
// What is recorded: the content of every file read; every DevNode answer, missing devices
// included; the files behind IBPorts (state, phys_state, rate, link_layer of each port);
// every command that ran, including one killed at its deadline (replayed as a hang); the
// host name. What cannot be recorded is left out, and replays as absence: a file or command
// that was missing (which is exact), and a read or command that failed some other way
// (permission, I/O error), which the snapshot format has no way to say.
type Recorder struct {
	inner Facts

	mu       sync.Mutex
	files    map[string][]byte
	devices  map[string]DevNode
	commands []commandRecord
	hostname string
}

var _ Facts = (*Recorder)(nil)

// NewRecorder returns a Recorder passing calls to inner.
func NewRecorder(inner Facts) *Recorder {
	return &Recorder{inner: inner, files: map[string][]byte{}, devices: map[string]DevNode{}}
}

// ReadFile implements Facts and records the content read.
func (r *Recorder) ReadFile(ctx context.Context, path string) ([]byte, error) {
	b, err := r.inner.ReadFile(ctx, path)
	if err == nil {
		if p, cerr := cleanAbs(path); cerr == nil {
			r.mu.Lock()
			r.files[p] = bytes.Clone(b)
			r.mu.Unlock()
		}
	}
	return b, err
}

// DevNode implements Facts and records the answer, missing or not.
func (r *Recorder) DevNode(ctx context.Context, path string) (DevNode, error) {
	dn, err := r.inner.DevNode(ctx, path)
	if err == nil {
		r.mu.Lock()
		r.devices[dn.Path] = dn
		r.mu.Unlock()
	}
	return dn, err
}

// IBPorts implements Facts. It records the attribute files of each port listed by reading
// them again through ReadFile, so the snapshot holds the kernel's text rather than a
// re-rendering of the parsed values.
func (r *Recorder) IBPorts(ctx context.Context) ([]IBPort, error) {
	ports, err := r.inner.IBPorts(ctx)
	for _, p := range ports {
		dir := fmt.Sprintf("/sys/%s/%s/ports/%d", ibClassDir, p.Device, p.Port)
		for _, name := range []string{"state", "phys_state", "rate", "link_layer"} {
			// A failure here leaves the file out; the answer returned is inner's either way.
			_, _ = r.ReadFile(ctx, dir+"/"+name)
		}
	}
	return ports, err
}

// Exec implements Facts. A command that ran is recorded with its exit code, output and
// duration; one killed when ctx was done is recorded as timed out; one that could not start
// is not recorded, so it replays as not installed.
func (r *Recorder) Exec(ctx context.Context, argv []string) (CmdResult, error) {
	res, err := r.inner.Exec(ctx, argv)
	rec := commandRecord{
		Argv:       slices.Clone(argv),
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ExitCode:   res.ExitCode,
		DurationMS: res.Duration.Milliseconds(),
		Truncated:  res.Truncated,
	}
	switch {
	case err == nil:
	case (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) && res.ExitCode != -1:
		rec.TimedOut = true
	default:
		return res, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Replay answers the first exact match, so a second run of the same argv adds nothing.
	if !slices.ContainsFunc(r.commands, func(c commandRecord) bool { return slices.Equal(c.Argv, argv) }) {
		r.commands = append(r.commands, rec)
	}
	return res, err
}

// Hostname implements Facts and records the name, which Save writes to meta.json.
func (r *Recorder) Hostname(ctx context.Context) (string, error) {
	h, err := r.inner.Hostname(ctx)
	if err == nil {
		r.mu.Lock()
		r.hostname = h
		r.mu.Unlock()
	}
	return h, err
}

// Save writes what was recorded as a snapshot in dir, which must be missing or empty so that
// nothing of an older snapshot mixes in. meta's Format is set to SnapshotFormat, and its
// Hostname, when empty, to the recorded host name.
func (r *Recorder) Save(dir string, meta Meta) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save snapshot %s: %w", dir, bare(err))
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("save snapshot %s: %w", dir, bare(err))
	}
	if len(ents) > 0 {
		return fmt.Errorf("save snapshot %s: directory is not empty", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("save snapshot %s: %w", dir, bare(err))
	}
	defer root.Close()

	meta.Format = SnapshotFormat
	if meta.Hostname == "" {
		meta.Hostname = r.hostname
	}
	if err := writeJSON(root, metaFile, meta); err != nil {
		return fmt.Errorf("save snapshot %s: %w", dir, err)
	}
	if len(r.devices) > 0 {
		devs := make([]deviceRecord, 0, len(r.devices))
		for _, p := range slices.Sorted(maps.Keys(r.devices)) {
			devs = append(devs, newDeviceRecord(r.devices[p]))
		}
		if err := writeJSON(root, devicesFile, devs); err != nil {
			return fmt.Errorf("save snapshot %s: %w", dir, err)
		}
	}
	if len(r.commands) > 0 {
		if err := writeJSON(root, commandsFile, r.commands); err != nil {
			return fmt.Errorf("save snapshot %s: %w", dir, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(r.files)) {
		name := path.Join(fsDir, strings.TrimPrefix(p, "/"))
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return fmt.Errorf("save snapshot %s: %s: %w", dir, name, bare(err))
		}
		if err := root.WriteFile(name, r.files[p], 0o644); err != nil {
			return fmt.Errorf("save snapshot %s: %s: %w", dir, name, bare(err))
		}
	}
	return nil
}

// writeJSON writes v indented, with <, > and & left as they are so that recorded command
// output stays readable in a diff.
func writeJSON(root *os.Root, name string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := root.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", name, bare(err))
	}
	return nil
}
