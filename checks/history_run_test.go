package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
)

func TestParseBootID(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01\n", "6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01", ""},
		{"6D0C3E8A-3F5B-4A0E-9D7C-2B1F5E4A9C01", "6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01", ""},
		{"", "", `"" is not a boot id`},
		{"not-a-boot-id", "", `"not-a-boot-id" is not a boot id`},
		{"6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c0z", "", "is not a boot id"},
	}
	for _, tc := range tests {
		got, err := parseBootID(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseBootID(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseUptime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"350735.47 234388.90\n", 350735470 * time.Millisecond, false}, // proc(5)'s example
		{"0.00 0.00", 0, false},
		{"", 0, true},
		{"-5 1", 0, true},
		{"NaN 1", 0, true},
		{"1e12 1", 0, true},
	}
	for _, tc := range tests {
		got, err := parseUptime(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("parseUptime(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestGPUObservations(t *testing.T) {
	ptr := func(v uint64) *uint64 { return &v }
	inv := node.GPUInventory{Init: node.InitSuccess, Devices: []node.GPU{
		{Index: 0, UUID: "GPU-a", Serial: "1652922000001", PCIBusID: "00000000:19:00.0", Name: "NVIDIA H100 80GB HBM3",
			ECC:          &node.ECC{Enabled: true, VolatileCorrected: ptr(12)},
			NVLinkErrors: &node.NVLinkErrors{CRCFlit: 1, CRCData: 2, Replay: 3, Recovery: 4}, PCIeReplays: ptr(7)},
		{Index: 1, UUID: "GPU-b", PCIBusID: "00000000:3B:00.0", Error: "ERROR_GPU_IS_LOST"},
		// Some link would not give CRC data or recovery counts (Hopper answers some
		// ERROR_NOT_SUPPORTED): their sums are 0, not readings.
		{Index: 2, UUID: "GPU-c", PCIBusID: "00000000:4C:00.0",
			NVLinkErrors: &node.NVLinkErrors{CRCFlit: 5, Replay: 6, Links: 18, Unread: []string{"crc_data", "recovery"}}},
	}}
	var full [history.NumCounters]history.Reading
	full[history.ECCCorrected], full[history.NVLinkCRC], full[history.NVLinkReplay] = history.Read(12), history.Read(3), history.Read(3)
	full[history.NVLinkRecovery], full[history.PCIeReplay] = history.Read(4), history.Read(7)
	var partial [history.NumCounters]history.Reading
	partial[history.NVLinkReplay] = history.Read(6)
	want := []history.GPUObs{
		{UUID: "GPU-a", Serial: "1652922000001", Bus: "00000000:19:00.0", Index: 0, Name: "NVIDIA H100 80GB HBM3", Counters: full},
		// A lost GPU keeps its identity; its counters are not read.
		{UUID: "GPU-b", Bus: "00000000:3B:00.0", Index: 1},
		{UUID: "GPU-c", Bus: "00000000:4C:00.0", Index: 2, Counters: partial},
	}
	if diff := cmp.Diff(want, gpuObservations(inv)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// historyFacts is a node with a boot id, its uptime, one GPU and two IB ports, and dmesg.
func historyFacts(dmesg string) *execFacts {
	f := &fakeFacts{
		files: map[string]string{bootIDPath: "6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01\n", uptimePath: "3600.00 7200.00\n"},
		gpus: node.GPUInventory{Init: node.InitSuccess, DeviceCount: 1, Devices: []node.GPU{
			{Index: 0, UUID: "GPU-a", PCIBusID: "00000000:19:00.0", ECC: &node.ECC{Enabled: true, VolatileCorrected: new(uint64)}}}},
		ports: []node.IBPort{
			{Device: "mlx5_0", Port: 1, StateID: 4, State: "ACTIVE", PhysStateID: 5, PhysState: "LinkUp"},
			{Device: "mlx5_1", Port: 1, StateID: 1, State: "DOWN", PhysStateID: 3, PhysState: "Disabled"},
		},
	}
	return &execFacts{fakeFacts: f, cmds: map[string]node.CmdResult{"/usr/bin/dmesg --kernel --nopager": {Stdout: dmesg}}}
}

var historyNow = time.Date(2024, 8, 1, 10, 0, 0, 0, time.UTC)

func historyEnv(f node.Facts, mode config.Mode, dir string) *Env {
	return &Env{Facts: f, Config: config.Default(Schema()), Mode: mode, Node: "gpu01",
		History: historyIn(dir, false)}
}

// historyIn is the history setup a run makes for the state directory dir (opened as
// cmd/nodecheck/run opens it: files.State, history.InStateDir).
func historyIn(dir string, readOnly bool) HistorySetup {
	if dir == "" {
		return HistorySetup{Now: historyNow, Off: "[state] dir is empty"}
	}
	st := files.NewState(dir, "--state-dir", os.Geteuid(), readOnly)
	return HistorySetup{Where: dir + " (from --state-dir)", Now: historyNow, ReadOnly: readOnly,
		Open: func() (HistoryStore, error) {
			d, err := st.Open()
			if err != nil {
				return nil, err
			}
			return history.InStateDir(d)
		}}
}

// stateDirAt opens dir as a state directory, closed when the test ends.
func stateDirAt(t *testing.T, dir string, readOnly bool) *files.StateDir {
	t.Helper()
	d, err := files.OpenStateDir(dir, os.Geteuid(), readOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestLoadRunHistory(t *testing.T) {
	const xid79 = "[ 1800.000001] NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.\n"
	t.Run("prolog loads nothing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		if r := loadRunHistory(context.Background(), historyEnv(historyFacts(xid79), config.ModeProlog, dir), All()); r != nil {
			t.Errorf("prolog: %+v, want no history step", r)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the prolog created %s: %v", dir, err)
		}
	})
	t.Run("health merges and saves", func(t *testing.T) {
		dir := t.TempDir()
		f := historyFacts(xid79)
		r := loadRunHistory(context.Background(), historyEnv(f, config.ModeHealth, dir), All())
		if r.Err != nil || r.Off != "" || !r.Saved || r.h == nil || r.ports != 2 {
			t.Fatalf("history step: %+v", r.RunHistory)
		}
		if got := strings.Count(strings.Join(f.ran, "\n"), "dmesg"); got != 1 {
			t.Errorf("dmesg ran %d times, want once", got)
		}
		h, _, err := ReadHistory(stateDirAt(t, dir, true), "gpu01", historyNow)
		if err != nil {
			t.Fatal(err)
		}
		want := history.Boot{N: 0, ID: "6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01", Time: historyNow.Add(-time.Hour).Unix(),
			FirstSeen: historyNow.Unix(), LastSeen: historyNow.Unix(), XIDMark: 1800000001}
		if len(h.Boots) != 1 || !cmp.Equal(h.Boots[0], want) || len(h.GPUs) != 1 || len(h.GPUs[0].XIDs) != 1 || len(h.Ports) != 2 {
			t.Errorf("saved history: %+v", h)
		}
		// xid_errors judges from it: XID 79 sticks.
		env := historyEnv(f, config.ModeHealth, dir)
		env.history = r
		res := xidErrors{}.Run(context.Background(), env)
		if res.Status != StatusFail || !strings.Contains(res.Summary, "XID 79 at 2024-08-01T09:30:00Z, sticky until a reboot") {
			t.Errorf("xid_errors: %s %q", res.Status, res.Summary)
		}
	})
	t.Run("no state directory", func(t *testing.T) {
		env := historyEnv(historyFacts(xid79), config.ModeHealth, "")
		env.History.Off = "a snapshot replay keeps it only with --state-dir, a recording never"
		r := loadRunHistory(context.Background(), env, All())
		if r.Off != env.History.Off || r.h != nil || r.kernel == nil || !r.kernel.ok {
			t.Errorf("history step: %+v", r)
		}
		env.history = r
		if res := (gpuErrorRates{}).Run(context.Background(), env); res.Status != StatusSkip || !strings.Contains(res.Summary, "no history kept: a snapshot replay") {
			t.Errorf("gpu_error_rates: %s %q", res.Status, res.Summary)
		}
		// xid_errors judges the kernel log since boot, as before.
		if res := (xidErrors{}).Run(context.Background(), env); res.Status != StatusFail || !strings.HasPrefix(res.Summary, "XID 79 on gpu 0 (0000:19:00.0)") {
			t.Errorf("xid_errors: %s %q", res.Status, res.Summary)
		}
	})
	t.Run("no boot id", func(t *testing.T) {
		f := historyFacts("")
		delete(f.files, bootIDPath)
		env := historyEnv(f, config.ModeHealth, t.TempDir())
		env.history = loadRunHistory(context.Background(), env, All())
		if res := (ibFlaps{}).Run(context.Background(), env); res.Status != StatusSkip || !strings.Contains(res.Summary, "no boot id in this run") {
			t.Errorf("ib_flaps: %s %q", res.Status, res.Summary)
		}
	})
	t.Run("untrusted state directory", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the ownership rule applies to root")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		env := historyEnv(historyFacts(""), config.ModeHealth, dir)
		env.history = loadRunHistory(context.Background(), env, All())
		for _, c := range []Check{gpuErrorRates{}, ibFlaps{}, xidErrors{}} {
			res := c.Run(context.Background(), env)
			if res.Status != StatusError || !strings.Contains(res.Summary, "lets group or others write it") || !strings.Contains(res.Summary, "chmod go-w") {
				t.Errorf("%s: %s %q, want error naming the fix", c.ID(), res.Status, res.Summary)
			}
		}
	})
}

// TestClearHistoryConcurrent: clears and runs at the same moment lose nothing: each takes
// the node's history lock from load to save.
func TestClearHistoryConcurrent(t *testing.T) {
	dir := t.TempDir()
	env := historyEnv(historyFacts(""), config.ModeHealth, dir)
	if r := loadRunHistory(context.Background(), env, All()); !r.Saved {
		t.Fatalf("first run: %+v", r.RunHistory)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 6 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, err := ClearHistory(context.Background(), stateDirAt(t, dir, false), "gpu01", history.Selector{Port: "mlx5_1/1"}, "admin", fmt.Sprintf("reason %d", i), historyNow.Add(time.Minute), 30*time.Second)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			env := historyEnv(historyFacts(""), config.ModeHealth, dir)
			env.History.Now = historyNow.Add(time.Duration(i+2) * time.Minute)
			if r := loadRunHistory(context.Background(), env, All()); r.Err != nil {
				errs <- r.Err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	h, _, err := ReadHistory(stateDirAt(t, dir, true), "gpu01", historyNow)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, c := range h.Clears {
		reasons = append(reasons, c.Reason)
	}
	slices.Sort(reasons)
	if want := []string{"reason 0", "reason 1", "reason 2", "reason 3", "reason 4", "reason 5"}; !slices.Equal(reasons, want) {
		t.Errorf("clears kept: %q, want all six", reasons)
	}
}

func TestXIDRules(t *testing.T) {
	cfg := parseSectionCase(t, "[checks.xid_errors]\nignore_xids = [13]\nfail_xids = [48, 79, 31]\nreboot_xids = [79]\nrepeat_xid31 = 0\nrepeat_window = \"6h\"\n", "", "")
	r := settings[*xidErrorsConfig](cfg, idXIDErrors).rules(history.DefaultRules())
	// warn_xids left at its default: the catalog's, less 13 (ignored) and 31 (failed).
	app := slices.DeleteFunc(defaultWarnXIDs(), func(x int) bool { return x == 13 || x == 31 })
	if !slices.Equal(r.ResetXIDs, []int{31, 48}) || !slices.Equal(r.RebootXIDs, []int{79}) || !slices.Equal(r.IgnoreXIDs, []int{13}) ||
		!slices.Equal(r.AppXIDs, app) || r.Decode == nil {
		t.Errorf("reset %v, reboot %v, ignore %v, app %v", r.ResetXIDs, r.RebootXIDs, r.IgnoreXIDs, r.AppXIDs)
	}
	if r.Repeats[1].Count != 0 || r.Repeats[0].Window != 6*time.Hour || r.Repeats[2].Count != 5 || history.DefaultRules().Repeats[1].Count != 2 {
		t.Errorf("repeats %+v", r.Repeats)
	}
	all := HistoryRules(cfg)
	if all.FlapFail != 3 || all.Rates[history.ECCCorrected].Fail != 3_600_000 || !slices.Equal(all.RebootXIDs, []int{79}) {
		t.Errorf("HistoryRules: %+v", all)
	}
}

func TestHistorySections(t *testing.T) {
	runSectionCases(t, []sectionCase{
		{name: "flaps defaults", toml: "", want: func(c *config.Config) any { return *settings[*ibFlapsConfig](c, idIBFlaps) },
			wantVal: ibFlapsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: []string{"health", "manual"}},
				Window: 3 * time.Hour, WarnAt: 1, FailAt: 3, Sticky: true}},
		{name: "flaps group", toml: "[[group]]\nnodes = \"gpu[01-02]\"\n[group.checks.ib_flaps]\nfail_at = 1\n", node: "gpu01",
			want: func(c *config.Config) any { return settings[*ibFlapsConfig](c, idIBFlaps).FailAt }, wantVal: 1},
		{name: "flaps warn above fail", toml: "[checks.ib_flaps]\nwarn_at = 4\n",
			wantErr: "nodecheck.toml:2: checks.ib_flaps.warn_at = 4 is above fail_at = 3: a port would fail before it warns"},
		{name: "flaps no window", toml: "[checks.ib_flaps]\nwindow = \"0s\"\n",
			wantErr: "nodecheck.toml:2: checks.ib_flaps.window = \"0s\": give a window such as \"3h\""},
		{name: "rates", toml: "[checks.gpu_error_rates]\necc_corrected_fail_per_hour = 100000.0\n",
			want: func(c *config.Config) any {
				return settings[*gpuErrorRatesConfig](c, idGPUErrorRates).rules(history.DefaultRules()).Rates[history.ECCCorrected].Fail
			}, wantVal: 100000.0},
		{name: "rates negative", toml: "[checks.gpu_error_rates]\npcie_replay_fail_per_hour = -1.0\n",
			wantErr: "nodecheck.toml:2: checks.gpu_error_rates.pcie_replay_fail_per_hour = -1: give a rate per hour of 0 (off) or more"},
		{name: "rates warn above fail", toml: "[checks.gpu_error_rates]\nnvlink_replay_warn_per_hour = 100.0\n",
			wantErr: "nodecheck.toml:2: checks.gpu_error_rates.nvlink_replay_warn_per_hour = 100 is above nvlink_replay_fail_per_hour = 60: the GPU would fail before it warns"},
		{name: "rates window under min_span", toml: "[checks.gpu_error_rates]\nwindow = \"1m\"\n",
			wantErr: "nodecheck.toml:2: checks.gpu_error_rates.window = \"1m0s\" is shorter than min_span = \"5m0s\": no rate would fit in it"},
		{name: "xid reboot not an XID", toml: "[checks.xid_errors]\nreboot_xids = [0]\n",
			wantErr: "nodecheck.toml:2: checks.xid_errors.reboot_xids: 0 is not an XID; give numbers from 1 to 999"},
		{name: "xid negative repeat", toml: "[checks.xid_errors]\nrepeat_any = -2\n",
			wantErr: "nodecheck.toml:2: checks.xid_errors.repeat_any = -2: give a count of bursts, or 0 to turn the rule off"},
	})
}

func TestOverTimeResult(t *testing.T) {
	r := &runHistory{}
	js := []history.Judgement{
		{Status: history.StatusOK, Device: "gpu a", Summary: "fine"},
		{Status: history.StatusWarn, Device: "gpu b", Summary: "b warns", Observed: "XID 13"},
		{Rule: "xid_sticky", Status: history.StatusFail, Device: "gpu c", Summary: "gpu c: XID 79 sticks", Observed: "XID 79", XID: 79},
	}
	xids := xidErrors{}.judgementRemedy
	res := r.overTimeResult(js, xids, "all fine", "nothing")
	if res.Status != StatusFail || res.Summary != "gpu c: XID 79 sticks (+1 more)" || len(res.Details) != 2 || res.Details[0].Device != "gpu c" ||
		res.Details[0].Message != "XID 79 sticks" || res.Details[0].Remedy != RemedyReboot || res.Observed != "XID 79" {
		t.Errorf("%+v", res)
	}
	assertRemedies(t, res)
	for _, tc := range []struct {
		check overTime
		rule  string
		want  Remedy
	}{
		{gpuErrorRates{}, "rate_ecc_corrected", RemedyService},
		{gpuErrorRates{}, "rate_nvlink_crc", RemedyResetGPU},
		{gpuErrorRates{}, "rate_nvlink_replay", RemedyResetGPU},
		{gpuErrorRates{}, "rate_nvlink_recovery", RemedyResetGPU},
		{gpuErrorRates{}, "rate_pcie_replay", RemedyService},
		{ibFlaps{}, "ib_flap", RemedyService},
	} {
		if got := tc.check.judgementRemedy(history.Judgement{Rule: tc.rule, Status: history.StatusFail}); got != tc.want {
			t.Errorf("%s: remedy of %s: %s, want %s", tc.check.ID(), tc.rule, got, tc.want)
		}
	}
	if got := xids(history.Judgement{Rule: "xid_repeat", XID: 31}); got != RemedyAdmin {
		t.Errorf("remedy of a repeating XID 31: %s, want admin (the catalog's software workflow)", got)
	}
	if res := r.overTimeResult(js[:1], xids, "all fine", "nothing"); res.Status != StatusOK || res.Summary != "all fine" || len(res.Details) != 0 {
		t.Errorf("%+v", res)
	}
	r.bad = "history /x: truncated; kept aside as x.bad-1, starting a fresh history"
	if res := r.overTimeResult(js[:1], xids, "all fine", "nothing"); res.Status != StatusWarn || !strings.HasPrefix(res.Summary, "history file unusable, a fresh one started: ") {
		t.Errorf("%+v", res)
	}
}

// TestDmesgKernelTimes runs this machine's util-linux dmesg as xid_errors does and checks that
// every line carries the kernel time the history counts events by ("[  123.456789] ...";
// not dmesg -T's or --time-format iso's wall times, which the parser does not take).
func TestDmesgKernelTimes(t *testing.T) {
	const dmesg = "/usr/bin/dmesg"
	out, err := exec.Command(dmesg, "--kernel", "--nopager").Output()
	if err != nil || len(out) == 0 {
		t.Skipf("%s --kernel --nopager: %v (not installed, or kernel.dmesg_restrict and not root)", dmesg, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for i, l := range lines {
		if _, _, ok := history.KernelTime(l); !ok && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			t.Errorf("line %d of %d has no kernel time: %q", i+1, len(lines), l)
			break
		}
	}
}

// TestHistoryReadsModeFacts: the history step of a health run records each GPU's identity
// and counters from the reading the run makes, which asks NVML for the mode's facts only
// (GPUFieldsFor): xid_errors and gpu_error_rates name what it records. With gpu_error_rates
// off, the identity is still read (a GPU's record is found by UUID in every run) and no
// counter is: no sample.
func TestHistoryReadsModeFacts(t *testing.T) {
	full := node.GPU{Index: 0, UUID: "GPU-a", Serial: "1652922000001", PCIBusID: "00000000:19:00.0", Name: "NVIDIA H100 80GB HBM3",
		ECC:          &node.ECC{Enabled: true, VolatileCorrected: new(uint64(12))},
		NVLinkErrors: &node.NVLinkErrors{CRCFlit: 1, CRCData: 2, Replay: 3, Recovery: 4, Links: 18}, PCIeReplays: new(uint64(7))}
	for _, tc := range []struct {
		name, toml string
		want       [history.NumCounters]int64
	}{
		{"defaults", "", [history.NumCounters]int64{12, 3, 3, 4, 7}},
		{"gpu_error_rates off", "[checks.gpu_error_rates]\nenabled = false\n", [history.NumCounters]int64{-1, -1, -1, -1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.ParseConfig([]byte(tc.toml), "nodecheck.toml", Schema())
			if err != nil {
				t.Fatal(err)
			}
			f := historyFacts("")
			f.gpus.Devices = []node.GPU{full}
			dir := t.TempDir()
			env := historyEnv(onlyFacts{Facts: f, only: GPUFieldsFor(All(), cfg, config.ModeHealth)}, config.ModeHealth, dir)
			env.Config = cfg
			if r := loadRunHistory(context.Background(), env, All()); r.Err != nil || !r.Saved {
				t.Fatalf("history step: %+v", r.RunHistory)
			}
			h, _, err := ReadHistory(stateDirAt(t, dir, true), "gpu01", historyNow)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.GPUs) != 1 || h.GPUs[0].UUID != "GPU-a" || h.GPUs[0].Serial != "1652922000001" || h.GPUs[0].Name == "" {
				t.Fatalf("GPU records: %+v", h.GPUs)
			}
			s := h.GPUs[0].Samples
			if tc.want == [history.NumCounters]int64{-1, -1, -1, -1, -1} && len(s) == 0 {
				return // nothing read, nothing sampled
			}
			if len(s) != 1 || s[0].C != tc.want {
				t.Errorf("samples %+v, want counters %v", s, tc.want)
			}
		})
	}
}

// TestXIDHistoryKernelLogCut: on the history path (health runs), a kernel log read in part
// adds a warning and never softens what was read: an XID 79 in the part read still fails its
// GPU, so the node is not resumed with it in force. Boundaries: cut or whole, XID or none.
func TestXIDHistoryKernelLogCut(t *testing.T) {
	const xid79 = "[ 1800.000001] NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.\n"
	tests := []struct {
		name        string
		out         node.CmdResult
		want        Status
		wantSummary string
		wantCut     bool
	}{
		{"XID 79, log cut at the front", node.CmdResult{Stdout: xid79, Truncated: true, CutFront: true}, StatusFail,
			"sticky until a reboot; clear with `nodecheck history clear --gpu 0000:19:00.0`; only the kernel log's newest 0 KiB were read (it is longer), earlier XIDs not read", true},
		{"XID 79, log cut at the end", node.CmdResult{Stdout: xid79, Truncated: true}, StatusFail, "; the kernel log was cut at 0 KiB, later XIDs not read", true},
		{"XID 79, whole log", node.CmdResult{Stdout: xid79}, StatusFail, "sticky until a reboot; clear with `nodecheck history clear --gpu 0000:19:00.0`", false},
		{"no XID, log cut", node.CmdResult{Stdout: "[    1.000000] filler\n", Truncated: true, CutFront: true}, StatusWarn,
			"no XID in force on 1 GPU (history of this boot and the kernel log); only the kernel log's newest 0 KiB were read", true},
		{"no XID, whole log", node.CmdResult{Stdout: "[    1.000000] filler\n"}, StatusOK, "no XID in force on 1 GPU (history of this boot and the kernel log)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := historyFacts("")
			tc.out.Argv = []string{"/usr/bin/dmesg", "--kernel", "--nopager"}
			f.cmds["/usr/bin/dmesg --kernel --nopager"] = tc.out
			env := historyEnv(f, config.ModeHealth, t.TempDir())
			env.history = loadRunHistory(context.Background(), env, All())
			if env.history.h == nil {
				t.Fatalf("history step: %+v", env.history.RunHistory)
			}
			res := xidErrors{}.Run(context.Background(), env)
			cut := slices.ContainsFunc(res.Details, func(d Detail) bool { return d.Device == "kernel log" && d.Status == StatusWarn })
			if res.Status != tc.want || !strings.Contains(res.Summary, tc.wantSummary) || cut != tc.wantCut {
				t.Errorf("%s %q (cut detail %v); want %s with %q (cut detail %v)", res.Status, res.Summary, cut, tc.want, tc.wantSummary, tc.wantCut)
			}
		})
	}
}
