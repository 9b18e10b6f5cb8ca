package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// mceFixture reads a fixture of testdata/mce, without its "#" source line.
func mceFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mce", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

func TestScanMCE(t *testing.T) {
	tests := []struct {
		file                     string
		records, uc, logged, cmc int
		first                    mceRecord
	}{
		{"mcelog-70.log", 1, 1, 1, 0, mceRecord{CPU: 0, Bank: 4, Status: 0xa600000000020408}},
		{"home-assistant-2989.log", 4, 0, 0, 0, mceRecord{CPU: 2, Bank: 6, Status: 0xcc59dec000041152}},
		{"radiasoft-134.log", 1, 0, 1, 0, mceRecord{CPU: 1, Bank: 11, Status: 0x8c00004f000800c2}},
		{"servethehome.log", 1, 1, 0, 0, mceRecord{CPU: 2, Bank: 0, Status: 0xf200004000070005}},
		{"serverfault.log", 1, 0, 0, 0, mceRecord{CPU: 0, Bank: 5, Status: 0x8c00004000010090}},
		{"centosfaq-amd.log", 1, 0, 0, 0, mceRecord{CPU: 2, Bank: 2, Status: 0x98444000010c0176}},
		{"trick77.log", 0, 0, 4, 1, mceRecord{}},
		{"suse-000021436.log", 0, 0, 0, 4, mceRecord{}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			k := scanMCE(mceFixture(t, tc.file))
			uc := 0
			for _, r := range k.Records {
				if r.uncorrected() {
					uc++
				}
			}
			if len(k.Records) != tc.records || uc != tc.uc || k.Logged != tc.logged || k.Storms != tc.cmc {
				t.Errorf("got %d records (%d uncorrected), %d logged, %d storms; want %d (%d), %d, %d",
					len(k.Records), uc, k.Logged, k.Storms, tc.records, tc.uc, tc.logged, tc.cmc)
			}
			if tc.records > 0 && k.Records[0] != tc.first {
				t.Errorf("first record %+v, want %+v", k.Records[0], tc.first)
			}
		})
	}
	// Lines that only look like records: no VAL bit, a status too long, another subsystem.
	for _, l := range []string{
		"mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: 2600000000020408",
		"mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a6000000000204080",
		"mce: CPU0: Thermal monitoring enabled (TM1)",
		"mce: [Hardware Error]: Machine check: Processor context corrupt",
	} {
		if k := scanMCE(l + "\n"); len(k.Records) != 0 {
			t.Errorf("%q: read as %+v", l, k.Records)
		}
	}
}

func TestMCEWords(t *testing.T) {
	tests := []struct {
		status uint64
		want   string
	}{
		{0xf200004000070005, "uncorrected, processor context corrupt, earlier errors lost (overflow)"},
		{0xa600000000020408, "uncorrected, processor context corrupt"},
		{0x8c00004f000800c2, "corrected"},
		{0x9c2040000000011b, "corrected"},
		{0x8000100000000000, "deferred"},
		// SRAR data-cache error of https://github.com/andikleen/mcelog/issues/74: uncorrected,
		// the context intact (no PCC), so the kernel can kill the consumer and go on.
		{0xbd80000000100134, "uncorrected"},
	}
	for _, tc := range tests {
		if got := (mceRecord{Status: tc.status}).words(); got != tc.want {
			t.Errorf("%016x: %q, want %q", tc.status, got, tc.want)
		}
	}
}

