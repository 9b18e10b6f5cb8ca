package checks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idScratchDisk = "scratch_disk"

// The ways scratch_disk fails: its rows of the remedy table (Faults).
const (
	faultScratchSmall    fault = "scratch_disk/too_small"
	faultScratchReadOnly fault = "scratch_disk/read_only"
)

// Summaries scratch_disk emits from more than one place.
const (
	scratchNotRecorded = "mounted filesystems not recorded in this snapshot"
	scratchTimedOut    = "timed out reading the mounted filesystems"
)

// defaultTmpFS is slurm.conf's TmpFS default (slurm.conf(5); get_tmp_disk uses "/tmp" when
// TmpFS is unset).
const defaultTmpFS = "/tmp"

// scratchDisk holds the filesystem at slurm.conf's TmpFS against the node's TmpDisk. slurmd
// registers TmpDisk as the size of TmpFS (statvfs f_blocks × f_frsize / 2^20,
// src/slurmd/slurmd/get_mach_stat.c: get_tmp_disk), and slurmctld sets a node that registers
// with less than its configured TmpDisk INVAL, reason "Low TmpDisk" (src/slurmctld/
// node_mgr.c: validate_node_specs). So a local NVMe scratch disk that did not mount (TmpFS
// then lies on the root filesystem) is found here first, with the reason named.
type scratchDisk struct{}

func (scratchDisk) ID() string { return idScratchDisk }

func (scratchDisk) Description() string {
	return "slurm.conf's TmpFS is a mounted, writable filesystem of at least the node's TmpDisk"
}

// scratchDiskConfig is [checks.scratch_disk]. It has no keys of its own: slurm.conf is the
// expectation.
type scratchDiskConfig struct {
	config.CheckCommon
}

// Section runs the check in health and manual modes: a mount table and one statfs per local
// filesystem take milliseconds, but a disk lost at boot is there before any job; add prolog
// to modes to catch a scratch filesystem remounted read-only between jobs.
func (scratchDisk) Section() config.Section {
	return &scratchDiskConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

// scratchFacts is what the judge needs: slurm.conf's TmpFS and the node's TmpDisk, and the
// mount that holds TmpFS.
type scratchFacts struct {
	TmpFS      string // TmpFS, or defaultTmpFS
	TmpFSSet   bool
	TmpDisk    uint64 // MB (MiB), as slurm.conf says
	TmpDiskSet bool
	Mount      node.FSUsage // the mount holding TmpFS, with its statfs
	Found      bool         // a mount holds TmpFS
}

func (scratchDisk) Run(ctx context.Context, env *Env) Result {
	ms, err := node.Read(ctx, env.Facts, node.FilesystemsFact)
	switch {
	case err != nil && ctx.Err() != nil:
		return Result{Status: StatusFail, Summary: scratchTimedOut, Err: err, Remedy: remedyOf(faultTimeout)}
	case errors.Is(err, fs.ErrNotExist):
		return Result{Status: StatusSkip, Summary: scratchNotRecorded}
	case err != nil:
		return Result{Status: StatusError, Summary: err.Error(), Err: err}
	}
	conf, nl, res, ok := nodeConfLine(ctx, env)
	if !ok {
		return res
	}
	f := scratchFacts{TmpFS: defaultTmpFS, TmpDisk: nl.TmpDisk}
	_, f.TmpDiskSet = nl.Set["TmpDisk"]
	if s, ok := conf.Setting("TmpFS"); ok && strings.TrimSpace(s.Value) != "" {
		f.TmpFS, f.TmpFSSet = strings.TrimRight(strings.TrimSpace(s.Value), "/"), true
		if f.TmpFS == "" {
			f.TmpFS = "/"
		}
	}
	f.Mount, f.Found = ms.Containing(f.TmpFS)
	return judgeScratch(f)
}

// judgeScratch is the verdict: skip where slurm.conf asks for no scratch space; fail where
// the filesystem at TmpFS is read-only or smaller than TmpDisk (slurmctld sets the node
// INVAL); warn where an explicit TmpFS is not a mount point of its own (the scratch disk is
// not mounted, and jobs write to the filesystem below it); error where its size is unknown.
func judgeScratch(f scratchFacts) Result {
	if !f.TmpFSSet && !f.TmpDiskSet {
		return Result{Status: StatusSkip, Summary: "slurm.conf sets neither TmpFS nor this node's TmpDisk: no scratch space is configured"}
	}
	if !f.Found {
		err := fmt.Errorf("no mounted filesystem holds TmpFS=%s", f.TmpFS)
		return Result{Status: StatusError, Summary: err.Error(), Err: err}
	}
	m := f.Mount
	size := m.SizeBytes >> 20 // MiB, as slurmd's get_tmp_disk counts TmpDisk
	where := fmt.Sprintf("%s on %s", m.Type, m.Source)
	if m.Point != f.TmpFS {
		where += " mounted at " + m.Point
	}
	d := Detail{Device: f.TmpFS, Status: StatusOK, Observed: fmt.Sprintf("%d MiB %s", size, where)}
	if f.TmpDiskSet {
		d.Expected = fmt.Sprintf("TmpDisk=%d", f.TmpDisk)
	}
	switch {
	case m.ReadOnly():
		failDetail(&d, faultScratchReadOnly)
		d.Message = fmt.Sprintf("TmpFS=%s (%s) is mounted read-only: jobs cannot write their scratch files", f.TmpFS, where)
	case m.Pseudo || m.Error != "":
		d.Status = StatusError
		d.Message = fmt.Sprintf("TmpFS=%s (%s): size not read (%s)", f.TmpFS, where, cmp.Or(m.Error, "a kernel pseudo filesystem"))
	case f.TmpDiskSet && size < f.TmpDisk:
		failDetail(&d, faultScratchSmall)
		d.Message = fmt.Sprintf("TmpFS=%s is %d MiB (%s), less than TmpDisk=%d: slurmctld sets the node INVAL (Low TmpDisk)", f.TmpFS, size, where, f.TmpDisk)
	case f.TmpFSSet && f.TmpFS != defaultTmpFS && m.Point != f.TmpFS:
		d.Status = StatusWarn
		d.Message = fmt.Sprintf("TmpFS=%s is not a mount point: it lies on %s (%d MiB), so the scratch disk is not mounted there and jobs write to that filesystem", f.TmpFS, m.Point, size)
	case f.TmpDiskSet:
		d.Message = fmt.Sprintf("TmpFS=%s is %d MiB (%s), at least TmpDisk=%d", f.TmpFS, size, where, f.TmpDisk)
	default:
		d.Message = fmt.Sprintf("TmpFS=%s is %d MiB (%s); the node sets no TmpDisk", f.TmpFS, size, where)
	}
	res := Result{Status: d.Status, Summary: d.Message, Details: []Detail{d}, Observed: d.Observed, Expected: d.Expected, Remedy: d.Remedy}
	if d.Status == StatusError {
		res.Err = errors.New(d.Message)
	}
	return res
}

// Faults declares the check's own rows of the remedy table, and the shared faults it gives.
func (scratchDisk) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultScratchSmall, "the filesystem at TmpFS is smaller than TmpDisk", RemedyAdmin,
				"the scratch disk did not mount (TmpFS then lies on a smaller filesystem) or TmpDisk is set above its size: mount it, or set TmpDisk from slurmd -C"},
			{faultScratchReadOnly, "the filesystem at TmpFS is mounted read-only", RemedyService,
				"ext4 and xfs remount read-only after I/O errors on the disk: the kernel log names the device to replace"},
		},
	}
}

