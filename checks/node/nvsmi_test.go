package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The captures are copied from the nodecheck corpus; testdata/nvsmi/SOURCE has one attribution
// per file, and each table case below repeats its source.
const nvsmiDir = "testdata/nvsmi"

func openCapture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(nvsmiDir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// gpuLine is one GPU in a line, the key values the table tests compare: index, bus id,
// minor, UUID, name; pcie width cur/max, gen cur/max; fabric; ecc mode current/pending and
// volatile uncorrected, volatile corrected, aggregate uncorrected; remapped rows correctable/
// uncorrectable/pending/failed; retired pages single/double/pending; memory total/used/reserved;
// compute processes pid:MiB:command. "-" is nil.
func gpuLine(g GPU) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s minor=%d %s %q", g.Index, g.PCIBusID, g.MinorNumber, g.UUID, g.Name)
	if p := g.PCIe; p != nil {
		fmt.Fprintf(&b, " pcie=x%d/x%d,gen%d/%d", p.CurLinkWidth, p.MaxLinkWidth, p.CurLinkGen, p.MaxLinkGen)
	} else {
		b.WriteString(" pcie=-")
	}
	if f := g.Fabric; f != nil {
		fmt.Fprintf(&b, " fabric=%s/%s", f.State, f.Status)
	} else {
		b.WriteString(" fabric=-")
	}
	if e := g.ECC; e != nil {
		n := func(p *uint64) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		}
		fmt.Fprintf(&b, " ecc=%t/%t,vu=%s,vc=%s,au=%s", e.Enabled, e.PendingEnabled, n(e.VolatileUncorrected), n(e.VolatileCorrected), n(e.AggregateUncorrected))
	} else {
		b.WriteString(" ecc=-")
	}
	if r := g.RemappedRows; r != nil {
		fmt.Fprintf(&b, " rr=%d/%d/%t/%t", r.Correctable, r.Uncorrectable, r.Pending, r.Failed)
	} else {
		b.WriteString(" rr=-")
	}
	if r := g.RetiredPages; r != nil {
		fmt.Fprintf(&b, " rp=%d/%d/%t", r.SingleBit, r.DoubleBit, r.Pending)
	} else {
		b.WriteString(" rp=-")
	}
	if m := g.Memory; m != nil {
		fmt.Fprintf(&b, " mem=%d/%d/%d", m.TotalMiB, m.UsedMiB, m.ReservedMiB)
	} else {
		b.WriteString(" mem=-")
	}
	if c := g.Compute; c != nil {
		var ps []string
		for _, p := range c.Processes {
			if p.UID != -1 || p.User != "" {
				ps = append(ps, fmt.Sprintf("%d:%d:%s:uid%d:%s", p.PID, p.UsedMiB, p.Command, p.UID, p.User))
				continue
			}
			ps = append(ps, fmt.Sprintf("%d:%d:%s", p.PID, p.UsedMiB, p.Command))
		}
		fmt.Fprintf(&b, " procs=[%s]", strings.Join(ps, " "))
	} else {
		b.WriteString(" procs=-")
	}
	if g.NVLinks != nil {
		fmt.Fprintf(&b, " nvlinks=%d", len(g.NVLinks))
	}
	if g.Error != "" {
		b.WriteString(" error=" + g.Error)
	}
	return b.String()
}

func invLines(inv GPUInventory) []string {
	out := []string{fmt.Sprintf("init=%s driver=%s cuda=%d count=%d", inv.Init, inv.DriverVersion, inv.CUDADriverVersion, inv.DeviceCount)}
	for _, g := range inv.Devices {
		out = append(out, gpuLine(g))
	}
	return out
}

// h100 is the line of a healthy H100 of the two gpud H100 captures; 535.161.08 and
// 535.183.01 print the same values for everything but identity and processes.
func h100(i int, bus string, uuid string, mem string, procs string) string {
	return fmt.Sprintf(`%d %s minor=%d %s "NVIDIA H100 80GB HBM3" pcie=x16/x16,gen5/5 fabric=COMPLETED/SUCCESS ecc=true/true,vu=0,vc=0,au=0 rr=0/0/false/false rp=- mem=81559/%s/551 procs=[%s]`,
		i, bus, i, uuid, mem, procs)
}

func rtx4090(i, minor int, bus, uuid string, gen int, used, procs string) string {
	return fmt.Sprintf(`%d %s minor=%d %s "NVIDIA GeForce RTX 4090" pcie=x16/x16,gen%d/4 fabric=- ecc=false/false,vu=-,vc=-,au=- rr=0/0/false/false rp=- mem=24564/%s/346 procs=[%s]`,
		i, bus, minor, uuid, gen, used, procs)
}

func azureRP(i int, sb, db int, pending bool) string {
	return fmt.Sprintf(`%d 0000000%d:00:00.0 minor=-1  "" pcie=- fabric=- ecc=- rr=- rp=%d/%d/%t mem=- procs=-`, i, i+1, sb, db, pending)
}

