package checks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/nodecheck/nodecheck/checks/node"
)

// nhcTestProcesses is the process table of NHC's test/test_lbnl_ps.nhc (testdata/nhc/SOURCE).
func nhcTestProcesses(t *testing.T) *node.Processes {
	t.Helper()
	b, err := os.ReadFile("testdata/nhc/test_lbnl_ps.processes.json")
	if err != nil {
		t.Fatal(err)
	}
	var p node.Processes
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestJudgeProcessNHC replays NHC's own check_ps_service and check_ps_daemon tests
// (test/test_lbnl_ps.nhc, the line quoted in each name) on its process table.
func TestJudgeProcessNHC(t *testing.T) {
	procs := nhcTestProcesses(t)
	tests := []struct {
		name, proc, user string
		want             Status
		msg              string
	}{
		{"check_ps_service sshd", "sshd", "", StatusOK, "running as root (pid 1351)"},
		{"check_ps_service httpd", "httpd", "", StatusFail, "not running"},
		{"check_ps_service -u root sshd", "sshd", "root", StatusOK, "running as root (pid 1351)"},
		{"check_ps_service -u root httpd", "httpd", "root", StatusFail, "not running (as root)"},
		{"check_ps_service -u bob sshd", "sshd", "bob", StatusFail, "runs as root, not as bob"},
		{"check_ps_service -u '!root' ntpd", "ntpd", "!root", StatusOK, "running as ntp (pid 1373)"},
		{"check_ps_service -u '!root' sshd", "sshd", "!root", StatusFail, "runs as root, not as !root"},
		{"check_ps_service -d rpc.statd -r nfslock", "rpc.statd", "", StatusOK, "running as rpcuser (pid 1251)"},
		{"check_ps_service -d munged -c munge", "munged", "", StatusFail, "not running"},
		{"check_ps_daemon sshd root", "sshd", "root", StatusOK, "running as root (pid 1351)"},
		{"check_ps_daemon ntpd ntp", "ntpd", "ntp", StatusOK, "running as ntp (pid 1373)"},
		{"check_ps_daemon trqauthd root", "trqauthd", "root", StatusOK, "running as root (pid 1431)"},
		{"check_ps_daemon rsyslogd root", "rsyslogd", "root", StatusOK, "running as root (pid 1448)"},
		{"check_ps_daemon pbs_server", "pbs_server", "", StatusFail, "not running"},
		// Not NHC's: the argv[0] glob is "*NAME", so a longer name does not match a shorter.
		{"a prefix is not the daemon", "rpc", "", StatusFail, "not running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := judgeProcess(procs, tc.proc, tc.user)
			if d.Status != tc.want || d.Message != tc.msg {
				t.Errorf("got %s %q, want %s %q", d.Status, d.Message, tc.want, tc.msg)
			}
			if d.Status == StatusFail && d.Remedy != RemedyAdmin || d.Subject.Service != tc.proc {
				t.Errorf("remedy %q subject %q", d.Remedy, d.Subject.Service)
			}
		})
	}
}

// TestJudgeProcessComm: a daemon that retitled itself (OpenSSH 9.8's "sshd: /usr/sbin/sshd
// -D [listener]") is still found by its kernel name.
func TestJudgeProcessComm(t *testing.T) {
	procs := &node.Processes{Processes: []node.ProcessInfo{{PID: 812, UID: 0, User: "root", Comm: "sshd", Argv0: "sshd:"}}}
	if d := judgeProcess(procs, "sshd", "root"); d.Status != StatusOK {
		t.Errorf("got %s %q", d.Status, d.Message)
	}
	if d := judgeProcess(procs, "sshd", "0"); d.Status != StatusOK {
		t.Errorf("by uid: got %s %q", d.Status, d.Message)
	}
}

func TestJudgeServicesUnits(t *testing.T) {
	units := []unitState{
		{Unit: "slurmd", State: "active"},
		{Unit: "munge", State: "failed"},
		{Unit: "nvidia-persistenced", State: "inactive"},
		{Unit: "x", Err: fmt.Errorf("run: %w", errors.New("killed"))},
	}
	res := judgeServices(&node.Processes{}, nil, units)
	want := []string{"ok slurmd: unit active", "fail munge: unit failed, want active", "fail nvidia-persistenced: unit inactive, want active", "error x: unit: run: killed"}
	for i, d := range res.Details {
		if got := string(d.Status) + " " + d.Device + ": " + d.Message; got != want[i] {
			t.Errorf("%d: got %q, want %q", i, got, want[i])
		}
	}
	if res.Status != StatusFail || res.Summary != "munge: unit failed, want active (+2 more)" {
		t.Errorf("got %s %q", res.Status, res.Summary)
	}
	assertRemedies(t, res)
}

func TestProcessesFactLive(t *testing.T) {
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	p, err := node.Read(t.Context(), live, node.ProcessesFact)
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	for _, pr := range p.Processes {
		if pr.PID == self {
			if pr.UID != os.Getuid() || pr.Argv0 == "" {
				t.Errorf("this test's process: %+v", pr)
			}
			return
		}
	}
	t.Errorf("this test's process %d not listed among %d", self, len(p.Processes))
}
