package checks

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func runGresDevices(t *testing.T, gres string, devs map[string]node.DevNode, nodeName string) Result {
	t.Helper()
	files := map[string]string{"/etc/slurm/slurm.conf": "GresTypes=gpu\nNodeName=gpu[01-04] Gres=gpu:4\n"}
	if gres != "" {
		files["/etc/slurm/gres.conf"] = gres
	}
	f := &fakeFacts{files: files, devs: devs}
	env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeProlog, Node: nodeName,
		Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
	return gresDevices{}.Run(context.Background(), env)
}

func TestGresDevices(t *testing.T) {
	wrongMinor := nvidiaDevs(4)
	wrongMinor["/dev/nvidia3"] = charDev(195, 4)
	regular := nvidiaDevs(4)
	regular["/dev/nvidia2"] = node.DevNode{Type: "file"}
	noCtl := nvidiaDevs(4)
	delete(noCtl, "/dev/nvidiactl")
	missingTwo := nvidiaDevs(4)
	delete(missingTwo, "/dev/nvidia1")
	delete(missingTwo, "/dev/nvidia3")
	gapped := nvidiaDevs(4)
	delete(gapped, "/dev/nvidia1")

	const four = "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-3]\n"
	tests := []struct {
		name        string
		gres        string
		devs        map[string]node.DevNode
		node        string
		wantStatus  Status
		wantSummary string
	}{
		{"healthy", four, nvidiaDevs(4), "gpu02", StatusOK,
			"5 device files from gres.conf present as character devices (/dev/nvidia[0-3],/dev/nvidiactl)"},
		{"missing device", four, missingTwo, "gpu01", StatusFail, "/dev/nvidia1 missing (/etc/slurm/gres.conf:1) (+1 more)"},
		{"wrong minor", four, wrongMinor, "gpu01", StatusFail, "/dev/nvidia3 is char 195:4, want 195:3 (/etc/slurm/gres.conf:1)"},
		{"regular file", four, regular, "gpu01", StatusFail, "/dev/nvidia2 is a regular file, not a character device (/etc/slurm/gres.conf:1)"},
		{"nvidiactl missing", four, noCtl, "gpu01", StatusFail, "/dev/nvidiactl missing (needed by every NVIDIA GPU)"},
		{"gap in the range is what gres.conf says", "NodeName=gpu01 Name=gpu File=/dev/nvidia[0,2-3]\n", gapped, "gpu01", StatusOK,
			"4 device files from gres.conf present as character devices (/dev/nvidia[0,2-3],/dev/nvidiactl)"},
		{"other node's lines are not judged", "NodeName=gpu01 Name=gpu File=/dev/nvidia[0-3]\n", map[string]node.DevNode{}, "gpu02", StatusSkip,
			"no gres.conf entry with File= for node gpu02 in /etc/slurm/gres.conf"},
		{"autodetect", "AutoDetect=nvml\nName=gpu Type=h100 Count=8\n", map[string]node.DevNode{}, "gpu01", StatusSkip,
			"gres.conf uses AutoDetect=nvml for gpu01: no File= entries to check"},
		{"no gres.conf", "", nil, "gpu01", StatusSkip, "no gres.conf at /etc/slurm/gres.conf"},
		// A Name=nvme scratch disk GRES (invented line): slurmd takes block devices for it.
		{"nvme disk gres as block devices", "NodeName=gpu01 Name=nvme File=/dev/nvme[0-1]n1\n",
			map[string]node.DevNode{"/dev/nvme0n1": {Type: "block", Major: 259, Minor: 0}, "/dev/nvme1n1": {Type: "block", Major: 259, Minor: 1}}, "gpu01", StatusOK,
			"2 device files from gres.conf present as character or block devices (/dev/nvme0n1,/dev/nvme1n1)"},
		{"nvme disk gres with a disk missing", "NodeName=gpu01 Name=nvme File=/dev/nvme[0-1]n1\n",
			map[string]node.DevNode{"/dev/nvme0n1": {Type: "block", Major: 259, Minor: 0}}, "gpu01", StatusFail, "/dev/nvme1n1 missing (/etc/slurm/gres.conf:1)"},
		{"a gpu line naming a block device fails", "NodeName=gpu01 Name=gpu File=/dev/sda\n",
			map[string]node.DevNode{"/dev/sda": {Type: "block", Major: 8, Minor: 0}}, "gpu01", StatusFail, "/dev/sda is a block device, not a character device (/etc/slurm/gres.conf:1)"},
		{"unreadable line for this node is an error, not a skip", "NodeName=gpu[01-04] Name=gpu File=/dev/nvidia[0-3\n", nvidiaDevs(4), "gpu01", StatusError,
			`gres.conf: gres.conf:1: File=/dev/nvidia[0-3: "[0-3": '[' is never closed; add the missing ']'; Slurm refuses the line (fatal: can't parse File=)`},
		{"unreadable line for another node is not ours", "NodeName=gpu09 Name=gpu File=/dev/nvidia[0-3\nNodeName=gpu01 Name=gpu File=/dev/nvidia[0-3]\n", nvidiaDevs(4), "gpu01", StatusOK,
			"5 device files from gres.conf present as character devices (/dev/nvidia[0-3],/dev/nvidiactl)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runGresDevices(t, tc.gres, tc.devs, tc.node)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
}

func TestNvidiaMinorFromName(t *testing.T) {
	tests := []struct {
		file string
		want int
	}{
		{"/dev/nvidia0", 0}, {"/dev/nvidia7", 7}, {"/dev/nvidia15", 15}, {"/dev/nvidiactl", 255},
		{"/dev/nvidia-uvm", -1}, {"/dev/nvidia-caps/nvidia-cap21", -1}, {"/dev/nvidia07", -1},
		{"/dev/tty0", -1}, {"/tmp/dev/nvidia0", -1}, {"/dev/nvidia", -1}, {"/dev/nvidia255", -1},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			if got := nvidiaMinorFromName(tc.file); got != tc.want {
				t.Errorf("nvidiaMinorFromName(%q) = %d, want %d", tc.file, got, tc.want)
			}
		})
	}
}