func TestParseMcelogClient(t *testing.T) {
	tests := []struct {
		name, stdout, stderr string
		want                 mcelogReport
		err                  string
	}{
		{"three locations", mceFixture(t, "mcelog-16.client"), "", mcelogReport{DIMMs: []mcelogDIMM{
			{"SOCKET 1 CHANNEL any DIMM any", 2654, 0}, {"SOCKET 1 CHANNEL 3 DIMM any", 1003, 0}, {"SOCKET 1 CHANNEL 3 DIMM 0", 1651, 0}}}, ""},
		{"no errors", mceFixture(t, "mcelog-91.client"), "", mcelogReport{}, ""},
		{"uncorrected", mceFixture(t, "nhc-uc.client"), "", mcelogReport{DIMMs: []mcelogDIMM{{"SOCKET 0 CHANNEL 1 DIMM 0", 975, 1}}}, ""},
		{"no daemon", "", mceFixture(t, "no-daemon.client"), mcelogReport{NoDaemon: "client connect: Connection refused"}, ""},
		{"pages", "Memory errors\nSOCKET 0 CHANNEL 0 DIMM 0\nDMI_NAME \"A1\" DMI_LOCATION \"CPU0_A1\"\ncorrected memory errors:\n\t3 total\n\t3 in 24h\n" +
			"Per page corrected memory statistics:\n4a5e000: total 3 seen \"3 in 24h\" online\n\n", "",
			mcelogReport{DIMMs: []mcelogDIMM{{"SOCKET 0 CHANNEL 0 DIMM 0", 3, 0}}}, ""},
		{"a line not understood", "This is a fake error.\n", "", mcelogReport{}, `line 1 not understood: "This is a fake error."`},
		{"a count not a number", "SOCKET 0 CHANNEL 0 DIMM 0\nuncorrected memory errors:\n\tx total\n", "", mcelogReport{DIMMs: []mcelogDIMM{{Name: "SOCKET 0 CHANNEL 0 DIMM 0"}}}, `line 3: "x total"`},
		{"not root", "permission denied\n", "", mcelogReport{}, "refused the client (permission denied)"},
		{"another complaint", "", "mcelog: Cannot open /dev/mcelog\n", mcelogReport{}, `"mcelog: Cannot open /dev/mcelog" on stderr`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMcelogClient(tc.stdout, tc.stderr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(mcelogReport{}, mcelogDIMM{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestJudgeMachineChecks(t *testing.T) {
	uc := func(cpu, bank int) mceRecord { return mceRecord{CPU: cpu, Bank: bank, Status: 0xf200004000070005} }
	ce := func(cpu, bank int) mceRecord { return mceRecord{CPU: cpu, Bank: bank, Status: 0x8c00004f000800c2} }
	noDaemon := &mcelogReport{NoDaemon: "client connect: Connection refused"}
	tests := []struct {
		name    string
		f       mceFacts
		warn    int
		status  Status
		summary string
	}{
		{"nothing", mceFacts{}, 1, StatusOK, "no machine check since boot (kernel log)"},
		{"nothing, mcelog asked", mceFacts{Mcelog: &mcelogReport{}}, 1, StatusOK, "no machine check since boot (kernel log, mcelog --client)"},
		{"nothing, mcelog without a daemon", mceFacts{Mcelog: noDaemon}, 1, StatusOK,
			"no machine check since boot (kernel log, mcelog installed, no daemon answers: client connect: Connection refused)"},
		{"one uncorrected", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{uc(2, 0)}}}, 1, StatusFail,
			"CPU 2 bank 0: uncorrected machine check (MCi_STATUS f200004000070005: uncorrected, processor context corrupt, earlier errors lost (overflow))"},
		{"uncorrected twice on one bank, once on another", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{uc(2, 0), ce(1, 11), uc(2, 0), uc(3, 4)}}}, 1, StatusFail,
			"CPU 2 bank 0: uncorrected machine check (MCi_STATUS f200004000070005: uncorrected, processor context corrupt, earlier errors lost (overflow)), 2 times (+2 more)"},
		{"uncorrected, context intact", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{{CPU: 0, Bank: 1, Status: 0xbd80000000100134}}}}, 0, StatusFail,
			"CPU 0 bank 1: uncorrected machine check (MCi_STATUS bd80000000100134: uncorrected)"},
		{"corrected at the limit", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{ce(1, 11), ce(1, 11)}}}, 2, StatusWarn,
			"corrected: 2 corrected records in the kernel log"},
		{"corrected under the limit", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{ce(1, 11)}}}, 2, StatusOK, "no machine check since boot (kernel log)"},
		{"corrected, never warn", mceFacts{Kernel: mceKernelLog{Records: []mceRecord{ce(1, 11)}, Storms: 3}}, 0, StatusOK, "no machine check since boot (kernel log)"},
		{"notices without records", mceFacts{Kernel: mceKernelLog{Logged: 3}}, 1, StatusWarn,
			"corrected: 3 \"Machine check events logged\" without a record in the log (mcelog, rasdaemon or EDAC took them)"},
		{"notices with their records", mceFacts{Kernel: mceKernelLog{Logged: 3, Records: []mceRecord{ce(0, 5)}}}, 1, StatusWarn, "corrected: 1 corrected record in the kernel log"},
		{"CMCI storm", mceFacts{Kernel: mceKernelLog{Storms: 1}}, 1, StatusWarn, "corrected: 1 CMCI storm (corrected errors too many to take one by one)"},
		{"mcelog uncorrected", mceFacts{Mcelog: &mcelogReport{DIMMs: []mcelogDIMM{{"SOCKET 0 CHANNEL 1 DIMM 0", 975, 1}}}}, 1, StatusFail,
			"mcelog SOCKET 0 CHANNEL 1 DIMM 0: 1 uncorrected memory errors since mcelog started (975 corrected) (+1 more)"},
		{"mcelog corrected", mceFacts{Mcelog: &mcelogReport{DIMMs: []mcelogDIMM{{"SOCKET 1 CHANNEL 3 DIMM 0", 1651, 0}}}}, 10, StatusWarn,
			"corrected: 1651 corrected memory errors counted by mcelog"},
		{"kernel log unreadable", mceFacts{KernelErr: "cannot read the kernel log (/usr/bin/dmesg): /usr/bin/dmesg exited 1: dmesg: read kernel buffer failed: Operation not permitted"}, 1, StatusError,
			"kernel log: cannot read the kernel log (/usr/bin/dmesg): /usr/bin/dmesg exited 1: dmesg: read kernel buffer failed: Operation not permitted"},
		{"kernel log unreadable, mcelog fails", mceFacts{KernelErr: "cannot read the kernel log", Mcelog: &mcelogReport{DIMMs: []mcelogDIMM{{"SOCKET 0 CHANNEL 1 DIMM 0", 0, 2}}}}, 1, StatusFail,
			"mcelog SOCKET 0 CHANNEL 1 DIMM 0: 2 uncorrected memory errors since mcelog started (0 corrected) (+1 more)"},
		{"mcelog not understood", mceFacts{Mcelog: &mcelogReport{}, McelogErr: `mcelog --client line 1 not understood: "x"`}, 1, StatusError,
			`mcelog: mcelog --client line 1 not understood: "x"`},
		{"log cut", mceFacts{KernelCut: "only 8192 KiB of the kernel log were read: machine checks in the rest not seen"}, 1, StatusWarn,
			"kernel log: only 8192 KiB of the kernel log were read: machine checks in the rest not seen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeMachineChecks(tc.f, tc.warn)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("got %s %q\nwant %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			for _, d := range res.Details {
				if d.Status == StatusFail && d.Remedy != RemedyService {
					t.Errorf("%s: remedy %q", d.Device, d.Remedy)
				}
			}
			assertRemedies(t, res)
		})
	}
}