// TestParseNvidiaSMIQueryCorpus reads every capture of testdata/nvsmi with the -q parser: the
// -q ones give their key values, the others a clear error naming the line.
func TestParseNvidiaSMIQueryCorpus(t *testing.T) {
	for _, tc := range []struct {
		file    string
		source  string
		want    []string
		wantErr string
	}{
		{
			file:   "gpud-q-h100x8-535.161.08.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.161.08.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			want: []string{
				"init=SUCCESS driver=535.161.08 cuda=12020 count=8",
				h100(0, "00000000:19:00.0", "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa", "0", ""),
				h100(1, "00000000:3B:00.0", "GPU-47daa2ad-a218-6286-252b-af45f0dfaf00", "0", ""),
				h100(2, "00000000:4C:00.0", "GPU-167d8376-ee13-fca4-938a-a05167c43cdc", "0", ""),
				h100(3, "00000000:5D:00.0", "GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99", "0", ""),
				h100(4, "00000000:9B:00.0", "GPU-2b6f61f9-8b00-3b57-d912-b62792120662", "0", ""),
				h100(5, "00000000:BB:00.0", "GPU-980ea11b-91dc-db7b-72ac-0685abc43658", "0", ""),
				h100(6, "00000000:CB:00.0", "GPU-4ef109e9-e925-4834-2b85-0771b4ef696c", "0", ""),
				h100(7, "00000000:DB:00.0", "GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5", "0", ""),
			},
		},
		{
			file:   "gpud-q-h100x8-535.183.01.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			want: []string{
				"init=SUCCESS driver=535.183.01 cuda=12020 count=8",
				h100(0, "00000000:53:00.0", "GPU-566e6f65-c38e-b12f-4824-6944218668b9", "0", ""),
				h100(1, "00000000:64:00.0", "GPU-9930d717-21dd-7692-054e-3d0a2bae76b5", "0", ""),
				// The one GPU running something: a real compute process, "Type : C".
				h100(2, "00000000:75:00.0", "GPU-973565ff-45cf-12ea-4e91-33386720f7bb", "9221", "1002127:9212:python"),
				h100(3, "00000000:86:00.0", "GPU-6b932a61-abfd-5ea1-b26a-7dea7f2fa601", "0", ""),
				h100(4, "00000000:97:00.0", "GPU-726d356b-f548-bbfd-c81e-b9c68f2f1587", "0", ""),
				h100(5, "00000000:A8:00.0", "GPU-06db64f6-6181-5a90-cf95-5ce52a58c4e5", "0", ""),
				h100(6, "00000000:B9:00.0", "GPU-a5271aa6-4cdb-28c7-0ef5-5da271d0caae", "0", ""),
				h100(7, "00000000:CA:00.0", "GPU-7e78e6c8-c71c-66c7-9ded-f8836cecab32", "0", ""),
			},
		},
		{
			// Consumer GPUs: ECC mode readable (off) with N/A counters, no fabric, minor
			// numbers not in bus order, idle links at gen 1, a compute process on 7 of 8.
			file:   "gpud-q-rtx4090x8-535.154.05.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.154.05.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			want: []string{
				"init=SUCCESS driver=535.154.05 cuda=12020 count=8",
				rtx4090(0, 3, "00000000:01:00.0", "GPU-313bbff0-b0a0-fd26-4820-0578bdef3a12", 4, "20328", "58130:20322:python"),
				rtx4090(1, 2, "00000000:23:00.0", "GPU-1a287db8-89a4-4cd7-5933-ae53d0c4d4ad", 4, "21356", "2930819:21350:python"),
				rtx4090(2, 1, "00000000:41:00.0", "GPU-a4f36154-6f3f-303f-e098-dec1632fd43f", 4, "23044", "2146842:23038:python"),
				rtx4090(3, 0, "00000000:61:00.0", "GPU-025f6884-1162-3032-9aab-14e0d5622783", 4, "22790", "3159481:22784:python"),
				rtx4090(4, 7, "00000000:81:00.0", "GPU-751d1667-9d35-b4ef-90cf-a7bdff6aa964", 1, "24212", "1100070:24206:python3.10"),
				rtx4090(5, 6, "00000000:A1:00.0", "GPU-63cdf48e-0e17-dc82-873d-e0af7f380d0b", 1, "0", ""),
				rtx4090(6, 5, "00000000:C1:00.0", "GPU-52688fe6-e746-6dec-48ea-96cd464a0db1", 4, "22378", "1375347:22372:python"),
				rtx4090(7, 4, "00000000:E1:00.0", "GPU-94f6cd0f-cb66-91a9-a3b0-7253e9f9a0ba", 1, "6488", "1102861:6482:python3.10"),
			},
		},
		{
			// Ampere's ECC layout (SRAM/DRAM Uncorrectable without Parity/SEC-DED) and a
			// real pending row remap: 4 rows after uncorrectable errors, "Pending : Yes".
			file:   "gpud-q-a10-535.129.03.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.129.03.out.0.valid.a10 @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			want: []string{
				"init=SUCCESS driver=535.129.03 cuda=12020 count=1",
				`0 00000000:07:00.0 minor=0 GPU-73d12ef7-f589-f867-4259-c7090ab44736 "NVIDIA A10" pcie=x16/x16,gen4/4 fabric=- ecc=true/true,vu=0,vc=0,au=0 rr=0/4/true/false rp=- mem=23028/4/512 procs=[]`,
			},
		},
		{
			// Volta on the 560 layout: ECC mode N/A (no ECC), "Remapped Rows : N/A", fabric
			// N/A with the newer CliqueId/Health keys, and three graphics-only processes (Type G),
			// which are not compute processes.
			file:   "gpud-q-titanv-560.35.03.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.560.35.03.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			want: []string{
				"init=SUCCESS driver=560.35.03 cuda=12060 count=1",
				`0 00000000:01:00.0 minor=0 GPU-f4c353ff-b56c-c1de-bcb9-7dad861b589a "NVIDIA TITAN V" pcie=x16/x16,gen1/3 fabric=- ecc=- rr=- rp=- mem=12288/290/239 procs=[]`,
			},
		},
		{
			// `nvidia-smi -q -d PAGE_RETIREMENT`: only "Retired Pages" per GPU.
			file:   "azurehpc-bad_nvsmi8_output.txt",
			source: "Azure/azurehpc-health-checks test/data/bad_nvsmi8_output.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			want: []string{
				"init=SUCCESS driver=535.86.10 cuda=12020 count=8",
				azureRP(0, 60, 5, false), azureRP(1, 2, 61, true), azureRP(2, 0, 0, false), azureRP(3, 6, 0, true),
				azureRP(4, 0, 0, false), azureRP(5, 20, 45, true), azureRP(6, 0, 0, false), azureRP(7, 8, 56, true),
			},
		},
		{
			file:   "azurehpc-orig_nvsmi8_output.txt",
			source: "Azure/azurehpc-health-checks test/data/orig_nvsmi8_output.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			want: []string{
				"init=SUCCESS driver=535.86.10 cuda=12020 count=8",
				azureRP(0, 0, 0, false), azureRP(1, 0, 0, false), azureRP(2, 0, 0, false), azureRP(3, 0, 0, false),
				azureRP(4, 0, 0, false), azureRP(5, 0, 0, false), azureRP(6, 0, 0, false), azureRP(7, 0, 0, false),
			},
		},
		{
			file:    "gpud-q-h100-535.183.01-truncated-invalid.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.invalid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 91: end of input after 1 GPU block, but "Attached GPUs : 8" (line 7) announced 8: the output is cut short, or was taken with -i; capture ` + "`nvidia-smi -q`" + ` of all GPUs`,
		},
		{
			file:    "gpud-table-525.125.06.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.525.125.06.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "+-----------------------------------------------------------------------------+": want the "==============NVSMI LOG==============" banner`,
		},
		{
			file:    "gpud-table-550.90.07.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.550.90.07.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "Mon Jan 20 10:18:26 2025": want the "==============NVSMI LOG==============" banner`,
		},
		{
			file:    "gpud-nvlink-status-a100.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.nvlink.status.a100 @ 80a18e8e78632b5e9a0f4d1c1009621cfaed7355",
			wantErr: `line 1: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)": want the "==============NVSMI LOG==============" banner`,
		},
		{
			file:    "azurehpc-good_nvlink_status.txt",
			source:  "Azure/azurehpc-health-checks test/data/good_nvlink_status.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			wantErr: `line 1: "GPU 7: NVIDIA A100-SXM4-80GB (UUID: GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8)": want the`,
		},
		{
			file:    "azurehpc-bad_nvlink_status.txt",
			source:  "Azure/azurehpc-health-checks test/data/bad_nvlink_status.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			wantErr: `line 1: "GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44)": want the`,
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(openCapture(t, tc.file))
			if tc.wantErr != "" {
				var se *NvidiaSMIError
				if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("ParseNvidiaSMIQuery(%s) error = %v, want an *NvidiaSMIError starting %q", tc.source, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNvidiaSMIQuery(%s): %v", tc.source, err)
			}
			if diff := cmp.Diff(tc.want, invLines(inv)); diff != "" {
				t.Errorf("ParseNvidiaSMIQuery(%s) (-want +got):\n%s", tc.source, diff)
			}
		})
	}
}

