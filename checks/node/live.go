package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodecheck/nodecheck/config/files"
)

// Paths are the roots Live reads the node from. Tests point them at fixture trees; on a node
// they are DefaultPaths. Each must be an absolute path to a directory: a hook runs in slurmd's
// working directory, so a relative root would mean something different in every context.
type Paths struct {
	Sys string // sysfs mount, "/sys": IBPorts, and ReadFile and DevNode of /sys/... paths
	Dev string // device directory, "/dev": ReadFile and DevNode of /dev/... paths
	FS  string // root of every other absolute path, "/": /etc/slurm/gres.conf is FS/etc/slurm/gres.conf
}

// DefaultPaths are the roots of a real node.
func DefaultPaths() Paths { return Paths{Sys: "/sys", Dev: "/dev", FS: "/"} }

// Live reads the node it runs on (or fixture trees standing for it). It is safe for
// concurrent use.
type Live struct {
	paths       Paths
	maxFileSize int64
	exec        execConfig
	gpus        GPUSource
}

var _ Facts = (*Live)(nil)

// LiveOption changes one of Live's defaults.
type LiveOption func(*Live)

// WithMaxFileSize sets the largest file ReadFile accepts (DefaultMaxFileSize by default).
func WithMaxFileSize(n int64) LiveOption { return func(l *Live) { l.maxFileSize = n } }

// WithOutputLimit sets how many bytes of a command's stdout, and as many of its stderr, Exec
// keeps (DefaultOutputLimit by default). The rest is read and dropped.
func WithOutputLimit(n int) LiveOption { return func(l *Live) { l.exec.outputLimit = n } }

// WithWaitDelay sets how long Exec waits for a command's output pipes to close once the
// command has exited or been killed (DefaultWaitDelay by default). It bounds the wait when
// a process that escaped the command's process group still holds the pipes.
func WithWaitDelay(d time.Duration) LiveOption { return func(l *Live) { l.exec.waitDelay = d } }

// WithEnv replaces the environment commands run with (DefaultEnv() by default).
func WithEnv(env []string) LiveOption {
	// A copy, so that a caller's later changes do not reach Live.
	return func(l *Live) { l.exec.env = slices.Clone(env) }
}

// WithGPUSource sets where GPUs reads NVML from: checks/node/nvml's Source in a cgo build.
// Without one (or with nil), GPUs reports Init InitNotBuilt.
func WithGPUSource(s GPUSource) LiveOption { return func(l *Live) { l.gpus = s } }

// NewLive returns a Live reading from the roots in p, after checking that each is an
// absolute path to a directory.
func NewLive(p Paths, opts ...LiveOption) (*Live, error) {
	for _, r := range []struct{ name, dir string }{{"Sys", p.Sys}, {"Dev", p.Dev}, {"FS", p.FS}} {
		if r.dir == "" {
			return nil, fmt.Errorf("node root %s is empty", r.name)
		}
		if !filepath.IsAbs(r.dir) {
			return nil, fmt.Errorf("node root %s %q is not absolute", r.name, r.dir)
		}
		fi, err := os.Stat(r.dir)
		if err != nil {
			return nil, fmt.Errorf("node root %s: %w", r.name, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("node root %s %q is not a directory", r.name, r.dir)
		}
	}
	l := &Live{
		paths:       p,
		maxFileSize: DefaultMaxFileSize,
		exec: execConfig{
			outputLimit: DefaultOutputLimit,
			waitDelay:   DefaultWaitDelay,
			env:         DefaultEnv(),
		},
	}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// hostPath maps a node path to where it lies here: /sys/... under Paths.Sys, /dev/... under
// Paths.Dev, anything else under Paths.FS. So ReadFile("/sys/...") and IBPorts read the same
// tree, and a recording of either replays the same.
func (l *Live) hostPath(p string) string {
	for _, r := range []struct{ mount, root string }{{"/sys", l.paths.Sys}, {"/dev", l.paths.Dev}} {
		if p == r.mount || strings.HasPrefix(p, r.mount+"/") {
			return filepath.Join(r.root, strings.TrimPrefix(p, r.mount))
		}
	}
	return filepath.Join(l.paths.FS, p)
}

// ReadFile implements Facts through files.Read: it refuses paths with "..", files that are
// not regular (a FIFO, a device: without blocking on them) and files over the size bound, and
// gives up at ctx's deadline on a read that blocks (a hung NFS mount, a wedged sysfs
// attribute), leaving that read behind in a goroutine until the process exits. Symlinks are
// followed (see liveLimits).
func (l *Live) ReadFile(ctx context.Context, path string) ([]byte, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	b, err := files.Read(ctx, l.hostPath(p), liveLimits(l.maxFileSize))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, bare(err))
	}
	return b, nil
}

