package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The repository's snapshots (testdata/snapshots, a module of its own, present only in a
// checkout) say their nvml.json comes from real nvidia-smi captures; these tests hold them to
// it, with the same captures copied under testdata/nvsmi.
const repoSnapshots = "../../testdata/snapshots"

// readNVMLJSON decodes a snapshot's nvml.json as a GPUInventory, skipping the test where the
// snapshots are not there.
func readNVMLJSON(t *testing.T, snap string) (GPUInventory, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoSnapshots, snap, nvmlFile))
	if os.IsNotExist(err) {
		t.Skipf("no %s here: the snapshots exist only in a repository checkout", filepath.Join(repoSnapshots, snap))
	}
	if err != nil {
		t.Fatal(err)
	}
	var inv GPUInventory
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatalf("%s/%s: %v", snap, nvmlFile, err)
	}
	return inv, b
}

// h100HealthyNVML is h100-healthy's nvml.json as its SOURCE says it was made: the importer on
// the real 535.161.08 capture, plus the 18 active NVLinks per GPU written for the fixture,
// with the facts nodecheck read when it was made (LegacyGPUFields): its nvml.json has no
// "fields", and the signals of the capture (its HW power brake, see h100-power-brake) are
// not in it.
func h100HealthyNVML(t *testing.T) GPUInventory {
	t.Helper()
	inv, err := ParseNvidiaSMIQuery(openCapture(t, "gpud-q-h100x8-535.161.08.txt"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]NVLink{}
	for _, g := range inv.Devices {
		all[g.UUID] = links(18, true)
	}
	inv, err = MergeNVLinks(inv, all)
	if err != nil {
		t.Fatal(err)
	}
	return inv.Only(LegacyGPUFields)
}

func TestSnapshotH100HealthyIsTheCapture(t *testing.T) {
	_, got := readNVMLJSON(t, "h100-healthy")
	want, err := MarshalNVMLJSON(h100HealthyNVML(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("h100-healthy/nvml.json is not the import of nvsmi/gpud-q-h100x8-535.161.08.txt plus 18 active links per GPU (-want +got):\n%s", diff)
	}
}

func TestSnapshotA100HealthyNVLinks(t *testing.T) {
	inv, _ := readNVMLJSON(t, "a100-healthy")
	captured, err := ParseNvidiaSMINvLinkStatus(openCapture(t, "gpud-nvlink-status-a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != len(captured) {
		t.Fatalf("a100-healthy has %d GPUs, the nvlink capture %d", len(inv.Devices), len(captured))
	}
	for _, g := range inv.Devices {
		if diff := cmp.Diff(captured[g.UUID], g.NVLinks); diff != "" {
			t.Errorf("a100-healthy gpu %d (%s) nvlinks against gpud-nvlink-status-a100.txt (-want +got):\n%s", g.Index, g.UUID, diff)
		}
		if g.ECC != nil || g.RemappedRows != nil || g.RetiredPages != nil || g.Memory != nil || g.Compute != nil {
			t.Errorf("a100-healthy gpu %d records memory or process facts, which no A100 capture has", g.Index)
		}
	}
}

// TestSnapshotNVMLVariants: each variant regen.sh makes for these checks is its base with
// the one change its SOURCE describes, on the GPU it names.
func TestSnapshotNVMLVariants(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		snap, base string
		gpu        int
		change     func(g *GPU)
	}{
		{"h100-ecc-uncorrectable", "h100-healthy", 6, func(g *GPU) {
			g.ECC.VolatileUncorrected, g.ECC.AggregateUncorrected = u(1), u(1)
		}},
		{"h100-remap-pending", "h100-healthy", 1, func(g *GPU) {
			// The Remapped Rows block of the real A10 capture.
			a10, err := ParseNvidiaSMIQuery(openCapture(t, "gpud-q-a10-535.129.03.txt"))
			if err != nil {
				t.Fatal(err)
			}
			r := *a10.Devices[0].RemappedRows
			g.RemappedRows = &r
		}},
		{"h100-remap-failed", "h100-healthy", 7, func(g *GPU) { g.RemappedRows.Failed = true }},
		{"h100-nvlink-down", "h100-healthy", 5, func(g *GPU) { g.NVLinks[3].Active = false }},
		{"h100-leftover-process", "h100-healthy", 2, func(g *GPU) {
			// PID, memory and command of GPU 2 of the real 535.183.01 capture; owner invented.
			other, err := ParseNvidiaSMIQuery(openCapture(t, "gpud-q-h100x8-535.183.01.txt"))
			if err != nil {
				t.Fatal(err)
			}
			src := other.Devices[2]
			g.Memory.UsedMiB = src.Memory.UsedMiB
			p := src.Compute.Processes[0]
			p.UID, p.User = 1001, "alice"
			g.Compute = &Compute{Processes: []Process{p}}
		}},
		{"a100-nvlink-all-inactive", "a100-healthy", 6, func(g *GPU) { g.NVLinks = links(12, false) }},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			base, _ := readNVMLJSON(t, tc.base)
			got, _ := readNVMLJSON(t, tc.snap)
			want := base.Clone()
			tc.change(&want.Devices[tc.gpu])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s against %s with its one change (-want +got):\n%s", tc.snap, tc.base, diff)
			}
		})
	}
}

// TestSnapshotSignalVariants: each signal variant regen.sh makes is h100-healthy with the
// signals its SOURCE names, from the captures it names, on every GPU.
func TestSnapshotSignalVariants(t *testing.T) {
	base, _ := readNVMLJSON(t, "h100-healthy")
	signals565, err := ParseNvidiaSMIQuery(openCapture(t, "thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := ParseNvidiaSMIQuery(openCapture(t, "gpud-q-h100x8-535.161.08.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		snap   string
		fields GPUFields
		change func(i int, g *GPU)
	}{
		{"h100-signals", GPUSerial | GPUPCIeReplays | GPUClockEvents | GPUThermal | GPUPower | GPUPersistence | GPURecoveryAction,
			func(i int, g *GPU) {
				s := signals565.Devices[i]
				g.Serial, g.PCIeReplays, g.ClockEvents, g.Thermal, g.Power, g.Persistence, g.RecoveryAction =
					s.Serial, s.PCIeReplays, s.ClockEvents, s.Thermal, s.Power, s.Persistence, s.RecoveryAction
			}},
		{"h100-power-brake", GPUClockEvents, func(i int, g *GPU) { g.ClockEvents = own.Devices[i].ClockEvents }},
		{"h100-recovery-reset", GPURecoveryAction, func(i int, g *GPU) {
			g.RecoveryAction = "NONE"
			if i == 3 {
				g.RecoveryAction = "GPU_RESET"
			}
		}},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			got, _ := readNVMLJSON(t, tc.snap)
			want := base.Clone()
			want.Fields = LegacyGPUFields | tc.fields
			for i := range want.Devices {
				tc.change(i, &want.Devices[i])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s against h100-healthy with its signals (-want +got):\n%s", tc.snap, diff)
			}
		})
	}
}
