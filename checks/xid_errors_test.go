package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// xidLog reads a kernel log fixture of testdata/xid, without its "#" source line.
func xidLog(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "xid", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// xidEvent is what xid_errors takes from an XID line.
type xidEvent struct {
	Bus     string
	XID     int
	Message string
}

// TestXIDLines: the XID lines of the kernel log as xid_errors reads them, through the history
// package's parser (history.ParseXIDLine, the one XID parser). It takes XIDs 1 to 999: the
// catalog's are below 200, so a number of four digits is not an XID line.
func TestXIDLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		want xidEvent
		ok   bool
	}{
		{"dmesg --ctime, pid unknown (gpud #46)",
			"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
			xidEvent{"0000:cb:00", 13, "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"}, true},
		{"journal prefix, no pid (relion #436)",
			"Feb 15 17:37:45 Gipfeli kernel: [82659.755847] NVRM: Xid (PCI:0000:41:00): 13, Graphics Exception: ESR 0x5067b0=0x9 0x5067b4=0x24 0x5067a8=0x4c1eb72 0x5067ac=0x174",
			xidEvent{"0000:41:00", 13, "Graphics Exception: ESR 0x5067b0=0x9 0x5067b4=0x24 0x5067a8=0x4c1eb72 0x5067ac=0x174"}, true},
		{"fallen off the bus (NVSentinel #155)", "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
			xidEvent{"0000:44:00", 79, "GPU has fallen off the bus"}, true},
		{"row remapping (ml-engineering)", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
			xidEvent{"0000:10:1c", 63, "pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."}, true},
		{"GB200 domain (gpud #1174)", "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			xidEvent{"0019:01:00", 149, "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"}, true},
		{"older driver, no PCI: (invented)", "[ 2001.000001] NVRM: Xid (0000:03:00): 79, GPU has fallen off the bus.",
			xidEvent{"0000:03:00", 79, "GPU has fallen off the bus."}, true},
		{"upper-case bus (invented)", "NVRM: Xid (PCI:0000:9B:00): 79, x", xidEvent{"0000:9b:00", 79, "x"}, true},
		{"trailing CR (invented)", "NVRM: Xid (PCI:0000:9b:00): 94, Contained ECC error\r", xidEvent{"0000:9b:00", 94, "Contained ECC error"}, true},
		{"number only (invented)", "NVRM: Xid (PCI:0000:9b:00): 79", xidEvent{"0000:9b:00", 79, ""}, true},
		{"not an XID", "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", xidEvent{}, false},
		{"no number (invented)", "NVRM: Xid (PCI:0000:9b:00): notanumber, x", xidEvent{}, false},
		{"bad bus (invented)", "NVRM: Xid (PCI:zz:9b:00): 79, x", xidEvent{}, false},
		{"unclosed (invented)", "NVRM: Xid (PCI:0000:9b:00 79, x", xidEvent{}, false},
		{"function in bus (invented)", "NVRM: Xid (PCI:0000:9b:00.0): 79, x", xidEvent{}, false},
		{"huge number (invented)", "NVRM: Xid (PCI:0000:9b:00): 123456, x", xidEvent{}, false},
		{"four digits (invented)", "NVRM: Xid (PCI:0000:9b:00): 1234, x", xidEvent{}, false},
		{"zero (invented)", "NVRM: Xid (PCI:0000:9b:00): 0, x", xidEvent{}, false},
		{"empty", "", xidEvent{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, ok := history.ParseXIDLine(tc.line)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			got := xidEvent{}
			if ok {
				got = xidEvent{x.Bus, x.XID, x.Message}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestXIDFixtures: every XID line of the captures parses, and only those.
func TestXIDFixtures(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "xid"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") || e.Name() == "invented.log" {
			continue
		}
		for _, line := range strings.Split(xidLog(t, e.Name()), "\n") {
			_, ok := history.ParseXIDLine(line)
			if want := strings.Contains(line, "NVRM: Xid ("); ok != want {
				t.Errorf("%s: history.ParseXIDLine(%q) ok = %v, want %v", e.Name(), line, ok, want)
			}
		}
	}
}

const dmesgCmd = "/usr/bin/dmesg --kernel --nopager"

func TestXIDErrors(t *testing.T) {
	// h100NVML's GPU 4 sits at 0000:9b:00.0, GPU 0 at 0000:19:00.0.
	log := func(lines ...string) node.CmdResult { return node.CmdResult{Stdout: strings.Join(lines, "\n") + "\n"} }
	boot := "[    5.123456] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build"           // invented
	fell := "[ 2002.000002] NVRM: Xid (PCI:0000:9b:00): 79, pid=4242, name=python3, GPU has fallen off the bus." // invented
	app := "[ 2001.000001] NVRM: Xid (PCI:0000:19:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
	tests := []struct {
		name        string
		cmd         node.CmdResult
		noDmesg     bool
		execErr     error
		gpus        node.GPUInventory
		cfg         func(*xidErrorsConfig)
		wantStatus  Status
		wantSummary string
	}{
		{"clean log", log(boot), false, nil, h100NVML(), nil, StatusOK, "no NVIDIA XID in the kernel log since boot"},
		{"GPU fell off the bus", log(boot, fell), false, nil, h100NVML(), nil, StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus."},
		{"fail named before warn", log(app, fell, app), false, nil, h100NVML(), nil, StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus. (+1 more)"},
		{"application XID warns, counted", log(app, app, app), false, nil, h100NVML(), nil, StatusWarn,
			"XID 13 on gpu 0 (0000:19:00.0) (3 times): pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruc..."},
		{"capture: XID 45 and its cause (open-gpu-kernel-modules #1150)", log(xidLog(t, "open-gpu-1150.log")), false, nil, h100NVML(), nil, StatusWarn,
			"XID 45 on gpu 0000:dc:00: pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149 (+1 more)"},
		// The catalog's decode sheet: 149 NETIR_INT (IntrInfo 0x000fe406, status 0) is link
		// fatal, RESET_GPU; 145 RLW_RXPIPE status 0x8 is IGNORE; 94 is RESTART_APP.
		{"capture: XID 149 decodes fatal, 145 and 94 warn (gpud #1174)", log(xidLog(t, "gpud-pr1174.log")), false, nil, h100NVML(), nil, StatusFail,
			"XID 149 on gpu 0019:01:00: NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000) (+2 more)"},
		// 63 is IGNORE in both buckets (gpu_memory_errors judges the pending remap from NVML).
		{"capture: row remapping event ignored (ml-engineering)", log(xidLog(t, "ml-engineering.log")), false, nil, node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, nil, StatusOK,
			"no NVIDIA XID in the kernel log since boot"},
		{"ignored XID", log(app), false, nil, h100NVML(), func(c *xidErrorsConfig) { c.IgnoreXIDs = []int{13}; c.WarnXIDs = nil }, StatusOK,
			"no NVIDIA XID in the kernel log since boot"},
		{"XID moved to warn", log(fell), false, nil, h100NVML(), func(c *xidErrorsConfig) { c.FailXIDs = []int{48} }, StatusWarn,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus."},
		{"ignore_xids alone ignores a built-in warn XID", log(app, app), false, nil, h100NVML(), func(c *xidErrorsConfig) { c.IgnoreXIDs = []int{13, 43} }, StatusOK,
			"no NVIDIA XID in the kernel log since boot"},
		{"warn_xids alone moves a built-in fail XID", log(fell), false, nil, h100NVML(), func(c *xidErrorsConfig) { c.WarnXIDs = []int{79} }, StatusWarn,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus."},
		{"fail_xids alone moves a built-in warn XID", log(app), false, nil, h100NVML(), func(c *xidErrorsConfig) { c.FailXIDs = []int{13} }, StatusFail,
			"XID 13 on gpu 0 (0000:19:00.0): pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruc..."},
		{"log cut, nothing seen", node.CmdResult{Stdout: strings.Repeat("x", 64<<10), Truncated: true}, false, nil, h100NVML(), nil, StatusWarn,
			"no NVIDIA XID in what was read; the kernel log was cut at 64 KiB, later XIDs not read"},
		{"log cut, failure seen", node.CmdResult{Stdout: fell + "\n", Truncated: true}, false, nil, h100NVML(), nil, StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus.; the kernel log was cut at 0 KiB, later XIDs not read"},
		{"log cut at the front, failure seen", node.CmdResult{Stdout: fell + "\n", Truncated: true, CutFront: true}, false, nil, h100NVML(), nil, StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): pid=4242, name=python3, GPU has fallen off the bus.; only the kernel log's newest 0 KiB were read (it is longer), earlier XIDs not read"},
		{"dmesg not permitted", node.CmdResult{ExitCode: 1, Stderr: "dmesg: read kernel buffer failed: Operation not permitted\n"}, false, nil, h100NVML(), nil, StatusError,
			"cannot read the kernel log: /usr/bin/dmesg exited 1: dmesg: read kernel buffer failed: Operation not permitted"},
		// Issue 12: a node whose kernel log cannot be read was not looked at: error. A
		// snapshot that did not record dmesg has no kernel log to replay: skip, saying so.
		{"dmesg missing", node.CmdResult{}, true, nil, h100NVML(), nil, StatusError,
			"cannot read the kernel log: exec /usr/bin/dmesg: file does not exist (install util-linux or set checks.xid_errors.dmesg)"},
		{"dmesg not recorded in a snapshot", node.CmdResult{}, false, fmt.Errorf("run /usr/bin/dmesg: %w", node.ErrNotRecorded), h100NVML(), nil, StatusSkip,
			"the snapshot did not record the kernel log (/usr/bin/dmesg): no XIDs to judge in this replay; nodecheck snapshot records it on a node whose dmesg it can run"},
		{"dmesg cannot start", node.CmdResult{}, false, errors.New("fork/exec /usr/bin/dmesg: permission denied"), h100NVML(), nil, StatusError,
			"run /usr/bin/dmesg: fork/exec /usr/bin/dmesg: permission denied"},
		{"no NVIDIA driver", node.CmdResult{}, true, nil, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, nil, StatusSkip,
			"no NVIDIA driver here (NVML ERROR_LIBRARY_NOT_FOUND): no XIDs to read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			if tc.cfg != nil {
				tc.cfg(settings[*xidErrorsConfig](cfg, idXIDErrors))
			}
			f := &execFacts{fakeFacts: &fakeFacts{gpus: tc.gpus}, cmds: map[string]node.CmdResult{}, execErr: tc.execErr}
			if !tc.noDmesg {
				f.cmds[dmesgCmd] = tc.cmd
			}
			got := xidErrors{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", cfg))
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\ndetails: %+v", diff, got.Details)
			}
		})
	}
}

// TestXIDErrorsDetails: one detail per GPU and XID, failures first.
func TestXIDErrorsDetails(t *testing.T) {
	f := &execFacts{fakeFacts: &fakeFacts{gpus: h100NVML()}, cmds: map[string]node.CmdResult{
		dmesgCmd: {Stdout: xidLog(t, "gpud-pr46.log")}}}
	got := xidErrors{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
	// 109 (context switch timeout) is RESET_GPU in the catalog: it fails first.
	want := []Detail{
		{Device: "gpu 6 (0000:cb:00.0)", Status: StatusFail, Observed: "XID 109", Expected: "no XID", Remedy: RemedyResetGPU,
			Message: "XID 109 on gpu 6 (0000:cb:00.0): pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
			Subject: subjectGPU(6, "0000:cb:00.0")},
		{Device: "gpu 6 (0000:cb:00.0)", Status: StatusWarn, Observed: "XID 13", Expected: "no XID",
			Message: "XID 13 on gpu 6 (0000:cb:00.0) (3 times): pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruc...",
			Subject: subjectGPU(6, "0000:cb:00.0")},
	}
	if diff := cmp.Diff(want, got.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
}

// TestXIDErrorsConfig: the XID lists are checked when the config loads.
func TestXIDErrorsConfig(t *testing.T) {
	tests := []struct {
		name, toml, wantErr string
	}{
		{"valid", "[checks.xid_errors]\nfail_xids = [79]\nwarn_xids = [13]\nignore_xids = [109]\n", ""},
		// An admin's list wins over the built-in ones: 13 and 43 are in the
		// built-in warn_xids, 79 in the built-in fail_xids.
		{"ignore_xids alone overrides the built-in warn_xids", "[checks.xid_errors]\nignore_xids = [13, 43]\n", ""},
		{"ignore_xids alone overrides the built-in fail_xids", "[checks.xid_errors]\nignore_xids = [79]\n", ""},
		{"fail_xids alone overrides the built-in warn_xids", "[checks.xid_errors]\nfail_xids = [13, 79]\n", ""},
		{"two lists the admin set share an XID", "[checks.xid_errors]\nwarn_xids = [13, 79]\nignore_xids = [79]\n",
			"nodecheck.toml:3: checks.xid_errors.ignore_xids: 79 is also in warn_xids; put each XID in one list"},
		{"a group's list and the base's list share an XID", "[checks.xid_errors]\nignore_xids = [13]\n[[group]]\nnodes = \"gpu01\"\n[group.checks.xid_errors]\nwarn_xids = [13]\n",
			"nodecheck.toml:5: group[0].checks.xid_errors.ignore_xids: 13 is also in warn_xids; put each XID in one list"},
		{"twice in a list beside the built-in one", "[checks.xid_errors]\nignore_xids = [13, 13]\n", "nodecheck.toml:2: checks.xid_errors.ignore_xids: 13 is listed twice"},
		{"twice", "[checks.xid_errors]\nwarn_xids = [13, 13]\n", "nodecheck.toml:2: checks.xid_errors.warn_xids: 13 is listed twice"},
		{"not an XID", "[checks.xid_errors]\nfail_xids = [0]\n",
			`nodecheck.toml:2: checks.xid_errors.fail_xids: 0 is not an XID; give numbers from 1 to 999, as the kernel log prints them ("NVRM: Xid (PCI:0000:9b:00): 79, ...")`},
		{"relative dmesg", "[checks.xid_errors]\ndmesg = \"dmesg\"\n",
			`nodecheck.toml:2: checks.xid_errors.dmesg = "dmesg": give an absolute path: Slurm starts prologs and health checks without PATH`},
		{"strings", "[checks.xid_errors]\nfail_xids = [\"79\"]\n",
			`nodecheck.toml:2: checks.xid_errors.fail_xids[0]: want a whole number, got the string "79"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("error:\n got %s\nwant %s", got, tc.wantErr)
			}
		})
	}
}

// TestJudgeXIDs feeds the judge literal XID lines.
func TestJudgeXIDs(t *testing.T) {
	verdicts := (&xidErrorsConfig{FailXIDs: defaultFailXIDs(), WarnXIDs: defaultWarnXIDs(), IgnoreXIDs: append(defaultIgnoreXIDs(), 109)}).xidVerdicts()
	gpus := map[string]node.GPU{"0000:9b:00": {Index: 4, PCIBusID: "00000000:9B:00.0"}}
	x := func(bus string, xid int, msg string) history.XIDLine {
		return history.XIDLine{Bus: bus, XID: xid, Message: msg}
	}
	tests := []struct {
		name        string
		xids        []history.XIDLine
		cut         string
		wantStatus  Status
		wantSummary string
	}{
		{"none", nil, "", StatusOK, "no NVIDIA XID in the kernel log since boot"},
		{"fail XID, named by its GPU", []history.XIDLine{x("0000:9b:00", 79, "GPU has fallen off the bus.")}, "", StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): GPU has fallen off the bus."},
		{"warn XID twice, GPU unknown to NVML", []history.XIDLine{x("0000:19:00", 13, "x"), x("0000:19:00", 13, "y")}, "", StatusWarn,
			"XID 13 on gpu 0000:19:00 (2 times): x"},
		{"XID in no list warns", []history.XIDLine{x("0000:19:00", 170, "x")}, "", StatusWarn, "XID 170 on gpu 0000:19:00: x"},
		{"NVLink5 XID without IntrInfo or severity warns", []history.XIDLine{x("0000:19:00", 149, "NETIR")}, "", StatusWarn, "XID 149 on gpu 0000:19:00: NETIR"},
		{"NVLink5 XID fatal and not, one row each", []history.XIDLine{x("0000:9b:00", 149, "NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001)"),
			x("0000:9b:00", 149, "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000)")}, "", StatusFail,
			"XID 149 on gpu 4 (0000:9b:00.0): NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000) (+1 more)"},
		{"XID 154 to None warns", []history.XIDLine{x("0000:9b:00", 154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")}, "", StatusWarn,
			"XID 154 on gpu 4 (0000:9b:00.0): GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"},
		{"XID 154 to reset fails", []history.XIDLine{x("0000:9b:00", 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")}, "", StatusFail,
			"XID 154 on gpu 4 (0000:9b:00.0): GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"},
		{"ignored XID", []history.XIDLine{x("0000:19:00", 109, "CTX SWITCH TIMEOUT")}, "", StatusOK, "no NVIDIA XID in the kernel log since boot"},
		{"built-in ignored XID (SMBPBI test message)", []history.XIDLine{x("0000:19:00", 106, "x")}, "", StatusOK, "no NVIDIA XID in the kernel log since boot"},
		{"log cut", nil, "the kernel log was cut at 64 KiB, later XIDs not read", StatusWarn, "no NVIDIA XID in what was read; the kernel log was cut at 64 KiB, later XIDs not read"},
		{"log cut, fail XID read still fails", []history.XIDLine{x("0000:9b:00", 79, "GPU has fallen off the bus.")}, "only the kernel log's newest 8191 KiB were read (it is longer), earlier XIDs not read", StatusFail,
			"XID 79 on gpu 4 (0000:9b:00.0): GPU has fallen off the bus.; only the kernel log's newest 8191 KiB were read (it is longer), earlier XIDs not read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeXIDs(tc.xids, tc.cut, verdicts, gpus)
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