// TestParseNvidiaSMIQueryGPU compares whole values for one GPU of each layout, so that every
// field, not only the summary, is pinned.
func TestParseNvidiaSMIQueryGPU(t *testing.T) {
	zero := func() *uint64 { v := uint64(0); return &v }
	for _, tc := range []struct {
		file  string
		index int
		want  GPU
	}{
		{file: "gpud-q-h100x8-535.183.01.txt", index: 2, want: GPU{
			Index: 2, MinorNumber: 2, UUID: "GPU-973565ff-45cf-12ea-4e91-33386720f7bb", Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: "00000000:75:00.0",
			PCIe:     &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 5, MaxLinkGen: 5},
			Fabric:   &Fabric{State: "COMPLETED", Status: "SUCCESS"},
			ECC: &ECC{Enabled: true, PendingEnabled: true,
				VolatileUncorrected: zero(), VolatileCorrected: zero(), AggregateUncorrected: zero()},
			RemappedRows: &RemappedRows{},
			Memory:       &Memory{TotalMiB: 81559, UsedMiB: 9221, ReservedMiB: 551},
			Compute:      &Compute{Processes: []Process{{PID: 1002127, UsedMiB: 9212, UID: -1, Command: "python"}}},
			// Signals as printed: "Serial Number : 1654922018857", "Replays Since Reset : 58",
			// SW Power Cap, HW Power Brake Slowdown and SW Thermal Slowdown Active, T.Limit
			// temperatures, "Power Draw : 118.01 W" against 700 W limits, Persistence Enabled.
			Serial:      "1654922018857",
			PCIeReplays: ptr[uint64](58),
			ClockEvents: &ClockEvents{Mask: 0xa4, Reasons: []string{"sw_power_cap", "sw_thermal_slowdown", "hw_power_brake_slowdown"}},
			Thermal:     &Thermal{GPUC: 39, MemoryC: 46, MarginC: ptr(47), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-8), GPUMaxMarginC: ptr(0)},
			Power:       &Power{EnforcedLimitW: 700, DefaultLimitW: 700, DrawW: 118.01},
			Persistence: ptr(true),
			ResetStatus: &ResetStatus{}, // "GPU Reset Status": Reset Required No, Drain and Reset Recommended No
		}},
		{file: "gpud-q-rtx4090x8-535.154.05.txt", index: 5, want: GPU{
			Index: 5, MinorNumber: 6, UUID: "GPU-63cdf48e-0e17-dc82-873d-e0af7f380d0b", Name: "NVIDIA GeForce RTX 4090",
			PCIBusID:     "00000000:A1:00.0",
			PCIe:         &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 1, MaxLinkGen: 4},
			ECC:          &ECC{},
			RemappedRows: &RemappedRows{},
			Memory:       &Memory{TotalMiB: 24564, UsedMiB: 0, ReservedMiB: 346},
			Compute:      &Compute{Processes: []Process{}},
			PCIeReplays:  zero(), // "Serial Number : N/A" leaves Serial empty
			ClockEvents:  NewClockEvents(ClockGPUIdle),
			Thermal:      &Thermal{GPUC: 31, MarginC: ptr(52), SlowdownMarginC: ptr(-2), ShutdownMarginC: ptr(-7), GPUMaxMarginC: ptr(0)},
			Power:        &Power{EnforcedLimitW: 450, DefaultLimitW: 450, DrawW: 17.62},
			Persistence:  ptr(true),
			ResetStatus:  &ResetStatus{}, // Reset Required No; Drain and Reset Recommended N/A (a GeForce)
		}},
		{file: "gpud-q-titanv-560.35.03.txt", index: 0, want: GPU{
			Index: 0, MinorNumber: 0, UUID: "GPU-f4c353ff-b56c-c1de-bcb9-7dad861b589a", Name: "NVIDIA TITAN V",
			PCIBusID: "00000000:01:00.0",
			PCIe:     &PCIe{CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkGen: 1, MaxLinkGen: 3},
			Memory:   &Memory{TotalMiB: 12288, UsedMiB: 290, ReservedMiB: 239},
			Compute:  &Compute{Processes: []Process{}},
			// Driver 560 prints absolute limits for Volta: 44 C, shutdown 100, slowdown 97,
			// max operating 91, memory 41 of 95.
			Serial:      "0334517001520",
			PCIeReplays: zero(),
			ClockEvents: NewClockEvents(ClockGPUIdle),
			Thermal:     &Thermal{GPUC: 44, SlowdownC: 97, ShutdownC: 100, GPUMaxC: 91, MemoryC: 41, MemoryMaxC: 95},
			Power:       &Power{EnforcedLimitW: 250, DefaultLimitW: 250, DrawW: 29.02},
			Persistence: ptr(false),
			ResetStatus: &ResetStatus{}, // 560 still prints "GPU Reset Status", and no recovery action
		}},
		{file: "azurehpc-bad_nvsmi8_output.txt", index: 1, want: GPU{
			Index: 1, MinorNumber: -1, PCIBusID: "00000002:00:00.0",
			RetiredPages: &RetiredPages{SingleBit: 2, DoubleBit: 61, Pending: true},
		}},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.file, tc.index), func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(openCapture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, inv.Devices[tc.index]); diff != "" {
				t.Errorf("GPU %d (-want +got):\n%s", tc.index, diff)
			}
		})
	}
}