// Explain is what `nodecheck explain scratch_disk` says.
func (scratchDisk) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The mount table (/proc/mounts) and statfs(2) of each mount, 2 s each (a hung server's mount is reported as not answering), recorded in snapshots as filesystems.json: the reading fs_usage judges too.",
			"slurm.conf: TmpFS (default /tmp) and the node's TmpDisk, in MB as slurmd counts them (f_blocks × f_frsize / 2^20 of TmpFS).",
		},
		Passes: "The filesystem holding TmpFS is writable and at least TmpDisk MiB.",
		Warns:  "TmpFS is set to a path other than /tmp that is not a mount point of its own: the scratch disk meant to be mounted there is not, and jobs write to the filesystem below it.",
		Fails:  "The filesystem at TmpFS is smaller than TmpDisk (slurmd registers its size and slurmctld sets the node INVAL, reason \"Low TmpDisk\"), or it is mounted read-only. Or reading the mounts ran out of time.",
		Skips:  "slurm.conf sets neither TmpFS nor the node's TmpDisk, the mode is not in modes (health and manual by default), or a snapshot replayed has no filesystems.json.",
		Errors: "The mount table or slurm.conf cannot be read, the node is not in slurm.conf, no mount holds TmpFS, or the statfs of the filesystem at TmpFS failed or did not answer.",
		Fix: []string{
			"Too small: findmnt TmpFS shows what is mounted there; a missing NVMe scratch disk (nvme list, the kernel log) is mounted again or replaced, then slurmd restarted. Where TmpDisk is set above the disk, set it from slurmd -C and run scontrol reconfigure.",
			"Read-only: the kernel log (dmesg) says why the filesystem was remounted read-only; fsck it or replace the disk.",
		},
	}
}