const mcelogCmd = "/usr/sbin/mcelog --client"

func TestMachineChecksRun(t *testing.T) {
	x86 := map[string]string{machineCheckDir + "/check_interval": "300\n"}
	tests := []struct {
		name    string
		files   map[string]string
		cmds    map[string]node.CmdResult
		execErr error
		status  Status
		summary string
	}{
		{"not x86", nil, map[string]node.CmdResult{dmesgCmd: {}}, nil, StatusSkip,
			"no /sys/devices/system/machinecheck/machinecheck0: no x86 machine-check architecture here (another CPU architecture, a kernel booted with mce=off, a VM without MCA), or not recorded in this snapshot"},
		{"clean, no mcelog", x86, map[string]node.CmdResult{dmesgCmd: {Stdout: "mce: CPU supports 9 MCE banks\n"}}, nil, StatusOK, "no machine check since boot (kernel log)"},
		{"uncorrected at boot", x86, map[string]node.CmdResult{dmesgCmd: {Stdout: mceFixture(t, "mcelog-70.log")}}, nil, StatusFail,
			"CPU 0 bank 4: uncorrected machine check (MCi_STATUS a600000000020408: uncorrected, processor context corrupt)"},
		{"corrected, mcelog counts more", x86, map[string]node.CmdResult{dmesgCmd: {Stdout: mceFixture(t, "home-assistant-2989.log")},
			mcelogCmd: {Stdout: mceFixture(t, "mcelog-16.client")}}, nil, StatusWarn,
			"corrected: 4 corrected records in the kernel log; 5308 corrected memory errors counted by mcelog"},
		{"mcelog without a daemon", x86, map[string]node.CmdResult{dmesgCmd: {Stdout: mceFixture(t, "suse-000021436.log")},
			mcelogCmd: {Stderr: mceFixture(t, "no-daemon.client")}}, nil, StatusWarn,
			"corrected: 4 CMCI storms (corrected errors too many to take one by one)"},
		{"mcelog uncorrected", x86, map[string]node.CmdResult{dmesgCmd: {}, mcelogCmd: {Stdout: mceFixture(t, "nhc-uc.client")}}, nil, StatusFail,
			"mcelog SOCKET 0 CHANNEL 1 DIMM 0: 1 uncorrected memory errors since mcelog started (975 corrected) (+1 more)"},
		{"dmesg not permitted", x86, map[string]node.CmdResult{dmesgCmd: {ExitCode: 1, Stderr: "dmesg: read kernel buffer failed: Operation not permitted\n"}}, nil, StatusError,
			"kernel log: cannot read the kernel log (/usr/bin/dmesg): /usr/bin/dmesg --kernel --nopager exited 1: dmesg: read kernel buffer failed: Operation not permitted"},
		{"dmesg missing", x86, map[string]node.CmdResult{}, nil, StatusError,
			"kernel log: cannot read the kernel log (/usr/bin/dmesg): exec /usr/bin/dmesg: file does not exist"},
		{"dmesg not recorded", x86, nil, fmt.Errorf("run /usr/bin/dmesg: %w", node.ErrNotRecorded), StatusSkip,
			"the snapshot did not record the kernel log (/usr/bin/dmesg): no machine checks to judge in this replay"},
		{"dmesg cannot start", x86, nil, errors.New("fork/exec /usr/bin/dmesg: permission denied"), StatusError,
			"kernel log: cannot read the kernel log (/usr/bin/dmesg): fork/exec /usr/bin/dmesg: permission denied (+1 more)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &execFacts{fakeFacts: &fakeFacts{files: tc.files}, cmds: tc.cmds, execErr: tc.execErr}
			env := &Env{Facts: f, Config: config.Default(Schema()), Mode: config.ModeHealth}
			got := machineChecks{}.Run(context.Background(), env)
			assertRemedies(t, got)
			if got.Status != tc.status || got.Summary != tc.summary {
				t.Errorf("got %s %q\nwant %s %q\ndetails: %+v", got.Status, got.Summary, tc.status, tc.summary, got.Details)
			}
		})
	}
}