// DevNode implements Facts. It follows symlinks, as Slurm does: slurmd stat(2)s gres.conf's
// File= paths and takes major and minor from the result for the cgroup device rules
// (gres_device_major in src/common/gres.c), so a symlink to /dev/nvidia0 is as good as
// /dev/nvidia0 and is reported as the character device it points to. Only a symlink that
// resolves nowhere (dangling or looping) is reported as Type "symlink". A path under a
// regular file ("/dev/nvidia0/x") is Missing, like a plain missing path.
func (l *Live) DevNode(ctx context.Context, path string) (DevNode, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return DevNode{}, fmt.Errorf("stat: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return DevNode{}, fmt.Errorf("stat %s: %w", p, err)
	}
	host := l.hostPath(p)
	dn, err := statDevNode(host)
	if err != nil {
		return DevNode{}, fmt.Errorf("stat %s: %w", p, bare(err))
	}
	dn.Path = p
	if err := ctx.Err(); err != nil {
		return DevNode{}, fmt.Errorf("stat %s: %w", p, err)
	}
	return dn, nil
}

// statDevNode describes host without its Path.
func statDevNode(host string) (DevNode, error) {
	fi, err := os.Stat(host)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
			return DevNode{}, err
		}
		// Tell a dangling or looping symlink apart from absence.
		lfi, lerr := os.Lstat(host)
		if lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			return DevNode{Type: "symlink"}, nil
		}
		return DevNode{Missing: true}, nil
	}
	dn := DevNode{Type: modeType(fi.Mode())}
	if dn.Type == "char" || dn.Type == "block" {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			rdev := uint64(st.Rdev) //nolint:unconvert // Rdev's type differs between platforms
			dn.Major, dn.Minor = unix.Major(rdev), unix.Minor(rdev)
		}
	}
	return dn, nil
}

// modeType names a file mode as DevNode.Type does.
func modeType(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "char"
	case m&fs.ModeDevice != 0:
		return "block"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "dir"
	case m.IsRegular():
		return "file"
	}
	return "other"
}

// IBPorts implements Facts by reading Paths.Sys/class/infiniband (see readIBPorts: only state,
// phys_state, rate and link_layer, never the port counters), abandoned whole at ctx's end.
func (l *Live) IBPorts(ctx context.Context) ([]IBPort, error) {
	return listWithin(ctx, "/sys/"+ibClassDir, func() ([]IBPort, error) {
		return readIBPorts(ctx, dirTree(l.paths.Sys))
	})
}

// PCIDevices implements Facts by reading Paths.Sys/bus/pci/devices (see readPCIDevices),
// abandoned whole at ctx's end.
func (l *Live) PCIDevices(ctx context.Context) ([]PCIDevice, error) {
	return listWithin(ctx, "/sys/"+pciDevicesDir, func() ([]PCIDevice, error) {
		return readPCIDevices(ctx, dirTree(l.paths.Sys))
	})
}

// listWithin runs a listing of dir under files.Await: one goroutine for the whole listing,
// abandoned when ctx is done (a sysfs read can block in the kernel, where ctx cannot reach).
func listWithin[T any](ctx context.Context, dir string, list func() (T, error)) (T, error) {
	v, err := files.Await(ctx, list)
	if ae := (*files.AbandonedError)(nil); errors.As(err, &ae) {
		return v, fmt.Errorf("list %s: %w", dir, err)
	}
	return v, err
}

// GPUs implements Facts through the GPUSource given with WithGPUSource, reading every fact;
// without one it reports Init InitNotBuilt. The owner and command of each compute process
// NVML lists are read from FS/proc and FS/etc/passwd (see fillProcessOwners).
func (l *Live) GPUs(ctx context.Context) (GPUInventory, error) {
	return l.GPUsFields(ctx, AllGPUFields)
}

var _ GPUFieldsReader = (*Live)(nil)

// GPUsFields implements GPUFieldsReader: GPUs for the facts in want only.
func (l *Live) GPUsFields(ctx context.Context, want GPUFields) (GPUInventory, error) {
	if err := ctx.Err(); err != nil {
		return GPUInventory{}, fmt.Errorf("read NVML: %w", err)
	}
	if l.gpus == nil {
		return GPUInventory{Init: InitNotBuilt}, nil
	}
	inv, err := l.gpus.GPUs(ctx, want)
	if err != nil {
		return inv, err
	}
	return l.fillProcessOwners(ctx, inv), nil
}

// Exec implements Facts; see runCommand for how the process is run, bounded and killed.
func (l *Live) Exec(ctx context.Context, argv []string) (CmdResult, error) {
	return runCommand(ctx, l.exec, argv)
}

// Hostname implements Facts. It reads FS/proc/sys/kernel/hostname, which is what uname(2)
// reports, so a fixture tree can carry its own; on the real root ("/") without /proc it
// falls back to os.Hostname.
func (l *Live) Hostname(ctx context.Context) (string, error) {
	b, err := l.ReadFile(ctx, "/proc/sys/kernel/hostname")
	if err != nil {
		if l.paths.FS == "/" && errors.Is(err, fs.ErrNotExist) {
			// A container without /proc: uname(2) still answers.
			h, herr := os.Hostname()
			if herr != nil {
				return "", fmt.Errorf("read host name: %w", herr)
			}
			return h, nil
		}
		return "", fmt.Errorf("read host name: %w", err)
	}
	h := strings.TrimSpace(string(b))
	if h == "" {
		return "", fmt.Errorf("read host name: /proc/sys/kernel/hostname is empty")
	}
	return h, nil
}