// smiDoc builds `nvidia-smi -q` text: the banner and header for count GPUs, then body.
func smiDoc(count int, body string) string {
	return "\n==============NVSMI LOG==============\n\nTimestamp                                 : Wed Jul 31 11:22:39 2024\n" +
		"Driver Version                            : 535.161.08\nCUDA Version                              : 12.2\n\n" +
		fmt.Sprintf("Attached GPUs                             : %d\n", count) + body
}

// TestParseNvidiaSMIQueryLayouts covers layouts and values the corpus does not: the old
// Single Bit / Double Bit ECC totals, old names of the pending flag, C+G processes, N/A
// everywhere, CRLF line ends, and the errors, each naming its line.
func TestParseNvidiaSMIQueryLayouts(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name    string
		in      string
		want    GPU // Devices[0]
		wantErr string
	}{
		{
			name: "old ECC layout totals",
			in: smiDoc(1, `GPU 00000000:06:00.0
    ECC Mode
        Current                           : Enabled
        Pending                           : Disabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 3
                Register File             : 0
                Total                     : 3
            Double Bit
                Device Memory             : 2
                Total                     : 2
        Aggregate
            Single Bit
                Total                     : 10
            Double Bit
                Device Memory             : 7
                Total                     : 7
    Retired Pages
        Single Bit ECC                    : 1
        Double Bit ECC                    : 2
        Pending                           : Yes
`),
			want: GPU{MinorNumber: -1, PCIBusID: "00000000:06:00.0",
				ECC:          &ECC{Enabled: true, VolatileUncorrected: u(2), VolatileCorrected: u(3), AggregateUncorrected: u(7)},
				RetiredPages: &RetiredPages{SingleBit: 1, DoubleBit: 2, Pending: true}},
		},
		{
			name: "hopper ECC sums and pending page retirement",
			in: smiDoc(1, `GPU 00000000:19:00.0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 5
            SRAM Uncorrectable Parity     : 1
            SRAM Uncorrectable SEC-DED    : 2
            DRAM Correctable              : 6
            DRAM Uncorrectable            : 4
        Aggregate
            SRAM Correctable              : 50
            SRAM Uncorrectable Parity     : 10
            SRAM Uncorrectable SEC-DED    : N/A
            DRAM Correctable              : 60
            DRAM Uncorrectable            : 40
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 99
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : 3
        Pending Page Retirement           : No
    Remapped Rows
        Correctable Error                 : 1
        Uncorrectable Error               : 2
        Pending                           : No
        Remapping Failure Occurred        : Yes
`),
			want: GPU{MinorNumber: -1, PCIBusID: "00000000:19:00.0",
				ECC:          &ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: u(7), VolatileCorrected: u(11), AggregateUncorrected: u(50)},
				RemappedRows: &RemappedRows{Correctable: 1, Uncorrectable: 2, Failed: true},
				RetiredPages: &RetiredPages{DoubleBit: 3}},
		},
		{
			name: "processes of every type, old layout without instance ids",
			in: smiDoc(1, `GPU 00000000:01:00.0
    FB Memory Usage
        Total                             : 16384 MiB
        Used                              : 4000 MiB
        Free                              : 12384 MiB
    Processes
        Process ID                        : 10
            Type                          : C
            Name                          : /opt/very-long-program-name-here
            Used GPU Memory               : 100 MiB
        Process ID                        : 11
            Type                          : G
            Name                          : /usr/lib/xorg/Xorg
            Used GPU Memory               : 9 MiB
        Process ID                        : 12
            Type                          : C+G
            Name                          : N/A
            Used GPU Memory               : N/A
`),
			want: GPU{MinorNumber: -1, PCIBusID: "00000000:01:00.0",
				Memory: &Memory{TotalMiB: 16384, UsedMiB: 4000},
				Compute: &Compute{Processes: []Process{
					{PID: 10, UsedMiB: 100, UID: -1, Command: "very-long-progr"},
					{PID: 12, UID: -1},
				}}},
		},
		{
			name: "all N/A and CRLF",
			in: strings.ReplaceAll(smiDoc(1, `GPU 00000000:01:00.0
    Product Name                          : N/A
    GPU UUID                              : N/A
    Minor Number                          : N/A
    PCI
        GPU Link Info
            PCIe Generation
                Max                       : N/A
                Current                   : N/A
            Link Width
                Max                       : N/A
                Current                   : N/A
    FB Memory Usage
        Total                             : N/A
        Used                              : N/A
    ECC Mode
        Current                           : N/A
        Pending                           : N/A
    Remapped Rows
        Correctable Error                 : N/A
        Uncorrectable Error               : N/A
        Pending                           : N/A
        Remapping Failure Occurred        : N/A
    Fabric
        State                             : Not Supported
        Status                            : N/A
    Processes                             : N/A
`), "\n", "\r\n"),
			want: GPU{MinorNumber: -1, PCIBusID: "00000000:01:00.0"},
		},
		{
			name: "fabric in progress",
			in: smiDoc(1, `GPU 00000000:BB:00.0
    Fabric
        State                             : In Progress
        Status                            : N/A
`),
			want: GPU{MinorNumber: -1, PCIBusID: "00000000:BB:00.0", Fabric: &Fabric{State: "IN_PROGRESS", Status: "N/A"}},
		},
		{name: "empty", in: "", wantErr: "empty input: want the output of `nvidia-smi -q`"},
		{name: "blank", in: "\n \n", wantErr: "empty input: want the output of `nvidia-smi -q`"},
		{name: "no attached GPUs", in: "==============NVSMI LOG==============\n\nDriver Version : 1\n",
			wantErr: `line 3: end of input without an "Attached GPUs" line`},
		{name: "more blocks than announced", in: smiDoc(1, "GPU 00000000:01:00.0\nGPU 00000000:02:00.0\n"),
			wantErr: `line 10: end of input after 2 GPU blocks, but "Attached GPUs : 1" (line 8) announced 1: the output joins several captures`},
		{name: "bad attached", in: smiDoc(0, "")[:len(smiDoc(0, ""))-2] + "x\n", wantErr: `line 8: Attached GPUs "x": want a count`},
		{name: "bad CUDA", in: strings.Replace(smiDoc(0, ""), "12.2", "twelve", 1), wantErr: `line 6: CUDA Version "twelve": want MAJOR.MINOR or N/A`},
		{name: "bad bus id", in: smiDoc(1, "GPU 0:19\n"), wantErr: `line 9: GPU block "GPU 0:19": "0:19" is not a PCI bus id`},
		{name: "indented line outside a block", in: smiDoc(0, "    Product Name : X\n"), wantErr: `line 9: "Product Name": indented line outside a GPU block`},
		{name: "bad minor", in: smiDoc(1, "GPU 00000000:01:00.0\n    Minor Number : -3\n"), wantErr: `line 10: Minor Number "-3": want a number or N/A`},
		{name: "bad width", in: smiDoc(1, "GPU 00000000:01:00.0\n    PCI\n        GPU Link Info\n            Link Width\n                Max : 16\n"),
			wantErr: `line 13: Max "16": want a link width such as 16x or N/A`},
		{name: "bad gen", in: smiDoc(1, "GPU 00000000:01:00.0\n    PCI\n        GPU Link Info\n            PCIe Generation\n                Current : Gen5\n"),
			wantErr: `line 13: Current "Gen5": want a PCIe generation or N/A`},
		{name: "bad ECC mode", in: smiDoc(1, "GPU 00000000:01:00.0\n    ECC Mode\n        Current : On\n"),
			wantErr: `line 11: ECC Mode Current "On": want Enabled, Disabled or N/A`},
		{name: "bad ECC counter", in: smiDoc(1, "GPU 00000000:01:00.0\n    ECC Errors\n        Volatile\n            DRAM Uncorrectable : many\n"),
			wantErr: `line 12: DRAM Uncorrectable "many": want a count or N/A`},
		{name: "ECC sum overflow", in: smiDoc(1, "GPU 00000000:01:00.0\n    ECC Errors\n        Volatile\n            SRAM Uncorrectable : 18446744073709551615\n            DRAM Uncorrectable : 1\n"),
			wantErr: `line 13: DRAM Uncorrectable "1": the sum of the ECC counters overflows`},
		{name: "bad remap count", in: smiDoc(1, "GPU 00000000:01:00.0\n    Remapped Rows\n        Uncorrectable Error : -1\n"),
			wantErr: `line 11: Uncorrectable Error "-1": want a row count or N/A`},
		{name: "bad remap flag", in: smiDoc(1, "GPU 00000000:01:00.0\n    Remapped Rows\n        Pending : maybe\n"),
			wantErr: `line 11: Pending "maybe": want Yes, No or N/A`},
		{name: "bad remapped rows value", in: smiDoc(1, "GPU 00000000:01:00.0\n    Remapped Rows : 3\n"),
			wantErr: `line 10: Remapped Rows "3": want a section or N/A`},
		{name: "bad retired pages", in: smiDoc(1, "GPU 00000000:01:00.0\n    Retired Pages\n        Double Bit ECC : x\n"),
			wantErr: `line 11: Double Bit ECC "x": want a page count or N/A`},
		{name: "bad memory", in: smiDoc(1, "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : 80 GiB\n"),
			wantErr: `line 11: Total "80 GiB": want a size such as "81559 MiB" or N/A`},
		{name: "bad processes", in: smiDoc(1, "GPU 00000000:01:00.0\n    Processes : some\n"),
			wantErr: `line 10: Processes "some": want None, N/A or a list of processes`},
		{name: "bad pid", in: smiDoc(1, "GPU 00000000:01:00.0\n    Processes\n        Process ID : 4294967296\n"),
			wantErr: `line 11: Process ID "4294967296": want a PID`},
		{name: "process field before pid", in: smiDoc(1, "GPU 00000000:01:00.0\n    Processes\n        Type : C\n"),
			wantErr: `line 11: Type "C" before any Process ID`},
		{name: "not UTF-8", in: smiDoc(1, "GPU 00000000:01:00.0\n    Product Name : \xff\n"), wantErr: "line 10: not UTF-8 text"},
		{name: "too long a line", in: smiDoc(1, "GPU 00000000:01:00.0\n    Product Name : "+strings.Repeat("x", smiMaxLine)+"\n"),
			wantErr: "line 10: line longer than 65536 bytes: not nvidia-smi output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				var se *NvidiaSMIError
				if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want an *NvidiaSMIError starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, inv.Devices[0]); diff != "" {
				t.Errorf("GPU 0 (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCUDAVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"12.2", 12020, true}, {"12.6", 12060, true}, {"11.0", 11000, true}, {"N/A", 0, true},
		{"12", 0, false}, {"12.x", 0, false}, {"-1.2", 0, false}, {"12.100", 0, false}, {"", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseCUDAVersion(tc.in)
			if got != tc.want || (err == nil) != tc.ok {
				t.Errorf("parseCUDAVersion(%q) = %d, %v; want %d, ok %t", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestCommName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/python", "python"}, {"python3", "python3"}, {"/opt/test", "test"},
		{"/a/b/a-very-long-executable", "a-very-long-exe"},
	} {
		if got := commName(tc.in); got != tc.want {
			t.Errorf("commName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func links(n int, active bool) []NVLink {
	out := make([]NVLink, n)
	for i := range out {
		out[i] = NVLink{Link: i, Active: active}
	}
	return out
}

// TestParseNvidiaSMINvLinkStatusCorpus reads every capture of testdata/nvsmi with the nvlink
// parser: the nvlink ones give their links, the others an error naming the line.
func TestParseNvidiaSMINvLinkStatusCorpus(t *testing.T) {
	a100 := []string{
		"GPU-5269b708-678a-b1a8-60f0-c90406537486", "GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4",
		"GPU-483e6bb6-bb11-8916-e22f-d1d69abbafaa", "GPU-6e4fbadc-10d9-a63a-8988-9a0d320ff1a0",
		"GPU-82ef2c67-965f-a411-1413-f5e1d756bcdb", "GPU-754035b4-4708-efcd-b261-623aea38bcad",
		"GPU-68d0f80e-e2f6-7717-ce0c-ea5f17b6a180", "GPU-375df896-019b-a009-42e5-ce9ed21bd8cc",
	}
	allA100 := map[string][]NVLink{}
	for _, u := range a100 {
		allA100[u] = links(12, true)
	}
	for _, tc := range []struct {
		file    string
		source  string
		want    map[string][]NVLink
		wantErr string
	}{
		{file: "gpud-nvlink-status-a100.txt",
			source: "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.nvlink.status.a100 @ 80a18e8e78632b5e9a0f4d1c1009621cfaed7355",
			want:   allA100},
		{file: "azurehpc-good_nvlink_status.txt",
			source: "Azure/azurehpc-health-checks test/data/good_nvlink_status.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			want:   map[string][]NVLink{"GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8": links(12, true)}},
		{file: "azurehpc-bad_nvlink_status.txt",
			source: "Azure/azurehpc-health-checks test/data/bad_nvlink_status.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			// Alone in its capture, the all-inactive GPU gets one inactive link (see the doc).
			want: map[string][]NVLink{"GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44": links(1, false)}},
		{file: "gpud-q-h100x8-535.161.08.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.161.08.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 2: "==============NVSMI LOG==============": want "GPU N: NAME (UUID: ...)"`},
		{file: "gpud-q-h100x8-535.183.01.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "==============NVSMI LOG=============="`},
		{file: "gpud-q-h100-535.183.01-truncated-invalid.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.invalid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "==============NVSMI LOG=============="`},
		{file: "gpud-q-rtx4090x8-535.154.05.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.154.05.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "==============NVSMI LOG=============="`},
		{file: "gpud-q-a10-535.129.03.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.129.03.out.0.valid.a10 @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "==============NVSMI LOG=============="`},
		{file: "gpud-q-titanv-560.35.03.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.560.35.03.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "==============NVSMI LOG=============="`},
		{file: "azurehpc-bad_nvsmi8_output.txt",
			source:  "Azure/azurehpc-health-checks test/data/bad_nvsmi8_output.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			wantErr: `line 2: "==============NVSMI LOG=============="`},
		{file: "azurehpc-orig_nvsmi8_output.txt",
			source:  "Azure/azurehpc-health-checks test/data/orig_nvsmi8_output.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a",
			wantErr: `line 2: "==============NVSMI LOG=============="`},
		{file: "gpud-table-525.125.06.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.525.125.06.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "+-------`},
		{file: "gpud-table-550.90.07.txt",
			source:  "leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi.550.90.07.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd",
			wantErr: `line 1: "Mon Jan 20 10:18:26 2025"`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseNvidiaSMINvLinkStatus(openCapture(t, tc.file))
			if tc.wantErr != "" {
				var se *NvidiaSMIError
				if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("ParseNvidiaSMINvLinkStatus(%s) error = %v, want an *NvidiaSMIError starting %q", tc.source, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNvidiaSMINvLinkStatus(%s): %v", tc.source, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseNvidiaSMINvLinkStatus(%s) (-want +got):\n%s", tc.source, diff)
			}
		})
	}
}

func TestParseNvidiaSMINvLinkStatus(t *testing.T) {
	const (
		g0 = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n"
		g1 = "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
		g2 = "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n"
		no = "NVML: Unable to retrieve NVLink information as all links are inactive\n"
	)
	for _, tc := range []struct {
		name    string
		in      string
		want    map[string][]NVLink
		wantErr string
	}{
		{name: "empty: no NVLink on the node", in: "", want: map[string][]NVLink{}},
		{name: "GPU without links", in: g0, want: map[string][]NVLink{"GPU-0": nil}},
		{
			// Azure/azhpc-diagnostics#73 prints V100 rates as "25.781 GB/s" and down links
			// as "<inactive>"; links out of order are sorted; CRLF is accepted.
			name: "decimal rates, inactive links, order",
			in:   "GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-3)\r\n\t Link 1: 25.781 GB/s\r\n\t Link 0: 25.781 GB/s\r\n\t Link 3: <inactive>\r\n\t Link 2: 25.781 GB/s\r\n",
			want: map[string][]NVLink{"GPU-3": {{0, true}, {1, true}, {2, true}, {3, false}}},
		},
		{
			name: "all inactive takes the link count of the other GPUs",
			in:   g0 + no + g1 + "\t Link 0: 26.562 GB/s\n\t Link 17: <inactive>\n" + g2 + no,
			want: map[string][]NVLink{"GPU-0": links(18, false), "GPU-1": {{0, true}, {17, false}}, "GPU-2": links(18, false)},
		},
		{name: "link before a GPU", in: "\t Link 0: 25 GB/s\n", wantErr: `line 1: "Link 0: 25 GB/s" before any "GPU N: NAME (UUID: ...)" line`},
		{name: "message before a GPU", in: no, wantErr: `line 1: "NVML: Unable to retrieve NVLink information as all links are inactive" before any`},
		{name: "message after links", in: g0 + "\t Link 0: 25 GB/s\n" + no, wantErr: `line 3: "NVML: Unable to retrieve NVLink information as all links are inactive" after the links of the GPU on line 1`},
		{name: "link after message", in: g0 + no + "\t Link 0: 25 GB/s\n", wantErr: `line 3: "Link 0: 25 GB/s" after NVML said all links of the GPU on line 1 are inactive`},
		{name: "duplicate GPU", in: g0 + g0, wantErr: "line 2: GPU 0 (UUID GPU-0) listed twice"},
		{name: "duplicate link", in: g0 + "\t Link 1: 25 GB/s\n\t Link 1: 25 GB/s\n", wantErr: "line 3: link 1 of the GPU on line 1 listed twice"},
		{name: "bad rate", in: g0 + "\t Link 1: fast\n", wantErr: `line 2: link 1 "fast": want a rate such as "25 GB/s" or <inactive>`},
		{name: "link number too big", in: g0 + "\t Link 300: 25 GB/s\n", wantErr: `line 2: link number "300": want 0 to 255`},
		{name: "other line", in: g0 + "Failed to get NVLink status\n", wantErr: `line 2: "Failed to get NVLink status": want "GPU N: NAME (UUID: ...)"`},
		{name: "not UTF-8", in: g0 + "\t Link 0: \xff\n", wantErr: "line 2: not UTF-8 text"},
		{name: "GPU line without UUID", in: "GPU 0: NVIDIA H100\n", wantErr: `line 1: "GPU 0: NVIDIA H100": want`},
		{name: "too long a line", in: g0 + strings.Repeat("x", smiMaxLine+1), wantErr: "line 2: line longer than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNvidiaSMINvLinkStatus(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				var se *NvidiaSMIError
				if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want an *NvidiaSMIError starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeNVLinks(t *testing.T) {
	inv := GPUInventory{Init: InitSuccess, DeviceCount: 2, Devices: []GPU{
		{Index: 0, UUID: "GPU-0", NVLinks: []NVLink{{0, false}}},
		{Index: 1, UUID: "GPU-1"},
	}}
	got, err := MergeNVLinks(inv, map[string][]NVLink{"GPU-1": links(2, true)})
	if err != nil {
		t.Fatal(err)
	}
	want := GPUInventory{Init: InitSuccess, DeviceCount: 2, Devices: []GPU{
		{Index: 0, UUID: "GPU-0", NVLinks: []NVLink{{0, false}}},
		{Index: 1, UUID: "GPU-1", NVLinks: links(2, true)},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeNVLinks (-want +got):\n%s", diff)
	}
	if inv.Devices[1].NVLinks != nil {
		t.Error("MergeNVLinks changed its input")
	}
	_, err = MergeNVLinks(inv, map[string][]NVLink{"GPU-9": nil, "GPU-8": nil, "GPU-7": nil, "GPU-6": nil})
	if err == nil || err.Error() != "nvlink status names GPU GPU-6, GPU-7, GPU-8 (+1 more), which the nvidia-smi -q capture does not list: not the same node" {
		t.Errorf("MergeNVLinks with foreign UUIDs: %v", err)
	}
}

// TestMarshalNVMLJSON: the importer's output is an nvml.json the snapshot reader accepts,
// and it reads back as the inventory it came from.
func TestMarshalNVMLJSON(t *testing.T) {
	for _, name := range []string{"gpud-q-h100x8-535.183.01.txt", "gpud-q-titanv-560.35.03.txt", "azurehpc-bad_nvsmi8_output.txt"} {
		t.Run(name, func(t *testing.T) {
			inv, err := ParseNvidiaSMIQuery(openCapture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := MarshalNVMLJSON(inv)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := parseNVML(b)
			if err != nil {
				t.Fatalf("parseNVML: %v\n%s", err, b)
			}
			if !strings.HasSuffix(string(b), "}\n") || !strings.HasPrefix(string(b), "{\n  \"init\": \"SUCCESS\",\n") {
				t.Errorf("not in nvml.json's layout:\n%.200s", b)
			}
			// The record embeds GPU: what was imported is what the snapshot replays.
			got := nvmlInventory(rec)
			want := inv
			want.Devices = nil
			for _, g := range inv.Devices {
				want.Devices = append(want.Devices, newGPURecord(g).gpu())
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("nvml.json read back (-want +got):\n%s", diff)
			}
		})
	}
}
