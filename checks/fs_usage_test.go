package checks

import (
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
)

// nhcTestFilesystems is the df and df -i output NHC's test/test_lbnl_fs.nhc feeds its
// check_fs_* functions (DF_* and DFI_*, sizes in kB of 1024 bytes), as statfs would give it:
// avail is df's Available, free (root's reserve included) is size minus used.
func nhcTestFilesystems(t *testing.T) node.Filesystems {
	ms := nhcTestMounts(t)
	type df struct{ size, used, avail, inodes, iused uint64 }
	dfs := map[string]df{
		"/":                {33027952, 11602608, 19747624, 2097152, 370050},
		"/boot":            {495844, 102276, 367968, 128016, 51},
		"/home":            {36124323646, 23290830034, 10998677612, 1004912640, 211802652},
		"/global/software": {799277056, 249121088, 550155968, 24977408, 9739072},
	}
	var out node.Filesystems
	for _, m := range ms {
		u := node.FSUsage{MountEntry: m}
		if d, ok := dfs[m.Point]; ok {
			u.SizeBytes, u.FreeBytes, u.AvailBytes = d.size*1024, (d.size-d.used)*1024, d.avail*1024
			u.Inodes, u.InodesFree = d.inodes, d.inodes-d.iused
		} else {
			u.Pseudo = node.IsPseudoFS(m.Type)
		}
		out.Mounts = append(out.Mounts, u)
	}
	return out
}

// TestJudgeFSUsageNHC replays NHC's own check_fs_free, check_fs_used, check_fs_ifree and
// check_fs_iused tests (test/test_lbnl_fs.nhc, the line quoted in each name) on the same df
// figures: the same verdicts. NHC's bare numbers are kB; its sizes are powers of 1024.
func TestJudgeFSUsageNHC(t *testing.T) {
	fsys := nhcTestFilesystems(t)
	tests := []struct {
		name  string
		limit string
		want  Status
	}{
		{"check_fs_free / 1G", "/ free 1G", StatusOK},
		{"check_fs_free / 19747624 (exactly)", "/ free 19747624kB", StatusOK},
		{"check_fs_free / 19747625 (one over)", "/ free 19747625kB", StatusFail},
		{"check_fs_free / 1TB", "/ free 1TB", StatusFail},
		{"check_fs_free /home 10%", "/home free 10%", StatusOK},
		{"check_fs_free /home 32% (exactly)", "/home free 32%", StatusOK},
		{"check_fs_free /home 33% (one over)", "/home free 33%", StatusFail},
		{"check_fs_free /home 90%", "/home free 90%", StatusFail},
		{"check_fs_free /proc 1G (pseudo)", "/proc free 1G", StatusSkip},
		{"check_fs_used / 30G", "/ used 30G", StatusOK},
		{"check_fs_used / 11602608 (exactly)", "/ used 11602608kB", StatusFail},
		{"check_fs_used / 11602609 (one over)", "/ used 11602609kB", StatusOK},
		{"check_fs_used / 1GB", "/ used 1GB", StatusFail},
		{"check_fs_used /home 95%", "/home used 95%", StatusOK},
		{"check_fs_used /home 68% (exactly)", "/home used 68%", StatusFail},
		{"check_fs_used /home 69% (one over)", "/home used 69%", StatusOK},
		{"check_fs_used /home 2%", "/home used 2%", StatusFail},
		{"check_fs_ifree / 1M", "/ ifree 1M", StatusOK},
		{"check_fs_ifree / 1727102 (exactly)", "/ ifree 1727102", StatusOK},
		{"check_fs_ifree / 1727103 (one over)", "/ ifree 1727103", StatusFail},
		{"check_fs_ifree / 1T", "/ ifree 1T", StatusFail},
		{"check_fs_ifree /home 10%", "/home ifree 10%", StatusOK},
		{"check_fs_ifree /home 78% (exactly)", "/home ifree 78%", StatusOK},
		{"check_fs_ifree /home 99%", "/home ifree 99%", StatusFail},
		{"check_fs_iused / 1G", "/ iused 1G", StatusOK},
		{"check_fs_iused / 370050 (exactly)", "/ iused 370050", StatusFail},
		{"check_fs_iused / 370051 (one over)", "/ iused 370051", StatusOK},
		{"check_fs_iused / 370k", "/ iused 370k", StatusFail},
		{"check_fs_iused /home 95%", "/home iused 95%", StatusOK},
		{"check_fs_iused /home 22% (exactly)", "/home iused 22%", StatusFail},
		{"check_fs_iused /home 2%", "/home iused 2%", StatusFail},
		{"check_fs_iused /proc 999 (pseudo)", "/proc iused 999", StatusSkip},
		// Not in NHC's tests: a path below a mount point is judged on its filesystem.
		{"a directory on /home", "/home/user free 10%", StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseFSLimit(tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			res := judgeFSUsage(fsys, []fsLimit{l})
			if res.Status != tc.want {
				t.Errorf("%s: got %s %q, want %s", tc.limit, res.Status, res.Summary, tc.want)
			}
			assertRemedies(t, res)
		})
	}
}

func TestJudgeFSUsageMessages(t *testing.T) {
	fsys := nhcTestFilesystems(t)
	fsys.Mounts = append(fsys.Mounts, node.FSUsage{MountEntry: node.MountEntry{Point: "/scratch", Type: "nfs4", Source: "s:/x"}, TimedOut: true, Error: "statfs did not answer within 2s"})
	var ls []fsLimit
	for _, s := range []string{"/home/user used 50%", "/scratch free 1%", "/ free 1G"} {
		l, err := parseFSLimit(s)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	res := judgeFSUsage(fsys, ls)
	want := []string{
		"fail /home/user: used 21.7 TiB (68%) on /home, want at most 50%",
		"fail /scratch: statfs did not answer within 2s (a hung nfs4 server?)",
		"ok /: free 18.8 GiB (62%)",
	}
	for i, d := range res.Details {
		if got := string(d.Status) + " " + d.Device + ": " + d.Message; got != want[i] {
			t.Errorf("detail %d: got %q, want %q", i, got, want[i])
		}
	}
	if res.Summary != want[0][5:]+" (+1 more)" {
		t.Errorf("summary %q", res.Summary)
	}
}

func TestParseFSLimit(t *testing.T) {
	tests := []struct{ in, err string }{
		{"/tmp free 5%", ""},
		{"/tmp used 100%", ""},
		{"/tmp free 10GiB", ""},
		{"/tmp ifree 100k", ""},
		{"/tmp free 101%", "0% to 100%"},
		{"/tmp free -1%", "0% to 100%"},
		{"/tmp free 10", "no unit"},
		{"/tmp free 0", ""},
		{"/tmp fre 5%", "use free, used"},
		{"tmp free 5%", "not absolute"},
		{"/tmp free", "want"},
		{"/tmp ifree 1.5k", "not a count"},
	}
	for _, tc := range tests {
		_, err := parseFSLimit(tc.in)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.err)
		}
	}
	if n, err := ParseSize("1.5GiB"); err != nil || n != 3<<29 {
		t.Errorf("1.5GiB = %d, %v", n, err)
	}
}
