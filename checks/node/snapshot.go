package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
)

// SnapshotFormat is the snapshot format this nodecheck reads and writes (docs/snapshots.md).
const SnapshotFormat = 1

// snapshotJSONLimit bounds each of a snapshot's JSON files: commands.json holds whole
// command outputs, so it may be much larger than any file a check reads.
const snapshotJSONLimit = 64 << 20

// The files of a snapshot directory.
const (
	metaFile     = "meta.json"
	devicesFile  = "devices.json"
	commandsFile = "commands.json"
	nvmlFile     = "nvml.json"
	fsDir        = "fs"
)

// Meta is a snapshot's meta.json.
type Meta struct {
	Format           int       `json:"format"`            // must be SnapshotFormat
	Hostname         string    `json:"hostname"`          // what Hostname replays
	NodeName         string    `json:"node_name"`         // Slurm's name for the node
	TakenAt          time.Time `json:"taken_at"`          // RFC 3339
	NodecheckVersion string    `json:"nodecheck_version"` // the nodecheck that recorded it
	// SlurmConf is the path of the slurm.conf the recording run read, which SLURM_CONF may
	// have put anywhere. Replay reads it (from fs/, like any file) when neither --slurm-conf
	// nor nodecheck.toml names one.
	SlurmConf string `json:"slurm_conf,omitempty"`
	// DelayMS makes replay stall, to test deadlines: every read of a path equal to or under
	// a key (ReadFile, DevNode, FileStat, IBPorts for keys at, above or under
	// /sys/class/infiniband, PCIDevices for keys at, above or under /sys/bus/pci/devices or
	// /sys/devices, Exec for the program path asked for, a declared fact for FactPath(name)
	// and the keys above it) waits that many milliseconds first, or until ctx is done. Keys
	// are clean absolute paths: {"/sys/class/infiniband": 60000,
	// "/nodecheck/facts/inventory": 5000}. NVML delays are in nvml.json. A recording writes
	// HangDelay for a read that did not finish in time.
	DelayMS map[string]int `json:"delay_ms,omitempty"`
}

// ErrNotRecorded is what a snapshot answers for a command it did not record: a fact the
// replay does not have, as opposed to a program missing from a live node. It wraps
// fs.ErrNotExist, as absence does everywhere in Facts.
var ErrNotRecorded = fmt.Errorf("not recorded in the snapshot: %w", fs.ErrNotExist)

// Snapshot replays a node recorded in a directory (docs/snapshots.md). It never reads the
// live node: every path is looked up inside the directory, through os.Root, so that neither
// ".." nor a symlink can lead out of it. Symlinks inside fs/ (sysfs keeps many) are followed
// as long as they resolve inside fs/; one that points outside is an error, not a miss.
// It is safe for concurrent use.
type Snapshot struct {
	dir      string
	fsRoot   func() (*os.Root, error) // <dir>/fs, opened once (openFS)
	meta     Meta
	delays   []delayRule
	devices  map[string]deviceRecord
	stats    map[string]statRecord // stats.json (filestat.go)
	commands []commandRecord
	nvml     []byte
	gpus     *nvmlRecord // nil: no nvml.json
	// facts are the declared facts' records by name (openFacts), nil where there is none.
	facts map[string]*factFile
}

var _ Facts = (*Snapshot)(nil)

// delayRule is one entry of meta.json's delay_ms.
type delayRule struct {
	prefix string
	ms     int
}

// OpenSnapshot is OpenSnapshotContext without a deadline: a FIFO, device or oversized file
// among the JSON files is still refused at once, but a read that blocks (a hung NFS mount)
// is waited for.
func OpenSnapshot(dir string) (*Snapshot, error) {
	return OpenSnapshotContext(context.Background(), dir)
}

// OpenSnapshotContext reads the snapshot in dir: meta.json is required and must say format 1;
// devices.json, stats.json, commands.json, nvml.json and each declared fact's <Name>.json
// (DeclaredFacts) are optional. Every JSON file is checked here,
// so that a broken snapshot fails at once with the file and the place named. Each is read
// through files.ReadIn: regular files only (a FIFO is refused without blocking on it),
// symlinks followed only inside dir, at most snapshotJSONLimit bytes, and given up when ctx
// is done.
//
// The whole opening runs under one files.Await, not one per file: each Await starts a
// goroutine, and waking a thread for it cost more than the reads of a replay's small files.
// An opening abandoned at the deadline names the file it was reading.
func OpenSnapshotContext(ctx context.Context, dir string) (*Snapshot, error) {
	return openSnapshotFacts(ctx, dir, DeclaredFacts())
}

