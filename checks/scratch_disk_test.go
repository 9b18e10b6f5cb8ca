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
	const mib = 1 << 20
	mount := func(point, typ, src string, sizeMiB uint64, opts ...string) node.FSUsage {
		return node.FSUsage{MountEntry: node.MountEntry{Point: point, Type: typ, Source: src, Options: append([]string{"rw"}, opts...)}, SizeBytes: sizeMiB * mib}
	}
	nvme := mount("/scratch", "xfs", "/dev/nvme0n1", 3662830)
	root := mount("/", "ext4", "/dev/sda2", 450000)
	readOnly := nvme
	readOnly.Options = []string{"ro"}
	hung := mount("/scratch", "nfs4", "srv:/x", 0)
	hung.TimedOut, hung.Error = true, "statfs did not answer within 2s"
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
		{"read-only fails", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 1, TmpDiskSet: true, Mount: readOnly, Found: true}, StatusFail, "mounted read-only"},
		{"a statfs that did not answer", scratchFacts{TmpFS: "/scratch", TmpFSSet: true, TmpDisk: 1, TmpDiskSet: true,
			Mount: hung, Found: true}, StatusError, "size not read (statfs did not answer within 2s)"},
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
	mounts := node.Filesystems{Mounts: []node.FSUsage{
		{MountEntry: node.MountEntry{Point: "/", Type: "ext4", Source: "/dev/sda2", Options: []string{"rw"}}, SizeBytes: 450000 << 20},
		{MountEntry: node.MountEntry{Point: "/scratch", Type: "xfs", Source: "/dev/nvme0n1", Options: []string{"rw"}}, SizeBytes: 3662830 << 20},
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
			f := &fakeFacts{files: map[string]string{"/etc/slurm/slurm.conf": tc.slurmConf}, facts: map[string]any{node.FilesystemsFact.Name: mounts},
				factErr: map[string]error{node.FilesystemsFact.Name: tc.factErr}}
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
	f := &fakeFacts{factErr: map[string]error{node.FilesystemsFact.Name: fmt.Errorf("read mounted filesystems: %w", ctx.Err())}}
	got := scratchDisk{}.Run(ctx, &Env{Facts: f, Config: config.Default(Schema()), Node: "gpu01"})
	if got.Status != StatusFail || got.Summary != scratchTimedOut {
		t.Errorf("Run = %s %q, want fail %q", got.Status, got.Summary, scratchTimedOut)
	}
}
