package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeScratch(t *testing.T) {
	nvme := node.Mount{Path: "/scratch", FSType: "xfs", Source: "/dev/nvme0n1", Statted: true, SizeMiB: 3662830, AvailMiB: 3600000}
	root := node.Mount{Path: "/", FSType: "ext4", Source: "/dev/sda2", Statted: true, SizeMiB: 450000, AvailMiB: 200000}
	with := func(m node.Mount, f func(*node.Mount)) node.Mount { f(&m); return m }
	tests := []struct {
		name    string
		in      scratchFacts
		want    Status
		summary string // a part of the summary
	}{
		{"nothing configured", scratchFacts{TmpFS: "/tmp", Mount: root, Found: true}, StatusSkip, "neither TmpFS nor"},
		{"size equal to TmpDisk passes", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 3662830, TmpDiskSet: true, Mount: nvme, Found: true}, StatusOK, "at least TmpDisk=3662830"},
		{"one MiB short fails", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 3662831, TmpDiskSet: true, Mount: nvme, Found: true}, StatusFail, "less than TmpDisk=3662831: slurmctld sets the node INVAL (Low TmpDisk)"},
		{"disk not mounted: root is smaller", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 3000000, TmpDiskSet: true, Mount: root, Found: true}, StatusFail, "ext4 on /dev/sda2 mounted at /"},
		{"disk not mounted: root is large enough warns", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 100000, TmpDiskSet: true, Mount: root, Found: true}, StatusWarn, "TmpFS=/scratch is not a mount point"},
		{"default /tmp on root is fine", scratchFacts{TmpFS: "/tmp", TmpDisk: 100000, TmpDiskSet: true, Mount: root, Found: true}, StatusOK, "at least TmpDisk=100000"},
		{"read-only fails", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 1, TmpDiskSet: true, Mount: with(nvme, func(m *node.Mount) { m.ReadOnly = true }), Found: true}, StatusFail, "mounted read-only"},
		{"network filesystem not statted", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 1, TmpDiskSet: true,
			Mount: node.Mount{Path: "/scratch", FSType: "nfs4", Source: "srv:/x", StatError: "not statted: a network or FUSE filesystem"}, Found: true}, StatusError, "size not read"},
		{"TmpFS without TmpDisk", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, Mount: nvme, Found: true}, StatusOK, "sets no TmpDisk"},
		{"no mount holds it", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDiskSet: true, TmpDisk: 1}, StatusError, "no mounted filesystem holds TmpFS=/scratch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeScratch(tc.in)
			assertRemedies(t, got)
			if got.Status != tc.want || !strings.Contains(got.Summary, tc.summary) {
				t.Errorf("judgeScratch = %s %q, want %s containing %q", got.Status, got.Summary, tc.want, tc.summary)
			}
			if got.Status == StatusError && got.Err == nil {
				t.Error("an error result without Err")
			}
		})
	}
}

func TestScratchDiskRun(t *testing.T) {
	mounts := node.Mounts{Mounts: []node.Mount{
		{Path: "/", FSType: "ext4", Source: "/dev/sda2", Statted: true, SizeMiB: 450000},
		{Path: "/scratch", FSType: "xfs", Source: "/dev/nvme0n1", Statted: true, SizeMiB: 3662830},
	}}
	tests := []struct {
		name, slurmConf string
		factErr         error
		want            Status
		summary         string
	}{
		{"TmpFS and TmpDisk from DEFAULT", "TmpFS=/scratch/\nNodeName=DEFAULT TmpDisk=3662830\nNodeName=gpu01 CPUs=8\n", nil, StatusOK, "TmpFS=/scratch is 3662830 MiB (xfs on /dev/nvme0n1)"},
		{"TmpDisk above the disk", "TmpFS=/scratch\nNodeName=gpu01 TmpDisk=4000000\n", nil, StatusFail, "Low TmpDisk"},
		{"default TmpFS", "NodeName=gpu01 TmpDisk=1000\n", nil, StatusOK, "TmpFS=/tmp is 450000 MiB (ext4 on /dev/sda2 mounted at /)"},
		{"no scratch configured", "NodeName=gpu01 CPUs=8\n", nil, StatusSkip, "neither TmpFS"},
		{"node not defined", "NodeName=gpu02 TmpDisk=1\n", nil, StatusError, "node gpu01 is not defined"},
		{"not recorded", "NodeName=gpu01 TmpDisk=1\n", fmt.Errorf("read mounted filesystems: not recorded: %w", fs.ErrNotExist), StatusSkip, scratchNotRecorded},
		{"unreadable", "NodeName=gpu01 TmpDisk=1\n", errors.New("read mounted filesystems: mountinfo:1: bad"), StatusError, "mountinfo:1: bad"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeFacts{files: map[string]string{"/etc/slurm/slurm.conf": tc.slurmConf}, facts: map[string]any{node.MountsFact.Name: mounts},
				factErr: map[string]error{node.MountsFact.Name: tc.factErr}}
			env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeHealth, Node: "gpu01",
				Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
			got := scratchDisk{}.Run(context.Background(), env)
			assertRemedies(t, got)
			if got.Status != tc.want || !strings.Contains(got.Summary, tc.summary) {
				t.Errorf("Run = %s %q, want %s containing %q", got.Status, got.Summary, tc.want, tc.summary)
			}
		})
	}
}

func TestScratchDiskTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	f := &fakeFacts{factErr: map[string]error{node.MountsFact.Name: fmt.Errorf("read mounted filesystems: %w", ctx.Err())}}
	got := scratchDisk{}.Run(ctx, &Env{Facts: f, Config: config.Default(Schema()), Node: "gpu01"})
	if got.Status != StatusFail || got.Summary != scratchTimedOut {
		t.Errorf("Run = %s %q, want fail %q", got.Status, got.Summary, scratchTimedOut)
	}
}