// openSnapshotFacts is OpenSnapshotContext for the declared facts decls.
func openSnapshotFacts(ctx context.Context, dir string, decls []FactDecl) (*Snapshot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
	}
	var reading atomic.Pointer[string]
	s, err := files.Await(ctx, func() (*Snapshot, error) { return openSnapshot(dir, abs, decls, &reading) })
	var abandoned *files.AbandonedError
	if errors.As(err, &abandoned) {
		if name := reading.Load(); name != nil {
			return nil, fmt.Errorf("open snapshot %s: read %s: %w", dir, *name, err)
		}
		return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
	}
	return s, err
}

// openSnapshot is OpenSnapshotContext's work, without a deadline; reading holds the name of
// the file being read.
func openSnapshot(dir, abs string, decls []FactDecl, reading *atomic.Pointer[string]) (*Snapshot, error) {
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", dir, bare(err))
	}
	defer root.Close()
	s := &Snapshot{dir: abs}
	s.fsRoot = sync.OnceValues(s.openFS)

	read := func(name string) ([]byte, error) {
		reading.Store(&name)
		b, err := files.ReadIn(context.Background(), root, name, files.Limits{MaxBytes: snapshotJSONLimit, FollowSymlinks: true})
		if err != nil {
			return nil, fmt.Errorf("open snapshot %s: read %s: %w", dir, name, bare(err))
		}
		return b, nil
	}
	b, err := read(metaFile)
	if err != nil {
		return nil, err
	}
	if s.meta, err = parseMeta(b); err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
	}
	for p, ms := range s.meta.DelayMS {
		s.delays = append(s.delays, delayRule{prefix: p, ms: ms})
	}
	slices.SortFunc(s.delays, func(a, b delayRule) int { return strings.Compare(a.prefix, b.prefix) })

	if b, err = read(devicesFile); err == nil {
		if s.devices, err = parseDevices(b); err != nil {
			return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if b, err = read(statsFile); err == nil {
		if s.stats, err = parseStats(b); err != nil {
			return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if b, err = read(commandsFile); err == nil {
		if s.commands, err = parseCommands(b); err != nil {
			return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if b, err = read(nvmlFile); err == nil {
		rec, err := parseNVML(b)
		if err != nil {
			return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
		}
		s.nvml, s.gpus = b, &rec
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if s.facts, err = openFacts(dir, read, decls); err != nil {
		return nil, err
	}
	return s, nil
}

// Meta returns the snapshot's meta.json.
func (s *Snapshot) Meta() Meta {
	m := s.meta
	m.DelayMS = maps.Clone(s.meta.DelayMS)
	return m
}

// NVMLJSON returns the content of nvml.json as written, or nil when the snapshot has none.
func (s *Snapshot) NVMLJSON() []byte { return bytes.Clone(s.nvml) }

// ReadFile implements Facts by reading <dir>/fs/<path> through files.ReadIn (as Live reads
// through files.Read: regular files only, bounded, given up at ctx's end). A file the
// snapshot does not hold is missing (fs.ErrNotExist); a symlink leading out of fs/ is an
// error naming it.
func (s *Snapshot) ReadFile(ctx context.Context, path string) ([]byte, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if err := stall(ctx, s.delayFor(p)); err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	name := strings.TrimPrefix(p, "/")
	if name == "" {
		name = "."
	}
	b, err := files.Await(ctx, func() ([]byte, error) {
		root, err := s.fsRoot()
		if err != nil {
			return nil, err
		}
		return files.ReadIn(context.Background(), root, name, liveLimits(DefaultMaxFileSize))
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, bare(err))
	}
	return b, nil
}

// DevNode implements Facts from devices.json. A device not recorded is absent: the recorder
// writes every path a check asked about, missing ones included, so a path it never saw is
// one no check looked for, and absence is the answer that makes a check say so.
func (s *Snapshot) DevNode(ctx context.Context, path string) (DevNode, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return DevNode{}, fmt.Errorf("stat: %w", err)
	}
	rec, ok := s.devices[p]
	if err := stall(ctx, max(s.delayFor(p), rec.DelayMS)); err != nil {
		return DevNode{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if !ok {
		return DevNode{Path: p, Missing: true}, nil
	}
	return rec.devNode(), nil
}

// IBPorts implements Facts by reading <dir>/fs/sys/class/infiniband with the same code as
// Live.
func (s *Snapshot) IBPorts(ctx context.Context) ([]IBPort, error) {
	if err := stall(ctx, s.ibDelay()); err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", ibClassDir, err)
	}
	return listWithin(ctx, "/sys/"+ibClassDir, func() ([]IBPort, error) {
		return withSysTree(s, func(sys fs.FS) ([]IBPort, error) { return readIBPorts(ctx, sys) },
			func(err error) error { return fmt.Errorf("list /sys/%s: %w", ibClassDir, err) })
	})
}

// PCIDevices implements Facts by reading <dir>/fs/sys/bus/pci/devices with the same code as
// Live. The entries' links must resolve inside fs/, as everything a snapshot holds.
func (s *Snapshot) PCIDevices(ctx context.Context) ([]PCIDevice, error) {
	if err := stall(ctx, s.treeDelay("/sys/"+pciDevicesDir, "/sys/devices")); err != nil {
		return nil, fmt.Errorf("list /sys/%s: %w", pciDevicesDir, err)
	}
	return listWithin(ctx, "/sys/"+pciDevicesDir, func() ([]PCIDevice, error) {
		return withSysTree(s, func(sys fs.FS) ([]PCIDevice, error) { return readPCIDevices(ctx, sys) },
			func(err error) error { return fmt.Errorf("list /sys/%s: %w", pciDevicesDir, err) })
	})
}

// withSysTree runs list on the snapshot's fs/sys; a snapshot without fs/ has nothing there,
// and wrap names the listing in any other error of opening the tree. The directories the
// listing opens to read in (rootTree) are closed when it returns.
func withSysTree[T any](s *Snapshot, list func(fs.FS) (T, error), wrap func(error) error) (T, error) {
	var zero T
	root, err := s.fsRoot()
	if errors.Is(err, fs.ErrNotExist) {
		return zero, nil
	}
	if err != nil {
		return zero, wrap(err)
	}
	sys, err := rootTree(root, "sys")
	if err != nil {
		return zero, wrap(err)
	}
	defer sys.close()
	return list(sys)
}

// GPUs implements Facts from nvml.json, stalling for its delay_ms (on the root, then on each
// device in turn, as a blocked NVML call would) and hanging until ctx is done where the
// recording timed out. A snapshot without nvml.json has no NVML facts: that is an error
// wrapping fs.ErrNotExist, not an answer, so that a check says so instead of judging.
func (s *Snapshot) GPUs(ctx context.Context) (GPUInventory, error) {
	if err := ctx.Err(); err != nil {
		return GPUInventory{}, fmt.Errorf("read NVML: %w", err)
	}
	rec := s.gpus
	if rec == nil {
		return GPUInventory{}, fmt.Errorf("read NVML: no NVML facts recorded (the snapshot has no %s): %w", nvmlFile, fs.ErrNotExist)
	}
	if err := stall(ctx, rec.DelayMS); err != nil {
		return GPUInventory{}, fmt.Errorf("read NVML: %w", err)
	}
	for _, d := range rec.Devices {
		if err := stall(ctx, d.DelayMS); err != nil {
			return GPUInventory{}, fmt.Errorf("read NVML: GPU %d: %w", d.Index, err)
		}
	}
	inv := nvmlInventory(*rec)
	if rec.TimedOut {
		if ctx.Done() == nil {
			return GPUInventory{}, fmt.Errorf("read NVML: recorded as timed out: %w", context.DeadlineExceeded)
		}
		<-ctx.Done()
		return GPUInventory{}, fmt.Errorf("read NVML: recorded as timed out: %w", ctx.Err())
	}
	return inv, nil
}

// Exec implements Facts from commands.json. argv is matched against the recorded commands
// by exact argv first, then by the same program base name and arguments, then by the
// program base name alone (not for a program whose arguments are the question: argsMatter),
// taking the first match in file order at the first rule that matches; so a snapshot
// replays under a config that installs tools elsewhere. A command not
// recorded behaves as not installed (fs.ErrNotExist). Output is cut at OutputLimit,
// as Live cuts it (dmesg's keeping its end: KeepsTail).
func (s *Snapshot) Exec(ctx context.Context, argv []string) (CmdResult, error) {
	res := CmdResult{Argv: slices.Clone(argv), ExitCode: -1}
	if len(argv) == 0 {
		return res, errors.New("run: empty command")
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) {
		return res, fmt.Errorf("run %q: program path is not absolute", prog)
	}
	rec, ok := matchCommand(s.commands, argv)
	if err := stall(ctx, max(s.delayFor(path.Clean(prog)), rec.DelayMS)); err != nil {
		return res, fmt.Errorf("run %s: %w", prog, err)
	}
	if !ok {
		return res, fmt.Errorf("run %s: %w", prog, ErrNotRecorded)
	}
	if KeepsTail(prog) {
		res.Stdout, res.CutFront = cutTail(rec.Stdout, OutputLimit(prog, DefaultOutputLimit))
		res.Truncated = res.CutFront
	} else {
		res.Stdout, res.Truncated = cut(rec.Stdout, OutputLimit(prog, DefaultOutputLimit))
	}
	var cutErr bool
	res.Stderr, cutErr = cut(rec.Stderr, OutputLimit(prog, DefaultOutputLimit))
	// A recording cut as this Exec cuts says so; one made before dmesg kept its tail
	// (truncated without cut_front) lost the end of the log.
	res.Truncated = res.Truncated || cutErr || rec.Truncated
	res.CutFront = res.CutFront || rec.CutFront
	res.ExitCode = rec.ExitCode
	res.Duration = time.Duration(rec.DurationMS) * time.Millisecond
	if rec.TimedOut {
		if ctx.Done() == nil {
			// ctx can never be done, so nothing would end the hang: answer as if a deadline
			// had passed.
			return res, fmt.Errorf("run %s: recorded as timed out: %w", prog, context.DeadlineExceeded)
		}
		<-ctx.Done()
		return res, fmt.Errorf("run %s: recorded as timed out: %w", prog, ctx.Err())
	}
	return res, nil
}

// Hostname implements Facts: meta.json's hostname, or else fs/proc/sys/kernel/hostname.
func (s *Snapshot) Hostname(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("read host name: %w", err)
	}
	if s.meta.Hostname != "" {
		return s.meta.Hostname, nil
	}
	b, err := s.ReadFile(ctx, "/proc/sys/kernel/hostname")
	if err != nil {
		return "", fmt.Errorf("read host name: meta.json has none: %w", err)
	}
	h := strings.TrimSpace(string(b))
	if h == "" {
		return "", errors.New("read host name: meta.json has none and /proc/sys/kernel/hostname is empty")
	}
	return h, nil
}

// openFS opens <dir>/fs as a root confined to it. It is opened through a root at dir, so that
// fs/ itself being a symlink out of dir is refused too. Snapshot.fsRoot calls it once and
// keeps the root for the snapshot's life: every read of the replay starts from it, instead
// of opening dir and fs/ again for each file (os.Root is safe for concurrent use, and the
// runtime closes it with the snapshot).
func (s *Snapshot) openFS() (*os.Root, error) {
	top, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, bare(err)
	}
	defer top.Close()
	root, err := top.OpenRoot(fsDir)
	if err != nil {
		return nil, bare(err)
	}
	return root, nil
}

// delayFor is the longest meta.json delay whose prefix is p or a parent of p.
func (s *Snapshot) delayFor(p string) int {
	ms := 0
	for _, d := range s.delays {
		if underPath(p, d.prefix) {
			ms = max(ms, d.ms)
		}
	}
	return ms
}

// ibDelay is the longest meta.json delay touching /sys/class/infiniband: on it, above it,
// or under it (IBPorts reads every device under it).
func (s *Snapshot) ibDelay() int { return s.treeDelay("/sys/" + ibClassDir) }

// treeDelay is the longest meta.json delay on, above or under any of dirs.
func (s *Snapshot) treeDelay(dirs ...string) int {
	ms := 0
	for _, d := range s.delays {
		for _, dir := range dirs {
			if underPath(dir, d.prefix) || underPath(d.prefix, dir) {
				ms = max(ms, d.ms)
			}
		}
	}
	return ms
}

// underPath reports whether p is dir or lies under it; both are clean absolute paths.
func underPath(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// stall waits ms milliseconds, or until ctx is done, whichever comes first; it returns
// ctx's error in the second case.
func stall(ctx context.Context, ms int) error {
	if err := ctx.Err(); err != nil || ms <= 0 {
		return err
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// cut returns s cut to limit bytes and whether it was cut.
func cut(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return s[:limit], true
}

// argsMatter reports whether a program answers so differently by its arguments that a
// recording of it with other arguments is no answer at all: dcgmi, whose verbs and options
// are different questions (`dcgmi health -c -j` and `dcgmi diag -r 1 -j` print different
// documents). Such a program matches by its arguments only, under any path.
func argsMatter(base string) bool { return base == "dcgmi" }

// matchCommand finds argv's recorded command; see Snapshot.Exec for the rules.
func matchCommand(recs []commandRecord, argv []string) (commandRecord, bool) {
	base := path.Base(argv[0])
	rules := []func(commandRecord) bool{
		func(r commandRecord) bool { return slices.Equal(r.Argv, argv) },
		func(r commandRecord) bool { return path.Base(r.Argv[0]) == base && slices.Equal(r.Argv[1:], argv[1:]) },
		func(r commandRecord) bool { return path.Base(r.Argv[0]) == base && !argsMatter(base) },
	}
	for _, match := range rules {
		for _, r := range recs {
			if match(r) {
				return r, true
			}
		}
	}
	return commandRecord{}, false
}