// TestJudgeGresDevices feeds the judge literal stat answers.
func TestJudgeGresDevices(t *testing.T) {
	wants := []gresWant{
		{file: "/dev/nvidia0", where: "gres.conf:2", minor: 0},
		{file: "/dev/nvidiactl", where: "needed by every NVIDIA GPU", minor: 255},
	}
	ok := []devAnswer{{dn: charDev(195, 0)}, {dn: charDev(195, 255)}}
	tests := []struct {
		name        string
		found       []devAnswer
		confErrs    []Detail
		wantStatus  Status
		wantSummary string
	}{
		{"present", ok, nil, StatusOK, "2 device files from gres.conf present as character devices (/dev/nvidia0,/dev/nvidiactl)"},
		{"missing", []devAnswer{{dn: node.DevNode{Path: "/dev/nvidia0", Missing: true}}, ok[1]}, nil, StatusFail, "/dev/nvidia0 missing (gres.conf:2)"},
		{"wrong minor", []devAnswer{{dn: charDev(195, 3)}, ok[1]}, nil, StatusFail, "/dev/nvidia0 is char 195:3, want 195:0 (gres.conf:2)"},
		{"regular file", []devAnswer{{dn: node.DevNode{Type: "file"}}, ok[1]}, nil, StatusFail, "/dev/nvidia0 is a regular file, not a character device (gres.conf:2)"},
		{"stat fails", []devAnswer{{err: errors.New("stat /dev/nvidia0: permission denied")}, ok[1]}, nil, StatusError,
			"/dev/nvidia0 cannot stat: stat /dev/nvidia0: permission denied (gres.conf:2)"},
		{"a line Slurm refuses", ok, []Detail{{Device: "gres.conf:5", Status: StatusError, Message: "File=/dev/nvidia[0-: unclosed bracket"}}, StatusError,
			"gres.conf:5 File=/dev/nvidia[0-: unclosed bracket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeGresDevices(wants, tc.found, tc.confErrs)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