// TestMachineChecksSharesKernelLog: where the history step read the kernel log with the
// same dmesg, the check judges that reading and runs no dmesg of its own; with another
// dmesg it reads its own.
func TestMachineChecksSharesKernelLog(t *testing.T) {
	files := map[string]string{machineCheckDir + "/check_interval": "300\n"}
	f := &execFacts{fakeFacts: &fakeFacts{files: files}, cmds: map[string]node.CmdResult{dmesgCmd: {}}}
	cfg := config.Default(Schema())
	env := &Env{Facts: f, Config: cfg, Mode: config.ModeHealth,
		history: &runHistory{kernel: &kernelLog{out: node.CmdResult{Stdout: mceFixture(t, "servethehome.log")}, ok: true}}}
	if got := (machineChecks{}).Run(context.Background(), env); got.Status != StatusFail {
		t.Errorf("shared reading: got %s %q", got.Status, got.Summary)
	}
	if strings.Join(f.ran, ";") != mcelogCmd {
		t.Errorf("ran %q, want only %q", f.ran, mcelogCmd)
	}
	f.ran = nil
	settings[*machineChecksConfig](cfg, idMachineChecks).Dmesg = "/bin/dmesg"
	f.cmds["/bin/dmesg --kernel --nopager"] = node.CmdResult{}
	if got := (machineChecks{}).Run(context.Background(), env); got.Status != StatusOK {
		t.Errorf("own reading: got %s %q", got.Status, got.Summary)
	}
	if len(f.ran) == 0 || f.ran[0] != "/bin/dmesg --kernel --nopager" {
		t.Errorf("ran %q", f.ran)
	}
}

