package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseMounts(t *testing.T) {
	// The first three lines are the root, proc and NFS lines of prometheus/procfs's fixture
	// fixtures/proc/26231/mountinfo (testdata/fixtures.ttar at 3c943fd) as /proc/mounts
	// writes them; the last is invented to show the kernel's octal escapes.
	in := "/dev/sda1 / ext4 rw,relatime,errors=remount-ro,data=ordered 0 0\n" +
		"proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n" +
		"192.168.1.1:/srv/test /mnt/nfs/test nfs4 rw,vers=4.0,hard,proto=tcp 0 0\n" +
		"\n" +
		"/dev/sdb1 /mnt/my\\040disk\\134x ext4 ro 0 0\n"
	got, err := ParseMounts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []MountEntry{
		{Source: "/dev/sda1", Point: "/", Type: "ext4", Options: []string{"rw", "relatime", "errors=remount-ro", "data=ordered"}},
		{Source: "proc", Point: "/proc", Type: "proc", Options: []string{"rw", "nosuid", "nodev", "noexec", "relatime"}},
		{Source: "192.168.1.1:/srv/test", Point: "/mnt/nfs/test", Type: "nfs4", Options: []string{"rw", "vers=4.0", "hard", "proto=tcp"}},
		{Source: "/dev/sdb1", Point: `/mnt/my disk\x`, Type: "ext4", Options: []string{"ro"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[0].ReadOnly() || !got[3].ReadOnly() {
		t.Errorf("ReadOnly wrong")
	}
	if _, err := ParseMounts(strings.NewReader("a b c\n")); err == nil || !strings.Contains(err.Error(), "mounts:1: 3 fields") {
		t.Errorf("short line: got %v", err)
	}
	if m, ok := MountOf(got, "/mnt/nfs/test/x/y"); !ok || m.Point != "/mnt/nfs/test" {
		t.Errorf("MountOf: %v %v", m, ok)
	}
	if m, ok := MountOf(got, "/mnt/nfs/testx"); !ok || m.Point != "/" {
		t.Errorf("MountOf a sibling: %v %v", m, ok)
	}
}

func TestVisibleMounts(t *testing.T) {
	ms := []MountEntry{{Point: "/", Source: "a"}, {Point: "/home", Source: "old"}, {Point: "/tmp"}, {Point: "/home", Source: "new"}}
	got := VisibleMounts(ms)
	if len(got) != 3 || got[2].Source != "new" {
		t.Errorf("got %+v", got)
	}
}

// TestFilesystemsFactLive reads this machine's mounts and their usage.
func TestFilesystemsFactLive(t *testing.T) {
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fsys, err := Read(ctx, l, FilesystemsFact)
	if err != nil {
		t.Fatal(err)
	}
	var root, proc bool
	for _, u := range fsys.Mounts {
		if u.Point == "/" {
			root = u.SizeBytes > 0 && u.Error == ""
		}
		if u.Point == "/proc" {
			proc = u.Pseudo && u.SizeBytes == 0
		}
	}
	if !root || !proc {
		t.Errorf("root with a size %v, proc as pseudo %v: %+v", root, proc, fsys.Mounts)
	}
}

func FuzzParseMounts(f *testing.F) {
	f.Add("/dev/sda1 / ext4 rw,relatime 0 0\n")
	f.Add("a /x\\040y t ro 0 0\n")
	f.Add("a b\n")
	f.Add("a /\\0 t ro\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMounts(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range ms {
			_ = m.ReadOnly()
			_, _ = MountOf(ms, m.Point)
		}
	})
}
