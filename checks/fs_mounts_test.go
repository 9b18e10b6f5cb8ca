package checks

import (
	"os"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
)

// nhcTestMounts is the mount table of NHC's test/test_lbnl_fs.nhc (testdata/nhc/SOURCE).
func nhcTestMounts(t *testing.T) []node.MountEntry {
	t.Helper()
	f, err := os.Open("testdata/nhc/test_lbnl_fs.mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := node.ParseMounts(f)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestJudgeFSMountsNHC replays NHC's own check_fs_mount tests (test/test_lbnl_fs.nhc, the
// line quoted in each name) on the same mount table: the same verdicts.
func TestJudgeFSMountsNHC(t *testing.T) {
	ms := nhcTestMounts(t)
	tests := []struct {
		name   string
		spec   string
		status Status
		msg    string
		remedy Remedy
	}{
		{"check_fs_mount -f /", "/ any", StatusOK, "/: mounted rw (rootfs from rootfs)", ""},
		{"check_fs_mount -f /FAKE/filesystem/NAME", "/FAKE/filesystem/NAME any", StatusFail, "/FAKE/filesystem/NAME: not mounted", RemedyAdmin},
		{"check_fs_mount -t proc -f /proc", "/proc any proc", StatusOK, "/proc: mounted rw (proc from proc)", ""},
		{"check_fs_mount -s proc -f /proc", "/proc any * proc", StatusOK, "/proc: mounted rw (proc from proc)", ""},
		{"check_fs_mount -t tmpfs -f /proc", "/proc any tmpfs", StatusFail, "/proc: type proc, want tmpfs", RemedyAdmin},
		{"check_fs_mount -s canadia -f /proc", "/proc any * canadia", StatusFail, "/proc: mounted from proc, want canadia", RemedyAdmin},
		{"check_fs_mount -s '/bluearc[0-9]/' -t 'nfs*' -f /home", "/home any nfs* /bluearc[0-9]/", StatusOK, "/home: mounted rw (nfs from bluearc0:/home)", ""},
		{"check_fs_mount -s '/bluearc[0-9]/' -t 'nfs*' -f /global/software", "/global/software any nfs* /bluearc[0-9]/", StatusOK, "/global/software: mounted ro (nfs from bluearc0:/software)", ""},
		{"check_fs_mount_ro -f /global/software", "/global/software ro", StatusOK, "/global/software: mounted ro (nfs from bluearc0:/software)", ""},
		{"check_fs_mount_ro -s bluearc0:/software -t nfs /global/software", "/global/software ro nfs bluearc0:/software", StatusOK, "/global/software: mounted ro (nfs from bluearc0:/software)", ""},
		{"check_fs_mount_ro -s master:/global/software -t nfs -f /global/software", "/global/software ro nfs master:/global/software", StatusFail, "/global/software: mounted from bluearc0:/software, want master:/global/software", RemedyAdmin},
		{"check_fs_mount_ro -s bluearc0:/software -t nfs4 -f /global/software", "/global/software ro nfs4 bluearc0:/software", StatusFail, "/global/software: type nfs, want nfs4", RemedyAdmin},
		{"check_fs_mount_rw -f /boot", "/boot rw", StatusOK, "/boot: mounted rw (ext4 from /dev/sda1)", ""},
		{"check_fs_mount_rw -s /dev/sda1 -t ext4 /boot", "/boot rw ext4 /dev/sda1", StatusOK, "/boot: mounted rw (ext4 from /dev/sda1)", ""},
		{"check_fs_mount_rw -s /dev/sdb3 -t ext4 -f /boot", "/boot rw ext4 /dev/sdb3", StatusFail, "/boot: mounted from /dev/sda1, want /dev/sdb3", RemedyAdmin},
		{"check_fs_mount_rw -s /dev/sda1 -t btrfs -f /boot", "/boot rw btrfs /dev/sda1", StatusFail, "/boot: type ext4, want btrfs", RemedyAdmin},
		// Not in NHC's tests: the access, each way.
		{"rw wanted, ro mounted", "/global/software rw", StatusFail, "/global/software: mounted read-only, want read-write", RemedyReboot},
		{"ro wanted, rw mounted", "/boot ro", StatusFail, "/boot: mounted read-write, want read-only", RemedyAdmin},
		{"a glob that does not match", "/home any nfs4*", StatusFail, "/home: type nfs, want nfs4*", RemedyAdmin},
		{"a path under a mount is no mount", "/home/user any", StatusFail, "/home/user: not mounted", RemedyAdmin},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := parseMountSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			res := judgeFSMounts(node.VisibleMounts(ms), []mountSpec{spec})
			d := res.Details[0]
			if d.Status != tc.status || d.Device+": "+d.Message != tc.msg || d.Remedy != tc.remedy || res.Status != tc.status {
				t.Errorf("got %s %q remedy %q, want %s %q remedy %q", d.Status, d.Device+": "+d.Message, d.Remedy, tc.status, tc.msg, tc.remedy)
			}
			if d.Subject.Mount != spec.Point {
				t.Errorf("subject %q, want the mount point", d.Subject.Mount)
			}
			assertRemedies(t, res)
		})
	}
}

func TestParseMountSpec(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"/", "/ rw", ""},
		{"/tmp ro", "/tmp ro", ""},
		{"/home any nfs4 server:/export", "/home any nfs4 server:/export", ""},
		{"/home rw * server:/export", "/home rw * server:/export", ""},
		{"tmp", "", "not an absolute path"},
		{"/tmp rx", "", `access "rx"`},
		{"/a rw t s extra", "", "want"},
		{"", "", "want"},
		{"/a rw /[/", "", "pattern"},
	}
	for _, tc := range tests {
		m, err := parseMountSpec(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || m.String() != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, m.String(), err, tc.want)
		}
	}
}

func TestFSMountsSummary(t *testing.T) {
	ms := nhcTestMounts(t)
	var want []mountSpec
	for _, s := range []string{"/ rw", "/boot rw", "/global/software rw", "/scratch"} {
		m, _ := parseMountSpec(s)
		want = append(want, m)
	}
	res := judgeFSMounts(ms, want)
	if res.Status != StatusFail || res.Summary != "/global/software: mounted read-only, want read-write (+1 more)" || res.Subject.Mount != "/global/software" {
		t.Errorf("got %s %q %q", res.Status, res.Summary, res.Subject.Mount)
	}
	res = judgeFSMounts(ms, want[:2])
	if res.Status != StatusOK || res.Summary != "2 filesystems mounted as listed" {
		t.Errorf("got %s %q", res.Status, res.Summary)
	}
}
