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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Recorder is a Facts that answers from an inner Facts (Live, on a node) and remembers every
// answer, so that Save can write them as a snapshot which replays the same answers.
//
// What is recorded: the content of every file read; every DevNode and FileStat answer,
// missing paths included; the files behind IBPorts (state, phys_state, rate, link_layer of each port);
// the files behind PCIDevices (each /sys/bus/pci/devices entry as the link it is, and the
// attributes readPCIDevices reads at its target); the NVML inventory; each declared fact
// read, as its value (fact.go), not the files behind it; every command that ran, including
// one killed at its deadline (replayed as a hang), and likewise an NVML or declared fact's
// reading cut off by its deadline, and a file, device or directory read that ctx ended or
// that was still blocked when Save ran (a wedged sysfs read: saved as a meta.json delay_ms
// of HangDelay on its path); the host name. What cannot be recorded is left out, and
// replays as absence: a file or command that was missing (which is exact), and a read or
// command that failed some other way (permission, I/O error), which the snapshot format
// has no way to say.
//
// Only what was asked for is recorded, never a whole tree; and Save withholds files that
// hold secrets (see isSecretPath) even if something read them.
type Recorder struct {
	inner Facts

	mu       sync.Mutex
	files    map[string][]byte
	links    map[string]string // node path -> link text, relative as sysfs writes it
	devices  map[string]DevNode
	stats    map[string]FileStat
	commands []commandRecord
	gpus     *nvmlRecord
	facts    map[string][]byte // declared facts' records by name, encoded (fact.go)
	hangs    map[string]bool   // paths whose read ctx ended
	hostname string
	listed   map[string]bool // the listings asked for: "hostname", "pci", "ib", "gpus", factKey(name)
	pending  map[string]int  // reads under way, by path (nvmlKey for GPUs, factKey(name) for a declared fact)
}

// nvmlKey stands for NVML in Recorder.pending.
const nvmlKey = "nvml"

// HangDelay is the delay_ms Save writes for a read that had not finished when its deadline
// came: an hour, longer than any check waits, so replay hangs until its own deadline.
const HangDelay = time.Hour

var _ Facts = (*Recorder)(nil)

// NewRecorder returns a Recorder passing calls to inner.
func NewRecorder(inner Facts) *Recorder {
	return &Recorder{inner: inner, files: map[string][]byte{}, links: map[string]string{},
		devices: map[string]DevNode{}, stats: map[string]FileStat{}, facts: map[string][]byte{}, hangs: map[string]bool{}, listed: map[string]bool{}, pending: map[string]int{}}
}

// AddFile records content as the file at path, as if it had been read: the snapshot
// command uses it for the nodecheck.toml the run used, which the run reads from disk
// rather than through Facts.
func (r *Recorder) AddFile(path string, content []byte) error {
	p, err := cleanAbs(path)
	if err != nil {
		return fmt.Errorf("record file: %w", err)
	}
	r.mu.Lock()
	r.files[p] = bytes.Clone(content)
	r.mu.Unlock()
	return nil
}

// ReadFile implements Facts and records the content read.
func (r *Recorder) ReadFile(ctx context.Context, path string) ([]byte, error) {
	defer r.begin(path)()
	b, err := r.inner.ReadFile(ctx, path)
	r.noteFile(path, b, err, true)
	return b, err
}

// reread reads path again for a listing (IBPorts, PCIDevices) and records the content. A
// read that ctx ends here is not noted as a hang: the listing itself answered.
func (r *Recorder) reread(ctx context.Context, path string) {
	b, err := r.inner.ReadFile(ctx, path)
	r.noteFile(path, b, err, false)
}

func (r *Recorder) noteFile(path string, b []byte, err error, hangs bool) {
	p, cerr := cleanAbs(path)
	if cerr != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.files[p] = bytes.Clone(b)
	case hangs && isDeadline(err):
		r.hangs[p] = true
	}
}

// isDeadline reports whether err says ctx ended the call.
func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// begin marks a read of key as under way; the function it returns marks it over, and must
// run after what the read recorded. A read still under way when Save runs (a check that
// its deadline abandoned, still blocked) is saved as a hang: the order of Save and the
// abandoned goroutine's return must not change the snapshot.
func (r *Recorder) begin(key string) func() {
	if key != nvmlKey {
		p, err := cleanAbs(key)
		if err != nil {
			return func() {}
		}
		key = p
	}
	return r.track(key)
}

// track is begin for a key taken as it is.
func (r *Recorder) track(key string) func() {
	r.mu.Lock()
	r.pending[key]++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.pending[key]--
		r.mu.Unlock()
	}
}

// noteListed records that a listing was asked for.
func (r *Recorder) noteListed(what string) {
	r.mu.Lock()
	r.listed[what] = true
	r.mu.Unlock()
}