// TestMachineChecksSnapshot replays testdata/mce-snapshot (real captures, SOURCE): the
// snapshot's dmesg and mcelog --client through node.Snapshot's Exec, and without mcelog's
// recording, as a node without mcelog.
func TestMachineChecksSnapshot(t *testing.T) {
	snap, err := node.OpenSnapshot("testdata/mce-snapshot")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Facts: snap, Config: config.Default(Schema()), Mode: config.ModeHealth}
	got := machineChecks{}.Run(context.Background(), env)
	want := "CPU 2 bank 0: uncorrected machine check (MCi_STATUS f200004000070005: uncorrected, processor context corrupt, earlier errors lost (overflow)) (+1 more)"
	if got.Status != StatusFail || got.Summary != want || got.Observed != "kernel log, mcelog --client" {
		t.Errorf("got %s %q (%s)\nwant fail %q", got.Status, got.Summary, got.Observed, want)
	}
	if d := got.Details[len(got.Details)-1]; d.Status != StatusWarn ||
		d.Message != "4 corrected records in the kernel log; 5308 corrected memory errors counted by mcelog" {
		t.Errorf("corrected detail %+v", d)
	}
	settings[*machineChecksConfig](env.Config, idMachineChecks).Mcelog = "/opt/mcelog/bin/mcelog-missing"
	if got := (machineChecks{}).Run(context.Background(), env); got.Observed != "kernel log" {
		t.Errorf("without mcelog: %s %q (%s)", got.Status, got.Summary, got.Observed)
	}
}

// TestMachineChecksOneDmesg: a run of xid_errors and machine_checks runs dmesg once (the
// history step's reading, which both judge).
func TestMachineChecksOneDmesg(t *testing.T) {
	files := map[string]string{machineCheckDir + "/check_interval": "300\n"}
	f := &execFacts{fakeFacts: &fakeFacts{files: files, gpus: h100NVML()},
		cmds: map[string]node.CmdResult{dmesgCmd: {Stdout: mceFixture(t, "servethehome.log")}}}
	env := gpuEnv(f, "gpu-h100-01", nil)
	rep := Run(context.Background(), env, []Check{xidErrors{}, machineChecks{}}, RunOptions{Budget: 5 * time.Second})
	n := 0
	for _, c := range f.ran {
		if c == dmesgCmd {
			n++
		}
	}
	if n != 1 {
		t.Errorf("dmesg ran %d times: %q", n, f.ran)
	}
	if len(rep.Results) != 2 || rep.Results[1].Status != StatusFail {
		t.Errorf("results %+v", rep.Results)
	}
}
