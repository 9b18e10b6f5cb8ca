package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountinfo(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mountinfo", "debian12-vm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ParseMountinfo(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Mounts) != 19 {
		t.Errorf("%d mounts, want 19", len(ms.Mounts))
	}
	root, ok := ms.Containing("/tmp")
	if diff := cmp.Diff(Mount{Path: "/", FSType: "ext4", Source: "/dev/vda"}, root); diff != "" || !ok {
		t.Errorf("Containing(/tmp) (-want +got):\n%s", diff)
	}
	// A later mount on the same point hides the earlier (devpts twice).
	if m, _ := ms.Containing("/dev/pts/0"); m.Path != "/dev/pts" || m.FSType != "devpts" {
		t.Errorf("Containing(/dev/pts/0) = %+v", m)
	}
	if m, _ := ms.Containing("/sys/fs/cgroupx"); m.Path != "/sys" {
		t.Errorf("Containing(/sys/fs/cgroupx) = %+v, want /sys: a prefix is not a parent", m)
	}
}

func TestParseMountinfoLines(t *testing.T) {
	tests := []struct {
		name, in string
		want     Mount
		wantErr  string
	}{
		// proc(5)'s example line.
		{name: "proc(5) example", in: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
			want: Mount{Path: "/mnt2", FSType: "ext3", Source: "/dev/root"}},
		// Invented: a mount point with a space, read-only in the superblock options.
		{name: "escaped space, superblock ro", in: "40 26 259:1 / /local\\040scratch rw,relatime shared:5 - xfs /dev/nvme0n1 ro,attr2\n",
			want: Mount{Path: "/local scratch", FSType: "xfs", Source: "/dev/nvme0n1", ReadOnly: true}},
		{name: "mount ro", in: "40 26 259:1 / /s ro - xfs /dev/x rw\n", want: Mount{Path: "/s", FSType: "xfs", Source: "/dev/x", ReadOnly: true}},
		{name: "no separator", in: "40 26 259:1 / /s rw xfs /dev/x rw\n", wantErr: "mountinfo:1: "},
		{name: "relative mount point", in: "40 26 259:1 / s rw - xfs /dev/x rw\n", wantErr: "not an absolute path"},
		{name: "empty", in: "\n", wantErr: "no mounts listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseMountinfo(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Mount{tc.want}, ms.Mounts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNetworked(t *testing.T) {
	for _, tc := range []struct {
		t    string
		want bool
	}{{"nfs4", true}, {"fuse.sshfs", true}, {"lustre", true}, {"xfs", false}, {"tmpfs", false}, {"nfsd", false}} {
		if got := networked(tc.t); got != tc.want {
			t.Errorf("networked(%q) = %v, want %v", tc.t, got, tc.want)
		}
	}
}

// TestMountsFactLive reads this machine's mounts: / is statted with a size.
func TestMountsFactLive(t *testing.T) {
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Read(context.Background(), l, MountsFact)
	if err != nil {
		t.Fatal(err)
	}
	root, ok := ms.Containing("/")
	if !ok || !root.Statted || root.SizeMiB == 0 || root.AvailMiB > root.SizeMiB {
		t.Errorf("root mount %+v: want statted with a size", root)
	}
	if err := MountsFact.Check(ms); err != nil {
		t.Error(err)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "mountinfo", "debian12-vm.txt")); err == nil {
		f.Add(string(data))
	}
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n")
	f.Add("1 2 3:4 / /a\\0 rw - x y z\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMountinfo(s)
		if err != nil {
			return
		}
		for _, m := range ms.Mounts {
			if !strings.HasPrefix(m.Path, "/") {
				t.Errorf("mount point %q not absolute", m.Path)
			}
		}
		_, _ = ms.Containing("/tmp")
	})
}