// noteHang records that ctx ended the read of p.
func (r *Recorder) noteHang(p string, err error) {
	if isDeadline(err) {
		r.mu.Lock()
		r.hangs[p] = true
		r.mu.Unlock()
	}
}

// DevNode implements Facts and records the answer, missing or not.
func (r *Recorder) DevNode(ctx context.Context, path string) (DevNode, error) {
	defer r.begin(path)()
	dn, err := r.inner.DevNode(ctx, path)
	if err == nil {
		r.mu.Lock()
		r.devices[dn.Path] = dn
		r.mu.Unlock()
	} else if p, cerr := cleanAbs(path); cerr == nil {
		r.noteHang(p, err)
	}
	return dn, err
}

// IBPorts implements Facts. It records the attribute files of each port listed by reading
// them again through ReadFile, so the snapshot holds the kernel's text rather than a
// re-rendering of the parsed values.
func (r *Recorder) IBPorts(ctx context.Context) ([]IBPort, error) {
	r.noteListed("ib")
	end := r.begin("/sys/" + ibClassDir)
	ports, err := r.inner.IBPorts(ctx)
	r.noteHang("/sys/"+ibClassDir, err)
	end()
	for _, p := range ports {
		dir := fmt.Sprintf("/sys/%s/%s/ports/%d", ibClassDir, p.Device, p.Port)
		for _, name := range []string{"state", "phys_state", "rate", "link_layer"} {
			// A failure here leaves the file out; the answer returned is inner's either way.
			r.reread(ctx, dir+"/"+name)
		}
	}
	return ports, err
}

// PCIDevices implements Facts. For each function listed it records the bus entry as a link
// to the function's directory (SysfsPath), as sysfs has it, and the attribute files there,
// read again through ReadFile so that the snapshot holds the kernel's text.
func (r *Recorder) PCIDevices(ctx context.Context) ([]PCIDevice, error) {
	r.noteListed("pci")
	end := r.begin("/sys/" + pciDevicesDir)
	devs, err := r.inner.PCIDevices(ctx)
	r.noteHang("/sys/"+pciDevicesDir, err)
	end()
	for _, d := range devs {
		bus, berr := cleanAbs("/sys/" + pciDevicesDir + "/" + d.Address)
		dir, derr := cleanAbs(d.SysfsPath)
		if berr != nil || derr != nil || path.Dir(bus) != "/sys/"+pciDevicesDir || !underPath(dir, "/sys") {
			continue // not a name sysfs would give; nothing sensible to record
		}
		if dir != bus {
			rel, rerr := filepath.Rel(path.Dir(bus), dir)
			if rerr != nil {
				continue
			}
			r.mu.Lock()
			r.links[bus] = filepath.ToSlash(rel)
			r.mu.Unlock()
		}
		for _, name := range pciAttrs {
			// A failure here leaves the file out; the answer returned is inner's either way.
			r.reread(ctx, dir+"/"+name)
		}
	}
	return devs, err
}

// GPUs implements Facts and records the inventory as nvml.json. A reading cut off by ctx
// is recorded as timed out (replayed as a hang); one that failed otherwise is not
// recorded, so it replays as "no NVML facts recorded".
func (r *Recorder) GPUs(ctx context.Context) (GPUInventory, error) {
	r.noteListed("gpus")
	defer r.begin(nvmlKey)()
	inv, err := r.inner.GPUs(ctx)
	var rec nvmlRecord
	switch {
	case err == nil:
		rec = newNVMLRecord(inv)
	case isDeadline(err):
		rec = nvmlRecord{TimedOut: true}
	default:
		return inv, err
	}
	r.mu.Lock()
	r.gpus = &rec
	r.mu.Unlock()
	return inv, err
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
		CutFront:   res.CutFront,
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
	r.noteListed("hostname")
	h, err := r.inner.Hostname(ctx)
	if err == nil {
		r.mu.Lock()
		r.hostname = h
		r.mu.Unlock()
	}
	return h, err
}

// Saved says what Save wrote.
type Saved struct {
	Hostname string // meta.json's hostname
	Files    int    // files under fs/
	Links    int    // symbolic links under fs/ (sysfs' /sys/bus/pci/devices entries)
	Devices  int    // entries of devices.json
	Commands int    // entries of commands.json
	NVML     bool   // whether nvml.json was written
	// Facts are the declared facts written, as <Name>.json, sorted.
	Facts []string
	Bytes int64 // every byte written, JSON files included
	// Hangs are the paths whose read had not finished at its deadline, saved as delays.
	Hangs []string
	// Withheld are the files that were read but not written because they hold secrets
	// (isSecretPath); replay sees them as absent.
	Withheld []string
}

