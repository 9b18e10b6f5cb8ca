package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nodecheck/nodecheck/config/files"
)

// GPUAccess is what the device cgroup of this process lets it open among the node's NVIDIA
// GPU device nodes (DeviceAccessFact), and which cgroup that is. A prolog that Slurm runs
// inside the job (PrologFlags=RunInJob) is in the job's cgroup, so what it may open is what
// the job may open.
type GPUAccess struct {
	// CgroupVersion is 2 where /sys/fs/cgroup/cgroup.controllers exists (the unified
	// hierarchy), 1 where /sys/fs/cgroup/devices does (the v1 devices controller), 0 where
	// neither.
	CgroupVersion int `json:"cgroup_version"`
	// Cgroup is this process's cgroup that rules its device access, from /proc/self/cgroup:
	// the devices controller's path where a v1 devices hierarchy is listed, else the unified
	// path (the "0::" line); "" where the file lists neither.
	Cgroup string `json:"cgroup"`
	// GPUs is each /dev/nvidiaN that is a character device of major 195 and a minor below
	// 255 (nvidiactl), in minor order.
	GPUs []GPUDeviceAccess `json:"gpus"`
}

// GPUDeviceAccess is one GPU device node and whether this process may open it.
type GPUDeviceAccess struct {
	Path  string `json:"path"`  // "/dev/nvidia3"
	Minor uint32 `json:"minor"` // of the device node (its stat, not its name)
	// Allowed is access(2) R_OK|W_OK succeeding: the kernel asks the device cgroup (v1's
	// devices.allow/deny rules or v2's eBPF program) in inode_permission, so the answer is
	// the device cgroup's without opening the device (which would wake the GPU).
	Allowed bool `json:"allowed"`
	// Error is access(2)'s errno name where it failed for another reason than EPERM (the
	// device cgroup's refusal): "EACCES", "ENOENT"; "" otherwise.
	Error string `json:"error,omitempty"`
}

// nvidiaMajor is the NVIDIA driver's character major; nvidiaCtlMinor is /dev/nvidiactl's
// minor, above every GPU's.
const (
	nvidiaMajor    = 195
	nvidiaCtlMinor = 255
	// maxDevEntries bounds the /dev listing: a node has a few hundred device nodes.
	maxDevEntries = 1 << 16
	// maxProcCgroup bounds /proc/self/cgroup: a line per v1 hierarchy, a dozen at most.
	maxProcCgroup = 64 << 10
)

// gpuDevName matches the name of a GPU device node: nvidia0, nvidia17 (not nvidiactl,
// nvidia-uvm, nvidia-caps).
var gpuDevName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^nvidia[0-9]+$`) })

// DeviceAccessFact is which NVIDIA GPU device nodes this process may open, and its cgroup:
// a listing of /dev, a stat and an access(2) per GPU device node, and two small files.
var DeviceAccessFact = &Fact[GPUAccess]{
	Name: "device_access",
	What: "the GPU device nodes this process may open",
	Live: func(ctx context.Context, l *Live) (GPUAccess, error) {
		var out GPUAccess
		switch {
		case exists(l.hostPath("/sys/fs/cgroup/cgroup.controllers")):
			out.CgroupVersion = 2
		case exists(l.hostPath("/sys/fs/cgroup/devices")):
			out.CgroupVersion = 1
		}
		b, err := files.Read(ctx, l.hostPath("/proc/self/cgroup"), liveLimits(maxProcCgroup))
		if err != nil {
			return GPUAccess{}, fmt.Errorf("read /proc/self/cgroup: %w", bare(err))
		}
		out.Cgroup = DeviceCgroup(string(b))
		gpus, err := probeGPUs(ctx, l.hostPath("/dev"))
		if err != nil {
			return GPUAccess{}, err
		}
		out.GPUs = gpus
		return out, nil
	},
	Check: func(a GPUAccess) error {
		if a.CgroupVersion < 0 || a.CgroupVersion > 2 {
			return fmt.Errorf("cgroup_version %d is not 0, 1 or 2", a.CgroupVersion)
		}
		for i, g := range a.GPUs {
			if !strings.HasPrefix(g.Path, "/dev/") {
				return fmt.Errorf("gpus[%d].path %q is not under /dev", i, g.Path)
			}
			if g.Allowed && g.Error != "" {
				return fmt.Errorf("gpus[%d] (%s): allowed, with error %q: an access(2) that failed allowed nothing", i, g.Path, g.Error)
			}
			if g.Minor >= nvidiaCtlMinor {
				return fmt.Errorf("gpus[%d] (%s): minor %d is no GPU's (below %d)", i, g.Path, g.Minor, nvidiaCtlMinor)
			}
		}
		return nil
	},
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// probeGPUs lists dev for GPU device nodes and asks access(2) of each.
func probeGPUs(ctx context.Context, dev string) ([]GPUDeviceAccess, error) {
	d, err := os.Open(dev)
	if err != nil {
		return nil, fmt.Errorf("list /dev: %w", bare(err))
	}
	defer d.Close()
	names, err := d.Readdirnames(maxDevEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("list /dev: %w", bare(err))
	}
	var out []GPUDeviceAccess
	for _, name := range names {
		if !gpuDevName().MatchString(name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe /dev/%s: %w", name, err)
		}
		host := dev + "/" + name
		dn, err := statDevNode(host)
		if err != nil || dn.Type != "char" || dn.Major != nvidiaMajor || dn.Minor >= nvidiaCtlMinor {
			continue // not a GPU's device node (a fixture's plain file, a stray name)
		}
		g := GPUDeviceAccess{Path: "/dev/" + name, Minor: dn.Minor}
		switch err := unix.Access(host, unix.R_OK|unix.W_OK); {
		case err == nil:
			g.Allowed = true
		case errors.Is(err, unix.EPERM):
		default:
			g.Error = errnoName(err)
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GPUDeviceAccess) int { return int(a.Minor) - int(b.Minor) })
	return out, nil
}

func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

// DeviceCgroup is the cgroup that rules device access in a /proc/PID/cgroup text: the path
// of the v1 hierarchy whose controllers include "devices" ("7:devices:/slurm/uid_1000/
// job_42/step_extern"), else the unified one ("0::/system.slice/slurmstepd.scope/job_42/
// step_extern/slurm"); "" where neither is listed.
func DeviceCgroup(procCgroup string) string {
	unified := ""
	for _, line := range strings.Split(procCgroup, "\n") {
		_, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if ctrls == "" {
			unified = path
			continue
		}
		if slices.Contains(strings.Split(ctrls, ","), "devices") {
			return path
		}
	}
	return unified
}