// Save writes what was recorded as a snapshot in dir, which must be missing or empty so that
// nothing of an older snapshot mixes in. meta's Format is set to SnapshotFormat, and its
// Hostname, when empty, to the recorded host name.
func (r *Recorder) Save(dir string, meta Meta) (Saved, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st Saved
	root, err := openEmptyDir(dir)
	if err != nil {
		return st, fmt.Errorf("save snapshot %s: %w", dir, err)
	}
	defer root.Close()
	w := snapshotWriter{root: root, st: &st}
	meta, gpus := r.settle(meta, &st)
	err = w.json(metaFile, meta)
	if err == nil {
		err = r.saveJSON(w, gpus)
	}
	if err == nil {
		err = r.saveLinks(w)
	}
	if err == nil {
		err = r.saveFiles(w)
	}
	if err != nil {
		return st, fmt.Errorf("save snapshot %s: %w", dir, err)
	}
	return st, nil
}

// openEmptyDir creates dir if missing and opens it, refusing one that holds anything.
func openEmptyDir(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, bare(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, bare(err)
	}
	if len(ents) > 0 {
		return nil, errors.New("directory is not empty")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, bare(err)
	}
	return root, nil
}

// snapshotWriter writes a snapshot's files under root and counts them in st.
type snapshotWriter struct {
	root *os.Root
	st   *Saved
}

func (w snapshotWriter) json(name string, v any) error {
	n, err := writeJSON(w.root, name, v)
	w.st.Bytes += int64(n)
	return err
}

// settle completes meta for Save: the format, the host name, and a delay for every read
// still under way or cut off by its deadline (st.Hangs lists them). It returns the NVML
// record to write, a timed-out one where an NVML reading never returned; nil for none.
func (r *Recorder) settle(meta Meta, st *Saved) (Meta, *nvmlRecord) {
	meta.Format = SnapshotFormat
	if meta.Hostname == "" {
		meta.Hostname = r.hostname
	}
	st.Hostname = meta.Hostname
	hangs := maps.Clone(r.hangs)
	gpus := r.gpus
	for key, n := range r.pending {
		switch {
		case n == 0:
		case key == nvmlKey && gpus == nil:
			gpus = &nvmlRecord{TimedOut: true}
		case strings.HasPrefix(key, "fact:"): // settleFacts
		case key != nvmlKey:
			hangs[key] = true
		}
	}
	if len(hangs) > 0 {
		meta.DelayMS = maps.Clone(meta.DelayMS)
		if meta.DelayMS == nil {
			meta.DelayMS = map[string]int{}
		}
		for _, p := range slices.Sorted(maps.Keys(hangs)) {
			meta.DelayMS[p] = max(meta.DelayMS[p], int(HangDelay.Milliseconds()))
			st.Hangs = append(st.Hangs, p)
		}
	}
	return meta, gpus
}

// saveJSON writes devices.json, commands.json, nvml.json and each declared fact's
// <Name>.json, each where something was recorded for it.
func (r *Recorder) saveJSON(w snapshotWriter, gpus *nvmlRecord) error {
	if len(r.devices) > 0 {
		devs := make([]deviceRecord, 0, len(r.devices))
		for _, p := range slices.Sorted(maps.Keys(r.devices)) {
			devs = append(devs, newDeviceRecord(r.devices[p]))
		}
		if err := w.json(devicesFile, devs); err != nil {
			return err
		}
		w.st.Devices = len(devs)
	}
	if err := r.saveStats(w); err != nil {
		return err
	}
	if len(r.commands) > 0 {
		if err := w.json(commandsFile, r.commands); err != nil {
			return err
		}
		w.st.Commands = len(r.commands)
	}
	if gpus != nil {
		if err := w.json(nvmlFile, gpus); err != nil {
			return err
		}
		w.st.NVML = true
	}
	facts := r.settleFacts()
	for _, name := range slices.Sorted(maps.Keys(facts)) {
		file := name + ".json"
		if err := w.root.WriteFile(file, facts[name], 0o644); err != nil {
			return fmt.Errorf("%s: %w", file, bare(err))
		}
		w.st.Bytes += int64(len(facts[name]))
		w.st.Facts = append(w.st.Facts, name)
	}
	return nil
}

// saveLinks writes the recorded links under fs/, each with its target directory, so that
// files read through a link (a check reading /sys/bus/pci/devices/<addr>/numa_node) land in
// the target as on the node. They go first, before the files.
func (r *Recorder) saveLinks(w snapshotWriter) error {
	for _, p := range slices.Sorted(maps.Keys(r.links)) {
		name := path.Join(fsDir, strings.TrimPrefix(p, "/"))
		target := path.Join(fsDir, strings.TrimPrefix(path.Join(path.Dir(p), r.links[p]), "/"))
		if err := w.root.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("%s: %w", target, bare(err))
		}
		if err := w.root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, bare(err))
		}
		if err := w.root.Symlink(r.links[p], name); err != nil {
			return fmt.Errorf("%s: %w", name, bare(err))
		}
		w.st.Links++
	}
	return nil
}

// saveFiles writes the recorded files under fs/, withholding secrets (isSecretPath). A file
// read through a link (/sys/bus/pci/devices/<addr>/class) is written at the link's target,
// once, however many names it was read by.
func (r *Recorder) saveFiles(w snapshotWriter) error {
	written := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(r.files)) {
		rp := r.resolve(p)
		if isSecretPath(p) || isSecretPath(rp) {
			w.st.Withheld = append(w.st.Withheld, p)
			continue
		}
		if written[rp] {
			continue
		}
		written[rp] = true
		name := path.Join(fsDir, strings.TrimPrefix(rp, "/"))
		if err := w.root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, bare(err))
		}
		if err := w.root.WriteFile(name, r.files[p], 0o644); err != nil {
			return fmt.Errorf("%s: %w", name, bare(err))
		}
		w.st.Files++
		w.st.Bytes += int64(len(r.files[p]))
	}
	return nil
}

// resolve follows the recorded links in p.
func (r *Recorder) resolve(p string) string {
	for l, target := range r.links {
		if p != l && underPath(p, l) {
			return path.Join(path.Dir(l), target, strings.TrimPrefix(p, l))
		}
	}
	return p
}

// secretDirs hold credentials: a snapshot travels in bug reports, so nothing under them is
// ever written, whatever read it.
var secretDirs = []string{
	"/etc/munge", "/var/lib/munge", "/run/munge", // munge.key signs every Slurm message
	"/etc/shadow", "/etc/gshadow", "/etc/ssh", "/root", "/home",
}

// isSecretPath reports whether a snapshot must not hold the file at p: anything under
// secretDirs, and any private key by its usual names (Slurm's jwt_hs256.key, TLS *.pem).
func isSecretPath(p string) bool {
	for _, d := range secretDirs {
		if underPath(p, d) {
			return true
		}
	}
	base := path.Base(p)
	return strings.HasSuffix(base, ".key") || strings.HasSuffix(base, ".pem")
}

// writeJSON writes v indented, with <, > and & left as they are so that recorded command
// output stays readable in a diff. It returns the number of bytes written.
func writeJSON(root *os.Root, name string, v any) (int, error) {
	b, err := encodeJSON(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if err := root.WriteFile(name, b, 0o644); err != nil {
		return 0, fmt.Errorf("%s: %w", name, bare(err))
	}
	return len(b), nil
}

// encodeJSON is a snapshot file's form of v: indented by two spaces, HTML characters left
// as they are, and a final newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalNVMLJSON is inv as a snapshot's nvml.json, byte for byte as `nodecheck snapshot`
// writes it: for nodecheck import-nvidia-smi.
func MarshalNVMLJSON(inv GPUInventory) ([]byte, error) {
	b, err := encodeJSON(newNVMLRecord(inv))
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", nvmlFile, err)
	}
	return b, nil
}

// RecordInventory reads through r what any check may read and the checks that ran did not:
// the host name, the PCI bus, the InfiniBand ports, every declared fact (DeclaredFacts) and
// NVML, so that a snapshot also serves checks added later, and bug reports. Each read runs under
// timeout. A listing the checks asked for is not asked again: the recording holds its
// answer, or its hang. It returns the NVML answer, from the recording where the checks
// asked NVML.
func (r *Recorder) RecordInventory(ctx context.Context, timeout time.Duration) (GPUInventory, error) {
	r.mu.Lock()
	listed := maps.Clone(r.listed)
	gpus := r.gpus
	r.mu.Unlock()
	bounded := func(read func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return read(ctx)
	}
	if !listed["hostname"] {
		_ = bounded(func(ctx context.Context) error { _, err := r.Hostname(ctx); return err })
	}
	if !listed["pci"] {
		_ = bounded(func(ctx context.Context) error { _, err := r.PCIDevices(ctx); return err })
	}
	if !listed["ib"] {
		_ = bounded(func(ctx context.Context) error { _, err := r.IBPorts(ctx); return err })
	}
	for _, d := range DeclaredFacts() {
		if !listed[factKey(d.FactName())] {
			_ = bounded(func(ctx context.Context) error { _, err := r.Fact(ctx, d); return err })
		}
	}
	if listed["gpus"] {
		switch {
		case gpus == nil:
			return GPUInventory{}, errors.New("read NVML: the checks' reading failed or is still running")
		case gpus.TimedOut:
			return GPUInventory{}, fmt.Errorf("read NVML: no answer before the checks' deadline: %w", context.DeadlineExceeded)
		}
		return nvmlInventory(*gpus), nil
	}
	var inv GPUInventory
	err := bounded(func(ctx context.Context) error {
		var err error
		inv, err = r.GPUs(ctx)
		return err
	})
	return inv, err
}
